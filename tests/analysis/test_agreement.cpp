// One model, every tool: `fiberscope stats`, the Chrome export and the text
// timeline print what the analysis model (fiberscope::analysis::Timeline,
// which the viewer draws) says, and nothing else.
//
// Each tool builds its own model from the trace; the test builds one more
// and recomputes from its lanes, flows and samples, independently of the
// tools' code, what each tool must print: per-thread busy/idle/parked and
// per-fiber run/wait/runs/moves/latency counts (stats), every slice, zone and
// arrow (export), every cell of the map (timeline). The traces: every
// lesson, recorded on the default backend and on epoll (as test_lessons
// records them), the hostile patterns (tests/hostile), random well-formed
// records, and hand-built traces whose flows (cancel, mutex hand-off,
// condition wake) are checked exactly.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <random>
#include <set>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fiberscope/analysis/timeline.hpp>
#include <fiberscope/trace_reader.hpp>

#include "decoded_trace.hpp"
#include "chrome_json.hpp"
#include "hostile_traces.hpp"
#include "incremental.hpp"
#include "trace_tools.hpp"

extern char** environ;

using namespace fiberscope;
using analysis::FiberLane;
using analysis::Flow;
using analysis::FlowKind;
using analysis::Interval;
using analysis::Lane;
using analysis::State;
using analysis::ThreadLane;
using analysis::Timeline;
using trace::EventKind;
using trace::ScheduleHow;
using trace::SwitchReason;
using trace::Trace;

