// The switch-then-act protocol.
//
// A fiber never publishes itself (to an awaiter slot, a mutex, a condition,
// a ready queue) while still running on its own stack: another thread could
// resume it at once, and two CPUs would run on one stack. Instead it switches
// away, handing the context it switches to a SwitchMessage; the receiving
// side performs the pending task (handleSwitchMessage) on its own stack.
// The message lives on the sender's stack, which stays untouched until the
// sender is resumed, and the handler copies what it needs before publishing.
// One exception: on a loop of one worker thread, where nobody else can take
// a fiber, yield queues itself first (yieldAlone, scheduler/switch.cpp), and
// its receiver skips handleSwitchMessage when the sender asked for nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fiber/context.hpp"
#include "fiber/fiber.hpp"
#include "fiberscope/future.hpp"
#include "fiberscope/trace_events.hpp"

namespace fiberscope::detail {

struct Loop;
struct Thread;

// A pending task the switch layer does not know: a synchronisation
// primitive's (Go's gopark(unlockf, lock)). It runs on the receiving side
// with `parked`, the fiber that switched away, and `arg`, which lives on
// that fiber's stack and stays untouched only until `parked` is published:
// copy what it says first.
using ParkHandler = void (*)(Loop& loop, Thread& thread, Fiber* parked, const void* arg);

// What the switch layer itself does after a switch. What a primitive does
// (queue the fiber on a mutex, on a condition) is a `park` task carrying
// the primitive's handler; the trace names the primitive by the message's
// SwitchReason (Mutex, Condition).
enum class PendingTask : std::uint8_t {
    nothing,          // just switch
    reschedule,       // put the previous fiber back on a ready queue (yield)
    finish,           // the previous fiber finished: mark it, wake its awaiter
    register_awaiter, // publish the previous fiber as the awaiter of a future
    register_select,  // ... as the awaiter of several futures
    park,             // run args.park.handler with the previous fiber
    exit,             // tell every worker's idle loop to return
};

struct SwitchMessage {
    ContextPair contexts; // first: the switch passes a pointer to it
    PendingTask task;
    // Why the sender switched (for the trace).
    trace::SwitchReason reason;
    union {
        std::atomic<Fiber*>* awaiter;
        FiberRefs select;
        struct {
            ParkHandler handler;
            const void* arg;
        } park;
    } args;

    SwitchMessage() : contexts{}, task(PendingTask::nothing), reason(trace::SwitchReason::Start), args{} {}

    // A message with no task, for a sender that has already done what a
    // task would (yieldAlone: it queued itself). Only what a receiver reads
    // of such a message is written: the contexts and the task. The reason
    // is the sender's own (it traces nothing: yieldAlone runs untraced)
    // and no task reads args. Why not write them anyway: they (and a
    // timestamp the message no longer has) were four of a short yield's
    // ~24 stores, and with them and two
    // more gone (yieldAlone's resumption) the yield went from ~1.6x to
    // ~1.45x a bare Boost.Context switch on this project's 2-vCPU VM
    // (pinned pairs, issue 15). No counters there to say why; one store
    // per cycle on many x86 cores fits.
    struct NoTask {};
    SwitchMessage(NoTask, ContextPair pair) : contexts(pair), task(PendingTask::nothing) {}

    static const SwitchMessage* from(const ContextPair* pair) {
        return reinterpret_cast<const SwitchMessage*>(pair);
    }
};

// Runs on the receiving side of every switch, first thing (yieldAlone's
// receiver does its part inline when there is nothing to do); it ends the
// decision that made the switch (Thread::Owned::trace_time).
void handleSwitchMessage(const ContextPair* received);

} // namespace fiberscope::detail
