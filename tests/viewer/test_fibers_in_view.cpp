// The fiber lanes the timeline lists for a view (model/fibers_in_view.hpp):
// how many are alive in it and which fill the rows shown, checked against a
// pass over every fiber at random views and scroll positions, on traces
// whose fibers are numbered in creation order (as the runtime numbers them:
// blocks are counted whole) and numbered per thread (lifetimes scattered
// over the numbers: blocks straddle every view).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "../support/decoded_trace.hpp"
#include "fiberscope/analysis/timeline.hpp"
#include "model/fibers_in_view.hpp"

using namespace fiberscope;
using namespace fiberscope::viewer;
using trace::EventKind;
using trace::ScheduleHow;
using trace::SwitchReason;
using test::ev;
using test::makeTrace;

namespace {

// Four workers create fibers and run each for a while; some finish soon,
// some late, some never. `global_ids`: one counter for all threads (creation
// order), else each thread numbers its own (thread w: w + 2, w + 6, ...).
// (The records in time order.)
std::vector<trace::Event> lifetimesEvents(bool global_ids, std::uint64_t seed, int per_thread) {
    std::mt19937_64 rng(seed);
    std::vector<trace::Event> events;
    constexpr unsigned kThreads = 4;
    std::uint64_t next_global = 2;
    std::vector<std::int64_t> now(kThreads, 0);
    std::vector<std::uint64_t> next_own(kThreads);
    for (unsigned w = 0; w < kThreads; ++w) {
        events.push_back(ev(0, w, EventKind::ThreadStart, w, 0));
        next_own[w] = 2 + w;
    }
    // Created round-robin over the threads so that a global counter gives ids in creation order.
    std::vector<std::vector<std::uint64_t>> open(kThreads);
    for (int step = 0; step < per_thread * static_cast<int>(kThreads); ++step) {
        const unsigned w = static_cast<unsigned>(step) % kThreads;
        std::int64_t& t = now[w];
        t += 1 + static_cast<std::int64_t>(rng() % (w + 3)); // threads advance at different rates
        const std::uint64_t fiber = global_ids ? next_global++ : (next_own[w] += kThreads) - kThreads;
        events.push_back(ev(t, w, EventKind::FiberCreate, fiber, 0, 0));
        events.push_back(ev(t, w, EventKind::Schedule, fiber, 1, w, static_cast<std::uint8_t>(ScheduleHow::OwnQueue)));
        open[w].push_back(fiber);
        // Run one open fiber of this thread: it yields, or finishes.
        if (rng() % 3 != 0 && !open[w].empty()) {
            const std::size_t pick = rng() % open[w].size();
            const std::uint64_t run = open[w][pick];
            t += 1;
            events.push_back(ev(t, w, EventKind::Switch, 0, run, 0, static_cast<std::uint8_t>(SwitchReason::Idle)));
            t += 1 + static_cast<std::int64_t>(rng() % 5);
            const bool finish = rng() % 4 != 0;
            if (finish) events.push_back(ev(t, w, EventKind::FiberFinish, run));
            events.push_back(ev(t, w, EventKind::Switch, run, 0, 0,
                                static_cast<std::uint8_t>(finish ? SwitchReason::Finish : SwitchReason::Yield)));
            if (finish) open[w].erase(open[w].begin() + static_cast<std::ptrdiff_t>(pick));
        }
    }
    std::stable_sort(events.begin(), events.end(), [](const trace::Event& a, const trace::Event& b) { return a.time < b.time; });
    return events;
}

trace::Trace lifetimesTrace(bool global_ids, std::uint64_t seed, int per_thread) {
    return makeTrace(4, lifetimesEvents(global_ids, seed, per_thread));
}

// The pass the index replaces.
std::vector<std::uint32_t> aliveByScan(const analysis::Timeline& tl, double start, double end) {
    std::vector<std::uint32_t> alive;
    const bool everything = start <= static_cast<double>(tl.start_time) && end >= static_cast<double>(tl.end_time);
    for (std::uint32_t i = 0; i < tl.fibers.size(); ++i) {
        const analysis::FiberLane& f = tl.fibers[i];
        const std::int64_t born = f.created() >= 0 ? f.created() : tl.start_time;
        const std::int64_t died = f.finished() >= 0 ? f.finished() : tl.end_time;
        if (everything || (static_cast<double>(died) >= start && static_cast<double>(born) <= end)) alive.push_back(i);
    }
    return alive;
}

void checkAgainstScan(const analysis::Timeline& tl, std::uint64_t seed) {
    FibersInViewIndex index;
    std::mt19937_64 rng(seed);
    const double t0 = static_cast<double>(tl.start_time), t1 = static_cast<double>(tl.end_time);
    std::vector<std::uint32_t> rows;
    for (int i = 0; i < 400; ++i) {
        // Views of every width, some beyond the trace, some a single instant.
        const double span = (t1 - t0 + 20) * std::pow(10.0, -static_cast<double>(rng() % 40) / 10.0);
        const double start = t0 - 10 + static_cast<double>(rng() % 1000) / 1000.0 * (t1 - t0 + 20);
        const double end = i % 17 == 0 ? start : start + span;
        const std::vector<std::uint32_t> want = aliveByScan(tl, start, end);
        const std::size_t first = rng() % 3 == 0 ? 0 : rng() % (want.size() + 5);
        const std::size_t n = rng() % 40;
        INFO("view [" << start << ", " << end << "], rows " << first << " + " << n);
        const std::size_t count = fibersInView(tl, index, start, end, first, n, rows);
        REQUIRE(count == want.size());
        const std::vector<std::uint32_t> want_rows(want.begin() + static_cast<std::ptrdiff_t>(std::min(first, want.size())),
                                                   want.begin() + static_cast<std::ptrdiff_t>(std::min(first + n, want.size())));
        REQUIRE(rows == want_rows);
        if (i % 5 == 0) { // the same question again: the kept answer
            rows.clear();
            REQUIRE(fibersInView(tl, index, start, end, first, n, rows) == want.size());
            REQUIRE(rows == want_rows);
        }
    }
    // The whole trace, and every row of it.
    CHECK(fibersInView(tl, index, t0, t1, 0, SIZE_MAX, rows) == tl.fibers.size());
    CHECK(rows.size() == tl.fibers.size());
}

} // namespace

