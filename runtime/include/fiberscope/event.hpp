// Event: a manual-reset event for fibers (Zig's ResetEvent). set() wakes
// every waiting fiber and leaves the event set: a wait() on a set event
// returns at once, until reset().
//
//     fiberscope::Event ready;
//     loop->async([&] { prepare(); ready.set(); });
//     if (auto s = ready.wait(std::chrono::seconds(1)); !s) return s; // Canceled / TimedOut
//
// How it is built, and why: a flag and a generation number guarded by a
// fiber Mutex, and a Condition the waiters sleep on. Building it on
// Mutex + Condition (rather than a futex-like word of its own) gives it, for
// free, what they already get right: a cancel, a timeout and a wake-up that
// race have one outcome, cancel points honour CancelProtection, and the waits
// show up in traces as the records of its Mutex and Condition. The
// generation counts set() calls that found the event clear: a waiter
// returns once the flag is up or the generation moved, so a set() followed
// at once by reset() still releases every fiber that was waiting (they do
// not re-check a flag that is already down again). The flag is also an
// atomic, so wait() on a set event and isSet() take no lock.
//
// wait() is a cancel point when it has to wait (as Mutex::lock): a fiber
// canceled before it or while it waits returns Canceled; a wait on a set
// event succeeds even with a cancel pending. A set() is never lost to a
// cancel: the event stays set, and every other waiter is woken.
// waitUncancelable() waits regardless; the cancel stays pending. Both take
// an optional Timeout: TimedOut if the event was not set within it (never
// before it has passed).
//
// Use only from fibers of an EventLoop (and the thread that created it).
#pragma once

#include <atomic>
#include <cstdint>

#include "fiberscope/clock.hpp"
#include "fiberscope/condition.hpp"
#include "fiberscope/mutex.hpp"
#include "fiberscope/object_name.hpp"
#include "fiberscope/result.hpp"

namespace fiberscope {

class Event {
public:
    Event() = default;
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    // Sets the event and wakes every waiting fiber.
    void set();
    // Clears the event; later waits wait for the next set().
    void reset() noexcept;
    bool isSet() const noexcept {
        // acquire: pairs with set()'s release, so a fiber that sees the
        // event set also sees what the setter wrote before set().
        return set_.load(std::memory_order_acquire);
    }

    // Returns once the event is set; Canceled or TimedOut otherwise.
    Status wait(Timeout timeout = {}) {
        if (isSet()) return {};
        return waitSlow(true, timeout);
    }
    void waitUncancelable() {
        if (!isSet()) (void)waitSlow(false, {});
    }
    Status waitUncancelable(Timeout timeout) {
        if (isSet()) return {};
        return waitSlow(false, timeout);
    }

    // Names it and its parts in the trace (object_name.hpp).
    friend void setObjectName(const Event& event, std::string_view name) noexcept;

private:
    Status waitSlow(bool cancelable, Timeout timeout);

    Mutex mutex_;
    Condition condition_;
    std::atomic<bool> set_{false};
    // set() calls that found the event clear; guarded by mutex_.
    std::uint64_t generation_ = 0;
};

// Names it and its parts in the trace (object_name.hpp). Declared here too,
// so that fiberscope::setObjectName finds it (a friend alone is found only
// by an unqualified call).
void setObjectName(const Event& event, std::string_view name) noexcept;

} // namespace fiberscope
