// Reading the model (timeline.hpp): an instant's label and fiber, a fiber's
// or thread's lane, the flows and latency samples by index (some read back
// from the fiber lanes: read_back.hpp), and the records of a kind or of a
// thread found through the per-stride counts and bits (KindIndex).
#include "fiberscope/analysis/timeline.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "read_back.hpp"

namespace fiberscope::analysis {

using detail::firstFiber;
using detail::latencyFromLane;
using detail::spawnFromLane;

std::uint32_t InstantList::wholeAt(std::size_t k) const noexcept { return sideValueAt(whole_, k); }

std::uint64_t instantLabel(const trace::Trace& trace, const Instant& instant) noexcept {
    std::uint64_t label = 0;
    if (instant.event < trace.events.size()) (void)trace::firstField(trace.events[instant.event], trace::FieldType::String, label);
    return label;
}

std::uint64_t instantFiber(const trace::Trace& trace, const ThreadLane& lane, std::size_t k) noexcept {
    if (k >= lane.instants.size()) return 0;
    const std::uint32_t event = lane.instants[k].event;
    if (std::uint64_t fiber = 0; event < trace.events.size() && firstFiber(trace.events[event], fiber)) return fiber;
    const auto& kept = lane.instant_fibers;
    const auto it = std::lower_bound(kept.begin(), kept.end(), static_cast<std::uint32_t>(k),
                                     [](const std::pair<std::uint32_t, std::uint64_t>& p, std::uint32_t index) { return p.first < index; });
    return it != kept.end() && it->first == k ? it->second : 0;
}

const std::string* objectNameAt(const Timeline& timeline, std::uint64_t object, std::int64_t time) {
    const auto it = timeline.object_names.find(object);
    if (it == timeline.object_names.end()) return nullptr;
    const auto& names = it->second; // by time
    const auto after = std::upper_bound(names.begin(), names.end(), time,
                                        [](std::int64_t t, const std::pair<std::int64_t, std::string>& n) { return t < n.first; });
    return after == names.begin() ? nullptr : &(after - 1)->second;
}

const FiberLane* findFiber(const Timeline& timeline, std::uint64_t fiber) noexcept {
    const auto& fibers = timeline.fibers;
    if (fibers.empty() || fiber < fibers.front().fiber()) return nullptr;
    // Ids are usually dense: try where the fiber would be if they all were.
    const std::uint64_t guess = fiber - fibers.front().fiber();
    if (guess < fibers.size() && fibers[guess].fiber() == fiber) return &fibers[guess];
    auto it = std::lower_bound(fibers.begin(), fibers.end(), fiber, [](const FiberLane& f, std::uint64_t id) { return f.fiber() < id; });
    return it != fibers.end() && it->fiber() == fiber ? &*it : nullptr;
}

const ThreadLane* findThread(const Timeline& timeline, std::uint32_t thread) noexcept {
    if (thread >= timeline.lane_of_thread.size()) return nullptr;
    return &timeline.threads[timeline.lane_of_thread[thread]];
}

std::uint64_t runningFiber(const Timeline& timeline, std::uint32_t thread, std::int64_t time) noexcept {
    const ThreadLane* lane = findThread(timeline, thread);
    if (!lane) return 0;
    const std::size_t k = intervalAt(lane->lane, time);
    if (k == kNone) return 0;
    const Interval& iv = lane->lane.intervals[k];
    return iv.state == State::Running ? iv.fiber : 0;
}

Flow flowAt(const Timeline& timeline, std::size_t k) noexcept {
    const auto place = timeline.flows.place(k);
    if (!place.ref) return timeline.flows.stored[place.index];
    Flow flow;
    (void)spawnFromLane(timeline.fibers[timeline.flows.refs[place.index]], flow); // (it did when the flow was kept so)
    return flow;
}

LatencySample latencyAt(const Timeline& timeline, std::size_t k) noexcept {
    const auto place = timeline.latencies.place(k);
    if (!place.ref) return timeline.latencies.stored[place.index];
    const LatencyRef ref = timeline.latencies.refs[place.index];
    return latencyFromLane(timeline.fibers[ref.lane()], ref.interval());
}

void flowsInRange(const Timeline& timeline, std::int64_t t0, std::int64_t t1, std::vector<std::uint32_t>& out,
                  unsigned kind_mask, std::size_t limit) {
    out.clear();
    const auto& reach = timeline.flow_reach;
    // flow_reach is non-decreasing: the first block holding a flow that could
    // end at or after t0 (the flows before it all end before t0).
    std::size_t k = static_cast<std::size_t>(std::lower_bound(reach.begin(), reach.end(), t0) - reach.begin()) * kFlowReachBlock;
    for (; k < timeline.flows.size() && out.size() < limit; ++k) {
        const Flow flow = flowAt(timeline, k);
        if (flow.from.time > t1) break;
        if (flow.to.time < t0) continue;
        if (!(kind_mask & (1u << static_cast<unsigned>(flow.kind)))) continue;
        out.push_back(static_cast<std::uint32_t>(k));
    }
}

namespace {

// Events of `kind` in stride `b` (events [b * kKindStride, (b + 1) * kKindStride)).
std::uint32_t inStride(const KindIndex& index, std::size_t b, std::size_t kind) noexcept {
    const std::uint32_t end = b + 1 < index.before.size() ? index.before[b + 1][kind] : index.total[kind];
    return end - index.before[b][kind];
}

bool threadMayBeIn(const KindIndex& index, std::size_t b, std::uint32_t thread) noexcept {
    return b >= index.thread_bits.size() || (index.thread_bits[b] >> (thread % 64) & 1);
}

// The first index p in [from, size) with hit(p), skipping each whole stride
// for which mayHold(stride) is false; else size.
template <class MayHold, class Hit>
std::size_t scanForward(std::size_t from, std::size_t size, MayHold&& mayHold, Hit&& hit) {
    for (std::size_t p = from; p < size;) {
        if (p % kKindStride == 0 && !mayHold(p / kKindStride)) {
            p += kKindStride;
            continue;
        }
        if (hit(p)) return p;
        ++p;
    }
    return size;
}

// The last index p before `before` with hit(p), skipping strides likewise; else kNone.
template <class MayHold, class Hit>
std::size_t scanBackward(std::size_t before, std::size_t size, MayHold&& mayHold, Hit&& hit) {
    for (std::size_t p = std::min(before, size); p > 0;) {
        if (p % kKindStride == 0 && !mayHold(p / kKindStride - 1)) {
            p -= kKindStride;
            continue;
        }
        --p;
        if (hit(p)) return p;
    }
    return kNone;
}

} // namespace

std::size_t nextOfKind(const Timeline& timeline, const trace::Trace& trace, trace::EventKind kind, std::size_t from) noexcept {
    const KindIndex& index = timeline.kinds;
    const auto k = static_cast<std::size_t>(kind);
    return scanForward(
        from, trace.events.size(), [&](std::size_t b) { return b >= index.before.size() || inStride(index, b, k) > 0; },
        [&](std::size_t p) { return trace.events.kind(p) == kind; });
}

std::size_t previousOfKind(const Timeline& timeline, const trace::Trace& trace, trace::EventKind kind, std::size_t before) noexcept {
    const KindIndex& index = timeline.kinds;
    const auto k = static_cast<std::size_t>(kind);
    return scanBackward(
        before, trace.events.size(), [&](std::size_t b) { return b >= index.before.size() || inStride(index, b, k) > 0; },
        [&](std::size_t p) { return trace.events.kind(p) == kind; });
}

std::size_t nextOnThread(const Timeline& timeline, const trace::Trace& trace, std::uint32_t thread, std::size_t from) noexcept {
    return scanForward(
        from, trace.events.size(), [&](std::size_t b) { return threadMayBeIn(timeline.kinds, b, thread); },
        [&](std::size_t p) { return trace.events.thread(p) == thread; });
}

std::size_t previousOnThread(const Timeline& timeline, const trace::Trace& trace, std::uint32_t thread, std::size_t before) noexcept {
    return scanBackward(
        before, trace.events.size(), [&](std::size_t b) { return threadMayBeIn(timeline.kinds, b, thread); },
        [&](std::size_t p) { return trace.events.thread(p) == thread; });
}

std::size_t countOfKind(const Timeline& timeline, const trace::Trace& trace, trace::EventKind kind, std::size_t lo, std::size_t hi) noexcept {
    const auto& events = trace.events;
    const KindIndex& index = timeline.kinds;
    const auto k = static_cast<std::size_t>(kind);
    hi = std::min(hi, events.size());
    if (lo >= hi) return 0;
    // Events of `kind` before p: the stride's count, plus the part of the stride before p.
    const auto rank = [&](std::size_t p) -> std::size_t {
        const std::size_t b = p / kKindStride;
        if (b >= index.before.size()) return index.total[k]; // p == events.size(), a stride's start
        std::size_t n = index.before[b][k];
        for (std::size_t q = b * kKindStride; q < p; ++q) n += events.kind(q) == kind;
        return n;
    };
    return rank(hi) - rank(lo);
}

std::size_t firstEventAt(const trace::Trace& trace, std::int64_t time, bool after) noexcept {
    const auto& events = trace.events;
    const auto it = after ? std::upper_bound(events.begin(), events.end(), time, [](std::int64_t t, const trace::Event& e) { return t < e.time; })
                          : std::lower_bound(events.begin(), events.end(), time, [](const trace::Event& e, std::int64_t t) { return e.time < t; });
    return static_cast<std::size_t>(it - events.begin());
}

const char* flowKindName(FlowKind kind) noexcept {
    switch (kind) {
    case FlowKind::Wakeup: return "wakeup";
    case FlowKind::Steal: return "steal";
    case FlowKind::Spawn: return "spawn";
    case FlowKind::Completion: return "completion";
    case FlowKind::AwaitChain: return "await";
    case FlowKind::Cancel: return "cancel";
    case FlowKind::Canceled: return "canceled";
    case FlowKind::MutexHandoff: return "mutex-handoff";
    case FlowKind::ConditionWake: return "condition-wake";
    }
    return "unknown";
}

} // namespace fiberscope::analysis
