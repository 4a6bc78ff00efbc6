// Finished fibers are kept, header and stack, for the next spawn: each
// worker has a free list (Thread::free_queue). Only its owner pushes and
// pops; another thread may only take the whole list at once (an exchange
// with nullptr), which rules out ABA. A thread whose list is empty steals
// another's before it carves a new slot (the newer seed's free_queue).
#pragma once

#include "fiber/fiber.hpp"

namespace fiberscope::detail {

struct Loop;
struct Thread;

// A fiber header ready for a new task: from this thread's free list, else
// stolen from another thread's, else carved. nullptr if out of memory.
Fiber* takeFiber(Loop& loop, Thread& thread);
// Returns a finished fiber's slot to this thread's free list.
void returnFiber(Thread& thread, Fiber* fiber);

} // namespace fiberscope::detail
