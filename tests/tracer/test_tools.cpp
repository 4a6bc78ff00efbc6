// The trace tools on a hand-made trace (exact numbers) and on a recorded
// program (consistency): stats, the Chrome JSON export, the text timeline.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <cctype>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>
#include <fiberscope/trace_reader.hpp>

#include "chrome_json.hpp"
#include "trace_tools.hpp"

using namespace fiberscope;
using namespace fiberscope::trace;
using fiberscope::testing::JsonChecker;
using fiberscope::testing::JsonEvent;
using fiberscope::testing::nanoseconds;
using namespace std::chrono_literals;

namespace {

// ---------------------------------------------------------------------------
// Building traces

trace::Event makeEvent(std::int64_t time, std::uint32_t thread, EventKind kind, std::uint64_t a0 = 0, std::uint64_t a1 = 0,
                std::uint64_t a2 = 0, std::uint8_t small = 0) {
    trace::Event e;
    e.time = time;
    e.thread = thread;
    e.kind = kind;
    e.arg[0] = a0;
    e.arg[1] = a1;
    e.arg[2] = a2;
    e.small = small;
    return e;
}

constexpr auto kSwitch = EventKind::Switch;
std::uint8_t reason(SwitchReason r) { return static_cast<std::uint8_t>(r); }

// Two workers. Thread 0 runs main (1), spawns fiber 2 ("child"), parks; the
// child is stolen by worker 1 and later woken by an I/O completion.
Trace handMadeTrace() {
    Trace trace;
    trace.header.complete = true;
    trace.header.duration_ns = 200;
    trace.strings = {"", "worker 0", "worker 1", "child", "halfway", "work"};
    trace.threads.resize(2);
    for (std::uint32_t i = 0; i < 2; ++i) {
        trace.threads[i].number = i;
        trace.threads[i].worker = i;
        trace.threads[i].name_id = i + 1;
        trace.threads[i].name = trace.strings[i + 1];
    }
    trace.events = {
        makeEvent(0, 0, EventKind::ThreadStart, 0, 1),
        makeEvent(10, 0, EventKind::FiberCreate, 2, 1, 3),
        makeEvent(10, 0, EventKind::Schedule, 2, 1, 0, 2),
        makeEvent(20, 0, kSwitch, 1, 0, 0, reason(SwitchReason::Await)),
        makeEvent(25, 1, EventKind::ThreadStart, 1, 2),
        makeEvent(30, 1, EventKind::Steal, 2, 0),
        makeEvent(40, 1, kSwitch, 0, 2, 0, reason(SwitchReason::Idle)),
        makeEvent(45, 1, EventKind::ZoneBegin, 5),
        makeEvent(50, 0, EventKind::Park),
        makeEvent(55, 1, EventKind::Mark, 4),
        makeEvent(60, 1, EventKind::Submit, 2, static_cast<std::uint64_t>(std::int64_t{7}), 0, 22),
        makeEvent(60, 1, kSwitch, 2, 0, 0, reason(SwitchReason::IoWait)),
        makeEvent(70, 1, EventKind::Park),
        makeEvent(100, 1, EventKind::Complete, 2, static_cast<std::uint64_t>(std::int64_t{-11}), 0, 22),
        makeEvent(110, 1, EventKind::Unpark, 1),
        makeEvent(120, 1, kSwitch, 0, 2, 0, reason(SwitchReason::Idle)),
        makeEvent(125, 1, EventKind::ZoneEnd),
        makeEvent(130, 1, EventKind::WakeupSent, 0),
        makeEvent(140, 0, EventKind::WakeupReceived, 1),
        makeEvent(145, 0, EventKind::Unpark, 1),
        makeEvent(150, 1, kSwitch, 2, 1, 0, reason(SwitchReason::Finish)),
        makeEvent(150, 1, EventKind::FiberFinish, 2),
        makeEvent(170, 1, kSwitch, 1, 0, 0, reason(SwitchReason::Exit)),
        makeEvent(180, 1, EventKind::ThreadStop),
        makeEvent(190, 0, EventKind::ThreadStop),
    };
    return trace;
}

const ThreadStats& threadNumbered(const TraceStats& stats, std::uint32_t thread) {
    for (const ThreadStats& t : stats.threads)
        if (t.thread == thread) return t;
    FAIL("no thread " << thread);
    throw;
}

const FiberStats& fiberNumbered(const TraceStats& stats, std::uint64_t fiber) {
    for (const FiberStats& f : stats.fibers)
        if (f.id == fiber) return f;
    FAIL("no fiber " << fiber);
    throw;
}

// Slices on one track must nest: no slice may end inside a sibling.
void requireNested(const std::vector<std::pair<std::int64_t, std::int64_t>>& slices, const std::string& track) {
    std::vector<std::pair<std::int64_t, std::int64_t>> sorted = slices;
    std::sort(sorted.begin(), sorted.end(), [](auto& a, auto& b) {
        return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<std::int64_t> ends; // open slices' ends
    for (const auto& [begin, end] : sorted) {
        while (!ends.empty() && ends.back() <= begin) ends.pop_back();
        INFO("track " << track << ": slice " << begin << ".." << end << " crosses its parent's end "
                      << (ends.empty() ? 0 : ends.back()));
        REQUIRE((ends.empty() || end <= ends.back()));
        ends.push_back(end);
    }
}

// Checks the export is valid JSON of the expected shape; returns the events.
std::vector<JsonEvent> checkChromeJson(const std::string& json) {
    REQUIRE(json.rfind("{\"traceEvents\":[", 0) == 0);
    std::vector<JsonEvent> events;
    JsonChecker checker{json};
    const bool parsed = checker.document(events);
    INFO(checker.error);
    REQUIRE(parsed);
    REQUIRE(json.find("\"displayTimeUnit\"") != std::string::npos);

    std::map<std::string, int> flow_starts, flow_ends;
    std::map<std::string, std::vector<std::pair<std::int64_t, std::int64_t>>> slices; // by "pid/tid"
    std::map<std::string, std::vector<std::int64_t>> open;                            // B without E yet
    for (const JsonEvent& e : events) {
        const std::string ph = e.fields.at("ph");
        REQUIRE(e.fields.count("pid"));
        REQUIRE(e.fields.count("tid"));
        REQUIRE(e.fields.count("name"));
        const std::string track = e.fields.at("pid") + "/" + e.fields.at("tid");
        if (ph == "M") continue;
        REQUIRE(e.fields.count("ts"));
        if (ph == "X") {
            REQUIRE(nanoseconds(e, "dur") >= 0);
            slices[track].push_back({nanoseconds(e, "ts"), nanoseconds(e, "ts") + nanoseconds(e, "dur")});
        } else if (ph == "B") {
            open[track].push_back(nanoseconds(e, "ts"));
        } else if (ph == "E") {
            REQUIRE_FALSE(open[track].empty());
            slices[track].push_back({open[track].back(), nanoseconds(e, "ts")});
            open[track].pop_back();
        } else if (ph == "s") {
            ++flow_starts[e.fields.at("id")];
        } else if (ph == "f") {
            REQUIRE(e.fields.at("bp") == "e");
            ++flow_ends[e.fields.at("id")];
        } else if (ph == "C") {
            CHECK(e.fields.at("name").find("waiting for a CPU: ") != std::string::npos); // cpu-sample counters
        } else {
            REQUIRE(ph == "i");
        }
    }
    for (const auto& [track, starts] : open) REQUIRE(starts.empty());
    CHECK(flow_starts == flow_ends);
    for (const auto& [id, count] : flow_starts) CHECK(count == 1);
    for (const auto& [track, list] : slices) requireNested(list, track);
    return events;
}

std::size_t countPhase(const std::vector<JsonEvent>& events, const std::string& ph, const std::string& name = "") {
    std::size_t n = 0;
    for (const JsonEvent& e : events)
        if (e.fields.at("ph") == ph && (name.empty() || e.fields.at("name") == name)) ++n;
    return n;
}

std::string tempTrace(const char* name) {
    return "/tmp/fiberscope-tools-" + std::to_string(getpid()) + "-" + name + ".fstrace";
}

long tree(EventLoop& loop, long depth) {
    if (depth == 0) {
        (void)loop.sleep(100us);
        return 1;
    }
    std::vector<Future<long>> children;
    for (int i = 0; i < 4; ++i) children.push_back(loop.async([&loop, depth] { return tree(loop, depth - 1); }));
    long sum = 0;
    for (auto& c : children) sum += c.await();
    return sum;
}

// Records a small program on 4 threads: a named tree of fibers with a zone
// and a mark, sleepers, and mutex contention.
Trace recordProgram() {
    const std::string path = tempTrace("program");
    {
        Recorder recorder(path);
        REQUIRE(recorder.ok());
        auto loop = EventLoop::create({.threads = 4}).value();
        auto total = loop->async([&] {
            setFiberName("root");
            mark("tree start");
            Zone zone("building the tree");
            return tree(*loop, 3);
        });
        REQUIRE(total.await() == 64);
        Mutex mutex;
        std::vector<Future<void>> lockers;
        for (int i = 0; i < 6; ++i)
            lockers.push_back(loop->async([&] {
                setFiberName("locker");
                for (int r = 0; r < 10; ++r) {
                    std::lock_guard lock(mutex);
                    loop->yield();
                }
            }));
        for (auto& l : lockers) l.await();
    }
    Trace trace;
    ReadError error;
    const bool read = readTrace(path, trace, error, {.strict = true});
    INFO(error.text());
    REQUIRE(read);
    unlink(path.c_str());
    return trace;
}

} // namespace

// ---------------------------------------------------------------------------

TEST_CASE("thread timelines and stats of a hand-made trace are exact", "[tools]") {
    const Trace trace = handMadeTrace();
    // The thread lanes of the model every tool reads (the tools' own thread
    // timelines were replaced by it: these are their assertions).
    const analysis::Timeline timeline = analysis::buildTimeline(trace);
    REQUIRE(timeline.threads.size() == 2);
    // Thread 0: main runs 0..20, idle 20..50, parked 50..145, idle 145..190.
    const analysis::ThreadLane& lane0 = *analysis::findThread(timeline, 0);
    const auto& t0 = lane0.lane.intervals;
    REQUIRE(t0.size() == 4);
    CHECK((t0[0].state == analysis::State::Running && t0[0].fiber == 1 && t0[0].start == 0 && t0[0].end == 20));
    // It stopped for an await: the switch that began the next interval says so.
    REQUIRE(t0[1].cause != analysis::kNoEvent);
    CHECK(trace.events[t0[1].cause].kind == EventKind::Switch);
    CHECK(trace.events[t0[1].cause].small == reason(SwitchReason::Await));
    CHECK((t0[1].state == analysis::State::Idle && t0[1].start == 20 && t0[1].end == 50));
    CHECK((t0[2].state == analysis::State::Parked && t0[2].start == 50 && t0[2].end == 145));
    CHECK((t0[3].state == analysis::State::Idle && t0[3].end == 190));
    CHECK(lane0.alive_ns == 190);
    CHECK(analysis::findThread(timeline, 1)->first_time == 25);
    CHECK(analysis::findThread(timeline, 1)->alive_ns == 155);

    const TraceStats stats = computeStats(trace);
    CHECK(stats.duration_ns == 200);
    const ThreadStats& w0 = threadNumbered(stats, 0);
    CHECK(w0.busy_ns == 20);
    CHECK(w0.idle_ns == 75);
    CHECK(w0.parked_ns == 95);
    CHECK(w0.switches == 1);
    CHECK(w0.steals_given == 1);
    CHECK(w0.wakeups_received == 1);
    const ThreadStats& w1 = threadNumbered(stats, 1);
    // Worker 1: idle 25..40, child 40..60, idle 60..70, parked 70..110,
    // idle 110..120, child 120..150, main 150..170, idle 170..180.
    CHECK(w1.busy_ns == 70);
    CHECK(w1.idle_ns == 45);
    CHECK(w1.parked_ns == 40);
    CHECK(w1.switches == 5);
    CHECK(w1.steals_taken == 1);
    CHECK(w1.wakeups_sent == 1);
    CHECK(w1.completions == 1);
    CHECK(w1.submits == 1);

    const FiberStats& child = fiberNumbered(stats, 2);
    CHECK(child.name == "child");
    CHECK(child.parent == 1);
    CHECK(child.runs == 2);
    CHECK(child.run_ns == 50);
    CHECK(child.created == 10);
    CHECK(child.finished == 150);
    CHECK(child.wait_ns == 140 - 50);
    // Ready at 10 (created), ran at 40: 30; completed at 100, ran at 120: 20.
    CHECK(child.latency.count == 2);
    CHECK(child.latency.p50 == 20);
    CHECK(child.latency.max == 30);
    const FiberStats& main_fiber = fiberNumbered(stats, 1);
    CHECK(main_fiber.name == "main");
    CHECK(main_fiber.runs == 2);
    CHECK(main_fiber.migrations == 1);
    CHECK(main_fiber.run_ns == 40);
    CHECK(stats.fibers.front().id == 2); // longest run first
    CHECK(stats.switch_reasons[reason(SwitchReason::Idle)] == 2);

    std::ostringstream text;
    writeStats(trace, text);
    CHECK(text.str().find("child") != std::string::npos);
    CHECK(text.str().find("worker 1") != std::string::npos);
}

TEST_CASE("latency percentiles use the nearest rank", "[tools]") {
    std::vector<std::int64_t> samples;
    for (std::int64_t i = 100; i >= 1; --i) samples.push_back(i);
    const LatencySummary s = summarizeLatencies(samples);
    CHECK(s.count == 100);
    CHECK(s.p50 == 50);
    CHECK(s.p90 == 90);
    CHECK(s.p99 == 99);
    CHECK(s.max == 100);
    CHECK(s.total == 5050);
    std::vector<std::int64_t> none;
    CHECK(summarizeLatencies(none).count == 0);
}

TEST_CASE("JSON strings are escaped and always valid UTF-8", "[tools]") {
    std::string out;
    appendJsonString(out, "a\"b\\c\n\x01 \xc3\xa9 \xff \xe2\x82");
    CHECK(out == "\"a\\\"b\\\\c\\n\\u0001 \xc3\xa9 \\ufffd \\ufffd\\ufffd\"");
}

TEST_CASE("the Chrome export of a hand-made trace nests and links", "[tools]") {
    const Trace trace = handMadeTrace();
    std::ostringstream out;
    std::string error = {};
    REQUIRE(writeChromeJson(trace, out, error));
    const auto events = checkChromeJson(out.str());
    CHECK(countPhase(events, "M", "thread_name") >= 2 + 2); // two threads, two fibers
    CHECK(countPhase(events, "X", "child") == 2);            // its runs on the thread tracks
    CHECK(countPhase(events, "B", "work") == 1);              // its zone, on its own track
    CHECK(countPhase(events, "E") == 1);
    CHECK(countPhase(events, "s", "wakeup") == 1);
    CHECK(countPhase(events, "s", "steal") == 1);
    CHECK(countPhase(events, "s", "spawn") == 1);
    CHECK(countPhase(events, "i", "halfway") == 1);
    CHECK(countPhase(events, "i", "submit read") == 1);
    CHECK(countPhase(events, "i", "complete read") == 1);
    // The zone (45..125) cuts the child's first run (40..60) into two pieces
    // on the fiber track: 40..45 and 45..60; its second run (120..150) into
    // 120..125 and 125..150.
    std::size_t fiber_track_runs = 0;
    for (const JsonEvent& e : events)
        if (e.fields.at("ph") == "X" && e.fields.at("pid") == "2" && e.fields.at("tid") == "2") ++fiber_track_runs;
    CHECK(fiber_track_runs == 4);
}

TEST_CASE("the text timeline of a hand-made trace", "[tools]") {
    const Trace trace = handMadeTrace();
    std::ostringstream out;
    writeTextTimeline(trace, out, {.max_rows = 20, .bucket_ns = 0, .legend_limit = 40});
    const std::string text = out.str();
    INFO(text);
    CHECK(text.find("w0 = worker 0") != std::string::npos);
    CHECK(text.find("w1 = worker 1") != std::string::npos);
    CHECK(text.find("<- mark: halfway") != std::string::npos);
    CHECK(text.find("2 = child") != std::string::npos);
    // 200 ns in rows of 10 ns: 20 rows, plus the header lines.
    CHECK(text.find("in 20 rows of 10 ns") != std::string::npos);
}

// `fiberscope records`: each record on a line, every field by the record
// table's name, values as the lessons write them.
TEST_CASE("the records of a hand-made trace, every field by name", "[tools][records]") {
    Trace trace = handMadeTrace();
    trace.strings.push_back("evil\x1b[2Jname");
    trace.events.insert(trace.events.begin() + 2, makeEvent(10, 0, EventKind::FiberName, 2, 6));
    std::ostringstream out;
    REQUIRE(writeRecords(trace, out, {}) == trace.events.size());
    const std::string text = out.str();
    INFO(text);
    CHECK(std::count(text.begin(), text.end(), '\n') == static_cast<long>(trace.events.size()));
    CHECK(text.find("0.010 us  worker 0  fiber-create fiber=2(evil\\x1b[2Jname) parent=1 name=\"child\"") != std::string::npos);
    CHECK(text.find("schedule fiber=2(evil\\x1b[2Jname) count=1 target=0 how=own-queue") != std::string::npos);
    CHECK(text.find("switch from=1 to=0 reason=await") != std::string::npos);
    CHECK(text.find("submit fiber=2(evil\\x1b[2Jname) opcode=22(read) fd=7") != std::string::npos);
    CHECK(text.find("result=-11") != std::string::npos);
    CHECK(text.find('\x1b') == std::string::npos);
    // Every field of every kind appears by its name.
    for (const trace::Event& e : trace.events) {
        const std::string line = recordText(trace, e);
        const trace::RecordKindInfo& info = trace::recordKind(e.kind);
        CHECK(line.rfind(info.name, 0) == 0);
        for (int k = 0; k < info.field_count; ++k) CHECK(line.find(std::string(" ") + info.fields[k].name + "=") != std::string::npos);
    }
    // Selections: a kind, a fiber, a worker, a time range, a limit.
    const auto lines = [&](auto set) {
        RecordsOptions o;
        set(o);
        std::ostringstream os;
        const std::size_t matched = writeRecords(trace, os, o);
        return std::make_pair(matched, os.str());
    };
    CHECK(lines([](RecordsOptions& o) { o.kinds = {EventKind::Park}; }).first == 2);
    CHECK(lines([](RecordsOptions& o) { o.fiber = 2; }).first == 11);
    CHECK(lines([](RecordsOptions& o) { o.worker = 1; }).first == 17);
    CHECK(lines([](RecordsOptions& o) { o.from = 100, o.to = 145; }).first == 7);
    const auto limited = lines([](RecordsOptions& o) { o.limit = 2; });
    CHECK(limited.first == trace.events.size());
    CHECK(limited.second.find("(24 more records match") != std::string::npos);
    CHECK(recordKindNamed("wakeup-sent") == &trace::recordKind(EventKind::WakeupSent));
    CHECK(recordKindNamed("stael") == nullptr);
}

TEST_CASE("stats, export and timeline agree with a recorded program", "[tools][tracer]") {
    const Trace trace = recordProgram();
    REQUIRE(trace.lost_events == 0);
    const TraceStats stats = computeStats(trace);
    REQUIRE(stats.duration_ns > 0);
    REQUIRE(stats.threads.size() >= 2);

    // Per thread: the states add up to its lifetime, which lies in the trace;
    // the switch count is the number of switch records.
    std::map<std::uint32_t, std::uint64_t> switch_records;
    for (const trace::Event& e : trace.events)
        if (e.kind == EventKind::Switch) ++switch_records[e.thread];
    std::int64_t busy = 0;
    std::uint64_t steals_taken = 0, steals_given = 0;
    for (const ThreadStats& t : stats.threads) {
        INFO("thread " << t.thread << " (" << t.name << ")");
        const std::int64_t sum = t.busy_ns + t.idle_ns + t.parked_ns;
        CHECK(std::abs(sum - t.alive_ns) <= t.alive_ns / 20);
        CHECK(t.alive_ns <= stats.duration_ns);
        CHECK(t.switches == switch_records[t.thread]);
        busy += t.busy_ns;
        steals_taken += t.steals_taken;
        steals_given += t.steals_given;
    }
    CHECK(steals_taken == steals_given);
    // A thread lives from its thread-start to its thread-stop record (the
    // main thread: from loop creation to loop destruction, which is less
    // than the recording, which starts and stops around it).
    const ThreadStats& main_thread = threadNumbered(stats, 0);
    CHECK(main_thread.worker == 0);
    std::int64_t started = -1, stopped = -1;
    for (const trace::Event& e : trace.events) {
        if (e.thread != 0) continue;
        if (e.kind == EventKind::ThreadStart && started < 0) started = e.time;
        if (e.kind == EventKind::ThreadStop) stopped = e.time;
    }
    CHECK(main_thread.begin == started);
    CHECK(main_thread.end == stopped);
    CHECK(main_thread.alive_ns == stopped - started);

    // Per fiber: every fiber ran, runs add up to the busy time, latencies are ordered.
    const std::size_t created = 1 + 4 + 16 + 64 + 6;
    CHECK(stats.fibers.size() == created + 1); // and main
    std::int64_t run = 0;
    bool root = false;
    std::size_t lockers = 0;
    for (const FiberStats& f : stats.fibers) {
        INFO("fiber " << f.id << " (" << f.name << ")");
        CHECK(f.runs >= 1);
        CHECK(f.run_ns >= 0);
        CHECK(f.wait_ns >= 0);
        CHECK(f.latency.p50 <= f.latency.p90);
        CHECK(f.latency.p90 <= f.latency.p99);
        CHECK(f.latency.p99 <= f.latency.max);
        if (f.id != 1) CHECK(f.latency.count >= 1); // created, then scheduled
        run += f.run_ns;
        root |= f.name == "root";
        lockers += f.name == "locker";
    }
    CHECK(run == busy);
    CHECK(root);
    CHECK(lockers == 6);
    CHECK(stats.latency.count >= created);
    CHECK(stats.latency.p50 <= stats.latency.p90);
    CHECK(stats.latency.p90 <= stats.latency.p99);
    CHECK(stats.latency.p99 <= stats.latency.max);

    std::ostringstream text;
    writeStats(trace, text);
    CHECK(text.str().find("root") != std::string::npos);
    CHECK(text.str().find("Schedule-to-run latency") != std::string::npos);

    // The Chrome export: valid, nested, linked, with every thread named.
    std::ostringstream json;
    std::string error = {};
    REQUIRE(writeChromeJson(trace, json, error));
    const auto events = checkChromeJson(json.str());
    for (const ThreadStats& t : stats.threads) {
        bool named = false;
        for (const JsonEvent& e : events)
            named |= e.fields.at("ph") == "M" && e.fields.at("name") == "thread_name" && e.fields.at("pid") == "1" &&
                     e.fields.at("tid") == std::to_string(t.thread);
        CHECK(named);
    }
    CHECK(countPhase(events, "B", "building the tree") == 1);
    CHECK(countPhase(events, "i", "tree start") == 1);
    CHECK(countPhase(events, "s", "spawn") == created);
    std::size_t runs = 0;
    for (const FiberStats& f : stats.fibers) runs += f.runs;
    CHECK(countPhase(events, "X") >= runs);

    // The text timeline: a column per worker thread, the mark, the legend.
    std::ostringstream timeline;
    writeTextTimeline(trace, timeline, {});
    const std::string map = timeline.str();
    INFO(map);
    for (const ThreadStats& t : stats.threads)
        if (t.worker >= 0) CHECK(map.find("w" + std::to_string(t.worker) + " = " + t.name) != std::string::npos);
    // The mark may share its row with the runtime's "backend: ..." mark, in
    // which case the row reads "<- marks: backend: io_uring, tree start".
    bool marked = false;
    std::istringstream rows_of_map(map);
    for (std::string row; std::getline(rows_of_map, row);)
        marked |= row.find("<- mark") != std::string::npos && row.find("tree start") != std::string::npos;
    CHECK(marked);
    CHECK(map.find("= root") != std::string::npos);
    std::size_t rows = 0;
    for (std::size_t at = map.find(" |"); at != std::string::npos; at = map.find(" |", at + 1)) ++rows;
    CHECK(rows <= 61); // the header and at most 60 rows
}

// ---------------------------------------------------------------------------
// Hostile traces: what a crafted file can make the text outputs do

namespace {

// True if `text` holds a byte a terminal could act on (anything below
// space but newline, DEL, or a C1 control written as UTF-8).
bool hasTerminalControl(const std::string& text) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if ((c < 0x20 && c != '\n') || c == 0x7F) return true;
        if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9F) return true;
    }
    return false;
}

} // namespace

