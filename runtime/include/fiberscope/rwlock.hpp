// RwLock: a readers-writer lock for fibers (Zig's Thread.RwLock). Any number
// of readers (lockShared) or one writer (lock) hold it at a time.
//
//     if (auto s = table.lockShared(); !s) return s;
//     std::shared_lock guard(table, std::adopt_lock);
//
// Fairness: writer preference, with reader batches.
// - Once a writer waits, new readers wait too, even while other readers
//   hold the lock: a stream of readers cannot starve a writer. The writer
//   gets the lock as soon as the readers holding it let go.
// - A writer's unlock() admits, as one batch, every reader waiting at that
//   moment, before the next waiting writer (which then waits for that batch
//   to leave): a stream of writers cannot starve readers either.
// - A waiting writer that is canceled or times out, if it was the last one
//   waiting and no writer holds the lock, admits the readers that were
//   waiting behind it (with a writer holding, its unlock() admits them).
// Among writers there is no strict order: a lock() that finds the lock free
// takes it, even if a woken writer has not run yet.
//
// How it is built, and why: the state (readers holding, a writer holding,
// writers and readers waiting, a batch number) is guarded by a fiber Mutex;
// readers and writers sleep on two Conditions. Built on Mutex + Condition,
// it inherits their cancel and timeout handling (one outcome per race,
// CancelProtection honoured) and shows up in traces as their records.
// Readers are admitted by the unlocker (it counts the whole batch as
// holding and bumps the batch number), not by the readers themselves once
// they run, so a writer arriving before the woken readers have run cannot
// slip in ahead of them: the batch already holds the lock.
//
// lock() and lockShared() are cancel points when they have to wait (as
// Mutex::lock): a fiber canceled before or while it waits returns Canceled
// holding nothing. A cancel that races an admission has one outcome: a
// reader its batch admitted first returns success (holding the lock; the
// cancel stays pending); a writer woken first takes the lock, otherwise the
// wake-up goes to the next writer. The Uncancelable forms wait regardless.
// All take an optional Timeout: TimedOut (holding nothing) if the lock was
// not had within it, never before it has passed. tryLock()/tryLockShared()
// never wait for the lock (they take the internal mutex, held by others
// only for a few instructions). unlock() without the write lock or
// unlockShared() without a read lock abort with one line.
//
// Beware, as with Mutex: std::lock_guard and std::unique_lock constructed
// on the lock itself call lock() and drop its Status, so a canceled fiber
// would then unlock a lock it does not hold (std::shared_lock on it does
// not compile: RwLock has no lock_shared()). Lock first and adopt it:
//
//     if (auto s = table.lock(); !s) return s;
//     std::lock_guard guard(table, std::adopt_lock);
//
// Use only from fibers of an EventLoop (and the thread that created it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "fiberscope/clock.hpp"
#include "fiberscope/condition.hpp"
#include "fiberscope/mutex.hpp"
#include "fiberscope/object_name.hpp"
#include "fiberscope/result.hpp"

namespace fiberscope {

class RwLock {
public:
    RwLock() = default;
    RwLock(const RwLock&) = delete;
    RwLock& operator=(const RwLock&) = delete;

    // Writer side: exclusive.
    Status lock(Timeout timeout = {}) { return lockImpl(true, timeout); }
    void lockUncancelable() { (void)lockImpl(false, {}); }
    Status lockUncancelable(Timeout timeout) { return lockImpl(false, timeout); }
    bool tryLock();
    void unlock();

    // Reader side: shared with other readers.
    Status lockShared(Timeout timeout = {}) { return lockSharedImpl(true, timeout); }
    void lockSharedUncancelable() { (void)lockSharedImpl(false, {}); }
    Status lockSharedUncancelable(Timeout timeout) { return lockSharedImpl(false, timeout); }
    bool tryLockShared();
    void unlockShared();

    // The standard names, for std::unique_lock / std::shared_lock with
    // std::adopt_lock or std::try_to_lock.
    bool try_lock() { return tryLock(); }
    bool try_lock_shared() { return tryLockShared(); }
    void unlock_shared() { unlockShared(); }

    // Names it and its parts in the trace (object_name.hpp).
    friend void setObjectName(const RwLock& lock, std::string_view name) noexcept;

private:
    Status lockImpl(bool cancelable, Timeout timeout);
    Status lockSharedImpl(bool cancelable, Timeout timeout);
    // With mutex_ held: counts every waiting reader as holding, bumps the
    // batch; returns whether readers_cv_ needs a broadcast.
    bool admitReaders();

    Mutex mutex_;
    Condition readers_cv_, writers_cv_;
    // Guarded by mutex_.
    std::size_t readers_ = 0;         // readers holding (admitted ones included)
    bool writer_ = false;             // a writer holds it
    std::size_t writers_waiting_ = 0; // writers inside writers_cv_.wait()
    std::size_t readers_waiting_ = 0; // readers waiting for a batch
    std::uint64_t batch_ = 0;         // admissions so far
};

// Names it and its parts in the trace (object_name.hpp). Declared here too,
// so that fiberscope::setObjectName finds it (a friend alone is found only
// by an unqualified call).
void setObjectName(const RwLock& lock, std::string_view name) noexcept;

} // namespace fiberscope
