// Starting workers lazily (grow.cpp): schedule() starts the next worker
// when no thread takes the fibers it holds and EventLoopOptions::threads
// allows one more.
#pragma once

#include <cstdint>

#include "fiber/fiber.hpp"

namespace fiberscope::detail {

struct Loop;
class TracedFibers;

// Whether a worker may be started now (not during the back-off that
// follows a failed start).
bool mayGrow(const Loop& loop);
// Starts worker `index` (its slot reserved by the caller, through
// Loop::reserved) with `queue` as its first work. `spawned`: it runs; else
// the failure was handled (said once, backed off) and the slot released,
// and the fibers are still the caller's. While tracing (`traced`: the
// queue's fibers as read before), a started worker's schedule records
// (how = new-worker) are written here, stamped before the thread that runs
// the fibers exists, and before the zone that times the start ends.
void spawnWorker(Loop& loop, unsigned index, FiberQueue queue, bool& spawned, const TracedFibers* traced = nullptr);

} // namespace fiberscope::detail
