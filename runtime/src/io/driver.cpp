// The driver (driver.hpp): each call picks its backend here, and nowhere else.
#include "io/driver.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "io/cancel.hpp"
#include "io/epoll/blocking_pool.hpp"
#include "scheduler/worker.hpp"
#include "support/errors.hpp"
#include "support/tracing.hpp"
#include "sync/timers.hpp"

namespace fiberscope::detail {

Status Driver::openFirst(unsigned owner, const EventLoopOptions& options, IoBackend wanted, std::uint64_t& opcodes) {
    index_ = owner;
    backend_ = IoBackend::epoll;
    if (wanted != IoBackend::epoll) {
        // Created disabled, like every worker's ring, so that the probe walks
        // the workers' path too (enabling is an io_uring_register).
        const char* refused = "io_uring_setup";
        Status usable = ring.open(options.ring_entries, options.completion_entries, -1, true);
        if (usable) usable = ring.probe(opcodes, refused);
        if (usable) {
            backend_ = IoBackend::io_uring;
        } else if (wanted == IoBackend::io_uring || usable.error().code != Errc::IoUringUnavailable) {
            return usable.error();
        } else {
            ring.close();
            // The one line a user sees when their container refuses io_uring.
            // relaxed: only one thread must win the exchange; nothing else
            // is published through it.
            static std::atomic<bool> told{false};
            if (!told.exchange(true, std::memory_order_relaxed))
                std::fprintf(stderr, "fiberscope: the kernel refused io_uring (%s: %s); using the epoll backend instead\n",
                             refused, std::strerror(usable.error().sys_errno));
        }
    }
    if (backend_ == IoBackend::epoll)
        if (auto opened = poller.open(); !opened) return opened.error();
    // The creating thread owns this driver and no other thread exists yet
    // (relaxed): the probe enabled and registered the ring already.
    started_.store(true, std::memory_order_relaxed);
    return {};
}

Status Driver::openWorker(unsigned owner, const Driver& first, const EventLoopOptions& options, const char*& what) {
    index_ = owner;
    backend_ = first.backend_;
    if (backend_ == IoBackend::io_uring) {
        what = "io_uring setup failed";
        return ring.open(options.ring_entries, options.completion_entries, first.ring.fd(), true);
    }
    what = "epoll setup failed";
    return poller.open();
}

void Driver::start() {
    if (backend_ == IoBackend::io_uring) {
        if (auto enabled = ring.enable(); !enabled) fatal("enabling a worker's io_uring failed", enabled.error().sys_errno);
        ring.registerWithOwner();
    }
    // release: the ring (or poller) is set up before a thread that reads
    // started() with acquire sends it a wake-up, a cancel or an exit.
    started_.store(true, std::memory_order_release);
}

void Driver::close() noexcept {
    ring.close();
    poller.close();
}

void Driver::wake(Driver& target) {
    if (backend_ == IoBackend::epoll) {
        target.poller.wake(index_);
        return;
    }
    // The wake-up carries our index as its result, for the trace; if it
    // cannot be delivered, the failure comes back tagged with the target,
    // for the trace's wakeup-bounced record.
    ring.message(target.ring.fd(), static_cast<std::uint64_t>(RingTag::wakeup), static_cast<std::int32_t>(index_),
                 kWakeupBounceTag | (static_cast<std::uint64_t>(target.index_) << 8));
    // Wake it now rather than when this thread next goes idle.
    ring.submit();
}

void Driver::sendExit(Driver& target) {
    if (backend_ == IoBackend::epoll) target.poller.postExit();
    else ring.message(target.ring.fd(), static_cast<std::uint64_t>(RingTag::exit), 0);
}

void Driver::sendCancel(Driver& target, Fiber* fiber) {
    if (backend_ == IoBackend::epoll) {
        target.poller.postCancel(fiber);
        return;
    }
    ring.message(target.ring.fd(), reinterpret_cast<std::uint64_t>(fiber) | kCancelTag, -EINTR);
    ring.submit();
}

void Driver::flush() noexcept {
    if (backend_ == IoBackend::io_uring && ring.pendingSubmissions()) ring.submit();
}

bool Driver::hasPendingCompletions() const noexcept {
    return backend_ == IoBackend::io_uring && (ring.pendingCompletions() || ring.kernelHoldsCompletions());
}

// The io_uring backend's reaping: every waiting CQE becomes a ready fiber,
// or is one of the runtime's own messages (ring.hpp's RingTag).
static unsigned completionsToReady(Ring& ring, Fiber*& next, FiberQueue& queue, bool& exit) {
    unsigned total = 0;
    constexpr unsigned kBatch = 64;
    io_uring_cqe cqes[kBatch];
    for (;;) {
        const unsigned count = ring.drain(cqes, kBatch);
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
                // One of our own we need not act on (ring.hpp).
                continue;
            case RingTag::exit:
                exit = true;
                continue;
            }
            if (isWakeupBounce(cqe.user_data)) {
                // A wake-up we sent could not be delivered (the target's ring
                // is not enabled yet, or is closing): it finds its work by
                // itself when it starts. Recorded, so that the wake-up is not
                // shown pending forever.
                FIBERSCOPE_TRACE_EVENT(emit::wakeupBounced(now, cqe.user_data >> 8, cqe.res));
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
                const Thread* state = target->cancel_thread.load(std::memory_order_acquire);
                if (isProtected(state)) continue;
                // The message can also arrive after the fiber it was meant
                // for finished and its Fiber was reused by a new fiber (it
                // names the Fiber by address). Unless that new fiber has a
                // cancel pending too (its word kCanceling, which a canceled
                // fiber keeps outside protection scopes), it is left alone:
                // neither its operation nor the trace is touched. Seen as a
                // cancel-delivered of a fiber in an uncancelable wait,
                // 6.8 ms after its Fiber's previous fiber's cancel-request
                // (random programs). Still open: a late message for a fiber
                // canceled in this life, whose operation won the race and
                // which now waits uncancelably (a mutex while unwinding, a
                // close on this ring), is taken as delivered; telling that
                // apart needs the message to name the cancel region.
                if (state != kCanceling) continue;
                // Waiting for a blocking-pool task, not a ring operation.
                unsigned woken = 0;
                if (cancelPoolWait(target, next, queue, woken)) continue;
                FIBERSCOPE_TRACE_EVENT(emit::cancelDelivered(now, target->id));
                io_uring_sqe* sqe = ring.sqe();
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

unsigned Driver::reapWaiting(Fiber*& next, FiberQueue& queue, bool& exit) {
    if (backend_ == IoBackend::io_uring) return completionsToReady(ring, next, queue, exit);
    return poller.poll(false, next, queue, exit);
}

unsigned Driver::reap(Fiber*& next, FiberQueue& queue, bool& exit) {
    // Entering the kernel submits, and runs deferred completion work
    // (COOP_TASKRUN). A ring that reports that work enters only when there
    // is something to submit or the kernel says it holds completions: a
    // fiber that yields in a loop polls every 1024th yield (yieldRunning),
    // and an io_uring_enter with nothing to do was ~1 ns of each yield.
    if (backend_ == IoBackend::io_uring &&
        (!ring.reportsTaskWork() || ring.pendingSubmissions() || ring.kernelHoldsCompletions()))
        ring.submitAndGetEvents();
    return reapWaiting(next, queue, exit);
}

unsigned Driver::park(std::int64_t deadline_ns, Fiber*& next, FiberQueue& queue, bool& exit) {
    if (backend_ == IoBackend::epoll)
        return poller.poll(true, next, queue, exit, deadline_ns == SyncTimers::kNone ? -1 : deadline_ns);
    int result;
    if (deadline_ns == SyncTimers::kNone) result = ring.submitAndWait(1);
    else result = ring.submitAndWaitFor(1, std::max<std::int64_t>(deadline_ns - monotonicNanoseconds(), 0));
    if (result < 0 && result != -EINTR && result != -EBUSY && result != -EAGAIN && result != -ETIME)
        fatal("io_uring_enter (waiting for completions) failed", -result);
    return completionsToReady(ring, next, queue, exit);
}

Result<Completion> Driver::execute(const Operation& op, Thread* owner) {
    if (backend_ == IoBackend::io_uring) return uringExecute(op, owner);
    return pollerExecute(op, owner);
}

} // namespace fiberscope::detail
