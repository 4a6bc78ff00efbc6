// One vocabulary: for every opcode the table knows (and one it does not),
// the viewer's explanations and the tools' Chrome export print the same
// names for it, both from trace_vocabulary.hpp; the viewer's durations are
// the tools' durations; the viewer's fiber filter and lesson stepping read
// the record table.
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include <fiberscope/trace_reader.hpp>
#include <fiberscope/trace_records.hpp>
#include <fiberscope/trace_vocabulary.hpp>

#include "model/describe.hpp"
#include "model/filter.hpp"
#include "model/explain.hpp"
#include "trace_tools.hpp"

using namespace fiberscope;
using trace::Event;
using trace::EventKind;

namespace {

Event ev(std::int64_t time, EventKind kind, std::uint64_t a0 = 0, std::uint64_t a1 = 0, std::uint64_t a2 = 0, std::uint8_t small = 0) {
    Event e;
    e.time = time;
    e.kind = kind;
    e.arg[0] = a0;
    e.arg[1] = a1;
    e.arg[2] = a2;
    e.small = small;
    return e;
}

// One thread; the main fiber submits `opcode` on fd 5, waits, and its
// completion (result 3) resumes it.
trace::Trace opTrace(std::uint8_t opcode, const char* backend) {
    trace::Trace t;
    t.header.complete = true;
    t.header.duration_ns = 100;
    trace::ThreadInfo info;
    info.worker = 0;
    info.name = "worker 0";
    t.threads.push_back(info);
    t.strings = {"", backend};
    t.header.backend = std::string(backend) == "backend: epoll" ? "epoll" : "io_uring";
    t.events = {
        ev(0, EventKind::ThreadStart, 0, 0),
        ev(1, EventKind::Mark, 1),
        ev(10, EventKind::Submit, 1, 5, 0, opcode),
        ev(10, EventKind::Switch, 1, 0, 0, static_cast<std::uint8_t>(trace::SwitchReason::IoWait)),
        ev(20, EventKind::Park),
        ev(40, EventKind::Complete, 1, 3, 0, opcode),
        ev(40, EventKind::Unpark, 1),
        ev(45, EventKind::Switch, 0, 1, 0, static_cast<std::uint8_t>(trace::SwitchReason::Idle)),
    };
    return t;
}

std::string json(std::string_view text) {
    std::string out;
    trace::appendJsonString(out, text);
    return out;
}

} // namespace

TEST_CASE("the viewer and the tools print the same names for every opcode", "[viewer][vocabulary]") {
    std::vector<std::uint8_t> opcodes;
    for (const trace::OpcodeInfo& op : trace::opcodeTable()) opcodes.push_back(op.opcode);
    opcodes.push_back(150); // one no table knows
    for (const char* backend : {"backend: io_uring", "backend: epoll"})
        for (std::uint8_t opcode : opcodes) {
            INFO(backend << ", opcode " << int(opcode) << " (" << trace::opcodeName(opcode) << ")");
            const trace::Trace t = opTrace(opcode, backend);
            const viewer::Timeline tl = viewer::buildTimeline(t);
            const std::string label = trace::opcodeLabel(opcode);
            const std::string noun = trace::opcodeNoun(opcode);
            // The viewer: the submit names it by its label, the completion by its noun.
            const std::string submitted = viewer::explain(tl, t, 2).text;
            CHECK(submitted.find(label) != std::string::npos);
            const std::string completed = viewer::explain(tl, t, 5).text;
            CHECK(completed.find("'s " + noun + " ") != std::string::npos);
            // The export: the instant by the short name, its argument by the label.
            std::ostringstream out;
            std::string error;
            REQUIRE(trace::writeChromeJson(t, out, error));
            const std::string exported = out.str();
            CHECK(exported.find("\"name\":" + json("submit " + trace::opcodeName(opcode))) != std::string::npos);
            CHECK(exported.find("\"name\":" + json("complete " + trace::opcodeName(opcode))) != std::string::npos);
            CHECK(exported.find("\"opcode\":" + json(trace::opcodeName(opcode))) != std::string::npos);
            CHECK(exported.find("\"operation\":" + json(label)) != std::string::npos);
        }
}

TEST_CASE("the opcode table names each opcode once, with every word", "[viewer][vocabulary]") {
    std::vector<std::string> names;
    for (const trace::OpcodeInfo& op : trace::opcodeTable()) {
        INFO("opcode " << int(op.opcode));
        REQUIRE(op.name);
        REQUIRE(op.kernel);
        REQUIRE(op.noun);
        REQUIRE(op.explanation);
        CHECK(trace::findOpcode(op.opcode) == &op);
        CHECK(trace::opcodeName(op.opcode) == op.name);
        CHECK(std::string(op.explanation).back() == '.');
        if (op.notes & trace::kOpNoteRuntimeNumber) CHECK(trace::opcodeLabel(op.opcode).rfind(op.name, 0) == 0);
        else CHECK(trace::opcodeLabel(op.opcode) == op.kernel);
        for (const std::string& other : names) CHECK(other != op.name);
        names.push_back(op.name);
    }
    CHECK(trace::opcodeName(150) == "op 150");
    CHECK(trace::opcodeLabel(150) == "IORING_OP_150");
    CHECK(trace::opcodeNoun(150) == "operation 150");
    CHECK(trace::opcodeHas(trace::kOpPollAdd, trace::kOpNoteReadinessWait));
    CHECK(trace::opcodeHas(trace::kOpTimeout, trace::kOpNoteTimer));
    CHECK(trace::opcodeHas(trace::kOpLinkTimeout, trace::kOpNoteTimer));
    CHECK_FALSE(trace::opcodeHas(150, trace::kOpNoteTimer));
}

