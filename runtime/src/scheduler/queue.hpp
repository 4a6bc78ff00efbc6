// The owner's and the thieves' sides of a thread's ready queue word and its
// run_next (queue.cpp), for findReadyFiber and the scaling policy's search.
#pragma once

#include "fiber/fiber.hpp"

namespace fiberscope::detail {

struct Loop;
struct Thread;

// Takes the whole ready list of one of a few other threads, runs its head
// and publishes the rest from our slot, which must hold kFinished while we
// do (no hand-off can land in it and no thief takes from it). nullptr:
// nothing found (the slot still holds kFinished).
Fiber* stealReady(Loop& loop, Thread& thread);
// Pops our own slot's head, leaving kFinished in it when it was empty.
Fiber* popOwn(Thread& thread);
// Takes our own run_next (scaling policy).
Fiber* takeRunNext(Thread& thread);

} // namespace fiberscope::detail
