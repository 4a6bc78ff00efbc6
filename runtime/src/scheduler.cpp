// The scheduler: schedule(), findReadyFiber() and yield().
//
// Design (ported from the seeds' EventLoop/Evented/Kqueue):
//
// * Each worker thread owns one ready queue slot (thread.hpp explains its
//   states). There is no global run queue and no lock.
// * schedule() is called whenever fibers become ready: by a fiber that
//   spawns or yields, by a fiber that finishes and wakes its awaiter, by a
//   mutex/condition hand-off, and by the idle loop for completed I/O. It
//   first offers the whole queue to an idle thread (CAS nullptr -> queue),
//   waking it with MSG_RING; failing that it reserves a thread slot and
//   starts a new worker (lazily, up to EventLoopOptions::threads) with the
//   queue as its first work; failing that it pushes the queue onto its own
//   thread ("nobody wanted it").
// * findReadyFiber() pops the own queue's head; if empty it steals the whole
//   queue of one of a few other threads; if that fails too the thread marks
//   itself open for business (ready_queue = nullptr) and goes idle.
// * yield() switches to a given fiber, else the next ready fiber, else the
//   thread's idle context, with a SwitchMessage for the receiver.
#include "scheduler.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "loop.hpp"
#include "sanitizer.hpp"
#include "fiberscope/trace.hpp"
#include "tracing.hpp"

