// One model, however the records arrive: a model appended piece by piece
// (analysis::TimelineBuilder, which the live view uses) equals the model
// built from the whole trace at once, field by field. Lesson traces are
// checked in test_agreement as it records them; here, synthetic traces
// whose look-ups into later records are exactly what a cut can break (a
// thread whose first switch arrives in a later piece, a worker named before
// its thread appears), and hostile and random traces.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fiberscope/analysis/load.hpp>
#include <fiberscope/analysis/timeline.hpp>
#include <fiberscope/trace.hpp>
#include <fiberscope/trace_follower.hpp>
#include <fiberscope/trace_reader.hpp>

#include "decoded_trace.hpp"
#include "growing_trace.hpp"
#include "hostile_traces.hpp"
#include "incremental.hpp"

using namespace fiberscope;
using analysis::Timeline;
using analysis::TimelineBuilder;
using trace::EventKind;
using trace::Trace;

namespace test {

namespace {

void requireSameLane(const analysis::Lane& a, const analysis::Lane& b) {
    REQUIRE(a.intervals.size() == b.intervals.size());
    auto ib = b.intervals.begin();
    std::size_t k = 0;
    for (auto ia = a.intervals.begin(); ia != a.intervals.end(); ++ia, ++ib, ++k) {
        const analysis::Interval x = *ia, y = *ib;
        INFO("interval " << k << ": " << x.start << ".." << x.end << " vs " << y.start << ".." << y.end);
        REQUIRE(x.start == y.start);
        REQUIRE(x.end == y.end);
        REQUIRE(x.fiber == y.fiber);
        REQUIRE(x.cause == y.cause);
        REQUIRE(x.thread == y.thread);
        REQUIRE(x.state == y.state);
        REQUIRE(x.reason == y.reason);
    }
    REQUIRE(a.levels().size() == b.levels().size());
    REQUIRE(a.prefix().size() == b.prefix().size());
}

void requireSameZones(const analysis::Zone* a, std::size_t na, const analysis::Zone* b, std::size_t nb) {
    REQUIRE(na == nb);
    for (std::size_t z = 0; z < na; ++z) {
        INFO("zone " << z);
        REQUIRE(a[z].start == b[z].start);
        REQUIRE(a[z].end == b[z].end);
        REQUIRE(a[z].label == b[z].label);
        REQUIRE(a[z].begin_event == b[z].begin_event);
        REQUIRE(a[z].end_event == b[z].end_event);
        REQUIRE(a[z].thread == b[z].thread);
        REQUIRE(a[z].depth == b[z].depth);
    }
}

void requireSameEnd(const analysis::FlowEnd& a, const analysis::FlowEnd& b) {
    REQUIRE(a.time == b.time);
    REQUIRE(a.fiber == b.fiber);
    REQUIRE(a.thread == b.thread);
    REQUIRE(a.event == b.event);
}

} // namespace

void requireSameModel(const Timeline& a, const Timeline& b) {
    REQUIRE(a.start_time == b.start_time);
    REQUIRE(a.end_time == b.end_time);
    REQUIRE(a.lane_of_thread == b.lane_of_thread);
    REQUIRE(a.threads.size() == b.threads.size());
    for (std::size_t l = 0; l < a.threads.size(); ++l) {
        const analysis::ThreadLane& x = a.threads[l];
        const analysis::ThreadLane& y = b.threads[l];
        INFO("thread lane " << l << " (" << y.name << ")");
        REQUIRE(x.thread == y.thread);
        REQUIRE(x.worker == y.worker);
        REQUIRE(x.name == y.name);
        REQUIRE(x.first_time == y.first_time);
        REQUIRE(x.last_time == y.last_time);
        REQUIRE(x.stopped == y.stopped);
        REQUIRE(x.alive_ns == y.alive_ns);
        REQUIRE(x.alive_end == y.alive_end);
        REQUIRE(x.records == y.records);
        REQUIRE(x.steals_given == y.steals_given);
        requireSameLane(x.lane, y.lane);
        REQUIRE(x.instants.size() == y.instants.size());
        for (std::size_t k = 0; k < x.instants.size(); ++k) {
            REQUIRE(x.instants[k].event == y.instants[k].event);
        }
        REQUIRE(x.instant_fibers == y.instant_fibers);
        requireSameZones(x.zones.data(), x.zones.size(), y.zones.data(), y.zones.size());
        REQUIRE(x.record_count == y.record_count);
    }
    REQUIRE(a.fibers.size() == b.fibers.size());
    for (std::size_t f = 0; f < a.fibers.size(); ++f) {
        const analysis::FiberLane& x = a.fibers[f];
        const analysis::FiberLane& y = b.fibers[f];
        INFO("fiber lane " << f << " (" << y.name() << ")");
        REQUIRE(x.fiber() == y.fiber());
        REQUIRE(x.name() == y.name());
        REQUIRE(x.parent() == y.parent());
        REQUIRE(x.awaitedBy() == y.awaitedBy());
        REQUIRE(x.created() == y.created());
        REQUIRE(x.finished() == y.finished());
        REQUIRE(x.createdThread() == y.createdThread());
        REQUIRE(x.finishedThread() == y.finishedThread());
        REQUIRE(x.named() == y.named());
        REQUIRE(x.createdInTrace() == y.createdInTrace());
        requireSameLane(x.lane, y.lane);
        requireSameZones(x.zones().data(), x.zones().size(), y.zones().data(), y.zones().size());
    }
    REQUIRE(a.flows.size() == b.flows.size());
    const auto a_flows = analysis::flowsOf(a), b_flows = analysis::flowsOf(b);
    for (std::size_t k = 0; k < a.flows.size(); ++k) {
        INFO("flow " << k << " (" << analysis::flowKindName(b_flows[k].kind) << ")");
        REQUIRE(a_flows[k].kind == b_flows[k].kind);
        requireSameEnd(a_flows[k].from, b_flows[k].from);
        requireSameEnd(a_flows[k].to, b_flows[k].to);
    }
    REQUIRE(a.flow_reach == b.flow_reach);
    REQUIRE(a.latencies.size() == b.latencies.size());
    const auto a_latencies = analysis::latenciesOf(a), b_latencies = analysis::latenciesOf(b);
    for (std::size_t k = 0; k < a.latencies.size(); ++k) {
        REQUIRE(a_latencies[k].ready == b_latencies[k].ready);
        REQUIRE(a_latencies[k].run == b_latencies[k].run);
        REQUIRE(a_latencies[k].fiber == b_latencies[k].fiber);
    }
    REQUIRE(a.kinds.total == b.kinds.total);
    REQUIRE(a.kinds.before == b.kinds.before);
    REQUIRE(a.kinds.thread_bits == b.kinds.thread_bits);
    const auto& ra = a.replay;
    const auto& rb = b.replay;
    REQUIRE(ra.items.size() == rb.items.size());
    for (std::size_t k = 0; k < ra.items.size(); ++k) {
        INFO("replay item " << k);
        REQUIRE(ra.items[k].start == rb.items[k].start);
        REQUIRE(ra.items[k].end == rb.items[k].end);
        REQUIRE(ra.items[k].fiber == rb.items[k].fiber);
        REQUIRE(ra.items[k].fd == rb.items[k].fd);
        REQUIRE(ra.items[k].where == rb.items[k].where);
        REQUIRE(ra.items[k].event == rb.items[k].event);
        REQUIRE(ra.items[k].kind == rb.items[k].kind);
        REQUIRE(ra.items[k].opcode == rb.items[k].opcode);
    }
    REQUIRE(ra.slots.size() == rb.slots.size());
    for (std::size_t s = 0; s < ra.slots.size(); ++s) {
        REQUIRE(ra.slots[s].size() == rb.slots[s].size());
        for (std::size_t k = 0; k < ra.slots[s].size(); ++k) {
            REQUIRE(ra.slots[s][k].since == rb.slots[s][k].since);
            REQUIRE(ra.slots[s][k].thread == rb.slots[s][k].thread);
        }
    }
    REQUIRE(ra.checkpoints.size() == rb.checkpoints.size());
    for (std::size_t c = 0; c < ra.checkpoints.size(); ++c) {
        REQUIRE(ra.checkpoints[c].time == rb.checkpoints[c].time);
        REQUIRE(ra.checkpoints[c].first_item == rb.checkpoints[c].first_item);
        REQUIRE(ra.checkpoints[c].active == rb.checkpoints[c].active);
    }
}

void checkAppendedInPieces(const Trace& trace, std::uint64_t seed, int rounds) {
    std::mt19937_64 rng(seed);
    const std::size_t n = trace.events.size();
    const Timeline whole = analysis::buildTimeline(trace);
    for (int round = 0; round < rounds; ++round) {
        // 1 to 12 cuts; the first round cuts after every record of a short trace.
        std::vector<std::size_t> cuts;
        if (round == 0 && n <= 64) {
            for (std::size_t i = 1; i < n; ++i) cuts.push_back(i);
        } else if (n > 1) {
            cuts.resize(1 + rng() % 12);
            for (auto& c : cuts) c = 1 + rng() % (n - 1);
        }
        std::sort(cuts.begin(), cuts.end());
        cuts.push_back(n);
        Trace growing = trace;
        growing.events.clear();
        growing.threads.clear();
        TimelineBuilder builder;
        std::size_t threads_seen = 0;
        for (std::size_t cut : cuts) {
            INFO("round " << round << ", appending records up to " << cut << " of " << n);
            for (std::size_t i = growing.events.size(); i < cut; ++i) {
                growing.events.push_back(trace.events[i]);
                threads_seen = std::max<std::size_t>(threads_seen, trace.events[i].thread + 1);
            }
            // The thread table holds the threads seen so far, as a follower's does.
            const std::size_t table = std::min(trace.threads.size(), std::max(threads_seen, growing.threads.size()));
            growing.threads.assign(trace.threads.begin(), trace.threads.begin() + static_cast<std::ptrdiff_t>(table));
            builder.append(growing);
            REQUIRE(builder.appended() == cut);
            if (cut < n) requireSameModel(builder.snapshot(growing), analysis::buildTimeline(growing));
        }
        growing.threads = trace.threads;
        builder.append(growing);
        requireSameModel(std::move(builder).finish(growing), whole);
    }
}

void checkFollowedInPieces(const Bytes& file, std::uint64_t seed, int rounds) {
    Trace whole;
    trace::ReadError error;
    REQUIRE(trace::parseTrace({file.data(), file.size()}, whole, error));
    const Timeline expected = analysis::buildTimeline(whole);
    std::mt19937_64 rng(seed);
    for (int round = 0; round < rounds; ++round) {
        INFO("followed in pieces, round " << round);
        std::vector<std::size_t> cuts(1 + rng() % 30);
        for (auto& c : cuts) c = rng() % file.size();
        std::sort(cuts.begin(), cuts.end());
        GrowingFile out("/tmp/fiberscope-incremental-" + std::to_string(getpid()) + ".fstrace");
        trace::TraceFollower follower(out.path());
        Trace followed;
        TimelineBuilder builder;
        std::size_t reorders = 0;
        writeInPieces(out, file, cuts, [&](std::size_t, bool) {
            trace::PollResult result;
            REQUIRE(follower.poll(followed, error, &result));
            if (result.reordered) builder.reset(), ++reorders;
            builder.append(followed);
            REQUIRE(builder.appended() == followed.events.size());
        });
        REQUIRE(follower.finished());
        CHECK(builder.restarts() <= whole.threads.size() + reorders);
        requireSameModel(std::move(builder).finish(followed), expected);
    }
}

void checkLoadedBesideRead(const Bytes& file) {
    const std::string path = "/tmp/fiberscope-loaded-" + std::to_string(getpid()) + ".fstrace";
    {
        std::ofstream out(path, std::ios::binary);
        out.write(reinterpret_cast<const char*>(file.data()), static_cast<std::streamsize>(file.size()));
        REQUIRE(out.good());
    }
    Trace expected_trace;
    trace::ReadError error;
    const bool readable = trace::readTrace(path, expected_trace, error);
    Trace trace;
    Timeline model;
    trace::ReadError load_error;
    const bool loaded = analysis::readTraceAndModel(path, trace, model, load_error);
    unlink(path.c_str());
    REQUIRE(loaded == readable);
    if (!readable) {
        REQUIRE(load_error.text() == error.text());
        return;
    }
    REQUIRE(trace.events == expected_trace.events);
    REQUIRE(trace.threads.size() == expected_trace.threads.size());
    REQUIRE(trace.header.duration_ns == expected_trace.header.duration_ns);
    requireSameModel(model, analysis::buildTimeline(expected_trace));
}

} // namespace test

