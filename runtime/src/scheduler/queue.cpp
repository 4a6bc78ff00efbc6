// Where a thread finds work: its run_next (scaling policy), its own queue,
// another thread's queue (findReadyFiber). Thread::ready_queue's states are
// in worker.hpp; scheduler.hpp has the design.
#include "scheduler/queue.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "loop.hpp"
#include "scheduler/scheduler.hpp"
#include "scheduler/victims.hpp"
#include "support/tracing.hpp"
#include "support/fault_injection.hpp"

namespace fiberscope::detail {

// Takes `victim`'s whole ready list, runs its head and publishes the rest
// from our slot, which must be empty and ours alone meanwhile (queue.hpp
// says when it is, on each policy). nullptr: nothing taken.
Fiber* stealReadyFrom(Thread& thread, Thread& victim) {
    // A test before the guard (relaxed: the CAS decides): a thief looks
    // at many words and takes few.
    if (Fiber* seen = victim.ready_queue.load(std::memory_order_relaxed); seen == nullptr || seen == kPopping) return nullptr;
    Fiber* fiber;
    std::uint64_t stamp = 0;
    {
        const TraceWordGuard guard(victim);
        // acquire: see the fibers the victim's queuers published.
        fiber = victim.ready_queue.load(std::memory_order_acquire);
        if (fiber == nullptr || fiber == kPopping) return nullptr;
        // The record's time: after the load that saw the list, before the
        // CAS that takes it (support/tracing.hpp, "steal").
        stamp = trace::enabled() ? trace::now() : 0;
        jitter();
        // Take the whole list. acquire as above; relaxed on failure.
        if (!victim.ready_queue.compare_exchange_strong(fiber, nullptr, std::memory_order_acquire, std::memory_order_relaxed))
            return nullptr;
    }
    FIBERSCOPE_TRACE_EVENT_AT(stamp, emit::steal(now, fiber->id, victim.index));
    // The switch to the head tells the take at the steal's own time (Thread::Owned::taken_at).
    thread.own().taken_at = stamp;
#if FIBERSCOPE_CHECK_OWNER
    // The remainder's plain store below overwrites our slot: it must be empty.
    if (Fiber* mine = thread.ready_queue.load(std::memory_order_relaxed); mine != nullptr && mine != kPopping) {
        std::fprintf(stderr, "fiberscope: internal error: a steal onto %s's non-empty queue word\n", workerName(thread.index));
        std::abort();
    }
#endif
    // release: the stolen remainder is published from our slot now.
    thread.ready_queue.store(fiber->queue_next, std::memory_order_release);
    fiber->queue_next = nullptr;
    return fiber;
}

Fiber* stealOldestFrom(Thread& /*thief*/, Thread& victim) {
    // Test before the grab: a look leaves the victim's lines shared.
    if (victim.new_work.looksEmpty()) return nullptr;
    std::uint64_t stamp = 0;
    Fiber* fiber = victim.new_work.steal(trace::enabled() ? &stamp : nullptr);
    if (!fiber) return nullptr;
    // The fiber moved from the victim's deque to us, and we run it now.
    FIBERSCOPE_TRACE_EVENT_AT(stamp, emit::stealOne(now, fiber->id, victim.index, trace::StealOneFrom::NewWork));
    return fiber;
}

Fiber* stealReady(Loop& loop, Thread& thread) {
    // acquire: pairs with spawnWorker's release of `active`.
    const unsigned active = loop.active.load(std::memory_order_acquire);
    Fiber* fiber = nullptr;
    const bool scaling = loop.scaling();
    visitVictims(loop, thread, thread.own().steal_ready_search_index, kMaxStealReadySearch, active, [&](Thread& victim) {
        fiber = stealReadyFrom(thread, victim);
        if (!fiber && scaling) fiber = stealOldestFrom(thread, victim);
        return fiber != nullptr;
    });
    return fiber;
}

// Pushes `fiber` on one of our scaling queues (a WorkDeque or a RunQueue).
// When it is full, its older half and then `fiber` go to the back of the
// loop's overflow list (Go's runqputslow), so one thread's burst is not
// capped.
template <class Queue>
static void pushOrOverflow(Loop& loop, Queue& queue, Fiber* fiber) {
    FiberQueue half{nullptr, nullptr};
    std::uint32_t moved = 0;
    while (!queue.push(fiber))
        if ((moved = queue.takeOlderHalf(half)) != 0) break; // 0: thieves made room meanwhile
    if (moved == 0) return;
    half.tail->queue_next = fiber;
    fiber->queue_next = nullptr;
    half.tail = fiber;
    // One record per fiber moved, before the lock publishes them: another
    // thread may take them from the list at once.
    FIBERSCOPE_TRACE_EVENT(for (Fiber* f = half.head; f; f = f->queue_next) emit::overflow(now, trace::OverflowOp::Put, f->id));
    std::lock_guard lock(loop.overflow_mutex);
    if (loop.overflow.head) loop.overflow.tail->queue_next = half.head;
    else loop.overflow.head = half.head;
    loop.overflow.tail = half.tail;
    // relaxed: a hint for readers without the lock; they take the lock.
    loop.overflow_count.store(loop.overflow_count.load(std::memory_order_relaxed) + moved + 1,
                              std::memory_order_relaxed);
}

// pushOwn for the scaling policy: onto our WorkDeque, the queue's head
// last, so that it pops first (as from the seed's word).
static void pushNewWork(Loop& loop, Thread& thread, FiberQueue queue) {
    // Reverse the list first, while every link is ours: once a fiber is
    // pushed, a thief may run it and relink it.
    Fiber* reversed = nullptr;
    for (Fiber* fiber = queue.head;;) {
        Fiber* next = fiber == queue.tail ? nullptr : fiber->queue_next;
        fiber->queue_next = reversed;
        reversed = fiber;
        if (!next) break;
        fiber = next;
    }
    for (Fiber* fiber = reversed; fiber;) {
        Fiber* next = fiber->queue_next; // read before the push publishes it
        fiber->queue_next = nullptr;     // no stale link leaves with it (FiberQueue)
        pushOrOverflow(loop, thread.new_work, fiber);
        fiber = next;
    }
}

void pushOwn(Thread& thread, FiberQueue queue, std::uint64_t* stamp) {
    if (thread.loop->scaling()) {
        pushNewWork(*thread.loop, thread, queue);
        return;
    }
    // acq_rel: release publishes the fibers to thieves; acquire reads the
    // current head to link behind.
    const TraceWordGuard guard(thread);
    Fiber* head = thread.ready_queue.load(std::memory_order_acquire);
    do {
        queue.tail->queue_next = head == kPopping ? nullptr : head;
        // Each attempt's time: after the load (or failed CAS) that read the
        // head, before the CAS (support/tracing.hpp, "schedule").
        if (stamp) *stamp = trace::now();
    } while (!thread.ready_queue.compare_exchange_weak(head, queue.head, std::memory_order_acq_rel,
                                                       std::memory_order_acquire));
}

// Pops our own slot's head, leaving kPopping in it when it was empty.
Fiber* popOwn(Thread& thread) {
    Fiber* fiber;
    {
        // acquire: see the fibers published by whoever queued them. Exchanging in
        // kPopping keeps thieves and hand-offs away while we unlink the head.
        const TraceWordGuard guard(thread);
        fiber = thread.ready_queue.exchange(kPopping, std::memory_order_acquire);
        // kPopping: the scaling policy found its word empty before and went on
        // to its other queues, leaving the word so (empty to everyone).
        if (!fiber || fiber == kPopping) return nullptr;
        jitter();
        // The pop's time, for the records that tell it (the switch to the
        // fiber, a truth record), read before the store below lets another
        // thread hand our word a fiber and steal it back: in the trace the
        // pop comes first, so that steal is not read as taking this fiber
        // too (Thread::Owned::taken_at).
        if (trace::enabled()) thread.own().taken_at = trace::now();
        // release: the rest of the list stays published to thieves.
        thread.ready_queue.store(fiber->queue_next, std::memory_order_release);
        fiber->queue_next = nullptr;
    }
    // Between the pop and the records that tell it, that hand-off and steal
    // may happen (a preemption here made them so: lesson 2).
    jitter();
    return fiber;
}

// popOwn() for the scaling policy: the newest fiber of our WorkDeque, or of
// our queue word (which holds only a new worker's first work, or what it
// stole whole from another thread's word). The word gets a look first,
// and the exchange only if it holds fibers: only we put fibers on it under
// this policy (nobody hands a scaling thread work; thieves only take), so
// a word seen empty stays empty until we store to it, and the common case
// costs a plain load instead of a locked exchange. The seed's popOwn must
// exchange every time: its kPopping is what keeps hand-offs away while
// the thread is busy. relaxed: the exchange in popOwn decides and acquires.
Fiber* popNewWork(Thread& thread) {
    if (Fiber* fiber = thread.new_work.pop()) return fiber;
    Fiber* head = thread.ready_queue.load(std::memory_order_relaxed);
    if (head == nullptr || head == kPopping) return nullptr;
    return popOwn(thread);
}

// Takes our own run_next (scaling policy). relaxed: only we put fibers in
// it, so what they hold is ours already; a searcher only takes one out.
Fiber* takeRunNext(Thread& thread) {
    if (thread.run_next.load(std::memory_order_relaxed) == nullptr) return nullptr;
    const TraceWordGuard guard(thread);
    return thread.run_next.exchange(nullptr, std::memory_order_relaxed);
}

// --- the scaling policy's RunQueue -----------------------------------------

void enqueueLocal(Loop& loop, Thread& thread, FiberQueue queue) {
    for (Fiber* fiber = queue.head; fiber;) {
        // Read the link first: once pushed, a thief may run the fiber and
        // relink it.
        Fiber* next = fiber == queue.tail ? nullptr : fiber->queue_next;
        fiber->queue_next = nullptr; // no stale link leaves with it (FiberQueue)
        pushOrOverflow(loop, thread.run_queue, fiber);
        fiber = next;
    }
}

Fiber* takeOverflow(Loop& loop, Thread& thread, std::uint32_t most) {
    // relaxed: a hint; the lock decides.
    if (loop.overflow_count.load(std::memory_order_relaxed) == 0) return nullptr;
    std::lock_guard lock(loop.overflow_mutex);
    Fiber* first = loop.overflow.head;
    if (!first) return nullptr;
    std::uint32_t taken = 1;
    // Recorded as they leave the list (we hold its lock), before our ring
    // publishes them; the first, which we run, last.
    Fiber* fiber = first->queue_next;
    while (fiber && taken < most) {
        // Read the link first: once pushed, a thief may take the fiber.
        Fiber* next = fiber->queue_next;
        FIBERSCOPE_TRACE_EVENT(emit::overflow(now, trace::OverflowOp::Take, fiber->id));
        fiber->queue_next = nullptr; // no stale link leaves with it (FiberQueue)
        if (!thread.run_queue.push(fiber)) {
            fiber->queue_next = next; // not pushed: still the list's
            break;
        }
        ++taken;
        fiber = next;
    }
    FIBERSCOPE_TRACE_EVENT(emit::overflow(now, trace::OverflowOp::Take, first->id));
    loop.overflow.head = fiber;
    if (!fiber) loop.overflow.tail = nullptr;
    loop.overflow_count.store(loop.overflow_count.load(std::memory_order_relaxed) - taken, std::memory_order_relaxed);
    first->queue_next = nullptr;
    return first;
}

Fiber* stealHalfFrom(Thread& thread, Thread& victim) {
    // Test before the grab: a look leaves the victim's line shared.
    if (victim.run_queue.looksEmpty()) return nullptr;
    // The fibers' ids are read before the rest is published from our queue
    // (another thief may take them from there and run them at once), and
    // the decision's time before anything moves.
    const bool traced = trace::enabled();
    std::uint64_t stamp = 0;
    std::uint64_t ids[RunQueue::kCapacity / 2];
    std::uint32_t taken = 0;
    Fiber* run = thread.run_queue.stealHalf(victim.run_queue, taken, traced ? ids : nullptr, traced ? &stamp : nullptr);
    if (!run) return nullptr;
    // One record per fiber moved, oldest first, at the time the successful
    // attempt read before its CAS; the last is the one we run
    // (trace_records.hpp).
    FIBERSCOPE_TRACE_EVENT_AT(stamp, for (std::uint32_t i = 0; i < taken; ++i)
                                         emit::stealHalf(now, ids[i], victim.index));
    return run;
}

Fiber* stealHalf(Loop& loop, Thread& thread) {
    // acquire: pairs with spawnWorker's release of `active`.
    const unsigned active = loop.active.load(std::memory_order_acquire);
    Fiber* run = nullptr;
    visitVictims(loop, thread, thread.own().steal_ready_search_index, kMaxStealReadySearch, active,
                 [&](Thread& victim) { return (run = stealHalfFrom(thread, victim)) != nullptr; });
    return run;
}

// How often (in findReadyFiber calls) a thread looks at the overflow list
// before its own queue, so a thread that keeps its queue full cannot starve
// what overflowed (Go checks its global queue every 61 schedules).
static constexpr std::uint32_t kOverflowFairness = 61;

// New work first (run_next, then the WorkDeque's newest: depth-first, warm
// caches),
// then the fibers that yielded (the FIFO RunQueue, in turn), then the
// overflow list, then other threads' work; every kOverflowFairness-th time
// the yielders and the overflow list come first, so new work cannot starve
// them.
// A fiber taken from this thread's own queues: a checking recording says
// so (a truth record, FORMAT.md "Truth"), for the validator to hold its
// replay and the model to. Stamped after the pop: the fiber is ours now
// (at the pop itself when it came from the queue word: popOwn).
Fiber* ownPop(Thread& thread, Fiber* fiber) {
    if (fiber)
        FIBERSCOPE_TRACE_EVENT_AT(thread.own().taken_at,
                                  if (trace::checking()) emit::truth(now, trace::TruthOp::Queued, fiber->id, 0));
    return fiber;
}

static Fiber* findReadyScaling(Loop& loop, Thread& thread) {
    // One worker thread in all (the loop may never start another): nobody
    // steals from our RunQueue, so it pops without a CAS.
    const bool alone = loop.allocated == 1;
    const auto popYielder = [&] { return alone ? thread.run_queue.popAlone() : thread.run_queue.pop(); };
    if (++thread.own().schedule_tick % kOverflowFairness == 0) {
        if (Fiber* fiber = ownPop(thread, popYielder())) return fiber;
        if (Fiber* fiber = takeOverflow(loop, thread, 1)) return fiber;
    }
    if (Fiber* fiber = ownPop(thread, takeRunNext(thread))) return fiber;
    if (Fiber* fiber = ownPop(thread, popNewWork(thread))) return fiber;
    if (Fiber* fiber = ownPop(thread, popYielder())) return fiber;
    // Our RunQueue is empty: room for half a queue from the overflow list.
    if (Fiber* fiber = takeOverflow(loop, thread, RunQueue::kCapacity / 2)) return fiber;
    // Our word is empty (nullptr or kPopping): a stolen remainder may go there.
    if (Fiber* fiber = stealReady(loop, thread)) return fiber;
    if (Fiber* fiber = stealHalf(loop, thread)) return fiber;
    // relaxed: nobody hands a scaling thread work; only we push here.
    const TraceWordGuard guard(thread);
    thread.ready_queue.store(nullptr, std::memory_order_relaxed);
    return nullptr;
}

Fiber* findReadyFiber(Loop& loop, Thread& thread) {
    if (loop.scaling()) return findReadyScaling(loop, thread);
    if (Fiber* fiber = ownPop(thread, popOwn(thread))) return fiber;
    if (Fiber* fiber = stealReady(loop, thread)) return fiber;
    // Couldn't find anything to do, so we are now open for business.
    // relaxed: a hand-off CAS needs no ordering from us; the MSG_RING that
    // follows it is what wakes us.
    const TraceWordGuard guard(thread);
    thread.ready_queue.store(nullptr, std::memory_order_relaxed);
    return nullptr;
}

} // namespace fiberscope::detail
