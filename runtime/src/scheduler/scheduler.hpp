// Every scheduling decision lives in scheduler.cpp: where ready fibers go
// (schedule), where a thread finds work (findReadyFiber), and the switch
// itself (yield).
#pragma once

#include "fiber/fiber.hpp"
#include "scheduler/switch_message.hpp"
#include "scheduler/worker.hpp"

namespace fiberscope::detail {

struct Loop;

// Makes `queue` runnable: hands it to an idle thread (and wakes it with
// MSG_RING), else starts a new worker for it, else queues it on `thread`.
void schedule(Loop& loop, Thread& thread, FiberQueue queue);

// A fiber just spawned on `thread`: schedule() on the seed policy; on the
// scaling policy it goes to the thread's run_next (the one there before
// goes through schedule()), and a parked thread may be woken to search.
void scheduleSpawned(Loop& loop, Thread& thread, Fiber* fiber);

// Pops this thread's next ready fiber, else steals another thread's queue,
// else marks the thread idle (ready_queue = nullptr) and returns nullptr.
Fiber* findReadyFiber(Loop& loop, Thread& thread);

// The scaling policy, from the idle loop when findReadyFiber found nothing:
// searches (steals) for a bounded while as one of Loop::searching, then
// publishes the thread parked (its idle-set bit, ready_queue = nullptr) and
// looks once more. A fiber to run, or nullptr: park now.
Fiber* searchBeforePark(Loop& loop, Thread& thread);
// The scaling policy, once the thread is awake: clears its idle-set bit and
// uncounts a search it was woken for (search_token).
void leaveIdleSet(Loop& loop, Thread& thread);

// Switches from the current context to `ready` (or the next ready fiber, or
// the idle context), asking the receiver to perform `message.task`.
// `finished`: the current fiber will never run again.
void yield(Fiber* ready, SwitchMessage& message, bool finished = false);

inline void yield(Fiber* ready, PendingTask task, trace::SwitchReason reason) {
    SwitchMessage message;
    message.task = task;
    message.reason = reason;
    yield(ready, message);
}

// The fiber running on the calling thread (the main fiber included).
Fiber* currentFiber();

} // namespace fiberscope::detail
