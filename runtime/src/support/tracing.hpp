// How the runtime emits trace records: `FIBERSCOPE_TRACE_EVENT(emit::x(now, ...))`
// reads the clock and encodes only while a Recorder is active; otherwise it
// costs one relaxed load and a predictable branch. `now` is the decision's
// timestamp, shared by the records it emits.
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
