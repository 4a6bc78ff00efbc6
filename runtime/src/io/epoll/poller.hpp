// Poller: the epoll backend's per-thread state (the seed's Kqueue backend,
// on Linux epoll). The scheduler is the same as on io_uring; what differs is
// how a fiber waits for the kernel and how threads reach each other:
//
//   operations  a non-blocking syscall; on EAGAIN the fiber parks on the
//               thread's wait queue for (fd, direction) and the idle loop's
//               epoll_wait reports readiness; then it retries. Every fiber
//               parked on one fd and direction is woken (the seed's
//               wait_queues), and each retries; losers park again.
//   timers      sleeps and per-operation Timeouts are deadlines in an
//               ordered map; the idle loop waits no longer than the nearest.
//   files       regular files are always "ready" to epoll (it refuses them),
//               so their reads and writes go to a BlockingPool thread.
//   wake-ups    other threads write to the thread's eventfd (the seed's
//               EVFILT_USER): to hand it work, to post a cancel request or a
//               finished pool job into its mailbox, or to make it exit.
//
// Everything but the mailbox is touched by the owning thread only: a fiber
// parks itself (registers its Waiter) before it switches away, on the thread
// it runs on, and only that thread's idle loop wakes it.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "fiber/fiber.hpp"
#include "fiberscope/result.hpp"
#include "io/operation.hpp"

namespace fiberscope::detail {

struct PoolTask;

// One parked fiber, on its own stack while it waits.
struct Waiter {
    Fiber* fiber = nullptr;
    int fd = -1;               // -1: a pure timer (sleep)
    std::uint32_t events = 0;  // EPOLLIN or EPOLLOUT
    Waiter* next = nullptr;    // in its fd's list for `events`
    Waiter* prev = nullptr;
    bool has_deadline = false;
    std::multimap<std::int64_t, Waiter*>::iterator deadline;
    // What woke it: the ready event mask (> 0), -ETIME (its deadline), or
    // -ECANCELED.
    int result = 0;
};

class Poller {
public:
    Poller() = default;
    Poller(const Poller&) = delete;
    Poller& operator=(const Poller&) = delete;
    ~Poller() { close(); }

    Status open();
    void close() noexcept;
    bool isOpen() const noexcept { return epoll_fd_ >= 0; }

    // From any thread: wake the owner (the hand-off's wake-up; `sender` is
    // the waking thread's index, for the trace), ask it to cancel `fiber`'s
    // wait, hand it a fiber whose pool job is done, or make it exit.
    void wake(unsigned sender) noexcept;
    void postCancel(Fiber* fiber);
    void postDone(Fiber* fiber);
    // A blocking-pool task a fiber parked here waits for is done (blocking_pool.cpp).
    void postTaskDone(PoolTask* task);
    void postExit() noexcept;

    // Owner only: park the calling fiber until `waiter` is woken, and return
    // waiter.result. `deadline_ns` (CLOCK_MONOTONIC, < 0: none) bounds it.
    int park(Waiter& waiter, std::int64_t deadline_ns);

    // Owner only: wait for events (up to the nearest deadline; not at all
    // with `block` false), and turn them into ready fibers: the first into
    // `next`, the rest onto `queue`. Sets `exit` on an exit request. Returns
    // how many fibers it readied.
    // `extra_deadline_ns` (CLOCK_MONOTONIC, < 0: none) also bounds the wait
    // (the thread's sync-wait deadlines).
    unsigned poll(bool block, Fiber*& next, FiberQueue& queue, bool& exit, std::int64_t extra_deadline_ns = -1);

    // Owner only: forget `fd` (it is being closed). Fibers still parked on it
    // are woken with an error event so that they retry and see EBADF.
    void forget(int fd) noexcept;


private:
    struct FdWaiters {
        Waiter* readers = nullptr;
        Waiter* writers = nullptr;
        bool added = false; // in the epoll set
    };
    void arm(int fd, FdWaiters& waiters);
    // Makes the owner's epoll_pwait2 return (the eventfd becomes readable).
    void signal() noexcept;
    void unlink(Waiter& waiter);
    void ready(Waiter& waiter, int result, Fiber*& next, FiberQueue& queue, unsigned& count);

    int epoll_fd_ = -1;
    int event_fd_ = -1;
    // false when open() found epoll_pwait2 missing or refused: epoll_wait.
    bool use_pwait2_ = true;
    std::unordered_map<int, FdWaiters> fds_;
    std::unordered_map<Fiber*, Waiter*> parked_;
    std::multimap<std::int64_t, Waiter*> deadlines_;

    std::mutex mailbox_mutex_;
    std::vector<Fiber*> cancels_;
    std::vector<Fiber*> done_;
    std::vector<PoolTask*> tasks_done_;
    bool exit_requested_ = false;
    // While tracing: the worker of each wake-up since the owner last
    // looked, in order (under mailbox_mutex_), so that each wakeup-sent has
    // its own wakeup-received naming its sender (writes to one eventfd
    // add up: one read cannot tell them apart).
    std::vector<unsigned> wake_senders_;
};

// CLOCK_MONOTONIC now, in nanoseconds.
std::int64_t monotonicNanoseconds() noexcept;

} // namespace fiberscope::detail