namespace {

using test::ev;

std::uint8_t sw(trace::SwitchReason r) { return static_cast<std::uint8_t>(r); }

// Two workers: thread 1 starts and records for a while before its first
// switch (whose `from` says fiber 7 ran there all along); a steal and a
// hand-off name worker 2, whose thread appears only at the end.
Trace lookAheadTrace() {
    using trace::ScheduleHow;
    using trace::SwitchReason;
    std::vector<trace::Event> e = {
        ev(1, 0, EventKind::ThreadStart, 0),
        ev(2, 0, EventKind::FiberCreate, 5, 1, 1),
        ev(3, 0, EventKind::Schedule, 5, 1, 0, static_cast<std::uint8_t>(ScheduleHow::OwnQueue)),
        ev(4, 1, EventKind::ThreadStart, 1),
        ev(5, 1, EventKind::Mark, 2),
        ev(6, 1, EventKind::ZoneBegin, 2),
        ev(7, 0, EventKind::Switch, 1, 5, 0, sw(SwitchReason::Yield)),
        ev(8, 1, EventKind::ZoneEnd),
        ev(9, 0, EventKind::Schedule, 1, 1, 2, static_cast<std::uint8_t>(ScheduleHow::IdleHandoff)),
        ev(10, 0, EventKind::WakeupSent, 2),
        ev(11, 1, EventKind::Switch, 7, 0, 0, sw(SwitchReason::Idle)),
        ev(12, 1, EventKind::Steal, 1, 2),
        ev(13, 0, EventKind::FiberName, 5, 3),
        ev(14, 2, EventKind::ThreadStart, 2),
        ev(15, 2, EventKind::WakeupReceived, 0),
        ev(16, 2, EventKind::Switch, 0, 1, 0, sw(SwitchReason::Idle)),
        ev(17, 0, EventKind::Switch, 5, 0, 0, sw(SwitchReason::Finish)),
    };
    Trace t = test::makeTrace(3, std::move(e), {"spawned", "setup", "worker five"});
    return t;
}

} // namespace

