// Worker threads and the idle loop (the seed's idle()/threadEntry()).
#include "scheduler/worker.hpp"

#include <pthread.h>

#include <cerrno>
#include <cstdio>

#include "io/epoll/blocking_pool.hpp"
#include "support/errors.hpp"
#include "fiber/stack_pool.hpp"
#include "io/cancel.hpp"
#include "loop.hpp"
#include "support/sanitizer.hpp"
#include "scheduler/scheduler.hpp"
#include "support/tracing.hpp"

#include <algorithm>
#include <array>
#include <string>

namespace fiberscope::detail {

static thread_local Thread* t_current = nullptr;

__attribute__((noinline)) Thread* currentThread() noexcept {
    // The asm barrier keeps the compiler from treating the TLS address as
    // constant across calls in a caller that was suspended in between.
    Thread* thread = t_current;
    asm volatile("" : "+r"(thread));
    return thread;
}

void setCurrentThread(Thread* thread) noexcept { t_current = thread; }

const char* workerName(unsigned index) noexcept {
    static const auto names = [] {
        std::array<std::string, 1025> all;
        for (std::size_t i = 0; i < all.size(); ++i) all[i] = "worker " + std::to_string(i);
        return all;
    }();
    return names[index < names.size() ? index : names.size() - 1].c_str();
}

std::uint64_t traceId(const Thread& thread, const Context* context) noexcept {
    if (context == &thread.idle_context) return 0;
    return Fiber::fromContext(const_cast<Context*>(context))->id;
}

static unsigned completionsToReady(Thread& thread, Fiber*& next, FiberQueue& queue, bool& exit) {
    unsigned total = 0;
    constexpr unsigned kBatch = 64;
    io_uring_cqe cqes[kBatch];
    for (;;) {
        const unsigned count = thread.ring.drain(cqes, kBatch);
        total += count;
        for (unsigned i = 0; i < count; ++i) {
            const io_uring_cqe& cqe = cqes[i];
            if (cqe.user_data == LIBURING_UDATA_TIMEOUT) continue; // submitAndWaitFor's own timer
            switch (static_cast<RingTag>(cqe.user_data)) {
            case RingTag::unused:
                continue;
            case RingTag::wakeup:
                // The work is already in our ready queue: the loop finds it.
                FIBERSCOPE_TRACE_EVENT(emit::wakeupReceived(now, static_cast<std::uint64_t>(cqe.res)));
                continue;
            case RingTag::cleanup:
                // A MSG_RING we sent could not be delivered (the target is
                // exiting or not yet enabled, and finds its queue by itself).
                continue;
            case RingTag::exit:
                exit = true;
                continue;
            }
            if (cqe.user_data & kCancelTag) {
                // Another thread canceled a fiber whose operation is in our
                // ring: cancel that operation (see cancel.hpp). The message
                // can arrive late, after that operation completed on its own
                // and the fiber entered a CancelProtection scope: its
                // operation in flight now is uncancelable, and the cancel
                // stays pending for the end of the scope. acquire: pairs
                // with the scope's entry (acq_rel CAS); the fiber is not
                // running here (our idle loop is), so it cannot enter one
                // with an operation on this ring before the cancel SQE goes out.
                auto* target = reinterpret_cast<Fiber*>(cqe.user_data & ~kCancelTag);
                if (isProtected(target->cancel_thread.load(std::memory_order_acquire))) continue;
                // Waiting for a blocking-pool task, not a ring operation.
                unsigned woken = 0;
                if (cancelPoolWait(target, next, queue, woken)) continue;
                FIBERSCOPE_TRACE_EVENT(emit::cancelDelivered(now, target->id));
                io_uring_sqe* sqe = thread.ring.sqe();
                io_uring_prep_cancel64(sqe, cqe.user_data & ~kCancelTag, 0);
                sqe->flags |= IOSQE_CQE_SKIP_SUCCESS;
                sqe->user_data = static_cast<std::uint64_t>(RingTag::cleanup);
                continue;
            }
            if (cqe.user_data & kPoolDoneTag) {
                // A pool thread finished a task one of our fibers waits for
                // (blocking_pool.cpp); it traced the completion itself.
                poolTaskDone(reinterpret_cast<PoolTask*>(cqe.user_data & ~kPoolDoneTag), next, queue);
                continue;
            }
            auto* fiber = reinterpret_cast<Fiber*>(cqe.user_data);
            fiber->completion = {cqe.res, cqe.flags};
            FIBERSCOPE_TRACE_EVENT(emit::complete(now, fiber->id, fiber->last_opcode, cqe.res));
            queue.gather(next, fiber);
        }
        if (count < kBatch) return total;
    }
}

// Fires the thread's passed sync-wait deadlines (sync/timers.hpp).
static unsigned expireSyncTimers(Thread& thread, Fiber*& next, FiberQueue& queue) {
    if (thread.sync_timers.nearest() == SyncTimers::kNone) return 0;
    return thread.sync_timers.expire(monotonicNanoseconds(), next, queue);
}

// Reaps without waiting (completions, or on epoll ready events) and
// schedules what became ready.
static void scheduleCompletions(Thread& thread) {
    Fiber* next = nullptr;
    FiberQueue queue{nullptr, nullptr};
    bool exit = false;
    if (thread.loop->usesRing()) completionsToReady(thread, next, queue, exit);
    else thread.poller.poll(false, next, queue, exit);
    expireSyncTimers(thread, next, queue);
    if (exit) thread.exit_seen = true;
    if (FiberQueue all = queue.withFirst(next); all.head) schedule(*thread.loop, thread, all);
}

void pollRing(Thread& thread) {
    thread.yields_since_poll = 0;
    // Entering the kernel also runs deferred completion work (COOP_TASKRUN).
    if (thread.loop->usesRing()) thread.ring.submitAndGetEvents();
    scheduleCompletions(thread);
}

void wakeThread(Thread& self, Thread& target) {
    if (!self.loop->usesRing()) {
        target.poller.wake(self.index);
        return;
    }
    // The wake-up carries our index as its result, for the trace.
    self.ring.message(target.ring.fd(), static_cast<std::uint64_t>(RingTag::wakeup), static_cast<std::int32_t>(self.index));
    // Wake it now rather than when this thread next goes idle.
    self.ring.submit();
}

void sendExit(Thread& self, Thread& target) {
    if (!self.loop->usesRing()) target.poller.postExit();
    else self.ring.message(target.ring.fd(), static_cast<std::uint64_t>(RingTag::exit), 0);
}

void sendCancel(Thread& self, Thread& target, Fiber* fiber) {
    if (!self.loop->usesRing()) {
        target.poller.postCancel(fiber);
        return;
    }
    self.ring.message(target.ring.fd(), reinterpret_cast<std::uint64_t>(fiber) | kCancelTag, -EINTR);
    self.ring.submit();
}

void reapCompletions(void* thread) { scheduleCompletions(*static_cast<Thread*>(thread)); }

void idle(Thread& thread) {
    Loop& loop = *thread.loop;
    Fiber* next = nullptr;
    for (;;) {
        while (next || (next = findReadyFiber(loop, thread))) {
            Fiber* fiber = next;
            next = nullptr;
            yield(fiber, PendingTask::nothing, trace::SwitchReason::Idle);
        }
        // The scaling policy searches before it parks (scheduler.cpp).
        if (loop.scaling() && (next = searchBeforePark(loop, thread))) continue;
        FIBERSCOPE_TRACE_EVENT(trace::flushIfStale(now); emit::park(now));
        FiberQueue queue{nullptr, nullptr};
        bool exit = false;
        unsigned readied;
        // A timed sync wait parked here bounds the wait (sync/timers.hpp).
        const std::int64_t deadline = thread.sync_timers.nearest();
        if (loop.usesRing()) {
            int result;
            if (deadline == SyncTimers::kNone) result = thread.ring.submitAndWait(1);
            else result = thread.ring.submitAndWaitFor(1, std::max<std::int64_t>(deadline - monotonicNanoseconds(), 0));
            if (result < 0 && result != -EINTR && result != -EBUSY && result != -EAGAIN && result != -ETIME)
                fatal("io_uring_enter (waiting for completions) failed", -result);
            readied = completionsToReady(thread, next, queue, exit);
        } else {
            readied = thread.poller.poll(true, next, queue, exit, deadline == SyncTimers::kNone ? -1 : deadline);
        }
        readied += expireSyncTimers(thread, next, queue);
        FIBERSCOPE_TRACE_EVENT(emit::unpark(now, readied));
        // Awake: no longer a hand-off target (a no-op unless parked by the
        // scaling policy's searchBeforePark).
        leaveIdleSet(loop, thread);
        if (queue.head) schedule(loop, thread, queue);
        if ((exit || thread.exit_seen) && !next) return;
    }
}

void workerMain(Loop* loop, unsigned index) {
    Thread& thread = loop->threads[index];
    setCurrentThread(&thread);
    thread.idle_context.tsan_fiber = tsanCurrentFiber();
    AltSignalStack alt_stack;
    if (loop->usesRing()) {
        if (auto enabled = thread.ring.enable(); !enabled) fatal("enabling a worker's io_uring failed", enabled.error().sys_errno);
        thread.ring.registerWithOwner();
    }
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void* base = nullptr;
        std::size_t size = 0;
        pthread_attr_getstack(&attr, &base, &size);
        thread.idle_context.stack_bottom = base;
        thread.idle_context.stack_size = size;
        pthread_attr_destroy(&attr);
    }
    // release: the ring can take MSG_RING now (deinit waits for this).
    thread.ring_ready.store(true, std::memory_order_release);
    FIBERSCOPE_TRACE_EVENT(emit::threadStart(now, index, workerName(index)));
    idle(thread);
    FIBERSCOPE_TRACE_EVENT(emit::threadStop(now));
    setCurrentThread(nullptr);
}

} // namespace fiberscope::detail
