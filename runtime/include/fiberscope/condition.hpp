// Condition: a condition variable for fibers, used with fiberscope::Mutex.
//
//     std::unique_lock lock(mutex);
//     while (!ready) if (!cond.wait(mutex)) return Errc::Canceled;
//
// wait() atomically releases the mutex and suspends; it reacquires the mutex
// before returning. Like every condition variable it may wake spuriously:
// always re-check the predicate. wait() is a cancel point on entry and on
// wake-up; a fiber already suspended in wait() is not interrupted by cancel
// (signal it, or close the Queue it waits on).
#pragma once

#include <atomic>
#include <mutex>

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
    Status wait(Mutex& mutex);
    Status wait(std::unique_lock<Mutex>& lock) { return wait(*lock.mutex()); }
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
};

} // namespace fiberscope
