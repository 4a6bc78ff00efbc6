// RwLock (rwlock.hpp has the policy and the design).
//
// The invariant the code keeps at every release of mutex_: readers wait
// (readers_waiting_ > 0) only while a writer holds the lock or waits for
// it. Each way out of that state admits them: a writer's unlock(), and the
// last waiting writer giving up while no writer holds the lock. A reader
// knows it was admitted by the batch number having moved, whoever woke it
// (and whatever its wait returned), so no admission is lost to a cancel.
//
// Writers are woken one at a time, when the lock becomes free for them: by
// the last reader's unlockShared(), or by a writer's unlock() that found no
// reader waiting. Condition passes a signal on past a waiter that a cancel
// or timeout took off the list first, and a writer that queues after the
// state changed sees the lock free and takes it, so a free lock with
// writers waiting always has one of them woken.
#include "fiberscope/rwlock.hpp"

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "fiberscope/event_loop.hpp"
#include "support/tracing.hpp"
#include "sync/deadline.hpp"

// Its records (rwlock: read-locked, write-locked, read-blocked,
// write-blocked, gave-up, read-unlock, write-unlock) are written under the
// internal mutex, as the state changes: in the order of the changes, and
// before another fiber can see them. A reader admitted in a batch by an
// unlock writes its read-locked when it runs again: its hold began at the
// admission, but no reader can be admitted past a writer before then, so
// the order of read and write holds is kept. The Mutex's and Conditions'
// own records stay: they say how the fibers were scheduled.
namespace fiberscope {

namespace {
void traceOp(trace::RwLockOp op, const RwLock* lock) noexcept {
    FIBERSCOPE_TRACE_EVENT(emit::rwlockOp(now, op, lock, currentFiberId()));
}
} // namespace

bool RwLock::admitReaders() {
    if (readers_waiting_ == 0) return false;
    readers_ += readers_waiting_;
    readers_waiting_ = 0;
    ++batch_;
    return true;
}

Status RwLock::lockImpl(bool cancelable, Timeout timeout) {
    const detail::SyncDeadline deadline(timeout);
    if (auto s = detail::lockInternal(mutex_, cancelable); !s) return s;
    std::unique_lock lock(mutex_, std::adopt_lock);
    if (!writer_ && readers_ == 0) {
        writer_ = true;
        traceOp(trace::RwLockOp::WriteLocked, this);
        return {};
    }
    traceOp(trace::RwLockOp::WriteBlocked, this);
    ++writers_waiting_;
    while (writer_ || readers_ > 0) {
        Status s = detail::waitWithin(writers_cv_, mutex_, cancelable, deadline);
        if (!s) {
            traceOp(trace::RwLockOp::GaveUp, this);
            --writers_waiting_;
            // The readers queued behind us (and any other waiting writer)
            // may go now, unless a writer holds it (its unlock admits them).
            const bool wake_readers = writers_waiting_ == 0 && !writer_ && admitReaders();
            lock.unlock();
            if (wake_readers) readers_cv_.broadcast();
            return s;
        }
    }
    --writers_waiting_;
    writer_ = true;
    traceOp(trace::RwLockOp::WriteLocked, this);
    return {};
}

bool RwLock::tryLock() {
    mutex_.lockUncancelable();
    const bool taken = !writer_ && readers_ == 0;
    if (taken) writer_ = true, traceOp(trace::RwLockOp::WriteLocked, this);
    mutex_.unlock();
    return taken;
}

void RwLock::unlock() {
    mutex_.lockUncancelable();
    if (!writer_) {
        std::fprintf(stderr, "fiberscope: RwLock::unlock without the write lock held\n");
        std::abort();
    }
    writer_ = false;
    traceOp(trace::RwLockOp::WriteUnlock, this);
    const bool wake_readers = admitReaders();
    const bool wake_writer = !wake_readers && writers_waiting_ > 0;
    mutex_.unlock();
    if (wake_readers) readers_cv_.broadcast();
    else if (wake_writer) writers_cv_.signal();
}

Status RwLock::lockSharedImpl(bool cancelable, Timeout timeout) {
    const detail::SyncDeadline deadline(timeout);
    if (auto s = detail::lockInternal(mutex_, cancelable); !s) return s;
    std::unique_lock lock(mutex_, std::adopt_lock);
    if (!writer_ && writers_waiting_ == 0) {
        ++readers_;
        traceOp(trace::RwLockOp::ReadLocked, this);
        return {};
    }
    traceOp(trace::RwLockOp::ReadBlocked, this);
    const std::uint64_t batch = batch_;
    ++readers_waiting_;
    while (batch_ == batch) {
        Status s = detail::waitWithin(readers_cv_, mutex_, cancelable, deadline);
        if (!s) {
            // Admitted before the cancel or timeout reached us: we hold it.
            if (batch_ != batch) break;
            traceOp(trace::RwLockOp::GaveUp, this);
            --readers_waiting_;
            return s;
        }
    }
    // Admitted: admitReaders() counted us in readers_.
    traceOp(trace::RwLockOp::ReadLocked, this);
    return {};
}

bool RwLock::tryLockShared() {
    mutex_.lockUncancelable();
    const bool taken = !writer_ && writers_waiting_ == 0;
    if (taken) ++readers_, traceOp(trace::RwLockOp::ReadLocked, this);
    mutex_.unlock();
    return taken;
}

void RwLock::unlockShared() {
    mutex_.lockUncancelable();
    if (readers_ == 0) {
        std::fprintf(stderr, "fiberscope: RwLock::unlockShared without a read lock held\n");
        std::abort();
    }
    --readers_;
    traceOp(trace::RwLockOp::ReadUnlock, this);
    const bool wake_writer = readers_ == 0 && writers_waiting_ > 0;
    mutex_.unlock();
    if (wake_writer) writers_cv_.signal();
}

} // namespace fiberscope
