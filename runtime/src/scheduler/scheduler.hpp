// The scheduler: which thread runs which fiber, and when a thread sleeps.
//
// Where it lives (this folder, one concept a file):
//   worker.hpp/.cpp      a worker thread (Thread): its ready queue word,
//                        run_next, idle context; the idle loop (idle())
//   schedule.cpp         where ready fibers go: schedule(), scheduleSpawned()
//   queue.cpp            where a thread finds work: findReadyFiber(),
//                        stealHalf(), the overflow list
//   work_deque.hpp       the scaling policy's deque of new work (Chase-Lev)
//   run_queue.hpp        the scaling policy's ring of yielders (Go's runq)
//   search.cpp           the scaling policy's search before parking
//   grow.cpp             starting workers lazily
//   victims.hpp          the one round-robin walk over other threads
//   switch.cpp           yield(): the switch itself; yieldRunning()
//   switch_message.*     switch-then-act: the pending task after a switch
// Below it, io/driver.hpp wakes and parks threads on either backend; the
// scheduler never asks which one runs.
//
// THE SEED'S DESIGN (SchedulerPolicy::seed; ported from Zig's
// std.Io event loops, what the lessons teach)
//
// * No global run queue and no lock. Each worker owns one atomic word, its
//   ready queue: a LIFO list of fibers, or nullptr ("my queue is empty: hand
//   me work"), or kPopping (the owner is popping). worker.hpp has the states.
//   Why: one word per thread is the smallest structure that lets any thread
//   give work (one CAS) and take work (one CAS), and a LIFO runs the fiber
//   whose data is hottest in cache first.
// * schedule(), whenever fibers become ready (a spawn, a yield, a finish
//   waking its awaiter, a mutex hand-off, completed I/O), offers the whole
//   queue to an idle thread (CAS nullptr -> queue on a few threads' words,
//   then Driver::wake: MSG_RING or an eventfd write); else starts a new
//   worker with it (lazily, up to EventLoopOptions::threads); else pushes it
//   on its own thread. Why: an idle CPU gets work at the moment it appears,
//   with no thread polling for it. Lesson 3 shows the hand-offs and the
//   MSG_RINGs; lesson 1 the lazy growth.
// * findReadyFiber() pops the own queue; else steals another thread's whole
//   queue; else publishes nullptr and the thread parks in its driver. Why:
//   taking the whole list is one CAS and needs no bounded deque. Lesson 4
//   shows the steals; lesson 10 the LIFO order and what a blocking call does
//   to the fibers queued behind it.
// * yield() switches first and acts after (switch_message.hpp): a fiber
//   never publishes itself while it still runs on its stack. Lesson 2 shows
//   it; lesson 8 the mutex's direct hand-off (yield to the waiter).
//
// WHAT THE SEED COSTS (issue 15, measured with bench/compare.sh on 2 vCPUs,
// medians of 8-10): skynet with 1M fibers took 64.9 ms on one thread and
// 186 ms on two (2.9x slower); a spawn+await of an empty fiber 68.6 ns and
// 725 ns (10.6x). perf put 41 % of the 2-thread samples in schedule(), 84 %
// of those on two instructions: the hand-off CAS on the *other* thread's
// queue word, tried even when that thread is busy (its queue is merely
// empty), which takes the line exclusive; and the load of the thread's own
// word, a miss because the other thread's steals and CASes keep pulling
// the line away. Each hand-off that lands also costs a MSG_RING and a
// kernel wake-up of a thread that parks again almost at once.
//
// THE SCALING POLICY (SchedulerPolicy::scaling, the default) keeps per-thread queues, stealing and
// switch-then-act, and changes the queue, who finds work and when a thread
// sleeps, as Go's scheduler (runq, runnext, pidle, nmspinning, wakep) and
// Tokio's (idle.rs, notify_parked) do:
// * Nobody hands a thread work: a thread queues what became ready on its
//   own queues only. New work (a spawn displaced from run_next, a wake-up,
//   a completion) goes on the bottom of its WorkDeque (work_deque.hpp), a
//   Chase-Lev deque the owner pops LIFO, as the seed pops its word, so it
//   runs soon, on a warm cache, and a tree of spawns stays depth-first. A
//   thief takes the deque's oldest fiber, which in a tree of spawns is the
//   largest piece of work left: the seed's whole-list steal made two
//   threads trade the list at nearly every leaf of skynet. A fiber
//   that yields goes to the back of its RunQueue (run_queue.hpp), a FIFO
//   ring of 256 that only the owner fills: two plain stores to push, one
//   CAS on a line that stays its own to pop. The owner runs new work
//   first, then its yielders in turn (every 61st time the other way round),
//   so yield is fair among three or more fibers. A full ring moves half to
//   the loop's overflow list (Go's global queue).
//   Why not new work in the ring too, as Go does: FIFO makes a tree of
//   spawns breadth-first, and with a stack per fiber that is a disaster
//   (skynet 1M on one thread went from 80 ms to 2.6 s, every inner node's
//   fiber and stack alive at once).
// * A thread out of work takes the oldest fiber of another's WorkDeque
//   (stealOldestFrom), or the older half of its ring with one CAS
//   (stealHalf, queue.cpp); a queue word, which holds only a new worker's
//   first work, is still taken whole.
// * An idle set (Loop::idle_set, idle_set.hpp) says who is parked, in lines
//   of its own. After a push, one parked thread is woken to search
//   (wakeToSearch, Go's wakep) unless a thread searches already or one was
//   woken to and is not up yet (counted from the wake-up on, through
//   Thread::search_token): a burst of spawns wakes one thread, not one per
//   spawn, and busy threads are never offered anything.
// * A thread out of work searches before it parks (searchBeforePark,
//   search.cpp): rounds of steal attempts for kSearchNs, with a pause
//   between them that doubles from 150 ns to 4 us (each round reads the
//   busy threads' lines); Loop::searching counts the searchers, at most
//   half the threads.
// * A spawned fiber goes to its spawner's run_next (Go's runnext), taken
//   before the ring: a fiber spawned and then awaited runs on the spawner's
//   thread with no cross-thread traffic; a searcher takes a run_next fiber
//   only after kRunNextGraceNs, so a spawner that never suspends still has
//   its fiber run elsewhere.
// * Fiber ids come from per-thread blocks (fiber.cpp), not one shared counter.
// The trace says which policy ran (a "scheduler: scaling" mark), writes
// a steal-half record per fiber a steal moved, and a search record where a
// thread begins and ends its search before parking (FORMAT.md).
// Measured (bench/compare.sh; the numbers and the machine's load are in
// the commit messages and the closing notes): spawn+await at 2 threads
// 1.2x to 2.0x its 1-thread time (seed: 5.5x to 41x), skynet at 2 threads
// 0.41x to 0.71x its 1-thread time (seed: 1.1x to 2.9x). Before new work
// went on a WorkDeque it was 0.53x to 0.92x, varying from day to day on
// the same commit: a whole-list steal sent the list back and forth, and
// what each trip cost depended on what moving a line between the CPUs
// cost that day.
//
// WHY IT IS CORRECT. Seed: the only word that decides where fibers go is a
// thread's queue word, changed by CAS (or by its owner while it holds
// kPopping); a thread parks only after publishing nullptr, and whoever
// hands it work with a CAS then wakes it. Scaling: every read of the idle
// set or of `searching` is a hint; what decides is a CAS (on a queue word,
// a WorkDeque's top, a RunQueue's head, a run_next). A ready fiber is in a
// queue word, a deque, a ring, a run_next or the overflow list; the first
// four are filled only by their owner while it runs (its fibers, its
// completions through the reaper, a thief's remainder), and an owner looks
// at all four before it
// parks (searchBeforePark runs what the reaper queued during its flush),
// so a running owner runs its fibers if nobody else does: a stale hint
// costs a missed chance of parallelism or a needless wake-up, never a
// fiber. A searcher that finds work and was the last one wakes a parked
// thread to search in its place (Go's resetspinning), so work a producer
// queued while it saw that searcher still gets a thread. What stays is the
// parallelism: a producer that adds work and then reads `searching` and
// the idle set, against a searcher that gives up (drops `searching`, sets
// its idle bit) and then reads every deque, ring, run_next and the
// overflow list, is a Dekker pair (seq_cst on both sides: the fence after a
// push and the exchange of run_next in schedule.cpp, the read-modify-writes
// and loads in search.cpp): one of them sees the other, so work added while
// the last searcher gives up still gets a thread. (A push on a deque that
// held work already skips its side: the push that filled it did not, and
// schedule() says why that is enough.)
#pragma once

