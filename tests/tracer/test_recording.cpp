// Recording a real program and reading it back: every scheduling decision
// shows up, consistently.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>
#include <fiberscope/trace_reader.hpp>

#include "../support/recorded_trace.hpp"

extern char** environ;

using namespace fiberscope;
using namespace fiberscope::trace;
using namespace std::chrono_literals;

namespace {

std::string tempTrace(const char* name) {
    return "/tmp/fiberscope-trace-" + std::to_string(getpid()) + "-" + name + ".fstrace";
}

long tree(EventLoop& loop, long depth) {
    if (depth == 0) return 1;
    std::vector<Future<long>> children;
    for (int i = 0; i < 4; ++i) children.push_back(loop.async([&loop, depth] { return tree(loop, depth - 1); }));
    long sum = 0;
    for (auto& c : children) sum += c.await();
    return sum;
}

std::map<EventKind, std::size_t> countKinds(const Trace& trace) {
    std::map<EventKind, std::size_t> counts;
    for (const trace::Event& e : trace.events) ++counts[e.kind];
    return counts;
}

} // namespace

TEST_CASE("a recorded program's trace reads back with every kind of decision", "[tracer]") {
    const std::string path = tempTrace("decisions");
    {
        Recorder recorder(path);
        REQUIRE(recorder.ok());
        // The seed policy, whatever FIBERSCOPE_SCHEDULER says: its marks are
        // counted below (a scaling loop adds "scheduler: scaling").
        auto loop = EventLoop::create({.threads = 4, .scheduler = SchedulerPolicy::seed}).value();
        auto total = loop->async([&] {
            setFiberName("root");
            mark("tree start");
            Zone zone("building the tree");
            return tree(*loop, 4);
        });
        REQUIRE(total.await() == 256);
        auto sleeper = loop->async([&] { return loop->sleep(30s); });
        (void)loop->sleep(2ms);
        REQUIRE(sleeper.cancel().error() == Errc::Canceled);
        // The main fiber holds the mutex while the lockers arrive: every one
        // of them contends, and each unlock hands the mutex over.
        Mutex mutex;
        mutex.lockUncancelable();
        std::vector<Future<void>> lockers;
        for (int i = 0; i < 8; ++i)
            lockers.push_back(loop->async([&] {
                for (int r = 0; r < 20; ++r) {
                    std::lock_guard lock(mutex);
                    loop->yield();
                }
            }));
        (void)loop->sleep(5ms);
        mutex.unlock();
        for (auto& l : lockers) l.await();
    }
    Trace trace;
    ReadError error;
    const bool read = readTrace(path, trace, error, {.strict = true});
    INFO(error.text());
    REQUIRE(read);
    REQUIRE(trace.header.complete);
    REQUIRE(trace.warnings.empty());
    REQUIRE(trace.lost_events == 0);
    auto counts = countKinds(trace);
    const std::size_t fibers = 1 + 4 + 16 + 64 + 256 + 1 + 8;
    CHECK(counts[EventKind::FiberCreate] == fibers);
    CHECK(counts[EventKind::FiberFinish] == fibers);
    CHECK(counts[EventKind::Switch] >= 2 * fibers);
    CHECK(counts[EventKind::Schedule] >= fibers);
    CHECK(counts[EventKind::ThreadStart] >= 2);
    CHECK(counts[EventKind::Park] >= 1);
    CHECK(counts[EventKind::Submit] >= 2);
    CHECK(counts[EventKind::Complete] >= 2);
    CHECK(counts[EventKind::CancelRequest] == 1);
    CHECK(counts[EventKind::MutexContended] >= 1);
    CHECK(counts[EventKind::MutexHandoff] >= 1);
    CHECK(counts[EventKind::Mark] == 2); // ours, and the loop's "backend: ..."
    // Ours, and one per worker thread started (spawnWorker is a zone).
    std::size_t spawn_zones = 0;
    for (const trace::Event& e : trace.events)
        spawn_zones += e.kind == EventKind::ZoneBegin && trace.string(e.arg[0]).rfind("spawnWorker", 0) == 0;
    CHECK(spawn_zones >= 1);
    CHECK(counts[EventKind::ZoneBegin] == 1 + spawn_zones);
    CHECK(counts[EventKind::ZoneEnd] == 1 + spawn_zones);
    CHECK(counts[EventKind::FiberName] == 1);

    // Times are sorted, and fibers are named and created once.
    std::set<std::uint64_t> created;
    bool named_root = false;
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
        const trace::Event& e = trace.events[i];
        if (i) REQUIRE(trace.events[i - 1].time <= e.time);
        if (e.kind == EventKind::FiberCreate) REQUIRE(created.insert(e.arg[0]).second);
        if (e.kind == EventKind::FiberName) named_root = trace.string(e.arg[1]) == "root";
        if (e.kind == EventKind::Mark)
            REQUIRE((trace.string(e.arg[0]) == "tree start" || trace.string(e.arg[0]).rfind("backend: ", 0) == 0));
        if (e.kind == EventKind::Switch) REQUIRE(e.small <= kMaxSwitchReason);
    }
    REQUIRE(named_root);
    REQUIRE(trace.threads.size() >= 2);
    bool has_worker0 = false;
    for (const auto& t : trace.threads) has_worker0 |= t.name == "worker 0";
    REQUIRE(has_worker0);
    unlink(path.c_str());
}