namespace {

// ---------------------------------------------------------------------------
// What the model says, summed here (not with the analysis' own totals)

struct Sums {
    std::int64_t ns[analysis::kStateCount] = {};
    std::uint64_t runs = 0;
    std::uint64_t moves = 0;
    std::int64_t at(State s) const { return ns[static_cast<int>(s)]; }
};

Sums sumLane(const Lane& lane) {
    Sums sums;
    std::int32_t previous = -1;
    for (const Interval& iv : lane.intervals) {
        sums.ns[static_cast<int>(iv.state)] += iv.end - iv.start;
        if (iv.state != State::Running) continue;
        if (sums.runs && iv.thread != previous) ++sums.moves;
        ++sums.runs;
        previous = iv.thread;
    }
    return sums;
}

// ---------------------------------------------------------------------------
// stats

void checkStats(const Trace& trace, const Timeline& tl, bool well_formed) {
    const trace::TraceStats stats = trace::computeStats(trace);
    CHECK(stats.duration_ns == tl.end_time);

    std::size_t threads = 0;
    std::int64_t busy = 0;
    for (const ThreadLane& lane : tl.threads) {
        // Not the trace writer's pseudo thread, which holds only cpu-samples (FORMAT.md, "CPU samples").
        std::uint64_t records = 0;
        for (std::uint32_t n : lane.records) records += n;
        threads += lane.record_count > 0 && records != lane.records[static_cast<std::size_t>(EventKind::CpuSample)];
    }
    REQUIRE(stats.threads.size() == threads);
    for (const trace::ThreadStats& t : stats.threads) {
        INFO("thread " << t.thread);
        const ThreadLane* lane = analysis::findThread(tl, t.thread);
        REQUIRE(lane);
        const Sums sums = sumLane(lane->lane);
        CHECK(t.busy_ns == sums.at(State::Running));
        CHECK(t.idle_ns == sums.at(State::Idle));
        CHECK(t.parked_ns == sums.at(State::Parked));
        CHECK(t.alive_ns == lane->alive_ns);
        CHECK(t.begin == lane->first_time);
        CHECK(t.end == lane->alive_end);
        // A lane covers exactly the thread's life.
        if (!lane->lane.intervals.empty()) CHECK(t.busy_ns + t.idle_ns + t.parked_ns == t.alive_ns);
        std::uint64_t switches = 0;
        for (std::size_t i = 0; i < trace.events.size(); ++i)
            switches += trace.events.thread(i) == lane->thread && trace.events.kind(i) == EventKind::Switch;
        CHECK(t.switches == switches);
        busy += t.busy_ns;
    }

    std::map<std::uint64_t, std::uint64_t> samples; // fiber -> latency samples
    for (const analysis::LatencySample& s : analysis::latenciesOf(tl)) ++samples[s.fiber];
    std::size_t fibers = 0;
    for (const FiberLane& fl : tl.fibers) fibers += fl.fiber() != 0;
    REQUIRE(stats.fibers.size() == fibers);
    std::int64_t run = 0;
    for (const trace::FiberStats& f : stats.fibers) {
        INFO("fiber " << f.id);
        const FiberLane* fl = analysis::findFiber(tl, f.id);
        REQUIRE(fl);
        const Sums sums = sumLane(fl->lane);
        CHECK(f.run_ns == sums.at(State::Running));
        CHECK(f.wait_ns == sums.at(State::Ready) + sums.at(State::Waiting));
        CHECK(f.runs == sums.runs);
        CHECK(f.migrations == sums.moves);
        CHECK(f.latency.count == samples[f.id]);
        CHECK(f.name == fl->name());
        CHECK(f.created == fl->created());
        CHECK(f.finished == fl->finished());
        run += f.run_ns;
    }
    // When each fiber was created is its (last) create record's time: the
    // model reads it back from the fiber's lane (FiberLane::created).
    std::map<std::uint64_t, std::int64_t> create_time;
    for (std::size_t i = 0; i < trace.events.size(); ++i)
        if (trace.events.kind(i) == EventKind::FiberCreate) create_time[trace.events[i].arg[0]] = trace.events.time(i);
    for (const FiberLane& fl : tl.fibers) {
        INFO("fiber " << fl.fiber());
        const auto it = create_time.find(fl.fiber());
        CHECK(fl.createdInTrace() == (it != create_time.end()));
        if (it != create_time.end()) CHECK(fl.created() == it->second);
    }
    CHECK(stats.latency.count == tl.latencies.size());
    // In a trace the runtime wrote, a fiber runs exactly where a thread runs it.
    if (well_formed) CHECK(run == busy);
}

// ---------------------------------------------------------------------------
// export

// "1234.567" (microseconds, three decimals) as 1234567 ns, exactly.
std::int64_t exactNs(const std::string& text) {
    const bool negative = !text.empty() && text[0] == '-';
    const std::size_t dot = text.find('.');
    REQUIRE(dot != std::string::npos);
    REQUIRE(text.size() == dot + 4);
    const std::uint64_t whole = std::stoull(text.substr(negative, dot - negative));
    const std::uint64_t frac = std::stoull(text.substr(dot + 1));
    const std::uint64_t magnitude = whole * 1000 + frac;
    return negative ? static_cast<std::int64_t>(0 - magnitude) : static_cast<std::int64_t>(magnitude);
}

std::int64_t ns(const testing::JsonEvent& e, const char* key) { return exactNs(e.fields.at(key)); }

// (A copy: a lane's intervals are decoded from its packed list, IntervalList,
// so there is no Interval in memory to point at.)
std::optional<Interval> runStartingAt(const Timeline& tl, std::uint32_t thread, std::int64_t time, std::uint64_t fiber) {
    const ThreadLane* lane = analysis::findThread(tl, thread);
    if (!lane) return std::nullopt;
    for (const Interval iv : lane->lane.intervals)
        if (iv.start == time && iv.state == State::Running && iv.fiber == fiber) return iv;
    return std::nullopt;
}

void checkExport(const Trace& trace, const Timeline& tl) {
    std::ostringstream out;
    std::string error;
    REQUIRE(trace::writeChromeJson(trace, out, error));
    const std::string json = out.str();
    std::vector<testing::JsonEvent> events;
    testing::JsonChecker checker{json};
    const bool parsed = checker.document(events);
    INFO(checker.error);
    REQUIRE(parsed);

    using Slice = std::tuple<std::uint64_t, std::int64_t, std::int64_t, std::string>; // tid, start, end, name
    std::multiset<Slice> thread_slices, expected_slices;
    std::map<std::uint64_t, std::int64_t> fiber_run_ns;      // fiber track -> time of its run pieces
    std::map<std::uint64_t, std::size_t> fiber_zones;        // fiber track -> zones begun
    std::map<std::string, std::tuple<std::string, std::uint64_t, std::int64_t>> flow_from; // id -> name, tid, ts
    std::map<std::string, std::pair<std::uint64_t, std::int64_t>> flow_to;                 // id -> tid, ts
    for (const testing::JsonEvent& e : events) {
        const std::string& ph = e.fields.at("ph");
        const std::uint64_t tid = std::stoull(e.fields.at("tid"));
        const std::string& pid = e.fields.at("pid");
        if (ph == "X" && pid == "1") thread_slices.emplace(tid, ns(e, "ts"), ns(e, "ts") + ns(e, "dur"), e.fields.at("name"));
        if (ph == "X" && pid == "2") fiber_run_ns[tid] += ns(e, "dur");
        if (ph == "B" && pid == "2") ++fiber_zones[tid];
        if (ph == "s") flow_from[e.fields.at("id")] = {e.fields.at("name"), tid, ns(e, "ts")};
        if (ph == "f") flow_to[e.fields.at("id")] = {tid, ns(e, "ts")};
    }

    // Thread tracks: the thread lanes' intervals (empty idle and parked ones carry nothing).
    for (const ThreadLane& lane : tl.threads)
        for (const Interval& iv : lane.lane.intervals) {
            if (iv.state == State::Running) expected_slices.emplace(lane.thread, iv.start, iv.end, analysis::findFiber(tl, iv.fiber)->name());
            else if (iv.end > iv.start) expected_slices.emplace(lane.thread, iv.start, iv.end, iv.state == State::Parked ? "parked" : "idle");
        }
    CHECK(thread_slices == expected_slices);

    // Fiber tracks: a fiber's run pieces add up to its lane's running time; its zones are the model's.
    for (const FiberLane& fl : tl.fibers) {
        if (fl.fiber() == 0) continue;
        INFO("fiber " << fl.fiber());
        CHECK(fiber_run_ns[fl.fiber()] == sumLane(fl.lane).at(State::Running));
        CHECK(fiber_zones[fl.fiber()] == fl.zones().size());
    }

    // Arrows: the model's flows, one each. An arrow ending at a switch-in
    // may aim inside the run it begins.
    REQUIRE(flow_from.size() == flow_to.size());
    using Arrow = std::tuple<std::string, std::uint64_t, std::int64_t, std::uint64_t, std::int64_t>;
    std::vector<Arrow> arrows, flows;
    for (const auto& [id, from] : flow_from) {
        REQUIRE(flow_to.count(id));
        arrows.emplace_back(std::get<0>(from), std::get<1>(from), std::get<2>(from), flow_to[id].first, flow_to[id].second);
    }
    for (const Flow& f : analysis::flowsOf(tl)) flows.emplace_back(analysis::flowKindName(f.kind), f.from.thread, f.from.time, f.to.thread, f.to.time);
    std::sort(arrows.begin(), arrows.end());
    std::vector<std::size_t> order(tl.flows.size());
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return flows[a] < flows[b]; });
    REQUIRE(arrows.size() == flows.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
        const Flow f = analysis::flowAt(tl, order[k]);
        const Arrow& a = arrows[k];
        INFO("flow " << analysis::flowKindName(f.kind) << " " << f.from.thread << "@" << f.from.time << " -> " << f.to.thread << "@"
                     << f.to.time << ", exported as -> " << std::get<3>(a) << "@" << std::get<4>(a));
        CHECK(std::get<0>(a) == analysis::flowKindName(f.kind));
        CHECK(std::get<1>(a) == f.from.thread);
        CHECK(std::get<2>(a) == f.from.time);
        CHECK(std::get<3>(a) == f.to.thread);
        const std::int64_t to = std::get<4>(a);
        if (to != f.to.time) {
            const std::optional<Interval> run = runStartingAt(tl, f.to.thread, f.to.time, f.to.fiber);
            REQUIRE(run);
            CHECK(to >= run->start);
            CHECK(to <= run->end);
        }
    }
}

