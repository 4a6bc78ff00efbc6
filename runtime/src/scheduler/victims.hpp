// The round-robin walk over a few other workers, the one every search that
// looks at other threads' words uses: the seed's hand-off to an empty queue
// (schedule()), the ready-queue steal (findReadyFiber()) and the free-list
// steal (takeFiber()). Each search keeps its own cursor in its Thread, so
// the next search starts where the last one stopped and the load spreads
// over the victims (the seeds' idle_search_index, steal_ready_search_index
// and steal_free_search_index). Visiting at most `limit` slots bounds the
// cost of one search whatever the thread count (the seeds' max_*_search).
#pragma once

#include <algorithm>

#include "loop.hpp"

namespace fiberscope::detail {

// Visits up to `limit` worker slots below `active` from `cursor` on, skipping
// `self`, until `attempt(victim)` returns true; returns that victim (the
// cursor then points past it) or nullptr. `cursor` is the caller's own
// field (owner only).
template <class Attempt>
Thread* visitVictims(Loop& loop, Thread& self, unsigned& cursor, unsigned limit, unsigned active, Attempt&& attempt) {
    const unsigned searches = std::min(active, limit);
    for (unsigned i = 0; i < searches; ++i, ++cursor) {
        if (cursor >= active) cursor = 0;
        Thread& victim = loop.threads[cursor];
        if (&victim == &self) continue;
        if (attempt(victim)) {
            ++cursor;
            return &victim;
        }
    }
    return nullptr;
}

} // namespace fiberscope::detail
