// Which flow arrows a frame of the timeline draws.
//
// Every flow with an end in view is a candidate, however far away its other
// end is: a steal's arrow must still reach the thief's lane when the view is
// zoomed onto the steal and the victim queued the fiber long before. So the
// choice cannot start from "flows that begin near the view" (what the viewer
// did before: a steal queued more than one view-width earlier vanished).
//
// Design: per flow kind, the flows twice, by from.time (the model's order)
// and by to.time, so "from in [t0, t1]" and "to in [t0, t1]" are two binary
// searches each and cost only what they return. Flows passing over the whole
// view (from before it, to after it) come third, from a per-block maximum of
// the later end over the by-from order (64 flows a block: a frame skips
// blocks that end before the view, at a cost of one compare per 64 flows and
// 8 bytes per 64 flows of memory). Both orders hold flow indices near their
// neighbours' (a kind's flows in from order are increasing indices, and the
// to order is close to it), so each is kept in ~2 bytes a flow, not 4
// (NearValueList, issue 13: the index held ~8 bytes a flow). A kind with more candidates than its
// budget is thinned evenly (every s-th by position, s a power of two, so a
// pan keeps the same arrows) before anything passing over is added: the
// budget never drops an arrow with an end in view in favour of one without.
//
// The model's flowsInRange (one list, all kinds, in from order with a
// limit) answers "overlapping [t0, t1]" too, but in from order its limit is
// spent first on the flows that began before the view, and it walks every
// flow from the first long one on; the viewer needs per-kind budgets and the
// in-view flows first, hence this index.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::viewer {
using namespace fiberscope::analysis; // the viewer reads the analysis model (tracer/analysis) as its own
} // namespace fiberscope::viewer