// ---------------------------------------------------------------------------
// text timeline

std::string columnName(const ThreadLane& lane) {
    return lane.worker >= 0 ? "w" + std::to_string(lane.worker) : "t" + std::to_string(lane.thread);
}

// The cell the map must show for `lane` in [row * bucket, (row + 1) * bucket),
// from the lane: the fiber that ran longest (lowest id on ties; "+" if
// others ran too, even for no time), else "_" (more parked than idle) or
// ".", blank where no interval touches the row.
std::vector<std::string> expectedColumn(const ThreadLane& lane, std::int64_t bucket, std::int64_t rows) {
    std::vector<std::map<std::uint64_t, std::int64_t>> ran(static_cast<std::size_t>(rows));
    std::vector<std::int64_t> idle(static_cast<std::size_t>(rows)), parked(static_cast<std::size_t>(rows));
    std::vector<bool> touched(static_cast<std::size_t>(rows));
    for (const Interval& iv : lane.lane.intervals) {
        if (iv.state != State::Running && iv.end == iv.start) continue;
        const std::int64_t b = std::max<std::int64_t>(0, iv.start), e = std::max(b, iv.end);
        const std::int64_t first = std::min(b / bucket, rows - 1), last = std::min(e > b ? (e - 1) / bucket : first, rows - 1);
        for (std::int64_t r = first; r <= last; ++r) {
            const auto k = static_cast<std::size_t>(r);
            touched[k] = true;
            const std::int64_t overlap = std::max<std::int64_t>(0, std::min(e, (r + 1) * bucket) - std::max(b, r * bucket));
            if (iv.state == State::Running) ran[k][iv.fiber] += overlap;
            else if (iv.state == State::Parked) parked[k] += overlap;
            else idle[k] += overlap;
        }
    }
    std::vector<std::string> cells(static_cast<std::size_t>(rows));
    for (std::size_t k = 0; k < cells.size(); ++k) {
        if (!ran[k].empty()) {
            auto best = ran[k].begin();
            for (auto it = ran[k].begin(); it != ran[k].end(); ++it)
                if (it->second > best->second) best = it;
            cells[k] = std::to_string(best->first) + (ran[k].size() > 1 ? "+" : "");
        } else if (touched[k]) {
            cells[k] = parked[k] > idle[k] ? "_" : ".";
        }
    }
    return cells;
}

