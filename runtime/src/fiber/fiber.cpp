// A fiber's life: spawn, entry, finish, await, select, recycle.
#include "fiber/fiber.hpp"

#include <cstdio>
#include <cstdlib>
#include <new>
#include <thread>

#include "fiberscope/trace.hpp"

#include "io/cancel.hpp"
#include "support/cpu_relax.hpp"
#include "fiber/free_list.hpp"
#include "fiber/stack_pool.hpp"
#include "loop.hpp"
#include "support/sanitizer.hpp"
#include "scheduler/scheduler.hpp"
#include "support/tracing.hpp"
#include "support/fault_injection.hpp"

namespace fiberscope::detail {

static Thread& requireThread(const char* what) {
    Thread* thread = currentThread();
    if (!thread) {
        std::fprintf(stderr, "fiberscope: %s called outside an EventLoop; call it from the thread that created the loop or from a fiber\n", what);
        std::abort();
    }
    return *thread;
}

TaskBase* fiberTask(Fiber* fiber) { return fiber->task; }

void misuse(const char* what) noexcept {
    std::fprintf(stderr, "fiberscope: misuse: %s\n", what);
    std::abort();
}

void requireLoopThread(const char* what) noexcept {
    if (!currentThread()) misuse(what);
}

// Fiber ids a thread takes at once from Loop::next_fiber_id (scaling policy).
static constexpr std::uint64_t kFiberIdBlock = 256;

Result<Fiber*> spawnFiber(Loop* loop, const TaskLayout& layout, bool detached) {
    Thread& thread = requireThread("EventLoop::async");
    Fiber* fiber = takeFiber(*loop, thread);
    if (!fiber) return Errc::OutOfMemory;

    char* bottom = stackBottom(fiber);
    const std::size_t size = stackSize(fiber);
    sanitizerUnpoison(bottom, size);
    if (!fiber->context.tsan_fiber) fiber->context.tsan_fiber = tsanCreateFiber();

    // The task goes right below the header unless it would eat more than a
    // quarter of the stack; then it goes to the heap.
    auto header = reinterpret_cast<std::uintptr_t>(fiber);
    std::uintptr_t task_at = (header - layout.size) & ~(std::uintptr_t{layout.align} - 1);
    bool on_heap = layout.size > size / 4 || layout.align > 4096;
    void* where;
    std::uintptr_t stack_top;
    if (on_heap) {
        where = ::operator new(layout.size, std::align_val_t{layout.align}, std::nothrow);
        if (!where) {
            returnFiber(thread, fiber);
            return Errc::OutOfMemory;
        }
        stack_top = header;
    } else {
        where = reinterpret_cast<void*>(task_at);
        stack_top = task_at;
    }

    fiber->awaiter.store(nullptr, std::memory_order_relaxed);
    fiber->queue_next = nullptr;
    fiber->cancel_thread.store(nullptr, std::memory_order_relaxed);
    fiber->wake_claims.store(0, std::memory_order_relaxed);
    fiber->completion = {};
    fiber->condition = {};
    fiber->name[0] = '\0';
    fiber->loop = loop;
    // relaxed: ids only need to be unique. The scaling policy takes them
    // from a per-thread block: one shared counter bumped by every spawn on
    // every thread was a cache line the threads fought over (13 % of a
    // 2-thread skynet's samples); the seed keeps the lessons' dense ids.
    if (loop->scaling()) {
        if (thread.own().next_fiber_id == thread.own().fiber_id_limit) {
            thread.own().next_fiber_id = loop->next_fiber_id.fetch_add(kFiberIdBlock, std::memory_order_relaxed);
            thread.own().fiber_id_limit = thread.own().next_fiber_id + kFiberIdBlock;
        }
        fiber->id = thread.own().next_fiber_id++;
    } else {
        fiber->id = loop->next_fiber_id.fetch_add(1, std::memory_order_relaxed);
    }
    fiber->detached = detached;
    fiber->detached_claimed = false;
    fiber->detached_prev = fiber->detached_next = nullptr;

    TaskBase* task = layout.construct(where, layout.closure);
    task->heap_allocated = on_heap;
    fiber->task = task;

    prepareContext(fiber->context, reinterpret_cast<void*>(stack_top), fiberscope_fiber_entry);
    fiber->context.stack_bottom = bottom;
    fiber->context.stack_size = size;

    if (detached) {
        std::lock_guard lock(loop->detached_mutex);
        fiber->detached_next = loop->detached_head;
        if (loop->detached_head) loop->detached_head->detached_prev = fiber;
        loop->detached_head = fiber;
    }
    // One timestamp for the create and the schedule.
    FIBERSCOPE_TRACE_EVENT(thread.own().trace_time = now; emit::fiberCreate(now, fiber->id, traceId(thread, thread.current_context)));
    scheduleSpawned(*loop, thread, fiber);
    thread.own().trace_time = 0;
    return fiber;
}

void reportDetachedException(const Fiber* fiber, const std::exception_ptr& exception) noexcept {
    // Nobody awaits a detached fiber, so nobody else would ever see this.
    // No suspension happens inside the catch blocks (see README caveats).
    const char* what = "an exception not derived from std::exception";
    try {
        std::rethrow_exception(exception);
    } catch (const std::exception& e) {
        what = e.what();
    } catch (...) {
    }
    char label[512];
    if (fiber) {
        std::snprintf(label, sizeof label, "detached fiber #%llu%s%s%s ended with an exception: %s",
                      static_cast<unsigned long long>(fiber->id), *fiber->name ? " \"" : "", fiber->name,
                      *fiber->name ? "\"" : "", what);
    } else {
        std::snprintf(label, sizeof label,
                      "asyncDetached's function (run inline on fiber #%llu: no fiber stack was free) ended with "
                      "an exception: %s",
                      static_cast<unsigned long long>(currentFiberId()), what);
    }
    std::fprintf(stderr, "fiberscope: %s\n", label);
    trace::markCopy(label);
}

[[noreturn]] static void finishFiber(Fiber* fiber) {
    if (fiber->detached && fiber->task && fiber->task->exception)
        reportDetachedException(fiber, fiber->task->exception);
    // A detached fiber's closure dies with it; an awaited one's result (and
    // closure) are destroyed by the awaiter after it took the result.
    if (fiber->detached && fiber->task) {
        fiber->task->destroy(fiber->task);
        fiber->task = nullptr;
    }
    // Mark ourselves finishing, not finished: we are still on our stack, and
    // kFinished would let an awaiter recycle it under us. Whoever registered
    // before this exchange is suspended and waits for a claim; if our claim
    // is the first, nobody else will wake it and we switch straight to it
    // (the seed's direct hand-off). Awaiters that come later see kFinishing,
    // register, and are woken by the finish task, which runs off our stack.
    // acq_rel: release publishes our result; acquire sees the registration.
    Fiber* awaiter = fiber->awaiter.exchange(kFinishing, std::memory_order_acq_rel);
    // While tracing, the switch to a claimed awaiter (and the finish records
    // that share its time) is stamped after the exchange that found it (so
    // after its await record) and before the claim, which another finisher
    // of a select sees as lost and wakes nobody: were it stamped after the
    // claim (a preemption between), that loser's finish would come first in
    // the trace and read as the select's wake-up (Thread::Owned::taken_at).
    const std::uint64_t stamp = awaiter && trace::enabled() ? trace::now() : 0;
    Fiber* next = nullptr;
    // acq_rel: the first claim wins (select may be woken by many futures).
    if (awaiter && awaiter->wake_claims.fetch_add(1, std::memory_order_acq_rel) == 0) {
        next = awaiter;
        currentThread()->own().taken_at = stamp; // the switch goes straight to it: no record comes between
    }
    jitter(); // (the preemption that made a loser's finish come first)
    SwitchMessage message;
    message.task = PendingTask::finish;
    message.reason = trace::SwitchReason::Finish;
    yield(next, message, true);
    std::fprintf(stderr, "fiberscope: internal error: a finished fiber was resumed\n");
    std::abort();
}

extern "C" [[noreturn]] void fiberscope_fiber_main(const ContextPair* received) {
    sanitizerFinishSwitch(nullptr);
    handleSwitchMessage(received);
    Fiber* fiber = currentFiber();
    fiber->task->run(fiber->task);
    finishFiber(fiber);
}

void awaitFiber(Fiber* fiber) {
    // acquire: see the finished fiber's result.
    if (fiber->awaiter.load(std::memory_order_acquire) == kFinished) return;
    Fiber* self = currentFiber();
    // A cancel that reaches us while we wait goes on to `fiber` (cancel.hpp).
    const bool tagged = enterAwait(self, fiber);
    SwitchMessage message;
    message.task = PendingTask::register_awaiter;
    message.reason = trace::SwitchReason::Await;
    message.args.awaiter = &fiber->awaiter;
    // The switch takes its own time: finding the next fiber (a steal, a
    // truth record) may write records between this one and it.
    FIBERSCOPE_TRACE_EVENT(emit::await(now, self->id, fiber->id));
    yield(nullptr, message);
    // Exactly one claim scheduled us and happened before we run.
    self->wake_claims.store(0, std::memory_order_relaxed);
    // Untag (or wait for a canceler still passing the cancel on: then it is
    // done with `fiber` before our caller recycles it).
    if (tagged) exitSyncWait(self);
}

void recycleFiber(Fiber* fiber) {
    if (fiber->task) fiber->task->destroy(fiber->task);
    fiber->task = nullptr;
    FIBERSCOPE_TRACE_EVENT(emit::fiberRecycle(now, fiber->id));
    returnFiber(*currentThread(), fiber);
}

// A cancelable select is woken by a claim (see PendingTask::register_select):
// from a finishing future, or from a canceler. The fiber holds a sync-wait
// tag naming itself (SyncKind::select) in cancel_thread while it waits; a
// canceler that swaps the tag for kCancelingSync adds one claim (scheduling
// us if it is the first) and then stores kCanceling (cancel.cpp). Whether a
// canceler took the tag is thus known from the word alone, and with it how
// many claims to wait for before returning.
std::size_t selectFibers(FiberRefs fibers, bool cancelable) {
    const std::size_t count = fibers.count;
    for (std::size_t i = 0; i < count; ++i)
        if (!fibers[i] || fibers[i]->awaiter.load(std::memory_order_acquire) == kFinished) return i;
    Fiber* self = currentFiber();
    // The hold: finishers (and a canceler) must not schedule us while the
    // handler registers us with every future (see PendingTask::register_select).
    // Set before the tag: a canceler claims only after taking the tag, and the
    // tag's release CAS publishes the hold to it.
    self->wake_claims.store(1, std::memory_order_relaxed);
    Thread* const tag = syncWaitTag(self, SyncKind::select);
    // Under cancel protection enterSyncWait succeeds without tagging.
    if (cancelable && !enterSyncWait(self, tag)) {
        self->wake_claims.store(0, std::memory_order_relaxed);
        return kSelectCanceled;
    }
    SwitchMessage message;
    message.task = PendingTask::register_select;
    message.reason = trace::SwitchReason::Select;
    message.args.select = fibers;
    // One await record per fiber waited for: the trace says which fibers'
    // finish may end this wait (the validator holds it to that).
    FIBERSCOPE_TRACE_EVENT(for (std::size_t i = 0; i < count; ++i) emit::await(now, self->id, fibers[i]->id));
    yield(nullptr, message);

    // Unregister. A future we can't unregister holds kFinishing or kFinished:
    // it finished, and whoever saw us there (the register handler, or the
    // finishing fiber's exchange) adds exactly one claim.
    std::size_t first = count;
    std::uint32_t finished = 0;
    for (std::size_t i = 0; i < count; ++i) {
        Fiber* expected = self;
        // acq_rel/acquire: see the finished fiber's result.
        if (!fibers[i]->awaiter.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel,
                                                        std::memory_order_acquire)) {
            ++finished;
            if (first == count) first = i;
        }
    }
    // Take our tag back. If a canceler took it, it adds a claim too (before
    // its release store of kCanceling, which we wait for).
    std::uint32_t cancel_claims = 0;
    if (cancelable) {
        // acquire: pairs with the canceler's release store of kCanceling.
        Thread* value = self->cancel_thread.load(std::memory_order_acquire);
        for (unsigned spins = 0;; ++spins) {
            if (value == tag) {
                // acq_rel: orders against a canceler's CAS on the same word.
                if (self->cancel_thread.compare_exchange_weak(value, nullptr, std::memory_order_acq_rel,
                                                              std::memory_order_acquire))
                    break;
                continue;
            }
            if (value == kCancelingSync) {
                if (spins > 64) std::this_thread::yield();
                else cpuRelax();
                value = self->cancel_thread.load(std::memory_order_acquire);
                continue;
            }
            // kCanceling: a canceler took the tag and claimed. Protected
            // (never tagged): no canceler looked.
            if (value == kCanceling) cancel_claims = 1;
            break;
        }
    }
    // A finisher may still be between its exchange and its claim: wait for it
    // so no late claim can schedule us after we return.
    while (self->wake_claims.load(std::memory_order_acquire) != finished + cancel_claims) cpuRelax();
    self->wake_claims.store(0, std::memory_order_relaxed);
    if (first == count) return kSelectCanceled; // woken by the cancel alone
    return first;
}

} // namespace fiberscope::detail