namespace fiberscope::viewer {

constexpr unsigned flowBit(FlowKind kind) noexcept { return 1u << static_cast<unsigned>(kind); }

struct FlowIndex {
    static constexpr std::size_t kBlock = 64;
    struct Kind {
        NearValueList by_from;                 // indices into Timeline::flows, by from.time
        NearValueList by_to;                   // the same flows, by to.time
        std::vector<std::int64_t> block_reach; // block b: the latest end of by_from[b*kBlock, (b+1)*kBlock)
    };
    std::array<Kind, kFlowKindCount> kinds;
    // What it was built for (a reloaded or grown timeline is rebuilt; a live
    // view replaces its model by a new one that may reuse the old one's
    // memory, hence also a fingerprint of the flows' ends).
    std::uint64_t timeline = 0; // its Timeline::serial
    const void* data = nullptr; // the list's packed items
    std::size_t size = 0;
    std::int64_t fingerprint = 0;
};

// A cheap fingerprint of a model's flows: a few of them, spread over the list.
inline std::int64_t flowFingerprint(const Timeline& tl) noexcept {
    const auto flows = analysis::flowsOf(tl);
    std::uint64_t h = flows.size();
    for (std::size_t k = 0; k < 8 && !flows.empty(); ++k) {
        const Flow f = flows[(flows.size() - 1) * k / 7];
        h = h * 1000003u ^ static_cast<std::uint64_t>(f.from.time) ^ (static_cast<std::uint64_t>(f.to.time) << 1) ^
            static_cast<std::uint64_t>(f.kind);
    }
    return static_cast<std::int64_t>(h);
}

inline void buildFlowIndex(const Timeline& tl, FlowIndex& index) {
    const auto flows = analysis::flowsOf(tl);
    // Each flow is read once (a spawn's is decoded from its fiber's lane,
    // a cache miss or two): the sorts compare keys, not flows (comparing
    // flows cost ~1 s on a 10M-event trace's first frame).
    struct Key {
        std::int64_t from, to;
        std::uint32_t flow;
    };
    std::array<std::vector<Key>, kFlowKindCount> keys;
    for (std::uint32_t i = 0; i < flows.size(); ++i) {
        const Flow f = flows[i];
        keys[static_cast<int>(f.kind)].push_back({f.from.time, f.to.time, i});
    }
    for (int kind = 0; kind < kFlowKindCount; ++kind) {
        FlowIndex::Kind& k = index.kinds[kind];
        std::vector<Key>& by = keys[kind];
        // The model keeps flows by from.time; sort anyway (stable) so the index never depends on it.
        const auto from_less = [](const Key& a, const Key& b) { return a.from < b.from; };
        if (!std::is_sorted(by.begin(), by.end(), from_less)) std::stable_sort(by.begin(), by.end(), from_less);
        k.block_reach.assign((by.size() + FlowIndex::kBlock - 1) / FlowIndex::kBlock, INT64_MIN);
        std::vector<std::uint32_t> order(by.size());
        for (std::size_t p = 0; p < by.size(); ++p) {
            std::int64_t& reach = k.block_reach[p / FlowIndex::kBlock];
            reach = std::max({reach, by[p].from, by[p].to});
            order[p] = by[p].flow;
        }
        k.by_from = NearValueList(order);
        std::stable_sort(by.begin(), by.end(), [](const Key& a, const Key& b) { return a.to < b.to; });
        for (std::size_t p = 0; p < by.size(); ++p) order[p] = by[p].flow;
        by = {};
        k.by_to = NearValueList(order);
    }
    index.timeline = tl.serial;
    index.data = tl.flows.stored.data();
    index.size = tl.flows.size();
    index.fingerprint = flowFingerprint(tl);
}

inline void ensureFlowIndex(const Timeline& tl, FlowIndex& index) {
    if (index.timeline != tl.serial || index.data != tl.flows.stored.data() || index.size != tl.flows.size() ||
        index.fingerprint != flowFingerprint(tl))
        buildFlowIndex(tl, index);
}

// Heap bytes the index holds (by capacity; `fiberscope benchmark` prints it).
inline std::size_t flowIndexBytes(const FlowIndex& index) noexcept {
    std::size_t bytes = 0;
    for (const auto& k : index.kinds)
        bytes += k.by_from.bytes() + k.by_to.bytes() + k.block_reach.capacity() * sizeof(std::int64_t);
    return bytes;
}

inline constexpr std::size_t kMaxPassingOver = 64; // per kind and frame

// Appends to `out` the flows of `kind` to draw for the view [t0, t1], at most
// `budget` of them: first every flow with an end in [t0, t1] (thinned evenly
// when there are more than `budget`), then, if none was thinned away, up to
// kMaxPassingOver flows that pass over the view (from before t0, to after t1).
inline void selectFlows(const Timeline& tl, const FlowIndex& index, FlowKind kind, std::int64_t t0, std::int64_t t1,
                        std::size_t budget, std::vector<std::uint32_t>& out) {
    if (budget == 0 || t1 < t0) return;
    const FlowIndex::Kind& k = index.kinds[static_cast<int>(kind)];
    const auto flows = analysis::flowsOf(tl);
    const auto from_less = [&](std::uint32_t i, std::int64_t t) { return flows[i].from.time < t; };
    const auto from_upper = [&](std::int64_t t, std::uint32_t i) { return t < flows[i].from.time; };
    const auto to_less = [&](std::uint32_t i, std::int64_t t) { return flows[i].to.time < t; };
    const auto to_upper = [&](std::int64_t t, std::uint32_t i) { return t < flows[i].to.time; };
    const std::size_t a0 = std::lower_bound(k.by_from.begin(), k.by_from.end(), t0, from_less) - k.by_from.begin();
    const std::size_t a1 = std::upper_bound(k.by_from.begin(), k.by_from.end(), t1, from_upper) - k.by_from.begin();
    const std::size_t b0 = std::lower_bound(k.by_to.begin(), k.by_to.end(), t0, to_less) - k.by_to.begin();
    const std::size_t b1 = std::upper_bound(k.by_to.begin(), k.by_to.end(), t1, to_upper) - k.by_to.begin();
    const std::size_t candidates = (a1 - a0) + (b1 - b0);
    std::size_t stride = 1;
    while (candidates > budget * stride) stride *= 2;
    const std::size_t before = out.size();
    const auto collect = [&](std::size_t every) {
        out.resize(before);
        // From in view (every stride-th by absolute position, so panning keeps the same ones).
        for (std::size_t p = (a0 + every - 1) / every * every; p < a1; p += every) out.push_back(k.by_from[p]);
        // To in view, from outside it (the ones with both ends in view are in already).
        for (std::size_t p = (b0 + every - 1) / every * every; p < b1; p += every) {
            const Flow& f = flows[k.by_to[p]];
            if (f.from.time >= t0 && f.from.time <= t1) continue;
            out.push_back(k.by_to[p]);
        }
    };
    // The stride counted both lists, but a flow with both ends in view is
    // taken once: while that leaves the budget less than half used, halve it.
    collect(stride);
    while (stride > 1 && (out.size() - before) * 2 < budget) {
        collect(stride / 2);
        if (out.size() - before > budget) {
            collect(stride);
            break;
        }
        stride /= 2;
    }
    if (out.size() - before > budget) out.resize(before + budget);
    // Passing over the view: from before t0 (by_from[0, a0)), the later end
    // after t1. Only when no flow with an end in view was thinned away, and
    // a few: they say only "something crosses here".
    std::size_t left = stride == 1 ? std::min(budget - (out.size() - before), kMaxPassingOver) : 0;
    for (std::size_t block = 0; left > 0 && block * FlowIndex::kBlock < a0; ++block) {
        if (k.block_reach[block] <= t1) continue;
        const std::size_t end = std::min(a0, (block + 1) * FlowIndex::kBlock);
        for (std::size_t p = block * FlowIndex::kBlock; p < end && left > 0; ++p) {
            const Flow& f = flows[k.by_from[p]];
            if (f.to.time > t1) out.push_back(k.by_from[p]), --left;
        }
    }
}

// Dimmed arrows in bundles. An arrow the active checkpoint's story is not
// about is drawn faint, but two hundred faint arrows into one point are a
// solid fan (lesson 8 on a loaded machine: worker 0, kept off the CPU,
// read 199 wake-ups at once, and their fan buried the mutex hand-offs). So
// the faint arrows of one kind whose heads land on one lane within
// kBundlePixels of each other form a bundle; one of more than kBundleDrawn
// draws kBundleDrawn of them, spread evenly over the tails (the first and
// the last among them: the fan keeps its extent), and its size by the head.
// The story's own arrows are never bundled: each cause keeps its arrow.
inline constexpr float kBundlePixels = 4.0f;
inline constexpr std::size_t kBundleDrawn = 4;

struct BundleArrow {
    int kind = 0;           // FlowKind
    std::uint32_t lane = 0; // the head's lane
    float x0 = 0, x1 = 0;   // tail and head, in pixels
};
struct BundleChoice {
    bool drawn = true;
    std::uint32_t count = 0; // on one drawn arrow of a bundled group: the group's size
};

inline void bundleArrows(const std::vector<BundleArrow>& arrows, std::vector<BundleChoice>& out) {
    out.assign(arrows.size(), BundleChoice{});
    std::vector<std::uint32_t> order(arrows.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        const BundleArrow &x = arrows[a], &y = arrows[b];
        if (x.kind != y.kind) return x.kind < y.kind;
        if (x.lane != y.lane) return x.lane < y.lane;
        return x.x1 < y.x1;
    });
    std::vector<std::uint32_t> group;
    for (std::size_t a = 0; a < order.size();) {
        const BundleArrow& first = arrows[order[a]];
        std::size_t b = a;
        while (b < order.size() && arrows[order[b]].kind == first.kind && arrows[order[b]].lane == first.lane &&
               arrows[order[b]].x1 - first.x1 <= kBundlePixels)
            ++b;
        if (b - a > kBundleDrawn) {
            group.assign(order.begin() + static_cast<std::ptrdiff_t>(a), order.begin() + static_cast<std::ptrdiff_t>(b));
            std::sort(group.begin(), group.end(), [&](std::uint32_t x, std::uint32_t y) { return arrows[x].x0 < arrows[y].x0; });
            for (std::uint32_t i : group) out[i].drawn = false;
            for (std::size_t j = 0; j < kBundleDrawn; ++j) out[group[(group.size() - 1) * j / (kBundleDrawn - 1)]].drawn = true;
            out[group.back()].count = static_cast<std::uint32_t>(group.size());
        }
        a = b;
    }
}

} // namespace fiberscope::viewer
