// Cancellation: see cancel.hpp for the protocol.
#include "io/cancel.hpp"

#include <cerrno>
#include <thread>

#include "fiberscope/cancel_protection.hpp"

#include "sync/condition_impl.hpp"
#include "support/cpu_relax.hpp"
#include "loop.hpp"
#include "sync/mutex_impl.hpp"
#include "scheduler/scheduler.hpp"
#include "support/tracing.hpp"

namespace fiberscope::detail {

Status enterCancelRegion(Fiber* fiber, Thread* thread) {
    Thread* expected = nullptr;
    // acq_rel: release publishes which ring to message; acquire pairs with the
    // canceler's exchange when it came first.
    if (fiber->cancel_thread.compare_exchange_strong(expected, thread, std::memory_order_acq_rel,
                                                     std::memory_order_acquire))
        return {};
    if (isProtected(expected)) return {}; // uncancelable: nobody will message our ring
    return Errc::Canceled;
}

void exitCancelRegion(Fiber* fiber, Thread* thread) {
    Thread* expected = thread;
    // Fails only if a canceler swapped in kCanceling, which must stay.
    fiber->cancel_thread.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel,
                                                 std::memory_order_acquire);
}

bool enterSyncWait(Fiber* fiber, Thread* tag) {
    Thread* expected = nullptr;
    // release: a canceler that reads the tag (acquire) and then takes the
    // primitive's spin lock finds the fiber linked; the link is also ordered
    // by that spin lock. acquire (failure): nothing to read, kept symmetric.
    if (fiber->cancel_thread.compare_exchange_strong(expected, tag, std::memory_order_acq_rel,
                                                     std::memory_order_acquire))
        return true;
    return isProtected(expected); // protected: park untagged, no canceler will look
}

bool enterAwait(Fiber* fiber, Fiber* awaited) {
    Thread* expected = nullptr;
    // acq_rel: as enterSyncWait's (a canceler that reads the tag acquires
    // what it names).
    if (fiber->cancel_thread.compare_exchange_strong(expected, syncWaitTag(awaited, SyncKind::await),
                                                     std::memory_order_acq_rel, std::memory_order_acquire))
        return true;
    // Canceled before the await began: pass it on now (it stays pending for
    // our next cancel point). Protected: the await is uncancelable.
    if (expected == kCanceling) requestCancel(awaited);
    return false;
}

void exitSyncWait(Fiber* fiber) {
    Thread* value = fiber->cancel_thread.load(std::memory_order_acquire);
    for (unsigned spins = 0;; ++spins) {
        if (isSyncWaitTag(value)) {
            // acq_rel: pairs with a canceler's CAS on the same word.
            if (fiber->cancel_thread.compare_exchange_weak(value, nullptr, std::memory_order_acq_rel,
                                                           std::memory_order_acquire))
                return;
            continue;
        }
        // kCanceling (pending for the next cancel point) or nullptr (the
        // handler took the lock before tagging): nothing more to do.
        if (value != kCancelingSync) return;
        // A canceler is unlinking us (it will not find us: a waker did). Its
        // release store of kCanceling, seen with acquire, orders its last
        // touch of the primitive before our return: the caller may free it.
        if (spins > 64) std::this_thread::yield();
        else cpuRelax();
        value = fiber->cancel_thread.load(std::memory_order_acquire);
    }
}