TEST_CASE("a loop that outlives its recordings: each one has its parked workers' records", "[tracer]") {
    // The workers park between the recordings and during each stop: their
    // buffers are lent to the writer, which takes them when the recording
    // stops; the next recording must start cleanly on the same threads.
    auto loop = EventLoop::create({.threads = 2}).value();
    for (int round = 0; round < 3; ++round) {
        INFO("recording " << round);
        const std::string path = tempTrace(("round-" + std::to_string(round)).c_str());
        {
            Recorder recorder(path);
            REQUIRE(recorder.ok());
            std::vector<Future<void>> sleepers;
            for (int i = 0; i < 8; ++i) sleepers.push_back(loop->async([&] { (void)loop->sleep(1ms); }));
            for (auto& s : sleepers) s.await();
            (void)loop->sleep(5ms); // every worker parks
            REQUIRE(recorder.stop());
        }
        const Trace trace = test::readRecordedTrace(path);
        REQUIRE(trace.header.complete);
        REQUIRE(trace.lost_events == 0);
        // Both workers ran sleepers (new fibers are handed to the idle one);
        // the one not stopping the recording was parked at the stop, with
        // its park the last record. (By trace thread: a worker started
        // before the recording has no thread-start record in it.)
        std::map<std::uint32_t, EventKind> last;
        for (const trace::Event& e : trace.events)
            if (e.kind != EventKind::CpuSample) last[e.thread] = e.kind; // not the writer's samples (their own pseudo thread)
        REQUIRE(last.size() == 2);
        CHECK(std::count_if(last.begin(), last.end(), [](const auto& l) { return l.second == EventKind::Park; }) >= 1);
    }
}

TEST_CASE("recording is off without a Recorder", "[tracer]") {
    REQUIRE_FALSE(recording());
    Recorder a("/tmp/fiberscope-no-such-dir/x.fstrace");
    REQUIRE_FALSE(a.ok());
    REQUIRE(a.error().find("cannot create trace file") != std::string::npos);
    REQUIRE_FALSE(recording());
}

TEST_CASE("a mark and a zone carry the caller's file and line", "[tracer][source-location]") {
    const std::string path = tempTrace("where");
    std::uint32_t mark_line = 0, zone_line = 0, again_line = 0;
    {
        Recorder recorder(path);
        REQUIRE(recorder.ok());
        std::thread([&] {
            mark("here"); mark_line = __LINE__;
            { Zone zone("span"); zone_line = __LINE__; }
            for (int i = 0; i < 3; ++i) { mark("again"); again_line = __LINE__; } // the file is interned once
        }).join();
    }
    const Trace trace = test::readRecordedTrace(path);
    CHECK(trace.header.version == 9);
    // Each annotation's next record on its thread is its location, at its time.
    struct Seen { std::string label; std::string file; std::uint64_t line; };
    std::vector<Seen> seen;
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
        const trace::Event e = trace.events[i];
        if (e.kind != EventKind::Mark && e.kind != EventKind::ZoneBegin) continue;
        const std::string label = trace.string(e.arg[0]);
        if (label != "here" && label != "span" && label != "again") continue;
        std::size_t j = i + 1;
        while (j < trace.events.size() && trace.events[j].thread != e.thread) ++j;
        REQUIRE(j < trace.events.size());
        const trace::Event where = trace.events[j];
        REQUIRE(where.kind == EventKind::SourceLocation);
        CHECK(where.time == e.time);
        seen.push_back({label, trace.string(where.arg[0]), where.arg[1]});
    }
    REQUIRE(seen.size() == 5);
    const std::string file = __FILE__;
    for (const Seen& s : seen) {
        INFO(s.label << " at " << s.file << ":" << s.line);
        CHECK(s.file == file);
        CHECK(s.line == (s.label == "here" ? mark_line : s.label == "span" ? zone_line : again_line));
    }
    // One string definition for the file, however many marks name it.
    std::set<std::uint64_t> file_ids;
    for (const trace::Event& e : trace.events)
        if (e.kind == EventKind::SourceLocation && trace.string(e.arg[0]) == file) file_ids.insert(e.arg[0]);
    CHECK(file_ids.size() == 1);
}

