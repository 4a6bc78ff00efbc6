// The driver: a worker's way to the kernel, and the workers' way to each
// other. The one place the I/O backend is chosen.
//
// The scheduler (scheduler/) decides which thread runs which fiber; it needs
// four things from below, and asks for them without knowing how they are
// done:
//   wake(target)   a thread that handed `target` work makes it leave park();
//   park(...)      an idle thread waits for completions, wake-ups or its
//                  nearest deadline, and gets the fibers that became ready;
//   reap(...)      the same without waiting, for a thread kept busy;
//   flush()        queued requests go to the kernel now.
// Two backends do them (EventLoopOptions::backend, fixed at creation):
//   io_uring  one ring per worker (io/uring/ring.hpp); a wake-up, a cancel
//             request and an exit are MSG_RING completions posted into the
//             target's ring; park() is io_uring_enter waiting for one CQE.
//   epoll     one epoll instance and eventfd per worker (io/epoll/poller.hpp);
//             a wake-up is a write to the target's eventfd, a cancel request
//             and an exit go through its mailbox; park() is epoll_pwait2.
// Each call branches on the driver's backend (a field read, no virtual
// call): the branch is always the same for a loop, so it predicts perfectly.
#pragma once

#include <atomic>
#include <cstdint>

#include "fiber/fiber.hpp"
#include "fiberscope/event_loop.hpp"
#include "fiberscope/result.hpp"
#include "io/epoll/poller.hpp"
#include "io/operation.hpp"
#include "io/uring/ring.hpp"

namespace fiberscope::detail {

struct Thread;

class Driver {
public:
    // The creating thread's driver: opens the backend `wanted` names, and on
    // `automatic` falls back to epoll (saying so once per process) when the
    // kernel refuses io_uring. Probes the ring's opcodes into `opcodes`
    // (bit n: opcode n). `owner` is the worker this driver belongs to.
    Status openFirst(unsigned owner, const EventLoopOptions& options, IoBackend wanted, std::uint64_t& opcodes);
    // A further worker's driver, on the backend `first` chose; its ring
    // shares `first`'s kernel workers and stays disabled until start().
    // On failure, `what` says which setup failed (for the log line).
    Status openWorker(unsigned owner, const Driver& first, const EventLoopOptions& options, const char*& what);
    // Called when the kernel refuses a submission for lack of completion
    // space: must reap (the scheduler turns the completions into ready
    // fibers). The io_uring backend's; epoll never needs it.
    void setReaper(void (*reaper)(void*), void* context) noexcept { ring.setReaper(reaper, context); }
    // The owner, on its own OS thread, before it parks for the first time:
    // enables the ring and registers it with the thread; from then on the
    // driver takes wake-ups (started()).
    void start();
    // Whether start() ran: a wake-up, cancel or exit sent before may be
    // lost (deinit waits for every worker's).
    bool started() const noexcept {
        // acquire: pairs with start()'s release, so the ring's fd and state
        // are seen set up.
        return started_.load(std::memory_order_acquire);
    }
    void close() noexcept;

    IoBackend backend() const noexcept { return backend_; }

    // From the thread that owns this driver, to `target`'s owner.
    // Wakes it out of park() (it was handed work).
    void wake(Driver& target);
    // Makes its idle loop return (deinit).
    void sendExit(Driver& target);
    // Asks it to cancel `fiber`'s operation, which it holds (io/cancel.hpp).
    void sendCancel(Driver& target, Fiber* fiber);

    // Owner only.
    // Submits queued requests now.
    void flush() noexcept;
    // Whether requests wait to be submitted, or completions to be reaped
    // (a busy thread services its driver now and then: EventLoop::yield).
    // Inline: a yield asks every 8th time (yieldRunning, scheduler/switch.cpp).
    bool hasPendingWork() const noexcept {
        return backend_ == IoBackend::io_uring &&
               (ring.pendingSubmissions() || ring.pendingCompletions() || ring.kernelHoldsCompletions());
    }
    // Whether completions wait to be reaped (a searching thread stops).
    bool hasPendingCompletions() const noexcept;
    // Enters the kernel without waiting (io_uring runs deferred completion
    // work there, COOP_TASKRUN; a ring that reports such work enters only
    // when it waits or requests do), then reaps: the first ready fiber goes to
    // `next`, the rest onto `queue`; `exit` is set on an exit request.
    // Returns how many fibers it readied.
    unsigned reap(Fiber*& next, FiberQueue& queue, bool& exit);
    // The same without entering the kernel first (the ring's reaper).
    unsigned reapWaiting(Fiber*& next, FiberQueue& queue, bool& exit);
    // Waits until a completion, a wake-up or `deadline_ns` (CLOCK_MONOTONIC,
    // SyncTimers::kNone: none), then reaps as above.
    unsigned park(std::int64_t deadline_ns, Fiber*& next, FiberQueue& queue, bool& exit);
    // Runs `op` for the calling fiber, which runs on the owner (io/operation.hpp).
    Result<Completion> execute(const Operation& op, Thread* owner);

    // The backends' own state, for the code under io/ that speaks to one
    // (uring_io.cpp, poller.cpp, cancel.cpp, blocking_pool.cpp); the
    // scheduler never touches them. The other one stays closed.
    Ring ring;
    Poller poller;

private:

    IoBackend backend_ = IoBackend::io_uring;
    // The owner's worker index: a wake-up carries it, for the trace.
    unsigned index_ = 0;
    std::atomic<bool> started_{false};
};

} // namespace fiberscope::detail
