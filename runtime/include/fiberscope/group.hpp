// Group: structured concurrency. Fibers started with Group::async belong to
// the group; wait() awaits them all (including ones started meanwhile, from
// inside the group) and returns the first error any of them returned;
// cancel() asks them all to stop, then waits. A Group cancels and waits in
// its destructor, so no member outlives it.
//
// As in Zig's Io.Group:
// * cancel() is for good: once called, the group stays canceled, and a
//   member started later (by a member during the cancel, or by anyone after
//   it returned) is canceled as it joins: the cancel points it reaches from
//   then on return Canceled. Use a new Group for new work.
// * Canceled returned by a member of a canceled group is what the cancel
//   asked for, not a failure: wait() and cancel() do not report it (they
//   return the first other error, or success).
// A member that throws: the member is done like any other; wait() first
// awaits every other member, then rethrows the first exception (it wins
// over error statuses). An exception no wait() collected (the destructor's
// cancel) is dropped with the group, as a Future's is when it is destroyed
// unawaited.
#pragma once

#include <exception>
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
    // Cancels and joins every member. On a thread that is not one of the
    // loop's, with members left, aborts with one line saying so.
    ~Group() { destroy(); }

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

    // Awaits every member; the first error a member returned, if any
    // (Canceled not counted once the group is canceled); rethrows the first
    // exception a member threw, once all are done. NotOnLoopThread on a
    // thread that is not one of the loop's (wait() and cancel() suspend).
    // A cancel point: if the waiting fiber is canceled (before or while it
    // waits), the cancel propagates to the group (as cancel()), wait() joins
    // every member and returns Canceled. No member outlives a wait().
    Status wait();
    // Requests cancellation of every member, and of every member started
    // from now on, then waits (as wait()).
    Status cancel();

private:
    void add(Future<Status> future);
    // Marks the group canceled and asks every member to stop.
    void cancelMembers();
    void destroy() noexcept;
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
    std::exception_ptr first_exception_;
    // Set by cancel() and never cleared (see the top). Guarded by mutex_.
    bool canceled_ = false;
};

} // namespace fiberscope
