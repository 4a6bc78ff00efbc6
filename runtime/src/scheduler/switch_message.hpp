// The switch-then-act protocol.
//
// A fiber never publishes itself (to an awaiter slot, a mutex, a condition,
// a ready queue) while still running on its own stack: another thread could
// resume it at once, and two CPUs would run on one stack. Instead it switches
// away, handing the context it switches to a SwitchMessage; the receiving
// side performs the pending task (handleSwitchMessage) on its own stack.
// The message lives on the sender's stack, which stays untouched until the
// sender is resumed, and the handler copies what it needs before publishing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "fiber/context.hpp"
#include "fiber/fiber.hpp"
#include "fiberscope/future.hpp"
#include "fiberscope/trace_events.hpp"

namespace fiberscope {
class Mutex;
class Condition;
} // namespace fiberscope

namespace fiberscope::detail {

enum class PendingTask : std::uint8_t {
    nothing,          // just switch
    reschedule,       // put the previous fiber back on a ready queue (yield)
    finish,           // the previous fiber finished: mark it, wake its awaiter
    register_awaiter, // publish the previous fiber as the awaiter of a future
    register_select,  // ... as the awaiter of several futures
    mutex_lock,       // queue the previous fiber on a mutex (or take it)
    condition_wait,   // queue the previous fiber on a condition, unlock
    exit,             // tell every worker's idle loop to return
};

struct SwitchMessage {
    ContextPair contexts; // first: the switch passes a pointer to it
    PendingTask task = PendingTask::nothing;
    // Why the sender switched (for the trace).
    trace::SwitchReason reason = trace::SwitchReason::Start;
    // The decision's timestamp if the sender already read the clock (0: not yet).
    std::uint64_t trace_time = 0;
    union {
        std::atomic<Fiber*>* awaiter;
        FiberRefs select;
        struct {
            std::uintptr_t prev_state;
            Mutex* mutex;
            bool cancelable;
        } mutex_lock;
        struct {
            Condition* condition;
            Mutex* mutex;
            bool cancelable;
        } condition_wait;
    } args{};

    static const SwitchMessage* from(const ContextPair* pair) {
        return reinterpret_cast<const SwitchMessage*>(pair);
    }
};

// Runs on the receiving side of every switch, first thing.
void handleSwitchMessage(const ContextPair* received);

} // namespace fiberscope::detail
