// Levels of detail and per-pixel merging (see lod.hpp for the design).
//
// Level k groups the intervals by floor(start / g_k), g_k = 16^k ns. Buckets
// nest (g_{k+1} = 16 g_k, both aligned at 0), so a unit of level k+1 is a run
// of consecutive level-k units, and its Block is theirs merged in order. At
// every level the units are the maximal runs of consecutive intervals sharing
// a bucket, and the number of levels at which two neighbours' buckets differ
// follows from the highest bit in which their starts differ (g_k is a power
// of two), so buildLevels makes all levels in one pass over the intervals:
// each level keeps one open unit, fed by the finer level's units as they
// close. A first, cheaper pass counts the units, so the runs are allocated
// once and the levels that merge nothing are known beforehand.
#include "fiberscope/analysis/lod.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace fiberscope::analysis {

namespace {

constexpr std::size_t kMinLodIntervals = 32; // shorter lanes are walked directly
// 16, not 8 (issue 13): the levels held 3.2 bytes per event of a dense
// 10M-event trace at 8 and hold 1.1 at 16, for up to ~17 units walked per
// pixel instead of ~9 (the benchmark's frame ratio stayed within its 2x).
constexpr std::int64_t kLevelFactor = 16;
static_assert(std::has_single_bit(static_cast<std::uint64_t>(kLevelFactor)));
constexpr int kLevelBits = std::countr_zero(static_cast<std::uint64_t>(kLevelFactor)); // g_k = 2^(kLevelBits k)

// How many levels, from the finest, put starts a and b in different buckets:
// floor(a / 2^s) (= a >> s) and floor(b / 2^s) differ exactly while s < the
// bit width of a ^ b.
int levelsApart(std::int64_t a, std::int64_t b) noexcept {
    const int width = std::bit_width(static_cast<std::uint64_t>(a) ^ static_cast<std::uint64_t>(b));
    return (width + kLevelBits - 1) / kLevelBits;
}

// A stored run as the Block it was made from.
Block expandRun(const IntervalList& iv, const StoredRun& run) noexcept {
    Block b = blockOf(iv[run.dominant], run.dominant);
    b.start = iv.startOf(run.first);
    b.end = iv.endOf(run.first + run.count - 1);
    b.busy = run.busy;
    b.dominant_ns = run.dominant_ns;
    b.first = run.first;
    b.count = run.count;
    return b;
}

StoredRun storedRun(const Block& b) noexcept { return StoredRun{b.busy, b.dominant_ns, b.first, b.count, b.dominant}; }

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
    const auto& runs = lane.levels()[static_cast<std::size_t>(level)].runs;
    // First run ending after lo.
    std::size_t r = static_cast<std::size_t>(
        std::upper_bound(runs.begin(), runs.end(), lo, [](std::uint32_t v, const StoredRun& b) { return v < b.first + b.count; }) -
        runs.begin());
    std::uint32_t p = lo;
    while (p < hi) {
        if (r < runs.size() && runs[r].first <= p) {
            const StoredRun& run = runs[r];
            const std::uint32_t run_end = run.first + run.count;
            if (run.first >= lo && run_end <= hi) sink(expandRun(iv, run));
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

void buildLevels(const IntervalList& iv, std::vector<LodLevel>& levels) {
    levels.clear();
    const std::size_t n = iv.size();
    if (n <= kMinLodIntervals) return;
    // Granularities 1, 16, 256, ... up to the first coarser than the whole lane.
    const std::int64_t span = iv.back().end - iv.front().start;
    std::vector<std::int64_t> granularity;
    for (std::int64_t g = 1;; g *= kLevelFactor) {
        granularity.push_back(g);
        if (g > span || g > INT64_MAX / (2 * kLevelFactor)) break;
    }
    const int count = static_cast<int>(granularity.size());

    // Pass 1: each level's number of units, and of runs (units of >= 2 intervals).
    std::vector<std::size_t> units(static_cast<std::size_t>(count), 0), runs(units.size(), 0);
    std::vector<std::size_t> unit_first(units.size(), 0); // first interval of each level's open unit
    const auto count_unit = [&](int k, std::size_t end) {
        ++units[k];
        runs[k] += end - unit_first[k] >= 2;
        unit_first[k] = end;
    };
    for (std::size_t i = 1; i < n; ++i) {
        const int apart = std::min(count, levelsApart(iv.startOf(i - 1), iv.startOf(i)));
        for (int k = 0; k < apart; ++k) count_unit(k, i);
    }
    for (int k = 0; k < count; ++k) count_unit(k, n);

    // A level is stored only if it has at most 3/4 of the units of the finest
    // level stored below it (the intervals themselves at first): one that
    // merges less would cost nearly as much memory as that finer level and
    // save a frame less than a quarter of its walk, so the finer level serves
    // its granularity too. (On a busy thread the finest levels (1, 8 and 64 ns, at a factor of 8) merge
    // only same-time intervals: they held 89% of the runs, 6 bytes per trace
    // event, issue 13.) Nor are the levels above the point where everything
    // is one unit.
    std::vector<int> stored(units.size(), -1); // index in levels
    int top = 0;                               // levels [0, top) are made in pass 2
    std::size_t finer_units = n;               // units of the finest level stored so far
    for (int k = 0; k < count; ++k) {
        if (4 * units[k] > 3 * finer_units) continue;
        finer_units = units[k];
        stored[k] = static_cast<int>(levels.size());
        LodLevel& level = levels.emplace_back();
        level.granularity = granularity[k];
        level.runs.reserve(runs[k]);
        top = k + 1;
    }
    if (top == 0) return;

    // Pass 2: each level's open unit (count 0: none) takes in the finer level's
    // units as they close; closing a unit stores it if it is a run.
    std::vector<Block> open(static_cast<std::size_t>(top));
    const auto add = [](Block& into, const Block& b) {
        if (into.count == 0) into = b;
        else mergeBlock(into, b);
    };
    const auto close = [&](int k) {
        Block& unit = open[k];
        if (unit.count >= 2 && stored[k] >= 0) levels[static_cast<std::size_t>(stored[k])].runs.push_back(storedRun(unit));
        if (k + 1 < top) add(open[k + 1], unit);
        unit.count = 0;
    };
    for (std::size_t i = 0; i < n; ++i) {
        if (i > 0) {
            const int apart = std::min(top, levelsApart(iv.startOf(i - 1), iv.startOf(i)));
            for (int k = 0; k < apart; ++k) close(k); // finest first: each feeds the next before it closes
        }
        add(open[0], blockOf(iv[i], static_cast<std::uint32_t>(i)));
    }
    for (int k = 0; k < top; ++k) close(k);
}

void buildPrefix(const IntervalList& iv, std::vector<StateTimes>& prefix) {
    prefix.clear();
    if (iv.size() <= kPrefixStride) return;
    StateTimes sum{};
    prefix.reserve(iv.size() / kPrefixStride + 1);
    for (std::size_t i = 0; i < iv.size(); ++i) {
        if (i % kPrefixStride == 0) prefix.push_back(sum);
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
    b.dominant = index;
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
        into.dominant = next.dominant;
    }
}

void buildLaneIndex(Lane& lane) {
    lane.intervals.setIndex(nullptr);
    // A short lane has neither (most fiber lanes): no index is allocated.
    if (lane.intervals.size() <= std::min(kMinLodIntervals, kPrefixStride)) return;
    auto index = std::make_unique<LaneIndex>();
    buildLevels(lane.intervals, index->levels);
    buildPrefix(lane.intervals, index->prefix);
    if (!index->levels.empty() || !index->prefix.empty()) lane.intervals.setIndex(std::move(index));
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
    const std::vector<LodLevel>& levels = lane.levels();
    for (std::size_t k = 0; k < levels.size(); ++k)
        if (static_cast<double>(levels[k].granularity) <= limit) level = static_cast<int>(k);
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

} // namespace fiberscope::analysis
