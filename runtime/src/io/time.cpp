// Clocks and timers: now() reads the clock; sleep() is a timeout operation.
#include <time.h>

#include "support/errors.hpp"
#include "fiberscope/event_loop.hpp"
#include "io/operation.hpp"

namespace fiberscope {

using namespace detail;

static clockid_t toClockId(Clock clock) {
    switch (clock) {
    case Clock::realtime: return CLOCK_REALTIME;
    case Clock::boottime: return CLOCK_BOOTTIME;
    case Clock::monotonic: break;
    }
    return CLOCK_MONOTONIC;
}

Result<Timestamp> EventLoop::now(Clock clock) {
    timespec ts{};
    if (clock_gettime(toClockId(clock), &ts) != 0) return Error{Errc::UnsupportedClock, errno};
    return Timestamp{static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec};
}

static Status timeout(std::int64_t nanoseconds, bool absolute, Clock clock) {
    if (nanoseconds < 0) nanoseconds = 0;
    __kernel_timespec ts{};
    ts.tv_sec = nanoseconds / 1'000'000'000;
    ts.tv_nsec = nanoseconds % 1'000'000'000;
    unsigned flags = absolute ? IORING_TIMEOUT_ABS : 0;
    if (clock == Clock::realtime) flags |= IORING_TIMEOUT_REALTIME;
    if (clock == Clock::boottime) flags |= IORING_TIMEOUT_BOOTTIME;
    // `ts` lives on this fiber's stack, which stays put until the completion.
    Operation op{.opcode = IORING_OP_TIMEOUT, .address = &ts, .flags = static_cast<int>(flags)};
    auto done = execute(op);
    if (!done) return done.error();
    if (done->result == 0 || done->result == -ETIME) return {};
    if (done->result == -EINVAL && clock != Clock::monotonic) return Error{Errc::UnsupportedClock, EINVAL};
    return timerError(-done->result);
}

Status EventLoop::sleep(std::chrono::nanoseconds duration, Clock clock) {
    return timeout(duration.count(), false, clock);
}

Status EventLoop::sleepUntil(Timestamp deadline, Clock clock) { return timeout(deadline.count(), true, clock); }

} // namespace fiberscope
