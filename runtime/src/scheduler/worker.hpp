// A worker thread: its driver (io_uring or epoll), its idle context, its
// ready queue and its free list of recycled fibers.
//
// The seed policy's ready queue is one atomic word holding a LIFO list of
// ready fibers linked through Fiber::queue_next. Its value also says what
// the thread is doing, and that is what makes hand-off and stealing work:
//   nullptr    the thread found nothing to do and is open for business:
//              another thread may hand it a whole queue with one CAS
//              (schedule()) and must then wake it (Driver::wake);
//   kPopping   the owner is popping from it right now (findReadyFiber());
//              on the scaling policy, which hands nobody work, it may also
//              stay so while the owner runs other work: empty to everyone;
//   a fiber    ready work: the owner pops the head, a thief takes it all.
// The scaling policy uses a deque for new work (work_deque.hpp) and a ring
// for the fibers that yielded (run_queue.hpp), which only their owner fills;
// other threads take the deque's oldest fiber or half of the ring, and
// nobody hands the thread work.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "fiber/context.hpp"
#include "fiber/fiber.hpp"
#include "io/driver.hpp"
#include "scheduler/run_queue.hpp"
#include "scheduler/work_deque.hpp"
#include "sync/timers.hpp"

namespace fiberscope::detail {

struct Loop;
struct PoolWait;

// Thread::ready_queue while its owner pops from it (the states above):
// never a valid Fiber address, and not Fiber::awaiter's kFinished, so that
// each sentinel has one meaning.
inline Fiber* const kPopping = reinterpret_cast<Fiber*>(std::uintptr_t{3 * alignof(Fiber)});

struct Thread {
    Loop* loop = nullptr;
    unsigned index = 0;

    // The context of the thread's idle loop (idle() in scheduler/worker.cpp): where the
    // thread goes when no fiber is ready.
    Context idle_context;
    // The context running on this thread right now.
    Context* current_context = nullptr;

    alignas(64) std::atomic<Fiber*> ready_queue{nullptr};
    // The scaling policy's runnext (Go's): the fiber this thread spawned
    // last, run before the queue when the spawner suspends, so a spawn that
    // is awaited at once stays on this thread. Only the owner puts a fiber
    // in (exchange); the owner takes it (exchange), or a searcher does (CAS)
    // once it has sat there a while (scheduler/search.cpp). Never holds a fiber
    // while its owner is parked: the owner looks here before it parks.
    // A line of its own: the owner writes it on every spawn, and a searcher
    // reads the queue word above on every round.
    alignas(64) std::atomic<Fiber*> run_next{nullptr};
    // The scaling policy's new work (work_deque.hpp): a deque the owner
    // pushes to and pops from at the bottom, and thieves take the oldest
    // fiber of. (Its ready_queue word above then only holds a new worker's
    // first work, from spawnWorker.)
    alignas(64) WorkDeque new_work;
    // The scaling policy's fibers that yielded (run_queue.hpp): a ring the
    // owner pushes to and pops from, and thieves take half of. The seed
    // policy uses ready_queue above for everything.
    alignas(64) RunQueue run_queue;
    // Recycled fibers. Only the owner pushes and pops; other threads may only
    // take the whole list (exchange with nullptr), which rules out ABA.
    alignas(64) std::atomic<Fiber*> free_queue{nullptr};

    // While tracing, held by whoever changes this thread's queue word or
    // run_next (the owner's pops, pushes and emptying, a hand-off, a thief)
    // across its look, its clock read and its CAS (TraceWordGuard,
    // queue.hpp): a CAS from a value seen before the clock read can
    // otherwise succeed after the value changed and came back (a word
    // emptied, filled and emptied again; a recycled fiber in run_next
    // again), and its record would be stamped before changes it came after.
    // Untraced, nobody touches it.
    alignas(64) std::atomic<bool> trace_word_lock{false};

    // The thread's way to the kernel and to the other threads (io/driver.hpp):
    // wake-ups, parking, completions, on whichever backend the loop chose.
    alignas(64) Driver driver;
    // The scaling policy: set by a thread that woke this one to search
    // (wakeToSearch in scheduler/schedule.cpp) and counted it in Loop::searching;
    // the owner clears it, and uncounts it, when it wakes.
    std::atomic<bool> search_token{false};
    // Set by the worker's own thread the first time it parks, after its
    // park record, or runs a fiber (thread 0's at creation): it has started,
    // and settled into its scheduling loop. EventLoop::startWorkers waits
    // for it, so that work that comes after finds each worker idle and
    // parked, not still in its first search.
    std::atomic<bool> settled{false};

    // Deadlines of timed sync waits parked from this thread (sync/timers.hpp;
    // any thread may withdraw one, under the list's mutex).
    SyncTimers sync_timers;

    std::thread os_thread;

