// Statistics over a selected time range [t0, t1]: event counts, per-thread
// utilisation, and the schedule-to-run latency distribution.
//
// Design: counts are two binary searches per kind in
// Timeline::events_by_kind; the time a lane spends per state uses the lane's
// prefix sums (lane.hpp) plus the partial intervals at the two ends, so each
// thread costs O(log n + kPrefixStride); latencies are the ready episodes
// (Timeline::latencies, by run time) whose run time falls in the range,
// bucketed by powers of two with exact percentiles (nth_element).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "fiberscope/trace_reader.hpp"
#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::viewer {
using namespace fiberscope::analysis; // the viewer reads the analysis model (tracer/analysis) as its own
} // namespace fiberscope::viewer

namespace fiberscope::viewer {

struct ThreadUtilisation {
    std::uint32_t thread = 0; // trace thread number
    std::int64_t worker = -1;
    std::int64_t running_ns = 0, idle_ns = 0, parked_ns = 0;
    std::int64_t covered_ns = 0; // the part of the range the thread's lane covers
    double running = 0, idle = 0, parked = 0; // fractions of covered_ns
};

struct LatencyBucket {
    std::int64_t lo = 0; // ns, inclusive
    std::int64_t hi = 0; // ns, exclusive
    std::uint64_t count = 0;
};

struct RangeStats {
    std::int64_t t0 = 0, t1 = 0;
    std::array<std::uint64_t, trace::kMaxEventKind + 1> events_by_kind{}; // index: EventKind
    std::uint64_t events = 0;
    std::uint64_t switches = 0, steals = 0, wakeups = 0, completions = 0;
    std::vector<ThreadUtilisation> threads; // lane order
    // Schedule-to-run latency of the ready episodes that ended (ran) in the range.
    std::vector<LatencyBucket> latency_histogram; // [0,1), [1,2), [2,4), ... from the first to the last non-empty bucket
    std::uint64_t latency_samples = 0;
    std::int64_t latency_p50 = 0, latency_p90 = 0, latency_p99 = 0, latency_max = 0;
    double latency_mean = 0;
};

RangeStats rangeStats(const Timeline& timeline, const trace::Trace& trace, std::int64_t t0, std::int64_t t1);

// Time the lane spends in each state within [t0, t1] (index: State).
std::array<std::int64_t, kStateCount> laneTimeByState(const Lane& lane, std::int64_t t0, std::int64_t t1);

// The log2 bucket of a latency: 0 for [0,1), k for [2^(k-1), 2^k).
int latencyBucket(std::int64_t ns) noexcept;

} // namespace fiberscope::viewer
