// Internal half of Condition::wait that runs inside the switch handler.
#pragma once

#include "fiber/fiber.hpp"
#include "fiberscope/condition.hpp"

namespace fiberscope::detail {
struct Loop;
struct Thread;

// Appends `fiber` (which switched away) to the condition's waiters, then
// unlocks `mutex` (scheduling a fiber it hands the mutex to).
// `cancelable`: park with a sync-wait tag (see cancel.hpp), or, if the fiber
// was canceled already, unlock and schedule it with the Canceled outcome.
void conditionEnqueue(Loop& loop, Thread& thread, Condition& condition, Mutex& mutex, Fiber* fiber, bool cancelable);
// What Condition::wait parks with, and its PendingTask::park handler
// (scheduler/switch_message.hpp), which calls conditionEnqueue.
struct ConditionPark {
    Condition* condition;
    Mutex* mutex;
    bool cancelable;
};
void parkOnCondition(Loop& loop, Thread& thread, Fiber* fiber, const void* arg);
// A canceler's half: unlinks `fiber` from the waiters. False if it is not
// there (a signal took it first).
bool conditionCancelWaiter(Condition& condition, Fiber* fiber);
} // namespace fiberscope::detail
