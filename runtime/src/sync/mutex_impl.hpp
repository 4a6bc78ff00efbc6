// Internal halves of Mutex and Condition that run inside switch handlers.
#pragma once

#include <cstdint>

#include "fiber/fiber.hpp"
#include "fiberscope/mutex.hpp"

namespace fiberscope::detail {
struct Loop;
struct Thread;

// Queues `fiber` (which switched away) on `mutex`, or gives it the mutex and
// schedules it if the mutex has meanwhile been unlocked.
// `cancelable`: park with a sync-wait tag (see cancel.hpp), or, if the fiber
// was canceled already, schedule it with the Canceled outcome.
void mutexEnqueue(Loop& loop, Thread& thread, Mutex& mutex, std::uintptr_t observed, Fiber* fiber, bool cancelable);
// What Mutex::lockSlow parks with, and its PendingTask::park handler
// (scheduler/switch_message.hpp), which calls mutexEnqueue.
struct MutexPark {
    std::uintptr_t observed; // the lock word lockSlow saw
    Mutex* mutex;
    bool cancelable;
};
void parkOnMutex(Loop& loop, Thread& thread, Fiber* fiber, const void* arg);
// Unlocks `mutex`, or hands it to the most recent waiter, which
// is returned (it now owns the mutex and must be made ready by the caller).
Fiber* mutexRelease(Mutex& mutex, std::uintptr_t observed);
// A canceler's half: unlinks `fiber` from the mutex's waiters. False if it
// is not there (the unlocker handed it the mutex first).
bool mutexCancelWaiter(Mutex& mutex, Fiber* fiber);

// The tiny spin lock Mutex and Condition keep over their waiter lists.
struct SpinGuard {
    std::atomic<bool>& lock;
    explicit SpinGuard(std::atomic<bool>& l);
    // release: our list edits are visible to the next holder.
    ~SpinGuard() { lock.store(false, std::memory_order_release); }
};
} // namespace fiberscope::detail
