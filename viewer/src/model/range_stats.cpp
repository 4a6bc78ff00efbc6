// Range statistics (see range_stats.hpp for the design).
#include "model/range_stats.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace fiberscope::viewer {

namespace {

// Per-state time of the lane before `time` (intervals clipped at `time`).
std::array<std::int64_t, kStateCount> timeBefore(const Lane& lane, std::int64_t time) {
    std::array<std::int64_t, kStateCount> sum{};
    const auto& iv = lane.intervals;
    // Intervals [0, k) start before `time`.
    const auto k = static_cast<std::size_t>(
        std::lower_bound(iv.begin(), iv.end(), time, [](const Interval& a, std::int64_t t) { return a.start < t; }) - iv.begin());
    std::size_t i = 0;
    const std::vector<StateTimes>& prefix = lane.prefix();
    if (!prefix.empty() && k > 0) {
        const std::size_t block = std::min((k - 1) / kPrefixStride, prefix.size() - 1);
        sum = prefix[block];
        i = block * kPrefixStride;
    }
    for (; i < k; ++i) sum[static_cast<int>(iv[i].state)] += std::min(iv[i].end, time) - iv[i].start;
    return sum;
}

std::int64_t nthValue(std::vector<std::int64_t>& values, double p) {
    if (values.empty()) return 0;
    // Nearest rank: the smallest value with at least p of the samples at or below it.
    auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(values.size())));
    rank = std::clamp<std::size_t>(rank, 1, values.size()) - 1;
    std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(rank), values.end());
    return values[rank];
}

} // namespace

int latencyBucket(std::int64_t ns) noexcept {
    if (ns < 1) return 0;
    return std::bit_width(static_cast<std::uint64_t>(ns));
}

std::array<std::int64_t, kStateCount> laneTimeByState(const Lane& lane, std::int64_t t0, std::int64_t t1) {
    std::array<std::int64_t, kStateCount> out{};
    if (t1 <= t0 || lane.intervals.empty()) return out;
    const auto a = timeBefore(lane, t0);
    const auto b = timeBefore(lane, t1);
    for (int s = 0; s < kStateCount; ++s) out[s] = b[s] - a[s];
    return out;
}

RangeStats rangeStats(const Timeline& timeline, const trace::Trace& trace, std::int64_t t0, std::int64_t t1) {
    RangeStats stats;
    stats.t0 = t0;
    stats.t1 = t1;
    if (t1 < t0) return stats;
    const std::size_t first = firstEventAt(trace, t0), last = firstEventAt(trace, t1, true);
    for (std::size_t kind = 0; kind < stats.events_by_kind.size(); ++kind) {
        stats.events_by_kind[kind] = countOfKind(timeline, trace, static_cast<trace::EventKind>(kind), first, last);
        stats.events += stats.events_by_kind[kind];
    }
    stats.switches = stats.events_by_kind[static_cast<std::size_t>(trace::EventKind::Switch)];
    // A seed steal moves a queue in one record, a steal-half one fiber a
    // record, a steal-one its one fiber.
    stats.steals = 0;
    for (std::size_t kind = 0; kind < stats.events_by_kind.size(); ++kind)
        if (trace::isSteal(static_cast<trace::EventKind>(kind))) stats.steals += stats.events_by_kind[kind];
    stats.wakeups = stats.events_by_kind[static_cast<std::size_t>(trace::EventKind::WakeupSent)];
    stats.completions = stats.events_by_kind[static_cast<std::size_t>(trace::EventKind::Complete)];

    for (const ThreadLane& tl : timeline.threads) {
        ThreadUtilisation u;
        u.thread = tl.thread;
        u.worker = tl.worker;
        const auto by_state = laneTimeByState(tl.lane, t0, t1);
        u.running_ns = by_state[static_cast<int>(State::Running)];
        u.idle_ns = by_state[static_cast<int>(State::Idle)];
        u.parked_ns = by_state[static_cast<int>(State::Parked)];
        u.covered_ns = u.running_ns + u.idle_ns + u.parked_ns;
        if (u.covered_ns > 0) {
            const auto covered = static_cast<double>(u.covered_ns);
            u.running = static_cast<double>(u.running_ns) / covered;
            u.idle = static_cast<double>(u.idle_ns) / covered;
            u.parked = static_cast<double>(u.parked_ns) / covered;
        }
        stats.threads.push_back(u);
    }

    const auto lat = analysis::latenciesOf(timeline);
    const auto lo = std::lower_bound(lat.begin(), lat.end(), t0, [](const LatencySample& s, std::int64_t t) { return s.run < t; });
    const auto hi = std::upper_bound(lo, lat.end(), t1, [](std::int64_t t, const LatencySample& s) { return t < s.run; });
    std::vector<std::int64_t> values;
    values.reserve(static_cast<std::size_t>(hi - lo));
    std::array<std::uint64_t, 65> buckets{};
    long double total = 0;
    for (auto it = lo; it != hi; ++it) {
        const std::int64_t v = std::max<std::int64_t>(0, it->run - it->ready);
        values.push_back(v);
        ++buckets[static_cast<std::size_t>(latencyBucket(v))];
        total += static_cast<long double>(v);
    }
    stats.latency_samples = values.size();
    if (!values.empty()) {
        stats.latency_mean = static_cast<double>(total / static_cast<long double>(values.size()));
        stats.latency_max = *std::max_element(values.begin(), values.end());
        stats.latency_p50 = nthValue(values, 0.50);
        stats.latency_p90 = nthValue(values, 0.90);
        stats.latency_p99 = nthValue(values, 0.99);
        int first = 0, last = static_cast<int>(buckets.size()) - 1;
        while (buckets[static_cast<std::size_t>(first)] == 0) ++first;
        while (buckets[static_cast<std::size_t>(last)] == 0) --last;
        for (int b = first; b <= last; ++b) {
            LatencyBucket bucket;
            bucket.lo = b == 0 ? 0 : std::int64_t{1} << (b - 1);
            bucket.hi = b == 0 ? 1 : (b >= 63 ? INT64_MAX : std::int64_t{1} << b);
            bucket.count = buckets[static_cast<std::size_t>(b)];
            stats.latency_histogram.push_back(bucket);
        }
    }
    return stats;
}

} // namespace fiberscope::viewer
