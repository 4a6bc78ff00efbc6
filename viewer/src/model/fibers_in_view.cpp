#include "model/fibers_in_view.hpp"

#include <algorithm>

namespace fiberscope::viewer {

std::int64_t fiberBorn(const analysis::Timeline& tl, const analysis::FiberLane& f) noexcept {
    const std::int64_t created = f.created();
    return created >= 0 ? created : tl.start_time;
}

std::int64_t fiberDied(const analysis::Timeline& tl, const analysis::FiberLane& f) noexcept {
    const std::int64_t finished = f.finished();
    return finished >= 0 ? finished : tl.end_time;
}

namespace {

using Span = FibersInViewIndex::Span;

void widen(Span& s, const Span& with, bool first) noexcept {
    if (first) {
        s = with;
        return;
    }
    s.min_born = std::min(s.min_born, with.min_born);
    s.max_born = std::max(s.max_born, with.max_born);
    s.min_died = std::min(s.min_died, with.min_died);
    s.max_died = std::max(s.max_died, with.max_died);
}

// A few fibers' lives, spread over the list: a model that changed under the
// same pointer and size (a live view's, rebuilt in the old one's memory)
// almost surely changes one of them or its start or end.
std::int64_t fingerprintOf(const analysis::Timeline& tl) noexcept {
    std::uint64_t h = tl.fibers.size();
    for (std::size_t k = 0; k < 8 && !tl.fibers.empty(); ++k) {
        const analysis::FiberLane& f = tl.fibers[(tl.fibers.size() - 1) * k / 7];
        h = h * 1000003u ^ static_cast<std::uint64_t>(fiberBorn(tl, f)) ^ (static_cast<std::uint64_t>(fiberDied(tl, f)) << 1) ^ f.fiber();
    }
    return static_cast<std::int64_t>(h);
}

enum class Alive { None, All, Some };

// Whether every fiber a span sums up is alive in [start, end], none is, or
// it cannot tell.
Alive classify(const Span& s, double start, double end) noexcept {
    if (static_cast<double>(s.max_died) < start || static_cast<double>(s.min_born) > end) return Alive::None;
    if (static_cast<double>(s.min_died) >= start && static_cast<double>(s.max_born) <= end) return Alive::All;
    return Alive::Some;
}

} // namespace

void buildFibersInViewIndex(const analysis::Timeline& tl, FibersInViewIndex& index) {
    const std::size_t n = tl.fibers.size();
    constexpr std::size_t kBlock = FibersInViewIndex::kBlock, kGroup = FibersInViewIndex::kGroup;
    index.blocks.assign((n + kBlock - 1) / kBlock, Span{});
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t born = fiberBorn(tl, tl.fibers[i]), died = fiberDied(tl, tl.fibers[i]);
        widen(index.blocks[i / kBlock], Span{born, born, died, died}, i % kBlock == 0);
    }
    index.groups.assign((index.blocks.size() + kGroup - 1) / kGroup, Span{});
    for (std::size_t b = 0; b < index.blocks.size(); ++b) widen(index.groups[b / kGroup], index.blocks[b], b % kGroup == 0);
    index.blocks.shrink_to_fit();
    index.groups.shrink_to_fit();
    ++index.builds;
    index.timeline = tl.serial;
    index.data = tl.fibers.data();
    index.size = n;
    index.start_time = tl.start_time;
    index.end_time = tl.end_time;
    index.fingerprint = fingerprintOf(tl);
}

void ensureFibersInViewIndex(const analysis::Timeline& tl, FibersInViewIndex& index) {
    if (index.timeline != tl.serial || index.data != tl.fibers.data() || index.size != tl.fibers.size() ||
        index.start_time != tl.start_time || index.end_time != tl.end_time || index.fingerprint != fingerprintOf(tl))
        buildFibersInViewIndex(tl, index);
}

std::size_t fibersInView(const analysis::Timeline& tl, FibersInViewIndex& index, double start, double end, std::size_t first,
                         std::size_t n, std::vector<std::uint32_t>& rows) {
    rows.clear();
    std::size_t count = 0;
    const std::size_t last = first + std::min(n, SIZE_MAX - first);
    // Fibers [a, b), all alive: counted, and those of a wanted rank kept.
    const auto takeAll = [&](std::size_t a, std::size_t b) {
        const std::size_t lo = std::max(count, first), hi = std::min(count + (b - a), last);
        for (std::size_t r = lo; r < hi; ++r) rows.push_back(static_cast<std::uint32_t>(a + (r - count)));
        count += b - a;
    };
    const std::size_t total = tl.fibers.size();
    if (start <= static_cast<double>(tl.start_time) && end >= static_cast<double>(tl.end_time)) {
        takeAll(0, total); // the whole trace: every fiber, whenever it says it lived
        return count;
    }
    ensureFibersInViewIndex(tl, index);
    FibersInViewIndex::Answer& last_answer = index.last;
    if (last_answer.build == index.builds && last_answer.start == start && last_answer.end == end && last_answer.first == first &&
        last_answer.n == n) {
        rows = last_answer.rows;
        return last_answer.count;
    }
    constexpr std::size_t kBlock = FibersInViewIndex::kBlock, kGroup = FibersInViewIndex::kGroup;
    for (std::size_t g = 0; g < index.groups.size(); ++g) {
        const std::size_t g0 = g * kGroup * kBlock, g1 = std::min(total, g0 + kGroup * kBlock);
        const Alive group = classify(index.groups[g], start, end);
        if (group == Alive::None) continue;
        if (group == Alive::All) {
            takeAll(g0, g1);
            continue;
        }
        for (std::size_t b = g * kGroup; b < std::min(index.blocks.size(), (g + 1) * kGroup); ++b) {
            const std::size_t b0 = b * kBlock, b1 = std::min(total, b0 + kBlock);
            const Alive block = classify(index.blocks[b], start, end);
            if (block == Alive::None) continue;
            if (block == Alive::All) {
                takeAll(b0, b1);
                continue;
            }
            for (std::size_t i = b0; i < b1; ++i) {
                const analysis::FiberLane& f = tl.fibers[i];
                if (static_cast<double>(fiberDied(tl, f)) >= start && static_cast<double>(fiberBorn(tl, f)) <= end)
                    takeAll(i, i + 1);
            }
        }
    }
    last_answer = {start, end, first, n, index.builds, count, rows};
    return count;
}

std::size_t fibersInViewIndexBytes(const FibersInViewIndex& index) noexcept {
    return (index.blocks.capacity() + index.groups.capacity()) * sizeof(FibersInViewIndex::Span) +
           index.last.rows.capacity() * sizeof(std::uint32_t);
}

} // namespace fiberscope::viewer
