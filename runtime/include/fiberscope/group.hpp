// Group: structured concurrency. Fibers started with Group::async belong to
// the group; wait() awaits them all (including ones started meanwhile, from
// inside the group) and returns the first error any of them returned;
// cancel() asks them all to stop, then waits. A Group cancels and waits in
// its destructor, so no member outlives it.
#pragma once

#include <type_traits>
#include <utility>
#include <deque>

#include "fiberscope/event_loop.hpp"
#include "fiberscope/mutex.hpp"

namespace fiberscope {

class Group {
public:
    explicit Group(EventLoop& loop) : loop_(loop) {}
    Group(const Group&) = delete;
    Group& operator=(const Group&) = delete;
    ~Group() { (void)cancel(); }

    // Starts `f` (returning void or Status) as a member of the group.
    template <class F>
    void async(F&& f) {
        using Fn = std::decay_t<F>;
        auto wrapped = [fn = Fn(std::forward<F>(f))]() mutable -> Status {
            if constexpr (std::is_void_v<std::invoke_result_t<Fn&>>) {
                fn();
                return {};
            } else {
                return Status(fn());
            }
        };
        add(loop_.async(std::move(wrapped)));
    }

    // Awaits every member; the first error a member returned, if any.
    Status wait();
    // Requests cancellation of every member, then waits.
    Status cancel();

private:
    void add(Future<Status> future);
    EventLoop& loop_;
    // Guards members_; held only briefly, never across an await, so cancel()
    // reaches members a concurrent wait() is awaiting.
    Mutex mutex_;
    // Serialises concurrent wait() calls (held across their awaits).
    Mutex wait_mutex_;
    // Members stay here until awaited and recycled; a deque keeps the front
    // in place while new members are appended.
    std::deque<Future<Status>> members_;
    Status first_error_;
    bool canceled_ = false;
};

} // namespace fiberscope
