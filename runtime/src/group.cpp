// Group: await-all and cancel-all over a set of member fibers.
#include "fiberscope/group.hpp"

#include <mutex>

#include "scheduler.hpp"
#include "tracing.hpp"

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
    FIBERSCOPE_TRACE_EVENT(emit::groupOp(now, GroupOp::Wait, this, currentFiberId()));
    Hold serial(wait_mutex_);
    for (;;) {
        detail::Fiber* front;
        {
            Hold lock(mutex_);
            if (members_.empty()) break;
            front = members_.front().fiber();
        }
        // Await without holding mutex_: cancel() can still reach this member.
        if (front) detail::awaitFiber(front);
        Status status;
        {
            Hold lock(mutex_);
            // Finished: await() returns at once, takes the result, recycles.
            status = members_.front().await();
            members_.pop_front();
        }
        if (!status && first_error_) first_error_ = status;
    }
    Status result = first_error_;
    first_error_ = {};
    {
        Hold lock(mutex_);
        canceled_ = false;
    }
    return result;
}

Status Group::cancel() {
    FIBERSCOPE_TRACE_EVENT(emit::groupOp(now, GroupOp::Cancel, this, currentFiberId()));
    {
        Hold lock(mutex_);
        canceled_ = true;
        for (auto& member : members_)
            if (member.fiber()) detail::requestCancel(member.fiber());
    }
    return wait();
}

} // namespace fiberscope
