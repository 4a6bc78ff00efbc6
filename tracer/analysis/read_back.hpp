// What the model reads back rather than keeps (issue 13: memory; see
// timeline.hpp's design): an instant's fiber from its record, a spawn flow
// and a latency sample from their fiber's lane. The builder keeps a value
// only where these do not give it back (Builder::addInstant in
// timeline_replay.cpp; keepSpawnsInLanes and keepLatenciesInLanes in
// timeline_close.cpp), and the readers give it back through them
// (instantFiber, flowAt, latencyAt in timeline_queries.cpp), so the two
// sides cannot disagree. Private to the analysis library (not under include/).
#pragma once

#include <cstddef>
#include <cstdint>

#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::analysis::detail {

// The first fiber field of a record (create: the fiber; switch: from; group
// and queue: their fiber field) into `fiber`; false if it has none. The
// record table says which fields are fibers (trace_records.hpp).
inline bool firstFiber(const trace::Event& e, std::uint64_t& fiber) noexcept { return trace::firstField(e, trace::FieldType::Fiber, fiber); }

// The spawn flow a fiber's lane gives back (FlowStore): from its creation
// (the fiber-create record being the cause of its first interval) to its
// first Running interval; false if it was not created in the trace or never ran.
inline bool spawnFromLane(const FiberLane& fl, Flow& flow) noexcept {
    const IntervalList& intervals = fl.lane.intervals;
    if (!fl.createdInTrace() || intervals.empty()) return false;
    std::size_t k = 0;
    while (k < intervals.size() && intervals.stateOf(k) != State::Running) ++k;
    if (k == intervals.size()) return false;
    const Interval run = intervals[k];
    flow.kind = FlowKind::Spawn;
    flow.from = FlowEnd{fl.created(), fl.parent(), static_cast<std::uint32_t>(fl.createdThread()), intervals.causeOf(0)};
    flow.to = FlowEnd{run.start, fl.fiber(), static_cast<std::uint32_t>(run.thread), run.cause};
    return true;
}

// The sample a fiber's lane gives back (LatencyStore): the Ready interval
// before its Running interval `k`, to that one.
inline LatencySample latencyFromLane(const FiberLane& fl, std::size_t k) noexcept {
    return LatencySample{fl.lane.intervals.startOf(k - 1), fl.lane.intervals.startOf(k), fl.fiber()};
}

} // namespace fiberscope::analysis::detail
