// Event (event.hpp has the design): set() under the mutex, waits looping on
// the condition until the flag is up or the generation moved.
#include "fiberscope/event.hpp"

#include <mutex>

#include "sync/deadline.hpp"

namespace fiberscope {

void Event::set() {
    mutex_.lockUncancelable();
    // relaxed load: under the mutex, every store but reset()'s is ours to
    // see; a racing reset() is ordered either before (we set again) or after.
    const bool was_set = set_.load(std::memory_order_relaxed);
    if (!was_set) ++generation_;
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
    while (!set_.load(std::memory_order_relaxed) && generation_ == generation)
        if (auto s = detail::waitWithin(condition_, mutex_, cancelable, deadline); !s) return s;
    return {};
}

} // namespace fiberscope
