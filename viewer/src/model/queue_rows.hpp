// The ready-queue strips' layout: which row each stay of a fiber in a
// worker's queue is drawn in.
//
// Why a layout start: a stay takes the lowest row free when it begins
// (first fit, rows in arrival order), so its row depends on every stay
// before it that was still queued then. Laid out from the view's start,
// a chip moved rows as the view panned past the stays that had pushed it
// down. Laid out from (at or before) the last instant a lane's queue was
// empty before the view, every stay the view shows of that lane started
// after it, when no earlier stay held a row: first fit gives it the row it
// has in a layout of the whole trace, and panning never moves a chip.
// (Stays laid out before that instant may get other rows; they end before
// the view and are not drawn.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "fiberscope/analysis/state_at.hpp"
#include "model/counters.hpp"

namespace fiberscope::viewer {

// Where to lay the strips out from for a view starting at `time`: the
// earliest, over the lanes, of each lane's latest instant at or before
// `time` when its queue was empty (`ready`: per lane, the queue's length).
// `time` itself if no queue holds a fiber then. A lane whose queue was not
// empty in the `max_changes` changes before `time` counts as empty at
// `time` (its chips may then move as the view pans).
std::int64_t queueLayoutStart(const std::vector<CounterSeries>& ready, std::int64_t time, std::size_t max_changes);

// The row of each of one lane's stays (by start, as queueStaysIn gives
// them): the lowest row free at its start, else the last of `rows`.
void assignQueueRows(std::span<const analysis::QueueStay> stays, std::int32_t rows, std::vector<std::int32_t>& out);

} // namespace fiberscope::viewer
