// Pinning worker threads to CPUs (EventLoopOptions::pin_workers,
// FIBERSCOPE_PIN): worker i runs only on the i-th CPU of the set the
// process may use (round robin past its end), so that the OS cannot move a
// worker between CPUs and a lesson's picture stays the same from run to
// run. The creating thread is worker 0: its own set is kept and put back
// when the loop ends, since it is the user's thread.
#pragma once

#include <sched.h>

#include <vector>

namespace fiberscope::detail {

// The CPUs the calling thread may run on, in order (empty if unknown).
std::vector<int> allowedCpus() noexcept;

// Pins the calling thread to `cpu`. false (errno kept) if the kernel refused.
bool pinCallingThread(int cpu) noexcept;

// The calling thread's CPU set, to be put back later.
struct SavedAffinity {
    cpu_set_t set;
    bool saved = false;
    void save() noexcept;
    void restore() const noexcept;
};

} // namespace fiberscope::detail
