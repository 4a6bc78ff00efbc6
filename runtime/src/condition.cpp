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
#include <cstdio>
#include <cstdlib>

#include "condition_impl.hpp"
#include "cpu_relax.hpp"
#include "loop.hpp"
#include "mutex_impl.hpp"
#include "scheduler.hpp"
#include "tracing.hpp"

namespace fiberscope {

using detail::Fiber;

namespace {
struct SpinGuard {
    std::atomic<bool>& lock;
    explicit SpinGuard(std::atomic<bool>& l) : lock(l) {
        // acquire: the list as the previous holder left it.
        while (lock.exchange(true, std::memory_order_acquire))
            while (lock.load(std::memory_order_relaxed)) detail::cpuRelax();
    }
    // release: our list edits are visible to the next holder.
    ~SpinGuard() { lock.store(false, std::memory_order_release); }
};
} // namespace

Status Condition::wait(Mutex& mutex) {
    detail::Thread* thread = detail::currentThread();
    if (!thread) {
        std::fprintf(stderr, "fiberscope: Condition::wait outside an EventLoop; wait from a fiber\n");
        std::abort();
    }
    Fiber* self = thread->currentFiber();
    if (self->cancel_thread.load(std::memory_order_acquire) == detail::kCanceling) return Errc::Canceled;
    detail::SwitchMessage message;
    message.task = detail::PendingTask::condition_wait;
    message.reason = trace::SwitchReason::Condition;
    FIBERSCOPE_TRACE_EVENT(emit::conditionWait(now, self->id, this));
    message.args.condition_wait = {this, &mutex};
    detail::yield(nullptr, message);
    mutex.lock();
    if (self->cancel_thread.load(std::memory_order_acquire) == detail::kCanceling) return Errc::Canceled;
    return {};
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
    FIBERSCOPE_TRACE_EVENT(emit::conditionWake(now, woken->id, this, false));
    detail::Thread& thread = *detail::currentThread();
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
    FIBERSCOPE_TRACE_EVENT(emit::conditionWake(now, head->id, this, true));
    detail::Thread& thread = *detail::currentThread();
    detail::schedule(*thread.loop, thread, detail::FiberQueue{head, tail});
}

namespace detail {

void conditionEnqueue(Loop& loop, Thread& thread, Condition& condition, Mutex& mutex, Fiber* fiber) {
    fiber->queue_next = nullptr;
    {
        SpinGuard guard(condition.lock_);
        if (condition.tail_) static_cast<Fiber*>(condition.tail_)->queue_next = fiber;
        else condition.head_ = fiber;
        condition.tail_ = fiber;
    }
    std::uintptr_t observed = Mutex::kLockedOnce;
    // release: the waiter's critical section is published to the next owner.
    if (mutex.state_.compare_exchange_strong(observed, Mutex::kUnlocked, std::memory_order_release,
                                             std::memory_order_acquire))
        return;
    if (Fiber* owner = mutexRelease(mutex, observed)) schedule(loop, thread, FiberQueue::one(owner));
}

} // namespace detail
} // namespace fiberscope
