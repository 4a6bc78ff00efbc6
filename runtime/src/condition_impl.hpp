// Internal half of Condition::wait that runs inside the switch handler.
#pragma once

#include "fiber.hpp"
#include "fiberscope/condition.hpp"

namespace fiberscope::detail {
struct Loop;
struct Thread;

// Appends `fiber` (which switched away) to the condition's waiters, then
// unlocks `mutex` (scheduling a fiber it hands the mutex to).
void conditionEnqueue(Loop& loop, Thread& thread, Condition& condition, Mutex& mutex, Fiber* fiber);
} // namespace fiberscope::detail
