// The scaling policy's idle side: a thread out of work searches (steals)
// for a bounded while before it parks, publishes itself parked in the idle
// set, and leaves the set when it wakes. scheduler.hpp has the design.
#include "scheduler/scheduler.hpp"

#include <algorithm>

#include "loop.hpp"
#include "scheduler/idle_set.hpp"
#include "scheduler/queue.hpp"
#include "support/cpu_relax.hpp"
#include "support/tracing.hpp"
#include "support/fault_injection.hpp"

namespace fiberscope::detail {

// How long a thread out of work searches before it parks (scaling policy).
// Long enough to cover another thread's turn-around (a spawn or a finish,
// about a microsecond), short enough that an idle loop parks at once for a
// person watching top. Its own ring's completions cut it short, those in
// the completion queue and those the kernel holds as deferred work
// (COOP_TASKRUN runs them only when the thread enters the kernel; the ring
// flags them, IORING_SETUP_TASKRUN_FLAG). On a kernel without that flag
// deferred ones are not seen while it spins, so this also bounds their
// extra latency.
static constexpr std::int64_t kSearchNs = 10'000;
// cpuRelax() calls between two looks at a run_next being watched (after
// the search, watchRunNext): they keep the watcher from pulling the
// spawner's line on every cycle.
static constexpr unsigned kRelaxPerRound = 8;
// The pause between two rounds of steal attempts in a search: kFirstGapNs
// after the first, doubling up to kMaxGapNs. Each round reads the other
// threads' queue lines, which their owners write on every spawn and
// wake-up: a fixed ~150 ns gap (8 pauses here) kept pulling those lines
// away, and a spawn+await at 2 threads took 4.5x its 1-thread time
// (issue 15; about 1.8x with the back-off, bench/compare.sh). A thread just
// woken to search still looks often at first, when work is most likely;
// the cap bounds how late a searcher sees work that appears later.
static constexpr std::int64_t kFirstGapNs = 150;
static constexpr std::int64_t kMaxGapNs = 4'000;

void leaveIdleSet(Loop& loop, Thread& thread) {
    if (thread.own().in_idle_set) {
        thread.own().in_idle_set = false;
        // seq_cst: a Dekker pair with wakeToSearch, which sets our token and
        // then reads our bit: we clear the bit, then read the token; one of
        // us sees the other, and whoever exchanges the token back uncounts
        // the search (else `searching` could stay counted for a thread that
        // is awake and never searches). Only we write our bit.
        loop.idle_set[thread.index / 64].fetch_and(~idleBit(thread.index), std::memory_order_seq_cst);
    }
    // A search we were woken for (wakeToSearch) is ours to uncount: the
    // idle loop searches anew, counted, if it finds nothing. seq_cst: the
    // pair above; the load first keeps the common case free of a
    // read-modify-write (a seq_cst load is a plain load on x86-64).
    if (thread.search_token.load(std::memory_order_seq_cst) &&
        thread.search_token.exchange(false, std::memory_order_seq_cst))
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
        const TraceWordGuard guard(victim);
        // relaxed: a test before the CAS, which decides.
        Fiber* fiber = victim.run_next.load(std::memory_order_relaxed);
        if (fiber == seen.fiber) {
            if (now_ns - seen.since < kRunNextGraceNs) return nullptr;
            // The record's time: after the load that saw the fiber, before
            // the CAS that takes it (support/tracing.hpp, "steal").
            const std::uint64_t stamp = trace::enabled() ? trace::now() : 0;
            // acquire: pairs with the owner's release exchange that put the
            // fiber there, so we see it initialised. relaxed on failure.
            if (victim.run_next.compare_exchange_strong(fiber, nullptr, std::memory_order_acquire,
                                                        std::memory_order_relaxed)) {
                FIBERSCOPE_TRACE_EVENT_AT(stamp, emit::stealOne(now, fiber->id, victim.index, trace::StealOneFrom::RunNext));
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

// What another thread holds that we could run: fibers in its RunQueue or
// in the loop's overflow list (`queued`, `victim` names whose queue, or
// kNoVictim for the overflow list), or a fiber in its run_next (`sighting`
// names it).
enum class OthersHold { nothing, queued, run_next };
static constexpr unsigned kNoVictim = ~0u;
static OthersHold othersHaveWork(Loop& loop, Thread& thread, unsigned active, unsigned& victim,
                                 RunNextSighting& sighting) {
    // seq_cst (every load below): the Dekker pair with schedule() and
    // scheduleSpawned (scheduler.hpp): we dropped `searching` and wrote our
    // idle bit, then read their queues and run_next; they pushed or wrote
    // run_next, then read `searching` and the idle set. One of us sees the
    // other.
    if (loop.overflow_count.load(std::memory_order_seq_cst) != 0) {
        victim = kNoVictim;
        return OthersHold::queued;
    }
    OthersHold held = OthersHold::nothing;
    for (unsigned i = 0; i < active; ++i) {
        if (i == thread.index) continue;
        Fiber* head = loop.threads[i].ready_queue.load(std::memory_order_seq_cst);
        if ((head != nullptr && head != kPopping) || !loop.threads[i].new_work.looksEmptySeqCst() ||
            !loop.threads[i].run_queue.looksEmptySeqCst()) {
            victim = i;
            return OthersHold::queued;
        }
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
    // Our queue word and RunQueue are empty (findReadyFiber found nothing,
    // and only we fill them: the scaling policy hands no thread work, so a
    // thief's remainder may be stored in our word as it is; the one
    // exception, the reaper during flush() below, is checked there). Searchers are at most half the threads (Go's bound): more would
    // only pull the busy threads' lines. relaxed: a hint; a few extra
    // searchers for a moment cost CPU, not correctness.
    const bool search = active > 1 && 2 * loop.searching.load(std::memory_order_relaxed) < active;
    if (search) {
        // Queued submissions go out now, not after the search. A submission
        // the kernel refuses for lack of completion space runs the reaper,
        // which may queue fibers on our word: run those first.
        thread.driver.flush();
        if (Fiber* fiber = ownPop(thread, popNewWork(thread))) return fiber;
        // relaxed: the increment only steers schedule()'s hints.
        [[maybe_unused]] const unsigned searchers = loop.searching.fetch_add(1, std::memory_order_relaxed) + 1;
        FIBERSCOPE_TRACE_EVENT(emit::search(now, trace::SearchOp::Begin, searchers));
        Fiber* found = nullptr;
        RunNextSighting seen;
        const std::int64_t until = monotonicNanoseconds() + kSearchNs;
        trace::SearchOp why = trace::SearchOp::GaveUp; // why the search stopped, for the trace
        std::int64_t gap = kFirstGapNs;
        for (;;) {
            if ((found = stealReady(loop, thread))) break;
            if ((found = stealHalf(loop, thread))) break;
            if ((found = takeOverflow(loop, thread, RunQueue::kCapacity / 2))) break;
            const std::int64_t now_ns = monotonicNanoseconds();
            if ((found = stealRunNext(loop, thread, active, seen, now_ns))) break;
            if (thread.driver.hasPendingCompletions()) {
                why = trace::SearchOp::Completions;
                break;
            }
            if (now_ns >= until) break;
            const std::int64_t resume = std::min(now_ns + gap, until);
            do cpuRelax();
            while (monotonicNanoseconds() < resume);
            gap = std::min(2 * gap, kMaxGapNs);
        }
        // seq_cst: before our idle bit in the Dekker pair with schedule()
        // and scheduleSpawned (a producer that reads the bit set then reads
        // `searching` without us).
        jitter();
        const unsigned before = loop.searching.fetch_sub(1, std::memory_order_seq_cst);
        // The records that end the search (and perhaps a wake-up) come
        // before the switch to what it found, which therefore takes its own
        // time after them, not a steal's (Thread::Owned::taken_at): a record
        // stamped before its thread's previous one would be moved. Under this
        // policy nobody hands a thread's word work, so no steal can take the
        // found fiber along meanwhile.
        thread.own().taken_at = 0;
        // The count is a snapshot (others come and go meanwhile): what the
        // record says, not what the scheduler decides by.
        FIBERSCOPE_TRACE_EVENT(emit::search(now, found ? trace::SearchOp::Found : why, before - 1));
        if (found) {
            // The last searcher found work (Go's resetspinning): a producer
            // that saw us searching woke nobody, and what we took may have
            // left a remainder in our queues; so one parked thread is woken
            // to search in our place. seq_cst fence: as after a push
            // (schedule()), our side of the Dekker pair.
            if (before == 1) {
                std::atomic_thread_fence(std::memory_order_seq_cst);
                wakeToSearch(loop, thread);
            }
            return found;
        }
    }
    // Publish ourselves parked. seq_cst: the Dekker pair (othersHaveWork).
    thread.own().in_idle_set = true;
    jitter();
    loop.idle_set[thread.index / 64].fetch_or(idleBit(thread.index), std::memory_order_seq_cst);
    jitter();
    // Work queued while we stopped searching, by a thread that saw us
    // searching and so woke nobody: take it rather than park beside it.
    unsigned victim = kNoVictim;
    RunNextSighting sighting;
    const OthersHold held = othersHaveWork(loop, thread, active, victim, sighting);
    if (held == OthersHold::nothing) return nullptr;
    Fiber* fiber = nullptr;
    if (held == OthersHold::run_next) {
        // A fiber in a spawner's run_next that its spawner may never get
        // to (it need not suspend), and the spawner may have missed our
        // bit: watch it (our bit stays set: a wake-up may come meanwhile).
        fiber = watchRunNext(loop, thread, active, sighting);
    } else if (victim == kNoVictim) {
        fiber = takeOverflow(loop, thread, RunQueue::kCapacity / 2);
    } else {
        fiber = stealReadyFrom(thread, loop.threads[victim]);
        if (!fiber) fiber = stealOldestFrom(thread, loop.threads[victim]);
        if (!fiber) fiber = stealHalfFrom(thread, loop.threads[victim]);
    }
    // nullptr: taken by someone else meanwhile. Park: a later producer
    // sees our bit and wakes us.
    if (fiber) leaveIdleSet(loop, thread);
    return fiber;
}

} // namespace fiberscope::detail