void checkTimeline(const Trace& trace, const Timeline& tl) {
    std::vector<const ThreadLane*> columns;
    for (const ThreadLane& lane : tl.threads)
        if (!lane.lane.intervals.empty()) columns.push_back(&lane);
    const std::int64_t end = tl.end_time;
    std::int64_t bucket = std::max<std::int64_t>(1, end / 37 + 1);
    std::ostringstream out;
    trace::writeTextTimeline(trace, out, {.max_rows = 60, .bucket_ns = bucket, .legend_limit = 40});
    const std::string text = out.str();
    INFO(text.substr(0, 4000));
    if (columns.empty() || end <= 0) {
        CHECK(text.find("no thread activity") != std::string::npos);
        return;
    }
    if (columns.size() > 64) columns.resize(64); // the rest are counted, not drawn
    bucket = std::max(bucket, (end + 9999) / 10000);
    const std::int64_t rows = std::max<std::int64_t>(1, (end + bucket - 1) / bucket);

    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::size_t dashes = 0;
    while (dashes < lines.size() && !(lines[dashes].rfind("--", 0) == 0 && lines[dashes].find('+') != std::string::npos)) ++dashes;
    REQUIRE(dashes < lines.size());
    REQUIRE(dashes > 0);
    const std::size_t bar = lines[dashes].find('+');
    const std::size_t width = (lines[dashes].size() - bar - 1) / columns.size() - 1;
    REQUIRE((width + 1) * columns.size() == lines[dashes].size() - bar - 1);
    const auto cell = [&](const std::string& line, std::size_t c) {
        const std::size_t at = bar + 1 + c * (width + 1) + 1;
        std::string t = at < line.size() ? line.substr(at, width) : "";
        while (!t.empty() && t.back() == ' ') t.pop_back();
        return t;
    };
    // The header names the lanes, in the model's order.
    for (std::size_t c = 0; c < columns.size(); ++c) CHECK(cell(lines[dashes - 1], c) == columnName(*columns[c]));
    REQUIRE(lines.size() >= dashes + 1 + static_cast<std::size_t>(rows));
    for (std::size_t c = 0; c < columns.size(); ++c) {
        const std::vector<std::string> expected = expectedColumn(*columns[c], bucket, rows);
        for (std::int64_t r = 0; r < rows; ++r) {
            INFO("column " << columnName(*columns[c]) << ", row " << r << " (bucket " << bucket << " ns)");
            CHECK(cell(lines[dashes + 1 + static_cast<std::size_t>(r)], c) == expected[static_cast<std::size_t>(r)]);
        }
    }
}

