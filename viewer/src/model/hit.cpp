// Hit testing (see hit.hpp for the design).
#include "model/hit.hpp"

#include <algorithm>

namespace fiberscope::viewer {

namespace {

double tolerance(double ns_per_pixel, double px) { return std::max(0.0, ns_per_pixel) * std::max(0.0, px); }

} // namespace

std::size_t hitInterval(const Lane& lane, std::int64_t time, double ns_per_pixel, double tolerance_px) {
    const auto& iv = lane.intervals;
    if (iv.empty()) return kNone;
    if (const std::size_t k = intervalAt(lane, time); k != kNone) return k;
    const double tol = tolerance(ns_per_pixel, tolerance_px);
    // Not inside any interval: the nearest edge on either side.
    const auto after = static_cast<std::size_t>(
        std::upper_bound(iv.begin(), iv.end(), time, [](std::int64_t t, const Interval& a) { return t < a.start; }) - iv.begin());
    std::size_t best = kNone;
    double best_distance = tol;
    if (after < iv.size()) {
        const double d = static_cast<double>(iv[after].start - time);
        if (d <= best_distance) best = after, best_distance = d;
    }
    if (after > 0) {
        const double d = static_cast<double>(time - iv[after - 1].end);
        if (d <= best_distance) best = after - 1;
    }
    return best;
}

std::size_t hitInstant(const trace::Trace& trace, const analysis::InstantList& instants, std::int64_t time, double ns_per_pixel,
                       double tolerance_px) {
    if (instants.empty()) return kNone;
    const double tol = tolerance(ns_per_pixel, tolerance_px);
    const auto time_of = [&](std::size_t k) { return instantTime(trace, instants[k]); };
    const auto at = static_cast<std::size_t>(
        std::lower_bound(instants.begin(), instants.end(), time, [&](const Instant& a, std::int64_t t) { return instantTime(trace, a) < t; }) -
        instants.begin());
    std::size_t best = kNone;
    double best_distance = tol;
    if (at > 0) {
        // The first instant of the run of equal times just before `time`.
        std::size_t k = at - 1;
        const std::int64_t t = time_of(k);
        while (k > 0 && time_of(k - 1) == t) --k;
        const double d = static_cast<double>(time - t);
        if (d <= best_distance) best = k, best_distance = d;
    }
    if (at < instants.size()) {
        const double d = static_cast<double>(time_of(at) - time);
        if (d < best_distance || (best == kNone && d <= best_distance)) best = at;
    }
    return best;
}

std::size_t hitZone(const std::vector<Zone>& zones, std::int64_t time) {
    std::size_t best = kNone;
    for (std::size_t k = 0; k < zones.size() && zones[k].start <= time; ++k) {
        const Zone& z = zones[k];
        if (time < z.end || (time == z.end && z.start == z.end))
            if (best == kNone || z.depth >= zones[best].depth) best = k;
    }
    return best;
}

std::size_t hitBlock(const std::vector<Block>& blocks, std::int64_t time, double ns_per_pixel, double tolerance_px) {
    if (blocks.empty()) return kNone;
    const double tol = tolerance(ns_per_pixel, tolerance_px);
    const auto after = static_cast<std::size_t>(
        std::upper_bound(blocks.begin(), blocks.end(), time, [](std::int64_t t, const Block& b) { return t < b.start; }) -
        blocks.begin());
    if (after > 0 && time < blocks[after - 1].end) return after - 1;
    std::size_t best = kNone;
    double best_distance = tol;
    if (after > 0) {
        const double d = static_cast<double>(time - blocks[after - 1].end);
        if (d <= best_distance) best = after - 1, best_distance = d;
    }
    if (after < blocks.size()) {
        const double d = static_cast<double>(blocks[after].start - time);
        if (d < best_distance || (best == kNone && d <= best_distance)) best = after;
    }
    return best;
}

Hit hitThreadLane(const Timeline& timeline, const trace::Trace& trace, std::size_t lane, std::int64_t time, double ns_per_pixel,
                  double tolerance_px) {
    Hit hit;
    if (lane >= timeline.threads.size()) return hit;
    const ThreadLane& tl = timeline.threads[lane];
    hit.lane = lane;
    if (const std::size_t k = hitInstant(trace, tl.instants, time, ns_per_pixel, tolerance_px); k != kNone) {
        hit.kind = HitKind::Instant;
        hit.index = k;
        hit.event = tl.instants[k].event;
        return hit;
    }
    if (const std::size_t k = hitInterval(tl.lane, time, ns_per_pixel, tolerance_px); k != kNone) {
        hit.kind = HitKind::Interval;
        hit.index = k;
        hit.event = tl.lane.intervals[k].cause;
    }
    return hit;
}

Hit hitFiberLane(const Timeline& timeline, std::size_t lane, std::int64_t time, double ns_per_pixel, bool zones, double tolerance_px) {
    Hit hit;
    if (lane >= timeline.fibers.size()) return hit;
    const FiberLane& fl = timeline.fibers[lane];
    hit.lane = lane;
    if (zones) {
        if (const std::size_t k = hitZone(fl.zones(), time); k != kNone) {
            hit.kind = HitKind::Zone;
            hit.index = k;
            hit.event = fl.zones()[k].begin_event;
            return hit;
        }
    }
    if (const std::size_t k = hitInterval(fl.lane, time, ns_per_pixel, tolerance_px); k != kNone) {
        hit.kind = HitKind::Interval;
        hit.index = k;
        hit.event = fl.lane.intervals[k].cause;
    }
    return hit;
}

} // namespace fiberscope::viewer
