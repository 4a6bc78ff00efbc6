// Clocks and instants for EventLoop::now / sleep / sleepUntil.
#pragma once

#include <chrono>
#include <cstdint>

namespace fiberscope {

// The kernel clocks io_uring timeouts understand.
enum class Clock { monotonic, realtime, boottime };

// Nanoseconds since the chosen clock's epoch.
using Timestamp = std::chrono::nanoseconds;

} // namespace fiberscope
