// Starting workers lazily (grow.cpp): schedule() starts the next worker
// when no thread takes the fibers it holds and EventLoopOptions::threads
// allows one more.
#pragma once

#include <cstdint>

#include "fiber/fiber.hpp"
#include "fiberscope/result.hpp"

namespace fiberscope::detail {

struct Loop;
class TracedFibers;

// Whether a worker may be started now (not during the back-off that
// follows a failed start).
bool mayGrow(const Loop& loop);
// Starts worker `index` (its slot reserved by the caller, through
// Loop::reserved) with `queue` as its first work (none if its head is
// null). Ok: it runs; else the failure was handled (said once, backed off)
// and the slot released, and the fibers are still the caller's. While tracing (`traced`: the
// queue's fibers as read before), a started worker's schedule records
// (how = new-worker) are written here, stamped before the thread that runs
// the fibers exists, and before the zone that times the start ends.
Status spawnWorker(Loop& loop, unsigned index, FiberQueue queue, const TracedFibers* traced = nullptr);

// EventLoop::startWorkers: starts every worker not started yet, each with
// no work; the error of the first that could not start (the loop keeps
// those it has). It does not wait for them to run (Thread::settled).
Status startAllWorkers(Loop& loop);

} // namespace fiberscope::detail
