// Mutex slow paths (the seed's mutexLock/mutexUnlock).
//
// The lock word is kUnlocked, kLockedOnce, or the most recent waiter, whose
// queue_next links older waiters; kLockedOnce is 0, so the oldest waiter's
// null link reads as "locked, nobody else waiting". Waiters push themselves
// only after switching away (parkOnMutex, a PendingTask::park handler). unlock() pops the most
// recent waiter and hands it the mutex directly: the mutex never becomes
// free in between, so no third fiber can barge in, and the unlocking fiber
// switches straight to the new owner, rescheduling itself.
//
// Cancelable waits: a fiber parked by lock() also holds a tag naming this
// mutex in its cancel_thread (cancel.hpp has the protocol). Pushing,
// popping and a canceler's unlinking all happen under waiters_lock_, so the
// list below the head changes only under it. The head is the state word,
// which the lock-free fast paths also CAS, but only from kUnlocked or
// kLockedOnce: with waiters queued, only code holding the spin lock moves
// it. Whoever
// unlinks a waiter under the lock decides its outcome: the unlocker (the
// mutex is handed over) or the canceler (lock() returns Canceled).
#include <cstdio>
#include <cstdlib>

#include "sync/mutex_impl.hpp"
#include "fiberscope/future.hpp"

#include "io/cancel.hpp"
#include "support/cpu_relax.hpp"
#include "scheduler/scheduler.hpp"
#include "scheduler/worker.hpp"
#include "support/tracing.hpp"
#include "support/fault_injection.hpp"

