// yield(): the switch itself, from whatever runs now to a given fiber, the
// next ready one, or the thread's idle context; the receiver performs the
// message's pending task first thing (switch_message.hpp).
#include "scheduler/scheduler.hpp"

#include "fiber/context.hpp"
#include "loop.hpp"
#include "support/sanitizer.hpp"
#include "support/tracing.hpp"

namespace fiberscope::detail {

void yield(Fiber* ready, SwitchMessage& message, bool finished) {
    Thread* thread = currentThread();
    Context* next;
    if (ready) next = &ready->context;
    else if (Fiber* found = findReadyFiber(*thread->loop, *thread)) next = &found->context;
    else next = &thread->idle_context;
    message.contexts = {thread->current_context, next};
    // One timestamp for the switch and the pending task the receiver runs.
    FIBERSCOPE_TRACE_EVENT_AT(message.trace_time, thread->own().trace_time = now;
                              emit::switchTo(now, traceId(*thread, message.contexts.prev), traceId(*thread, next), message.reason));

    void* fake_stack = nullptr;
    sanitizerStartSwitch(finished ? nullptr : &fake_stack, next->stack_bottom, next->stack_size);
    tsanSwitchTo(next->tsan_fiber);
    const ContextPair* received = contextSwitch(&message.contexts);
    sanitizerFinishSwitch(fake_stack);
    handleSwitchMessage(received);
    currentThread()->own().trace_time = 0; // the decision is over
}

} // namespace fiberscope::detail
