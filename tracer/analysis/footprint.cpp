// The model's memory, counted by structure (see footprint.hpp).
#include "fiberscope/analysis/footprint.hpp"

#include <algorithm>

namespace fiberscope::analysis {

namespace {

template <class T>
std::size_t vectorBytes(const std::vector<T>& v) noexcept {
    return heapBytes(v.capacity() * sizeof(T));
}

// A packed list's blocks (a PackedList's, a StateItemList's): its items and
// its side list of wide values.
template <class List>
std::size_t packedBytes(const List& list) noexcept {
    return heapBytes(list.itemBytes()) + heapBytes(list.wideBytes());
}

template <class List, class Ref>
std::size_t laneBackedBytes(const LaneBackedList<List, Ref>& list) noexcept {
    return packedBytes(list.stored) + vectorBytes(list.refs) + vectorBytes(list.by_ref) + vectorBytes(list.by_ref_before);
}

std::size_t stringBytes(const std::string& s) noexcept {
    // Short names live inside the std::string (no heap block).
    return s.capacity() > 15 ? heapBytes(s.capacity() + 1) : 0;
}

void addLane(const Lane& lane, std::size_t& intervals, std::size_t& lod) noexcept {
    intervals += heapBytes(lane.intervals.itemBytes()) + heapBytes(lane.intervals.wideBytes());
    if (const LaneIndex* index = lane.intervals.index())
        lod += heapBytes(sizeof(LaneIndex)) + vectorBytes(index->levels) + vectorBytes(index->prefix);
    for (const LodLevel& level : lane.levels()) lod += packedBytes(level.runs);
}

} // namespace

std::size_t heapBytes(std::size_t bytes) noexcept {
    if (bytes == 0) return 0;
    return std::max<std::size_t>(32, (bytes + 8 + 15) & ~std::size_t{15});
}

ModelFootprint modelFootprint(const Timeline& timeline) noexcept {
    ModelFootprint f;
    f.lanes += vectorBytes(timeline.threads) + vectorBytes(timeline.fibers);
    for (const ThreadLane& tl : timeline.threads) {
        addLane(tl.lane, f.thread_intervals, f.lod);
        f.instants += heapBytes(tl.instants.offsetBytes()) + heapBytes(tl.instants.baseBytes()) + heapBytes(tl.instants.wholeBytes()) +
                      vectorBytes(tl.instant_fibers);
        f.zones += vectorBytes(tl.zones);
        f.lanes += stringBytes(tl.name);
    }
    // The store of the fiber lanes that fit the compact format (their lists
    // count no block of their own), then each lane's own blocks.
    f.fiber_intervals += heapBytes(timeline.fiber_store.bytes());
    for (const FiberLane& fl : timeline.fibers) {
        addLane(fl.lane, f.fiber_intervals, f.lod);
        f.zones += heapBytes(fl.zoneBytes());
        f.lanes += heapBytes(fl.rareBytes()) + heapBytes(fl.nameBytes());
    }
    f.events_by_kind += vectorBytes(timeline.kinds.before) + vectorBytes(timeline.kinds.thread_bits);
    f.flows += laneBackedBytes(timeline.flows) + vectorBytes(timeline.flow_reach);
    f.latencies += laneBackedBytes(timeline.latencies);
    f.replay_items += packedBytes(timeline.replay.items);
    f.replay_index += vectorBytes(timeline.replay.slots) + vectorBytes(timeline.replay.checkpoints);
    for (const auto& owners : timeline.replay.slots) f.replay_index += vectorBytes(owners);
    for (const StateCheckpoint& c : timeline.replay.checkpoints) f.replay_index += vectorBytes(c.active);
    f.other += vectorBytes(timeline.lane_of_thread);
    return f;
}

std::size_t modelBytes(const Timeline& timeline) noexcept { return modelFootprint(timeline).total(); }

} // namespace fiberscope::analysis
