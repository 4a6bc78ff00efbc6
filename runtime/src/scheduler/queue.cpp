// Where a thread finds work: its run_next (scaling policy), its own queue,
// another thread's queue (findReadyFiber). Thread::ready_queue's states are
// in worker.hpp; scheduler.hpp has the design.
#include "scheduler/queue.hpp"

#include "loop.hpp"
#include "scheduler/scheduler.hpp"
#include "scheduler/victims.hpp"
#include "support/tracing.hpp"

namespace fiberscope::detail {

// Takes the whole ready list of one of a few other threads, runs its head
// and publishes the rest from our slot. Our slot must hold kFinished while
// we do: no hand-off can land in it and no thief takes from it, so the
// plain store of the remainder overwrites nothing. nullptr: nothing found
// (the slot still holds kFinished).
Fiber* stealReady(Loop& loop, Thread& thread) {
    // acquire: pairs with spawnWorker's release of `active`.
    const unsigned active = loop.active.load(std::memory_order_acquire);
    Fiber* fiber = nullptr;
    const Thread* victim = visitVictims(loop, thread, thread.own().steal_ready_search_index, kMaxStealReadySearch, active,
                                        [&](Thread& candidate) {
        // acquire: see the fibers the victim's queuers published.
        fiber = candidate.ready_queue.load(std::memory_order_acquire);
        if (fiber == nullptr || fiber == kFinished) return false;
        // Take the whole list. acquire as above; relaxed on failure.
        return candidate.ready_queue.compare_exchange_weak(fiber, nullptr, std::memory_order_acquire,
                                                           std::memory_order_relaxed);
    });
    if (!victim) return nullptr;
    FIBERSCOPE_TRACE_EVENT(emit::steal(now, fiber->id, victim->index));
    // release: the stolen remainder is published from our slot now.
    thread.ready_queue.store(fiber->queue_next, std::memory_order_release);
    fiber->queue_next = nullptr;
    return fiber;
}

// Pops our own slot's head, leaving kFinished in it when it was empty.
Fiber* popOwn(Thread& thread) {
    // acquire: see the fibers published by whoever queued them. Exchanging in
    // kFinished keeps thieves and hand-offs away while we unlink the head.
    Fiber* fiber = thread.ready_queue.exchange(kFinished, std::memory_order_acquire);
    if (!fiber) return nullptr;
    // release: the rest of the list stays published to thieves.
    thread.ready_queue.store(fiber->queue_next, std::memory_order_release);
    fiber->queue_next = nullptr;
    return fiber;
}

// Takes our own run_next (scaling policy). relaxed: only we put fibers in
// it, so what they hold is ours already; a searcher only takes one out.
Fiber* takeRunNext(Thread& thread) {
    if (thread.run_next.load(std::memory_order_relaxed) == nullptr) return nullptr;
    return thread.run_next.exchange(nullptr, std::memory_order_relaxed);
}

Fiber* findReadyFiber(Loop& loop, Thread& thread) {
    if (loop.scaling())
        if (Fiber* fiber = takeRunNext(thread)) return fiber;
    if (Fiber* fiber = popOwn(thread)) return fiber;
    if (Fiber* fiber = stealReady(loop, thread)) return fiber;
    // Couldn't find anything to do, so we are now open for business (on the
    // scaling policy, only to a stale hint: our idle bit is clear).
    // relaxed: a hand-off CAS needs no ordering from us; the MSG_RING that
    // follows it is what wakes us.
    thread.ready_queue.store(nullptr, std::memory_order_relaxed);
    return nullptr;
}

} // namespace fiberscope::detail
