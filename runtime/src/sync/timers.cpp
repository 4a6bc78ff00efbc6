// SyncTimers: see sync/timers.hpp.
#include "sync/timers.hpp"

#include "sync/condition_impl.hpp"
#include "support/tracing.hpp"

namespace fiberscope::detail {

void SyncTimers::insert(SyncTimer& timer) {
    std::lock_guard lock(mutex_);
    SyncTimer* after = tail_;
    while (after && after->deadline_ns > timer.deadline_ns) after = after->prev;
    timer.prev = after;
    timer.next = after ? after->next : head_;
    if (timer.next) timer.next->prev = &timer;
    else tail_ = &timer;
    if (after) after->next = &timer;
    else head_ = &timer;
    timer.linked = true;
    nearest_.store(head_->deadline_ns, std::memory_order_relaxed);
}

void SyncTimers::unlink(SyncTimer& timer) noexcept {
    if (timer.prev) timer.prev->next = timer.next;
    else head_ = timer.next;
    if (timer.next) timer.next->prev = timer.prev;
    else tail_ = timer.prev;
    timer.prev = timer.next = nullptr;
    timer.linked = false;
    nearest_.store(head_ ? head_->deadline_ns : kNone, std::memory_order_relaxed);
}

bool SyncTimers::remove(SyncTimer& timer) {
    std::lock_guard lock(mutex_);
    if (!timer.linked) return false;
    unlink(timer);
    return true;
}

unsigned SyncTimers::expire(std::int64_t now_ns, Fiber*& next, FiberQueue& queue) {
    unsigned count = 0;
    std::lock_guard lock(mutex_);
    while (head_ && head_->deadline_ns <= now_ns) {
        SyncTimer& timer = *head_;
        unlink(timer);
        // Unlinked here: the deadline decides. Not there: a signal or a
        // cancel took the fiber first and decided instead.
        if (!conditionCancelWaiter(*timer.condition, timer.fiber)) continue;
        // Written while the fiber is parked; its scheduling publishes it.
        timer.fiber->completion = {kSyncTimedOut, 0};
        FIBERSCOPE_TRACE_EVENT(emit::conditionWake(now, timer.fiber->id, timer.condition, trace::ConditionWakeHow::TimedOut));
        queue.gather(next, timer.fiber);
        ++count;
    }
    return count;
}

} // namespace fiberscope::detail
