// yield(): the switch itself, from whatever runs now to a given fiber, the
// next ready one, or the thread's idle context; the receiver performs the
// message's pending task first thing (switch_message.hpp). yieldRunning():
// EventLoop::yield, with its short way on a loop of one worker thread.
#include "scheduler/scheduler.hpp"

#include "fiber/context.hpp"
#include "loop.hpp"
#include "support/sanitizer.hpp"
#include "support/tracing.hpp"

namespace fiberscope::detail {

// Saves the current context in message.contexts.prev and resumes `next`
// (message.contexts.ready), with the sanitizers told; once something
// resumes us, returns what that sender sent.
static const ContextPair* switchTo(Context* next, SwitchMessage& message, bool finished) {
    void* fake_stack = nullptr;
    sanitizerStartSwitch(finished ? nullptr : &fake_stack, next->stack_bottom, next->stack_size);
    tsanSwitchTo(next->tsan_fiber);
    const ContextPair* received = contextSwitch(&message.contexts);
    sanitizerFinishSwitch(fake_stack);
    return received;
}

void yield(Fiber* ready, SwitchMessage& message, bool finished) {
    Thread* thread = currentThread();
    Context* next;
    if (ready) next = &ready->context;
    else if (Fiber* found = findReadyFiber(*thread->loop, *thread)) next = &found->context;
    else next = &thread->idle_context;
    message.contexts = {thread->current_context, next};
    // One timestamp for the switch and the pending task the receiver runs
    // where that task's effect is the switch's (switch_message.cpp), read
    // once the next fiber is found (findReadyFiber may record a steal), or
    // when it was taken: popped or stolen from a queue word, or claimed as
    // a finishing fiber's awaiter (Thread::Owned::taken_at: no record of
    // ours came between).
    FIBERSCOPE_TRACE_EVENT_AT(thread->own().taken_at, thread->own().trace_time = now;
                              emit::switchTo(now, traceId(*thread, message.contexts.prev), traceId(*thread, next), message.reason));
    // Spent (a load costs less than a store: most switches took nothing so).
    if (thread->own().taken_at != 0) thread->own().taken_at = 0;
    handleSwitchMessage(switchTo(next, message, finished));
}

// Why act-then-switch is safe here, when everywhere else a fiber switches
// first and is published by the receiver (switch_message.hpp): on a loop of
// one worker thread nobody else ever takes from the RunQueue (there are no
// thieves: allocated == 1 is fixed at creation), and nothing else in the
// runtime pops it. So the yielder may queue itself on its own ring while it
// still runs: the only thread that can pop it is this one, and it pops
// only after the switch below has saved our context. Why bother: the
// generic way (find the next fiber, switch, the receiver's
// handleSwitchMessage calls schedule(), which reads the policy, the
// thread count, growth and the trace, then enqueueLocal) was ~25 ns a
// yield against a bare switch's ~5 (issue 15).
//
// The order is the generic way's: the yielder goes to the back of the FIFO
// ring and the ring's head runs next. It applies only where that generic
// way would also take the ring's head: nothing in run_next, on the queue
// word, the WorkDeque or the overflow list (new work, which findReadyFiber
// would run first; looked at once after each schedule(), as
// Thread::Owned::no_new_work says), and not while tracing (the trace
// records each decision, which the generic way writes). A yielder with an
// empty ring goes on without a switch (the generic way would pass through
// the idle context and come straight back); EventLoop::yield still
// services the driver.
static bool noNewWork(const Thread& thread) {
    const Loop& loop = *thread.loop;
    if (loop.allocated != 1 || !loop.scaling()) return false;
    // relaxed (all four): only this thread fills run_next, the queue word
    // (the scaling policy hands no thread work), the WorkDeque and, on a
    // one-worker loop, the overflow list, so what they hold was written by us.
    if (thread.run_next.load(std::memory_order_relaxed) != nullptr) return false;
    if (Fiber* word = thread.ready_queue.load(std::memory_order_relaxed); word != nullptr && word != kPopping)
        return false;
    if (!thread.new_work.emptyForOwner()) return false;
    return loop.overflow_count.load(std::memory_order_relaxed) == 0;
}

static bool yieldAlone(Thread& thread) {
    Thread::Owned& own = thread.own();
    if (!own.no_new_work) {
        if (!noNewWork(thread)) return false;
        own.no_new_work = true;
    }
    if (trace::enabled()) return false;
    // The ring's head runs next and we go to its back. An empty ring: we
    // would be its only fiber, so we run on.
    Fiber* next = thread.run_queue.rotateAlone(thread.currentFiber());
    if (!next) return true;
    // No task: we are queued already.
    SwitchMessage message(SwitchMessage::NoTask{}, {thread.current_context, &next->context});
    const ContextPair* received = switchTo(&next->context, message, false);
    // Resumed, on the same Thread (the loop has no other). A sender that
    // asks for nothing (another yieldAlone, the idle loop resuming us, a
    // fiber that parked for I/O) needs only what handleSwitchMessage does
    // first and last. The context it resumed is ours, and our own message
    // says which (stored before we left, so long written back; the sender's
    // message would stall on the store the sender has just made, as
    // contextSwitch's header says).
    if (SwitchMessage::from(received)->task != PendingTask::nothing) {
        handleSwitchMessage(received);
        return true;
    }
    thread.current_context = message.contexts.prev;
    // A sender that traced its decision (any but yieldAlone, while a
    // recorder ran) left its timestamp; most left none, and a load costs
    // less than a store here.
    if (own.trace_time != 0) own.trace_time = 0;
    return true;
}

void yieldRunning(Thread& thread) {
    // A fiber that yields in a loop keeps its thread from ever going idle,
    // where the driver is normally serviced: service it here now and then,
    // every 8th yield if it has work waiting (a look at the ring: ~1 ns of
    // a ~8 ns yield), every 1024th anyway: the epoll backend and a ring that
    // cannot report deferred completions are polled blind, and passed
    // deadlines of timed sync waits fire (Driver::reap enters the kernel
    // only where that may find something).
    const unsigned yields = ++thread.own().yields_since_poll;
    if (yields >= 1024 || ((yields & 7) == 0 && thread.driver.hasPendingWork())) pollDriver(thread);
    if (thread.runningFiber() && yieldAlone(thread)) return;
    yield(nullptr, PendingTask::reschedule, trace::SwitchReason::Yield);
}

} // namespace fiberscope::detail
