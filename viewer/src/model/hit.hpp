// Hit testing: what is under the cursor (what it means: explain.hpp).
//
// Design: hit tests are binary searches on the sorted lane / instant / block
// vectors with a tolerance in pixels, so they cost O(log n) per frame.
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

} // namespace fiberscope::viewer
