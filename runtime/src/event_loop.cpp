// EventLoop: creation (thread 0, the main fiber, the main idle context),
// destruction (cancel detached fibers, stop workers), and the small
// operations that are neither file nor time.
#include "fiberscope/event_loop.hpp"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include "io/cancel.hpp"
#include "support/cpu_relax.hpp"
#include "support/errors.hpp"
#include "fiber/overflow_report.hpp"
#include "loop.hpp"
#include "support/sanitizer.hpp"
#include "scheduler/grow.hpp"
#include "scheduler/scheduler.hpp"
#include "support/tracing.hpp"
#include "support/fault_injection.hpp"
#include "fiberscope/trace.hpp"
#include "fiberscope/trace_vocabulary.hpp"

namespace fiberscope {
namespace detail {

Loop::Loop(const EventLoopOptions& opts) : options(opts), stacks(opts.stack_size, opts.guard_pages) {
    allocated = options.threads;
    threads = std::make_unique<Thread[]>(allocated);
    readTestJitter();
    if (const char* delay = std::getenv("FIBERSCOPE_TEST_SPAWN_DELAY_US"))
        test_spawn_delay_ns = std::max(0L, std::atol(delay)) * 1000;
}

Loop::~Loop() {
    if (main_idle_stack) {
        const std::size_t size = kIdleStackSize + static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        sanitizerUnpoison(main_idle_stack, size); // its frames' redzones (see ~StackPool)
        munmap(main_idle_stack, size);
    }
}

// Where the main thread's idle context starts: handle the switch that got
// us here, run the idle loop until exit, then resume the main fiber.
extern "C" [[noreturn]] void fiberscope_main_idle(const ContextPair* received) {
    sanitizerFinishSwitch(nullptr);
    handleSwitchMessage(received);
    Thread& thread = *currentThread();
    idle(thread);
    FIBERSCOPE_TRACE_EVENT(emit::threadStop(now));
    yield(&thread.loop->main_fiber, PendingTask::nothing, trace::SwitchReason::Exit);
    std::fprintf(stderr, "fiberscope: internal error: the main idle context was resumed after exit\n");
    std::abort();
}

static void currentStack(Context& context) {
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return;
    void* base = nullptr;
    std::size_t size = 0;
    pthread_attr_getstack(&attr, &base, &size);
    context.stack_bottom = base;
    context.stack_size = size;
    pthread_attr_destroy(&attr);
}

static thread_local AltSignalStack* t_main_alt_stack = nullptr;

// The backend asked for: the options', else FIBERSCOPE_BACKEND's, else
// automatic.
static Result<IoBackend> chooseBackend(IoBackend requested) {
    if (requested != IoBackend::automatic) return requested;
    const char* env = std::getenv("FIBERSCOPE_BACKEND");
    if (!env || !*env) return IoBackend::automatic;
    const std::string_view name = env;
    if (name == "uring" || name == "io_uring") return IoBackend::io_uring;
    if (name == "epoll") return IoBackend::epoll;
    if (name == "auto" || name == "automatic") return IoBackend::automatic;
    std::fprintf(stderr, "fiberscope: FIBERSCOPE_BACKEND='%s' is not a backend; use uring or epoll (or unset it)\n", env);
    return Error{Errc::UnsupportedBackend, 0};
}

// The policy asked for: the options', else FIBERSCOPE_SCHEDULER's, else scaling
// (the same precedence as the backend's).
static Result<SchedulerPolicy> choosePolicy(std::optional<SchedulerPolicy> requested) {
    if (requested) return *requested;
    const char* env = std::getenv("FIBERSCOPE_SCHEDULER");
    if (!env || !*env) return SchedulerPolicy::scaling;
    const std::string_view name = env;
    if (name == "seed") return SchedulerPolicy::seed;
    if (name == "scaling") return SchedulerPolicy::scaling;
    std::fprintf(stderr, "fiberscope: FIBERSCOPE_SCHEDULER='%s' is not a scheduler policy; use seed or scaling (or unset it)\n", env);
    return Error{Errc::InvalidArgument, 0};
}

// Whether to pin the workers: the options', else FIBERSCOPE_PIN's
// (1 or 0), else not.
static Result<bool> choosePin(std::optional<bool> requested) {
    if (requested) return *requested;
    const char* env = std::getenv("FIBERSCOPE_PIN");
    if (!env || !*env) return false;
    const std::string_view value = env;
    if (value == "1") return true;
    if (value == "0") return false;
    std::fprintf(stderr, "fiberscope: FIBERSCOPE_PIN='%s' is neither 1 (pin each worker to a CPU) nor 0; use one (or unset it)\n",
                 env);
    return Error{Errc::InvalidArgument, 0};
}

} // namespace detail

using namespace detail;

Result<std::unique_ptr<EventLoop>> EventLoop::create(EventLoopOptions options) {
    if (currentThread()) return Error{Errc::InvalidArgument, 0};
    if (options.threads == 0) options.threads = std::max(1u, std::thread::hardware_concurrency());
    if (options.threads > kMaxWorkers) return Error{Errc::InvalidArgument, 0};
    if (options.ring_entries == 0 || options.ring_entries > 32768) return Error{Errc::InvalidArgument, 0};
    if (options.completion_entries == 0) options.completion_entries = std::max(4096u, 2 * options.ring_entries);
    if (options.completion_entries < options.ring_entries || options.completion_entries > 65536)
        return Error{Errc::InvalidArgument, 0};
    if (options.stack_size < 16 * 1024) options.stack_size = 16 * 1024;

    auto policy = choosePolicy(options.scheduler);
    if (!policy) return policy.error();
    options.scheduler = *policy;
    auto pin = choosePin(options.pin_workers);
    if (!pin) return pin.error();
    options.pin_workers = *pin;

    auto loop = std::make_unique<Loop>(options);
    loop->scheduler = *policy;
    if (*pin) {
        loop->pin_cpus = allowedCpus();
        loop->creator_affinity.save();
    }
    Thread& main_thread = loop->threads[0];
    main_thread.loop = loop.get();
    main_thread.index = 0;
    auto backend = chooseBackend(options.backend);
    if (!backend) return backend.error();
    if (auto opened = main_thread.driver.openFirst(0, options, *backend, loop->ring_opcodes); !opened)
        return opened.error();
    main_thread.driver.setReaper(reapCompletions, &main_thread);
    loop->backend = main_thread.driver.backend();

    const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    void* idle_stack = mmap(nullptr, kIdleStackSize + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (idle_stack == MAP_FAILED) return Error{Errc::OutOfMemory, errno};
    loop->main_idle_stack = static_cast<char*>(idle_stack);
    mprotect(idle_stack, page, PROT_NONE);
    prepareContext(main_thread.idle_context, loop->main_idle_stack + page + kIdleStackSize, fiberscope_main_idle_entry);
    main_thread.idle_context.stack_bottom = loop->main_idle_stack + page;
    main_thread.idle_context.stack_size = kIdleStackSize;
    main_thread.idle_context.tsan_fiber = tsanCreateFiber();

    loop->main_fiber.loop = loop.get();
    loop->main_fiber.id = 1;
    currentStack(loop->main_fiber.context);
    loop->main_fiber.context.tsan_fiber = tsanCurrentFiber();
    main_thread.current_context = &loop->main_fiber.context;

    // The header names the backend this loop chose (stats prints it).
    trace::startFromEnvironment(ioBackendName(loop->backend));
    installOverflowHandler();
    t_main_alt_stack = new AltSignalStack();
    setCurrentThread(&main_thread);
    FIBERSCOPE_TRACE_EVENT(emit::threadStart(now, 0, workerName(0)));
    main_thread.settled.store(true, std::memory_order_relaxed); // nobody else can see it yet
    trace::mark(loop->backend == IoBackend::epoll ? "backend: epoll" : "backend: io_uring");
    // Only a policy other than the seed's is named (FORMAT.md): a trace
    // without this mark ran the seed, as every older trace did.
    if (loop->scaling()) trace::mark(trace::kScalingPolicyMark.data()); // a literal: stable, NUL-terminated
    pinWorker(*loop, 0);

    Loop* raw = loop.release();
    std::unique_ptr<EventLoop> facade(new EventLoop(raw));
    raw->facade = facade.get();
    return facade;
}

EventLoop::~EventLoop() {
    Loop& loop = *impl_;
    Thread* thread = currentThread();
    if (!thread || thread->loop != &loop || thread->current_context != &loop.main_fiber.context) {
        std::fprintf(stderr, "fiberscope: an EventLoop must be destroyed by the fiber that created it\n");
        std::abort();
    }
    // Cancel and join the detached fibers still running (they may start more).
    for (;;) {
        Fiber* fiber;
        {
            std::lock_guard lock(loop.detached_mutex);
            fiber = loop.detached_head;
            if (!fiber) break;
            loop.detached_head = fiber->detached_next;
            if (loop.detached_head) loop.detached_head->detached_prev = nullptr;
            fiber->detached_claimed = true;
        }
        requestCancel(fiber);
        awaitFiber(fiber);
        recycleFiber(fiber);
    }
    // No worker may start from now on, and none may be half started: a
    // schedule() on another worker can be inside spawnWorker (the slot
    // reserved, the thread running, `active` not yet raised), and a worker
    // left out of the count below would neither get the exit message nor be
    // joined (its std::thread destroyed joinable: std::terminate). Close
    // growth by moving `reserved` to a value no spawner's CAS expects, once
    // it equals `active` (no spawn in progress: a finished spawn raised
    // `active` to it, a failed one put it back).
    unsigned active = 0;
    for (;;) {
        // acquire (both): the slots below `active` are fully initialised.
        active = loop.active.load(std::memory_order_acquire);
        unsigned expected = active;
        if (loop.reserved.compare_exchange_strong(expected, Loop::kGrowthClosed, std::memory_order_acquire,
                                                  std::memory_order_acquire))
            break;
        std::this_thread::yield(); // a spawn is under way: it ends in microseconds
    }
    // Every started worker must be able to receive the exit message.
    
    for (unsigned i = 0; i < active; ++i)
        while (!loop.threads[i].driver.started()) std::this_thread::yield();
    // Switch away with the exit task; thread 0's idle loop resumes us here,
    // on the creating OS thread, once it has seen the exit message.
    detail::yield(nullptr, PendingTask::exit, trace::SwitchReason::Exit);
    for (unsigned i = 1; i < active; ++i)
        if (loop.threads[i].os_thread.joinable()) loop.threads[i].os_thread.join();
    setCurrentThread(nullptr);
    loop.creator_affinity.restore(); // (a no-op unless the loop pinned it)
    tsanDestroyFiber(loop.threads[0].idle_context.tsan_fiber);
    delete t_main_alt_stack;
    t_main_alt_stack = nullptr;
    delete impl_;
}

// noinline: it reads the thread-local worker inline (currentThreadOnEntry),
// which is only safe in a function that is never inlined into a caller
// that may resume on another OS thread (link-time optimisation could).
__attribute__((noinline)) void EventLoop::yield() {
    Thread* current = currentThreadOnEntry();
    if (!current) {
        // A plain std::thread: no fiber to put back, so yield the OS thread.
        std::this_thread::yield();
        return;
    }
    yieldRunning(*current);
}

bool EventLoop::cancelRequested() {
    // A plain std::thread runs no fiber, and nothing can cancel it.
    if (!currentThread()) return false;
    return currentFiber()->cancel_thread.load(std::memory_order_acquire) == kCanceling;
}

Status EventLoop::startWorkers(std::chrono::nanoseconds timeout) {
    Loop& loop = *impl_;
    if (Status started = startAllWorkers(loop); !started) return started;
    // Wait until each has settled (parked, or run a fiber): sleep in short
    // steps (a fiber lets its thread run others meanwhile; a plain thread
    // sleeps).
    const std::int64_t deadline = monotonicNanoseconds() + timeout.count();
    const unsigned active = loop.active.load(std::memory_order_acquire);
    for (unsigned i = 0; i < active; ++i) {
        // acquire: pairs with settle()'s release (scheduler/worker.cpp).
        while (!loop.threads[i].settled.load(std::memory_order_acquire)) {
            if (monotonicNanoseconds() >= deadline) return Errc::TimedOut;
            if (currentThread()) {
                if (Status slept = sleep(std::chrono::microseconds(50)); !slept) return slept;
            } else {
                std::this_thread::sleep_for(std::chrono::microseconds(50));
            }
        }
    }
    return {};
}

unsigned EventLoop::activeThreads() const noexcept { return impl_->active.load(std::memory_order_acquire); }
unsigned EventLoop::maxThreads() const noexcept { return impl_->allocated; }

IoBackend EventLoop::backend() const noexcept { return impl_->backend; }

SchedulerPolicy EventLoop::scheduler() const noexcept { return impl_->scheduler; }

const char* schedulerPolicyName(SchedulerPolicy policy) noexcept {
    return policy == SchedulerPolicy::scaling ? "scaling" : "seed";
}

const char* ioBackendName(IoBackend backend) noexcept {
    switch (backend) {
    case IoBackend::io_uring: return "io_uring";
    case IoBackend::epoll: return "epoll";
    case IoBackend::automatic: break;
    }
    return "automatic";
}

IoStats EventLoop::ioStats() const noexcept {
    IoStats stats;
    const unsigned active = impl_->active.load(std::memory_order_acquire);
    for (unsigned i = 0; i < active; ++i) {
        stats.full_submissions += impl_->threads[i].driver.ring.fullSubmissions();
        stats.completion_overflows += impl_->threads[i].driver.ring.completionOverflows();
    }
    return stats;
}

std::uint64_t currentFiberId() noexcept {
    Thread* thread = currentThread();
    return thread ? traceId(*thread, thread->current_context) : 0;
}

void setFiberName(std::string_view name) noexcept {
    Thread* thread = currentThread();
    if (thread && thread->runningFiber()) {
        // Kept in the header for messages about this fiber (a stack overflow,
        // an exception in a detached fiber), truncated to fit.
        Fiber* fiber = thread->currentFiber();
        const std::size_t length = std::min(name.size(), Fiber::kNameSize - 1);
        std::memcpy(fiber->name, name.data(), length);
        fiber->name[length] = '\0';
    }
    FIBERSCOPE_TRACE_EVENT(emit::fiberName(now, currentFiberId(), name));
}

void detail::inlineTaskOutOfMemory(std::size_t bytes) noexcept {
    std::fprintf(stderr,
                 "fiberscope: out of memory: EventLoop::async() got no fiber stack and then not even %zu bytes to run "
                 "its function inline; aborting (concurrent() returns OutOfMemory instead)\n",
                 bytes);
    std::abort();
}

namespace detail {
std::uint64_t traceFiberId(const Fiber* fiber) noexcept { return fiber->id; }
void traceQueueOp(int op, const void* queue) noexcept {
    FIBERSCOPE_TRACE_EVENT(emit::queueOp(now, static_cast<QueueOp>(op), queue, currentFiberId()));
}
} // namespace detail

EventLoop* EventLoop::current() noexcept {
    Thread* thread = currentThread();
    return thread ? thread->loop->facade : nullptr;
}

} // namespace fiberscope
