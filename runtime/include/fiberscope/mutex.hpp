// Mutex: a fiber mutex. A fiber that finds it locked is suspended (its thread
// runs other fibers); unlock() hands ownership directly to a waiting fiber
// and switches to it. Use only from fibers of an EventLoop.
//
// lock() is a cancel point when it has to wait: a cancel of the waiting fiber
// takes it off the wait list and lock() returns Canceled without the mutex.
// lockUncancelable() always gets the mutex (a cancel stays pending). Beware:
// std::lock_guard and std::unique_lock call lock() and drop its Status, so a
// canceled fiber would then "unlock" a mutex it does not hold. Lock first and
// adopt it:
//
//     if (auto s = mutex.lock(); !s) return s;
//     std::lock_guard guard(mutex, std::adopt_lock);
#pragma once

#include <atomic>
#include <cstdint>

#include "fiberscope/result.hpp"

namespace fiberscope {

class Mutex {
public:
    // The lock word (the seed's Io.Mutex.State): `kUnlocked`, `kLockedOnce`
    // (locked, nobody waiting) or a pointer to the most recent waiting fiber,
    // whose queue_next links the other waiters (locked, contended).
    static constexpr std::uintptr_t kLockedOnce = 0;
    static constexpr std::uintptr_t kUnlocked = 1;

    Mutex() = default;
    Mutex(const Mutex&) = delete;
    Mutex& operator=(const Mutex&) = delete;

    bool try_lock() noexcept {
        std::uintptr_t expected = kUnlocked;
        // acquire: the critical section must see the previous owner's writes.
        return state_.compare_exchange_strong(expected, kLockedOnce, std::memory_order_acquire,
                                              std::memory_order_relaxed);
    }
    // Canceled (without the mutex) if the calling fiber is canceled while it
    // waits, or was canceled before and the mutex is held.
    Status lock() {
        std::uintptr_t expected = kUnlocked;
        // acquire: the critical section must see the previous owner's writes.
        if (state_.compare_exchange_strong(expected, kLockedOnce, std::memory_order_acquire,
                                           std::memory_order_relaxed))
            return {};
        return lockSlow(expected, true);
    }
    // Waits however long it takes; a cancel stays pending for the next cancel point.
    void lockUncancelable() {
        std::uintptr_t expected = kUnlocked;
        // acquire: as in lock().
        if (state_.compare_exchange_strong(expected, kLockedOnce, std::memory_order_acquire,
                                           std::memory_order_relaxed))
            return;
        (void)lockSlow(expected, false);
    }
    void unlock() {
        std::uintptr_t expected = kLockedOnce;
        // release: publishes the critical section to the next owner.
        // acquire on failure: `expected` is then the most recent waiter, whose
        // queue_next link (and everything it did before it switched away) the
        // slow path reads and hands the mutex to; it was published by that
        // waiter's release in mutexEnqueue (and, since waiters are linked and
        // unlinked under waiters_lock_, by that lock too). (ThreadSanitizer found this one:
        // relaxed here let the unlocker read a stale link on weak-memory CPUs.)
        if (state_.compare_exchange_strong(expected, kUnlocked, std::memory_order_release,
                                           std::memory_order_acquire))
            return;
        unlockSlow(expected);
    }

    std::atomic<std::uintptr_t> state_{kUnlocked};
    // Spin lock over the waiter list (pushing, popping, and a cancel's
    // unlinking), held for a few instructions and never across a switch.
    std::atomic<bool> waiters_lock_{false};

private:
    Status lockSlow(std::uintptr_t observed, bool cancelable);
    void unlockSlow(std::uintptr_t observed);
};

} // namespace fiberscope
