// Cancellation: see cancel.hpp for the protocol.
#include "cancel.hpp"

#include <cerrno>

#include "loop.hpp"
#include "scheduler.hpp"
#include "tracing.hpp"

namespace fiberscope::detail {

Status enterCancelRegion(Fiber* fiber, Thread* thread) {
    Thread* expected = nullptr;
    // acq_rel: release publishes which ring to message; acquire pairs with the
    // canceler's exchange when it came first.
    if (fiber->cancel_thread.compare_exchange_strong(expected, thread, std::memory_order_acq_rel,
                                                     std::memory_order_acquire))
        return {};
    return Errc::Canceled;
}

void exitCancelRegion(Fiber* fiber, Thread* thread) {
    Thread* expected = thread;
    // Fails only if a canceler swapped in kCanceling, which must stay.
    fiber->cancel_thread.compare_exchange_strong(expected, nullptr, std::memory_order_acq_rel,
                                                 std::memory_order_acquire);
}

void requestCancel(Fiber* fiber) {
    // acq_rel: acquire sees the thread the fiber published on entering its
    // region; release makes kCanceling visible to its next entry attempt.
    Thread* target = fiber->cancel_thread.exchange(kCanceling, std::memory_order_acq_rel);
    const bool in_flight = target != nullptr && target != kCanceling;
    FIBERSCOPE_TRACE_EVENT(emit::cancelRequest(now, fiber->id, in_flight ? target->index + 1 : 0));
    if (!in_flight) return;
    Thread* self = currentThread();
    sendCancel(*self, *target, fiber);
}

} // namespace fiberscope::detail
