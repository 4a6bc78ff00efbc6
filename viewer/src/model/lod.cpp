// Levels of detail and per-pixel merging (see lod.hpp for the design).
//
// Level k groups the intervals by floor(start / g_k), g_k = 8^k ns. Buckets
// nest (g_{k+1} = 8 g_k, both aligned at 0), so level k+1 is built from level
// k's units rather than from every interval, and a run of level k+1 is a run
// of consecutive level-k units.
#include "model/lod.hpp"

#include <algorithm>
#include <cmath>

namespace fiberscope::viewer {

namespace {

constexpr std::size_t kMinLodIntervals = 32; // shorter lanes are walked directly
constexpr std::int64_t kLevelFactor = 8; // 4 touches fewer units per pixel but stores ~1.5x the runs

std::int64_t floorDiv(std::int64_t a, std::int64_t b) noexcept {
    std::int64_t q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
    return q;
}

// Calls sink(block) for each unit of stored level `level` (-1: the intervals
// themselves) covering intervals [lo, hi), in order. A run crossing lo or hi
// is re-aggregated from the next finer level over its part inside [lo, hi).
template <class Sink>
void walkLevel(const Lane& lane, int level, std::uint32_t lo, std::uint32_t hi, Sink&& sink);

Block aggregate(const Lane& lane, int level, std::uint32_t lo, std::uint32_t hi) {
    Block acc;
    bool any = false;
    walkLevel(lane, level, lo, hi, [&](const Block& b) {
        if (!any) {
            acc = b;
            any = true;
        } else {
            mergeBlock(acc, b);
        }
    });
    return acc;
}

template <class Sink>
void walkLevel(const Lane& lane, int level, std::uint32_t lo, std::uint32_t hi, Sink&& sink) {
    const auto& iv = lane.intervals;
    if (level < 0) {
        for (std::uint32_t i = lo; i < hi; ++i) sink(blockOf(iv[i], i));
        return;
    }
    const auto& runs = lane.levels[static_cast<std::size_t>(level)].runs;
    // First run ending after lo.
    std::size_t r = static_cast<std::size_t>(
        std::upper_bound(runs.begin(), runs.end(), lo, [](std::uint32_t v, const Block& b) { return v < b.first + b.count; }) -
        runs.begin());
    std::uint32_t p = lo;
    while (p < hi) {
        if (r < runs.size() && runs[r].first <= p) {
            const Block& run = runs[r];
            const std::uint32_t run_end = run.first + run.count;
            if (run.first >= lo && run_end <= hi) sink(run);
            else sink(aggregate(lane, level - 1, std::max(lo, run.first), std::min(hi, run_end)));
            p = run_end;
            ++r;
        } else {
            const std::uint32_t stop = r < runs.size() ? std::min(hi, runs[r].first) : hi;
            for (; p < stop; ++p) sink(blockOf(iv[p], p)); // alone in their buckets at this level
        }
    }
}

// Merges units starting in the same view pixel.
struct PixelMerger {
    std::int64_t t0;
    double ns_per_pixel;
    std::vector<Block>& out;
    std::int64_t last_pixel = INT64_MIN;

    std::int64_t pixel(std::int64_t t) const noexcept {
        const double offset = static_cast<double>(std::max(t, t0) - t0);
        return static_cast<std::int64_t>(std::floor(offset / ns_per_pixel));
    }
    void operator()(const Block& b) {
        const std::int64_t p = pixel(b.start);
        if (!out.empty() && p == last_pixel) {
            mergeBlock(out.back(), b);
        } else {
            out.push_back(b);
            last_pixel = p;
        }
    }
};

void buildLevels(Lane& lane) {
    lane.levels.clear();
    const auto& iv = lane.intervals;
    const std::size_t n = iv.size();
    if (n <= kMinLodIntervals) return;
    const std::int64_t span = iv.back().end - iv.front().start;
    std::vector<Block> units; // the previous level's units (runs and lone intervals), reused
    std::vector<Block> next;
    units.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) units.push_back(blockOf(iv[i], i));
    for (std::int64_t g = 1; units.size() > 1; g *= kLevelFactor) {
        next.clear();
        bool merged = false;
        std::int64_t bucket = 0;
        for (const Block& u : units) {
            const std::int64_t b = floorDiv(u.start, g);
            if (!next.empty() && b == bucket) {
                mergeBlock(next.back(), u);
                merged = true;
            } else {
                next.push_back(u);
                bucket = b;
            }
        }
        if (merged) {
            LodLevel level;
            level.granularity = g;
            std::size_t runs = 0;
            for (const Block& u : next) runs += u.count >= 2;
            level.runs.reserve(runs);
            for (const Block& u : next)
                if (u.count >= 2) level.runs.push_back(u);
            lane.levels.push_back(std::move(level));
            units.swap(next);
        }
        // Else: the same partition as the last stored level, which serves this granularity too.
        if (g > span || g > INT64_MAX / (2 * kLevelFactor)) break;
    }
}

void buildPrefix(Lane& lane) {
    lane.prefix.clear();
    const auto& iv = lane.intervals;
    if (iv.size() <= kPrefixStride) return;
    std::array<std::int64_t, kStateCount> sum{};
    lane.prefix.reserve(iv.size() / kPrefixStride + 1);
    for (std::size_t i = 0; i < iv.size(); ++i) {
        if (i % kPrefixStride == 0) lane.prefix.push_back(sum);
        sum[static_cast<int>(iv[i].state)] += iv[i].duration();
    }
}

} // namespace

