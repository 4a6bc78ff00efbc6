// Totals over the model: the numbers `fiberscope stats` prints, as sums over
// the lanes, so that stats and the viewer cannot disagree about them.
//
// Design: nothing here is stored in the Timeline; each total is one pass over
// the lanes it sums (a trace's fibers may be millions, and the viewer never
// needs these), and the latency samples are grouped by fiber with a counting
// sort (two passes, no hashing).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::analysis {

struct LaneTotals {
    std::array<std::int64_t, kStateCount> ns{}; // time spent in each state (by State)
    std::uint64_t runs = 0;       // Running intervals
    std::uint64_t migrations = 0; // Running intervals on another thread than the Running interval before

    std::int64_t time(State state) const noexcept { return ns[static_cast<std::size_t>(state)]; }
};

LaneTotals laneTotals(const Lane& lane) noexcept;

// Every latency sample's `run - ready`, grouped by fiber lane: the samples of
// timeline.fibers[k] are values[offsets[k] .. offsets[k + 1]), in run order.
struct FiberLatencies {
    std::vector<std::size_t> offsets; // fibers.size() + 1 entries
    std::vector<std::int64_t> values;
};

FiberLatencies latenciesByFiber(const Timeline& timeline);

// The index of `fiber`'s lane in timeline.fibers, or kNone.
std::size_t fiberLaneIndex(const Timeline& timeline, std::uint64_t fiber) noexcept;

} // namespace fiberscope::analysis
