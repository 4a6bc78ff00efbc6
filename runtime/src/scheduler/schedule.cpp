// Where ready fibers go: schedule() (both policies) and scheduleSpawned()
// (the scaling policy's run_next and wake-to-search). scheduler.hpp has the
// design.
#include "scheduler/scheduler.hpp"

#include "fiberscope/trace.hpp"
#include "loop.hpp"
#include "scheduler/grow.hpp"
#include "scheduler/idle_set.hpp"
#include "scheduler/queue.hpp"
#include "scheduler/traced_fibers.hpp"
#include "scheduler/victims.hpp"
#include "support/tracing.hpp"
#include "support/fault_injection.hpp"

namespace fiberscope::detail {

Fiber* currentFiber() {
    Thread* thread = currentThread();
    return thread->currentFiber();
}


// The seed's hand-off: the queue goes to the next of a few threads whose
// queue word reads nullptr (parked, or busy with an empty queue), by CAS.
// `stamp` (while tracing) receives the time of the attempt that landed:
// read after the look that found the word empty, before the CAS.
static Thread* offerToEmpty(Thread& thread, FiberQueue queue, unsigned active, std::uint64_t* stamp) {
    return visitVictims(*thread.loop, thread, thread.own().idle_search_index, kMaxIdleSearch, active, [&](Thread& candidate) {
        // A look first (relaxed: the CAS decides): the stamp must follow a
        // read that saw the word empty, or a hand-off could be stamped
        // before the owner emptied it.
        const TraceWordGuard guard(candidate);
        if (candidate.ready_queue.load(std::memory_order_relaxed) != nullptr) return false;
        if (stamp) *stamp = trace::now();
        jitter();
        Fiber* expected = nullptr;
        // release: the fibers' state (queue_next links, completions) is
        // visible to the idle thread, which pops with acquire. relaxed on
        // failure: we learn nothing we rely on.
        return candidate.ready_queue.compare_exchange_strong(expected, queue.head, std::memory_order_release,
                                                             std::memory_order_relaxed);
    });
}

// Each schedule record is stamped at its publication, never earlier
// (support/tracing.hpp has the rule): a hand-off or the seed's own-queue
// push at the CAS attempt that landed, a new worker before its thread
// starts, the scaling policy's own queues before the owner's push (only
// the owner fills them, so the decision's time, shared with the switch or
// spawn under way, will do).
void schedule(Loop& loop, Thread& thread, FiberQueue queue, bool yielded) {
    thread.own().no_new_work = false; // yieldAlone looks again (switch.cpp)
    // A hand-off and a new worker publish the queue as their word, a list
    // that ends at nullptr: end it here, while the fibers are ours. (Its
    // tail's link could be left from an earlier list: a fiber pushed on a
    // deque out of a woken batch kept its link to the next of the batch,
    // and a new worker then ran that fiber's old neighbours too, waiting
    // fibers among them: the RwLock hang under qemu, issue 35.)
    queue.tail->queue_next = nullptr;
    // What the record says about the fibers is read now, while they are
    // still ours: once a hand-off's CAS succeeds the idle thread may relink
    // queue_next or run (and recycle) the head before we write the record.
    const bool traced = trace::enabled();
    TracedFibers fibers;
    if (traced) fibers.read(queue);
    std::uint64_t stamp = 0;
    // acquire: pairs with the release in spawnWorker, so every slot below
    // `active` is fully initialised.
    const unsigned active = loop.active.load(std::memory_order_acquire);
    if (Thread* taker = loop.scaling() ? nullptr : offerToEmpty(thread, queue, active, traced ? &stamp : nullptr)) {
        if (traced) fibers.write(stamp, taker->index, trace::ScheduleHow::IdleHandoff);
        FIBERSCOPE_TRACE_EVENT(emit::wakeupSent(now, taker->index));
        thread.driver.wake(taker->driver);
        return;
    }
    // scaling: no new worker while a thread searches, which will steal the
    // work (relaxed: a hint, see the design comment).
    if (active < loop.allocated && mayGrow(loop) &&
        (!loop.scaling() || loop.searching.load(std::memory_order_relaxed) == 0) && !jitterSkipsGrowth()) {
        unsigned expected = active;
        // acquire: a failed reservation's cleanup (release) happened before
        // we reuse the slot. relaxed on failure: someone else is spawning.
        if (loop.reserved.compare_exchange_weak(expected, active + 1, std::memory_order_acquire,
                                                std::memory_order_relaxed)) {
            // It writes the new-worker schedule record (grow.cpp).
            if (spawnWorker(loop, active, queue, traced ? &fibers : nullptr)) return;
            // It failed, after records of its own (its zone): the decision's
            // time is older than they are now, so the rest of this decision
            // takes a new one (a record is never stamped before its thread's
            // previous one: support/tracing.hpp).
            if (traced && thread.own().trace_time) thread.own().trace_time = trace::now();
        }
    }
    if (loop.scaling()) {
        // Our own queues (nobody hands a parked thread work): a yield to the
        // back of the FIFO RunQueue, anything else on the WorkDeque; a
        // parked thread, if any, is woken to search and steals.
        // Recorded before the push that publishes the fibers to thieves.
        if (traced) fibers.write(thread.own().trace_time, thread.index, trace::ScheduleHow::OwnQueue);
        // New work pushed on a deque that held work already wakes nobody:
        // the push that made it non-empty looked (below), and a searcher
        // that gave up after that look saw the deque non-empty and stole
        // from it instead of parking. That saves a fence on most pushes of
        // a tree of spawns (skynet), where the deque holds the siblings
        // still to run. (Our view of the deque may be stale, a thief having
        // just emptied it: then a parked thread is not offered this fiber
        // now, a missed chance of parallelism, not a lost fiber: we run it.)
        const bool was_empty = yielded || thread.new_work.emptyForOwner();
        if (yielded) enqueueLocal(loop, thread, queue);
        else pushOwn(thread, queue);
        jitter();
        if (active > 1 && was_empty) {
            // seq_cst: our side of the Dekker pair with a searcher that gives
            // up (scheduler.hpp): our push above, then our reads of
            // `searching` and the idle set in wakeToSearch; it drops
            // `searching`, sets its idle bit, then reads our queue.
            std::atomic_thread_fence(std::memory_order_seq_cst);
            wakeToSearch(loop, thread);
        }
        return;
    }
    // Nobody wanted it, so queue it on ourselves (a thief may take it the
    // moment the CAS lands: the record's time is the CAS attempt's).
    pushOwn(thread, queue, traced ? &stamp : nullptr);
    if (traced) fibers.write(stamp, thread.index, trace::ScheduleHow::OwnQueue);
}

// Go's wakep: work sits in our run_next or our queues, so wake one parked
// thread to search (it may take it if we do not get to it soon), unless a
// thread searches already or one was woken to and is not up yet (its search
// is counted from the wake: one wake-up, not one per spawn).
void wakeToSearch(Loop& loop, Thread& thread) {
    // seq_cst: our side of the Dekker pair (scheduleSpawned). Nonzero: a
    // searcher that is still counted will look at our run_next and our
    // queues when it gives up, or, if it finds other work, wake a thread to
    // search in its place when it is the last (searchBeforePark).
    if (loop.searching.load(std::memory_order_seq_cst) != 0) return;
    // acquire: pairs with spawnWorker's release of `active`.
    const unsigned active = loop.active.load(std::memory_order_acquire);
    Thread* target = nullptr;
    for (unsigned w = 0; w < (active + 63) / 64 && !target; ++w) {
        // seq_cst: the Dekker pair (scheduleSpawned); a bit read set but
        // already cleared costs a spurious wake-up at most.
        std::uint64_t set = loop.idle_set[w].load(std::memory_order_seq_cst);
        if (w == thread.index / 64) set &= ~idleBit(thread.index);
        if (set == 0) continue;
        const unsigned index = w * 64 + static_cast<unsigned>(__builtin_ctzll(set));
        if (index < active) target = &loop.threads[index];
    }
    if (!target) return;
    unsigned expected = 0;
    // relaxed: the count is a hint; the CAS only makes one waker win.
    if (!loop.searching.compare_exchange_strong(expected, 1, std::memory_order_relaxed)) return;
    jitter();
    // seq_cst (the store and the load after it): the Dekker pair with the
    // target's leaveIdleSet, which clears its bit and then reads its token.
    // If it is awake already (bit clear), it may have looked at its token
    // before we set it: take the token back, uncount, and wake nobody.
    target->search_token.store(true, std::memory_order_seq_cst);
    if ((loop.idle_set[target->index / 64].load(std::memory_order_seq_cst) & idleBit(target->index)) == 0) {
        if (target->search_token.exchange(false, std::memory_order_seq_cst))
            loop.searching.fetch_sub(1, std::memory_order_relaxed);
        return;
    }
    FIBERSCOPE_TRACE_EVENT(emit::wakeupSent(now, target->index));
    thread.driver.wake(target->driver);
}

void scheduleSpawned(Loop& loop, Thread& thread, Fiber* fiber) {
    thread.own().no_new_work = false; // as in schedule()
    // Until every worker has started, a spawn starts the next one (the
    // seed's lazy growth) with the fiber as its first work. relaxed: a hint;
    // schedule() reads `active` again with acquire.
    if (!loop.scaling() || loop.active.load(std::memory_order_relaxed) < loop.allocated) {
        schedule(loop, thread, FiberQueue::one(fiber));
        return;
    }
    // Recorded before it is published: a searcher may run it at once.
    FIBERSCOPE_TRACE_EVENT_AT(thread.own().trace_time,
                              emit::schedule(now, fiber->id, 1, thread.index, ScheduleHow::RunNext));
    // release: a searcher that takes the fiber (acquire CAS) sees it
    // initialised; the one we displace was put there by us. seq_cst: a
    // Dekker pair with a searcher that gives up (searchBeforePark): we
    // write run_next, then read `searching` and the idle set
    // (wakeToSearch); it drops `searching`, writes its idle bit, then reads
    // run_next. In their single total order one of us sees the other, so
    // a fiber here is never left with every other thread parked unwoken.
    jitter();
    Fiber* displaced;
    {
        const TraceWordGuard guard(thread);
        displaced = thread.run_next.exchange(fiber, std::memory_order_seq_cst);
    }
    if (displaced) {
        // The older spawn goes the ordinary way, on our queue word; the
        // wake-to-search that follows also covers the new one.
        schedule(loop, thread, FiberQueue::one(displaced));
        return;
    }
    wakeToSearch(loop, thread);
}

} // namespace fiberscope::detail
