// Shared shape of every ring operation a fiber waits for.
#pragma once

#include "cancel.hpp"
#include "fiber.hpp"
#include "ring.hpp"
#include "scheduler.hpp"
#include "thread.hpp"
#include "tracing.hpp"

namespace fiberscope::detail {

// Prepares one SQE with `prep`, tags it with the current fiber, switches
// away until its completion arrives, and returns the completion. With
// `cancelable`, the operation runs in a cancel region (cancel.hpp) and a
// fiber canceled beforehand gets Canceled without submitting anything.
template <class Prep>
Result<Completion> perform(bool cancelable, Prep&& prep) {
    Thread* thread = currentThread();
    Fiber* fiber = thread->currentFiber();
    if (cancelable)
        if (auto entered = enterCancelRegion(fiber, thread); !entered) return entered.error();
    io_uring_sqe* sqe = thread->ring.sqe();
    prep(sqe);
    sqe->user_data = reinterpret_cast<std::uint64_t>(fiber);
    fiber->last_opcode = sqe->opcode;
    FIBERSCOPE_TRACE_EVENT(emit::submit(now, fiber->id, sqe->opcode, sqe->fd));
    // The SQE is submitted when this thread next enters the kernel (its idle
    // loop), batched with others; our completion resumes us.
    yield(nullptr, PendingTask::nothing, trace::SwitchReason::IoWait);
    if (cancelable) exitCancelRegion(fiber, thread);
    return fiber->completion;
}

} // namespace fiberscope::detail
