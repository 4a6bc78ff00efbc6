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

// The events to scan, in order: one thread's (its list), or every event,
// skipping to those of one kind through the timeline's kind index. A
// position is an index into the list, or an event index.
struct Candidates {
    const Timeline* timeline = nullptr;
    const trace::Trace* trace = nullptr;
    const std::vector<std::uint32_t>* list = nullptr; // nullptr: every event
    int kind = -1;                                    // every event: only this kind (-1: all kinds)
    std::size_t size() const { return list ? list->size() : trace->events.size(); }
    std::uint32_t at(std::size_t k) const { return list ? (*list)[k] : static_cast<std::uint32_t>(k); }
    // The first candidate position at `k` or later (size() if none).
    std::size_t from(std::size_t k) const {
        if (list || kind < 0) return std::min(k, size());
        return nextOfKind(*timeline, *trace, static_cast<EventKind>(kind), k);
    }
    // The last candidate position before `k` (kNone if none).
    std::size_t before(std::size_t k) const {
        if (list || kind < 0) return k > 0 ? std::min(k, size()) - 1 : kNone;
        return previousOfKind(*timeline, *trace, static_cast<EventKind>(kind), k);
    }
};

Candidates candidates(const Timeline& timeline, const trace::Trace& trace, const EventFilter& filter) {
    static const std::vector<std::uint32_t> none;
    Candidates c;
    c.timeline = &timeline;
    c.trace = &trace;
    const ThreadLane* lane = filter.thread >= 0 ? findThread(timeline, static_cast<std::uint32_t>(filter.thread)) : nullptr;
    int kind = -1;
    if (std::popcount(filter.kinds) == 1) {
        kind = std::countr_zero(filter.kinds);
        if (kind > trace::kMaxEventKind) c.list = &none;
    }
    if (c.list) return c;
    if (filter.thread >= 0 && !lane) c.list = &none;
    else if (lane && kind >= 0) {
        // The thread's list, unless the kind has fewer events.
        if (lane->events.size() < timeline.kinds.total[static_cast<std::size_t>(kind)]) c.list = &lane->events;
        else c.kind = kind;
    } else if (lane) c.list = &lane->events;
    else c.kind = kind;
    return c;
}

// First position (in the list, or of all events) with time >= t (or > t when `strictly`).
std::size_t seek(const trace::Trace& trace, const Candidates& c, std::int64_t t, bool strictly) {
    if (!c.list) return firstEventAt(trace, t, strictly);
    std::size_t lo = 0, hi = c.size();
    while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        const std::int64_t mt = trace.events[c.at(mid)].time;
        if (strictly ? mt <= t : mt < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

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
        name = fl.name;
        std::transform(name.begin(), name.end(), name.begin(), lower);
        if (name.find(pattern) != std::string::npos) out.push_back(fl.fiber);
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
