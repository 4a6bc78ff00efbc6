// RunQueue: the scaling policy's queue of fibers that yielded (Go's runq): a
// ring of kCapacity fibers, FIFO, owned by one worker, stolen from by the
// others half at a time. (New work goes on the worker's LIFO queue word:
// scheduler.hpp says why.)
//
// Why not the seed's one-word LIFO list: pushing on it is a CAS loop and
// popping an exchange plus a store, two locked read-modify-writes on a
// line thieves and hand-offs keep pulling away; and a LIFO makes yield
// unfair among three or more fibers (the one that just yielded runs next).
// Here the owner pushes with two plain stores (the slot, then `tail` with
// release): no read-modify-write at all. It pops from the head with one
// CAS on `head`, on a line that stays in its cache while nobody steals (on
// a loop of one thread, where nobody can steal, with no CAS: popAlone).
// FIFO gives round-robin yield. A thief takes the older half with one CAS
// on `head`, so one steal balances two threads instead of moving the whole
// queue back and forth.
//
// Invariants: only the owner writes `tail` and the slots; `head` moves only
// forward, by CAS (the owner's pop, a thief's grab, the owner's overflow);
// tail - head <= kCapacity. A slot in [head, tail) holds a queued fiber.
// Slots are atomics (relaxed) because a thief may read a slot the owner is
// overwriting after the thief's snapshot went stale; the thief's CAS on
// `head` then fails and it discards what it read.
#pragma once

#include <atomic>
#include <cstdint>

#include "fiber/fiber.hpp"
#include "fiberscope/trace_emit.hpp"

namespace fiberscope::detail {

class RunQueue {
public:
    static constexpr std::uint32_t kCapacity = 256;

    // Owner only: queues `fiber` at the tail. False when full (the caller
    // moves half to the loop's overflow list: takeOlderHalf).
    bool push(Fiber* fiber) noexcept {
        // acquire: pairs with the thieves' release CAS on head, so their
        // reads of the slots we are about to reuse are done.
        const std::uint32_t h = head_.load(std::memory_order_acquire);
        // relaxed: only we write tail.
        const std::uint32_t t = tail_.load(std::memory_order_relaxed);
        if (t - h >= kCapacity) return false;
        slots_[t % kCapacity].store(fiber, std::memory_order_relaxed);
        // release: the slot, and the fiber's state, before a thief or a
        // later pop that reads tail with acquire sees it.
        tail_.store(t + 1, std::memory_order_release);
        return true;
    }

    // Owner only: the oldest queued fiber, or nullptr.
    Fiber* pop() noexcept {
        // relaxed: the CAS below decides; only we write the slots we read.
        std::uint32_t h = head_.load(std::memory_order_relaxed);
        for (;;) {
            const std::uint32_t t = tail_.load(std::memory_order_relaxed);
            if (t == h) return nullptr;
            Fiber* fiber = slots_[h % kCapacity].load(std::memory_order_relaxed);
            // relaxed: the fiber is ours (we queued it); a failure reloads h
            // (a thief took it).
            if (head_.compare_exchange_weak(h, h + 1, std::memory_order_relaxed, std::memory_order_relaxed))
                return fiber;
        }
    }

    // Owner only, and only where no thief can exist (a loop of one worker
    // thread: nobody else ever steals): pop() without its CAS, a plain
    // load and store of `head` (relaxed: no other thread reads it). The
    // CAS, a locked instruction, was a third of a yield's time there.
    Fiber* popAlone() noexcept {
        const std::uint32_t h = head_.load(std::memory_order_relaxed);
        if (tail_.load(std::memory_order_relaxed) == h) return nullptr;
        Fiber* fiber = slots_[h % kCapacity].load(std::memory_order_relaxed);
        head_.store(h + 1, std::memory_order_relaxed);
        return fiber;
    }

    // Owner only, and only where no thief can exist (as popAlone): takes
    // the oldest fiber and queues `fiber` at the tail in one step, what a
    // pop and then a push do, without reading back what either just wrote.
    // nullptr (and `fiber` not queued): the queue was empty.
    Fiber* rotateAlone(Fiber* fiber) noexcept {
        // relaxed (all): no other thread reads the ring (popAlone).
        const std::uint32_t h = head_.load(std::memory_order_relaxed);
        const std::uint32_t t = tail_.load(std::memory_order_relaxed);
        if (t == h) return nullptr;
        Fiber* oldest = slots_[h % kCapacity].load(std::memory_order_relaxed);
        // t - h <= kCapacity and the head slot is free now: the tail slot is
        // the head slot when the ring is full, else an empty one.
        slots_[t % kCapacity].store(fiber, std::memory_order_relaxed);
        head_.store(h + 1, std::memory_order_relaxed);
        tail_.store(t + 1, std::memory_order_relaxed);
        return oldest;
    }

