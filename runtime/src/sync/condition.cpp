// Condition variable for fibers.
//
// Waiters form a FIFO list under a tiny spin lock that is never held across a
// context switch. (The seed keeps a lock-free list that a woken head fiber
// re-publishes after relocking the mutex; a second signal arriving before
// that re-publication finds the list empty and is lost, so a waiter can
// sleep forever with work queued. The spin lock costs a few instructions.)
//
// wait() switches away first; the handler (conditionEnqueue) appends the
// fiber and only then unlocks the mutex, so a signal sent after the waiter
// checked its predicate under the mutex always finds it queued.
//
// Cancel (cancel.hpp has the protocol): the handler tags the fiber in the
// same spin-locked section that appends it; a canceler unlinks it under the
// same lock, so signal/broadcast and a cancel each see the fiber either
// linked or not, and exactly one of them takes it out. A signal that finds
// the canceled fiber gone pops the next waiter: no signal is absorbed by a
// canceled fiber. Past the wake-up, wait() relocks uncancelably: it must
// return holding the mutex.
//
// Timeouts (sync/timers.hpp): a limited wait also puts a deadline on its
// thread's list; when it passes, that thread's idle loop unlinks the fiber
// under the same spin lock, a third contender with the same one-outcome rule.
//
// From a thread that is not one of the loop's there is no fiber to park:
// wait() returns NotOnLoopThread, and waitUncancelable() (which cannot say
// so), or a signal()/broadcast() that finds waiters to schedule, aborts
// with one line naming the misuse.
#include <cstdio>
#include <cstdlib>

#include "sync/condition_impl.hpp"
#include "io/cancel.hpp"
#include "loop.hpp"
#include "sync/mutex_impl.hpp"
#include "scheduler/scheduler.hpp"
#include "support/tracing.hpp"
#include "support/fault_injection.hpp"

