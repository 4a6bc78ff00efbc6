// Semaphore (semaphore.hpp has the design).
//
// Why no permit is lost: waiters_ counts every fiber between its increment
// and its decrement around available_.wait(), all under the mutex, so it is
// never below the number of fibers asleep on available_. A post(n) signals
// min(n, waiters_) times; each signal pops a sleeper (Condition skips a
// canceled or timed-out one, which a cancel or timeout took off the list
// first), and a popped fiber re-checks the count under the mutex. A waiter
// that returns Canceled or TimedOut never touched the count, so a permit
// it was "meant" for stays counted for the next wait() or tryWait().
//
// Its records (semaphore: take, blocked, gave-up, post) are written under
// the mutex, as the count changes: in the order of the changes, and before
// any other fiber can see them. The Mutex's and Condition's own records
// stay: they say how the fibers were scheduled.
#include "fiberscope/semaphore.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>

#include "fiberscope/event_loop.hpp"
#include "support/tracing.hpp"
#include "sync/deadline.hpp"

namespace fiberscope {

void Semaphore::post(std::size_t n) {
    if (n == 0) return;
    mutex_.lockUncancelable();
    if (n > std::numeric_limits<std::size_t>::max() - count_) {
        std::fprintf(stderr, "fiberscope: Semaphore::post would overflow the permit count\n");
        std::abort();
    }
    count_ += n;
    FIBERSCOPE_TRACE_EVENT(emit::semaphoreOp(now, SemaphoreOp::Post, this, currentFiberId(), n));
    const std::size_t waiters = waiters_;
    const std::size_t wake = std::min(n, waiters);
    mutex_.unlock();
    // After the unlock: a woken fiber does not find the mutex still held.
    // The sleepers queued under the mutex, so the signals find them.
    if (wake > 1 && wake == waiters) available_.broadcast();
    else
        for (std::size_t i = 0; i < wake; ++i) available_.signal();
}

bool Semaphore::tryWait() {
    mutex_.lockUncancelable();
    const bool taken = count_ > 0;
    if (taken) {
        --count_;
        FIBERSCOPE_TRACE_EVENT(emit::semaphoreOp(now, SemaphoreOp::Take, this, currentFiberId(), 0));
    }
    mutex_.unlock();
    return taken;
}

Status Semaphore::waitImpl(bool cancelable, Timeout timeout) {
    const detail::SyncDeadline deadline(timeout);
    if (auto s = detail::lockInternal(mutex_, cancelable); !s) return s;
    std::unique_lock lock(mutex_, std::adopt_lock);
    // (One blocked record per wait, however often a woken fiber finds the
    // permit taken and sleeps again.)
    if (count_ == 0) FIBERSCOPE_TRACE_EVENT(emit::semaphoreOp(now, SemaphoreOp::Blocked, this, currentFiberId(), 0));
    while (count_ == 0) {
        ++waiters_;
        Status s = detail::waitWithin(available_, mutex_, cancelable, deadline);
        --waiters_;
        if (!s) {
            FIBERSCOPE_TRACE_EVENT(emit::semaphoreOp(now, SemaphoreOp::GaveUp, this, currentFiberId(), 0));
            return s;
        }
    }
    --count_;
    FIBERSCOPE_TRACE_EVENT(emit::semaphoreOp(now, SemaphoreOp::Take, this, currentFiberId(), 0));
    return {};
}

} // namespace fiberscope
