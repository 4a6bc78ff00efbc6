// Group: await-all and cancel-all over a set of member fibers.
#include "fiberscope/group.hpp"

#include <mutex>

#include "scheduler.hpp"
#include "tracing.hpp"

namespace fiberscope {

void Group::add(Future<Status> future) {
    FIBERSCOPE_TRACE_EVENT(emit::groupOp(now, GroupOp::Spawn, this, future.fiber() ? detail::traceFiberId(future.fiber()) : 0));
    std::lock_guard lock(mutex_);
    if (canceled_ && future.fiber()) detail::requestCancel(future.fiber());
    members_.push_back(std::move(future));
}

Status Group::wait() {
    FIBERSCOPE_TRACE_EVENT(emit::groupOp(now, GroupOp::Wait, this, currentFiberId()));
    for (;;) {
        std::vector<Future<Status>> batch;
        {
            std::lock_guard lock(mutex_);
            batch.swap(members_);
        }
        if (batch.empty()) break;
        for (auto& member : batch) {
            Status status = member.await();
            if (!status && first_error_) first_error_ = status;
        }
    }
    Status result = first_error_;
    first_error_ = {};
    {
        std::lock_guard lock(mutex_);
        canceled_ = false;
    }
    return result;
}

Status Group::cancel() {
    FIBERSCOPE_TRACE_EVENT(emit::groupOp(now, GroupOp::Cancel, this, currentFiberId()));
    {
        std::lock_guard lock(mutex_);
        canceled_ = true;
        for (auto& member : members_)
            if (member.fiber()) detail::requestCancel(member.fiber());
    }
    return wait();
}

} // namespace fiberscope
