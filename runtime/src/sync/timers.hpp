// SyncTimers: the deadlines of timed sync waits (Condition::wait with a
// Timeout, and what is built on it), one list per worker thread.
//
// A timed wait is an ordinary condition wait plus a deadline. The waiting
// fiber links a SyncTimer (on its own stack) into the list of the thread it
// parks on, before it switches away; that thread's idle loop bounds its
// wait by the nearest deadline and, once one passes, acts like a signal
// aimed at that one fiber: it unlinks the fiber from the condition's
// waiters under the condition's spin lock and schedules it with the
// TimedOut outcome. A signal, a cancel and the timeout each unlink under
// that same spin lock, so exactly one of them takes the fiber out and
// decides what wait() returns; the others find it gone.
//
// Why a per-thread list under a std::mutex, not the ring: an io_uring
// timeout can only be withdrawn by the ring's owner, but the fiber is
// usually woken on another thread (the signaler's), and it must withdraw
// its deadline before returning, since the SyncTimer lives on its stack.
// With a mutex, any thread removes a deadline at once. The owner fires
// deadlines while holding the mutex, so a fiber whose remove() finds its
// deadline gone knows the firing is over: the owner is done with the
// SyncTimer and with the condition, which the fiber may free next.
// Lock order: a thread's timer mutex, then a condition's spin lock. Only
// the owner ever holds the mutex while taking a spin lock, and nobody takes
// the mutex while holding a spin lock, so there is no cycle.
//
// The list is kept in deadline order, inserted from the back: waits with
// one timeout length arrive in deadline order, so an insert is usually
// O(1). No allocation: a wait never fails for want of memory.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>

#include "fiber/fiber.hpp"

namespace fiberscope {
class Condition;
}

namespace fiberscope::detail {

struct SyncTimer {
    std::int64_t deadline_ns = 0; // CLOCK_MONOTONIC
    Fiber* fiber = nullptr;
    Condition* condition = nullptr;
    SyncTimer* prev = nullptr;
    SyncTimer* next = nullptr;
    bool linked = false;
};

// Fiber::completion.result of a sync wait ended by its deadline.
inline constexpr std::int32_t kSyncTimedOut = -110; // -ETIMEDOUT

class SyncTimers {
public:
    static constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::max();

    // Owner thread only (the waiting fiber, before it switches away).
    void insert(SyncTimer& timer);
    // Any thread: true if the deadline was still pending (it will never
    // fire now), false if the owner fired it (and is done with it).
    bool remove(SyncTimer& timer);
    // Owner only: the nearest deadline, or kNone. May be earlier than the
    // true nearest (a remove since), never later: costs an early wake-up.
    std::int64_t nearest() const noexcept { return nearest_.load(std::memory_order_relaxed); }
    // Owner only: fires every deadline at or before `now_ns`; fibers it
    // unlinked from their condition are gathered into `next` / `queue`.
    // Returns how many it readied.
    unsigned expire(std::int64_t now_ns, Fiber*& next, FiberQueue& queue);

private:
    void unlink(SyncTimer& timer) noexcept;
    std::mutex mutex_;
    SyncTimer* head_ = nullptr;
    SyncTimer* tail_ = nullptr;
    // head_'s deadline; written under mutex_, read by the owner without it.
    // relaxed is enough: only the owner inserts (the one way it gets
    // earlier), so the owner's own reads are never later than the truth.
    std::atomic<std::int64_t> nearest_{kNone};
};

} // namespace fiberscope::detail
