// Level of detail: which blocks to draw for a lane at a zoom level.
//
// Design: for a view [t0, t1] at ns_per_pixel, visibleBlocks picks the
// coarsest stored level whose granularity g is at most one pixel, binary
// searches the first interval in view, and walks the level's units (merged
// runs and lone intervals) in order. Every unit of a level starts in its own
// g-ns bucket, and g > ns_per_pixel / 16 (the next level is coarser than a
// pixel), so a frame touches at most ~17 units per pixel however many
// intervals the lane holds: O(log n + pixels). A level that would merge less
// than a quarter of the units of the finer level below it is not stored
// (lod.cpp): where it is missing the finer level is walked instead, which on
// the lane as a whole costs less than 4/3 of the walk it would have had.
// Units crossing the view's edges
// are re-aggregated from finer levels so exactly the intervals overlapping the
// view are counted. Units are then merged per pixel: a unit starting in the
// same pixel as the previous output block joins it, so no two output blocks
// start in one pixel.
#pragma once

#include <cstdint>
#include <vector>

#include "fiberscope/analysis/lane.hpp"

namespace fiberscope::analysis {

// Fills `lane.levels` and `lane.prefix` from `lane.intervals` (buildTimeline
// calls this for every lane; call it again if you edit a lane's intervals).
void buildLaneIndex(Lane& lane);

// The blocks to draw for [t0, t1] (inclusive: intervals touching the range
// count) at `ns_per_pixel`, in time order. Exactly the intervals overlapping
// the range are members of the output, once each; each block's start lies in
// a different pixel (pixel = floor((max(start, t0) - t0) / ns_per_pixel)).
// Blocks carry their member count, total member time and dominant
// fiber/state. `out` is cleared first and its capacity reused.
void visibleBlocks(const Lane& lane, std::int64_t t0, std::int64_t t1, double ns_per_pixel, std::vector<Block>& out);

// The range of interval indices [first, last) overlapping [t0, t1].
void intervalsOverlapping(const Lane& lane, std::int64_t t0, std::int64_t t1, std::size_t& first, std::size_t& last) noexcept;

// A block of one interval.
Block blockOf(const Interval& interval, std::uint32_t index) noexcept;
// Adds `next` (which follows `into` in time) to `into`.
void mergeBlock(Block& into, const Block& next) noexcept;

} // namespace fiberscope::analysis
