// Starting workers lazily (the seed's): schedule() starts the next worker
// when nobody takes its fibers and a slot is free, with the fibers as the
// new worker's first work; a worker that cannot start backs growth off.
#include "scheduler/grow.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>

#include "fiberscope/trace.hpp"
#include "loop.hpp"
#include "scheduler/scheduler.hpp"
#include "scheduler/traced_fibers.hpp"
#include "support/tracing.hpp"

namespace fiberscope::detail {

// Growth back-off after a failed worker start: the first retry waits this
// long, each further failure doubles the wait, up to the cap.
static constexpr std::int64_t kFirstGrowBackoffNs = 100'000'000;  // 100 ms
static constexpr std::int64_t kMaxGrowBackoffNs = 10'000'000'000; // 10 s

// Whether schedule() may try to start a worker now (not during a back-off).
bool mayGrow(const Loop& loop) {
    // relaxed: a hint; a stale value costs at most one retry early or late.
    const std::int64_t retry_at = loop.grow_retry_at.load(std::memory_order_relaxed);
    return retry_at == 0 || monotonicNanoseconds() >= retry_at;
}

// A worker could not start (descriptors or memory ran out: ulimit -n,
// ulimit -v). The loop keeps working on the threads it has; the failure is
// said once per loop, and growth is retried only after a back-off, so a
// busy loop at the limit neither floods stderr nor spends its time failing.
static void growFailed(Loop& loop, unsigned index, const char* what, const char* why) {
    // We hold the reservation: nobody else touches these two fields now.
    loop.grow_backoff_ns = loop.grow_backoff_ns ? std::min(2 * loop.grow_backoff_ns, kMaxGrowBackoffNs)
                                                : kFirstGrowBackoffNs;
    // relaxed: read as a hint by mayGrow() (see there).
    loop.grow_retry_at.store(monotonicNanoseconds() + loop.grow_backoff_ns, std::memory_order_relaxed);
    if (!loop.told_grow_failure) {
        loop.told_grow_failure = true;
        std::fprintf(stderr,
                     "fiberscope: cannot start worker %u: %s (%s); continuing with %u thread%s "
                     "(retried now and then; said once per loop)\n",
                     index, what, why, index, index == 1 ? "" : "s");
    }
    // release: our writes to the slot and to the back-off fields happen
    // before the next reservation (which CASes with acquire).
    loop.reserved.store(index, std::memory_order_release);
}

Status spawnWorker(Loop& loop, unsigned index, FiberQueue queue, const TracedFibers* traced) {
    // A span on the fiber that pays for it: opening a ring or epoll instance
    // and starting an OS thread take far longer than any scheduling decision.
    trace::Zone zone("spawnWorker: start a worker thread");
    Thread& worker = loop.threads[index];
    worker.loop = &loop;
    worker.index = index;
    worker.current_context = &worker.idle_context;
    worker.ready_queue.store(queue.head, std::memory_order_relaxed);
    worker.resetOwned();
    const char* failed = "";
    Status opened = worker.driver.openWorker(index, loop.threads[0].driver, loop.options, failed);
    if (!opened) {
        worker.ready_queue.store(nullptr, std::memory_order_relaxed);
        growFailed(loop, index, failed, opened.error().message());
        return opened;
    }
    worker.driver.setReaper(reapCompletions, &worker);
    // The schedule record's time: before the thread that runs the fibers
    // starts (its first record comes after this). It is written once the
    // start succeeded, still inside the zone, so no later record of ours
    // comes before it (a record stamped before its thread's previous one
    // would be moved to that one's time: support/tracing.hpp).
    const std::uint64_t stamp = trace::enabled() ? trace::now() : 0;
    try {
        worker.os_thread = std::thread(workerMain, &loop, index);
    } catch (const std::exception& e) {
        worker.driver.close();
        worker.ready_queue.store(nullptr, std::memory_order_relaxed);
        growFailed(loop, index, "no thread", e.what());
        return Errc::SystemResources;
    }
    if (traced) traced->write(stamp, index, trace::ScheduleHow::NewWorker);
    if (loop.test_spawn_delay_ns) std::this_thread::sleep_for(std::chrono::nanoseconds(loop.test_spawn_delay_ns));
    // Started: a later failure backs off from the start again.
    loop.grow_backoff_ns = 0;
    loop.grow_retry_at.store(0, std::memory_order_relaxed);
    // release: the Thread's shared fields (ring fd, queue) are initialised
    // before any thread that reads `active` with acquire can use the slot;
    // so are the back-off fields, for the next reservation holder.
    loop.active.store(index + 1, std::memory_order_release);
    return {};
}

Status startAllWorkers(Loop& loop) {
    for (;;) {
        // acquire: pairs with spawnWorker's release of `active`.
        const unsigned active = loop.active.load(std::memory_order_acquire);
        if (active >= loop.allocated) return {};
        unsigned expected = active;
        // acquire: as schedule()'s reservation (a failed start's cleanup
        // happened before we reuse the slot); relaxed on failure.
        if (!loop.reserved.compare_exchange_weak(expected, active + 1, std::memory_order_acquire,
                                                 std::memory_order_relaxed)) {
            // Another thread is starting this slot's worker (a schedule()
            // that found nobody idle): it ends in microseconds.
            std::this_thread::yield();
            continue;
        }
        // No first work, so no schedule record: the worker finds its queues
        // empty and parks (the scaling policy searches first).
        if (Status started = spawnWorker(loop, active, FiberQueue{nullptr, nullptr}); !started) return started;
    }
}

} // namespace fiberscope::detail
