// WorkDeque: the scaling policy's queue of new work (spawns displaced from
// run_next, wake-ups, completions): a Chase-Lev deque (Chase and Lev, SPAA
// 2005; the orderings follow Lê, Pop, Cohen and Zappa Nardelli, PPoPP 2013).
// Its owner pushes and pops at the bottom, LIFO, so a tree of spawns runs
// depth-first on a warm cache; a thief takes one fiber from the top, the
// oldest, which in a tree of spawns is the root of the largest subtree left.
//
// Why not the seed's one-word LIFO list, which the scaling policy used for
// new work until stop 32: a thief can only take that list whole. In a tree
// of spawns (skynet) the thread robbed then has nothing but the fiber it
// runs, finishes it, and takes the whole list back: the two threads traded
// the list at almost every leaf, every trade a pair of cache-line moves,
// and skynet 1M on two threads took 0.87x its one-thread time (issue 15's
// target: 0.7x). Taking only the oldest leaves the victim its own recent,
// small work and gives the thief the big piece; a thread runs out again
// only when a whole subtree is done.
//
// Invariants: only the owner writes `bottom_` and the slots; `top_` moves
// only forward, by CAS (a thief's steal, the owner's pop of the last
// fiber, the owner's overflow). A slot in [top, bottom) holds a queued
// fiber. The counters wrap; they are compared as signed differences.
// Slots are atomics (relaxed) because a thief may read a slot the owner is
// overwriting after the thief's snapshot went stale; the thief's CAS on
// `top_` then fails and it discards what it read.
#pragma once

#include <atomic>
#include <cstdint>

#include "fiber/fiber.hpp"
#include "fiberscope/trace_emit.hpp"

namespace fiberscope::detail {

class WorkDeque {
public:
    static constexpr std::uint32_t kCapacity = 256;

    // Owner only: queues `fiber` at the bottom. False when full (the caller
    // moves half to the loop's overflow list: takeOlderHalf).
    bool push(Fiber* fiber) noexcept {
        // relaxed: only we write bottom.
        const std::uint32_t b = bottom_.load(std::memory_order_relaxed);
        // acquire: pairs with the thieves' CAS on top, so their reads of
        // the slots we are about to reuse are done.
        const std::uint32_t t = top_.load(std::memory_order_acquire);
        if (b - t >= kCapacity) return false;
        slots_[b % kCapacity].store(fiber, std::memory_order_relaxed);
        // release: the slot, and the fiber's state, before a thief that
        // reads bottom with acquire sees it.
        bottom_.store(b + 1, std::memory_order_release);
        return true;
    }

    // Owner only: the newest queued fiber, or nullptr.
    Fiber* pop() noexcept {
        // A look first (relaxed): bottom is ours, and a stale top is only
        // lower than the real one, so equal means empty; the common empty
        // case then costs no fence.
        const std::uint32_t last = bottom_.load(std::memory_order_relaxed);
        if (last == top_.load(std::memory_order_relaxed)) return nullptr;
        const std::uint32_t b = last - 1;
        // Claim the bottom slot, then look at top. release (every store of
        // bottom): a thief that reads this value (acquire) also sees the
        // slots pushed before it. The seq_cst fence orders this store
        // before the load of top: with the thief's fence between its load
        // of top and its load of bottom it is a Dekker pair, so either the
        // thief sees the claim or we see its steal.
        bottom_.store(b, std::memory_order_release);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        std::uint32_t t = top_.load(std::memory_order_relaxed);
        if (static_cast<std::int32_t>(b - t) < 0) {
            // A thief took the last fiber meanwhile.
            bottom_.store(last, std::memory_order_release);
            return nullptr;
        }
        Fiber* fiber = slots_[b % kCapacity].load(std::memory_order_relaxed);
        if (b != t) return fiber; // more than one: thieves stop below b
        // The last fiber: whoever moves top past it has it. seq_cst: the
        // thieves' CAS is the other side. relaxed on failure: we lost.
        const bool ours = top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed);
        bottom_.store(last, std::memory_order_release);
        return ours ? fiber : nullptr;
    }