TEST_CASE("only one Recorder at a time", "[tracer]") {
    const std::string path = tempTrace("one");
    Recorder first(path);
    REQUIRE(first.ok());
    Recorder second(tempTrace("two"));
    REQUIRE_FALSE(second.ok());
    REQUIRE(first.stop());
    unlink(path.c_str());
}

// ---------------------------------------------------------------------------
// A crash loses at most ~100 ms: tests/limits/busy_traced runs traced, is
// killed with SIGKILL (no exit handler, no final flush), and its trace must
// reach to within 200 ms of the kill (100 ms of flush budget, the writer's
// tick and the write itself, plus slack for a loaded machine).

namespace {

std::int64_t realtimeNs() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::string fileText(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

struct KilledRun {
    Trace trace;
    std::int64_t kill_realtime_ns = 0;
    std::string output;
};

// Starts `busy_traced <mode>` with FIBERSCOPE_TRACE set, lets it run for
// `run_for` after it says "ready", kills it with SIGKILL and reads the trace
// (not strictly: a kill may cut the last chunk). Never waits more than 30 s.
KilledRun runAndKill(const char* mode, std::chrono::milliseconds run_for) {
    const std::string base = "/tmp/fiberscope-killed-" + std::to_string(getpid()) + "-" + mode;
    const std::string trace_path = base + ".fstrace", out_path = base + ".out";
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "FIBERSCOPE_TRACE=", 17) != 0) env_strings.emplace_back(*e);
    env_strings.push_back("FIBERSCOPE_TRACE=" + trace_path);
    std::vector<char*> envp;
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string exe = FIBERSCOPE_BUSY_TRACED, mode_arg = mode;
    char* argv[] = {exe.data(), mode_arg.data(), nullptr};
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    pid_t pid = -1;
    const int spawned = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    INFO("program: " << exe);
    REQUIRE(spawned == 0);

    KilledRun run;
    // Wait for "ready" (or an early exit), then let it run.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    int status = 0;
    bool exited = false;
    while (fileText(out_path).find("ready") == std::string::npos) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
            exited = true;
            break;
        }
        if (std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (!exited) {
        std::this_thread::sleep_for(run_for);
        run.kill_realtime_ns = realtimeNs();
        kill(pid, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
    }
    run.output = fileText(out_path);
    unlink(out_path.c_str());
    INFO("output:\n" << run.output);
    REQUIRE_FALSE(exited); // it never ends by itself: it failed to start
    REQUIRE(WIFSIGNALED(status));
    ReadError error;
    const bool read = readTrace(trace_path, run.trace, error);
    unlink(trace_path.c_str());
    INFO(error.text());
    REQUIRE(read);
    REQUIRE_FALSE(run.trace.header.complete);
    return run;
}

// How long before the kill each thread's newest record was, in ms (a thread
// with no record at all is missing from the map).
std::map<std::uint32_t, double> lagPerThread(const KilledRun& run) {
    std::map<std::uint32_t, double> lag;
    const auto start = static_cast<std::int64_t>(run.trace.header.start_realtime_ns);
    for (const trace::Event& e : run.trace.events) lag[e.thread] = static_cast<double>(run.kill_realtime_ns - start - e.time) / 1e6;
    return lag;
}

} // namespace

TEST_CASE("a program killed while busy loses at most ~100 ms of its trace", "[tracer][crash]") {
    // Its threads never park and record slowly: only the flush budget on the
    // record path gets their records out. On a loaded machine the program may
    // not run at all for a while just before the kill, which makes its newest
    // record old through no fault of the tracer: up to three runs.
    std::string report;
    bool ok = false;
    for (int attempt = 1; attempt <= 3 && !ok; ++attempt) {
        const KilledRun run = runAndKill("busy", std::chrono::milliseconds(1000));
        const auto lag = lagPerThread(run);
        // Both workers (trace threads 0 and 1 are the first two to record)
        // must be recent, and so the newest record overall.
        std::ostringstream line;
        line << "run " << attempt << ": " << run.trace.events.size() << " events;";
        bool recent = lag.size() >= 2;
        for (const auto& [thread, ms] : lag) {
            const std::int64_t worker = thread < run.trace.threads.size() ? run.trace.threads[thread].worker : -1;
            line << " thread " << thread << " (worker " << worker << ") newest record " << ms << " ms before the kill;";
            if (worker >= 0 && worker < 2) recent &= ms <= 200.0;
        }
        report += line.str() + "\n";
        ok = recent;
    }
    INFO("a busy thread's records must reach the file within ~100 ms (no more than 200 ms before a kill -9):\n"
         << report);
    REQUIRE(ok);
}