TEST_CASE("terminalSafe escapes every control character and keeps text", "[tools][hostile]") {
    REQUIRE(terminalSafe("plain text") == "plain text");
    REQUIRE(terminalSafe("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x99\x82") == "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x99\x82");
    REQUIRE(terminalSafe("\x1b]52;c;aGk=\x07") == "\\x1b]52;c;aGk=\\x07");
    REQUIRE(terminalSafe("\x1b[6n") == "\\x1b[6n");
    REQUIRE(terminalSafe("a\\b") == "a\\\\b");
    REQUIRE(terminalSafe(std::string("nul\0here", 8)) == "nul\\x00here");
    REQUIRE(terminalSafe("\x7f") == "\\x7f");
    REQUIRE(terminalSafe("\xc2\x9b" "6n") == "\\xc2\\x9b6n"); // C1 CSI
    REQUIRE(terminalSafe("\xff\xfe") == "\\xff\\xfe");       // not UTF-8
    REQUIRE(terminalSafe("\xe2\x82") == "\\xe2\\x82");       // cut sequence
    REQUIRE(terminalSafe("\xed\xa0\x80") == "\\xed\\xa0\\x80"); // a surrogate
}

TEST_CASE("stats and timeline never pass a trace's escape sequences to the terminal", "[tools][hostile]") {
    Trace trace = handMadeTrace();
    const std::string evil = "\x1b]52;c;ZXZpbA==\x07\x1b[6n\r\xc2\x9b" "2J";
    for (std::size_t i = 1; i < trace.strings.size(); ++i) trace.strings[i] = evil;
    for (auto& t : trace.threads) t.name = evil;
    trace.header.backend = evil;
    trace.header.command_line = {evil, evil};
    trace.warnings = {evil};
    std::ostringstream stats, timeline;
    writeStats(trace, stats, {.title = evil});
    writeTextTimeline(trace, timeline);
    INFO(stats.str());
    REQUIRE_FALSE(hasTerminalControl(stats.str()));
    INFO(timeline.str());
    REQUIRE_FALSE(hasTerminalControl(timeline.str()));
    REQUIRE(timeline.str().find("\\x1b]52") != std::string::npos); // shown, escaped
}

