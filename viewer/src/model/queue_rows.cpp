// The ready-queue strips' layout (see queue_rows.hpp for why it starts
// where a queue was empty).
#include "model/queue_rows.hpp"

#include <algorithm>

namespace fiberscope::viewer {

std::int64_t queueLayoutStart(const std::vector<CounterSeries>& ready, std::int64_t time, std::size_t max_changes) {
    std::int64_t start = time;
    for (const CounterSeries& s : ready) {
        // values[k] holds on [times[k], times[k+1]); 0 before times[0].
        std::size_t k = s.times.upperBound(time);
        if (k == 0 || s.values[k - 1] == 0) continue; // empty at `time`
        for (std::size_t steps = 0; k > 1 && s.values[k - 2] != 0 && steps < max_changes; ++steps) --k;
        if (k > 1 && s.values[k - 2] != 0) continue; // not empty in the last max_changes changes
        // Empty just before times[k - 1] (or before the series began).
        start = std::min(start, s.times[k - 1]);
    }
    return start;
}

void assignQueueRows(std::span<const analysis::QueueStay> stays, std::int32_t rows, std::vector<std::int32_t>& out) {
    out.assign(stays.size(), 0);
    if (rows <= 0) return;
    std::vector<std::int64_t> row_end(static_cast<std::size_t>(rows), INT64_MIN);
    for (std::size_t i = 0; i < stays.size(); ++i) {
        const analysis::QueueStay& s = stays[i];
        std::size_t row = row_end.size() - 1;
        for (std::size_t r = 0; r < row_end.size(); ++r)
            if (row_end[r] <= s.start) {
                row = r;
                break;
            }
        row_end[row] = std::max(row_end[row], s.end);
        out[i] = static_cast<std::int32_t>(row);
    }
}

} // namespace fiberscope::viewer
