// The owner's and the thieves' sides of a thread's ready queue word and its
// run_next (queue.cpp), for findReadyFiber and the scaling policy's search.
#pragma once

#include <cstdint>

#include "fiber/fiber.hpp"
#include "fiberscope/trace_emit.hpp"
#include "scheduler/worker.hpp"

namespace fiberscope::detail {

struct Loop;
struct Thread;

// Takes the whole ready list of one of a few other threads (on the scaling
// policy, else the oldest fiber of its WorkDeque), runs its head and
// publishes the rest from our slot, which nobody else may change while
// we do: on the seed policy it must hold kPopping (no hand-off lands on it,
// no thief takes from it); on the scaling policy nobody hands work over, so
// an empty slot (kPopping or nullptr) will do. nullptr: nothing found.
Fiber* stealReady(Loop& loop, Thread& thread);
// The same from `victim` only. While tracing, a steal sets
// Thread::Owned::taken_at: the caller's next record must be the switch to
// the fiber it returns (or it clears taken_at first).
Fiber* stealReadyFrom(Thread& thread, Thread& victim);
// The scaling policy: takes the oldest fiber of `victim`'s WorkDeque (a
// steal-one record). nullptr: nothing taken.
Fiber* stealOldestFrom(Thread& thread, Thread& victim);
// Pops our own slot's head, leaving kPopping in it when it was empty.
// While tracing, a pop sets Thread::Owned::taken_at, as a steal does.
Fiber* popOwn(Thread& thread);
// The scaling policy's popOwn: our WorkDeque's newest, else our word's head.
Fiber* popNewWork(Thread& thread);
// Queues `queue` as our new work, its head to run first: on our own slot
// (the LIFO word, which thieves take whole) on the seed policy, on our
// WorkDeque (whose oldest fiber a thief takes) on the scaling policy.
// `stamp` (the seed's word, while tracing) receives the trace time read
// before the CAS that published them: their schedule record's time.
void pushOwn(Thread& thread, FiberQueue queue, std::uint64_t* stamp = nullptr);
// Returns `fiber`, just taken from `thread`'s own queues; a checking
// recording says so with a truth record (queue.cpp), stamped at the pop
// when it came from the queue word (Thread::Owned::taken_at).
Fiber* ownPop(Thread& thread, Fiber* fiber);
// While tracing, `thread`'s queue word and run_next are changed by one
// thread at a time, each holding this across its look, its clock read and
// its CAS (Thread::trace_word_lock says why): then two changes of one word
// are ordered as their records' times. Untraced it does nothing: the CASes
// need no lock, only the trace's order does.
class TraceWordGuard {
public:
    explicit TraceWordGuard(Thread& thread) : lock_(trace::enabled() ? &thread.trace_word_lock : nullptr) {
        if (!lock_) return;
        // acquire: the previous holder's changes (and its records' times) come first.
        while (lock_->exchange(true, std::memory_order_acquire))
            while (lock_->load(std::memory_order_relaxed)) {
            }
    }
    ~TraceWordGuard() {
        // release: our change is seen by the next holder.
        if (lock_) lock_->store(false, std::memory_order_release);
    }
    TraceWordGuard(const TraceWordGuard&) = delete;
    TraceWordGuard& operator=(const TraceWordGuard&) = delete;

private:
    std::atomic<bool>* lock_;
};
// Takes our own run_next (scaling policy).
Fiber* takeRunNext(Thread& thread);

// The scaling policy's RunQueue (run_queue.hpp).
// Queues `queue` on our RunQueue, moving half of it to the loop's overflow
// list whenever it is full. Owner only.
void enqueueLocal(Loop& loop, Thread& thread, FiberQueue queue);
// Takes the older half of one of a few other threads' RunQueues (its
// newest is returned to run now, the rest go on ours, which must be
// empty). nullptr: nothing found.
Fiber* stealHalf(Loop& loop, Thread& thread);
// The same from `victim` only.
Fiber* stealHalfFrom(Thread& thread, Thread& victim);
// Takes up to `most` fibers from the loop's overflow list: the first is
// returned, the others go on our RunQueue (which must have room for them).
Fiber* takeOverflow(Loop& loop, Thread& thread, std::uint32_t most);

} // namespace fiberscope::detail
