// The receiving side of every context switch: perform the sender's pending
// task on our own stack (see switch_message.hpp for why).
#include "scheduler/switch_message.hpp"

#include "fiber/free_list.hpp"
#include "fiber/stack_pool.hpp"
#include "loop.hpp"
#include "scheduler/scheduler.hpp"
#include "support/tracing.hpp"
#include "support/fault_injection.hpp"

namespace fiberscope::detail {

// The sender of a message carrying a fiber task is always a fiber.
static Fiber* senderFiber(const SwitchMessage& message) { return Fiber::fromContext(message.contexts.prev); }

// Publishes `fiber` as the awaiter of a future. Returns true if that future
// had already finished, in which case nobody else will wake `fiber`.
static bool registerAwaiter(std::atomic<Fiber*>& awaiter, Fiber* fiber) {
    // acq_rel: release publishes the awaiter to the finishing fiber; acquire
    // sees the finished fiber's result if it finished first.
    if (awaiter.exchange(fiber, std::memory_order_acq_rel) != kFinished) return false;
    // It had finished: restore the mark so later looks see it finished.
    // relaxed: only this fiber looks at the slot from now on.
    awaiter.store(kFinished, std::memory_order_relaxed);
    return true;
}

static void performPendingTask(Thread& thread, const SwitchMessage& message) {
    Loop& loop = *thread.loop;
    switch (message.task) {
    case PendingTask::nothing:
        return;
    case PendingTask::reschedule:
        // The idle context is never queued: it is where a thread goes anyway.
        if (message.contexts.prev != &thread.idle_context) {
            Fiber* prev = senderFiber(message);
            schedule(loop, thread, FiberQueue::one(prev), true);
        }
        return;
    case PendingTask::finish: {
        // Only now, off its stack, may the finished fiber be published: the
        // moment its awaiter sees kFinished it may recycle the stack.
        Fiber* prev = senderFiber(message);
        FIBERSCOPE_TRACE_EVENT_AT(thread.own().trace_time, emit::fiberFinish(now, prev->id));
        bool recycle_self = false;
        if (prev->detached) {
            std::lock_guard lock(loop.detached_mutex);
            // Unless deinit claimed it (and will recycle it), nobody else
            // knows this fiber: we recycle it.
            if (!prev->detached_claimed) {
                recycle_self = true;
                if (prev->detached_prev) prev->detached_prev->detached_next = prev->detached_next;
                else loop.detached_head = prev->detached_next;
                if (prev->detached_next) prev->detached_next->detached_prev = prev->detached_prev;
            }
        }
        // acq_rel: release publishes that we are off our stack; acquire sees
        // a registration made while we were finishing. After this, `prev`
        // may be recycled.
        Fiber* awaiter = prev->awaiter.exchange(kFinished, std::memory_order_acq_rel);
        if (recycle_self) {
            FIBERSCOPE_TRACE_EVENT_AT(thread.own().trace_time, emit::fiberRecycle(now, prev->id));
            returnFiber(thread, prev);
        }
        // An awaiter found by the exchange may have registered after our
        // switch: its schedule takes its own time, after the exchange that
        // saw it (the decision is not the switch's).
        thread.own().trace_time = 0;
        // kFinishing: nobody registered after finishFiber's exchange (it woke
        // whoever had). Otherwise that late awaiter waits for our claim.
        if (awaiter && awaiter != kFinishing && awaiter->wake_claims.fetch_add(1, std::memory_order_acq_rel) == 0)
            schedule(loop, thread, FiberQueue::one(awaiter));
        return;
    }
    case PendingTask::register_awaiter: {
        // What the exchange finds may be later than our switch (a fiber that
        // finished meanwhile): a schedule it calls for takes its own time.
        thread.own().trace_time = 0;
        Fiber* prev = senderFiber(message);
        if (registerAwaiter(*message.args.awaiter, prev) &&
            prev->wake_claims.fetch_add(1, std::memory_order_acq_rel) == 0)
            schedule(loop, thread, FiberQueue::one(prev));
        return;
    }
    case PendingTask::register_select: {
        // selectFibers() set wake_claims to 1 before switching: a hold that
        // stops finishers from scheduling `prev` while we still read the
        // futures array on its stack. Register with every future, counting
        // the ones already finished, then release the hold and add them in
        // one step. If that leaves any claim, nobody else scheduled `prev`
        // (they all saw the hold), so we do; otherwise the first finisher will.
        thread.own().trace_time = 0; // as in register_awaiter
        Fiber* prev = senderFiber(message);
        const FiberRefs fibers = message.args.select;
        std::uint32_t finished = 0;
        for (std::size_t i = 0; i < fibers.count; ++i)
            if (registerAwaiter(fibers[i]->awaiter, prev)) ++finished;
        // acq_rel: orders against the finishers' claims on the same word.
        const std::uint32_t before = prev->wake_claims.fetch_add(finished - 1, std::memory_order_acq_rel);
        if (before + finished - 1 > 0) schedule(loop, thread, FiberQueue::one(prev));
        return;
    }
    case PendingTask::park:
        // A primitive's handler acts on what it finds now (a mutex unlocked
        // meanwhile, a waiter to hand the mutex to): its records take their
        // own time.
        thread.own().trace_time = 0;
        message.args.park.handler(loop, thread, senderFiber(message), message.args.park.arg);
        return;
    case PendingTask::exit: {
        // acquire: see every started worker's ring.
        const unsigned active = loop.active.load(std::memory_order_acquire);
        for (unsigned i = 0; i < active; ++i) thread.driver.sendExit(loop.threads[i].driver);
        thread.driver.flush();
        return;
    }
    }
}

void handleSwitchMessage(const ContextPair* received) {
    Thread& thread = *currentThread();
    const SwitchMessage& message = *SwitchMessage::from(received);
    thread.current_context = message.contexts.ready;
    jitter();
    performPendingTask(thread, message);
    // The decision that switched to us (its switch record and the pending
    // task's records share its timestamp) is over.
    thread.own().trace_time = 0;
}

} // namespace fiberscope::detail