TEST_CASE("one duration format for the viewer and the tools", "[viewer][vocabulary]") {
    for (std::int64_t ns : {std::int64_t{0}, std::int64_t{812}, std::int64_t{-3250}, std::int64_t{40'980'000}, std::int64_t{1'204'000'000}})
        CHECK(viewer::formatDuration(ns) == trace::formatDuration(ns));
    CHECK(trace::formatDuration(812) == "812 ns");
    CHECK(trace::formatDuration(3250) == "3.25 us");
    CHECK(trace::formatDuration(-3250) == "-3.25 us");
    CHECK(trace::formatDuration(40'980'000) == "40.98 ms");
    CHECK(trace::formatDuration(1'204'000'000) == "1.204 s");
    // A value that rounds up to the next unit is printed in it.
    CHECK(trace::formatDuration(999'999) == "1.00 ms");
    CHECK(trace::formatDuration(999'999'999) == "1.000 s");
    CHECK(trace::formatCount(1234567) == "1,234,567");
    CHECK(trace::formatCount(0) == "0");
}

TEST_CASE("the viewer's fiber filter reads the record table", "[viewer][vocabulary]") {
    for (unsigned k = 1; k <= trace::kMaxEventKind; ++k) {
        const trace::RecordKindInfo& info = trace::kRecordKinds[k];
        if (info.special) continue;
        INFO(info.name);
        Event e = ev(0, info.kind, 11, 12, 13, 0);
        std::uint64_t fibers[3];
        const std::size_t n = viewer::eventFibers(e, fibers);
        std::size_t expected = 0;
        for (int f = 0; f < info.field_count; ++f)
            if (info.fields[f].type == trace::FieldType::Fiber) {
                REQUIRE(expected < n);
                CHECK(fibers[expected++] == trace::fieldValue(e, f));
            }
        CHECK(n == expected);
    }
}

TEST_CASE("one set of words per backend: the park call, the wake-up, where operations wait, thread names", "[viewer][vocabulary][backend]") {
    const trace::BackendWords& uring = trace::backendWords("io_uring");
    const trace::BackendWords& epoll = trace::backendWords("epoll");
    CHECK(uring.backend == trace::Backend::IoUring);
    CHECK(epoll.backend == trace::Backend::Epoll);
    CHECK(&trace::backendWords("") == &uring); // an older trace's empty name
    CHECK(std::string(uring.park_call) == "io_uring_enter");
    CHECK(std::string(epoll.park_call) == "epoll_pwait2");
    CHECK(std::string(uring.wake) == "MSG_RING");
    CHECK(std::string(epoll.wake) == "eventfd write");
    CHECK(std::string(uring.in_flight) == "in the ring");
    CHECK(std::string(epoll.in_flight) == "registered with epoll");
    for (const char* word : {epoll.park_call, epoll.park_waits_for, epoll.wake, epoll.in_flight, epoll.in_flight_short,
                             epoll.completions}) {
        INFO(word);
        const std::string w = word;
        CHECK(w.find("io_uring") == std::string::npos);
        CHECK(w.find("MSG_RING") == std::string::npos);
        CHECK(w.find("ring") == std::string::npos);
    }
    // The viewer's describe layer reads the header.
    trace::Trace t = opTrace(trace::kOpPollAdd, "backend: epoll");
    CHECK(&viewer::backendWords(t) == &epoll);
    t.header.backend = "io_uring";
    CHECK(&viewer::backendWords(t) == &uring);
    // A POLL_ADD is an epoll readiness wait only on epoll.
    for (const char* backend : {"backend: io_uring", "backend: epoll"}) {
        const trace::Trace op = opTrace(trace::kOpPollAdd, backend);
        const viewer::Timeline tl = viewer::buildTimeline(op);
        const std::string submitted = viewer::explain(tl, op, 2).text;
        INFO(submitted);
        CHECK((submitted.find("epoll") != std::string::npos) == (op.header.backend == "epoll"));
    }
    // Thread names: a blocking-pool thread (worker numbers from 2000) by its pool index.
    CHECK(trace::threadDisplayName(0, 0) == "worker 0");
    CHECK(trace::threadDisplayName(trace::kBlockingPoolWorkerBase, 3) == "blocking pool thread 0");
    CHECK(trace::threadDisplayName(trace::kBlockingPoolWorkerBase + 2, 3) == "blocking pool thread 2");
    CHECK(trace::threadDisplayName(-1, 4) == "thread 4");
}

TEST_CASE("the tools name a blocking-pool thread as the viewer does", "[viewer][vocabulary][backend]") {
    trace::Trace t = opTrace(22, "backend: epoll");
    trace::ThreadInfo pool;
    pool.number = 1;
    pool.worker = trace::kBlockingPoolWorkerBase;
    pool.name = "blocking pool 0"; // as the runtime records it
    t.threads.push_back(pool);
    Event start = ev(30, EventKind::ThreadStart, static_cast<std::uint64_t>(trace::kBlockingPoolWorkerBase));
    start.thread = 1;
    t.events.insert(t.events.begin() + 5, start);
    const viewer::Timeline tl = viewer::buildTimeline(t);
    std::ostringstream stats, timeline;
    trace::writeStats(t, stats);
    trace::writeTextTimeline(t, timeline);
    INFO(stats.str() << timeline.str());
    CHECK(stats.str().find("blocking pool thread 0") != std::string::npos);
    CHECK(stats.str().find("2000") == std::string::npos);
    CHECK(timeline.str().find("blocking pool thread 0") != std::string::npos);
    CHECK(viewer::threadLabel(tl, 1) == "blocking pool thread 0");
}
