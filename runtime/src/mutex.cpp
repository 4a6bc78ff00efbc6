// Mutex slow paths (the seed's mutexLock/mutexUnlock).
//
// The lock word is kUnlocked, kLockedOnce, or the most recent waiter, whose
// queue_next links older waiters; kLockedOnce is 0, so the oldest waiter's
// null link reads as "locked, nobody else waiting". Waiters push themselves
// only after switching away (PendingTask::mutex_lock). unlock() pops the most
// recent waiter and hands it the mutex directly: the mutex never becomes
// free in between, so no third fiber can barge in, and the unlocking fiber
// switches straight to the new owner, rescheduling itself.
#include <cstdio>
#include <cstdlib>

#include "mutex_impl.hpp"
#include "scheduler.hpp"
#include "thread.hpp"
#include "tracing.hpp"

namespace fiberscope {

using detail::Fiber;

void Mutex::lockSlow(std::uintptr_t observed) {
    if (!detail::currentThread()) {
        std::fprintf(stderr, "fiberscope: Mutex::lock would block outside an EventLoop; lock it from a fiber\n");
        std::abort();
    }
    detail::SwitchMessage message;
    message.task = detail::PendingTask::mutex_lock;
    message.reason = trace::SwitchReason::Mutex;
    FIBERSCOPE_TRACE_EVENT(emit::mutexContended(now, detail::currentFiber()->id, this));
    message.args.mutex_lock = {observed, this};
    detail::yield(nullptr, message);
    // Resumed: mutexEnqueue or the previous owner made us the owner.
}

void Mutex::unlockSlow(std::uintptr_t observed) {
    if (Fiber* next = detail::mutexRelease(*this, observed)) {
        FIBERSCOPE_TRACE_EVENT(emit::mutexHandoff(now, detail::currentFiber()->id, next->id, this));
        detail::yield(next, detail::PendingTask::reschedule, trace::SwitchReason::Handoff);
    }
}

namespace detail {

void mutexEnqueue(Loop& loop, Thread& thread, Mutex& mutex, std::uintptr_t observed, Fiber* fiber) {
    std::uintptr_t state = observed;
    for (;;) {
        if (state == Mutex::kUnlocked) {
            // Unlocked meanwhile: take it. acquire: see the last owner's writes.
            if (mutex.state_.compare_exchange_weak(state, Mutex::kLockedOnce, std::memory_order_acquire,
                                                   std::memory_order_acquire)) {
                fiber->queue_next = nullptr;
                schedule(loop, thread, FiberQueue::one(fiber));
                return;
            }
        } else {
            fiber->queue_next = reinterpret_cast<Fiber*>(state);
            // release: our queue_next link is visible to the unlocker, which
            // reads it after loading the state with acquire.
            if (mutex.state_.compare_exchange_weak(state, reinterpret_cast<std::uintptr_t>(fiber),
                                                   std::memory_order_release, std::memory_order_acquire))
                return;
        }
    }
}

Fiber* mutexRelease(Mutex& mutex, std::uintptr_t observed) {
    std::uintptr_t state = observed;
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
        // Only the owner pops, so `waiter` stays the head until our CAS
        // succeeds or someone pushes (and the CAS fails): no ABA.
        auto* waiter = reinterpret_cast<Fiber*>(state);
        // release: publish the critical section to the waiter we hand it to.
        // acquire (failure): read the new head's queue_next. (`state` itself
        // was loaded with acquire: by unlock()'s failed CAS or our last one.)
        if (mutex.state_.compare_exchange_weak(state, reinterpret_cast<std::uintptr_t>(waiter->queue_next),
                                               std::memory_order_release, std::memory_order_acquire)) {
            waiter->queue_next = nullptr;
            return waiter;
        }
    }
}

} // namespace detail
} // namespace fiberscope