void checkAgreement(const Trace& trace, bool well_formed) {
    const Timeline tl = analysis::buildTimeline(trace);
    checkStats(trace, tl, well_formed);
    checkExport(trace, tl);
    checkTimeline(trace, tl);
}

// ---------------------------------------------------------------------------
// Lesson traces, recorded as test_lessons records them

std::string tempDir() {
    const char* dir = std::getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

// Runs `exe args...` with FIBERSCOPE_TRACE=trace_path (and FIBERSCOPE_BACKEND=auto
// unless args choose one), output to a file; at most 60 s. Returns its status.
int runTraced(const std::string& exe, const std::vector<std::string>& args, const std::string& trace_path, std::string& output) {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "FIBERSCOPE_TRACE=", 17) != 0 && std::strncmp(*e, "FIBERSCOPE_BACKEND=", 19) != 0) env_strings.emplace_back(*e);
    env_strings.push_back("FIBERSCOPE_TRACE=" + trace_path);
    env_strings.push_back("FIBERSCOPE_BACKEND=auto");
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> arg_strings{exe};
    arg_strings.insert(arg_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : arg_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    const std::string output_path = trace_path + ".out";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid = -1;
    const int spawned = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    REQUIRE(spawned == 0);
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
        const pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) FAIL("waitpid failed: " << std::strerror(errno));
        if (std::chrono::steady_clock::now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            FAIL(exe << " did not finish within 60 s");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::ostringstream text;
    if (FILE* f = std::fopen(output_path.c_str(), "r")) {
        char buffer[4096];
        for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, f)) > 0;) text.write(buffer, static_cast<std::streamsize>(n));
        std::fclose(f);
    }
    output = text.str();
    unlink(output_path.c_str());
    return status;
}

// The lesson programs in the build: lessonNN-name, by name.
std::vector<std::string> lessonPrograms() {
    std::vector<std::string> found;
    if (DIR* dir = opendir(FIBERSCOPE_LESSON_BIN_DIR)) {
        while (const dirent* entry = readdir(dir)) {
            const std::string name = entry->d_name;
            if (name.size() < 9 || name.rfind("lesson", 0) != 0 || name[8] != '-') continue;
            const std::string path = std::string(FIBERSCOPE_LESSON_BIN_DIR) + "/" + name;
            struct stat st {};
            if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & S_IXUSR)) found.push_back(path);
        }
        closedir(dir);
    }
    std::sort(found.begin(), found.end());
    return found;
}

// ---------------------------------------------------------------------------
// Hand-built traces

using test::ev;
std::uint8_t sw(SwitchReason r) { return static_cast<std::uint8_t>(r); }
std::uint8_t how(ScheduleHow h) { return static_cast<std::uint8_t>(h); }
std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }
constexpr std::uint8_t kRead = 22; // IORING_OP_READ

using test::makeTrace;

