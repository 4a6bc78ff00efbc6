// BlockingPool: see blocking_pool.hpp. This file also holds the protocol of
// abandonable tasks (PoolTask), which lets a cancel wake a fiber waiting for
// work that cannot be interrupted (getaddrinfo), on either backend.
//
// The parties: the fiber F, its owner thread T (the worker F parked on; its
// ring or poller carries every message about the wait), a pool thread P,
// and a canceler C (any thread).
//
//  1. F, running on T, enters a cancel region naming T (cancel.hpp), links
//     a PoolWait node (on its own stack) into T.pool_waits, fills in the
//     heap task (owner T, fiber F), queues it and switches away. Only T
//     touches T.pool_waits, and T's idle loop runs only once F is off T.
//  2. P takes the task, runs it (getaddrinfo), stores the result in the
//     task and CASes task.state pending -> done. Winning, P records the
//     completion in the trace and hands the task to T: an IORING_OP_MSG_RING
//     from P's own small ring into T's ring, user_data = task | kPoolDoneTag
//     (only T may submit to T's ring, so P cannot post any other way), or on
//     epoll an entry in T's poller mailbox. After that P touches nothing of
//     the task. T, reaping the message, unlinks F's PoolWait and schedules F
//     with the result (Completion::flags kPoolTaskDone); F reads the
//     outputs and frees the task.
//  3. C cancels F: cancel.hpp's protocol finds F in a region naming T and
//     sends T a cancel message (MSG_RING with kCancelTag, or the poller's
//     mailbox), as for a ring operation. T looks F up in T.pool_waits and
//     CASes the task's state pending -> abandoned. Winning, T unlinks the
//     PoolWait and schedules F with -ECANCELED at once, without waiting for
//     P; from then on only P may touch the task. When P's run() returns,
//     P's CAS fails, and P frees the task: the late result is dropped, and
//     no one writes to F's stack, which F has long left. (A task abandoned
//     while still queued is freed unrun.) Losing the CAS (P finished
//     first), T does nothing: P's done message is on its way and wakes F
//     with the real result, and the cancel stays pending for F's next
//     cancel point, as when a ring operation wins its race with a cancel.
//
// Why it is safe: the task's state changes once, from pending, and the CAS
// that changes it names the task's one owner from then on (the fiber for
// done, the pool for abandoned). A done message is sent only by the winner
// of pending -> done, so it always finds F still waiting and the task
// alive. The PoolWait node is unlinked by T before F is scheduled, and T
// is the only thread that reads T.pool_waits, so a late cancel message (F
// already woken) finds no node and falls through to cancel.hpp's handling.
// A cancel message for a fiber inside a CancelProtection scope is ignored
// here as for ring operations (scheduler/worker.cpp, poller.cpp check first).
//
// The pool is torn down with the loop, after every fiber has finished: any
// task left is abandoned, and a pool thread still inside one's run() is
// detached, holding the pool's shared state alive until it returns.
#include "io/epoll/blocking_pool.hpp"

#include <liburing.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/cancel.hpp"
#include "support/errors.hpp"
#include "loop.hpp"
#include "scheduler/scheduler.hpp"
#include "io/syscall_io.hpp"
#include "scheduler/worker.hpp"
#include "support/tracing.hpp"

namespace fiberscope::detail {

// F's node in T.pool_waits (step 1), on F's stack while it waits.
struct PoolWait {
    Fiber* fiber = nullptr;
    PoolTask* task = nullptr;
    PoolWait* prev = nullptr;
    PoolWait* next = nullptr;
};

// Trace thread numbers of pool threads: past any worker's.
static constexpr unsigned kPoolTraceIndex = 2000;

static const char* poolThreadName(unsigned index) {
    static const char* const names[BlockingPool::kMaxThreads] = {"blocking pool 0", "blocking pool 1",
                                                                 "blocking pool 2", "blocking pool 3"};
    return names[index < BlockingPool::kMaxThreads ? index : 0];
}

static void sleepMilliseconds(long ms) {
    timespec delay{ms / 1000, (ms % 1000) * 1'000'000};
    while (nanosleep(&delay, &delay) != 0 && errno == EINTR) {
    }
}

// A pool thread's own ring, opened when it first finishes a task for an
// io_uring loop: its only use is the MSG_RING of step 2.
namespace {
class PoolRing {
public:
    PoolRing() = default;
    PoolRing(const PoolRing&) = delete;
    PoolRing& operator=(const PoolRing&) = delete;
    ~PoolRing() {
        if (open_) io_uring_queue_exit(&ring_);
    }

