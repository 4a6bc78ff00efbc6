// Hit testing (what is under the cursor) and explanations (what the runtime
// did there, and why, in one plain sentence naming the runtime function).
//
// Design: hit tests are binary searches on the sorted lane / instant / block
// vectors with a tolerance in pixels, so they cost O(log n) per frame.
// Explanations read the record and its neighbourhood: the record's own fields,
// the thread's previous or next record (the submit before an io-wait switch,
// the unpark after a park), and the model (the fiber lane says what a fiber
// was doing before it became ready; the thread lane how long a park lasted).
// Each kind of record maps to the runtime function that emits it, so the
// sentence can name it: schedule(), findReadyFiber(), yield(), idle(),
// completionsToReady(), execute(), spawnFiber(), Mutex::unlockSlow(), ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fiberscope/trace_reader.hpp"
#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::viewer {
using namespace fiberscope::analysis; // the viewer reads the analysis model (tracer/analysis) as its own
} // namespace fiberscope::viewer

namespace fiberscope::viewer {

// The interval under `time` (containing it), else the nearest one within
// tolerance_px pixels, else kNone.
std::size_t hitInterval(const Lane& lane, std::int64_t time, double ns_per_pixel, double tolerance_px = 3.0);
// The instant nearest `time` within tolerance_px pixels (the first of equals), else kNone.
std::size_t hitInstant(const trace::Trace& trace, const analysis::InstantList& instants, std::int64_t time, double ns_per_pixel, double tolerance_px = 4.0);
// The innermost zone containing `time`, else kNone.
std::size_t hitZone(const std::vector<Zone>& zones, std::int64_t time);
// The block (from visibleBlocks) under `time`, else the nearest within tolerance, else kNone.
std::size_t hitBlock(const std::vector<Block>& blocks, std::int64_t time, double ns_per_pixel, double tolerance_px = 1.0);

enum class HitKind : std::uint8_t { None, Instant, Interval, Zone };
struct Hit {
    HitKind kind = HitKind::None;
    std::size_t lane = kNone;        // index in timeline.threads / timeline.fibers
    std::size_t index = kNone;       // into the lane's instants / intervals / zones
    std::uint32_t event = kNoEvent;  // the record (instant: itself; interval: its cause; zone: its begin)
};
// A thread lane: an instant within tolerance wins over the interval beneath it.
Hit hitThreadLane(const Timeline& timeline, const trace::Trace& trace, std::size_t lane, std::int64_t time, double ns_per_pixel, double tolerance_px = 4.0);
// A fiber lane: the innermost zone containing `time` wins if `zones` is set, else the interval.
Hit hitFiberLane(const Timeline& timeline, std::size_t lane, std::int64_t time, double ns_per_pixel, bool zones = false,
                 double tolerance_px = 3.0);

struct Explanation {
    std::string text;               // one plain sentence (or two)
    std::string function;           // the runtime function that did it, e.g. "findReadyFiber()"
    std::string file;               // where it lives, e.g. "runtime/src/scheduler/schedule.cpp"
    std::uint32_t event = kNoEvent; // the record explained (intervals: the one that began it)
};

// What the record at trace.events[event] means.
Explanation explain(const Timeline& timeline, const trace::Trace& trace, std::uint32_t event);
// What a thread lane's interval (Running / Idle / Parked) was.
Explanation explainThreadInterval(const Timeline& timeline, const trace::Trace& trace, std::size_t lane, std::size_t interval);
// What a fiber lane's interval (Ready / Running / Waiting / Finished) was.
Explanation explainFiberInterval(const Timeline& timeline, const trace::Trace& trace, std::size_t lane, std::size_t interval);
// What a zone was (`fiber`: the fiber it was opened on; 0 for an idle loop's zone).
Explanation explainZone(const Timeline& timeline, const trace::Trace& trace, const Zone& zone, std::uint64_t fiber);
// Dispatches on the hit (`fiber_lane`: the hit came from hitFiberLane).
Explanation explain(const Timeline& timeline, const trace::Trace& trace, const Hit& hit, bool fiber_lane);

} // namespace fiberscope::viewer
