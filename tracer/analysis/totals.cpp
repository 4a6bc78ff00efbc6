// Sums over lanes and latency samples (see totals.hpp).
#include "fiberscope/analysis/totals.hpp"

namespace fiberscope::analysis {

LaneTotals laneTotals(const Lane& lane) noexcept {
    LaneTotals totals;
    std::int32_t last_thread = -1;
    bool ran = false;
    for (const Interval& iv : lane.intervals) {
        totals.ns[static_cast<std::size_t>(iv.state)] += iv.duration();
        if (iv.state != State::Running) continue;
        ++totals.runs;
        if (ran && iv.thread != last_thread) ++totals.migrations;
        ran = true;
        last_thread = iv.thread;
    }
    return totals;
}

std::size_t fiberLaneIndex(const Timeline& timeline, std::uint64_t fiber) noexcept {
    const FiberLane* lane = findFiber(timeline, fiber);
    return lane ? static_cast<std::size_t>(lane - timeline.fibers.data()) : kNone;
}

FiberLatencies latenciesByFiber(const Timeline& timeline) {
    FiberLatencies out;
    out.offsets.assign(timeline.fibers.size() + 1, 0);
    const auto latencies = latenciesOf(timeline);
    std::vector<std::uint32_t> lane_of(latencies.size());
    for (std::size_t k = 0; k < latencies.size(); ++k) {
        const std::size_t lane = fiberLaneIndex(timeline, latencies[k].fiber);
        lane_of[k] = static_cast<std::uint32_t>(lane == kNone ? timeline.fibers.size() : lane);
        if (lane != kNone) ++out.offsets[lane + 1];
    }
    for (std::size_t k = 1; k < out.offsets.size(); ++k) out.offsets[k] += out.offsets[k - 1];
    out.values.resize(out.offsets.back());
    std::vector<std::size_t> next(out.offsets.begin(), out.offsets.end() - 1);
    for (std::size_t k = 0; k < timeline.latencies.size(); ++k) {
        if (lane_of[k] == timeline.fibers.size()) continue;
        const LatencySample s = latencies[k];
        out.values[next[lane_of[k]]++] = s.run - s.ready;
    }
    return out;
}

} // namespace fiberscope::analysis