    // The fields only this worker's own OS thread touches, and so plain, not
    // atomic: reached through own(), which checks the caller in checked
    // builds (FIBERSCOPE_CHECK_OWNER, set by the sanitizer builds, so the
    // whole suite under ASan and TSan tests the claim).
    struct Owned {
        // Round-robin cursors of the idle search, the ready steal and the
        // free steal (scheduler/victims.hpp).
        unsigned idle_search_index = 0;
        unsigned steal_ready_search_index = 0;
        unsigned steal_free_search_index = 0;
        // The scaling policy: whether this thread's bit is set in the loop's
        // idle set (Loop::idle_set), so that clearing it costs no atomic
        // read-modify-write when it was not set.
        bool in_idle_set = false;
        // An exit message was reaped by pollDriver: the idle loop returns
        // next time.
        bool exit_seen = false;
        // Thread::settled is set (said once, so the idle loop's check is a
        // plain read).
        bool settled = false;
        // Yields since the driver was last polled from a fiber.
        unsigned yields_since_poll = 0;
        // A one-worker loop of the scaling policy: yieldAlone (switch.cpp)
        // found no new work queued, and nothing has been scheduled since.
        // On such a loop every write that puts a fiber in run_next, the
        // queue word, the WorkDeque or the overflow list is made by
        // schedule() or scheduleSpawned() on this thread, its only one, and
        // both clear it (a fiber run without them, as a mutex's hand-off or
        // a finisher's switch to its awaiter, goes in none of the four); so
        // while it is set the four are still empty, and a yield need not
        // look at them again. (With the inlined thread lookup in
        // EventLoop::yield, a yield took ~16 % less time: paired runs,
        // issue 15.)
        bool no_new_work = false;
        // Fibers of this thread waiting for an abandonable blocking-pool
        // task (blocking_pool.cpp), a list through nodes on their stacks.
        PoolWait* pool_waits = nullptr;
        // While tracing: the timestamp of the decision under way on this
        // thread (a switch and the pending task its receiver performs, a
        // spawn), shared by its records; 0 outside a decision.
        std::uint64_t trace_time = 0;
        // While tracing: when we took the fiber the next switch runs from a
        // queue word, ours (popOwn) or another thread's (stealReadyFrom),
        // read under that word's trace lock, or claimed it as a finishing
        // fiber's awaiter (finishFiber, before the claim), so that the switch
        // (and a truth record) tell the take before any later change of
        // either word, or another finisher's lost claim. Stamped later, a
        // hand-off to the word the take left empty, then a steal of it back,
        // would be read as taking our fiber along (a steal's record names
        // only the list's head, and the trace cannot know the fiber left
        // the list until we switch to it). Only the next switch, to the
        // fiber taken, may consume it: whoever pops or steals must switch
        // to what it took before writing any other record. 0 when the next
        // switch's fiber came from elsewhere, or from a steal during a
        // scaling search (whose end record comes first: search.cpp).
        std::uint64_t taken_at = 0;
        // The scaling policy: schedule decisions since the loop's overflow
        // list was last looked at first (findReadyFiber), for fairness.
        std::uint32_t schedule_tick = 0;
        // The scaling policy's block of fiber ids, [next_fiber_id,
        // fiber_id_limit), taken from Loop::next_fiber_id (fiber.cpp).
        std::uint64_t next_fiber_id = 0;
        std::uint64_t fiber_id_limit = 0;
    };
    // The owner's fields; the caller must run on this worker.
    Owned& own() noexcept {
#if FIBERSCOPE_CHECK_OWNER
        checkOwner();
#endif
        return owned_;
    }
    // Before the worker runs: the thread that starts it sets them up.
    void resetOwned() noexcept { owned_ = Owned{}; }

    bool runningFiber() const noexcept { return current_context != &idle_context; }
    Fiber* currentFiber() const noexcept { return Fiber::fromContext(current_context); }

private:
    // Aborts, naming the worker, when the calling thread is not its owner.
    void checkOwner() const noexcept;
    Owned owned_;
};

// The worker the caller runs on (nullptr outside any loop). Not inlined, so
// the compiler never reuses a thread-local address across a context switch,
// after which the fiber may be on another OS thread.
Thread* currentThread() noexcept;
void setCurrentThread(Thread* thread) noexcept;
// What currentThread() reads. constinit: no dynamic initialiser, so a
// reader outside worker.cpp loads it directly instead of calling a TLS
// wrapper.
extern thread_local constinit Thread* t_current_thread;
// currentThread() inlined, for a caller that reads it once on the way in,
// before any switch, and is itself never inlined (EventLoop::yield): then
// the thread-local address it reads through is computed afresh on every
// call and cannot be stale. Saves a call on every yield.
inline Thread* currentThreadOnEntry() noexcept { return t_current_thread; }
// A stable name for worker `index` ("worker 3"), for the trace.
const char* workerName(unsigned index) noexcept;

// The idle loop: run ready fibers; when none, park in the driver,
// turn completions into ready fibers, schedule them. Returns on `exit`.
void idle(Thread& thread);
// Submits queued I/O and reaps completions without waiting, from a fiber
// that keeps its thread busy (EventLoop::yield): without it a thread whose
// ready queue never empties would never enter the kernel, and the I/O its
// fibers queued would never start. Completed fibers are scheduled.
void pollDriver(Thread& thread);
// The driver's reaper (Driver::setReaper): turns waiting completions into
// scheduled fibers without submitting. `thread` is a Thread*.
void reapCompletions(void* thread);
// Entry of worker threads 1..N-1.
void workerMain(Loop* loop, unsigned index);

} // namespace fiberscope::detail
