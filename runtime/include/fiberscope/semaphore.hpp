// Semaphore: a counting semaphore for fibers (Zig's Thread.Semaphore).
// post(n) adds n permits and wakes up to n waiters; wait() takes one,
// suspending the fiber while there is none.
//
//     fiberscope::Semaphore slots(4); // at most 4 requests in flight
//     if (auto s = slots.wait(); !s) return s;
//     auto reply = request(...);
//     slots.post();
//
// How it is built, and why: a permit count and a count of sleeping waiters
// guarded by a fiber Mutex, and a Condition the waiters sleep on. Built on
// Mutex + Condition, it inherits their cancel and timeout handling (one
// outcome per race, CancelProtection honoured) and shows up in traces as
// their records. A post(n) signals min(n, waiters) fibers, not all of them:
// no thundering herd for post(). A woken fiber re-checks the count (a
// fiber calling wait() meanwhile may have taken the permit, which is not
// lost: it was taken), so waiters are not strictly first-come first-served.
//
// wait() is a cancel point when it has to wait (as Mutex::lock): a fiber
// canceled before it or while it waits returns Canceled having taken
// nothing; with a permit free it takes it even with a cancel pending. A
// post() that races a cancel is never lost: either the waiter was woken
// first and takes the permit (wait() succeeds, the cancel stays pending),
// or the cancel was first and the wake-up goes to the next waiter or the
// permit stays counted. waitUncancelable() waits regardless. Both take an
// optional Timeout: TimedOut (nothing taken) if no permit came within it,
// never before it has passed. tryWait() never waits for a permit (it takes
// the internal mutex, held by others only for a few instructions).
//
// There is no std guard for a semaphore; pair every successful wait() with
// one post().
//
// Use only from fibers of an EventLoop (and the thread that created it).
#pragma once

#include <cstddef>

#include "fiberscope/clock.hpp"
#include "fiberscope/condition.hpp"
#include "fiberscope/mutex.hpp"
#include "fiberscope/object_name.hpp"
#include "fiberscope/result.hpp"

namespace fiberscope {

class Semaphore {
public:
    explicit Semaphore(std::size_t permits = 0) noexcept : count_(permits) {}
    Semaphore(const Semaphore&) = delete;
    Semaphore& operator=(const Semaphore&) = delete;

    // Adds `n` permits and wakes up to `n` waiting fibers.
    void post(std::size_t n = 1);
    // Takes a permit, waiting for one: Canceled or TimedOut otherwise.
    Status wait(Timeout timeout = {}) { return waitImpl(true, timeout); }
    void waitUncancelable() { (void)waitImpl(false, {}); }
    Status waitUncancelable(Timeout timeout) { return waitImpl(false, timeout); }
    // Takes a permit if one is free.
    bool tryWait();

    // Names it and its parts in the trace (object_name.hpp).
    friend void setObjectName(const Semaphore& semaphore, std::string_view name) noexcept;

private:
    Status waitImpl(bool cancelable, Timeout timeout);

    Mutex mutex_;
    Condition available_;
    // Guarded by mutex_.
    std::size_t count_;
    std::size_t waiters_ = 0; // fibers inside available_.wait()
};

// Names it and its parts in the trace (object_name.hpp). Declared here too,
// so that fiberscope::setObjectName finds it (a friend alone is found only
// by an unqualified call).
void setObjectName(const Semaphore& semaphore, std::string_view name) noexcept;

} // namespace fiberscope
