// Internal halves of Mutex and Condition that run inside switch handlers.
#pragma once

#include <cstdint>

#include "fiber.hpp"
#include "fiberscope/mutex.hpp"

namespace fiberscope::detail {
struct Loop;
struct Thread;

// Queues `fiber` (which switched away) on `mutex`, or gives it the mutex and
// schedules it if the mutex has meanwhile been unlocked.
void mutexEnqueue(Loop& loop, Thread& thread, Mutex& mutex, std::uintptr_t observed, Fiber* fiber);
// Unlocks `mutex`, or hands it to the most recent waiter, which
// is returned (it now owns the mutex and must be made ready by the caller).
Fiber* mutexRelease(Mutex& mutex, std::uintptr_t observed);
} // namespace fiberscope::detail