namespace fiberscope {

using detail::Fiber;

using detail::SpinGuard;

Status Condition::wait(Mutex& mutex, Timeout timeout) { return waitImpl(mutex, true, timeout); }

void Condition::waitUncancelable(Mutex& mutex) { (void)waitImpl(mutex, false, {}); }

Status Condition::waitUncancelable(Mutex& mutex, Timeout timeout) { return waitImpl(mutex, false, timeout); }

Status Condition::waitImpl(Mutex& mutex, bool cancelable, Timeout timeout) {
    detail::Thread* thread = detail::currentThread();
    if (!thread) {
        if (cancelable) return Errc::NotOnLoopThread;
        detail::misuse("Condition::waitUncancelable() on a thread that is not one of the loop's (wait from a fiber)");
    }
    Fiber* self = thread->currentFiber();
    // acquire: pairs with requestCancel's release of kCanceling. A cancel
    // pending already returns at once (the handler would see it too).
    if (cancelable && self->cancel_thread.load(std::memory_order_acquire) == detail::kCanceling)
        return Errc::Canceled;
    // Only we write our result while we run; a canceler writes it only after
    // unlinking us, that is while we are parked.
    self->completion = {};
    detail::SwitchMessage message;
    const detail::ConditionPark park{this, &mutex, cancelable};
    message.task = detail::PendingTask::park;
    message.reason = trace::SwitchReason::Condition;
    FIBERSCOPE_TRACE_EVENT(emit::conditionWait(now, self->id, this));
    message.args.park = {detail::parkOnCondition, &park};
    // A limited wait links its deadline into this thread's list before it
    // switches away: the handler that parks it runs on this thread before
    // the thread's idle loop can next fire deadlines (sync/timers.hpp).
    detail::SyncTimer timer;
    if (timeout.limited()) {
        timer.deadline_ns = detail::monotonicNanoseconds() + timeout.duration.count();
        timer.fiber = self;
        timer.condition = this;
        thread->sync_timers.insert(timer);
    }
    detail::yield(nullptr, message);
    // Withdraw the deadline before anything else: if it fired, remove()
    // waits for the firing to be over (it may still be using `this`).
    if (timeout.limited()) thread->sync_timers.remove(timer);
    if (cancelable) detail::exitSyncWait(self);
    const std::int32_t outcome = self->completion.result;
    mutex.lockUncancelable();
    if (outcome == detail::kSyncCanceled) return Errc::Canceled;
    if (outcome == detail::kSyncTimedOut) return Error{Errc::TimedOut, ETIMEDOUT};
    return {};
}

// Waking needs a thread's ready queue to put the woken fiber on.
static detail::Thread& wakingThread(const char* what) {
    detail::Thread* thread = detail::currentThread();
    if (!thread) detail::misuse(what);
    return *thread;
}

void Condition::signal() {
    Fiber* woken;
    {
        SpinGuard guard(lock_);
        woken = static_cast<Fiber*>(head_);
        if (!woken) return;
        head_ = woken->queue_next;
        if (!head_) tail_ = nullptr;
    }
    woken->queue_next = nullptr;
    detail::jitter();
    detail::Thread& thread = wakingThread(
        "Condition::signal() with fibers waiting, on a thread that is not one of the loop's (signal from a fiber)");
    FIBERSCOPE_TRACE_EVENT(emit::conditionWake(now, woken->id, this, trace::ConditionWakeHow::Signal));
    detail::schedule(*thread.loop, thread, detail::FiberQueue::one(woken));
}

void Condition::broadcast() {
    Fiber* head;
    Fiber* tail;
    {
        SpinGuard guard(lock_);
        head = static_cast<Fiber*>(head_);
        tail = static_cast<Fiber*>(tail_);
        head_ = tail_ = nullptr;
    }
    if (!head) return;
    tail->queue_next = nullptr;
    detail::jitter();
    detail::Thread& thread = wakingThread(
        "Condition::broadcast() with fibers waiting, on a thread that is not one of the loop's (broadcast from a fiber)");
    // One record per fiber woken, in the list's order, while the list is
    // still ours (schedule() publishes it): which fibers a broadcast woke is
    // what was linked when it took the list, which no earlier record says
    // (a waiter's condition-wait is written before it switches away, and
    // its handler links it only after).
    FIBERSCOPE_TRACE_EVENT(for (Fiber* f = head;; f = f->queue_next) {
        emit::conditionWake(now, f->id, this, trace::ConditionWakeHow::Broadcast);
        if (f == tail) break;
    });
    detail::schedule(*thread.loop, thread, detail::FiberQueue{head, tail});
}

namespace detail {

void parkOnCondition(Loop& loop, Thread& thread, Fiber* fiber, const void* arg) {
    // A copy: `arg` is on the fiber's stack, which conditionEnqueue may hand on.
    const ConditionPark park = *static_cast<const ConditionPark*>(arg);
    conditionEnqueue(loop, thread, *park.condition, *park.mutex, fiber, park.cancelable);
}

void conditionEnqueue(Loop& loop, Thread& thread, Condition& condition, Mutex& mutex, Fiber* fiber, bool cancelable) {
    fiber->queue_next = nullptr;
    bool canceled = false;
    {
        SpinGuard guard(condition.lock_);
        // Tag and link in one critical section (see cancel.hpp).
        if (cancelable && !enterSyncWait(fiber, syncWaitTag(&condition, SyncKind::condition))) {
            canceled = true;
        } else {
            if (condition.tail_) static_cast<Fiber*>(condition.tail_)->queue_next = fiber;
            else condition.head_ = fiber;
            condition.tail_ = fiber;
        }
    }
    std::uintptr_t observed = Mutex::kLockedOnce;
    Fiber* owner = nullptr;
    // release: the waiter's critical section is published to the next owner.
    if (!mutex.state_.compare_exchange_strong(observed, Mutex::kUnlocked, std::memory_order_release,
                                              std::memory_order_acquire))
        owner = mutexRelease(mutex, observed);
    if (owner) {
        // The unlock handed the mutex to a waiter of it: a hand-off like
        // Mutex::unlock's, from the fiber that has just parked here, except
        // that its new owner is queued rather than switched to. Recorded
        // before schedule() publishes it.
        FIBERSCOPE_TRACE_EVENT(emit::mutexHandoff(now, fiber->id, owner->id, &mutex));
        schedule(loop, thread, FiberQueue::one(owner));
    }
    if (canceled) {
        // Canceled between the check in wait() and here: it did not park,
        // and relocks (uncancelably) once it runs.
        fiber->completion = {kSyncCanceled, 0};
        FIBERSCOPE_TRACE_EVENT(emit::cancelDelivered(now, fiber->id));
        schedule(loop, thread, FiberQueue::one(fiber));
    }
}

bool conditionCancelWaiter(Condition& condition, Fiber* fiber) {
    SpinGuard guard(condition.lock_);
    Fiber* prev = nullptr;
    for (auto* at = static_cast<Fiber*>(condition.head_); at; prev = at, at = at->queue_next) {
        if (at != fiber) continue;
        if (prev) prev->queue_next = fiber->queue_next;
        else condition.head_ = fiber->queue_next;
        if (condition.tail_ == fiber) condition.tail_ = prev;
        fiber->queue_next = nullptr;
        return true;
    }
    return false;
}

} // namespace detail
} // namespace fiberscope