// Fiber 3 cancels fiber 2's read; 2 signals 3's condition and hands its
// mutex to main (1), which waited for it; main yields to 3.
Trace cancelAndHandOffTrace() {
    return makeTrace(2, {
                            ev(0, 0, EventKind::ThreadStart, 0, 0),
                            ev(1, 1, EventKind::ThreadStart, 1, 0),
                            ev(2, 1, EventKind::Park),
                            ev(5, 0, EventKind::FiberCreate, 2, 1, 0),
                            ev(5, 0, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::OwnQueue)),
                            ev(6, 0, EventKind::FiberCreate, 3, 1, 0),
                            ev(6, 0, EventKind::Schedule, 3, 1, 0, how(ScheduleHow::OwnQueue)),
                            ev(10, 0, EventKind::MutexContended, 1, 0xA0),
                            ev(10, 0, EventKind::Switch, 1, 2, 0, sw(SwitchReason::Mutex)),
                            ev(11, 0, EventKind::Submit, 2, u(4), 0, kRead),
                            ev(11, 0, EventKind::Switch, 2, 3, 0, sw(SwitchReason::IoWait)),
                            ev(12, 0, EventKind::CancelRequest, 2, 1),
                            ev(14, 0, EventKind::ConditionWait, 3, 0xC0),
                            ev(14, 0, EventKind::Switch, 3, 0, 0, sw(SwitchReason::Condition)),
                            ev(15, 0, EventKind::Park),
                            ev(20, 0, EventKind::CancelDelivered, 2),
                            ev(21, 0, EventKind::Complete, 2, u(-ECANCELED), 0, kRead),
                            ev(22, 0, EventKind::Unpark, 1),
                            ev(25, 0, EventKind::Switch, 0, 2, 0, sw(SwitchReason::Idle)),
                            ev(26, 0, EventKind::ConditionWake, 3, 0xC0, 0, 0),
                            ev(27, 0, EventKind::MutexHandoff, 2, 1, 0xA0),
                            ev(27, 0, EventKind::Switch, 2, 1, 0, sw(SwitchReason::Handoff)),
                            ev(28, 0, EventKind::Switch, 1, 3, 0, sw(SwitchReason::Yield)),
                            ev(30, 0, EventKind::Mark, 1),
                        },
                     {"done"});
}

std::vector<Flow> flowsOf(const Timeline& tl, FlowKind kind) {
    std::vector<Flow> out;
    for (const Flow& f : analysis::flowsOf(tl))
        if (f.kind == kind) out.push_back(f);
    return out;
}

// Random records, each valid on its own (kinds and enumerations in range, as
// the reader guarantees), in no meaningful order.
Trace randomTrace(std::mt19937_64& rng) {
    std::vector<trace::Event> events;
    std::int64_t t = 0;
    const unsigned threads = 1 + static_cast<unsigned>(rng() % 4);
    for (int i = 0; i < 1500; ++i) {
        t += static_cast<std::int64_t>(rng() % 3);
        auto kind = static_cast<EventKind>(1 + rng() % trace::kMaxEventKind);
        if (kind == EventKind::StringDef) kind = EventKind::Mark;
        std::uint8_t small = 0;
        switch (kind) {
        case EventKind::Switch: small = static_cast<std::uint8_t>(rng() % (trace::kMaxSwitchReason + 1)); break;
        case EventKind::Schedule: small = static_cast<std::uint8_t>(rng() % 3); break;
        case EventKind::ConditionWake: small = static_cast<std::uint8_t>(rng() % 3); break;
        case EventKind::GroupOp: small = static_cast<std::uint8_t>(rng() % 3); break;
        case EventKind::QueueOp: small = static_cast<std::uint8_t>(rng() % 5); break;
        default: small = static_cast<std::uint8_t>(rng() % 30); break;
        }
        const std::uint64_t result = rng() % 4 == 0 ? u(-ECANCELED) : rng() % 5;
        events.push_back(ev(t, static_cast<std::uint32_t>(rng() % threads), kind, rng() % 12, kind == EventKind::Complete ? result : rng() % 6,
                            rng() % 5, small));
    }
    return makeTrace(threads, events, {"a", "b", "c", "d"});
}

} // namespace

// ---------------------------------------------------------------------------