namespace fiberscope {

using detail::Fiber;

Status Mutex::lockSlow(std::uintptr_t observed, bool cancelable) {
    // A plain std::thread has no fiber to park (README "Threads").
    if (!detail::currentThread()) {
        if (cancelable) return Errc::NotOnLoopThread;
        detail::misuse("Mutex::lockUncancelable() would wait, on a thread that is not one of the loop's (lock it from a fiber)");
    }
    Fiber* self = detail::currentFiber();
    // Only we write our result while we run; a canceler writes it only
    // after unlinking us, that is while we are parked.
    self->completion = {};
    detail::SwitchMessage message;
    const detail::MutexPark park{observed, this, cancelable};
    message.task = detail::PendingTask::park;
    message.reason = trace::SwitchReason::Mutex;
    FIBERSCOPE_TRACE_EVENT(emit::mutexContended(now, self->id, this));
    message.args.park = {detail::parkOnMutex, &park};
    detail::yield(nullptr, message);
    // Resumed: we own the mutex (mutexEnqueue or the previous owner made us
    // the owner), or a cancel unlinked us.
    if (!cancelable) return {};
    detail::exitSyncWait(self);
    if (self->completion.result == detail::kSyncCanceled) return Errc::Canceled;
    return {};
}

void Mutex::unlockSlow(std::uintptr_t observed) {
    // The hand-off switches to the waiter: only a fiber can do that.
    if (!detail::currentThread())
        detail::misuse("Mutex::unlock() with fibers waiting, on a thread that is not one of the loop's (unlock from a fiber)");
    if (Fiber* next = detail::mutexRelease(*this, observed)) {
        detail::jitter();
        FIBERSCOPE_TRACE_EVENT(emit::mutexHandoff(now, detail::currentFiber()->id, next->id, this));
        detail::yield(next, detail::PendingTask::reschedule, trace::SwitchReason::Handoff);
    }
}

namespace detail {

void parkOnMutex(Loop& loop, Thread& thread, Fiber* fiber, const void* arg) {
    // A copy: `arg` is on the fiber's stack, which mutexEnqueue may hand on.
    const MutexPark park = *static_cast<const MutexPark*>(arg);
    mutexEnqueue(loop, thread, *park.mutex, park.observed, fiber, park.cancelable);
}

SpinGuard::SpinGuard(std::atomic<bool>& l) : lock(l) {
    // acquire: the list as the previous holder left it.
    while (lock.exchange(true, std::memory_order_acquire))
        while (lock.load(std::memory_order_relaxed)) cpuRelax();
}

void mutexEnqueue(Loop& loop, Thread& thread, Mutex& mutex, std::uintptr_t observed, Fiber* fiber, bool cancelable) {
    bool tagged = false;
    bool canceled = false;
    {
        SpinGuard guard(mutex.waiters_lock_);
        std::uintptr_t state = observed;
        for (;;) {
            if (state == Mutex::kUnlocked) {
                // Unlocked meanwhile: take it. acquire: see the last owner's
                // writes. (If we tagged ourselves already, exitSyncWait clears
                // the tag; a canceler will not find us linked.)
                if (mutex.state_.compare_exchange_weak(state, Mutex::kLockedOnce, std::memory_order_acquire,
                                                       std::memory_order_acquire))
                    break;
                continue;
            }
            if (cancelable && !tagged) {
                // Tag and link in one critical section (see cancel.hpp).
                if (!enterSyncWait(fiber, syncWaitTag(&mutex, SyncKind::mutex))) {
                    fiber->completion = {kSyncCanceled, 0}; // canceled before it parked
                    canceled = true;
                    break;
                }
                tagged = true;
            }
            fiber->queue_next = reinterpret_cast<Fiber*>(state);
            // release: our queue_next link is visible to the unlocker, which
            // reads it after loading the state with acquire.
            if (mutex.state_.compare_exchange_weak(state, reinterpret_cast<std::uintptr_t>(fiber),
                                                   std::memory_order_release, std::memory_order_acquire))
                return;
        }
    }
    // We own the mutex, or we were canceled before parking: run again. The
    // fiber's mutex-contended record said it would wait; this one says why
    // it does not (recorded before schedule() publishes it).
    if (canceled) FIBERSCOPE_TRACE_EVENT(emit::cancelDelivered(now, fiber->id));
    else FIBERSCOPE_TRACE_EVENT(emit::mutexTaken(now, fiber->id, &mutex));
    fiber->queue_next = nullptr;
    schedule(loop, thread, FiberQueue::one(fiber));
}

bool mutexCancelWaiter(Mutex& mutex, Fiber* fiber) {
    SpinGuard guard(mutex.waiters_lock_);
    // acquire: the head's links (also ordered by the spin lock).
    std::uintptr_t state = mutex.state_.load(std::memory_order_acquire);
    if (state == Mutex::kUnlocked || state == Mutex::kLockedOnce) return false;
    auto* head = reinterpret_cast<Fiber*>(state);
    if (head == fiber) {
        // With waiters queued, nobody else moves the head while we hold the
        // spin lock (see the top of the file): the CAS fails only spuriously.
        // release: the new head's links reach an unlocker that loads the
        // state with acquire.
        while (!mutex.state_.compare_exchange_weak(state, reinterpret_cast<std::uintptr_t>(fiber->queue_next),
                                                   std::memory_order_release, std::memory_order_acquire)) {
            if (state != reinterpret_cast<std::uintptr_t>(fiber)) {
                std::fprintf(stderr, "fiberscope: internal error: a mutex's head moved under its spin lock\n");
                std::abort();
            }
        }
        fiber->queue_next = nullptr;
        return true;
    }
    for (Fiber* prev = head; prev->queue_next; prev = prev->queue_next) {
        if (prev->queue_next == fiber) {
            prev->queue_next = fiber->queue_next;
            fiber->queue_next = nullptr;
            return true;
        }
    }
    return false;
}

Fiber* mutexRelease(Mutex& mutex, std::uintptr_t) {
    SpinGuard guard(mutex.waiters_lock_);
    // Reload under the spin lock: the head our caller saw may have been
    // unlinked by a canceler since, and be running (its queue_next in a
    // ready queue). Under the lock the head we read stays linked: only we
    // (the owner) and spin-lock holders move it, and pushes only add above.
    // acquire: the head's queue_next, as below.
    std::uintptr_t state = mutex.state_.load(std::memory_order_acquire);
    for (;;) {
        if (state == Mutex::kUnlocked) {
            std::fprintf(stderr, "fiberscope: Mutex::unlock of a mutex that is not locked\n");
            std::abort();
        }
        if (state == Mutex::kLockedOnce) {
            // release: publish the critical section to the next locker.
            if (mutex.state_.compare_exchange_weak(state, Mutex::kUnlocked, std::memory_order_release,
                                                   std::memory_order_acquire))
                return nullptr;
            continue;
        }
        // Only the owner pops, and pushes and cancels wait for the spin
        // lock, so `waiter` stays the head: the CAS fails only spuriously.
        auto* waiter = reinterpret_cast<Fiber*>(state);
        // release: publish the critical section to the waiter we hand it to.
        // acquire (failure): read the new head's queue_next. (`state` itself
        // was loaded with acquire: above, or by our last CAS.)
        if (mutex.state_.compare_exchange_weak(state, reinterpret_cast<std::uintptr_t>(waiter->queue_next),
                                               std::memory_order_release, std::memory_order_acquire)) {
            waiter->queue_next = nullptr;
            return waiter;
        }
    }
}

} // namespace detail
} // namespace fiberscope