    bool open() {
        if (!open_) {
            open_ = io_uring_queue_init(4, &ring_, 0) == 0;
            if (open_) unpoisonRingMemory(ring_);
        }
        return open_;
    }

    // Posts the completion {user_data, result} into the ring `target_fd`,
    // exactly once: each attempt waits for its own outcome before the next.
    void send(int target_fd, std::uint64_t user_data, std::int32_t result) {
        for (unsigned attempt = 0;; ++attempt) {
            io_uring_sqe* sqe = io_uring_get_sqe(&ring_); // one entry in flight at most: never null
            io_uring_prep_msg_ring(sqe, target_fd, static_cast<unsigned>(result), user_data, 0);
            sqe->user_data = 0;
            // A failed submission leaves the entry queued: submit it again,
            // never a second copy.
            for (unsigned tries = 0;; ++tries) {
                const int submitted = io_uring_submit(&ring_);
                if (submitted == 1) break;
                if (submitted < 0 && submitted != -EINTR && submitted != -EAGAIN && submitted != -EBUSY &&
                    submitted != -ENOMEM)
                    fatal("a blocking-pool thread could not submit to its io_uring", -submitted);
                sleepMilliseconds(tries < 10 ? 1 : 10);
            }
            io_uring_cqe* cqe = nullptr;
            int waited;
            while ((waited = io_uring_wait_cqe(&ring_, &cqe)) != 0)
                if (waited != -EINTR && waited != -EAGAIN) fatal("a blocking-pool thread could not reap its io_uring", -waited);
            const int res = cqe->res;
            io_uring_cqe_seen(&ring_, cqe);
            if (res >= 0) return;
            // EOVERFLOW: the target's completion queue is full and the
            // kernel could not queue one more; ENOMEM likewise. Both pass.
            if (res != -EOVERFLOW && res != -ENOMEM && res != -EAGAIN && res != -EINTR)
                fatal("a blocking-pool thread could not message a worker's io_uring", -res);
            if (attempt == 100)
                std::fprintf(stderr, "fiberscope: a worker's io_uring keeps refusing a finished blocking-pool task "
                                     "(%s); still trying\n",
                             std::strerror(-res));
            sleepMilliseconds(attempt < 10 ? 1 : 10);
        }
    }

private:
    io_uring ring_{};
    bool open_ = false;
};
} // namespace

static void linkWait(Thread& thread, PoolWait& wait) {
    wait.prev = nullptr;
    wait.next = thread.own().pool_waits;
    if (wait.next) wait.next->prev = &wait;
    thread.own().pool_waits = &wait;
}

static void unlinkWait(Thread& thread, PoolWait& wait) {
    if (wait.prev) wait.prev->next = wait.next;
    else thread.own().pool_waits = wait.next;
    if (wait.next) wait.next->prev = wait.prev;
    wait.prev = wait.next = nullptr;
}

Result<PoolTask*> runPoolTask(PoolTask* task) {
    Thread* thread = currentThread();
    if (!thread) {
        delete task;
        return Error{Errc::NotOnLoopThread, 0};
    }
    Fiber* fiber = thread->currentFiber();
    if (auto entered = enterCancelRegion(fiber, thread); !entered) {
        delete task;
        return entered.error();
    }
    task->owner = thread;
    task->fiber = fiber;
    task->fiber_id = fiber->id;
    task->uses_ring = thread->driver.backend() == IoBackend::io_uring;
    PoolWait wait;
    wait.fiber = fiber;
    wait.task = task;
    task->wait = &wait;
    linkWait(*thread, wait);
    fiber->last_opcode = task->opcode;
    FIBERSCOPE_TRACE_EVENT(emit::submit(now, fiber->id, task->opcode, -1));
    if (!thread->loop->blocking_pool.submitTask(task)) {
        // No pool thread at all: run it here, blocking this worker (all we
        // can do), uncancelable.
        unlinkWait(*thread, wait);
        exitCancelRegion(fiber, thread);
        task->result = task->run();
        task->state.store(PoolTask::done, std::memory_order_relaxed); // one thread: no ordering needed
        FIBERSCOPE_TRACE_EVENT(emit::complete(now, fiber->id, task->opcode, task->result));
        return task;
    }
    yield(nullptr, PendingTask::nothing, trace::SwitchReason::IoWait);
    // `thread` is the owner, which the region named (we may run elsewhere now).
    exitCancelRegion(fiber, thread);
    if (!(fiber->completion.flags & kPoolTaskDone)) return Error{Errc::Canceled, ECANCELED};
    // acquire: pairs with the pool thread's CAS to done, after which it
    // wrote nothing: the outputs are ours to read (the MSG_RING that woke
    // us orders nothing the language knows of).
    (void)task->state.load(std::memory_order_acquire);
    return task;
}

void poolTaskDone(PoolTask* task, Fiber*& next, FiberQueue& queue) {
    Thread& thread = *currentThread();
    // acquire: as in runPoolTask, for task->result.
    (void)task->state.load(std::memory_order_acquire);
    unlinkWait(thread, *task->wait);
    Fiber* fiber = task->fiber;
    fiber->completion = {task->result, kPoolTaskDone};
    queue.gather(next, fiber);
}

bool cancelPoolWait(Fiber* fiber, Fiber*& next, FiberQueue& queue, unsigned& readied) {
    Thread& thread = *currentThread();
    PoolWait* wait = thread.own().pool_waits;
    while (wait && wait->fiber != fiber) wait = wait->next;
    if (!wait) return false;
    std::uint8_t expected = PoolTask::pending;
    // acq_rel: release hands the task to the pool thread (its failed CAS
    // acquires, then frees it); acquire pairs with its CAS when it won.
    if (!wait->task->state.compare_exchange_strong(expected, PoolTask::abandoned, std::memory_order_acq_rel,
                                                   std::memory_order_acquire))
        return true; // done first: its message wakes the fiber (step 3)
    // The task is the pool's now: not touched again here.
    unlinkWait(thread, *wait);
    FIBERSCOPE_TRACE_EVENT(emit::cancelDelivered(now, fiber->id);
                           emit::complete(now, fiber->id, fiber->last_opcode, -ECANCELED));
    fiber->completion = {-ECANCELED, 0};
    queue.gather(next, fiber);
    ++readied;
    return true;
}

// --- the pool -------------------------------------------------------------------

BlockingPool::BlockingPool() : shared_(std::make_shared<Shared>()) {}

BlockingPool::~BlockingPool() {
    bool detach[kMaxThreads] = {};
    {
        std::lock_guard lock(shared_->mutex);
        shared_->stopping = true;
        for (std::size_t i = 0; i < threads_.size(); ++i) detach[i] = shared_->detached[i] = shared_->in_task[i];
    }
    shared_->work.notify_all();
    for (std::size_t i = 0; i < threads_.size(); ++i) {
        if (detach[i]) threads_[i].detach();
        else threads_[i].join();
    }
}

void BlockingPool::growLocked(bool wanted) {
    Shared& s = *shared_;
    if (!wanted || threads_.size() >= kMaxThreads) return;
    if (s.retry_at != 0 && monotonicNanoseconds() < s.retry_at) return;
    try {
        threads_.emplace_back(&BlockingPool::run, shared_, static_cast<unsigned>(threads_.size()));
        s.retry_at = 0;
    } catch (const std::exception& e) {
        // Said once, and not retried for a second: at the limit every file
        // operation would otherwise fail a thread start and log.
        s.retry_at = monotonicNanoseconds() + 1'000'000'000;
        if (!s.told) {
            s.told = true;
            std::fprintf(stderr, "fiberscope: cannot start a blocking-pool thread (%s); continuing with %zu "
                                 "(with none, file operations and name lookups run inline; said once per loop)\n",
                         e.what(), threads_.size());
        }
    }
}

void BlockingPool::submit(const Operation& op, Fiber* fiber, Thread* owner) {
    std::unique_lock lock(shared_->mutex);
    shared_->jobs.push_back(Job{op, fiber, owner});
    growLocked(shared_->idle == 0);
    if (threads_.empty()) {
        // The jobs still run, on the threads we have; with none at all, run
        // this one here (blocking this worker, which is all we can do).
        Job job = shared_->jobs.back();
        shared_->jobs.pop_back();
        lock.unlock();
        job.fiber->completion = {performSyscall(job.op), 0};
        job.owner->driver.poller.postDone(job.fiber);
        return;
    }
    lock.unlock();
    shared_->work.notify_one();
}

bool BlockingPool::submitTask(PoolTask* task) {
    std::unique_lock lock(shared_->mutex);
    Shared& s = *shared_;
    // A thread more if the queued tasks that may start now outnumber the
    // idle threads (an idle thread already notified still counts as idle:
    // counting queued tasks keeps lookups from queuing behind one thread).
    const unsigned room = kMaxTaskThreads > s.running_tasks ? kMaxTaskThreads - s.running_tasks : 0;
    growLocked(std::min(s.queued_tasks + 1, room) > s.idle);
    if (threads_.empty()) return false;
    task->queue_next = nullptr;
    if (s.tasks_tail) s.tasks_tail->queue_next = task;
    else s.tasks_head = task;
    s.tasks_tail = task;
    ++s.queued_tasks;
    lock.unlock();
    shared_->work.notify_one();
    return true;
}

// Runs a task on pool thread `ring`'s owner and hands it over (step 2), or
// frees it if it was abandoned (step 3).
static void runTask(PoolTask* task, PoolRing& ring) {
    const bool uses_ring = task->uses_ring;
    if (uses_ring && !ring.open()) {
        // No ring, no way to tell the owner (EMFILE, ENOMEM): wait for one,
        // while the task can still be abandoned.
        static std::atomic<bool> told{false};
        // relaxed: only one thread must win the exchange.
        if (!told.exchange(true, std::memory_order_relaxed))
            std::fprintf(stderr, "fiberscope: a blocking-pool thread cannot create its io_uring (%s); its name "
                                 "lookup waits until it can (said once)\n",
                         std::strerror(errno));
        while (!ring.open()) {
            // acquire: the owner's abandoning CAS hands the task to us.
            if (task->state.load(std::memory_order_acquire) == PoolTask::abandoned) {
                delete task;
                return;
            }
            sleepMilliseconds(10);
        }
    }
    const int result = task->run();
    task->result = result;
    // Everything the hand-over needs is read now: once the CAS below wins,
    // the fiber may be woken (by the message) and free the task, and only
    // this CAS's release orders our reads before that.
    Thread* const owner = task->owner;
    const std::uint64_t fiber_id = task->fiber_id;
    const std::uint8_t opcode = task->opcode;
    std::uint8_t expected = PoolTask::pending;
    // acq_rel: release publishes the result and outputs to the fiber (and
    // the owner); acquire, when the owner abandoned it, orders its last
    // touch before our delete.
    if (!task->state.compare_exchange_strong(expected, PoolTask::done, std::memory_order_acq_rel,
                                             std::memory_order_acquire)) {
        delete task;
        return;
    }
    FIBERSCOPE_TRACE_EVENT(emit::complete(now, fiber_id, opcode, result));
    // The hand-over: the task is the fiber's now (only its address is used).
    if (uses_ring) ring.send(owner->driver.ring.fd(), reinterpret_cast<std::uint64_t>(task) | kPoolDoneTag, result);
    else owner->driver.poller.postTaskDone(task);
}

void BlockingPool::run(std::shared_ptr<Shared> shared, unsigned index) {
    FIBERSCOPE_TRACE_EVENT(emit::threadStart(now, kPoolTraceIndex + index, poolThreadName(index)));
    PoolRing ring;
    Shared& s = *shared;
    std::unique_lock lock(s.mutex);
    for (;;) {
        if (!s.jobs.empty()) {
            Job job = s.jobs.front();
            s.jobs.pop_front();
            lock.unlock();
            const int result = performSyscall(job.op);
            FIBERSCOPE_TRACE_EVENT(emit::complete(now, job.fiber->id, job.op.opcode, result));
            job.fiber->completion = {result, 0};
            // The mailbox's mutex orders our writes before the owner's reads.
            job.owner->driver.poller.postDone(job.fiber);
            lock.lock();
            continue;
        }
        if (PoolTask* task = s.tasks_head) {
            // acquire: as in runTask, an abandoned task is ours to free.
            const bool abandoned = task->state.load(std::memory_order_acquire) == PoolTask::abandoned;
            if (abandoned || s.running_tasks < kMaxTaskThreads || s.stopping) {
                s.tasks_head = task->queue_next;
                if (!s.tasks_head) s.tasks_tail = nullptr;
                --s.queued_tasks;
                if (abandoned) {
                    // Canceled while queued: nothing to run, nobody to tell.
                    lock.unlock();
                    delete task;
                    lock.lock();
                    continue;
                }
                ++s.running_tasks;
                s.in_task[index] = true;
                lock.unlock();
                runTask(task, ring);
                lock.lock();
                --s.running_tasks;
                s.in_task[index] = false;
                // The pool is gone (its loop too): leave without a word, not
                // even to the trace, which may be gone as well.
                if (s.detached[index]) return;
                continue;
            }
        }
        if (s.stopping) break;
        ++s.idle;
        s.work.wait(lock);
        --s.idle;
    }
    lock.unlock();
    FIBERSCOPE_TRACE_EVENT(emit::threadStop(now));
}

} // namespace fiberscope::detail
