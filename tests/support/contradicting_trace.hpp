// A small trace that contradicts itself, as a file: what the viewer's verdict
// banner and the tools' warning line are tested on.
//
// Two workers. Worker 0's story is consistent: its main fiber (1) spawns
// "greeter" (2), awaits it, and resumes when it finishes. Worker 1 parks,
// and twice receives a wake-up from worker 0 that worker 0 never sent
// (FORMAT.md's rule wakeup-unmatched): at 20 us and at 50 us. So the
// validator finds exactly two contradictions, the first at 20 us on worker 1,
// which is not the last record of its instant: a mark follows it there (so a
// jump that selects it is told from one that takes the cursor's last row).
#pragma once

#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

#include "trace_builder.hpp"

namespace test {

inline constexpr std::int64_t kFirstContradictionNs = 20'000;
inline constexpr std::int64_t kSecondContradictionNs = 50'000;
inline constexpr std::size_t kContradictions = 2;

inline std::vector<std::uint8_t> contradictingTraceBytes() {
    using fiberscope::testing::TraceBuilder;
    using K = fiberscope::trace::EventKind;
    TraceBuilder builder;
    builder.start_ticks = 0;
    builder.end_ticks = 80'000; // 1 tick = 1 ns
    builder.complete = true;
    // Records at absolute times; fiber fields as deltas against the chunk's previous one (FORMAT.md).
    std::uint64_t last_time = 0;
    std::int64_t last_fiber = 0;
    const auto chunk = [&](std::uint32_t thread) {
        builder.chunk(thread);
        last_time = 0;
        last_fiber = 0;
    };
    const auto fiber = [&](std::int64_t id) {
        const std::uint64_t delta = TraceBuilder::zigzag(id - last_fiber);
        last_fiber = id;
        return delta;
    };
    const auto at = [&](std::uint64_t time, K kind, std::initializer_list<std::uint64_t> fields = {}) {
        builder.record(kind, time - last_time, fields);
        last_time = time;
    };
    constexpr std::uint64_t kStart = 0, kAwait = 2, kFinish = 7; // switch reasons
    constexpr std::uint64_t kOwnQueue = 2;                        // schedule's `how`

    chunk(0);
    builder.string(1, "worker 0").string(2, "worker 1").string(3, "greeter").string(4, "woken by nobody");
    at(1'000, K::ThreadStart, {0, 1});
    at(2'000, K::Switch, {fiber(0), fiber(1), kStart});
    at(10'000, K::FiberCreate, {fiber(2), fiber(1), 3});
    at(10'000, K::Schedule, {fiber(2), 1, 0, kOwnQueue});
    at(12'000, K::Await, {fiber(1), fiber(2)});
    at(12'000, K::Switch, {fiber(1), fiber(2), kAwait});
    at(40'000, K::FiberFinish, {fiber(2)});
    at(40'000, K::Switch, {fiber(2), fiber(1), kFinish});

    chunk(1);
    at(3'000, K::ThreadStart, {1, 2});
    at(4'000, K::Park);
    at(kFirstContradictionNs, K::Unpark, {0});
    at(kFirstContradictionNs, K::WakeupReceived, {0}); // worker 0 sent none
    at(kFirstContradictionNs, K::Mark, {4});
    at(21'000, K::Park);
    at(kSecondContradictionNs, K::Unpark, {0});
    at(kSecondContradictionNs, K::WakeupReceived, {0}); // nor this one
    at(51'000, K::Park);
    return builder.bytes();
}

inline bool writeContradictingTrace(const std::string& path) {
    const std::vector<std::uint8_t> bytes = contradictingTraceBytes();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return static_cast<bool>(out);
}

} // namespace test
