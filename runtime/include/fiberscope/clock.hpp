// Clocks and instants for EventLoop::now / sleep / sleepUntil.
#pragma once

#include <chrono>
#include <cstdint>

namespace fiberscope {

// The kernel clocks io_uring timeouts understand.
enum class Clock { monotonic, realtime, boottime };

// Nanoseconds since the chosen clock's epoch.
using Timestamp = std::chrono::nanoseconds;

// A limit on how long one operation may wait: past it the operation is
// withdrawn and fails with Errc::TimedOut. The default, Timeout{}, waits as
// long as it takes. On io_uring this is a linked timeout
// (IORING_OP_LINK_TIMEOUT) submitted with the operation.
//
//     auto n = loop->recv(socket, buffer, std::chrono::milliseconds(200));
struct Timeout {
    std::chrono::nanoseconds duration{-1};

    constexpr Timeout() = default;
    template <class Rep, class Period>
    constexpr Timeout(std::chrono::duration<Rep, Period> limit)
        : duration(std::chrono::duration_cast<std::chrono::nanoseconds>(limit)) {
        if (duration.count() < 0) duration = std::chrono::nanoseconds(0);
    }
    constexpr bool limited() const noexcept { return duration.count() >= 0; }
};

} // namespace fiberscope
