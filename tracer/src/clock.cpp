// The trace clock: the invariant TSC (x86_64) or the virtual counter
// (AArch64) when usable, calibrated against CLOCK_MONOTONIC; otherwise
// CLOCK_MONOTONIC itself.
#include <time.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "recording.hpp"

namespace fiberscope::trace {
std::atomic<bool> g_use_tsc{false};
std::atomic<bool> g_check{false};
}

namespace fiberscope::trace::detail {

static std::uint64_t monotonicNs() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

static std::uint64_t realtimeNs() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

static bool counterUsable() {
#if defined(__x86_64__)
    // constant_tsc + nonstop_tsc: the TSC ticks at a fixed rate in every
    // power state and is synchronised across cores.
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line))
        if (line.rfind("flags", 0) == 0)
            return line.find(" constant_tsc") != std::string::npos && line.find(" nonstop_tsc") != std::string::npos;
    return false;
#elif defined(__aarch64__)
    return true; // the generic timer's virtual counter is architecturally constant
#else
    return false;
#endif
}

void calibrateClock(format::HeaderFixed& header) {
    const char* force = std::getenv("FIBERSCOPE_TRACE_CLOCK");
    const bool use_tsc = !(force && std::strcmp(force, "monotonic") == 0) && counterUsable();
    // Relaxed: a thread may read it just before it sees the new recording,
    // but it changes only between recordings, and only when the variable does.
    g_use_tsc.store(use_tsc, std::memory_order_relaxed);
    header.flags &= ~format::kFlagTscClock;
    if (!use_tsc) {
        header.ticks_per_second = 1'000'000'000u;
        header.start_monotonic_ns = monotonicNs();
        header.start_ticks = header.start_monotonic_ns;
        header.start_realtime_ns = realtimeNs();
        return;
    }
    header.flags |= format::kFlagTscClock;
    // Two samples 5 ms apart give the rate to ~0.1%; finishClock refines it
    // over the whole recording.
    const std::uint64_t mono0 = monotonicNs(), ticks0 = now();
    std::uint64_t mono1;
    do mono1 = monotonicNs();
    while (mono1 - mono0 < 5'000'000);
    const std::uint64_t ticks1 = now();
    header.ticks_per_second = static_cast<std::uint64_t>(static_cast<double>(ticks1 - ticks0) * 1e9 /
                                                         static_cast<double>(mono1 - mono0));
    header.start_ticks = ticks1;
    header.start_monotonic_ns = mono1;
    header.start_realtime_ns = realtimeNs();
}

void finishClock(format::HeaderFixed& header) {
    header.end_ticks = now();
    header.end_monotonic_ns = monotonicNs();
    if (!g_use_tsc.load(std::memory_order_relaxed)) return;
    const std::uint64_t elapsed_ns = header.end_monotonic_ns - header.start_monotonic_ns;
    if (elapsed_ns > 50'000'000) // long enough to beat the start calibration
        header.ticks_per_second = static_cast<std::uint64_t>(
            static_cast<double>(header.end_ticks - header.start_ticks) * 1e9 / static_cast<double>(elapsed_ns));
}

} // namespace fiberscope::trace::detail
