// Event filtering and search (see filter.hpp for the design).
#include "model/filter.hpp"

#include <algorithm>
#include <bit>

namespace fiberscope::viewer {

using trace::Event;
using trace::EventKind;

// The fiber fields as the record table lists them (trace_records.hpp).
std::size_t eventFibers(const Event& e, std::uint64_t out[3]) noexcept { return trace::fiberFields(e, out); }

bool eventInvolvesFiber(const Timeline& timeline, const Event& event, std::uint64_t fiber) noexcept {
    std::uint64_t fibers[3];
    const std::size_t n = eventFibers(event, fibers);
    if (n == 0) return runningFiber(timeline, event.thread, event.time) == fiber;
    for (std::size_t k = 0; k < n; ++k)
        if (fibers[k] == fiber) return true;
    return false;
}

bool matches(const Timeline& timeline, const Event& event, const EventFilter& filter) noexcept {
    if (!(filter.kinds & kindBit(event.kind))) return false;
    if (filter.thread >= 0 && event.thread != static_cast<std::uint64_t>(filter.thread)) return false;
    if (event.time < filter.t0 || event.time > filter.t1) return false;
    if (!filter.any_fiber && !eventInvolvesFiber(timeline, event, filter.fiber)) return false;
    return true;
}

namespace {

// The events to scan, in order: every event, skipping to those of one kind
// through the timeline's kind index, or to one thread's through its stride
// bits; or none. A position is an event index.
struct Candidates {
    const Timeline* timeline = nullptr;
    const trace::Trace* trace = nullptr;
    bool none = false;
    int kind = -1;          // only this kind (-1: all kinds)
    std::int64_t thread = -1; // else only this trace thread (-1: all threads)
    std::size_t size() const { return none ? 0 : trace->events.size(); }
    std::uint32_t at(std::size_t k) const { return static_cast<std::uint32_t>(k); }
    // The first candidate position at `k` or later (size() if none).
    std::size_t from(std::size_t k) const {
        if (none) return 0;
        if (kind >= 0) return nextOfKind(*timeline, *trace, static_cast<EventKind>(kind), k);
        if (thread >= 0) return nextOnThread(*timeline, *trace, static_cast<std::uint32_t>(thread), k);
        return std::min(k, size());
    }
    // The last candidate position before `k` (kNone if none).
    std::size_t before(std::size_t k) const {
        if (none) return kNone;
        if (kind >= 0) return previousOfKind(*timeline, *trace, static_cast<EventKind>(kind), k);
        if (thread >= 0) return previousOnThread(*timeline, *trace, static_cast<std::uint32_t>(thread), k);
        return k > 0 ? std::min(k, size()) - 1 : kNone;
    }
};

Candidates candidates(const Timeline& timeline, const trace::Trace& trace, const EventFilter& filter) {
    Candidates c;
    c.timeline = &timeline;
    c.trace = &trace;
    const ThreadLane* lane = filter.thread >= 0 ? findThread(timeline, static_cast<std::uint32_t>(filter.thread)) : nullptr;
    if (std::popcount(filter.kinds) == 1) {
        c.kind = std::countr_zero(filter.kinds);
        if (c.kind > trace::kMaxEventKind) c.none = true;
    }
    if (filter.thread >= 0 && !lane) c.none = true;
    // One thread and one kind: step by whichever of the two has fewer records (matches() checks the other).
    if (lane && (c.kind < 0 || lane->record_count < timeline.kinds.total[static_cast<std::size_t>(c.kind)])) {
        c.kind = -1;
        c.thread = filter.thread;
    }
    return c;
}

// First position with time >= t (or > t when `strictly`).
std::size_t seek(const trace::Trace& trace, const Candidates&, std::int64_t t, bool strictly) { return firstEventAt(trace, t, strictly); }

template <class Visit>
void scan(const Timeline& timeline, const trace::Trace& trace, const EventFilter& filter, Visit&& visit) {
    const Candidates c = candidates(timeline, trace, filter);
    for (std::size_t k = c.from(seek(trace, c, filter.t0, false)); k < c.size(); k = c.from(k + 1)) {
        const std::uint32_t index = c.at(k);
        const Event& e = trace.events[index];
        if (e.time > filter.t1) break;
        if (matches(timeline, e, filter) && !visit(index)) break;
    }
}

} // namespace

void filterEvents(const Timeline& timeline, const trace::Trace& trace, const EventFilter& filter, std::vector<std::uint32_t>& out,
                  std::size_t limit) {
    out.clear();
    if (limit == 0) return;
    scan(timeline, trace, filter, [&](std::uint32_t index) {
        out.push_back(index);
        return out.size() < limit;
    });
}

std::size_t countEvents(const Timeline& timeline, const trace::Trace& trace, const EventFilter& filter) {
    std::size_t count = 0;
    scan(timeline, trace, filter, [&](std::uint32_t) {
        ++count;
        return true;
    });
    return count;
}

std::vector<std::uint64_t> findFibers(const Timeline& timeline, std::string_view needle) {
    const auto lower = [](char ch) { return static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch); };
    std::string pattern(needle);
    std::transform(pattern.begin(), pattern.end(), pattern.begin(), lower);
    std::vector<std::uint64_t> out;
    std::string name;
    for (const FiberLane& fl : timeline.fibers) {
        name = fl.name();
        std::transform(name.begin(), name.end(), name.begin(), lower);
        if (name.find(pattern) != std::string::npos) out.push_back(fl.fiber());
    }
    return out;
}

std::uint32_t nextMatching(const Timeline& timeline, const trace::Trace& trace, const EventFilter& filter, std::int64_t time) {
    EventFilter f = filter;
    f.t0 = INT64_MIN;
    f.t1 = INT64_MAX;
    const Candidates c = candidates(timeline, trace, f);
    for (std::size_t k = c.from(seek(trace, c, time, true)); k < c.size(); k = c.from(k + 1))
        if (matches(timeline, trace.events[c.at(k)], f)) return c.at(k);
    return kNoEvent;
}

std::uint32_t previousMatching(const Timeline& timeline, const trace::Trace& trace, const EventFilter& filter, std::int64_t time) {
    EventFilter f = filter;
    f.t0 = INT64_MIN;
    f.t1 = INT64_MAX;
    const Candidates c = candidates(timeline, trace, f);
    for (std::size_t k = c.before(seek(trace, c, time, false)); k != kNone; k = c.before(k))
        if (matches(timeline, trace.events[c.at(k)], f)) return c.at(k);
    return kNoEvent;
}

std::uint32_t nextEvent(const Timeline& timeline, const trace::Trace& trace, EventKind kind, std::int64_t time, std::int64_t thread) {
    EventFilter f;
    f.kinds = kindBit(kind);
    f.thread = thread;
    return nextMatching(timeline, trace, f, time);
}

std::uint32_t previousEvent(const Timeline& timeline, const trace::Trace& trace, EventKind kind, std::int64_t time,
                            std::int64_t thread) {
    EventFilter f;
    f.kinds = kindBit(kind);
    f.thread = thread;
    return previousMatching(timeline, trace, f, time);
}

} // namespace fiberscope::viewer
