// The scheduler: schedule(), scheduleSpawned(), findReadyFiber(),
// searchBeforePark() and yield().
//
// Design (ported from the seeds' EventLoop/Evented/Kqueue), the `seed` policy:
//
// * Each worker thread owns one ready queue slot (scheduler/worker.hpp explains its
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
//
// What the seed costs (issue 15): "open for business" is only "my queue is
// empty", so the hand-off CAS is tried on busy threads too, taking their
// queue word's cache line exclusive on every schedule(); each hand-off that
// lands costs a MSG_RING and a kernel wake-up of a thread that parks again
// at once. skynet ran 2.9x slower on two threads than on one.
//
// The `scaling` policy (EventLoopOptions::scheduler) keeps the queues, the
// hand-off, the stealing and switch-then-act, and changes who is offered
// work and when a thread parks:
// * A loop-level idle set (Loop::idle_set, one bit per worker, in lines of
//   its own) says who is parked. A thread sets its bit before it publishes
//   ready_queue = nullptr and parks, and clears it when it wakes. schedule()
//   reads the set first and CASes only the queue word of a thread whose bit
//   is set and whose word reads nullptr (test before CAS), so busy threads'
//   lines stay theirs.
// * A thread that runs out of work searches before it parks
//   (searchBeforePark): steal attempts over the other threads with
//   cpuRelax() between them, bounded by kSearchNs so an idle loop still
//   parks at once in CPU terms. Loop::searching counts the searchers; while
//   one searches, schedule() wakes nobody (Go's wakep, Tokio's
//   notify_parked): the searcher will steal the work, so a burst of spawns
//   is not a burst of MSG_RINGs.
// * A spawned fiber goes to its spawner's run_next slot (Go's runnext),
//   which findReadyFiber takes before the queue: a fiber spawned and then
//   awaited runs on the spawner's thread with no cross-thread traffic. The
//   fiber it displaces from the slot goes through schedule(). With the slot
//   filled and nobody searching, one parked thread is woken to search
//   (wakeToSearch, Go's wakep), counted in `searching` from the wake-up on
//   (Thread::search_token), so a burst of spawns wakes one thread. A
//   searcher takes a run_next fiber only once it has sat there for
//   kRunNextGraceNs, so a spawner that never suspends still has its fiber
//   run elsewhere. Until every worker has started, a spawn goes through
//   schedule() instead, which starts the next worker (lazy growth).
// Every read of the idle set or of `searching` is a hint. The only word
// that decides where fibers go is the target's queue word, changed by CAS
// (or by its owner while it holds kFinished), so a stale hint costs at most
// a missed hand-off (the fibers go on the scheduler's own queue, which its
// running owner pops and a searcher may steal) or a needless wake-up (a
// spurious wakeup completion), never a fiber. A ready fiber is always in a
// queue word or a run_next whose owner is running (an owner looks at both
// before it parks, and nobody but a hand-off CAS, followed by a wake-up,
// adds to a parked thread's), so the running owner runs it if nobody else
// does.
#include "scheduler/scheduler.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "support/cpu_relax.hpp"
#include "loop.hpp"
#include "scheduler/victims.hpp"
#include "support/sanitizer.hpp"
#include "fiberscope/trace.hpp"
#include "support/tracing.hpp"

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
    const char* failed = "";
    Status opened = worker.driver.openWorker(index, loop.threads[0].driver, loop.options, failed);
    if (!opened) {
        worker.ready_queue.store(nullptr, std::memory_order_relaxed);
        growFailed(loop, index, failed, opened.error().message());
        return;
    }
    worker.driver.setReaper(reapCompletions, &worker);
    try {
        worker.os_thread = std::thread(workerMain, &loop, index);
    } catch (const std::exception& e) {
        worker.driver.close();
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

// The seed's hand-off: the queue goes to the next of a few threads whose
// queue word reads nullptr (parked, or busy with an empty queue), by CAS.
static Thread* offerToEmpty(Thread& thread, FiberQueue queue, unsigned active) {
    return visitVictims(*thread.loop, thread, thread.idle_search_index, kMaxIdleSearch, active, [&](Thread& candidate) {
        Fiber* expected = nullptr;
        // release: the fibers' state (queue_next links, completions) is
        // visible to the idle thread, which pops with acquire. relaxed on
        // failure: we learn nothing we rely on.
        return candidate.ready_queue.compare_exchange_weak(expected, queue.head, std::memory_order_release,
                                                           std::memory_order_relaxed);
    });
}

static std::uint64_t idleBit(unsigned index) { return std::uint64_t{1} << (index % 64); }

// The scaling policy's hand-off: only to a thread the idle set says is
// parked, and only while nobody searches (a searcher will steal the work).
static Thread* offerToParked(Loop& loop, Thread& thread, FiberQueue queue, unsigned active) {
    // relaxed: a hint. Stale nonzero: we skip a hand-off and queue on
    // ourselves (the searcher, or our own running thread, takes it); stale
    // zero: we wake a parked thread a searcher would have spared.
    if (loop.searching.load(std::memory_order_relaxed) != 0) return nullptr;
    unsigned attempts = 0;
    const unsigned words = (active + 63) / 64;
    for (unsigned w = 0; w < words; ++w) {
        // relaxed: a hint. A bit read set may already be cleared (the CAS
        // below then fails on the thread's non-null word, or lands on a
        // running thread that pops it; the wake-up is spurious); a bit read
        // clear may already be set (a missed hand-off). Nothing is published
        // through the set: the CAS's release publishes the fibers.
        std::uint64_t set = loop.idle_set[w].load(std::memory_order_relaxed);
        while (set != 0) {
            const unsigned index = w * 64 + static_cast<unsigned>(__builtin_ctzll(set));
            set &= set - 1;
            // A worker may set its bit before `active` covers it: its slot's
            // shared fields are not yet ours to read.
            if (index >= active) break;
            if (index == thread.index) continue;
            Thread& candidate = loop.threads[index];
            // Test before CAS: a load leaves the line shared when the thread
            // already has work. relaxed: only the CAS's outcome counts.
            Fiber* expected = candidate.ready_queue.load(std::memory_order_relaxed);
            if (expected == nullptr &&
                // release: the fibers' state (queue_next links, completions)
                // is visible to the parked thread, which pops with acquire.
                // relaxed on failure: we learn nothing we rely on.
                candidate.ready_queue.compare_exchange_strong(expected, queue.head, std::memory_order_release,
                                                              std::memory_order_relaxed))
                return &candidate;
            if (++attempts == kMaxIdleSearch) return nullptr;
        }
    }
    return nullptr;
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
    if (Thread* taker = loop.scaling() ? offerToParked(loop, thread, queue, active) : offerToEmpty(thread, queue, active)) {
        FIBERSCOPE_TRACE_EVENT(emit::schedule(decided, traced_head, traced_count, taker->index, ScheduleHow::IdleHandoff);
                               emit::wakeupSent(now, taker->index));
        thread.driver.wake(taker->driver);
        return;
    }
    // scaling: no new worker while a thread searches, which will steal the
    // work (relaxed: a hint, see the design comment).
    if (active < loop.allocated && mayGrow(loop) &&
        (!loop.scaling() || loop.searching.load(std::memory_order_relaxed) == 0)) {
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

// Go's wakep: work sits in our run_next, so wake one parked thread to
// search (it may take the fiber if we do not suspend soon), unless a thread
// searches already or one was woken to and is not up yet (its search is
// counted from the wake: one MSG_RING, not one per spawn).
static void wakeToSearch(Loop& loop, Thread& thread) {
    // seq_cst: our side of the Dekker pair (scheduleSpawned). Nonzero: a
    // searcher that is still counted will look at our run_next when it
    // gives up.
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
    // relaxed: the token is the target's share of the count, no data.
    target->search_token.store(true, std::memory_order_relaxed);
    FIBERSCOPE_TRACE_EVENT(emit::wakeupSent(now, target->index));
    thread.driver.wake(target->driver);
}

void scheduleSpawned(Loop& loop, Thread& thread, Fiber* fiber) {
    // Until every worker has started, a spawn starts the next one (the
    // seed's lazy growth) with the fiber as its first work. relaxed: a hint;
    // schedule() reads `active` again with acquire.
    if (!loop.scaling() || loop.active.load(std::memory_order_relaxed) < loop.allocated) {
        schedule(loop, thread, FiberQueue::one(fiber));
        return;
    }
    // Recorded before it is published: a searcher may run it at once.
    FIBERSCOPE_TRACE_EVENT_AT(thread.trace_time,
                              emit::schedule(now, fiber->id, 1, thread.index, ScheduleHow::OwnQueue));
    // release: a searcher that takes the fiber (acquire CAS) sees it
    // initialised; the one we displace was put there by us. seq_cst: a
    // Dekker pair with a searcher that gives up (searchBeforePark): we
    // write run_next, then read `searching` and the idle set
    // (wakeToSearch); it drops `searching`, writes its idle bit, then reads
    // run_next. In their single total order one of us sees the other, so
    // a fiber here is never left with every other thread parked unwoken.
    if (Fiber* displaced = thread.run_next.exchange(fiber, std::memory_order_seq_cst)) {
        // The older spawn goes the ordinary way: to a parked thread, or our
        // queue. Its wake-up, if any, also brings a searcher for the new one.
        schedule(loop, thread, FiberQueue::one(displaced));
        return;
    }
    wakeToSearch(loop, thread);
}

// Takes the whole ready list of one of a few other threads, runs its head
// and publishes the rest from our slot. Our slot must hold kFinished while
// we do: no hand-off can land in it and no thief takes from it, so the
// plain store of the remainder overwrites nothing. nullptr: nothing found
// (the slot still holds kFinished).
static Fiber* stealReady(Loop& loop, Thread& thread) {
    // acquire: pairs with spawnWorker's release of `active`.
    const unsigned active = loop.active.load(std::memory_order_acquire);
    Fiber* fiber = nullptr;
    const Thread* victim = visitVictims(loop, thread, thread.steal_ready_search_index, kMaxStealReadySearch, active,
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
static Fiber* popOwn(Thread& thread) {
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
static Fiber* takeRunNext(Thread& thread) {
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

// How long a thread out of work searches before it parks (scaling policy).
// Long enough to cover another thread's turn-around (a spawn or a finish,
// about a microsecond), short enough that an idle loop parks at once for a
// person watching top. Its own ring's completions cut it short; they are
// not delivered while it spins (COOP_TASKRUN runs them when it enters the
// kernel), so this also bounds their extra latency.
static constexpr std::int64_t kSearchNs = 10'000;
// cpuRelax() calls between two steal attempts: they keep a searcher from
// pulling the busy threads' queue lines on every cycle.
static constexpr unsigned kRelaxPerRound = 8;

void leaveIdleSet(Loop& loop, Thread& thread) {
    if (thread.in_idle_set) {
        thread.in_idle_set = false;
        // relaxed: the set is a hint (offerToParked); only we write our bit.
        loop.idle_set[thread.index / 64].fetch_and(~idleBit(thread.index), std::memory_order_relaxed);
    }
    // A search we were woken for (wakeToSearch) is ours to uncount: the
    // idle loop searches anew, counted, if it finds nothing. relaxed: the
    // token only pairs one increment of the hint with one decrement; the
    // load first keeps the common case free of a read-modify-write.
    if (thread.search_token.load(std::memory_order_relaxed) &&
        thread.search_token.exchange(false, std::memory_order_relaxed))
        loop.searching.fetch_sub(1, std::memory_order_relaxed);
}

// How long a spawned fiber sits in its spawner's run_next before a searcher
// may take it (Go waits 3 us): longer than a spawn-then-await takes, so that
// pair stays on one thread; short enough that a spawner that never
// suspends does not hold its fiber from an idle thread for long.
static constexpr std::int64_t kRunNextGraceNs = 3'000;

// A fiber seen in another thread's run_next, and since when.
struct RunNextSighting {
    unsigned victim = 0;
    Fiber* fiber = nullptr;
    std::int64_t since = 0;
};

// Takes the fiber of `seen` once it has sat in its run_next for the grace
// period, else starts watching one.
static Fiber* stealRunNext(Loop& loop, Thread& thread, unsigned active, RunNextSighting& seen, std::int64_t now_ns) {
    if (seen.fiber) {
        Thread& victim = loop.threads[seen.victim];
        // relaxed: a test before the CAS, which decides.
        Fiber* fiber = victim.run_next.load(std::memory_order_relaxed);
        if (fiber == seen.fiber) {
            if (now_ns - seen.since < kRunNextGraceNs) return nullptr;
            // acquire: pairs with the owner's release exchange that put the
            // fiber there, so we see it initialised. relaxed on failure.
            if (victim.run_next.compare_exchange_strong(fiber, nullptr, std::memory_order_acquire,
                                                        std::memory_order_relaxed)) {
                FIBERSCOPE_TRACE_EVENT(emit::steal(now, fiber->id, victim.index));
                seen.fiber = nullptr;
                return fiber;
            }
        }
        // Taken (the same pointer again later is a new spawn; taking it
        // early would only be early, never wrong).
        seen.fiber = nullptr;
    }
    for (unsigned i = 0; i < active; ++i) {
        if (i == thread.index) continue;
        // relaxed: only a sighting; the CAS above decides.
        if (Fiber* fiber = loop.threads[i].run_next.load(std::memory_order_relaxed)) {
            seen = {i, fiber, now_ns};
            break;
        }
    }
    return nullptr;
}

// What another thread holds that we could run: fibers in its queue word,
// or a fiber in its run_next.
// (`sighting` names the run_next fiber seen.)
enum class OthersHold { nothing, queued, run_next };
static OthersHold othersHaveWork(Loop& loop, Thread& thread, unsigned active, RunNextSighting& sighting) {
    OthersHold held = OthersHold::nothing;
    for (unsigned i = 0; i < active; ++i) {
        if (i == thread.index) continue;
        // relaxed: a hint; stealReady's acquire load and CAS decide.
        Fiber* head = loop.threads[i].ready_queue.load(std::memory_order_relaxed);
        if (head != nullptr && head != kFinished) return OthersHold::queued;
        // seq_cst: the Dekker pair with scheduleSpawned (see there): we
        // wrote our idle bit, then read run_next; the spawner wrote run_next,
        // then reads the idle set. One of us sees the other.
        if (Fiber* next = loop.threads[i].run_next.load(std::memory_order_seq_cst);
            next && held == OthersHold::nothing) {
            held = OthersHold::run_next;
            sighting = {i, next, monotonicNanoseconds()};
        }
    }
    return held;
}

// Watches a run_next fiber seen after we published ourselves parked, for
// the grace period: gone (its spawner ran it, or a searcher took it), or
// taken by us once the grace is over (nullptr: gone). Any later spawn sees
// our idle bit and wakes a thread (the Dekker pair, scheduleSpawned).
static Fiber* watchRunNext(Loop& loop, Thread& thread, unsigned active, RunNextSighting seen) {
    for (;;) {
        const std::int64_t now_ns = monotonicNanoseconds();
        const RunNextSighting before = seen;
        if (Fiber* fiber = stealRunNext(loop, thread, active, seen, now_ns)) return fiber;
        // stealRunNext dropped it (gone) or moved on to another fiber.
        if (seen.fiber != before.fiber || seen.victim != before.victim) return nullptr;
        for (unsigned i = 0; i < kRelaxPerRound; ++i) cpuRelax();
    }
}

Fiber* searchBeforePark(Loop& loop, Thread& thread) {
    // acquire: pairs with spawnWorker's release of `active`.
    const unsigned active = loop.active.load(std::memory_order_acquire);
    // A token left by a waker that read our idle bit stale (we were
    // already awake): uncount it, we count our own search below.
    leaveIdleSet(loop, thread);
    // A hand-off that landed on a stale hint, before we lock our slot.
    if (Fiber* fiber = popOwn(thread)) return fiber;
    // Our slot holds kFinished from here until we publish ourselves
    // parked. Searchers are at most half the threads (Go's bound): more
    // would only pull the busy threads' lines. relaxed: a hint; a few
    // extra searchers for a moment cost CPU, not correctness.
    const bool search = active > 1 && 2 * loop.searching.load(std::memory_order_relaxed) < active;
    if (search) {
        // Queued submissions go out now, not after the search.
        thread.driver.flush();
        // relaxed: the increment only steers schedule()'s hints.
        loop.searching.fetch_add(1, std::memory_order_relaxed);
        Fiber* found = nullptr;
        RunNextSighting seen;
        const std::int64_t until = monotonicNanoseconds() + kSearchNs;
        for (;;) {
            if ((found = stealReady(loop, thread))) break;
            const std::int64_t now_ns = monotonicNanoseconds();
            if ((found = stealRunNext(loop, thread, active, seen, now_ns))) {
                // Our slot is ours again: open, empty, not parked (no
                // idle bit). relaxed: as in findReadyFiber.
                thread.ready_queue.store(nullptr, std::memory_order_relaxed);
                break;
            }
            if (thread.driver.hasPendingCompletions()) break;
            if (now_ns >= until) break;
            for (unsigned i = 0; i < kRelaxPerRound; ++i) cpuRelax();
        }
        // seq_cst: before our idle bit in the Dekker pair with
        // scheduleSpawned (a spawner that reads the bit set then reads
        // `searching` without us).
        loop.searching.fetch_sub(1, std::memory_order_seq_cst);
        if (found) return found;
    }
    // Publish ourselves parked: the bit first, then the open slot, so
    // that a hander who reads the bit and then our word either finds
    // nullptr (its CAS lands and its wake-up follows) or kFinished (a
    // missed hand-off). seq_cst: the Dekker pair with scheduleSpawned
    // (othersHaveWork); for offerToParked the bit is only a hint.
    thread.in_idle_set = true;
    loop.idle_set[thread.index / 64].fetch_or(idleBit(thread.index), std::memory_order_seq_cst);
    // relaxed: as in findReadyFiber; a hand-off CAS needs no ordering from us.
    thread.ready_queue.store(nullptr, std::memory_order_relaxed);
    // Work queued while we stopped searching, by a thread that saw us
    // searching and so woke nobody: take it rather than park beside it.
    RunNextSighting sighting;
    const OthersHold held = othersHaveWork(loop, thread, active, sighting);
    if (held == OthersHold::nothing) return nullptr;
    if (held == OthersHold::run_next) {
        // A fiber in a spawner's run_next that its spawner may never get
        // to (it need not suspend), and the spawner may have missed our
        // bit: watch it (our slot stays open, our bit set: a hand-off
        // may land, and its wake-up follows).
        Fiber* fiber = watchRunNext(loop, thread, active, sighting);
        if (!fiber) return nullptr;
        leaveIdleSet(loop, thread);
        return fiber;
    }
    Fiber* fiber = popOwn(thread);
    if (!fiber) fiber = stealReady(loop, thread);
    if (fiber) {
        leaveIdleSet(loop, thread);
        return fiber;
    }
    // relaxed: as above.
    thread.ready_queue.store(nullptr, std::memory_order_relaxed);
    // Someone's queue emptied under us (stolen or popped): park.
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
