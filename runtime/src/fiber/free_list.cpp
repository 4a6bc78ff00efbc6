// Per-thread free lists of finished fibers (free_list.hpp).
#include "fiber/free_list.hpp"

#include "fiber/stack_pool.hpp"
#include "loop.hpp"
#include "scheduler/victims.hpp"
#include "scheduler/worker.hpp"
#include "support/sanitizer.hpp"

namespace fiberscope::detail {

Fiber* takeFiber(Loop& loop, Thread& thread) {
    // Own list: only we push and pop; others only take it all. Taking it all
    // ourselves for a moment (a thief then finds it empty) means no link is
    // ever read while a thief may be rewriting it: reading head's link
    // before a CAS would race with a thief that took the list meanwhile
    // (ThreadSanitizer caught that one).
    // acquire: see the links of the fibers on the list.
    if (Fiber* head = thread.free_queue.exchange(nullptr, std::memory_order_acquire)) {
        // release: the rest stays published to thieves.
        thread.free_queue.store(head->queue_next, std::memory_order_release);
        head->queue_next = nullptr;
        return head;
    }
    // Steal another thread's whole free list (the newer seed's free_queue).
    // acquire: pairs with spawnWorker's release of `active`.
    const unsigned active = loop.active.load(std::memory_order_acquire);
    Fiber* stolen = nullptr;
    if (visitVictims(loop, thread, thread.own().steal_free_search_index, kMaxStealFreeSearch, active, [&](Thread& victim) {
            // relaxed: a test before the exchange, which decides.
            if (!victim.free_queue.load(std::memory_order_relaxed)) return false;
            // acquire: see the stolen fibers' links.
            stolen = victim.free_queue.exchange(nullptr, std::memory_order_acquire);
            return stolen != nullptr;
        })) {
        // release: our list is consistent for the next thief.
        thread.free_queue.store(stolen->queue_next, std::memory_order_release);
        stolen->queue_next = nullptr;
        return stolen;
    }
    return loop.stacks.carve();
}

void returnFiber(Thread& thread, Fiber* fiber) {
    // Off its stack for good: TSan's handle goes (spawnFiber makes a new one).
    tsanDestroyFiber(fiber->context.tsan_fiber);
    fiber->context.tsan_fiber = nullptr;
    Fiber* head = thread.free_queue.load(std::memory_order_relaxed);
    do fiber->queue_next = head;
    // release: thieves that take the list see our link.
    while (!thread.free_queue.compare_exchange_weak(head, fiber, std::memory_order_release, std::memory_order_relaxed));
}

} // namespace fiberscope::detail