void requestCancel(Fiber* fiber) {
    // acquire: see the thread (or primitive) the fiber published on
    // entering its region or its wait.
    Thread* target = fiber->cancel_thread.load(std::memory_order_acquire);
    for (;;) {
        if (target == kCanceling || target == kCancelingSync || target == kProtectedCanceled) {
            FIBERSCOPE_TRACE_EVENT(emit::cancelRequest(now, fiber->id, 0));
            return;
        }
        if (target == kProtected) {
            // acq_rel: release hands the request to the fiber's leaving of
            // its protection scope (which reads it with acquire).
            if (fiber->cancel_thread.compare_exchange_weak(target, kProtectedCanceled, std::memory_order_acq_rel,
                                                           std::memory_order_acquire)) {
                FIBERSCOPE_TRACE_EVENT(emit::cancelRequest(now, fiber->id, 0));
                return;
            }
            continue;
        }
        if (isSyncWaitTag(target)) {
            // acq_rel: acquire pairs with enterSyncWait's release; release
            // tells exitSyncWait a canceler is at work.
            if (fiber->cancel_thread.compare_exchange_weak(target, kCancelingSync, std::memory_order_acq_rel,
                                                           std::memory_order_acquire))
                break;
            continue;
        }
        // acq_rel: release makes kCanceling visible to the fiber's next
        // entry attempt; acquire as above.
        if (fiber->cancel_thread.compare_exchange_weak(target, kCanceling, std::memory_order_acq_rel,
                                                       std::memory_order_acquire)) {
            const bool in_flight = target != nullptr;
            FIBERSCOPE_TRACE_EVENT(emit::cancelRequest(now, fiber->id, in_flight ? target->index + 1 : 0));
            if (in_flight) currentThread()->driver.sendCancel(target->driver, fiber);
            return;
        }
    }
    // The fiber is parked on a primitive (see cancel.hpp): unlink it there.
    FIBERSCOPE_TRACE_EVENT(emit::cancelRequest(now, fiber->id, 0));
    const auto bits = reinterpret_cast<std::uintptr_t>(target);
    bool unlinked;
    const auto kind = static_cast<SyncKind>(bits & kSyncKindBits);
    if (kind == SyncKind::await) {
        // It waits for another fiber to finish: the cancel goes on to that
        // one (cancel.hpp), and it keeps waiting, its cancel pending.
        // Recorded as delivered: it reached the fiber, whose wait ends when
        // the awaited one's does.
        FIBERSCOPE_TRACE_EVENT(emit::cancelDelivered(now, fiber->id));
        requestCancel(reinterpret_cast<Fiber*>(bits & ~kSyncKindBits));
        // release: our touch of the awaited fiber happens before the
        // awaiter's exitSyncWait returns (it then may recycle it).
        fiber->cancel_thread.store(kCanceling, std::memory_order_release);
        return;
    }
    if (kind == SyncKind::select) {
        // The first claim schedules the selecting fiber; a finisher's claim
        // may have come first (it then runs, and waits for ours).
        // acq_rel: orders against the finishers' claims on the same word.
        unlinked = fiber->wake_claims.fetch_add(1, std::memory_order_acq_rel) == 0;
    } else {
        if (kind == SyncKind::mutex)
            unlinked = mutexCancelWaiter(*reinterpret_cast<Mutex*>(bits & ~kSyncKindBits), fiber);
        else
            unlinked = conditionCancelWaiter(*reinterpret_cast<Condition*>(bits & ~kSyncKindBits), fiber);
        if (unlinked) fiber->completion = {kSyncCanceled, 0};
    }
    // release: our unlinking (and our last touch of the primitive) happen
    // before the fiber's exitSyncWait returns, and the fiber's next cancel
    // point sees the cancel.
    fiber->cancel_thread.store(kCanceling, std::memory_order_release);
    if (!unlinked) return; // a waker took it first: the cancel stays pending
    FIBERSCOPE_TRACE_EVENT(emit::cancelDelivered(now, fiber->id));
    Thread& self = *currentThread();
    schedule(*self.loop, self, FiberQueue::one(fiber));
}

} // namespace fiberscope::detail

namespace fiberscope {

CancelProtection::CancelProtection() {
    detail::Fiber* fiber = detail::currentFiber();
    detail::Thread* value = fiber->cancel_thread.load(std::memory_order_acquire);
    for (;;) {
        // Nested: the outer scope protects us already.
        if (detail::isProtected(value)) return;
        // Running, so neither in a cancel region nor in a sync wait: the
        // word is nullptr or kCanceling, and only a canceler changes it
        // (nullptr -> kCanceling). acq_rel: orders against that canceler.
        detail::Thread* protected_value = value == detail::kCanceling ? detail::kProtectedCanceled : detail::kProtected;
        if (fiber->cancel_thread.compare_exchange_weak(value, protected_value, std::memory_order_acq_rel,
                                                       std::memory_order_acquire))
            break;
    }
    fiber_ = fiber;
}

CancelProtection::~CancelProtection() {
    if (!fiber_) return;
    auto* fiber = static_cast<detail::Fiber*>(fiber_);
    detail::Thread* value = fiber->cancel_thread.load(std::memory_order_acquire);
    for (;;) {
        // kProtected or kProtectedCanceled: no region or wait is open now.
        // acq_rel: acquire pairs with a canceler's release of
        // kProtectedCanceled; release publishes kCanceling to later looks.
        detail::Thread* next = value == detail::kProtectedCanceled ? detail::kCanceling : nullptr;
        if (fiber->cancel_thread.compare_exchange_weak(value, next, std::memory_order_acq_rel,
                                                       std::memory_order_acquire))
            return;
    }
}

} // namespace fiberscope