Block blockOf(const Interval& interval, std::uint32_t index) noexcept {
    Block b;
    b.start = interval.start;
    b.end = interval.end;
    b.busy = interval.duration();
    b.dominant_ns = interval.duration();
    b.fiber = interval.fiber;
    b.first = index;
    b.count = 1;
    b.thread = interval.thread;
    b.state = interval.state;
    b.reason = interval.reason;
    return b;
}

void mergeBlock(Block& into, const Block& next) noexcept {
    into.end = std::max(into.end, next.end);
    into.busy += next.busy;
    into.count += next.count;
    if (next.fiber == into.fiber && next.state == into.state) {
        into.dominant_ns += next.dominant_ns;
    } else if (next.dominant_ns > into.dominant_ns) {
        into.dominant_ns = next.dominant_ns;
        into.fiber = next.fiber;
        into.state = next.state;
        into.reason = next.reason;
        into.thread = next.thread;
    }
}

void buildLaneIndex(Lane& lane) {
    buildLevels(lane);
    buildPrefix(lane);
}

void intervalsOverlapping(const Lane& lane, std::int64_t t0, std::int64_t t1, std::size_t& first, std::size_t& last) noexcept {
    const auto& iv = lane.intervals;
    // Ends are non-decreasing (sorted, non-overlapping), so both are binary searches.
    first = static_cast<std::size_t>(
        std::lower_bound(iv.begin(), iv.end(), t0, [](const Interval& a, std::int64_t t) { return a.end < t; }) - iv.begin());
    last = static_cast<std::size_t>(
        std::upper_bound(iv.begin(), iv.end(), t1, [](std::int64_t t, const Interval& a) { return t < a.start; }) - iv.begin());
    if (last < first) last = first;
}

void visibleBlocks(const Lane& lane, std::int64_t t0, std::int64_t t1, double ns_per_pixel, std::vector<Block>& out) {
    out.clear();
    if (lane.intervals.empty() || t1 < t0) return;
    if (!(ns_per_pixel > 0)) ns_per_pixel = 1;
    std::size_t first, last;
    intervalsOverlapping(lane, t0, t1, first, last);
    if (first >= last) return;
    // The coarsest stored level no coarser than a pixel (and at least 1 ns).
    const double limit = std::max(ns_per_pixel, 1.0);
    int level = -1;
    for (std::size_t k = 0; k < lane.levels.size(); ++k)
        if (static_cast<double>(lane.levels[k].granularity) <= limit) level = static_cast<int>(k);
    PixelMerger merger{t0, ns_per_pixel, out};
    walkLevel(lane, level, static_cast<std::uint32_t>(first), static_cast<std::uint32_t>(last), merger);
}

const char* stateName(State state) noexcept {
    switch (state) {
    case State::Running: return "running";
    case State::Idle: return "idle";
    case State::Parked: return "parked";
    case State::Ready: return "ready";
    case State::Waiting: return "waiting";
    case State::Finished: return "finished";
    }
    return "unknown";
}

const char* waitReasonName(WaitReason reason) noexcept {
    switch (reason) {
    case WaitReason::None: return "none";
    case WaitReason::Io: return "io";
    case WaitReason::Timer: return "timer";
    case WaitReason::Mutex: return "mutex";
    case WaitReason::Condition: return "condition";
    case WaitReason::Await: return "await";
    case WaitReason::Select: return "select";
    case WaitReason::Exit: return "exit";
    }
    return "unknown";
}

std::size_t intervalAt(const Lane& lane, std::int64_t time) noexcept {
    const auto& iv = lane.intervals;
    auto it = std::upper_bound(iv.begin(), iv.end(), time, [](std::int64_t t, const Interval& a) { return t < a.start; });
    if (it == iv.begin()) return kNone;
    --it;
    const auto index = static_cast<std::size_t>(it - iv.begin());
    if (time < it->end || (index + 1 == iv.size() && time == it->end)) return index;
    return kNone;
}

} // namespace fiberscope::viewer
