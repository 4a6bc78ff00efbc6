// A fiber: the header that lives at the top of its own stack mapping.
//
// Layout of one stack slot (fiber/stack_pool.cpp allocates them in slabs):
//
//     low addresses                                           high addresses
//     [ guard page | stack, growing down ...  | Task<F,R> | Fiber header ]
//
// The header is never freed while the fiber can be reached: a finished fiber
// is recycled by whoever awaits it (or by itself, if detached), after a
// context switch, onto the recycling thread's free list.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fiber/context.hpp"
#include "fiberscope/task.hpp"

namespace fiberscope::detail {

struct Thread;
struct Loop;

// What a ring completion delivered to the fiber that waited for it.
struct Completion {
    std::int32_t result = 0;
    std::uint32_t flags = 0;
};

// The wake-up bookkeeping a fiber waiting on a Condition keeps (the seed's
// ConditionImpl): the head of the waiter list knows its tail.
struct ConditionWaiter {
    enum class Event : std::uint8_t { queued, wake_one, wake_all };
    struct Fiber* tail = nullptr;
    Event event = Event::queued;
};

struct Fiber {
    // First member: a Context* of a fiber converts back to its Fiber*.
    Context context;

    // Who waits for this fiber: nullptr (nobody yet), a fiber, kFinishing
    // while it finishes (its function returned, it is still on its stack), or
    // kFinished once it is off its stack for good and may be recycled.
    // Exchanged by the finishing fiber and the awaiter.
    std::atomic<Fiber*> awaiter{nullptr};
    // Link in whichever single list holds the fiber: a ready queue, a mutex's
    // waiters, a condition's waiters, or a free list.
    Fiber* queue_next = nullptr;
    // The thread whose ring holds this fiber's in-flight cancelable
    // operation, nullptr outside a cancel region, kCanceling once canceled.
    std::atomic<Thread*> cancel_thread{nullptr};
    // Wake-ups claimed for this fiber while it awaits or selects: only the
    // first claim schedules it (select may be woken by several futures).
    std::atomic<std::uint32_t> wake_claims{0};

    Completion completion;
    // The opcode of the fiber's in-flight ring operation (for the trace).
    std::uint8_t last_opcode = 0;
    ConditionWaiter condition;

    TaskBase* task = nullptr;
    Loop* loop = nullptr;
    std::uint64_t id = 0;
    // The name given with setFiberName (truncated, NUL-terminated; empty if
    // none), kept here so the stack-overflow handler can print it: a signal
    // handler may not allocate or look anything up. Written only by the
    // fiber itself, read on its own thread.
    static constexpr std::size_t kNameSize = 48;
    char name[kNameSize] = {};
    bool detached = false;
    // Set under the loop's detached mutex when deinit takes over a detached
    // fiber: it must then not recycle itself.
    bool detached_claimed = false;
    Fiber* detached_prev = nullptr;
    Fiber* detached_next = nullptr;

    // The slot this header lives in (nullptr for the main fiber).
    char* slot = nullptr;
    bool guarded = false;

    static Fiber* fromContext(Context* context) { return reinterpret_cast<Fiber*>(context); }
};

// A list of ready fibers linked through queue_next (non-empty when handed
// to schedule()): head to tail. tail->queue_next is not part of it and may
// be stale (a link left from a list the tail was in before): whoever
// publishes the queue as a nullptr-terminated list (a queue word) ends it
// first, and whoever moves its fibers one at a time clears each link as
// the fiber leaves, so no stale link survives into a later queue.
struct FiberQueue {
    Fiber* head;
    Fiber* tail;
    static FiberQueue one(Fiber* fiber) { return {fiber, fiber}; }

    // The idle loop's gathering of newly ready fibers: the first goes to
    // `next` (run at once), the rest are appended in order.
    void gather(Fiber*& next, Fiber* fiber) {
        fiber->queue_next = nullptr;
        if (!next) next = fiber;
        else if (!head) head = tail = fiber;
        else {
            tail->queue_next = fiber;
            tail = fiber;
        }
    }
    // Everything gathered, `next` first (empty if nothing was).
    FiberQueue withFirst(Fiber* next) const {
        if (!next) return *this;
        next->queue_next = head;
        return {next, tail ? tail : next};
    }
};

// Sentinel for Fiber::awaiter: the fiber finished and is off its stack.
// Never a valid Fiber address. (Thread::ready_queue's sentinel is kPopping,
// scheduler/worker.hpp.)
inline Fiber* const kFinished = reinterpret_cast<Fiber*>(std::uintptr_t{alignof(Fiber)});
// Fiber::awaiter while the fiber finishes: "not finished" to awaiters (they
// register and wait), and a sign to a selecting fiber that this future saw
// it and claims it (see finishFiber).
inline Fiber* const kFinishing = reinterpret_cast<Fiber*>(std::uintptr_t{2 * alignof(Fiber)});

} // namespace fiberscope::detail

namespace fiberscope::detail {
// Sentinel for Fiber::cancel_thread: cancellation was requested.
inline Thread* const kCanceling = reinterpret_cast<Thread*>(std::uintptr_t{64});
} // namespace fiberscope::detail
