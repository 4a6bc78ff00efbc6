// execute(): hands an Operation to the loop's backend.
#include "io/operation.hpp"

#include "loop.hpp"
#include "scheduler/worker.hpp"

namespace fiberscope::detail {

Result<Completion> execute(const Operation& op) {
    Thread* thread = currentThread();
    // A plain std::thread has no fiber to suspend: a named error, not a crash.
    if (!thread) return Error{Errc::NotOnLoopThread, 0};
    return thread->driver.execute(op, thread);
}

} // namespace fiberscope::detail