TEST_CASE("stats, export and timeline agree with the model on every lesson's trace", "[analysis][agreement][lessons]") {
    const std::vector<std::string> lessons = lessonPrograms();
    INFO("lessons in " FIBERSCOPE_LESSON_BIN_DIR);
    REQUIRE(lessons.size() >= 13);
    for (const std::string& exe : lessons) {
        for (const char* backend : {"", "epoll"}) {
            const std::string name = exe.substr(exe.rfind('/') + 1);
            const std::string path = tempDir() + "/fiberscope-agreement-" + std::to_string(getpid()) + "-" + name + (*backend ? "-epoll" : "") + ".fstrace";
            std::vector<std::string> args;
            if (*backend) args = {"--backend", backend};
            std::string output;
            const int status = runTraced(exe, args, path, output);
            INFO(name << " " << backend << ":\n" << output);
            REQUIRE(WIFEXITED(status));
            REQUIRE(WEXITSTATUS(status) == 0);
            Trace trace;
            trace::ReadError error;
            const bool read = trace::readTrace(path, trace, error, {.strict = true});
            std::ifstream in(path, std::ios::binary);
            const std::vector<std::uint8_t> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            unlink(path.c_str());
            INFO(error.text());
            REQUIRE(read);
            REQUIRE(trace.lost_events == 0);
            checkAgreement(trace, true);
            // One model however the records arrive: appended in pieces, and followed while written.
            const std::uint64_t seed = std::hash<std::string>{}(name) + (*backend ? 1 : 0);
            test::checkAppendedInPieces(trace, seed, 2);
            test::checkFollowedInPieces(file, seed, 1);
            test::checkLoadedBesideRead(file);
            // The lesson's threads stopped, so every lane ends at its thread-stop.
            const Timeline tl = analysis::buildTimeline(trace);
            for (const ThreadLane& lane : tl.threads)
                if (!lane.lane.intervals.empty()) CHECK(lane.lane.intervals.back().end == lane.alive_end);
        }
    }
}

TEST_CASE("stats, export and timeline agree with the model on hostile and random traces", "[analysis][agreement]") {
    testing::forEachHostileTrace({1, 7, 40}, [](const Trace& trace, const char* name) {
        INFO(name);
        checkAgreement(trace, false);
    });
    std::mt19937_64 rng(13);
    for (int round = 0; round < 12; ++round) {
        INFO("random trace " << round);
        checkAgreement(randomTrace(rng), false);
    }
    checkAgreement(cancelAndHandOffTrace(), true);
}

TEST_CASE("the model's cancel, mutex hand-off and condition wake flows", "[analysis][flows]") {
    const Trace trace = cancelAndHandOffTrace();
    const Timeline tl = analysis::buildTimeline(trace);

    const auto cancel = flowsOf(tl, FlowKind::Cancel);
    REQUIRE(cancel.size() == 1);
    CHECK(cancel[0].from.time == 12); // requested by fiber 3, running there
    CHECK(cancel[0].from.fiber == 3);
    CHECK(cancel[0].to.time == 20); // delivered to fiber 2
    CHECK(cancel[0].to.fiber == 2);
    const auto canceled = flowsOf(tl, FlowKind::Canceled);
    REQUIRE(canceled.size() == 1);
    CHECK(canceled[0].from.time == 20);
    CHECK(canceled[0].to.time == 21); // the read's -ECANCELED completion
    CHECK(trace.events[canceled[0].to.event].kind == EventKind::Complete);

    const auto wake = flowsOf(tl, FlowKind::ConditionWake);
    REQUIRE(wake.size() == 1);
    CHECK(wake[0].from.time == 26);
    CHECK(wake[0].from.fiber == 2); // the signaling fiber
    CHECK(wake[0].to.time == 28);   // 3 resumes when main yields to it
    CHECK(wake[0].to.fiber == 3);
    const auto handoff = flowsOf(tl, FlowKind::MutexHandoff);
    REQUIRE(handoff.size() == 1);
    CHECK(handoff[0].from.time == 27);
    CHECK(handoff[0].from.fiber == 2);
    CHECK(handoff[0].to.time == 27); // main resumes at once (the hand-off switch)
    CHECK(handoff[0].to.fiber == 1);
    CHECK(std::string(analysis::flowKindName(FlowKind::Canceled)) == "canceled");
    CHECK(std::string(analysis::flowKindName(FlowKind::MutexHandoff)) == "mutex-handoff");
    CHECK(std::string(analysis::flowKindName(FlowKind::ConditionWake)) == "condition-wake");

    // A cancel that unlinks a condition wait takes effect at the fiber's resume.
    const Trace wait = makeTrace(2, {
                                        ev(0, 0, EventKind::ThreadStart, 0, 0),
                                        ev(1, 1, EventKind::ThreadStart, 1, 0),
                                        ev(10, 0, EventKind::FiberCreate, 2, 1, 0),
                                        ev(10, 0, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::OwnQueue)),
                                        ev(20, 0, EventKind::Switch, 1, 2, 0, sw(SwitchReason::Await)),
                                        ev(25, 0, EventKind::ConditionWait, 2, 0x1000),
                                        ev(25, 0, EventKind::Switch, 2, 0, 0, sw(SwitchReason::Condition)),
                                        ev(40, 1, EventKind::CancelRequest, 2, 0),
                                        ev(40, 1, EventKind::CancelDelivered, 2),
                                        ev(40, 1, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::IdleHandoff)),
                                        ev(50, 0, EventKind::Switch, 0, 2, 0, sw(SwitchReason::Idle)),
                                    });
    const Timeline wl = analysis::buildTimeline(wait);
    REQUIRE(flowsOf(wl, FlowKind::Cancel).size() == 1);
    const auto resumed = flowsOf(wl, FlowKind::Canceled);
    REQUIRE(resumed.size() == 1);
    CHECK(resumed[0].from.time == 40);
    CHECK(resumed[0].to.time == 50);
    CHECK(resumed[0].to.thread == 0);
    CHECK(flowsOf(wl, FlowKind::ConditionWake).empty()); // nobody signaled
}

