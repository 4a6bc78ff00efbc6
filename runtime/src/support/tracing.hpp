// How the runtime emits trace records: `FIBERSCOPE_TRACE_EVENT(emit::x(now, ...))`
// reads the clock and encodes only while a Recorder is active; otherwise it
// costs one load (acquire: free on x86-64, an LDAR on AArch64; see
// trace::enabled()) and a predictable branch. `now` is the record's time.
//
// THE RULE (issue 35; FORMAT.md "Validation rules"): a record's time is
// taken after whatever it depends on was seen, and before its effect can be
// seen by another thread. Then the order of times is causal order (to
// within the CPUs' clock skew, a few hundred nanoseconds, which the
// validator allows), and the trace never shows an effect before its cause.
// Two corollaries:
//   * A record may be written after its effect is published, stamped with a
//     time read before: what matters is the time, not when the bytes land.
//     But a thread's records must be written in time order (the writer
//     moves an earlier-stamped record up to the previous one's time:
//     trace_emit.hpp; a checking recording reports it as `backdated`), so
//     between reading such a time and writing its record the thread writes
//     no other record.
//   * Where the effect is a CAS another thread races (a hand-off, a steal,
//     the seed's own-queue push), the time is read after the load that saw
//     the value the CAS expects, and read again for each retry. A CAS can
//     still succeed after its value changed and came back (ABA: a word
//     emptied, filled, emptied again), so while tracing the changes of a
//     thread's queue word and run_next are made one at a time, each holding
//     that thread's trace word lock across its look, its clock read and its
//     CAS (TraceWordGuard, scheduler/queue.hpp): two changes of one word are
//     then ordered as their times are. Untraced, no lock is taken.
//
// The sites that need care, and why each is ordered right:
//   schedule (schedule.cpp): a hand-off stamped per CAS attempt, after the
//     look that found the idle thread's word empty; the seed's own-queue
//     push per CAS attempt (pushOwn); the scaling policy's own queues
//     before the owner's push (only the owner fills them, so the time the
//     switch or spawn under way read will do); run-next before the exchange
//     that publishes it (scheduleSpawned). Records are one per fiber, the
//     batch's last first (traced_fibers.hpp), their ids read while the
//     queue is still ours.
//   new worker (grow.cpp): stamped before the worker's thread starts, and
//     written before the spawn zone's end, the thread's next record.
//   steal, steal-half, steal-one (queue.cpp, search.cpp, the stealHalf and
//     steal of run_queue.hpp and work_deque.hpp): stamped after the loads
//     that saw the fibers, before the CAS that takes them; a retry stamps
//     again. The victim's owner pops its word by exchange under the same
//     lock, and reads there the time its switch to the popped fiber (and
//     a truth record) will carry (popOwn); a thief's switch to a word's
//     head it stole carries the steal's time (Thread::Owned::taken_at;
//     not after a scaling search, whose end record comes between, and
//     under which nobody hands a word work to steal back). A
//     fiber is one thread's or the other's, never both, and a later steal,
//     whose record names only the list's head, is never read as taking a
//     fiber another thread took before (and has not switched to yet).
//   overflow (queue.cpp): put records before the list's lock publishes the
//     fibers; take records while holding it, before our ring publishes them.
//   wakeup-sent before the MSG_RING or eventfd write; wakeup-received and
//     wakeup-bounced when reaped (after); the epoll backend names each
//     sender (poller.cpp), since eventfd writes add up.
//   switch (switch.cpp): read once the next fiber is found (finding it may
//     record a steal), or when it was taken: popped or stolen from a queue
//     word, or claimed as a finishing fiber's awaiter (Thread::Owned::
//     taken_at); shared with the pending task the receiver performs only
//     where that task's effect is the switch's: a yield's reschedule,
//     a finish's fiber-finish and fiber-recycle. Every other task takes its
//     own time (switch_message.cpp): an awaiter the finish's exchange finds,
//     a register that finds its future finished, a primitive's park handler,
//     each of which acts on what it sees after the switch.
//   fiber-create shares its time with the spawn's schedule (one decision;
//     nothing else records between them).
//   mutex-handoff, mutex-taken, condition-wake, cancel-delivered: after the
//     unlink under the primitive's spin lock that decided the outcome,
//     before schedule() or the switch publishes the fiber.
//   await: before the switch; the awaiting fiber registers only after it.
//   truth (checking recordings): `queued` after the pop (the fiber is ours
//     from then on; from the queue word, at the pop, as the switch),
//     `empty` before the scaling policy's park (only the owner fills its
//     queues).
#pragma once

#include "fiberscope/trace_emit.hpp"

#define FIBERSCOPE_TRACE_EVENT(...)                                   \
    do {                                                              \
        if (::fiberscope::trace::enabled()) {                         \
            [[maybe_unused]] const std::uint64_t now = ::fiberscope::trace::now(); \
            using namespace ::fiberscope::trace;                      \
            __VA_ARGS__;                                              \
        }                                                             \
    } while (0)

// The same, stamped with `time` when it is non-zero: the timestamp already
// read for the decision under way on this thread (Thread::trace_time), so
// one decision reads the clock once however many records it emits.
#define FIBERSCOPE_TRACE_EVENT_AT(time, ...)                          \
    do {                                                              \
        if (::fiberscope::trace::enabled()) {                         \
            const std::uint64_t decision_time = (time);               \
            [[maybe_unused]] const std::uint64_t now =                \
                decision_time ? decision_time : ::fiberscope::trace::now(); \
            using namespace ::fiberscope::trace;                      \
            __VA_ARGS__;                                              \
        }                                                             \
    } while (0)

namespace fiberscope::detail {
struct Thread;
struct Context;
// The trace number of whatever runs in `context` on `thread`: 0 for the idle
// context, else the fiber's id (the main fiber is 1).
std::uint64_t traceId(const Thread& thread, const Context* context) noexcept;
struct Fiber;
std::uint64_t traceFiberId(const Fiber* fiber) noexcept;
} // namespace fiberscope::detail
