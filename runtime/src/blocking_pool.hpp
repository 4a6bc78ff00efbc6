// BlockingPool: a few threads that run regular-file operations for the
// epoll backend. epoll cannot wait for a regular file (it is always
// "ready", and a read of a slow disk still blocks), so the fiber hands the
// syscall to a pool thread and switches away; the pool thread runs it,
// stores the result in the fiber, and posts the fiber back to the thread it
// came from (Poller::postDone), whose idle loop schedules it.
//
// Threads start on demand, up to kMaxThreads; they appear in the trace as
// "blocking pool N", where the operation's completion is recorded.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "operation.hpp"

namespace fiberscope::detail {

struct Thread;

class BlockingPool {
public:
    static constexpr unsigned kMaxThreads = 4;

    BlockingPool() = default;
    BlockingPool(const BlockingPool&) = delete;
    BlockingPool& operator=(const BlockingPool&) = delete;
    // Finishes queued jobs and joins the threads.
    ~BlockingPool();

    // Runs `op` on a pool thread, then posts `fiber` to `owner`. `op`'s
    // buffers must stay valid until then (they are on the fiber's stack).
    void submit(const Operation& op, Fiber* fiber, Thread* owner);

private:
    struct Job {
        Operation op;
        Fiber* fiber;
        Thread* owner;
    };
    void run(unsigned index);

    std::mutex mutex_;
    std::condition_variable work_;
    std::deque<Job> jobs_;
    std::vector<std::thread> threads_;
    unsigned idle_ = 0;
    bool stopping_ = false;
    // After a thread failed to start (ulimit -v, ulimit -u): no new one is
    // tried before this CLOCK_MONOTONIC time, and the failure is said once.
    std::int64_t retry_at_ = 0;
    bool told_ = false;
};

} // namespace fiberscope::detail
