// Mutex: a fiber mutex. A fiber that finds it locked is suspended (its thread
// runs other fibers); unlock() hands ownership directly to a waiting fiber
// and switches to it. Satisfies Lockable, so std::lock_guard and
// std::unique_lock work. Use only from fibers of an EventLoop.
#pragma once

#include <atomic>
#include <cstdint>

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
    void lock() {
        std::uintptr_t expected = kUnlocked;
        if (state_.compare_exchange_strong(expected, kLockedOnce, std::memory_order_acquire,
                                           std::memory_order_relaxed))
            return;
        lockSlow(expected);
    }
    void unlock() {
        std::uintptr_t expected = kLockedOnce;
        // release: publishes the critical section to the next owner.
        // acquire on failure: `expected` is then the most recent waiter, whose
        // queue_next link (and everything it did before it switched away) the
        // slow path reads and hands the mutex to; it was published by that
        // waiter's release in mutexEnqueue. (ThreadSanitizer found this one:
        // relaxed here let the unlocker read a stale link on weak-memory CPUs.)
        if (state_.compare_exchange_strong(expected, kUnlocked, std::memory_order_release,
                                           std::memory_order_acquire))
            return;
        unlockSlow(expected);
    }

    std::atomic<std::uintptr_t> state_{kUnlocked};

private:
    void lockSlow(std::uintptr_t observed);
    void unlockSlow(std::uintptr_t observed);
};

} // namespace fiberscope