TEST_CASE("fibers in view: counted and listed as a pass over every fiber would, ids in creation order", "[viewer][fibers_in_view]") {
    const trace::Trace trace = lifetimesTrace(true, 5, 3000);
    const analysis::Timeline tl = analysis::buildTimeline(trace);
    REQUIRE(tl.fibers.size() > 10000);
    checkAgainstScan(tl, 17);
    // Blocks whose fibers are all alive in a view are counted whole: most of
    // a narrow view's fibers are found without reading their lanes.
    FibersInViewIndex index;
    buildFibersInViewIndex(tl, index);
    CHECK(index.blocks.size() == (tl.fibers.size() + 63) / 64);
    CHECK(fibersInViewIndexBytes(index) <= tl.fibers.size() / 64 * sizeof(FibersInViewIndex::Span) * 2 + 1024);
}

TEST_CASE("fibers in view: counted and listed as a pass over every fiber would, ids per thread", "[viewer][fibers_in_view]") {
    const trace::Trace trace = lifetimesTrace(false, 6, 3000);
    const analysis::Timeline tl = analysis::buildTimeline(trace);
    REQUIRE(tl.fibers.size() > 10000);
    checkAgainstScan(tl, 18);
}

TEST_CASE("fibers in view: a model that grows is indexed again", "[viewer][fibers_in_view]") {
    const std::vector<trace::Event> whole = lifetimesEvents(true, 7, 500);
    FibersInViewIndex index;
    std::vector<std::uint32_t> rows;
    // The same view each time (inside the first part): the answer kept for
    // the smaller model must not be given for the larger one.
    const double mid = static_cast<double>(whole[whole.size() / 3 - 1].time) * 0.6;
    const double end = static_cast<double>(whole[whole.size() / 3 - 1].time) * 0.9;
    for (std::size_t cut : {whole.size() / 3, whole.size() / 2, whole.size()}) {
        const trace::Trace part = makeTrace(4, std::vector<trace::Event>(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut)));
        const analysis::Timeline tl = analysis::buildTimeline(part);
        INFO("records " << cut);
        CHECK(fibersInView(tl, index, mid, end, 0, 30, rows) == aliveByScan(tl, mid, end).size());
        CHECK(index.size == tl.fibers.size());
    }
}

// Caches of a model are keyed by its serial, never by its address: the next
// model (a re-run of the same lesson, the same size) may be built where the
// last one was, and an index kept for that one must not be given for it.
TEST_CASE("every model and every trace read has a serial of its own; a model built in another's place is indexed again",
          "[viewer][fibers_in_view]") {
    const std::vector<trace::Event> events = lifetimesEvents(true, 11, 100);
    const trace::Trace a = makeTrace(4, events);
    analysis::Timeline tl = analysis::buildTimeline(a);
    const std::uint64_t first = tl.serial;
    CHECK(first != 0);
    FibersInViewIndex index;
    std::vector<std::uint32_t> rows;
    // A view inside the trace (the whole of it needs no index).
    const double start = static_cast<double>(events.back().time) * 0.2, end = static_cast<double>(events.back().time) * 0.8;
    fibersInView(tl, index, start, end, 0, 30, rows);
    const auto builds = index.builds;
    CHECK(builds == 1);
    fibersInView(tl, index, start, end, 0, 30, rows);
    CHECK(index.builds == builds); // the same model: the index is kept
    tl = analysis::buildTimeline(a); // the same records, in the same object
    CHECK(tl.serial != first);
    fibersInView(tl, index, start, end, 0, 30, rows);
    CHECK(index.builds == builds + 1);
    trace::ReadError error;
    trace::Trace read_a, read_b;
    // Two reads of one file are two traces.
    REQUIRE(trace::readTrace(FIBERSCOPE_SAMPLE_TRACE, read_a, error));
    REQUIRE(trace::readTrace(FIBERSCOPE_SAMPLE_TRACE, read_b, error));
    CHECK(read_a.serial != 0);
    CHECK(read_a.serial != read_b.serial);
}