namespace fiberscope::detail {

Fiber* currentFiber() {
    Thread* thread = currentThread();
    return thread->currentFiber();
}

// Growth back-off after a failed worker start: the first retry waits this
// long, each further failure doubles the wait, up to the cap.
static constexpr std::int64_t kFirstGrowBackoffNs = 100'000'000;  // 100 ms
static constexpr std::int64_t kMaxGrowBackoffNs = 10'000'000'000; // 10 s

// Whether schedule() may try to start a worker now (not during a back-off).
static bool mayGrow(const Loop& loop) {
    // relaxed: a hint; a stale value costs at most one retry early or late.
    const std::int64_t retry_at = loop.grow_retry_at.load(std::memory_order_relaxed);
    return retry_at == 0 || monotonicNanoseconds() >= retry_at;
}

// A worker could not start (descriptors or memory ran out: ulimit -n,
// ulimit -v). The loop keeps working on the threads it has; the failure is
// said once per loop, and growth is retried only after a back-off, so a
// busy loop at the limit neither floods stderr nor spends its time failing.
static void growFailed(Loop& loop, unsigned index, const char* what, const char* why) {
    // We hold the reservation: nobody else touches these two fields now.
    loop.grow_backoff_ns = loop.grow_backoff_ns ? std::min(2 * loop.grow_backoff_ns, kMaxGrowBackoffNs)
                                                : kFirstGrowBackoffNs;
    // relaxed: read as a hint by mayGrow() (see there).
    loop.grow_retry_at.store(monotonicNanoseconds() + loop.grow_backoff_ns, std::memory_order_relaxed);
    if (!loop.told_grow_failure) {
        loop.told_grow_failure = true;
        std::fprintf(stderr,
                     "fiberscope: cannot start worker %u: %s (%s); continuing with %u thread%s "
                     "(retried now and then; said once per loop)\n",
                     index, what, why, index, index == 1 ? "" : "s");
    }
    // release: our writes to the slot and to the back-off fields happen
    // before the next reservation (which CASes with acquire).
    loop.reserved.store(index, std::memory_order_release);
}

static void spawnWorker(Loop& loop, unsigned index, FiberQueue queue, bool& spawned) {
    // A span on the fiber that pays for it: opening a ring or epoll instance
    // and starting an OS thread take far longer than any scheduling decision.
    trace::Zone zone("spawnWorker: start a worker thread");
    Thread& worker = loop.threads[index];
    worker.loop = &loop;
    worker.index = index;
    worker.current_context = &worker.idle_context;
    worker.ready_queue.store(queue.head, std::memory_order_relaxed);
    worker.idle_search_index = 0;
    worker.steal_ready_search_index = 0;
    worker.steal_free_search_index = 0;
    Status opened = loop.usesRing() ? worker.ring.open(loop.options.ring_entries, loop.options.completion_entries,
                                                     loop.threads[0].ring.fd(), true)
                                    : worker.poller.open();
    if (!opened) {
        worker.ready_queue.store(nullptr, std::memory_order_relaxed);
        growFailed(loop, index, loop.usesRing() ? "io_uring setup failed" : "epoll setup failed", opened.error().message());
        return;
    }
    worker.ring.setReaper(reapCompletions, &worker);
    try {
        worker.os_thread = std::thread(workerMain, &loop, index);
    } catch (const std::exception& e) {
        worker.ring.close();
        worker.poller.close();
        worker.ready_queue.store(nullptr, std::memory_order_relaxed);
        growFailed(loop, index, "no thread", e.what());
        return;
    }
    // Started: a later failure backs off from the start again.
    loop.grow_backoff_ns = 0;
    loop.grow_retry_at.store(0, std::memory_order_relaxed);
    // release: the Thread's shared fields (ring fd, queue) are initialised
    // before any thread that reads `active` with acquire can use the slot;
    // so are the back-off fields, for the next reservation holder.
    loop.active.store(index + 1, std::memory_order_release);
    spawned = true;
}

static std::uint64_t queueLength(FiberQueue queue) {
    std::uint64_t count = 1;
    for (Fiber* f = queue.head; f != queue.tail; f = f->queue_next) ++count;
    return count;
}

void schedule(Loop& loop, Thread& thread, FiberQueue queue) {
    // The decision's timestamp is taken before it is published: another
    // thread may run the fibers before our records are written.
    const std::uint64_t decided = !trace::enabled() ? 0 : thread.trace_time ? thread.trace_time : trace::now();
    // What the record says about the fibers is read now, while they are
    // still ours: once a hand-off's CAS succeeds the idle thread may relink
    // queue_next or run (and recycle) the head before we write the record.
    const bool traced = trace::enabled();
    [[maybe_unused]] const std::uint64_t traced_head = traced ? queue.head->id : 0;
    [[maybe_unused]] const std::uint64_t traced_count = traced ? queueLength(queue) : 0;
    // acquire: pairs with the release in spawnWorker, so every slot below
    // `active` is fully initialised.
    const unsigned active = loop.active.load(std::memory_order_acquire);
    const unsigned searches = active < kMaxIdleSearch ? active : kMaxIdleSearch;
    for (unsigned i = 0; i < searches; ++i, ++thread.idle_search_index) {
        if (thread.idle_search_index >= active) thread.idle_search_index = 0;
        Thread& candidate = loop.threads[thread.idle_search_index];
        if (&candidate == &thread) continue;
        Fiber* expected = nullptr;
        // release: the fibers' state (queue_next links, completions) is
        // visible to the idle thread, which pops with acquire. relaxed on
        // failure: we learn nothing we rely on.
        if (!candidate.ready_queue.compare_exchange_weak(expected, queue.head, std::memory_order_release,
                                                         std::memory_order_relaxed))
            continue;
        FIBERSCOPE_TRACE_EVENT(emit::schedule(decided, traced_head, traced_count, candidate.index, ScheduleHow::IdleHandoff);
                               emit::wakeupSent(now, candidate.index));
        wakeThread(thread, candidate);
        ++thread.idle_search_index;
        return;
    }
    if (active < loop.allocated && mayGrow(loop)) {
        unsigned expected = active;
        // acquire: a failed reservation's cleanup (release) happened before
        // we reuse the slot. relaxed on failure: someone else is spawning.
        if (loop.reserved.compare_exchange_weak(expected, active + 1, std::memory_order_acquire,
                                                std::memory_order_relaxed)) {
            bool spawned = false;
            spawnWorker(loop, active, queue, spawned);
            if (spawned) {
                FIBERSCOPE_TRACE_EVENT(emit::schedule(decided, traced_head, traced_count, active, ScheduleHow::NewWorker));
                return;
            }
        }
    }
    FIBERSCOPE_TRACE_EVENT(emit::schedule(decided, traced_head, traced_count, thread.index, ScheduleHow::OwnQueue));
    // Nobody wanted it, so queue it on ourselves. acq_rel: release publishes
    // the fibers to thieves; acquire reads the current head to link behind.
    Fiber* head = thread.ready_queue.load(std::memory_order_acquire);
    do {
        queue.tail->queue_next = head == kFinished ? nullptr : head;
    } while (!thread.ready_queue.compare_exchange_weak(head, queue.head, std::memory_order_acq_rel,
                                                       std::memory_order_acquire));
}

Fiber* findReadyFiber(Loop& loop, Thread& thread) {
    // acquire: see the fibers published by whoever queued them. Exchanging in
    // kFinished keeps thieves and hand-offs away while we unlink the head.
    if (Fiber* fiber = thread.ready_queue.exchange(kFinished, std::memory_order_acquire)) {
        // release: the rest of the list stays published to thieves.
        thread.ready_queue.store(fiber->queue_next, std::memory_order_release);
        fiber->queue_next = nullptr;
        return fiber;
    }
    // acquire: pairs with spawnWorker's release of `active`.
    const unsigned active = loop.active.load(std::memory_order_acquire);
    const unsigned searches = active < kMaxStealReadySearch ? active : kMaxStealReadySearch;
    for (unsigned i = 0; i < searches; ++i, ++thread.steal_ready_search_index) {
        if (thread.steal_ready_search_index >= active) thread.steal_ready_search_index = 0;
        Thread& victim = loop.threads[thread.steal_ready_search_index];
        if (&victim == &thread) continue;
        // acquire: see the fibers the victim's queuers published.
        Fiber* fiber = victim.ready_queue.load(std::memory_order_acquire);
        if (fiber == nullptr || fiber == kFinished) continue;
        // Take the whole list. acquire as above; relaxed on failure.
        if (!victim.ready_queue.compare_exchange_weak(fiber, nullptr, std::memory_order_acquire,
                                                      std::memory_order_relaxed))
            continue;
        FIBERSCOPE_TRACE_EVENT(emit::steal(now, fiber->id, victim.index));
        // release: the stolen remainder is published from our slot now.
        thread.ready_queue.store(fiber->queue_next, std::memory_order_release);
        fiber->queue_next = nullptr;
        ++thread.steal_ready_search_index;
        return fiber;
    }
    // Couldn't find anything to do, so we are now open for business.
    // relaxed: a hand-off CAS needs no ordering from us; the MSG_RING that
    // follows it is what wakes us.
    thread.ready_queue.store(nullptr, std::memory_order_relaxed);
    return nullptr;
}

void yield(Fiber* ready, SwitchMessage& message, bool finished) {
    Thread* thread = currentThread();
    Context* next;
    if (ready) next = &ready->context;
    else if (Fiber* found = findReadyFiber(*thread->loop, *thread)) next = &found->context;
    else next = &thread->idle_context;
    message.contexts = {thread->current_context, next};
    // One timestamp for the switch and the pending task the receiver runs.
    FIBERSCOPE_TRACE_EVENT_AT(message.trace_time, thread->trace_time = now;
                              emit::switchTo(now, traceId(*thread, message.contexts.prev), traceId(*thread, next), message.reason));

    void* fake_stack = nullptr;
    sanitizerStartSwitch(finished ? nullptr : &fake_stack, next->stack_bottom, next->stack_size);
    tsanSwitchTo(next->tsan_fiber);
    const ContextPair* received = contextSwitch(&message.contexts);
    sanitizerFinishSwitch(fake_stack);
    handleSwitchMessage(received);
    currentThread()->trace_time = 0; // the decision is over
}

} // namespace fiberscope::detail
