// Event (event.hpp has the design): set() under the mutex, waits looping on
// the condition until the flag is up or the generation moved.
#include "fiberscope/event.hpp"

#include <mutex>

#include "fiberscope/event_loop.hpp"
#include "support/tracing.hpp"
#include "sync/deadline.hpp"

// Its records (event: set, reset, blocked, returned, gave-up) are written
// before the change they describe can be seen: set's under the mutex before
// the flag is raised, reset's before its store, a waiter's under the mutex.
// A wait that finds the event set changes nothing and writes nothing. The
// Mutex's and Condition's own records stay: they schedule the fibers.
namespace fiberscope {

namespace {
void traceOp(trace::EventOp op, const Event* event) noexcept {
    FIBERSCOPE_TRACE_EVENT(emit::eventOp(now, op, event, currentFiberId()));
}
} // namespace

void Event::reset() noexcept {
    traceOp(trace::EventOp::Reset, this);
    // relaxed: a reset publishes nothing. A wait() that reads the stale
    // `true` returns as it would have just before the reset; one that
    // reads `false` takes the mutex, which orders it against set().
    set_.store(false, std::memory_order_relaxed);
}

void Event::set() {
    mutex_.lockUncancelable();
    // relaxed load: under the mutex, every store but reset()'s is ours to
    // see; a racing reset() is ordered either before (we set again) or after.
    const bool was_set = set_.load(std::memory_order_relaxed);
    if (!was_set) ++generation_;
    traceOp(trace::EventOp::Set, this);
    // release: pairs with isSet()'s acquire (the lock-free path of wait()).
    set_.store(true, std::memory_order_release);
    mutex_.unlock();
    // Waiters sleep only while the event was clear, and they queue under the
    // mutex, so one broadcast per clear-to-set transition reaches them all.
    if (!was_set) condition_.broadcast();
}

Status Event::waitSlow(bool cancelable, Timeout timeout) {
    const detail::SyncDeadline deadline(timeout);
    if (auto s = detail::lockInternal(mutex_, cancelable); !s) return s;
    std::unique_lock lock(mutex_, std::adopt_lock);
    const std::uint64_t generation = generation_;
    // relaxed: the mutex orders us against set() (which stores under it).
    const auto clear = [&] { return !set_.load(std::memory_order_relaxed) && generation_ == generation; };
    if (!clear()) return {}; // set meanwhile: nothing changed, nothing to record
    traceOp(trace::EventOp::Blocked, this);
    while (clear())
        if (auto s = detail::waitWithin(condition_, mutex_, cancelable, deadline); !s) {
            traceOp(trace::EventOp::GaveUp, this);
            return s;
        }
    traceOp(trace::EventOp::Returned, this);
    return {};
}

} // namespace fiberscope