#include "fiber/fiber.hpp"
#include "scheduler/switch_message.hpp"
#include "scheduler/worker.hpp"

namespace fiberscope::detail {

struct Loop;

// Makes `queue` runnable: hands it to an idle thread (and wakes it with
// MSG_RING), else starts a new worker for it, else queues it on `thread`.
// `yielded`: the fibers gave up their thread by choice (EventLoop::yield,
// a mutex unlock's hand-off): on the scaling policy they go to the back of
// the thread's FIFO RunQueue, behind its newly ready work; other ready
// fibers go on its LIFO queue word, so a spawn or a wake-up runs soon, on a
// warm cache, and a tree of spawns stays depth-first.
void schedule(Loop& loop, Thread& thread, FiberQueue queue, bool yielded = false);

// A fiber just spawned on `thread`: schedule() on the seed policy; on the
// scaling policy it goes to the thread's run_next (the one there before
// goes through schedule()), and a parked thread may be woken to search.
void scheduleSpawned(Loop& loop, Thread& thread, Fiber* fiber);

// Pops this thread's next ready fiber, else steals another thread's queue,
// else marks the thread idle (ready_queue = nullptr) and returns nullptr.
Fiber* findReadyFiber(Loop& loop, Thread& thread);

// The scaling policy, from the idle loop when findReadyFiber found nothing:
// searches (steals) for a bounded while as one of Loop::searching, then
// publishes the thread parked (its idle-set bit, ready_queue = nullptr) and
// looks once more. A fiber to run, or nullptr: park now.
Fiber* searchBeforePark(Loop& loop, Thread& thread);
// The scaling policy, once the thread is awake: clears its idle-set bit and
// uncounts a search it was woken for (search_token).
void leaveIdleSet(Loop& loop, Thread& thread);

// Go's wakep (schedule.cpp): work is queued on `thread`, so wake one parked
// thread to search, unless a thread searches already or one was woken to
// and is not up yet. The caller has issued a seq_cst fence after queuing.
void wakeToSearch(Loop& loop, Thread& thread);

// Switches from the current context to `ready` (or the next ready fiber, or
// the idle context), asking the receiver to perform `message.task`.
// `finished`: the current fiber will never run again.
void yield(Fiber* ready, SwitchMessage& message, bool finished = false);

inline void yield(Fiber* ready, PendingTask task, trace::SwitchReason reason) {
    SwitchMessage message;
    message.task = task;
    message.reason = reason;
    yield(ready, message);
}

// EventLoop::yield on a worker: services the driver now and then, then
// puts the running fiber back on a ready queue and runs the next one. On a
// loop of one worker thread of the scaling policy, untraced, with no new
// work waiting, it takes a short way (yieldAlone, switch.cpp): the fiber
// queues itself on its ring and switches to the ring's head.
void yieldRunning(Thread& thread);

// Pins the calling thread, worker `index`, to its CPU when the loop pins
// (Loop::pin_cpus), and says so in the trace; one line on stderr if the
// kernel refuses (the worker then runs where the OS puts it).
void pinWorker(Loop& loop, unsigned index);

// The fiber running on the calling thread (the main fiber included).
Fiber* currentFiber();

} // namespace fiberscope::detail