TEST_CASE("a thread's lane is its life as a loop thread; the main fiber resumed after the loop leaves the model",
          "[analysis][lanes]") {
    // Worker 0 runs main, stops (its idle loop returned), resumes main outside
    // the loop, and later starts a second loop; worker 1 never stops.
    const Trace trace = makeTrace(2, {
                                         ev(0, 0, EventKind::ThreadStart, 0, 0),
                                         ev(5, 1, EventKind::ThreadStart, 1, 0),
                                         ev(6, 1, EventKind::Park),
                                         ev(10, 0, EventKind::Switch, 1, 0, 0, sw(SwitchReason::Exit)),
                                         ev(20, 0, EventKind::ThreadStop),
                                         ev(21, 0, EventKind::Switch, 0, 1, 0, sw(SwitchReason::Exit)),
                                         ev(40, 0, EventKind::ThreadStart, 0, 0),
                                         ev(45, 0, EventKind::FiberName, 1, 1),
                                         ev(45, 0, EventKind::FiberName, 1, 0), // an empty name names nothing
                                         ev(50, 0, EventKind::ThreadStop),
                                         ev(60, 1, EventKind::Mark, 2),
                                     },
                                     {"again", "m"});
    const Timeline tl = analysis::buildTimeline(trace);
    const ThreadLane& w0 = *analysis::findThread(tl, 0);
    REQUIRE(w0.lane.intervals.size() == 3);
    CHECK((w0.lane.intervals[0].start == 0 && w0.lane.intervals[0].end == 10 && w0.lane.intervals[0].state == State::Running));
    CHECK((w0.lane.intervals[1].start == 10 && w0.lane.intervals[1].end == 20 && w0.lane.intervals[1].state == State::Idle));
    CHECK((w0.lane.intervals[2].start == 40 && w0.lane.intervals[2].end == 50 && w0.lane.intervals[2].state == State::Running));
    CHECK(w0.alive_ns == 30);
    CHECK(w0.alive_end == 50);
    const ThreadLane& w1 = *analysis::findThread(tl, 1);
    CHECK(w1.lane.intervals.back().end == 60); // parked to the trace's end
    CHECK(w1.alive_ns == 55);
    const FiberLane& main = *analysis::findFiber(tl, 1);
    // Running, waiting for the loop to exit; gone while it runs outside the loop; running in the second loop.
    REQUIRE(main.lane.intervals.size() == 3);
    CHECK((main.lane.intervals[1].state == State::Waiting && main.lane.intervals[1].end == 21));
    CHECK((main.lane.intervals[2].start == 40 && main.lane.intervals[2].state == State::Running));
    CHECK(main.name() == "again");
    checkAgreement(trace, true);
}
