// BlockingPool: see blocking_pool.hpp.
#include "blocking_pool.hpp"

#include <cstdio>

#include "syscall_io.hpp"
#include "thread.hpp"
#include "tracing.hpp"

namespace fiberscope::detail {

// Trace thread numbers of pool threads: past any worker's.
static constexpr unsigned kPoolTraceIndex = 2000;

static const char* poolThreadName(unsigned index) {
    static const char* const names[BlockingPool::kMaxThreads] = {"blocking pool 0", "blocking pool 1",
                                                                 "blocking pool 2", "blocking pool 3"};
    return names[index < BlockingPool::kMaxThreads ? index : 0];
}

BlockingPool::~BlockingPool() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    work_.notify_all();
    for (std::thread& thread : threads_) thread.join();
}

void BlockingPool::submit(const Operation& op, Fiber* fiber, Thread* owner) {
    std::unique_lock lock(mutex_);
    jobs_.push_back(Job{op, fiber, owner});
    if (idle_ == 0 && threads_.size() < kMaxThreads && (retry_at_ == 0 || monotonicNanoseconds() >= retry_at_)) {
        try {
            threads_.emplace_back(&BlockingPool::run, this, static_cast<unsigned>(threads_.size()));
            retry_at_ = 0;
        } catch (const std::exception& e) {
            // Said once, and not retried for a second: at the limit every
            // file operation would otherwise fail a thread start and log.
            retry_at_ = monotonicNanoseconds() + 1'000'000'000;
            if (!told_) {
                told_ = true;
                std::fprintf(stderr, "fiberscope: cannot start a blocking-pool thread (%s); continuing with %zu "
                                     "(with none, file operations run inline; said once per loop)\n",
                             e.what(), threads_.size());
            }
        }
    }
    if (threads_.empty()) {
        // The jobs still run, on the threads we have; with none at all, run
        // this one here (blocking this worker, which is all we can do).
        Job job = jobs_.back();
        jobs_.pop_back();
        lock.unlock();
        job.fiber->completion = {performSyscall(job.op), 0};
        job.owner->poller.postDone(job.fiber);
        return;
    }
    lock.unlock();
    work_.notify_one();
}

void BlockingPool::run(unsigned index) {
    FIBERSCOPE_TRACE_EVENT(emit::threadStart(now, kPoolTraceIndex + index, poolThreadName(index)));
    std::unique_lock lock(mutex_);
    for (;;) {
        while (jobs_.empty() && !stopping_) {
            ++idle_;
            work_.wait(lock);
            --idle_;
        }
        if (jobs_.empty()) break;
        Job job = jobs_.front();
        jobs_.pop_front();
        lock.unlock();
        const int result = performSyscall(job.op);
        FIBERSCOPE_TRACE_EVENT(emit::complete(now, job.fiber->id, job.op.opcode, result));
        job.fiber->completion = {result, 0};
        // The mailbox's mutex orders our writes before the owner's reads.
        job.owner->poller.postDone(job.fiber);
        lock.lock();
    }
    lock.unlock();
    FIBERSCOPE_TRACE_EVENT(emit::threadStop(now));
}

} // namespace fiberscope::detail
