// Closing the model (Builder::close, declared in timeline_builder.hpp): what
// is still open ends at the trace's end, the thread lanes go in worker order
// and the fibers in id order, and the model is indexed and packed, keeping
// what the fiber lanes give back as references to them (read_back.hpp). It
// closes a copy of the model at each snapshot of a growing trace, and the
// model itself at finish (TimelineBuilder, timeline.cpp).
#include "timeline_builder.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <future>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "fiberscope/analysis/lod.hpp"
#include "fiberscope/analysis/state_at.hpp"
#include "fiberscope/trace_vocabulary.hpp"
#include "permute.hpp"
#include "read_back.hpp"

namespace fiberscope::analysis::detail {

namespace {

// A model whose thread lanes and replay items hold at least this many
// intervals and items in all is closed on two threads (Builder::close).
constexpr std::size_t kParallelIndexIntervals = 1u << 16;

// Gives back growth slack (the model lives as long as the trace is open). A
// list reserved at an upper bound or estimate that keeps under 1/8 slack is
// left alone rather than copied whole (the never-written tail of a large
// allocation is not even resident).
template <class List>
void trimSlack(List& v) {
    if (v.capacity() - v.size() > v.size() / 8) v.shrink_to_fit();
}

// Keeps each spawn flow that its fiber's lane gives back, field for field,
// as the index of that lane (FlowStore); the order of the flows is kept.
void keepSpawnsInLanes(Timeline& out) {
    out.flows.keepRefs([&](std::size_t, const Flow& flow, std::uint32_t& lane) {
        if (flow.kind != FlowKind::Spawn) return false;
        const FiberLane* fl = findFiber(out, flow.to.fiber);
        Flow given;
        if (!fl || !spawnFromLane(*fl, given) || !(given == flow)) return false;
        lane = static_cast<std::uint32_t>(fl - out.fibers.data());
        return true;
    });
}

// Keeps each latency sample that its fiber's lane gives back as where in
// that lane (LatencyStore). Samples are by run time, and a lane's Running
// intervals too, so one cursor per lane finds each in one pass.
void keepLatenciesInLanes(Timeline& out) {
    if (out.latencies.stored.empty() || !out.latencies.refs.empty()) return;
    std::vector<std::uint32_t> cursor(out.fibers.size(), 0); // per lane: the first interval not yet passed
    out.latencies.keepRefs([&](std::size_t, const LatencySample& sample, LatencyRef& ref) {
        const FiberLane* fl = findFiber(out, sample.fiber);
        if (!fl) return false;
        const std::size_t lane = static_cast<std::size_t>(fl - out.fibers.data());
        const IntervalList& intervals = fl->lane.intervals;
        std::size_t k = cursor[lane];
        while (k < intervals.size() && intervals.startOf(k) < sample.run) ++k;
        cursor[lane] = static_cast<std::uint32_t>(k);
        // The Running interval from `run` (after any zero-length ones then).
        for (; k < intervals.size() && intervals.startOf(k) == sample.run; ++k) {
            if (k == 0 || intervals.stateOf(k) != State::Running || intervals.stateOf(k - 1) != State::Ready) continue;
            const LatencySample given = latencyFromLane(*fl, k);
            if (given.ready != sample.ready || given.run != sample.run || given.fiber != sample.fiber) continue;
            cursor[lane] = static_cast<std::uint32_t>(k + 1); // (one sample per Running interval)
            return LatencyRef::make(lane, k, ref); // (false: kept as a value)
        }
        return false;
    });
}

// The end of the trace as far as `count` records go: the last of them, or
// the header's duration if later.
std::int64_t endTimeOf(const trace::Trace& trace, std::size_t count) noexcept {
    const std::int64_t duration = std::max<std::int64_t>(0, trace.header.duration_ns);
    if (count == 0 || count > trace.events.size()) return count ? traceEndTime(trace) : duration;
    return std::max(trace.events[count - 1].time, trace.header.duration_ns);
}

// Flows by start; ties in the order they were made, as a stable sort would
// leave them. Sorting (start, index) keys and then moving each flow once
// is about twice as fast as sorting the 56-byte flows themselves.
void sortFlows(FlowList& flows) {
    const auto by_from = [](const Flow& a, const Flow& b) { return a.from.time < b.from.time; };
    if (std::is_sorted(flows.begin(), flows.end(), by_from)) return;
    std::vector<std::pair<std::int64_t, std::uint32_t>> keys(flows.size());
    for (std::uint32_t k = 0; k < flows.size(); ++k) keys[k] = {flows[k].from.time, k};
    sortNearlySorted(keys);
    std::vector<std::uint32_t> order(flows.size());
    for (std::size_t k = 0; k < keys.size(); ++k) order[k] = keys[k].second;
    keys = {};
    permuteInPlace(flows.packed(), order); // a wide flow's item carries its side entry's index along
}

} // namespace

// The order of fibers by id (order[k]: the index in fb_ of the fiber
// that goes to k): the ids ascending are read off the dense index, then
// the large (hashed) ids sorted.
std::vector<std::uint32_t> Builder::fiberOrder() const {
    std::vector<std::uint32_t> order;
    order.reserve(tl_.fibers.size());
    for (std::uint32_t f : dense_)
        if (f != kNoFiber) order.push_back(f);
    std::vector<std::pair<std::uint64_t, std::uint32_t>> large(sparse_.begin(), sparse_.end());
    std::sort(large.begin(), large.end());
    for (const auto& entry : large) order.push_back(entry.second);
    return order;
}

void Builder::close(Timeline& out, const trace::Trace& trace, Builder* scratch) const {
    out.serial = trace::nextTraceSerial();
    const std::int64_t end_time = endTimeOf(trace, done_);
    out.start_time = done_ ? trace.events.front().time : 0;
    out.end_time = end_time;
    out.object_names.clear();
    for (const ObjectNameRecord& r : object_names_) out.object_names[r.object].emplace_back(r.time, trace.string(r.name));
    static const std::string unnamed;
    for (std::uint32_t lane = 0; lane < tb_.size(); ++lane) {
        const ThreadBuild& b = tb_[lane];
        ThreadLane& tl = out.threads[lane];
        // A thread that did not stop was alive, in its last state, to the trace's end.
        if (b.alive) {
            if (b.has_open) {
                Interval open = b.open;
                open.end = std::max(open.start, end_time);
                tl.lane.intervals.push_back(open);
            }
            tl.alive_ns += std::max<std::int64_t>(0, end_time - b.alive_since);
            tl.alive_end = std::max(b.alive_since, end_time);
        }
        for (std::uint32_t z : b.zone_stack) tl.zones[z].end = b.alive ? end_time : tl.last_time;
        // The recorded name, except a blocking-pool thread's: every tool names it alike (trace_vocabulary.hpp).
        const std::string& recorded = lane < trace.threads.size() ? trace.threads[lane].name : unnamed;
        tl.name = !recorded.empty() && !trace::isBlockingPoolWorker(tl.worker) ? recorded : trace::threadDisplayName(tl.worker, lane);
    }
    for (std::uint32_t f = 0; f < fb_.size(); ++f) {
        const FiberBuild& b = fb_[f];
        FiberLane& fl = out.fibers[f];
        if (b.has_open) {
            Interval open = b.open;
            open.end = std::max(open.start, end_time);
            auto& intervals = fl.lane.intervals;
            if (intervals.size() == intervals.capacity()) intervals.reserve(intervals.size() + 1); // exact, not doubled
            intervals.push_back(open);
        }
        if (!fl.zones().empty()) {
            std::vector<Zone>& zones = fl.editZones();
            if (const auto it = zone_stacks_.find(f); it != zone_stacks_.end())
                for (std::uint32_t z : it->second) zones[z].end = end_time;
            // Zones are opened in time order, so this is a no-op check in practice.
            const auto by_start = [](const Zone& a, const Zone& z) { return a.start < z.start; };
            if (!std::is_sorted(zones.begin(), zones.end(), by_start)) std::stable_sort(zones.begin(), zones.end(), by_start);
        }
        // Its name: the string its create or fiber-name record gave (read now,
        // so a string defined after the record still names it), else its number.
        // (An id whose string is empty or undefined names nothing: named() is false.)
        if (b.name_id != 0) fl.setRecordedName(trace.string(b.name_id));
    }
    // Lanes by worker index, then the threads of no known worker by number.
    {
        const std::size_t count = out.threads.size();
        std::vector<std::uint32_t> order(count);
        for (std::uint32_t t = 0; t < count; ++t) order[t] = t;
        std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
            const std::int64_t wa = out.threads[a].worker, wb = out.threads[b].worker;
            if ((wa >= 0) != (wb >= 0)) return wa >= 0;
            return wa >= 0 ? wa < wb : a < b;
        });
        out.lane_of_thread.assign(count, 0);
        for (std::uint32_t lane = 0; lane < count; ++lane) out.lane_of_thread[order[lane]] = lane;
        permute(out.threads, order);
    }
    // The rest is split in two, run on two threads where the trace is big
    // enough to be worth a thread (issue 13: load time), touching disjoint
    // parts of `out`:
    //   * the thread lanes (a few long lanes, whose compaction and levels of
    //     detail take ~8% of a 10M-event load) and the replay index (its
    //     items' checkpoints and compaction), then the build's scratch,
    //     freed when `scratch` is given (finish(): ~200 ms at 10M events,
    //     mostly the kernel taking the pages back);
    //   * the fibers (their order by id, their lanes' store), the flows and
    //     the latency samples.
    // The fibers' order is read from the scratch before either starts. A
    // small trace, or one where no thread can be started, does both here.
    std::vector<std::uint32_t> fiber_order = fiberOrder();
    const auto index_threads_and_replay = [&out, scratch] {
        for (ThreadLane& tl : out.threads) {
            trimSlack(tl.lane.intervals);
            tl.lane.intervals.compact();
            trimSlack(tl.instants);
            trimSlack(tl.instant_fibers);
            trimSlack(tl.zones);
            buildLaneIndex(tl.lane);
        }
        trimSlack(out.replay.items);
        for (auto& owners : out.replay.slots) owners.shrink_to_fit();
        buildReplayIndex(out);
        out.replay.items.compact();
        if (scratch) scratch->release();
    };
    std::size_t thread_intervals = 0;
    for (const ThreadLane& tl : out.threads) thread_intervals += tl.lane.intervals.size();
    std::future<void> helper;
    if (thread_intervals + out.replay.items.size() >= kParallelIndexIntervals) {
        try {
            helper = std::async(std::launch::async, index_threads_and_replay);
        } catch (const std::system_error&) {
            // No thread (a process or memory limit): done below, here.
        }
    }
    permute(out.fibers, fiber_order);
    fiber_order = {};
    sortFlows(out.flows.stored);
    // The reach of the longest flow so far, at the end of each block of flows.
    out.flow_reach.assign((out.flows.size() + kFlowReachBlock - 1) / kFlowReachBlock, INT64_MIN);
    std::int64_t reach = INT64_MIN;
    for (std::size_t k = 0; k < out.flows.size(); ++k)
        out.flow_reach[k / kFlowReachBlock] = reach = std::max(reach, out.flows.stored[k].to.time);
    // Give back the growth slack: the model lives as long as the trace is open.
    trimSlack(out.fibers);
    // The fiber lanes' intervals move into one store (lane.hpp: a block per
    // lane cost ~76 bytes with the allocator's): the lanes that fit the
    // compact format are counted, then written in lane order, each list
    // freeing its build block (buildTimeline's malloc_trim hands the pages
    // back). A lane that does not fit keeps its block, trimmed.
    std::size_t store_words = 0;
    for (FiberLane& fl : out.fibers) {
        fl.trimZones();
        buildLaneIndex(fl.lane);
        const std::size_t words = fl.lane.intervals.storeWords();
        if (words == 0) {
            trimSlack(fl.lane.intervals);
            fl.lane.intervals.compact();
        }
        store_words += words;
    }
    {
        LaneStore store(store_words);
        std::uint64_t* at = store.data();
        for (FiberLane& fl : out.fibers)
            if (const std::size_t words = fl.lane.intervals.storeWords()) {
                fl.lane.intervals.moveToStore(at);
                at += words;
            }
        out.fiber_store = std::move(store); // (frees a store that an earlier close wrote, copied from above)
    }
    // What the fiber lanes give back is kept as references to them (after
    // the lanes' last change: they move into the store just above).
    keepSpawnsInLanes(out);
    keepLatenciesInLanes(out);
    trimSlack(out.flows.stored);
    trimSlack(out.latencies.stored);
    if (helper.valid()) helper.get(); // rethrows what it threw (bad_alloc)
    else index_threads_and_replay();
}

} // namespace fiberscope::analysis::detail
