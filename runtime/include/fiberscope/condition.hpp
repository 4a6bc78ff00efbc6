// Condition: a condition variable for fibers, used with fiberscope::Mutex.
//
//     if (auto s = mutex.lock(); !s) return s;
//     std::unique_lock lock(mutex, std::adopt_lock);
//     while (!ready) if (auto s = cond.wait(lock); !s) return s;
//
// wait() atomically releases the mutex and suspends; it reacquires the mutex
// before returning. Like every condition variable it may wake spuriously:
// always re-check the predicate. wait() is a cancel point: a fiber canceled
// before it or while it waits is taken off the waiters and wait() returns
// Canceled (with the mutex reacquired, uncancelably). A signal and a cancel
// that race resolve to one outcome: either the signal took the fiber off the
// list first (wait() returns success, the cancel stays pending for the next
// cancel point, so the signal is never lost), or the cancel did, and the
// signal goes to the next waiter. waitUncancelable() is never interrupted.
#pragma once

#include <atomic>
#include <mutex>

#include "fiberscope/clock.hpp"
#include "fiberscope/mutex.hpp"
#include "fiberscope/result.hpp"

namespace fiberscope {

class Condition {
public:
    Condition() = default;
    Condition(const Condition&) = delete;
    Condition& operator=(const Condition&) = delete;

    // `mutex` must be locked by the caller. Returns Canceled (with the mutex
    // locked) if the calling fiber has been canceled.
    // With a limited `timeout`, returns TimedOut (with the mutex locked) if
    // no signal came within it. A signal, a cancel and the timeout that race
    // resolve to one outcome, as above.
    Status wait(Mutex& mutex, Timeout timeout = {});
    Status wait(std::unique_lock<Mutex>& lock, Timeout timeout = {}) { return wait(*lock.mutex(), timeout); }
    // Waits for a signal whatever happens; a cancel stays pending.
    void waitUncancelable(Mutex& mutex);
    void waitUncancelable(std::unique_lock<Mutex>& lock) { waitUncancelable(*lock.mutex()); }
    // The same, but for at most `timeout`: TimedOut past it.
    Status waitUncancelable(Mutex& mutex, Timeout timeout);
    Status waitUncancelable(std::unique_lock<Mutex>& lock, Timeout timeout) {
        return waitUncancelable(*lock.mutex(), timeout);
    }
    // Wakes one waiting fiber, if any.
    void signal();
    // Wakes every waiting fiber.
    void broadcast();

    // Waiting fibers, first-in first-out, linked through the fibers'
    // queue_next. Guarded by `lock_`, a spin lock held for a few
    // instructions and never across a context switch.
    std::atomic<bool> lock_{false};
    void* head_ = nullptr;
    void* tail_ = nullptr;

private:
    Status waitImpl(Mutex& mutex, bool cancelable, Timeout timeout);
};

} // namespace fiberscope
