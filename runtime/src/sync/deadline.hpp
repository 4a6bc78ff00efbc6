// The timeout and cancel plumbing Event, Semaphore and RwLock share.
//
// Each of them waits in a loop on a Condition (a wake-up may find what it
// waited for taken again by a fiber that got there first), so one Timeout
// must bound the whole loop, not each Condition::wait: the deadline is
// fixed once, on the steady clock (CLOCK_MONOTONIC, the clock the runtime's
// timed sync waits use), and each wait gets what is left of it.
#pragma once

#include <chrono>

#include "fiberscope/clock.hpp"
#include "fiberscope/condition.hpp"
#include "fiberscope/mutex.hpp"
#include "fiberscope/result.hpp"

namespace fiberscope::detail {

class SyncDeadline {
public:
    explicit SyncDeadline(Timeout timeout) : limited_(timeout.limited()) {
        if (limited_) at_ = std::chrono::steady_clock::now() + timeout.duration;
    }
    bool limited() const noexcept { return limited_; }
    // What is left (zero or less once passed).
    std::chrono::nanoseconds left() const { return at_ - std::chrono::steady_clock::now(); }

private:
    bool limited_;
    std::chrono::steady_clock::time_point at_{};
};

// Locks a primitive's internal mutex: a cancel point if `cancelable` (as
// Mutex::lock: Canceled only if it has to wait).
inline Status lockInternal(Mutex& mutex, bool cancelable) {
    if (cancelable) return mutex.lock();
    mutex.lockUncancelable();
    return {};
}

// One wait on `condition` (its `mutex` held) within `deadline`. Returns
// Canceled or TimedOut as Condition::wait does, always with the mutex held.
// A TimedOut that came before the deadline by our clock is reported as a
// (spurious) wake-up, so the caller re-checks and waits for the rest: a
// primitive never times out early.
inline Status waitWithin(Condition& condition, Mutex& mutex, bool cancelable, const SyncDeadline& deadline) {
    if (!deadline.limited()) {
        if (cancelable) return condition.wait(mutex);
        condition.waitUncancelable(mutex);
        return {};
    }
    const auto left = deadline.left();
    if (left.count() <= 0) return Errc::TimedOut;
    Status status = cancelable ? condition.wait(mutex, Timeout(left)) : condition.waitUncancelable(mutex, Timeout(left));
    if (!status && status.error() == Errc::TimedOut && deadline.left().count() > 0) return {};
    return status;
}

} // namespace fiberscope::detail