TEST_CASE("a program killed while its threads are parked has every record up to the park", "[tracer][crash]") {
    // Every thread records a little, then parks for good; the writer takes
    // their lent buffers once stale. Without that the last records (the
    // "burst done" mark among them) would stay in memory until the kill.
    std::string report;
    bool ok = false;
    for (int attempt = 1; attempt <= 3 && !ok; ++attempt) {
        const KilledRun run = runAndKill("park", std::chrono::milliseconds(600));
        bool marked = false;
        std::map<std::uint32_t, EventKind> last;
        for (const trace::Event& e : run.trace.events) {
            marked |= e.kind == EventKind::Mark && run.trace.string(e.arg[0]) == "burst done";
            last[e.thread] = e.kind;
        }
        std::ostringstream line;
        line << "run " << attempt << ": " << run.trace.events.size() << " events, the mark "
             << (marked ? "is" : "is not") << " there;";
        bool parked = last.size() >= 2;
        for (const auto& [thread, kind] : last) {
            const std::int64_t worker = thread < run.trace.threads.size() ? run.trace.threads[thread].worker : -1;
            line << " thread " << thread << " (worker " << worker << ") ends with kind " << static_cast<int>(kind)
                 << ";";
            if (worker >= 0 && worker < 2) parked &= kind == EventKind::Park;
        }
        report += line.str() + "\n";
        ok = marked && parked;
    }
    INFO("a parked thread's records must reach the file although it never wakes (each worker's last record is its park, "
         "kind 12):\n"
         << report);
    REQUIRE(ok);
}

// What the OS did (issue 14): the writer samples each attached thread's
// /proc/self/task/TID/schedstat. Two threads spinning on one CPU take turns
// on it, so each spends part of its "running" time waiting on the runqueue.
TEST_CASE("cpu samples: two busy threads pinned to one CPU wait on its runqueue", "[tracer][cpu-samples]") {
    if (::access("/proc/self/schedstat", R_OK) != 0) {
        WARN("no /proc/self/schedstat here (a kernel without CONFIG_SCHED_INFO): nothing to sample");
        return;
    }
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
    int cpu = 0;
    while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &allowed)) ++cpu;
    REQUIRE(cpu < CPU_SETSIZE);
    const std::string path = tempTrace("cpu-samples");
    {
        Recorder recorder(path);
        REQUIRE(recorder.ok());
        const auto busy = [cpu](const char* name, bool& pinned) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            pinned = sched_setaffinity(0, sizeof one, &one) == 0; // 0: the calling thread
            mark(name); // attaches the thread: the writer samples it from now on
            const auto until = std::chrono::steady_clock::now() + 250ms;
            volatile std::uint64_t spins = 0;
            while (std::chrono::steady_clock::now() < until) spins = spins + 1;
            mark("done spinning");
        };
        bool pinned_a = false, pinned_b = false;
        std::thread a(busy, "spinner a", std::ref(pinned_a));
        std::thread b(busy, "spinner b", std::ref(pinned_b));
        a.join();
        b.join();
        REQUIRE(pinned_a);
        REQUIRE(pinned_b);
    }
    const Trace trace = test::readRecordedTrace(path);
    // The spinners' trace thread numbers, by their marks.
    std::set<std::uint64_t> spinners;
    for (const trace::Event& e : trace.events)
        if (e.kind == EventKind::Mark && trace.string(e.arg[0]).rfind("spinner ", 0) == 0)
            spinners.insert(trace.threads[e.thread].number);
    REQUIRE(spinners.size() == 2);
    std::map<std::uint64_t, int> samples;
    std::uint64_t waited = 0, most_waited = 0, on_cpu = 0;
    std::set<std::uint32_t> writer_threads;
    for (const trace::Event& e : trace.events) {
        if (e.kind != EventKind::CpuSample) continue;
        writer_threads.insert(e.thread);
        if (!spinners.count(e.arg[0])) continue;
        ++samples[e.arg[0]];
        on_cpu += e.arg[1];
        waited += e.arg[2];
        most_waited = std::max(most_waited, e.arg[2]);
    }
    INFO("on a CPU " << on_cpu << " ns, waiting " << waited << " ns in all");
    // 250 ms each, sampled every 20 ms: several samples per spinner.
    for (std::uint64_t t : spinners) CHECK(samples[t] >= 3);
    CHECK(most_waited > 0);
    // Sharing one CPU, each waited for the other for a good part of its spin.
    CHECK(waited > 50'000'000u);
    // The samples come on the writer's pseudo thread: one thread, no worker,
    // nothing but cpu-samples on it.
    REQUIRE(writer_threads.size() == 1);
    const std::uint32_t writer = *writer_threads.begin();
    CHECK(trace.threads[writer].worker == -1);
    for (const trace::Event& e : trace.events)
        if (e.thread == writer) CHECK(e.kind == EventKind::CpuSample);
}
