// Worker threads and the idle loop (the seed's idle()/threadEntry()).
#include "scheduler/worker.hpp"

#include <pthread.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fiberscope/trace.hpp"
#include "support/errors.hpp"
#include "fiber/overflow_report.hpp"
#include "fiber/stack_pool.hpp"
#include "loop.hpp"
#include "support/sanitizer.hpp"
#include "scheduler/queue.hpp"
#include "scheduler/scheduler.hpp"
#include "support/tracing.hpp"
#include "support/fault_injection.hpp"

#include <algorithm>
#include <array>
#include <string>

namespace fiberscope::detail {

thread_local constinit Thread* t_current_thread = nullptr;

__attribute__((noinline)) Thread* currentThread() noexcept {
    // The asm barrier keeps the compiler from treating the TLS address as
    // constant across calls in a caller that was suspended in between.
    Thread* thread = t_current_thread;
    asm volatile("" : "+r"(thread));
    return thread;
}

void setCurrentThread(Thread* thread) noexcept { t_current_thread = thread; }

void Thread::checkOwner() const noexcept {
    if (currentThread() == this) return;
    std::fprintf(stderr, "fiberscope: internal error: %s's owner-only fields were reached from %s\n",
                 workerName(index), currentThread() ? workerName(currentThread()->index) : "a thread outside the loop");
    std::abort();
}

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

// Fires the thread's passed sync-wait deadlines (sync/timers.hpp).
static unsigned expireSyncTimers(Thread& thread, Fiber*& next, FiberQueue& queue) {
    if (thread.sync_timers.nearest() == SyncTimers::kNone) return 0;
    return thread.sync_timers.expire(monotonicNanoseconds(), next, queue);
}

// Reaps what the driver holds (completions, ready events, messages) and
// schedules what became ready. `enter`: enter the kernel first.
static void scheduleCompletions(Thread& thread, bool enter) {
    Fiber* next = nullptr;
    FiberQueue queue{nullptr, nullptr};
    bool exit = false;
    if (enter) thread.driver.reap(next, queue, exit);
    else thread.driver.reapWaiting(next, queue, exit);
    expireSyncTimers(thread, next, queue);
    if (exit) thread.own().exit_seen = true;
    if (FiberQueue all = queue.withFirst(next); all.head) schedule(*thread.loop, thread, all);
}

void pollDriver(Thread& thread) {
    thread.own().yields_since_poll = 0;
    scheduleCompletions(thread, true);
}

void reapCompletions(void* thread) { scheduleCompletions(*static_cast<Thread*>(thread), false); }

// The worker has started and settled into its loop (Thread::settled).
static void settle(Thread& thread) {
    thread.own().settled = true;
    // release: our records so far (thread-start, park) are stamped before a
    // startWorkers() caller that reads this (acquire) stamps its next one.
    thread.settled.store(true, std::memory_order_release);
}

void idle(Thread& thread) {
    Loop& loop = *thread.loop;
    Fiber* next = nullptr;
    for (;;) {
        while (next || (next = findReadyFiber(loop, thread))) {
            Fiber* fiber = next;
            next = nullptr;
            if (!thread.own().settled) settle(thread);
            yield(fiber, PendingTask::nothing, trace::SwitchReason::Idle);
        }
        // The scaling policy searches before it parks (scheduler/search.cpp).
        if (loop.scaling() && (next = searchBeforePark(loop, thread))) continue;
        jitter();
        // A checking recording (FORMAT.md "Truth"): under the scaling policy
        // only we fill our queues, so they are empty now and stay so while
        // we are parked. (The seed's word may take a hand-off at any moment
        // from here on: nothing to say there.)
        FIBERSCOPE_TRACE_EVENT(if (loop.scaling() && trace::checking()) emit::truth(now, trace::TruthOp::Empty, 0, 0);
                               trace::flushIfStale(now); emit::park(now));
        if (!thread.own().settled) settle(thread);
        FiberQueue queue{nullptr, nullptr};
        bool exit = false;
        // A timed sync wait parked here bounds the wait (sync/timers.hpp).
        unsigned readied = thread.driver.park(thread.sync_timers.nearest(), next, queue, exit);
        readied += expireSyncTimers(thread, next, queue);
        FIBERSCOPE_TRACE_EVENT(emit::unpark(now, readied));
        // Awake: no longer a hand-off target (a no-op unless parked by the
        // scaling policy's searchBeforePark).
        leaveIdleSet(loop, thread);
        if (queue.head) schedule(loop, thread, queue);
        if ((exit || thread.own().exit_seen) && !next) return;
    }
}

void pinWorker(Loop& loop, unsigned index) {
    if (loop.pin_cpus.empty()) return;
    const int cpu = loop.pin_cpus[index % loop.pin_cpus.size()];
    char label[64];
    if (!pinCallingThread(cpu)) {
        const int error = errno;
        std::fprintf(stderr, "fiberscope: cannot pin %s to CPU %d (%s); it runs where the OS puts it\n", workerName(index), cpu,
                     std::strerror(error));
        std::snprintf(label, sizeof label, "pin refused: worker %u to CPU %d", index, cpu);
    } else {
        std::snprintf(label, sizeof label, "pinned: worker %u to CPU %d", index, cpu);
    }
    trace::markCopy(label);
}

void workerMain(Loop* loop, unsigned index) {
    Thread& thread = loop->threads[index];
    setCurrentThread(&thread);
    thread.idle_context.tsan_fiber = tsanCurrentFiber();
    AltSignalStack alt_stack;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void* base = nullptr;
        std::size_t size = 0;
        pthread_attr_getstack(&attr, &base, &size);
        thread.idle_context.stack_bottom = base;
        thread.idle_context.stack_size = size;
        pthread_attr_destroy(&attr);
    }
    // The driver takes wake-ups from now on (deinit waits for this).
    thread.driver.start();
    FIBERSCOPE_TRACE_EVENT(emit::threadStart(now, index, workerName(index)));
    pinWorker(*loop, index);
    idle(thread);
    FIBERSCOPE_TRACE_EVENT(emit::threadStop(now));
    setCurrentThread(nullptr);
}

} // namespace fiberscope::detail
