// Group: await-all and cancel-all over a set of member fibers.
#include "fiberscope/group.hpp"

#include <array>
#include <exception>
#include <mutex>
#include <utility>

#include "scheduler/scheduler.hpp"
#include "support/tracing.hpp"

namespace fiberscope {

namespace {
// The group's own locks must be taken whatever happens: a canceled fiber's
// Group still has to wait for its members (Mutex::lock would return Canceled).
struct Hold {
    Mutex& mutex;
    explicit Hold(Mutex& m) : mutex(m) { mutex.lockUncancelable(); }
    ~Hold() { mutex.unlock(); }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
};
} // namespace

void Group::add(Future<Status> future) {
    FIBERSCOPE_TRACE_EVENT(emit::groupOp(now, GroupOp::Spawn, this, future.fiber() ? detail::traceFiberId(future.fiber()) : 0));
    Hold lock(mutex_);
    if (canceled_ && future.fiber()) detail::requestCancel(future.fiber());
    members_.push_back(std::move(future));
}

Status Group::wait() {
    // A plain std::thread has no fiber to suspend while members finish.
    if (!EventLoop::current()) return Errc::NotOnLoopThread;
    FIBERSCOPE_TRACE_EVENT(emit::groupOp(now, GroupOp::Wait, this, currentFiberId()));
    std::exception_ptr exception;
    Status result;
    // Set once the waiting fiber is canceled: the cancel then goes to every
    // member (as cancel() does), and wait() joins them all and returns Canceled.
    bool waiter_canceled = false;
    {
        Hold serial(wait_mutex_);
        for (;;) {
            detail::Fiber* front;
            {
                Hold lock(mutex_);
                if (members_.empty()) break;
                front = members_.front().fiber();
            }
            // Await without holding mutex_: cancel() can still reach this member.
            // A cancel point (a one-future select) until we are canceled.
            if (front && !waiter_canceled) {
                const std::array<detail::Fiber*, 1> one{front};
                if (detail::selectFibers(detail::selectRefs(one), true) == detail::kSelectCanceled) {
                    waiter_canceled = true;
                    cancelMembers();
                }
            }
            if (front && waiter_canceled) detail::awaitFiber(front);
            Status status;
            bool absorb_canceled;
            {
                Hold lock(mutex_);
                // Finished: await() returns at once, takes the result, recycles.
                // The member leaves the list whatever it returned or threw, so
                // nothing (a later wait, the destructor) reads its result again.
                Future<Status> member = std::move(members_.front());
                members_.pop_front();
                try {
                    status = member.await();
                } catch (...) {
                    // Only noted here (nothing suspends in a catch block);
                    // rethrown once every member is done.
                    if (!first_exception_) first_exception_ = std::current_exception();
                }
                absorb_canceled = canceled_;
            }
            // Canceled because the group itself was canceled is what cancel()
            // asked for, not a member's failure (as in Zig's Io.Group).
            if (!status && !(absorb_canceled && status.error() == Errc::Canceled) && first_error_) first_error_ = status;
        }
        result = waiter_canceled ? Status(Errc::Canceled) : first_error_;
        first_error_ = {};
        exception = std::exchange(first_exception_, nullptr);
    }
    if (exception) std::rethrow_exception(exception);
    return result;
}

Status Group::cancel() {
    // Checked before any cancel request: sending one needs a loop thread.
    if (!EventLoop::current()) return Errc::NotOnLoopThread;
    FIBERSCOPE_TRACE_EVENT(emit::groupOp(now, GroupOp::Cancel, this, currentFiberId()));
    cancelMembers();
    return wait();
}

void Group::cancelMembers() {
    Hold lock(mutex_);
    canceled_ = true;
    for (auto& member : members_)
        if (member.fiber()) detail::requestCancel(member.fiber());
}

} // namespace fiberscope

namespace fiberscope {

void Group::destroy() noexcept {
    if (!EventLoop::current()) {
        // No other thread can touch a group being destroyed: no lock needed.
        if (!members_.empty())
            detail::misuse("a Group destroyed on a thread that is not one of the loop's, with members to cancel and join");
        return;
    }
    try {
        (void)cancel();
    } catch (...) {
        // A member's exception that no wait() collected: dropped with the
        // group, as an unawaited Future's is (group.hpp).
    }
}

} // namespace fiberscope
