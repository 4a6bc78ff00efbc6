// The loop's shared state (behind fiberscope::EventLoop): the thread table,
// the main fiber, the stack pool and the detached fibers.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "io/epoll/blocking_pool.hpp"
#include "fiber/fiber.hpp"
#include "fiber/stack_pool.hpp"
#include "fiberscope/event_loop.hpp"
#include "scheduler/worker.hpp"
#include "support/affinity.hpp"

namespace fiberscope::detail {

// The main thread's idle loop runs on its own small stack.
inline constexpr std::size_t kIdleStackSize = 256 * 1024;
// How many threads schedule() offers work to, and findReadyFiber() steals
// from, before giving up (the seeds' max_idle_search / max_steal_ready_search).
inline constexpr unsigned kMaxIdleSearch = 4;
inline constexpr unsigned kMaxStealReadySearch = 4;
inline constexpr unsigned kMaxStealFreeSearch = 4;
// Words of the scaling policy's idle set: one bit per possible worker
// (EventLoop::create allows at most 1024).
inline constexpr unsigned kMaxWorkers = 1024;
inline constexpr unsigned kIdleSetWords = kMaxWorkers / 64;

struct Loop {
    explicit Loop(const EventLoopOptions& options);
    ~Loop();

    EventLoopOptions options;
    EventLoop* facade = nullptr;

    // threads[0] is the creating thread. `reserved` counts slots claimed by
    // spawners, `active` slots whose Thread is fully initialised; slots below
    // `active` never change their shared fields again.
    std::unique_ptr<Thread[]> threads;
    unsigned allocated = 0;
    std::atomic<unsigned> reserved{1};
    // What ~EventLoop leaves in `reserved` so that no worker starts while
    // the loop shuts down (no spawner's CAS expects it).
    static constexpr unsigned kGrowthClosed = ~0u;
    std::atomic<unsigned> active{1};
    // After a worker failed to start (scheduler/grow.cpp, growFailed): no worker
    // is tried before `grow_retry_at` (CLOCK_MONOTONIC ns, 0: no back-off);
    // the back-off doubles while failures repeat, and the failure is said
    // once. Only the holder of the `reserved` slot writes the plain fields.
    std::atomic<std::int64_t> grow_retry_at{0};
    std::int64_t grow_backoff_ns = 0;
    bool told_grow_failure = false;
    // Fault injection for the tests (FIBERSCOPE_TEST_SPAWN_DELAY_US, read at
    // creation; 0 in any real use): spawnWorker sleeps this long between
    // starting a worker's thread and counting it in `active`, which widens
    // the window ~EventLoop must close (event_loop.cpp) from nanoseconds to
    // a sure thing.
    std::int64_t test_spawn_delay_ns = 0;

    // EventLoopOptions::pin_workers: the CPUs worker i is pinned to the
    // i-th of (round robin); empty: nobody is pinned. The creating thread's
    // own set, put back by ~EventLoop.
    std::vector<int> pin_cpus;
    SavedAffinity creator_affinity;

    // The creating thread's own stack, running as a fiber.
    Fiber main_fiber;
    char* main_idle_stack = nullptr; // mapping of kIdleStackSize + guard

    StackPool stacks;

    // Bit n set: the kernel's io_uring supports opcode n. Operations it lacks
    // (bind and listen before Linux 6.11, socket before 5.19) run as plain
    // syscalls, which never block for those three.
    std::uint64_t ring_opcodes = 0;

    // io_uring or epoll (never automatic), fixed at creation: what
    // EventLoop::backend() says and the trace's backend mark records. (Each
    // Driver keeps its own copy, io/driver.hpp, and the drivers are what
    // act on it; this one is read by EventLoop::backend(), the trace's
    // header and mark, and ioStats.)
    IoBackend backend = IoBackend::io_uring;
    // The scheduling policy (scheduler/scheduler.hpp), fixed at creation: schedule()
    // and the idle loop branch on it, no virtual call.
    SchedulerPolicy scheduler = SchedulerPolicy::scaling;
    bool scaling() const noexcept { return scheduler == SchedulerPolicy::scaling; }
    // The scaling policy's idle set: bit n set while worker n has published
    // itself parked (it searched, found nothing, and is about to wait in the
    // kernel). Only worker n sets or clears its bit; wakeToSearch reads the
    // set to pick a thread to wake. In lines of their own, away from every
    // thread's queue. Unused by the seed policy.
    alignas(64) std::atomic<std::uint64_t> idle_set[kIdleSetWords] = {};
    // The scaling policy's count of threads searching for work (stealing)
    // before they park: while it is nonzero, schedule() wakes nobody.
    alignas(64) std::atomic<unsigned> searching{0};
    // The scaling policy's overflow list (Go's global run queue): where a
    // worker whose RunQueue is full moves half of it. Everyone may take from
    // it (findReadyFiber); `overflow_count` is read without the lock as a
    // hint (written under it).
    alignas(64) std::mutex overflow_mutex;
    FiberQueue overflow{nullptr, nullptr};
    std::atomic<std::uint32_t> overflow_count{0};
    // The epoll backend's threads for regular-file I/O. Aligned so that it
    // (and the spawn-hot next_fiber_id below) stays off `searching`'s line.
    alignas(64) BlockingPool blocking_pool;

    // Detached fibers still running, for deinit to cancel and join.
    std::mutex detached_mutex;
    Fiber* detached_head = nullptr;

    // Fiber trace numbers: 0 is the idle context, 1 the main fiber.
    std::atomic<std::uint64_t> next_fiber_id{2};
};

} // namespace fiberscope::detail
