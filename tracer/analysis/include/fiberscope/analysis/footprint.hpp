// What the model costs in memory, structure by structure: for `fiberscope
// benchmark` (which prints it per trace event) and for anyone deciding what
// to shrink next (issue 13: the viewer's resident memory is held to 5x the
// trace file's size).
//
// Design: bytes are counted from each container's capacity (what it holds
// allocated, not what it uses), plus an estimate of the allocator's own cost
// per heap block (glibc: an 8-byte header, rounded up to 16 bytes, 32 at
// least), because the model is mostly small per-fiber vectors where that
// overhead is a third of the bytes. The structs that hold the vectors
// (ThreadLane, FiberLane) are counted in `lanes`. Nothing is cached: one
// pass over the lanes, O(threads + fibers).
#pragma once

#include <cstddef>

#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::analysis {

struct ModelFootprint {
    std::size_t thread_intervals = 0; // ThreadLane::lane.intervals
    std::size_t fiber_intervals = 0;  // FiberLane::lane.intervals
    std::size_t lod = 0;              // every lane's levels of detail and prefix sums
    std::size_t instants = 0;         // ThreadLane::instants
    std::size_t zones = 0;            // thread and fiber zones
    std::size_t events_by_kind = 0;   // the kind index (Timeline::kinds; it was a list per kind)
    std::size_t lanes = 0;            // the ThreadLane and FiberLane structs themselves, and fiber names
    std::size_t flows = 0;            // Timeline::flows (FlowStore) and flow_reach
    std::size_t latencies = 0;        // Timeline::latencies
    std::size_t replay_items = 0;     // ReplayIndex::items
    std::size_t replay_index = 0;     // ReplayIndex::slots and checkpoints
    std::size_t other = 0;            // lane_of_thread

    std::size_t total() const noexcept {
        return thread_intervals + fiber_intervals + lod + instants + zones + events_by_kind + lanes + flows +
               latencies + replay_items + replay_index + other;
    }
};

ModelFootprint modelFootprint(const Timeline& timeline) noexcept;
// modelFootprint(timeline).total().
std::size_t modelBytes(const Timeline& timeline) noexcept;
// Heap bytes of one allocation of `bytes` (0 for none), with the allocator's overhead.
std::size_t heapBytes(std::size_t bytes) noexcept;

} // namespace fiberscope::analysis
