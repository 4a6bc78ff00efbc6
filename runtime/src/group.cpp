// Group: await-all and cancel-all over a set of member fibers.
#include "fiberscope/group.hpp"

#include <mutex>

namespace fiberscope {

void Group::add(Future<Status> future) {
    std::lock_guard lock(mutex_);
    if (canceled_ && future.fiber()) detail::requestCancel(future.fiber());
    members_.push_back(std::move(future));
}

Status Group::wait() {
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
    {
        std::lock_guard lock(mutex_);
        canceled_ = true;
        for (auto& member : members_)
            if (member.fiber()) detail::requestCancel(member.fiber());
    }
    return wait();
}

} // namespace fiberscope
