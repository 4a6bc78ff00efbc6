// The order of a trace's records: each thread's records, decoded in time
// order, merged by (time, thread). The reader merges them into Trace::events
// with this, and the model's build (fiberscope/analysis/load.hpp) merges the
// same streams alongside it, so both see one order and each record the same
// index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "fiberscope/trace_event_list.hpp"

namespace fiberscope::trace {

// Appends the per-thread event lists, each in time order, to `out` merged
// by (time, thread): a k-way merge that takes each thread's run until another
// thread's head is earlier (ties go to the lower thread index). `out` has
// size(), reserve(n) and push_back(const Event&): a std::vector<Event>, an
// EventList, or a consumer that reads each record as it comes.
template <class Out>
void mergeByTime(const std::vector<std::vector<Event>>& per_thread, Out& out) {
    std::size_t total = 0;
    for (auto& v : per_thread) total += v.size();
    out.reserve(out.size() + total);
    using Head = std::pair<std::int64_t, std::size_t>; // (time, thread)
    std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
    std::vector<std::size_t> next(per_thread.size(), 0);
    for (std::size_t t = 0; t < per_thread.size(); ++t)
        if (!per_thread[t].empty()) heads.push({per_thread[t][0].time, t});
    while (!heads.empty()) {
        const std::size_t t = heads.top().second;
        heads.pop();
        const auto& v = per_thread[t];
        // Take this thread's run until another thread's head comes first: is
        // earlier, or as early and of a lower thread (so ties are in thread
        // order wherever a run ends, and a follower's merge agrees).
        const std::int64_t limit = heads.empty() ? INT64_MAX : heads.top().first;
        const std::size_t other = heads.empty() ? SIZE_MAX : heads.top().second;
        std::size_t i = next[t];
        do out.push_back(v[i++]);
        while (i < v.size() && (v[i].time < limit || (v[i].time == limit && t < other)));
        next[t] = i;
        if (i < v.size()) heads.push({v[i].time, t});
    }
}

} // namespace fiberscope::trace