    // Owner only: moves the older half of a full queue to `out` (a list
    // through queue_next), for the loop's overflow list, and says how many.
    // 0 if thieves took some meanwhile (the push can be retried).
    std::uint32_t takeOlderHalf(FiberQueue& out) noexcept {
        // acquire: as in push (the slots we read were written by us anyway).
        std::uint32_t h = head_.load(std::memory_order_acquire);
        const std::uint32_t t = tail_.load(std::memory_order_relaxed);
        const std::uint32_t n = (t - h) / 2;
        if (n == 0) return 0;
        // Copied out first and linked only once the CAS made them ours: until
        // then a thief may take them and run them, and a running fiber's
        // queue_next is its own (a mutex's waiter list, a free list).
        Fiber* batch[kCapacity / 2];
        for (std::uint32_t i = 0; i < n; ++i) batch[i] = slots_[(h + i) % kCapacity].load(std::memory_order_relaxed);
        // relaxed: only the CAS's outcome matters; the fibers are ours.
        if (!head_.compare_exchange_strong(h, h + n, std::memory_order_relaxed, std::memory_order_relaxed))
            return 0;
        for (std::uint32_t i = 0; i + 1 < n; ++i) batch[i]->queue_next = batch[i + 1];
        batch[n - 1]->queue_next = nullptr;
        out = {batch[0], batch[n - 1]};
        return n;
    }

    // A thief: takes the older half of `victim`'s fibers (at least one if it
    // has any) into this queue, which must be empty and ours, and returns
    // the last of them to run now (nullptr: nothing taken). `taken` counts
    // them, the one returned included; `ids` (kCapacity / 2 entries, or
    // nullptr) receives their ids, oldest first, read before any of them is
    // published from this queue (after that, another thief may run them).
    // `stamp` (while tracing) receives the trace time read after the
    // victim's counters were, before the CAS that took them (each attempt
    // reads it anew): the steal's record time (support/tracing.hpp).
    Fiber* stealHalf(RunQueue& victim, std::uint32_t& taken, std::uint64_t* ids, std::uint64_t* stamp = nullptr) noexcept {
        // relaxed: only we write our tail.
        const std::uint32_t own_tail = tail_.load(std::memory_order_relaxed);
        for (;;) {
            // acquire (both): the slots below tail, and the fibers' state,
            // as their pushes (release) left them.
            std::uint32_t h = victim.head_.load(std::memory_order_acquire);
            const std::uint32_t t = victim.tail_.load(std::memory_order_acquire);
            std::uint32_t n = t - h;
            n -= n / 2;
            if (n == 0) return nullptr;
            // h and t were read at different moments: a huge n means the
            // victim popped and pushed in between. Read them again.
            if (n > kCapacity / 2) continue;
            for (std::uint32_t i = 0; i < n; ++i)
                slots_[(own_tail + i) % kCapacity].store(
                    victim.slots_[(h + i) % kCapacity].load(std::memory_order_relaxed), std::memory_order_relaxed);
            if (stamp) *stamp = trace::now();
            // release: our reads of the victim's slots are done before it
            // reuses them (its push loads head with acquire). relaxed on
            // failure: someone else moved head; read everything again.
            if (victim.head_.compare_exchange_weak(h, h + n, std::memory_order_release, std::memory_order_relaxed)) {
                taken = n;
                Fiber* run = slots_[(own_tail + n - 1) % kCapacity].load(std::memory_order_relaxed);
                if (ids)
                    for (std::uint32_t i = 0; i < n; ++i)
                        ids[i] = slots_[(own_tail + i) % kCapacity].load(std::memory_order_relaxed)->id;
                // release: the rest is published to our own pops and thieves.
                if (n > 1) tail_.store(own_tail + n - 1, std::memory_order_release);
                return run;
            }
        }
    }

    // Any thread, a hint: whether fibers are queued.
    bool looksEmpty() const noexcept {
        // relaxed: a hint; the owner's pop or a thief's CAS decides. (The
        // scaling policy's searcher reads it seq_cst instead: search.cpp.)
        return head_.load(std::memory_order_relaxed) == tail_.load(std::memory_order_relaxed);
    }
    // The same, as one side of the Dekker pair between a producer's push
    // and a searcher that gives up (scheduler.hpp).
    bool looksEmptySeqCst() const noexcept {
        return head_.load(std::memory_order_seq_cst) == tail_.load(std::memory_order_seq_cst);
    }

private:
    std::atomic<std::uint32_t> head_{0};
    std::atomic<std::uint32_t> tail_{0};
    std::atomic<Fiber*> slots_[kCapacity] = {};
};

} // namespace fiberscope::detail
