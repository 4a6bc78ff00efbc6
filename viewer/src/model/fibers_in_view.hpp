// Which fiber lanes the timeline lists for a view: the fibers alive in it
// (born at or before its end, dead at or after its start), in fiber order.
//
// Why an index: the list is recomputed whenever the view moves, and a pass
// over every fiber (what the viewer did) costs O(fibers) a frame while the
// user pans: ~45 ms at 10M events (1.5M fibers) and ten times that at 100M
// (issue 13: frame time at 100M events <= 2x at 10k, at every zoom). The
// fibers are summarised per block of 64 and per group of 64 blocks by the
// earliest and latest birth and death in it (32 bytes a block: ~0.5 byte a
// fiber). A block or group whose fibers are all alive in the view, or all
// outside it, is counted or skipped whole, so a query reads only the blocks
// that straddle the view's edges. The runtime numbers fibers in creation
// order (the seed policy from one counter, the scaling policy in blocks of
// 256 per thread: runtime/src/fiber/fiber.cpp), so 64 consecutive ids were
// created one after another and few blocks straddle (panning at 1% zoom on
// the benchmark's 10M-event trace: 69 -> 35 ms a frame). Where lifetimes
// are scattered over the ids (a crafted trace; tests/viewer has one) it
// degrades to the pass it replaced, never worse.
//
// A fiber is born at its fiber-create record (the trace's start if it has
// none) and dies at its finish (the trace's end if it did not finish).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::viewer {

struct FibersInViewIndex {
    static constexpr std::size_t kBlock = 64; // fibers a block
    static constexpr std::size_t kGroup = 64; // blocks a group
    struct Span {
        std::int64_t min_born = 0, max_born = 0, min_died = 0, max_died = 0;
    };
    std::vector<Span> blocks; // block b: fibers [b * kBlock, (b + 1) * kBlock)
    std::vector<Span> groups; // group g: blocks [g * kGroup, (g + 1) * kGroup)
    // What it was built for (rebuilt when the model changes: a live view's
    // model grows, and may reuse the old one's memory).
    std::uint64_t timeline = 0; // its Timeline::serial
    const void* data = nullptr;
    std::size_t size = 0;
    std::int64_t start_time = 0, end_time = 0;
    std::int64_t fingerprint = 0;
    std::uint64_t builds = 0; // how many times it was built (a query's answer is kept for this build)
    // The last partial query's answer: a view that stands still, or a
    // redraw, asks the same, and on a trace whose fiber ids are scattered
    // over their lifetimes the blocks do not prune and the query is a pass.
    struct Answer {
        double start = 0, end = 0;
        std::size_t first = 0, n = 0;
        std::uint64_t build = 0; // 0: none
        std::size_t count = 0;
        std::vector<std::uint32_t> rows;
    } last;
};

// When fiber lane `f` of `tl` is born and dies, as above.
std::int64_t fiberBorn(const analysis::Timeline& tl, const analysis::FiberLane& f) noexcept;
std::int64_t fiberDied(const analysis::Timeline& tl, const analysis::FiberLane& f) noexcept;

void buildFibersInViewIndex(const analysis::Timeline& tl, FibersInViewIndex& index);
// Builds the index unless it is already `tl`'s.
void ensureFibersInViewIndex(const analysis::Timeline& tl, FibersInViewIndex& index);

// The fibers of `tl` alive in the view [start, end] (all of them when the
// view covers the whole trace): returns how many, and sets `rows` to the
// indices (into tl.fibers) of the alive fibers of rank [first, first + n)
// in fiber order. `index` is built for `tl` if it is not already.
std::size_t fibersInView(const analysis::Timeline& tl, FibersInViewIndex& index, double start, double end, std::size_t first,
                         std::size_t n, std::vector<std::uint32_t>& rows);

// Heap bytes the index holds (by capacity).
std::size_t fibersInViewIndexBytes(const FibersInViewIndex& index) noexcept;

} // namespace fiberscope::viewer