    // A thief: the oldest queued fiber, or nullptr (empty, or another
    // thread took it first). `stamp` (while tracing) receives the trace
    // time read after the counters were and before the CAS that takes the
    // fiber: the steal's record time, between what it saw and what it did
    // (the emit layer's rule, support/tracing.hpp).
    Fiber* steal(std::uint64_t* stamp = nullptr) noexcept {
        // acquire: see what the CAS that moved top past a fiber saw.
        std::uint32_t t = top_.load(std::memory_order_acquire);
        // seq_cst: the Dekker pair with pop() (above).
        std::atomic_thread_fence(std::memory_order_seq_cst);
        // acquire: pairs with the owner's release stores of bottom, so the
        // slots below it, and the fibers' state, are visible.
        const std::uint32_t b = bottom_.load(std::memory_order_acquire);
        if (static_cast<std::int32_t>(b - t) <= 0) return nullptr;
        Fiber* fiber = slots_[t % kCapacity].load(std::memory_order_relaxed);
        if (stamp) *stamp = trace::now();
        // seq_cst: against the owner's CAS for the last fiber; release
        // also orders our read of the slot before the owner reuses it (its
        // push loads top with acquire). relaxed on failure: we lost.
        if (!top_.compare_exchange_strong(t, t + 1, std::memory_order_seq_cst, std::memory_order_relaxed))
            return nullptr;
        return fiber;
    }

    // Owner only: moves the older half of the deque to `out` (a list
    // through queue_next, oldest first), for the loop's overflow list, and
    // says how many. 0 if thieves took some meanwhile (the push can be
    // retried) or fewer than two are queued.
    std::uint32_t takeOlderHalf(FiberQueue& out) noexcept {
        // acquire: as in push.
        std::uint32_t t = top_.load(std::memory_order_acquire);
        const std::uint32_t b = bottom_.load(std::memory_order_relaxed);
        const std::uint32_t n = (b - t) / 2;
        if (n == 0) return 0;
        // Copied out first and linked only once the CAS made them ours:
        // until then a thief may take and run them, and a running fiber's
        // queue_next is its own. The bottom stays where it is (we are not
        // popping), so the CAS on top alone decides against the thieves.
        Fiber* batch[kCapacity / 2];
        for (std::uint32_t i = 0; i < n; ++i) batch[i] = slots_[(t + i) % kCapacity].load(std::memory_order_relaxed);
        // relaxed: only the outcome matters; the fibers are ours.
        if (!top_.compare_exchange_strong(t, t + n, std::memory_order_relaxed, std::memory_order_relaxed)) return 0;
        for (std::uint32_t i = 0; i + 1 < n; ++i) batch[i]->queue_next = batch[i + 1];
        batch[n - 1]->queue_next = nullptr;
        out = {batch[0], batch[n - 1]};
        return n;
    }

    // Owner only: whether nothing is queued (exact for the owner, as in pop).
    bool emptyForOwner() const noexcept {
        return bottom_.load(std::memory_order_relaxed) == top_.load(std::memory_order_relaxed);
    }
    // Any thread, a hint: whether fibers are queued. relaxed: steal decides.
    bool looksEmpty() const noexcept {
        return static_cast<std::int32_t>(bottom_.load(std::memory_order_relaxed) -
                                         top_.load(std::memory_order_relaxed)) <= 0;
    }
    // The same, as one side of the Dekker pair between a producer's push
    // and a searcher that gives up (scheduler.hpp).
    bool looksEmptySeqCst() const noexcept {
        return static_cast<std::int32_t>(bottom_.load(std::memory_order_seq_cst) -
                                         top_.load(std::memory_order_seq_cst)) <= 0;
    }

private:
    // One line for both counters: the owner reads both on every look
    // (EventLoop::yield on a one-worker loop looks at each of its queues),
    // and a thief reads both before it CASes top, so apart they would be
    // two lines to move instead of one.
    std::atomic<std::uint32_t> top_{0};
    std::atomic<std::uint32_t> bottom_{0};
    alignas(64) std::atomic<Fiber*> slots_[kCapacity] = {};
};

} // namespace fiberscope::detail