TEST_CASE("durations print across the whole int64 range", "[tools][hostile]") {
    REQUIRE(formatDuration(0) == "0 ns");
    REQUIRE(formatDuration(-999) == "-999 ns");
    REQUIRE(formatDuration(INT64_MIN).find(" s") != std::string::npos);
    REQUIRE(formatDuration(INT64_MAX).find(" s") != std::string::npos);
    REQUIRE(formatDuration(INT64_MIN + 1).front() == '-');
}

TEST_CASE("a trace with thousands of threads keeps the text timeline small", "[tools][hostile]") {
    Trace trace;
    trace.header.complete = true;
    trace.header.duration_ns = 1000;
    trace.strings = {""};
    constexpr std::uint32_t kThreads = 20000;
    trace.threads.resize(kThreads);
    std::vector<trace::Event> events;
    for (std::uint32_t i = 0; i < kThreads; ++i) {
        trace.threads[i].number = i;
        trace.threads[i].worker = i;
        trace.threads[i].name = "worker " + std::to_string(i);
        events.push_back(makeEvent(i % 1000, i, EventKind::ThreadStart, i, 0));
        events.push_back(makeEvent(i % 1000, i, kSwitch, 0, 1, 0, reason(SwitchReason::Idle)));
    }
    std::sort(events.begin(), events.end(), [](const trace::Event& a, const trace::Event& b) { return a.time < b.time; });
    trace.events = events;
    std::ostringstream out;
    writeTextTimeline(trace, out, {.max_rows = 1000000});
    const std::string text = out.str();
    REQUIRE(text.find("19936 more threads not shown") != std::string::npos);
    REQUIRE(text.size() < 8u << 20);
}
