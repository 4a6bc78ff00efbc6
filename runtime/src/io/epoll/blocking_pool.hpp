// BlockingPool: a few threads for work that would block a worker thread.
//
// Two kinds of job:
//   file jobs  (epoll backend) regular-file operations. epoll cannot wait
//              for a regular file (it is always "ready", and a read of a
//              slow disk still blocks), so the fiber hands the syscall to a
//              pool thread and switches away; the pool thread runs it,
//              stores the result in the fiber, and posts the fiber back to
//              the thread it came from (Poller::postDone), whose idle loop
//              schedules it. Not interruptible: the fiber waits for it.
//   tasks      (either backend) work that may take long and cannot be
//              interrupted, getaddrinfo above all. A PoolTask lives on the
//              heap and owns its inputs and outputs, so a cancel wakes the
//              waiting fiber at once and the task finishes on its own, its
//              result dropped. blocking_pool.cpp has the protocol.
//
// Threads start on demand, up to kMaxThreads; at most kMaxTaskThreads of
// them run tasks at once, so that lookups stuck on a silent name server
// never hold back file I/O. They appear in the trace as "blocking pool N",
// where the operation's completion is recorded.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "fiberscope/result.hpp"
#include "io/operation.hpp"

namespace fiberscope::detail {

struct Thread;
struct PoolWait;

// An abandonable job: derive, put the inputs and outputs in the derived
// class, implement run(). See runPoolTask.
struct PoolTask {
    enum State : std::uint8_t { pending, done, abandoned };

    PoolTask() = default;
    PoolTask(const PoolTask&) = delete;
    PoolTask& operator=(const PoolTask&) = delete;
    virtual ~PoolTask() = default;
    // On a pool thread: does the work, leaving its outputs in the task.
    // Returns what the trace records as the operation's result.
    virtual int run() noexcept = 0;

    // The trace's opcode for it.
    std::uint8_t opcode = 0;
    // Filled in by runPoolTask before the task is queued (the pool's mutex
    // publishes them to the pool thread).
    Thread* owner = nullptr;
    Fiber* fiber = nullptr;
    std::uint64_t fiber_id = 0;
    bool uses_ring = false;
    PoolWait* wait = nullptr; // read by the owner only
    // run()'s return value, stored before `state` becomes done.
    int result = 0;
    // pending -> done (the pool thread, once run() returned) or
    // pending -> abandoned (the owner, for a cancel). The one CAS that wins
    // decides who frees the task: done, the waiting fiber; abandoned, the
    // pool thread.
    std::atomic<std::uint8_t> state{pending};
    // The pool's queue of tasks not started (under the pool's mutex).
    PoolTask* queue_next = nullptr;
};

// Completion::flags of a fiber woken because its task is done (a cancel
// wakes it with -ECANCELED and no flag).
inline constexpr std::uint32_t kPoolTaskDone = 1u << 31;

// Runs `task` (taken over) on the pool while the calling fiber waits: a
// cancel point. Returns the task, done and now the caller's to delete; or an
// Error (Canceled, NotOnLoopThread), the task then no longer the caller's.
// With no pool thread to be had, runs it right here.
Result<PoolTask*> runPoolTask(PoolTask* task);

// The owner's side, on the thread the fiber waits on (its idle loop, or a
// reaper): a pool thread says `task` is done (MSG_RING tagged kPoolDoneTag
// on io_uring, the poller's mailbox on epoll): wake its fiber.
void poolTaskDone(PoolTask* task, Fiber*& next, FiberQueue& queue);
// A cancel message for `fiber`: false if it waits for no task here. Else
// the message is handled: the fiber is woken with -ECANCELED (`readied`
// counts it), or its task finished first and the done message will wake
// it with the result.
bool cancelPoolWait(Fiber* fiber, Fiber*& next, FiberQueue& queue, unsigned& readied);

class BlockingPool {
public:
    static constexpr unsigned kMaxThreads = 4;
    static constexpr unsigned kMaxTaskThreads = 3;

    BlockingPool();
    BlockingPool(const BlockingPool&) = delete;
    BlockingPool& operator=(const BlockingPool&) = delete;
    // Finishes queued file jobs, frees abandoned tasks and joins the
    // threads; a thread still inside an abandoned task's run() (a lookup
    // waiting for its name server) is left to finish alone, detached, so
    // that destroying a loop never waits for a name server.
    ~BlockingPool();

    // Runs `op` on a pool thread, then posts `fiber` to `owner`. `op`'s
    // buffers must stay valid until then (they are on the fiber's stack).
    void submit(const Operation& op, Fiber* fiber, Thread* owner);
    // Queues `task` (see runPoolTask). false when there is no pool thread
    // and none can be started: nothing was queued.
    bool submitTask(PoolTask* task);

private:
    struct Job {
        Operation op;
        Fiber* fiber;
        Thread* owner;
    };
    // What the pool's threads share with it: a thread left running an
    // abandoned task keeps it alive past the pool.
    struct Shared {
        std::mutex mutex;
        std::condition_variable work;
        std::deque<Job> jobs;
        PoolTask* tasks_head = nullptr;
        PoolTask* tasks_tail = nullptr;
        unsigned queued_tasks = 0;
        unsigned idle = 0;
        unsigned running_tasks = 0;
        bool stopping = false;
        bool in_task[kMaxThreads] = {};
        bool detached[kMaxThreads] = {};
        // After a thread failed to start (ulimit -v, ulimit -u): no new one
        // is tried before this CLOCK_MONOTONIC time, and the failure is
        // said once.
        std::int64_t retry_at = 0;
        bool told = false;
    };
    static void run(std::shared_ptr<Shared> shared, unsigned index);
    // Under the mutex: starts a thread if `wanted` and there is room.
    void growLocked(bool wanted);

    std::shared_ptr<Shared> shared_;
    std::vector<std::thread> threads_; // under shared_->mutex
};

} // namespace fiberscope::detail