TEST_CASE("a model appended record by record equals the model built at once", "[analysis][incremental]") {
    const Trace trace = lookAheadTrace();
    test::checkAppendedInPieces(trace, 1, 4);
    // The look-ups into later records are what a cut breaks: the builder had to start over.
    TimelineBuilder builder;
    Trace growing = trace;
    growing.events.resize(8);
    growing.threads.resize(2);
    builder.append(growing);
    growing.events = trace.events;
    growing.threads = trace.threads;
    builder.append(growing);
    CHECK(builder.restarts() == 1);
    const Timeline tl = std::move(builder).finish(growing);
    // Thread 1 ran fiber 7 from its first record, and the zone is fiber 7's.
    const analysis::FiberLane* seven = analysis::findFiber(tl, 7);
    REQUIRE(seven);
    REQUIRE(seven->zones().size() == 1);
    CHECK(seven->lane.intervals.begin()->start == 4);
    // The fiber named after its create record is named.
    const analysis::FiberLane* five = analysis::findFiber(tl, 5);
    REQUIRE(five);
    CHECK(five->name() == "worker five");
}

TEST_CASE("fiber lanes read from the model's store; copies and moves of the model read the same", "[analysis][incremental]") {
    using trace::ScheduleHow;
    using trace::SwitchReason;
    const auto own = static_cast<std::uint8_t>(ScheduleHow::OwnQueue);
    // Fiber 5 lives 6 ns (its lane goes to the store); fiber 6 runs for 6 s
    // and fiber 1 waits as long, so their starts are over 2^32 ns apart: they
    // keep blocks of their own.
    std::vector<trace::Event> e = {
        ev(1, 0, EventKind::ThreadStart, 0),
        ev(2, 0, EventKind::FiberCreate, 5, 1, 0),
        ev(3, 0, EventKind::Schedule, 5, 1, 0, own),
        ev(4, 0, EventKind::FiberCreate, 6, 1, 0),
        ev(5, 0, EventKind::Schedule, 6, 1, 0, own),
        ev(7, 0, EventKind::Switch, 1, 5, 0, sw(SwitchReason::Yield)),
        ev(8, 0, EventKind::Switch, 5, 6, 0, sw(SwitchReason::Finish)),
        ev(6'000'000'000, 0, EventKind::Switch, 6, 1, 0, sw(SwitchReason::Finish)),
    };
    const Trace trace = test::makeTrace(1, std::move(e));
    const auto check = [](const Timeline& tl, bool stored) {
        const analysis::FiberLane* five = analysis::findFiber(tl, 5);
        const analysis::FiberLane* six = analysis::findFiber(tl, 6);
        REQUIRE(five);
        REQUIRE(six);
        CHECK(five->lane.intervals.inStore() == stored);
        CHECK_FALSE(six->lane.intervals.inStore());
        CHECK_FALSE(analysis::findFiber(tl, 1)->lane.intervals.inStore());
        const auto& iv = five->lane.intervals;
        REQUIRE(iv.size() == 3);
        CHECK((iv[0].start == 2 && iv[0].end == 7 && iv[0].state == analysis::State::Ready && iv[0].fiber == 5 && iv[0].cause == 1));
        CHECK((iv[1].start == 7 && iv[1].end == 8 && iv[1].state == analysis::State::Running && iv[1].thread == 0 && iv[1].cause == 5));
        CHECK((iv[2].start == 8 && iv[2].end == 6'000'000'000 && iv[2].state == analysis::State::Finished && iv[2].cause == 6));
        CHECK(five->finished() == 8);
        CHECK(five->finishedThread() == 0);
        CHECK(six->lane.intervals.back().start == 6'000'000'000);
    };
    const Timeline tl = analysis::buildTimeline(trace);
    check(tl, true);
    CHECK(tl.fiber_store.bytes() == (2 + 2) * sizeof(std::uint64_t)); // fiber 5's 3 items, narrow: two to a word
    // A copy owns its lanes' items and holds no store.
    Timeline copy = tl;
    check(copy, false);
    CHECK(copy.fiber_store.bytes() == 0);
    test::requireSameModel(copy, tl);
    // A move keeps the slices; so does a move-assignment over a model that had its own.
    Timeline built = analysis::buildTimeline(trace);
    const Timeline moved = std::move(built);
    check(moved, true);
    test::requireSameModel(moved, tl);
    copy = analysis::buildTimeline(trace);
    check(copy, true);
    test::requireSameModel(copy, tl);
    // A copy-assignment over a model with a store.
    Timeline assigned = analysis::buildTimeline(trace);
    assigned = tl;
    check(assigned, false);
    test::requireSameModel(assigned, tl);
    // The builder's snapshot closes a copy the same way.
    TimelineBuilder builder;
    builder.append(trace);
    const Timeline snap = builder.snapshot(trace);
    check(snap, true);
    test::requireSameModel(snap, tl);
}

TEST_CASE("a model built beside the read equals the model built after it", "[analysis][incremental][load]") {
    // Hostile files (each pattern at three sizes; some the reader refuses: the
    // load fails with the read's error).
    for (const auto& pattern : testing::hostilePatterns())
        for (std::size_t n : {1, 7, 40}) {
            INFO(pattern.name << ", n = " << n);
            test::checkLoadedBesideRead(pattern.make(n));
        }
    // A thread whose worker changes: the build beside the merge must start
    // over, and the model is built from the merged records instead.
    {
        using K = EventKind;
        testing::TraceBuilder b;
        testing::ChunkWriter w(b, 0);
        w.rec(K::ThreadStart, {0, 0});
        w.rec(K::Switch, {w.f(0), w.f(1), 9});
        w.rec(K::ThreadStart, {1, 0});
        w.rec(K::Switch, {w.f(1), w.f(0), 0});
        testing::ChunkWriter w2(b, 1);
        w2.rec(K::ThreadStart, {1, 0});
        INFO("a worker that changes");
        test::checkLoadedBesideRead(b.bytes());
    }
    // No file: the read's own error line.
    Trace trace;
    Timeline model;
    trace::ReadError error, read_error;
    CHECK_FALSE(analysis::readTraceAndModel("/nonexistent/fiberscope.fstrace", trace, model, error));
    CHECK_FALSE(trace::readTrace("/nonexistent/fiberscope.fstrace", trace, read_error));
    CHECK(error.text() == read_error.text());
}

TEST_CASE("a model appended in pieces equals the model built at once on hostile traces", "[analysis][incremental]") {
    std::uint64_t seed = 100;
    testing::forEachHostileTrace({1, 7, 40}, [&](const Trace& trace, const char* name) {
        INFO(name);
        test::checkAppendedInPieces(trace, ++seed, 2);
    });
}

TEST_CASE("a recorded trace followed while it is written models the same as the finished file", "[analysis][incremental]") {
    const std::string path = "/tmp/fiberscope-incremental-recorded-" + std::to_string(getpid()) + ".fstrace";
    {
        trace::Recorder recorder(path, {.buffer_bytes = 4096});
        REQUIRE(recorder.ok());
        std::vector<std::thread> threads;
        for (unsigned w = 0; w < 3; ++w)
            threads.emplace_back([w] {
                namespace emit = trace::emit;
                emit::threadStart(trace::now(), w, "worker");
                std::uint64_t fiber = 10 + w;
                for (int i = 0; i < 300; ++i, fiber += 3) {
                    emit::fiberCreate(trace::now(), fiber, 1);
                    emit::schedule(trace::now(), fiber, 1, (w + 1) % 3, trace::ScheduleHow::IdleHandoff);
                    emit::switchTo(trace::now(), 0, fiber, trace::SwitchReason::Idle);
                    if (i % 5 == 0) emit::steal(trace::now(), fiber, (w + 2) % 3);
                    emit::switchTo(trace::now(), fiber, 0, trace::SwitchReason::Finish);
                }
                emit::threadStop(trace::now());
            });
        for (auto& t : threads) t.join();
        REQUIRE(recorder.stop());
    }
    std::ifstream in(path, std::ios::binary);
    const test::Bytes file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    unlink(path.c_str());
    REQUIRE(file.size() > 10000);
    test::checkFollowedInPieces(file, 7, 4);
    test::checkLoadedBesideRead(file);
    Trace trace;
    trace::ReadError error;
    REQUIRE(trace::parseTrace({file.data(), file.size()}, trace, error));
    test::checkAppendedInPieces(trace, 8, 3);
}
