// The course's lessons, run as their readers would run them:
// `FIBERSCOPE_TRACE=out.fstrace ./lessonNN-name`. Each test runs one lesson
// as a child process (default arguments, but --backend for a lesson that
// teaches one backend; never the user's FIBERSCOPE_BACKEND), checks that it
// exits with 0, reads its trace strictly, and asserts on the trace the
// phenomenon the lesson's lesson.md teaches. A lesson whose phenomenon does
// not show fails here.
//
// Every lesson also keeps its narrative and its program in step: each
// `checkpoint: <name>` that lesson.md refers to is marked in the trace, and
// every checkpoint marked in the trace is explained in lesson.md.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fiberscope/analysis/object_state.hpp>
#include <fiberscope/analysis/timeline.hpp>
#include <fiberscope/trace_reader.hpp>

#include "../support/busy_competitor.hpp"
#include "trace_tools.hpp"

#include "lessons/catalog.hpp"
#include "lessons/checks.hpp"

extern char** environ;

using namespace fiberscope::trace;
namespace analysis = fiberscope::analysis;
namespace trace = fiberscope::trace;
// The trace record (fiberscope::Event is the sync primitive).
using TraceEvent = fiberscope::trace::Event;

namespace {

// (kOpTimeout and kOpPollAdd: trace_vocabulary.hpp)
constexpr std::uint8_t kOpRead = 22;    // IORING_OP_READ
constexpr std::uint8_t kOpWrite = 23;   // IORING_OP_WRITE
constexpr std::uint8_t kOpClose = 19;   // IORING_OP_CLOSE
constexpr std::uint8_t kOpAccept = 13;  // IORING_OP_ACCEPT
constexpr std::uint8_t kOpConnect = 16; // IORING_OP_CONNECT
constexpr std::uint8_t kOpSend = 26;    // IORING_OP_SEND
constexpr std::uint8_t kOpRecv = 27;    // IORING_OP_RECV
constexpr std::uint8_t kOpShutdown = 34; // IORING_OP_SHUTDOWN
constexpr std::uint8_t kOpOpenAt = 18;  // IORING_OP_OPENAT
constexpr std::int64_t kMs = 1'000'000; // trace times are nanoseconds

std::string tempDir() {
    const char* dir = std::getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

std::string readFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// ---------------------------------------------------------------------------
// Running a lesson

struct Process {
    pid_t pid = -1;
    int status = 0;     // as from waitpid
    std::string output; // stdout and stderr, interleaved
};

// Runs `exe args...` with `extra_env` added to (or replacing in) the
// environment, its output captured in a file; waits at most 60 s.
//
// Every child runs with FIBERSCOPE_BACKEND=auto unless `extra_env` says
// otherwise: a user's own FIBERSCOPE_BACKEND=epoll (or uring) must not
// change what a lesson test sees. A lesson that teaches one backend asks for
// it with --backend, as its readers would.
Process runProcess(const char* exe, const std::vector<std::string>& args, std::vector<std::string> extra_env,
                   const std::string& output_path) {
    const bool backend_given = std::any_of(extra_env.begin(), extra_env.end(), [](const std::string& e) {
        return e.rfind("FIBERSCOPE_BACKEND=", 0) == 0;
    });
    if (!backend_given) extra_env.emplace_back("FIBERSCOPE_BACKEND=auto");
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) {
        bool replaced = false;
        for (const auto& extra : extra_env)
            replaced |= std::strncmp(*e, extra.c_str(), extra.find('=') + 1) == 0;
        if (!replaced) env_strings.emplace_back(*e);
    }
    env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> arg_strings{exe};
    arg_strings.insert(arg_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : arg_strings) argv.push_back(s.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    Process process;
    const int spawned = posix_spawn(&process.pid, exe, &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    INFO("program: " << exe);
    REQUIRE(spawned == 0);

    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
        const pid_t done = waitpid(process.pid, &process.status, WNOHANG);
        if (done == process.pid) break;
        if (done < 0 && errno != EINTR) FAIL("waitpid failed: " << std::strerror(errno));
        if (std::chrono::steady_clock::now() > deadline) {
            kill(process.pid, SIGKILL);
            waitpid(process.pid, &process.status, 0);
            FAIL("the program did not finish within 60 s; its output:\n" << readFile(output_path));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    process.output = readFile(output_path);
    unlink(output_path.c_str());
    return process;
}

// The validator's verdict (fiberscope verify): nothing in the trace
// contradicts what came before it, and the model agrees with the runtime's
// truth records. Fails with the first violations.
// `path`, if given, is the trace's file: a contradicting trace is kept
// beside it (…-violation.fstrace) for `fiberscope verify` and the viewer,
// and the message names it.
void requireConsistent(const Trace& trace, const std::string& path = "") {
    const fiberscope::analysis::ValidationReport report = fiberscope::trace::verifyTrace(trace);
    std::string first;
    for (std::size_t k = 0; k < report.violations.size() && k < 5; ++k)
        first += fiberscope::analysis::describeViolation(trace, report.violations[k]) + "\n";
    std::string kept;
    if (!report.ok() && !path.empty()) {
        kept = path.substr(0, path.size() - std::strlen(".fstrace")) + "-violation.fstrace";
        std::error_code error;
        std::filesystem::copy_file(path, kept, std::filesystem::copy_options::overwrite_existing, error);
        if (error) kept = "(not kept: " + error.message() + ")";
    }
    INFO(report.count << " violation(s):\n" << first << (kept.empty() ? "" : "the trace is kept: " + kept + "\n"));
    REQUIRE(report.ok());
}

struct LessonRun {
    Trace trace;
    pid_t pid = -1;
    std::string output; // the program's stdout and stderr
    bool golden = false; // read from assets/traces: no output, and its program is long gone
};

// Runs a lesson with its default arguments (or `args`) and FIBERSCOPE_TRACE
// set, and reads its trace. Fails the test if it does not exit with 0 or the
// trace does not read back strictly, complete and without lost records.
// With `may_lack_io_uring`, a run the kernel refused io_uring to (it asked
// for it with --backend uring) returns nothing instead.
std::optional<LessonRun> tryRunLesson(const char* exe, const char* tag, const std::vector<std::string>& args,
                                      bool may_lack_io_uring, const std::vector<std::string>& extra_env = {}) {
    const std::string base = tempDir() + "/fiberscope-test-lesson-" + std::to_string(getpid()) + "-" + tag;
    const std::string trace_path = base + ".fstrace";
    // A checking recording: the runtime adds what it knows at its decisions
    // (truth records), and the validator holds the trace and the model to it.
    std::vector<std::string> env = {"FIBERSCOPE_TRACE=" + trace_path, "FIBERSCOPE_TRACE_CHECK=1"};
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    const Process process = runProcess(exe, args, env, base + ".out");
    LessonRun run;
    run.pid = process.pid;
    run.output = process.output;
    INFO("lesson: " << exe << " " << Catch::Detail::stringify(args) << "\noutput:\n" << run.output);
    REQUIRE(WIFEXITED(process.status));
    if (may_lack_io_uring && WEXITSTATUS(process.status) == 1 &&
        run.output.find("IoUringUnavailable") != std::string::npos) {
        unlink(trace_path.c_str());
        return std::nullopt;
    }
    REQUIRE(WEXITSTATUS(process.status) == 0);

    ReadError error;
    const bool read = readTrace(trace_path, run.trace, error, {.strict = true});
    INFO(error.text());
    if (!read) unlink(trace_path.c_str());
    REQUIRE(read);
    requireConsistent(run.trace, trace_path); // (keeps a contradicting trace)
    unlink(trace_path.c_str());
    REQUIRE(run.trace.header.complete);
    REQUIRE(run.trace.lost_events == 0);
    REQUIRE(run.trace.warnings.empty());
    return run;
}

LessonRun runLesson(const char* exe, const char* tag, const std::vector<std::string>& args = {}) {
    return *tryRunLesson(exe, tag, args, false);
}

// ---------------------------------------------------------------------------
// Looking at a trace

constexpr const char* kCheckpointPrefix = "checkpoint: ";

struct View {
    const Trace& trace;
    std::vector<std::vector<std::size_t>> by_thread; // event indices per trace thread, in order
    std::vector<std::size_t> position;               // index of each event within its thread's list
    std::map<std::uint64_t, std::string> names;      // fiber -> name
    // The first index of each mark's text: checkpoint() is asked in loop
    // conditions, where a scan of the trace each time made a 40-run test
    // quadratic (2 minutes under ASan).
    std::map<std::string, std::size_t> first_mark;

    explicit View(const Trace& t) : trace(t), position(t.events.size()) {
        for (std::size_t i = 0; i < t.events.size(); ++i) {
            const TraceEvent& e = t.events[i];
            if (by_thread.size() <= e.thread) by_thread.resize(e.thread + 1);
            position[i] = by_thread[e.thread].size();
            by_thread[e.thread].push_back(i);
            if (e.kind == EventKind::FiberName) names[e.arg[0]] = t.string(e.arg[1]);
            if (e.kind == EventKind::Mark) first_mark.emplace(t.string(e.arg[0]), i);
        }
    }

    TraceEvent at(std::size_t i) const { return trace.events[i]; }
    std::int64_t worker(const TraceEvent& e) const {
        return e.thread < trace.threads.size() ? trace.threads[e.thread].worker : -1;
    }

    // The fiber named `name` (it must be exactly one).
    std::uint64_t fiber(const std::string& name) const {
        std::uint64_t found = 0;
        int count = 0;
        for (const auto& [id, n] : names)
            if (n == name) {
                found = id;
                ++count;
            }
        INFO("fiber named \"" << name << "\"");
        REQUIRE(count == 1);
        return found;
    }
    std::vector<std::uint64_t> fibersNamedLike(const std::string& prefix) const {
        std::vector<std::uint64_t> ids;
        for (const auto& [id, n] : names)
            if (n.rfind(prefix, 0) == 0) ids.push_back(id);
        return ids;
    }

    std::vector<std::string> checkpoints() const {
        std::vector<std::string> found;
        for (const TraceEvent& e : trace.events)
            if (e.kind == EventKind::Mark && trace.string(e.arg[0]).rfind(kCheckpointPrefix, 0) == 0)
                found.push_back(trace.string(e.arg[0]).substr(std::strlen(kCheckpointPrefix)));
        return found;
    }
    // Index of the (first) mark "checkpoint: <name>".
    std::size_t checkpoint(const std::string& name) const {
        const std::string label = kCheckpointPrefix + name;
        if (const auto found = first_mark.find(label); found != first_mark.end()) return found->second;
        FAIL("no mark \"" << label << "\" in the trace");
        return 0;
    }
    std::int64_t time(const std::string& checkpoint_name) const { return at(checkpoint(checkpoint_name)).time; }

    // The next event of the same thread after event `i` matching `pred`.
    template <class Pred>
    std::optional<std::size_t> nextOnThread(std::size_t i, Pred pred) const {
        const auto& list = by_thread[at(i).thread];
        for (std::size_t p = position[i] + 1; p < list.size(); ++p)
            if (pred(at(list[p]))) return list[p];
        return std::nullopt;
    }
    template <class Pred>
    std::optional<std::size_t> previousOnThread(std::size_t i, Pred pred) const {
        const auto& list = by_thread[at(i).thread];
        for (std::size_t p = position[i]; p-- > 0;)
            if (pred(at(list[p]))) return list[p];
        return std::nullopt;
    }
    // The next event of the whole trace after `i` matching `pred`.
    template <class Pred>
    std::optional<std::size_t> next(std::size_t i, Pred pred) const {
        for (std::size_t j = i + 1; j < trace.events.size(); ++j)
            if (pred(at(j))) return j;
        return std::nullopt;
    }
    template <class Pred>
    std::vector<std::size_t> all(Pred pred) const {
        std::vector<std::size_t> found;
        for (std::size_t i = 0; i < trace.events.size(); ++i)
            if (pred(at(i))) found.push_back(i);
        return found;
    }
};

auto kindIs(EventKind kind) {
    return [kind](const TraceEvent& e) { return e.kind == kind; };
}
auto switchTo(std::uint64_t fiber) {
    return [fiber](const TraceEvent& e) { return e.kind == EventKind::Switch && e.arg[1] == fiber; };
}
bool isCanceledResult(std::int64_t result) { return result == -ECANCELED || result == -EINTR; }

// The checkpoints lesson.md names, as `checkpoint: <name>` (in backquotes).
std::set<std::string> checkpointsInNarrative(const std::string& lesson_dir) {
    const std::string text = readFile(std::string(FIBERSCOPE_LESSONS_DIR) + "/" + lesson_dir + "/lesson.md");
    std::set<std::string> names;
    const std::string open = std::string("`") + kCheckpointPrefix;
    for (std::size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
        const std::size_t start = at + open.size();
        const std::size_t end = text.find('`', start);
        if (end == std::string::npos) break;
        names.insert(text.substr(start, end - start));
    }
    return names;
}

// Every checkpoint lesson.md refers to is in the trace, and vice versa.
void requireCheckpointsMatchNarrative(const View& view, const std::string& lesson_dir) {
    const std::set<std::string> narrated = checkpointsInNarrative(lesson_dir);
    const std::vector<std::string> marked_list = view.checkpoints();
    const std::set<std::string> marked(marked_list.begin(), marked_list.end());
    INFO("lessons/" << lesson_dir << "/lesson.md");
    REQUIRE(!narrated.empty());
    for (const auto& name : narrated) {
        INFO("checkpoint named in lesson.md but not marked in the trace: " << name);
        CHECK(marked.count(name) == 1);
    }
    for (const auto& name : marked) {
        INFO("checkpoint marked in the trace but not explained in lesson.md: " << name);
        CHECK(narrated.count(name) == 1);
    }
}

// Every lesson's program by its number, from the lessons' folders (their
// one list is lessons/lessons.cmake, which builds each NN-name as
// lessonNN-name): a new lesson is run by the tests over every lesson
// without touching this file.
std::map<int, std::string> lessonPrograms() {
    std::map<int, std::string> programs;
    for (const auto& entry : std::filesystem::directory_iterator(FIBERSCOPE_LESSONS_DIR)) {
        const std::string slug = entry.path().filename().string();
        if (!entry.is_directory() || slug.size() < 3 || slug[2] != '-') continue;
        programs[std::atoi(slug.substr(0, 2).c_str())] = std::string(FIBERSCOPE_LESSON_BIN_DIR) + "/lesson" + slug;
    }
    return programs;
}

std::int64_t median(std::vector<std::int64_t> values) {
    REQUIRE(!values.empty());
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

} // namespace

// ---------------------------------------------------------------------------
// The lessons

// Asserted on a fresh run here, and on the shipped golden trace below.
static void phenomenaOfLesson1(const LessonRun& run);

TEST_CASE("lesson 1: fibers are spawned, named, suspended, resumed and awaited", "[lessons][lesson1]") {
    const LessonRun run = runLesson(LESSON01, "01");
    phenomenaOfLesson1(run);
}

static void phenomenaOfLesson1(const LessonRun& run) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "01-hello-fibers");
    REQUIRE(view.fiber("main") == 1);
    const std::size_t spawning = view.checkpoint("spawning");
    const std::size_t spawned = view.checkpoint("spawned");
    const std::size_t awaited = view.checkpoint("all awaited");
    REQUIRE(spawning < spawned);
    REQUIRE(spawned < awaited);
    // Both workers were started up front (startWorkers) and worker 1 parked
    // before the spawns: the first spawn is handed to it, and it is woken.
    const auto starts = view.all(kindIs(EventKind::ThreadStart));
    CHECK(starts.size() == 2);
    for (std::size_t i : starts) CHECK(i < spawning);
    const auto first_schedule = view.next(spawning, kindIs(EventKind::Schedule));
    REQUIRE(first_schedule);
    CHECK(view.at(*first_schedule).small == static_cast<std::uint8_t>(ScheduleHow::IdleHandoff));
    CHECK(view.at(*first_schedule).arg[2] == 1);
    const auto woken = view.nextOnThread(*first_schedule, [](const TraceEvent&) { return true; });
    REQUIRE(woken);
    CHECK(view.at(*woken).kind == EventKind::WakeupSent);
    for (int i = 0; i < 4; ++i) {
        const std::uint64_t greeter = view.fiber("greeter " + std::to_string(i));
        INFO("greeter " << i << " is fiber " << greeter);
        // Created by the main fiber before the checkpoint, and made ready at once.
        auto created = view.all([&](const TraceEvent& e) { return e.kind == EventKind::FiberCreate && e.arg[0] == greeter; });
        REQUIRE(created.size() == 1);
        CHECK(view.at(created[0]).arg[1] == 1);
        CHECK(created[0] > spawning);
        CHECK(created[0] < spawned);
        auto scheduled = view.nextOnThread(created[0], kindIs(EventKind::Schedule));
        REQUIRE(scheduled);
        CHECK(view.at(*scheduled).arg[0] == greeter);
        // The main fiber waited for greeter 0, the longest sleeper; the
        // others have normally finished by then (await() returns without
        // suspending, and without an await record).
        const auto awaits = view.all([&](const TraceEvent& e) {
            return e.kind == EventKind::Await && e.arg[0] == 1 && e.arg[1] == greeter;
        });
        if (i == 0) CHECK(awaits.size() == 1);
        else CHECK(awaits.size() <= 1);
        // It ran, suspended in its sleep, and was resumed: at least two switch-ins.
        CHECK(view.all(switchTo(greeter)).size() >= 2);
        CHECK(view.all([&](const TraceEvent& e) {
                      return e.kind == EventKind::Switch && e.arg[0] == greeter &&
                             e.small == static_cast<std::uint8_t>(SwitchReason::IoWait);
                  }).size() == 1);
        auto finished = view.all([&](const TraceEvent& e) { return e.kind == EventKind::FiberFinish && e.arg[0] == greeter; });
        REQUIRE(finished.size() == 1);
        CHECK(finished[0] < awaited);
    }
}

// Asserted on a fresh run here, and on the shipped golden trace below.
static void phenomenaOfLesson2(const LessonRun& run);

TEST_CASE("lesson 2: two fibers yield to each other on one thread, switch then act", "[lessons][lesson2]") {
    const LessonRun run = runLesson(LESSON02, "02");
    phenomenaOfLesson2(run);
}

static void phenomenaOfLesson2(const LessonRun& run) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "02-context-switch");
    const std::uint64_t ping = view.fiber("ping");
    const std::uint64_t pong = view.fiber("pong");
    const std::size_t begins = view.checkpoint("ping-pong begins");
    const std::size_t first_yield = view.checkpoint("first yield");
    const std::size_t done = view.checkpoint("ping-pong done");
    REQUIRE(begins < first_yield);
    REQUIRE(first_yield < done);

    const auto yields = view.all([&](const TraceEvent& e) {
        return e.kind == EventKind::Switch && e.small == static_cast<std::uint8_t>(SwitchReason::Yield);
    });
    // 20 rounds each: every yield hands the thread to the partner.
    REQUIRE(yields.size() >= 38);
    std::set<std::uint32_t> threads;
    for (std::size_t k = 0; k < yields.size(); ++k) {
        const TraceEvent& e = view.at(yields[k]);
        INFO("yield switch #" << k << " at " << e.time << " ns: " << e.arg[0] << " -> " << e.arg[1]);
        CHECK(yields[k] > begins);
        CHECK(yields[k] < done);
        CHECK(((e.arg[0] == ping && e.arg[1] == pong) || (e.arg[0] == pong && e.arg[1] == ping)));
        if (k > 0) CHECK(e.arg[0] == view.at(yields[k - 1]).arg[1]); // alternating
        threads.insert(e.thread);
        // Switch, then act: right after the switch, on the same thread, the
        // receiver performs the pending task, rescheduling the sender.
        auto after = view.nextOnThread(yields[k], [](const TraceEvent&) { return true; });
        REQUIRE(after);
        CHECK(view.at(*after).kind == EventKind::Schedule);
        CHECK(view.at(*after).arg[0] == e.arg[0]);
        CHECK(view.at(*after).small == static_cast<std::uint8_t>(ScheduleHow::OwnQueue));
    }
    CHECK(threads.size() == 1);
}

// lesson.md's "Try this": on two threads each turn's reschedule is an idle
// hand-off with a MSG_RING, stolen back; the turns usually alternate, and
// when they do not, the two fibers took their turns on both workers.
TEST_CASE("lesson 2 on two threads: hand-offs stolen back, and turns that alternate only while on one thread",
          "[lessons][lesson2]") {
    for (int attempt = 0; attempt < 3; ++attempt) {
        const LessonRun run = runLesson(LESSON02, "02t2", {"--threads", "2"});
        const View view(run.trace);
        const std::uint64_t ping = view.fiber("ping");
        const std::uint64_t pong = view.fiber("pong");
        const auto handoffs = view.all([](const TraceEvent& e) {
            return e.kind == EventKind::Schedule && e.small == static_cast<std::uint8_t>(ScheduleHow::IdleHandoff);
        });
        CHECK(handoffs.size() >= 20);
        for (std::size_t i : handoffs) {
            auto sent = view.nextOnThread(i, [](const TraceEvent&) { return true; });
            REQUIRE(sent);
            CHECK(view.at(*sent).kind == EventKind::WakeupSent);
        }
        CHECK(view.all([&](const TraceEvent& e) {
                      return e.kind == EventKind::Steal && (e.arg[0] == ping || e.arg[0] == pong);
                  }).size() >= 5);
        // The program's count of turns that changed hands.
        const std::string key = " of 39 consecutive turns changed hands.";
        const std::size_t at = run.output.find(key);
        INFO("output:\n" << run.output);
        REQUIRE(at != std::string::npos);
        const std::size_t start = run.output.rfind('\n', at) + 1;
        const int alternations = std::stoi(run.output.substr(start, at - start));
        std::set<std::uint32_t> yield_threads;
        for (std::size_t i : view.all([&](const TraceEvent& e) {
                 return e.kind == EventKind::Switch && e.small == static_cast<std::uint8_t>(SwitchReason::Yield) &&
                        (e.arg[0] == ping || e.arg[0] == pong);
             }))
            yield_threads.insert(view.at(i).thread);
        // One fiber's turns all over before the other first ran (ping played
        // alone on worker 1 while main was still in async()).
        std::size_t last_ping_yield = 0, first_pong_run = SIZE_MAX, last_pong_yield = 0, first_ping_run = SIZE_MAX;
        for (std::size_t i = 0; i < view.trace.events.size(); ++i) {
            const TraceEvent& e = view.at(i);
            if (e.kind != EventKind::Switch) continue;
            const bool yield = e.small == static_cast<std::uint8_t>(SwitchReason::Yield);
            if (yield && e.arg[0] == ping) last_ping_yield = i;
            if (yield && e.arg[0] == pong) last_pong_yield = i;
            if (e.arg[1] == pong) first_pong_run = std::min(first_pong_run, i);
            if (e.arg[1] == ping) first_ping_run = std::min(first_ping_run, i);
        }
        const bool apart = last_ping_yield < first_pong_run || last_pong_yield < first_ping_run;
        INFO(alternations << " of 39 turns changed hands; yields on " << yield_threads.size() << " thread(s); "
                          << (apart ? "one fiber's turns were over before the other ran" : "the fibers' turns overlapped"));
        // Turns that did not alternate were taken on both workers, or one
        // fiber had played all its turns before its partner existed.
        if (alternations < 39) CHECK((yield_threads.size() == 2 || apart));
        // All on one thread, together, they alternate.
        if (yield_threads.size() == 1 && !apart) CHECK(alternations == 39);
    }
}

// Asserted on a fresh run here, and on the shipped golden trace below.
static void phenomenaOfLesson3(const LessonRun& run);

TEST_CASE("lesson 3: lazy worker spawn, and parked workers woken by MSG_RING", "[lessons][lesson3]") {
    const LessonRun run = runLesson(LESSON03, "03");
    phenomenaOfLesson3(run);
}

static void phenomenaOfLesson3(const LessonRun& run) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "03-waking-idle-threads");
    const std::size_t first = view.checkpoint("first burst");
    const std::size_t parked = view.checkpoint("workers parked");
    const std::size_t second = view.checkpoint("second burst");
    const std::size_t done = view.checkpoint("done");
    REQUIRE(first < parked);
    REQUIRE(parked < second);
    REQUIRE(second < done);

    // Workers are started lazily: a schedule that started a new worker,
    // which then announced itself with thread-start.
    const auto new_workers = view.all([](const TraceEvent& e) {
        return e.kind == EventKind::Schedule && e.small == static_cast<std::uint8_t>(ScheduleHow::NewWorker);
    });
    REQUIRE(!new_workers.empty());
    for (std::size_t i : new_workers) {
        const std::uint64_t index = view.at(i).arg[2];
        INFO("new worker " << index);
        CHECK(!view.all([&](const TraceEvent& e) {
                       return e.kind == EventKind::ThreadStart && e.arg[0] == index;
                   }).empty());
    }

    // In the second burst, work is handed to a parked worker, which the
    // MSG_RING wakes: wakeup-sent on the spawner's thread, then
    // wakeup-received (naming the sender) on the target's thread.
    int woken_from_park = 0;
    for (std::size_t i = second; i < done; ++i) {
        const TraceEvent& sent = view.at(i);
        if (sent.kind != EventKind::WakeupSent) continue;
        auto handoff = view.previousOnThread(i, [](const TraceEvent&) { return true; });
        REQUIRE(handoff);
        CHECK(view.at(*handoff).kind == EventKind::Schedule);
        CHECK(view.at(*handoff).small == static_cast<std::uint8_t>(ScheduleHow::IdleHandoff));
        CHECK(view.at(*handoff).arg[2] == sent.arg[0]);
        const std::uint64_t target = sent.arg[0];
        const std::int64_t sender = view.worker(sent);
        auto received = view.next(i, [&](const TraceEvent& e) {
            return e.kind == EventKind::WakeupReceived && view.worker(e) == static_cast<std::int64_t>(target) &&
                   static_cast<std::int64_t>(e.arg[0]) == sender;
        });
        if (!received) continue;
        // Was the target parked in the kernel when the message was sent?
        auto state = view.previousOnThread(*received, [](const TraceEvent& e) {
            return e.kind == EventKind::Park || e.kind == EventKind::Unpark || e.kind == EventKind::Switch;
        });
        if (state && view.at(*state).kind == EventKind::Park && view.at(*state).time <= sent.time) ++woken_from_park;
    }
    CHECK(woken_from_park >= 1);
}

// Asserted on a fresh run here, and on the shipped golden trace below.
static void phenomenaOfLesson4(const LessonRun& run);

TEST_CASE("lesson 4: threads that run dry steal whole ready queues", "[lessons][lesson4]") {
    const LessonRun run = runLesson(LESSON04, "04");
    phenomenaOfLesson4(run);
}

static void phenomenaOfLesson4(const LessonRun& run) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "04-work-stealing");
    const std::size_t begins = view.checkpoint("tree begins");
    const std::size_t done = view.checkpoint("tree done");
    REQUIRE(begins < done);
    // The root and its 127 descendants.
    CHECK(view.all(kindIs(EventKind::FiberCreate)).size() == 128);

    const auto steals = view.all(kindIs(EventKind::Steal));
    REQUIRE(!steals.empty());
    for (std::size_t i : steals) {
        const TraceEvent& steal = view.at(i);
        INFO("steal at " << steal.time << " ns by worker " << view.worker(steal) << " from worker " << steal.arg[1]
                         << ", head fiber " << steal.arg[0]);
        CHECK(static_cast<std::int64_t>(steal.arg[1]) != view.worker(steal));
        // The thief runs the head of the stolen queue at once, on its own thread.
        auto runs = view.nextOnThread(i, kindIs(EventKind::Switch));
        REQUIRE(runs);
        CHECK(view.at(*runs).arg[1] == steal.arg[0]);
    }
}

// Asserted on a fresh run here, and on the shipped golden trace below.
static void phenomenaOfLesson5(const LessonRun& run);

TEST_CASE("lesson 5: file writes and reads are submitted, parked on, completed, resumed", "[lessons][lesson5]") {
    // The lesson teaches io_uring completions: it runs on io_uring whatever
    // the environment says (on epoll, files go to a blocking pool instead).
    const auto maybe_run = tryRunLesson(LESSON05, "05", {"--backend", "uring"}, true);
    if (!maybe_run) {
        WARN("the kernel refuses io_uring here: lesson 5 (io_uring completions) is skipped");
        return;
    }
    const LessonRun& run = *maybe_run;
    phenomenaOfLesson5(run);
}

static void phenomenaOfLesson5(const LessonRun& run) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "05-io-completions");
    const std::size_t created = view.checkpoint("file created");
    const std::size_t writing = view.checkpoint("writing");
    const std::size_t reading = view.checkpoint("reading");
    const std::size_t closed = view.checkpoint("file closed");
    REQUIRE(created < writing);
    REQUIRE(writing < reading);
    REQUIRE(reading < closed);

    auto follow = [&](const std::string& name, std::uint8_t opcode, std::size_t from, std::size_t to) {
        const std::uint64_t fiber = view.fiber(name);
        INFO(name << " (fiber " << fiber << ", opcode " << int(opcode) << ")");
        auto submits = view.all([&](const TraceEvent& e) {
            return e.kind == EventKind::Submit && e.arg[0] == fiber && e.small == opcode;
        });
        REQUIRE(submits.size() == 1);
        const std::size_t submit = submits[0];
        CHECK(submit > from);
        // The fiber switches away at once, waiting for I/O.
        auto away = view.nextOnThread(submit, kindIs(EventKind::Switch));
        REQUIRE(away);
        CHECK(view.at(*away).arg[0] == fiber);
        CHECK(view.at(*away).small == static_cast<std::uint8_t>(SwitchReason::IoWait));
        // The completion arrives in the same ring (thread), while it is
        // between park and unpark, and carries the byte count.
        auto complete = view.nextOnThread(submit, [&](const TraceEvent& e) {
            return e.kind == EventKind::Complete && e.arg[0] == fiber;
        });
        REQUIRE(complete);
        CHECK(view.at(*complete).small == opcode);
        CHECK(view.at(*complete).signedArg(1) == 4096);
        CHECK(*complete < to);
        auto before = view.previousOnThread(*complete, [](const TraceEvent& e) {
            return e.kind == EventKind::Park || e.kind == EventKind::Unpark;
        });
        REQUIRE(before);
        CHECK(view.at(*before).kind == EventKind::Park);
        CHECK(*before > submit);
        auto after = view.nextOnThread(*complete, [](const TraceEvent& e) {
            return e.kind == EventKind::Park || e.kind == EventKind::Unpark;
        });
        REQUIRE(after);
        CHECK(view.at(*after).kind == EventKind::Unpark);
        // Then the fiber is resumed.
        CHECK(view.next(*complete, switchTo(fiber)).has_value());
    };
    for (int i = 0; i < 4; ++i) follow("writer " + std::to_string(i), kOpWrite, writing, reading);
    for (int i = 0; i < 4; ++i) follow("reader " + std::to_string(i), kOpRead, reading, closed);
    // The temporary file was removed.
    if (!run.golden) {
        const std::string data_file = tempDir() + "/fiberscope-lesson05-" + std::to_string(run.pid) + ".dat";
        INFO(data_file);
        CHECK(access(data_file.c_str(), F_OK) != 0);
    }
    // The close went through the ring too.
    auto closes = view.all([](const TraceEvent& e) { return e.kind == EventKind::Complete && e.small == kOpClose; });
    REQUIRE(closes.size() == 1);
    CHECK(view.at(closes[0]).signedArg(1) == 0);
    CHECK(closes[0] < closed);
}

// Asserted on a fresh run here, and on the shipped golden trace below.
static void phenomenaOfLesson6(const LessonRun& run);

TEST_CASE("lesson 6: sleepers' timeouts complete in deadline order", "[lessons][lesson6]") {
    const LessonRun run = runLesson(LESSON06, "06");
    phenomenaOfLesson6(run);
}

static void phenomenaOfLesson6(const LessonRun& run) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "06-timers");
    const std::size_t common_start = view.checkpoint("common start");
    const std::size_t started = view.checkpoint("sleepers started");
    const std::size_t awake = view.checkpoint("all awake");
    REQUIRE(common_start < started);
    REQUIRE(started < awake);

    std::map<std::uint64_t, int> deadline_ms; // fiber -> deadline
    for (std::uint64_t fiber : view.fibersNamedLike("sleeper ")) {
        const std::string& name = view.names.at(fiber);
        deadline_ms[fiber] = std::atoi(name.c_str() + std::strlen("sleeper "));
    }
    REQUIRE(deadline_ms.size() == 12);

    std::vector<int> submitted, completed;
    for (const TraceEvent& e : run.trace.events) {
        if (!deadline_ms.count(e.arg[0]) || e.small != kOpTimeout) continue;
        if (e.kind == EventKind::Submit) submitted.push_back(deadline_ms[e.arg[0]]);
        if (e.kind == EventKind::Complete) {
            const int deadline = deadline_ms[e.arg[0]];
            completed.push_back(deadline);
            INFO("sleeper " << deadline << " ms completed at " << e.time << " ns");
            CHECK(e.signedArg(1) == -ETIME); // the timer expired
            // Not before its deadline: the program reads the clock for the
            // common start just after the checkpoint (0.5 ms of slack for the
            // trace clock's calibration).
            CHECK(e.time - run.trace.events[common_start].time >= deadline * kMs - kMs / 2);
        }
    }
    REQUIRE(submitted.size() == 12);
    REQUIRE(completed.size() == 12);
    INFO("deadlines in order of completion: " << Catch::Detail::stringify(completed));
    CHECK(std::is_sorted(completed.begin(), completed.end()));
    // ...although they went to sleep in another order.
    CHECK(!std::is_sorted(submitted.begin(), submitted.end()));
}

// Asserted on a fresh run here, and on the shipped golden trace below.
static void phenomenaOfLesson7(const LessonRun& run);

TEST_CASE("lesson 7: select, then the loser's in-flight sleep is canceled through the rings", "[lessons][lesson7]") {
    const LessonRun run = runLesson(LESSON07, "07");
    phenomenaOfLesson7(run);
}

static void phenomenaOfLesson7(const LessonRun& run) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "07-select-and-cancel");
    const std::uint64_t fast = view.fiber("fast");
    const std::uint64_t slow = view.fiber("slow");
    const std::size_t selected = view.checkpoint("select returned");
    const std::size_t cancel = view.checkpoint("cancel the loser");
    const std::size_t joined = view.checkpoint("loser joined");
    REQUIRE(selected < cancel);
    REQUIRE(cancel < joined);

    // The main fiber waited in select; fast's last sleep expired and it finished first.
    CHECK(!view.all([](const TraceEvent& e) {
                   return e.kind == EventKind::Switch && e.arg[0] == 1 &&
                          e.small == static_cast<std::uint8_t>(SwitchReason::Select);
               }).empty());
    auto fast_finish = view.all([&](const TraceEvent& e) { return e.kind == EventKind::FiberFinish && e.arg[0] == fast; });
    REQUIRE(fast_finish.size() == 1);
    CHECK(fast_finish[0] < selected);
    // The finished fast fiber switches straight to the selecting main fiber
    // (finishFiber(): its claim is the first, so the selector is the fiber
    // yield() switches to), with no schedule of the main fiber in between.
    {
        auto last_switch = view.previousOnThread(fast_finish[0], kindIs(EventKind::Switch));
        REQUIRE(last_switch);
        const TraceEvent& sw = view.at(*last_switch);
        INFO("fast's last switch: " << sw.arg[0] << " -> " << sw.arg[1] << " reason " << int(sw.small));
        CHECK(sw.arg[0] == fast);
        CHECK(sw.arg[1] == 1);
        CHECK(sw.small == static_cast<std::uint8_t>(SwitchReason::Finish));
        const auto main_scheduled = view.all([&](const TraceEvent& e) { return e.kind == EventKind::Schedule && e.arg[0] == 1; });
        for (std::size_t i : main_scheduled) CHECK((i < *last_switch || i > selected));
    }

    // The slow fiber's sleep was in flight in some worker's ring...
    auto requests = view.all([&](const TraceEvent& e) { return e.kind == EventKind::CancelRequest && e.arg[0] == slow; });
    REQUIRE(requests.size() == 1);
    const TraceEvent& request = view.at(requests[0]);
    CHECK(requests[0] > cancel);
    REQUIRE(request.arg[1] > 0);
    const std::int64_t ring_owner = static_cast<std::int64_t>(request.arg[1]) - 1;
    INFO("the sleep was in worker " << ring_owner << "'s ring");
    // ...whose owner received the MSG_RING and submitted ASYNC_CANCEL...
    auto delivered = view.next(requests[0], [&](const TraceEvent& e) {
        return e.kind == EventKind::CancelDelivered && e.arg[0] == slow;
    });
    REQUIRE(delivered);
    CHECK(view.worker(view.at(*delivered)) == ring_owner);
    // ...and the sleep completed, canceled, in that ring.
    auto completed = view.next(*delivered, [&](const TraceEvent& e) {
        return e.kind == EventKind::Complete && e.arg[0] == slow;
    });
    REQUIRE(completed);
    CHECK(view.at(*completed).small == kOpTimeout);
    CHECK(isCanceledResult(view.at(*completed).signedArg(1)));
    CHECK(view.worker(view.at(*completed)) == ring_owner);
    CHECK(*completed < joined);
    // Long before its ten seconds.
    CHECK(view.at(*completed).time - request.time < 1000 * kMs);
}

// Asserted on a fresh run here, and on the shipped golden trace below.
static void phenomenaOfLesson8(const LessonRun& run);

TEST_CASE("lesson 8: a contended mutex is handed directly to a waiting fiber", "[lessons][lesson8]") {
    // The main fiber holds the mutex while it starts the tellers one at a
    // time, each after the previous one found the mutex locked: contention
    // is built in, in a known order.
    const LessonRun run = runLesson(LESSON08, "08");
    phenomenaOfLesson8(run);
}

static void phenomenaOfLesson8(const LessonRun& run) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "08-mutex-handoff");
    const std::size_t start = view.checkpoint("tellers start");
    const std::size_t unlocks = view.checkpoint("main unlocks");
    const std::size_t done = view.checkpoint("tellers done");
    REQUIRE(start < unlocks);
    REQUIRE(unlocks < done);
    REQUIRE(view.fibersNamedLike("teller ").size() == 4);
    std::uint64_t teller[4];
    for (int t = 0; t < 4; ++t) teller[t] = view.fiber("teller " + std::to_string(t));

    // Before main unlocks: each teller, in order, found the mutex locked and
    // left its thread with reason=mutex; nobody yielded (no hand-off and
    // steal-back rounds of a teller running alone).
    std::size_t previous_contended = start;
    for (int t = 0; t < 4; ++t) {
        INFO("teller " << t << " (fiber " << teller[t] << ")");
        auto contended = view.next(start, [&](const TraceEvent& e) {
            return e.kind == EventKind::MutexContended && e.arg[0] == teller[t];
        });
        REQUIRE(contended);
        CHECK(*contended > previous_contended);
        CHECK(*contended < unlocks);
        previous_contended = *contended;
        auto left = view.nextOnThread(*contended, [&](const TraceEvent& e) {
            return e.kind == EventKind::Switch && e.arg[0] == teller[t];
        });
        REQUIRE(left);
        CHECK(view.at(*left).small == static_cast<std::uint8_t>(SwitchReason::Mutex));
    }
    const auto yields = view.all([](const TraceEvent& e) {
        return e.kind == EventKind::Switch && e.small == static_cast<std::uint8_t>(SwitchReason::Yield);
    });
    REQUIRE(!yields.empty());
    CHECK(yields.front() > unlocks);
    // Main's unlock is the first hand-off, to the most recent waiter, teller
    // 3; teller 3's first unlock hands the mutex to the next, teller 2.
    const auto handoffs = view.all(kindIs(EventKind::MutexHandoff));
    REQUIRE(handoffs.size() >= 2);
    CHECK(handoffs[0] > unlocks);
    CHECK(view.at(handoffs[0]).arg[0] == 1);
    CHECK(view.at(handoffs[0]).arg[1] == teller[3]);
    CHECK(view.at(handoffs[1]).arg[0] == teller[3]);
    CHECK(view.at(handoffs[1]).arg[1] == teller[2]);

    const auto contended = view.all(kindIs(EventKind::MutexContended));
    REQUIRE(!contended.empty());
    std::set<std::uint64_t> mutexes;
    for (std::size_t i : contended) mutexes.insert(view.at(i).arg[1]);
    CHECK(mutexes.size() == 1);
    for (std::size_t i : handoffs) {
        const TraceEvent& h = view.at(i);
        INFO("hand-off at " << h.time << " ns from fiber " << h.arg[0] << " to fiber " << h.arg[1]);
        CHECK(mutexes.count(h.arg[2]) == 1);
        // The new owner had found the mutex locked and was waiting for it.
        CHECK(!view.all([&](const TraceEvent& e) {
                       return e.kind == EventKind::MutexContended && e.arg[0] == h.arg[1] && e.arg[1] == h.arg[2] &&
                              e.time <= h.time;
                   }).empty());
        // The unlocking fiber switches straight to the new owner.
        auto sw = view.nextOnThread(i, kindIs(EventKind::Switch));
        REQUIRE(sw);
        CHECK(view.at(*sw).arg[0] == h.arg[0]);
        CHECK(view.at(*sw).arg[1] == h.arg[1]);
        CHECK(view.at(*sw).small == static_cast<std::uint8_t>(SwitchReason::Handoff));
    }
}

// Asserted on a fresh run here, and on the shipped golden trace below.
static void phenomenaOfLesson9(const LessonRun& run);

TEST_CASE("lesson 9: a condition gate, then a bounded queue blocking both ways", "[lessons][lesson9]") {
    const LessonRun run = runLesson(LESSON09, "09");
    phenomenaOfLesson9(run);
}

static void phenomenaOfLesson9(const LessonRun& run) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "09-producer-consumer");
    const std::size_t opens = view.checkpoint("gate opens");
    const std::size_t producer_starts = view.checkpoint("producer starts");
    const std::size_t closes = view.checkpoint("queue closed");
    REQUIRE(opens < producer_starts);
    REQUIRE(producer_starts < closes);

    // Both consumers waited on the gate's condition, and broadcast woke them.
    const std::uint64_t c0 = view.fiber("consumer 0");
    const std::uint64_t c1 = view.fiber("consumer 1");
    auto first_wait = [&](std::uint64_t fiber) {
        auto waits = view.all([&](const TraceEvent& e) { return e.kind == EventKind::ConditionWait && e.arg[0] == fiber; });
        REQUIRE(!waits.empty());
        return waits[0];
    };
    const std::size_t w0 = first_wait(c0), w1 = first_wait(c1);
    CHECK(w0 < opens);
    CHECK(w1 < opens);
    const std::uint64_t gate = view.at(w0).arg[1];
    CHECK(view.at(w1).arg[1] == gate);
    auto wake = view.next(opens, [&](const TraceEvent& e) { return e.kind == EventKind::ConditionWake && e.arg[1] == gate; });
    REQUIRE(wake);
    CHECK(view.at(*wake).small == 1); // broadcast: all waiters

    // The queue: every item put and got; gets blocked on an empty queue and
    // puts on a full one; one close.
    std::map<std::uint8_t, int> ops;
    std::set<std::uint64_t> queues;
    for (const TraceEvent& e : run.trace.events)
        if (e.kind == EventKind::QueueOp) {
            ++ops[e.small];
            queues.insert(e.arg[0]);
        }
    CHECK(queues.size() == 1);
    CHECK(ops[static_cast<std::uint8_t>(QueueOp::Put)] == 40);
    CHECK(ops[static_cast<std::uint8_t>(QueueOp::Get)] == 40);
    CHECK(ops[static_cast<std::uint8_t>(QueueOp::PutBlocked)] >= 1);
    CHECK(ops[static_cast<std::uint8_t>(QueueOp::GetBlocked)] >= 1);
    CHECK(ops[static_cast<std::uint8_t>(QueueOp::Close)] == 1);
    auto close = view.all([](const TraceEvent& e) {
        return e.kind == EventKind::QueueOp && e.small == static_cast<std::uint8_t>(QueueOp::Close);
    });
    REQUIRE(close.size() == 1);
    CHECK(close[0] > closes);
    // Blocked puts and gets wait on the queue's conditions and are woken by signals.
    CHECK(view.all(kindIs(EventKind::ConditionWait)).size() >= 4);
    CHECK(view.all([](const TraceEvent& e) { return e.kind == EventKind::ConditionWake && e.small == 0; }).size() >= 2);
}

// Asserted on a fresh run here, and on the shipped golden trace below.
static void phenomenaOfLesson10(const LessonRun& run);

TEST_CASE("lesson 10: a fiber blocking its thread delays its neighbours; sleeping through the loop does not",
          "[lessons][lesson10]") {
    const LessonRun run = runLesson(LESSON10, "10");
    phenomenaOfLesson10(run);
}

static void phenomenaOfLesson10(const LessonRun& run) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "10-blocking-mistake");
    const char* phases[] = {"blocking syscall", "busy loop", "sleeping through the loop", "busy loop with yields",
                            "done"};
    std::vector<std::int64_t> bounds;
    for (const char* phase : phases) bounds.push_back(view.time(phase));
    REQUIRE(std::is_sorted(bounds.begin(), bounds.end()));

    // Schedule-to-run latency of every request: from the schedule record
    // that made it ready (its spawn) to its first switch-in. And what the
    // thread did in between: the first switch after the request became
    // ready, and how many times the dispatcher yielded before it ran.
    std::vector<std::vector<std::int64_t>> latency(4);
    struct YieldingRequest {
        std::size_t created, runs;
        int yields_before;
    };
    std::vector<YieldingRequest> yielding_requests; // the busy loop with yields
    const auto requests = view.fibersNamedLike("request");
    REQUIRE(requests.size() == 4 * 6 * 3);
    for (std::uint64_t fiber : requests) {
        auto created = view.all([&](const TraceEvent& e) { return e.kind == EventKind::FiberCreate && e.arg[0] == fiber; });
        REQUIRE(created.size() == 1);
        const std::uint64_t dispatcher = view.at(created[0]).arg[1];
        REQUIRE(view.names.at(dispatcher) == "dispatcher");
        auto ready = view.all([&](const TraceEvent& e) { return e.kind == EventKind::Schedule && e.arg[0] == fiber; });
        REQUIRE(!ready.empty());
        auto runs = view.next(ready[0], switchTo(fiber));
        REQUIRE(runs);
        const std::int64_t t = view.at(ready[0]).time;
        int phase = -1;
        for (int p = 0; p < 4; ++p)
            if (t >= bounds[p] && t < bounds[p + 1]) phase = p;
        REQUIRE(phase >= 0);
        latency[phase].push_back(view.at(*runs).time - t);

        INFO("request fiber " << fiber << " in phase \"" << phases[phase] << "\"");
        auto first_switch = view.nextOnThread(ready[0], kindIs(EventKind::Switch));
        REQUIRE(first_switch);
        const TraceEvent& first = view.at(*first_switch);
        CHECK(first.arg[0] == dispatcher);
        int yields_before = 0;
        for (std::size_t i = ready[0]; i <= *runs; ++i) {
            const TraceEvent& e = view.at(i);
            yields_before += e.kind == EventKind::Switch && e.arg[0] == dispatcher &&
                             e.small == static_cast<std::uint8_t>(SwitchReason::Yield);
        }
        switch (phase) {
        case 0:
        case 1:
            // The thread went on with the blocking chore; the requests only
            // ran once the dispatcher suspended, awaiting them.
            CHECK(first.small == static_cast<std::uint8_t>(SwitchReason::Await));
            break;
        case 2:
            // The dispatcher's sleep suspended it at once.
            CHECK(first.small == static_cast<std::uint8_t>(SwitchReason::IoWait));
            break;
        case 3:
            // Within one of the dispatcher's first slices per request ahead.
            CHECK(first.small == static_cast<std::uint8_t>(SwitchReason::Yield));
            CHECK(yields_before >= 1);
            CHECK(yields_before <= 3);
            // The dispatcher's yield switched straight to it.
            CHECK(view.at(*runs).arg[0] == dispatcher);
            CHECK(view.at(*runs).small == static_cast<std::uint8_t>(SwitchReason::Yield));
            yielding_requests.push_back({created[0], *runs, yields_before});
            break;
        }
    }
    // The ready queue is LIFO (schedule() pushes on the head, findReadyFiber()
    // pops it), and each request's switch message pushes the yielding
    // dispatcher back on top: every yield runs one request, the newest
    // first. In each round of three, the last spawned runs after one slice,
    // the middle one after two, the first after three (the 0.5/1.0/1.5 ms
    // waits of lesson.md).
    std::sort(yielding_requests.begin(), yielding_requests.end(),
              [](const YieldingRequest& a, const YieldingRequest& b) { return a.created < b.created; });
    REQUIRE(yielding_requests.size() == 6 * 3);
    for (std::size_t round = 0; round < 6; ++round) {
        const YieldingRequest* r = &yielding_requests[round * 3];
        INFO("round " << round << " of the yielding phase: yields before each request ran (in spawn order): "
                      << r[0].yields_before << ", " << r[1].yields_before << ", " << r[2].yields_before);
        CHECK(r[2].yields_before == 1);
        CHECK(r[1].yields_before == 2);
        CHECK(r[0].yields_before == 3);
        CHECK(r[2].runs < r[1].runs);
        CHECK(r[1].runs < r[0].runs);
    }
    std::int64_t med[4];
    for (int p = 0; p < 4; ++p) {
        REQUIRE(latency[p].size() == 6 * 3);
        med[p] = median(latency[p]);
    }
    INFO("median schedule-to-run latency (ns): blocking syscall " << med[0] << ", busy loop " << med[1]
                                                                  << ", sleeping through the loop " << med[2]
                                                                  << ", busy loop with yields " << med[3]);
    // Blocked behind an 8 ms chore...
    CHECK(med[0] > 5 * kMs);
    CHECK(med[1] > 5 * kMs);
    // ...against next to nothing when the chore waits through the loop.
    CHECK(med[0] > 10 * med[2]);
    CHECK(med[1] > 10 * med[2]);
    // (The yielding phase's latency is one or a few 0.5 ms slices of wall
    // time, which a loaded machine stretches: it is checked by structure
    // above, not by time.)
}

// Asserted on a fresh run here, and on the shipped golden trace below.
static void phenomenaOfLesson11(const LessonRun& run);

TEST_CASE("lesson 11: canceling a group interrupts its members' sleeps and a condition wait",
          "[lessons][lesson11]") {
    const LessonRun run = runLesson(LESSON11, "11");
    phenomenaOfLesson11(run);
}

static void phenomenaOfLesson11(const LessonRun& run) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "11-structured-concurrency");
    const std::size_t cancel = view.checkpoint("cancel the group");
    const std::size_t done = view.checkpoint("group done");
    REQUIRE(cancel < done);

    std::vector<std::uint64_t> sleepers = view.fibersNamedLike("sleeper ");
    sleepers.push_back(view.fiber("late sleeper"));
    REQUIRE(sleepers.size() == 4);
    const std::uint64_t waiter = view.fiber("waiter");
    const std::uint64_t canceler = view.fiber("canceler");

    // Five members spawned into one group; one cancel, by the canceler.
    auto spawns = view.all([](const TraceEvent& e) {
        return e.kind == EventKind::GroupOp && e.small == static_cast<std::uint8_t>(GroupOp::Spawn);
    });
    REQUIRE(spawns.size() == 5);
    const std::uint64_t group = view.at(spawns[0]).arg[0];
    std::set<std::uint64_t> members;
    for (std::size_t i : spawns) {
        CHECK(view.at(i).arg[0] == group);
        members.insert(view.at(i).arg[1]);
    }
    for (std::uint64_t s : sleepers) CHECK(members.count(s) == 1);
    CHECK(members.count(waiter) == 1);
    auto cancels = view.all([&](const TraceEvent& e) {
        return e.kind == EventKind::GroupOp && e.small == static_cast<std::uint8_t>(GroupOp::Cancel) && e.arg[0] == group;
    });
    REQUIRE(cancels.size() >= 1);
    CHECK(cancels[0] > cancel);
    CHECK(view.at(cancels[0]).arg[1] == canceler);

    // Every sleeper's in-flight sleep is canceled through its ring at once.
    for (std::uint64_t s : sleepers) {
        INFO(view.names.at(s) << " (fiber " << s << ")");
        auto request = view.next(cancel, [&](const TraceEvent& e) { return e.kind == EventKind::CancelRequest && e.arg[0] == s; });
        REQUIRE(request);
        CHECK(view.at(*request).arg[1] > 0);
        auto completed = view.next(*request, [&](const TraceEvent& e) { return e.kind == EventKind::Complete && e.arg[0] == s; });
        REQUIRE(completed);
        CHECK(view.at(*completed).small == kOpTimeout);
        CHECK(isCanceledResult(view.at(*completed).signedArg(1)));
        CHECK(*completed < done);
    }
    // The waiter is asked too (nothing in flight in a ring): the canceler
    // takes it off the condition's list at once; nobody signals it.
    auto request = view.next(cancel, [&](const TraceEvent& e) { return e.kind == EventKind::CancelRequest && e.arg[0] == waiter; });
    REQUIRE(request);
    CHECK(view.at(*request).arg[1] == 0);
    auto delivered = view.next(*request, [&](const TraceEvent& e) { return e.kind == EventKind::CancelDelivered && e.arg[0] == waiter; });
    REQUIRE(delivered);
    CHECK(!view.next(cancel, [&](const TraceEvent& e) { return e.kind == EventKind::ConditionWake && e.arg[0] == waiter; }).has_value());
    auto finished = view.next(*delivered, [&](const TraceEvent& e) { return e.kind == EventKind::FiberFinish && e.arg[0] == waiter; });
    REQUIRE(finished);
    CHECK(*finished < done);
    // Canceling the whole group took milliseconds, not the sleeps' ten seconds.
    CHECK(view.at(done).time - view.at(cancel).time < 2'000'000'000);
}

// Asserted on a fresh run here, and on the shipped golden trace below.
static void phenomenaOfLesson12(const LessonRun& run);

TEST_CASE("lesson 12: an echo server's fibers park in accept and recv, and completions wake them",
          "[lessons][lesson12]") {
    // The lesson teaches accept and recv as io_uring operations: it runs on
    // io_uring whatever the environment says (on epoll they are readiness
    // waits, lesson 13's subject).
    const auto maybe_run = tryRunLesson(LESSON12, "12", {"--backend", "uring"}, true);
    if (!maybe_run) {
        WARN("the kernel refuses io_uring here: lesson 12 (an io_uring echo server) is skipped");
        return;
    }
    const LessonRun& run = *maybe_run;
    phenomenaOfLesson12(run);
}

static void phenomenaOfLesson12(const LessonRun& run) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "12-echo-server");
    const std::size_t listening = view.checkpoint("listening");
    const std::size_t clients_start = view.checkpoint("clients start");
    const std::size_t clients_done = view.checkpoint("clients done");
    const std::size_t stopped = view.checkpoint("acceptor stopped");
    REQUIRE(listening < clients_start);
    REQUIRE(clients_start < clients_done);
    REQUIRE(clients_done < stopped);
    INFO("output:\n" << run.output);
    if (!run.golden) CHECK(run.output.find("every echo matched byte for byte") != std::string::npos);

    constexpr int kClients = 8;
    constexpr std::int64_t kBytesEach = 20 * 32; // round trips x message size
    const std::uint64_t acceptor = view.fiber("acceptor");
    const std::vector<std::uint64_t> conns = view.fibersNamedLike("conn ");
    const std::vector<std::uint64_t> clients = view.fibersNamedLike("client ");
    REQUIRE(conns.size() == kClients);
    REQUIRE(clients.size() == kClients);

    // One accept completed with a new descriptor per client, all while the
    // clients ran, and after each the acceptor started "conn N" for it.
    const auto accepted = view.all([&](const TraceEvent& e) {
        return e.kind == EventKind::Complete && e.small == kOpAccept && e.signedArg(1) >= 0;
    });
    REQUIRE(accepted.size() == kClients);
    std::vector<std::int64_t> accepted_fds;
    for (std::size_t i : accepted) {
        CHECK(view.at(i).arg[0] == acceptor);
        CHECK(i > clients_start);
        CHECK(i < clients_done);
        accepted_fds.push_back(view.at(i).signedArg(1));
    }
    const auto spawned = view.all([&](const TraceEvent& e) { return e.kind == EventKind::FiberCreate && e.arg[1] == acceptor; });
    REQUIRE(spawned.size() == kClients);
    for (int n = 0; n < kClients; ++n) {
        const std::uint64_t conn = view.fiber("conn " + std::to_string(n));
        INFO("conn " << n << " (fiber " << conn << ") for accepted descriptor " << accepted_fds[n]);
        CHECK(view.at(spawned[n]).arg[0] == conn);
        CHECK(spawned[n] > accepted[n]);
        // Every operation of the connection is on the descriptor its accept returned.
        const auto ops = view.all([&](const TraceEvent& e) { return e.kind == EventKind::Submit && e.arg[0] == conn; });
        REQUIRE(!ops.empty());
        for (std::size_t i : ops) CHECK(view.at(i).signedArg(1) == accepted_fds[n]);
    }

    // The echo, byte-exact on both sides: each connection received and sent
    // back 20 x 32 bytes, then saw EOF (recv 0); each client sent and got
    // back as much, then saw the server's close.
    std::int64_t server_recvs = 0;
    auto traffic = [&](std::uint64_t fiber) {
        const std::string& name = view.names.at(fiber);
        INFO(name << " (fiber " << fiber << ")");
        std::int64_t received = 0, sent = 0;
        std::vector<std::int64_t> recv_results;
        for (const TraceEvent& e : run.trace.events) {
            if (e.kind != EventKind::Complete || e.arg[0] != fiber) continue;
            if (e.small == kOpRecv || e.small == kOpSend) CHECK(e.signedArg(1) >= 0);
            if (e.small == kOpRecv) {
                received += std::max<std::int64_t>(e.signedArg(1), 0);
                recv_results.push_back(e.signedArg(1));
                if (name.rfind("conn ", 0) == 0 && e.signedArg(1) > 0) ++server_recvs;
            }
            if (e.small == kOpSend) sent += std::max<std::int64_t>(e.signedArg(1), 0);
        }
        CHECK(received == kBytesEach);
        CHECK(sent == kBytesEach);
        REQUIRE(!recv_results.empty());
        CHECK(recv_results.back() == 0);
        CHECK(std::count(recv_results.begin(), recv_results.end(), 0) == 1);
    };
    for (std::uint64_t conn : conns) traffic(conn);
    for (std::uint64_t client : clients) {
        traffic(client);
        // Each client connected, half-closed and closed its socket.
        for (std::uint8_t opcode : {kOpConnect, kOpShutdown, kOpClose}) {
            INFO(view.names.at(client) << ", opcode " << int(opcode));
            const auto done = view.all([&](const TraceEvent& e) {
                return e.kind == EventKind::Complete && e.arg[0] == client && e.small == opcode;
            });
            REQUIRE(done.size() == 1);
            CHECK(view.at(done[0]).signedArg(1) == 0);
        }
    }
    CHECK(server_recvs >= kClients * 20);

    // Every ring operation of the server and the clients parks its fiber:
    // submit, switch away with io-wait; the completion arrives in the same
    // thread's ring, and only then is the fiber resumed (possibly on the
    // other thread). Meanwhile the thread usually runs other fibers.
    std::set<std::uint64_t> lesson_fibers(conns.begin(), conns.end());
    lesson_fibers.insert(clients.begin(), clients.end());
    lesson_fibers.insert(acceptor);
    int parked = 0, served_others = 0, resumed_elsewhere = 0;
    for (std::size_t i = 0; i < run.trace.events.size(); ++i) {
        const TraceEvent& submit = view.at(i);
        if (submit.kind != EventKind::Submit || !lesson_fibers.count(submit.arg[0])) continue;
        if (submit.small != kOpAccept && submit.small != kOpConnect && submit.small != kOpRecv &&
            submit.small != kOpSend && submit.small != kOpShutdown && submit.small != kOpClose)
            continue;
        const std::uint64_t fiber = submit.arg[0];
        INFO(view.names.at(fiber) << " submitted opcode " << int(submit.small) << " at " << submit.time << " ns");
        auto away = view.nextOnThread(i, kindIs(EventKind::Switch));
        REQUIRE(away);
        CHECK(view.at(*away).arg[0] == fiber);
        CHECK(view.at(*away).small == static_cast<std::uint8_t>(SwitchReason::IoWait));
        auto complete = view.nextOnThread(i, [&](const TraceEvent& e) { return e.kind == EventKind::Complete && e.arg[0] == fiber; });
        REQUIRE(complete);
        CHECK(view.at(*complete).small == submit.small);
        CHECK(!view.next(i, [&](const TraceEvent& e) { return switchTo(fiber)(e) && e.time < view.at(*complete).time; })
                    .has_value());
        auto resumed = view.next(*complete, switchTo(fiber));
        REQUIRE(resumed);
        ++parked;
        // The thread went on with another fiber: straight from this one, or
        // later, before the completion came back.
        served_others += view.at(*away).arg[1] != 0 ||
                         view.nextOnThread(*away, [&](const TraceEvent& e) {
                             return e.kind == EventKind::Switch && e.arg[1] != 0 && e.arg[1] != fiber &&
                                    e.time < view.at(*complete).time;
                         }).has_value();
        resumed_elsewhere += view.at(*resumed).thread != view.at(*complete).thread;
    }
    INFO(parked << " parked operations; the thread ran another fiber meanwhile for " << served_others << " of them; "
                << resumed_elsewhere << " resumed on another thread than their completion's");
    CHECK(parked >= 2 * kClients * 20 * 2);
    CHECK(served_others * 2 >= parked);

    // Stopping: the acceptor is canceled in its next accept (in flight,
    // normally: then that accept completes with -ECANCELED in its ring),
    // joins its connections, closes the listener and finishes.
    auto request = view.next(clients_done, [&](const TraceEvent& e) {
        return e.kind == EventKind::CancelRequest && e.arg[0] == acceptor;
    });
    REQUIRE(request);
    CHECK(*request < stopped);
    if (view.at(*request).arg[1] > 0) {
        auto canceled = view.next(*request, [&](const TraceEvent& e) {
            return e.kind == EventKind::Complete && e.arg[0] == acceptor && e.small == kOpAccept;
        });
        REQUIRE(canceled);
        CHECK(isCanceledResult(view.at(*canceled).signedArg(1)));
        CHECK(*canceled < stopped);
    }
    auto closed = view.next(*request, [&](const TraceEvent& e) {
        return e.kind == EventKind::Complete && e.arg[0] == acceptor && e.small == kOpClose;
    });
    REQUIRE(closed);
    CHECK(view.at(*closed).signedArg(1) == 0);
    auto finished = view.all([&](const TraceEvent& e) { return e.kind == EventKind::FiberFinish && e.arg[0] == acceptor; });
    REQUIRE(finished.size() == 1);
    CHECK(finished[0] > *closed);
    CHECK(finished[0] < stopped);
    // No accept succeeded after the clients were done.
    CHECK(!view.next(clients_done, [&](const TraceEvent& e) {
                   return e.kind == EventKind::Complete && e.small == kOpAccept && e.signedArg(1) >= 0;
               }).has_value());
}

namespace {

bool onPoolThread(const View& view, const TraceEvent& e) {
    return e.thread < view.trace.threads.size() && view.trace.threads[e.thread].name.rfind("blocking pool", 0) == 0;
}

// What lesson 13 does the same on both backends; returns ping's and pong's
// connection descriptors.
std::pair<std::int64_t, std::int64_t> checkLesson13(const LessonRun& run, const View& view, const std::string& backend) {
    INFO("backend " << backend << "; output:\n" << run.output);
    requireCheckpointsMatchNarrative(view, "13-two-backends");
    const std::size_t sleeping = view.checkpoint("sleeping");
    const std::size_t ping_pong = view.checkpoint("ping-pong");
    const std::size_t file = view.checkpoint("file");
    const std::size_t done = view.checkpoint("done");
    REQUIRE(sleeping < ping_pong);
    REQUIRE(ping_pong < file);
    REQUIRE(file < done);
    // The program names its backend, and so does the loop in the trace.
    if (!run.golden) {
        CHECK(run.output.find("Running on the " + backend + " backend") != std::string::npos);
        CHECK(run.output.find("every reply matched") != std::string::npos);
        CHECK(run.output.find("intact") != std::string::npos);
    }
    const auto marks = view.all([&](const TraceEvent& e) {
        return e.kind == EventKind::Mark && view.trace.string(e.arg[0]) == "backend: " + backend;
    });
    REQUIRE(marks.size() == 1);
    CHECK(marks[0] < sleeping);

    // The sleepers: a timeout each, submitted and completed (-ETIME) no
    // sooner than its duration, on both backends.
    for (int i = 0; i < 3; ++i) {
        const std::uint64_t sleeper = view.fiber("sleeper " + std::to_string(i));
        INFO("sleeper " << i);
        const auto submits = view.all([&](const TraceEvent& e) { return e.kind == EventKind::Submit && e.arg[0] == sleeper; });
        const auto completes = view.all([&](const TraceEvent& e) { return e.kind == EventKind::Complete && e.arg[0] == sleeper; });
        REQUIRE(submits.size() == 1);
        REQUIRE(completes.size() == 1);
        CHECK(view.at(submits[0]).small == kOpTimeout);
        CHECK(view.at(completes[0]).small == kOpTimeout);
        CHECK(view.at(completes[0]).signedArg(1) == -ETIME);
        CHECK(submits[0] > sleeping);
        CHECK(completes[0] < ping_pong);
        CHECK(view.at(completes[0]).time - view.at(submits[0]).time >= (i + 1) * kMs - kMs / 20);
    }

    // Ping and pong: ten round trips of 16 bytes each way, byte-exact, on
    // one connection each; pong's last receive is the end of the stream.
    const std::uint64_t ping = view.fiber("ping");
    const std::uint64_t pong = view.fiber("pong");
    std::int64_t fds[2] = {-1, -1};
    for (int side = 0; side < 2; ++side) {
        const std::uint64_t fiber = side == 0 ? ping : pong;
        INFO(view.names.at(fiber));
        std::int64_t sent = 0, received = 0;
        std::vector<std::int64_t> recv_results;
        for (std::size_t i = 0; i < run.trace.events.size(); ++i) {
            const TraceEvent& e = view.at(i);
            if (e.arg[0] != fiber) continue;
            if (e.kind == EventKind::Submit && e.small == kOpSend) {
                if (fds[side] < 0) fds[side] = e.signedArg(1);
                CHECK(e.signedArg(1) == fds[side]);
                CHECK(i > ping_pong);
                CHECK(i < file);
            }
            if (e.kind != EventKind::Complete) continue;
            if (e.small == kOpSend) sent += e.signedArg(1);
            if (e.small == kOpRecv) {
                received += e.signedArg(1);
                recv_results.push_back(e.signedArg(1));
            }
        }
        CHECK(sent == 10 * 16);
        CHECK(received == 10 * 16);
        REQUIRE(!recv_results.empty());
        for (std::int64_t r : recv_results) CHECK(r >= 0);
        if (fiber == pong) CHECK(recv_results.back() == 0);
        else CHECK(std::count(recv_results.begin(), recv_results.end(), 0) == 0);
    }
    REQUIRE(fds[0] >= 0);
    REQUIRE(fds[1] >= 0);
    // Clock order is causal order (FORMAT.md): no byte is received before
    // the send that carried it was submitted. At each receive's completion,
    // the bytes received so far on that side are at most those sent by the
    // other side's sends submitted earlier (a send's bytes are its
    // completion's result). On epoll a send done at once was stamped after
    // its syscall, and the peer's receive came first in 9 of 10 trips.
    for (int side = 0; side < 2; ++side) {
        const std::uint64_t receiver = side == 0 ? ping : pong, sender = side == 0 ? pong : ping;
        INFO(view.names.at(sender) << " sends to " << view.names.at(receiver));
        std::vector<std::pair<std::int64_t, std::int64_t>> sends; // (submit time, bytes)
        for (std::size_t i = 0; i < run.trace.events.size(); ++i) {
            const TraceEvent& e = view.at(i);
            if (e.arg[0] != sender || e.small != kOpSend || e.kind != EventKind::Submit) continue;
            const auto done = view.nextOnThread(i, [&](const TraceEvent& c) {
                return c.kind == EventKind::Complete && c.arg[0] == sender && c.small == kOpSend;
            });
            // (io_uring: its completion may be reaped on another thread's turn; then count it whole)
            sends.emplace_back(e.time, done ? std::max<std::int64_t>(0, view.at(*done).signedArg(1)) : 16);
        }
        std::int64_t received = 0;
        int checked = 0;
        for (std::size_t i = 0; i < run.trace.events.size(); ++i) {
            const TraceEvent& e = view.at(i);
            if (e.arg[0] != receiver || e.small != kOpRecv || e.kind != EventKind::Complete || e.signedArg(1) <= 0) continue;
            ++checked;
            received += e.signedArg(1);
            std::int64_t sent_before = 0;
            for (const auto& [at, bytes] : sends)
                if (at <= e.time) sent_before += bytes;
            INFO("a receive completed at " << e.time << " ns brings " << received << " bytes; sends submitted by then carry "
                                           << sent_before);
            CHECK(received <= sent_before);
        }
        CHECK(checked >= 10); // ten messages each way, in one receive or more
    }

    // The file, by the main fiber: open, write and read 4096 bytes, close.
    for (std::uint8_t opcode : {kOpOpenAt, kOpWrite, kOpRead, kOpClose}) {
        INFO("file opcode " << int(opcode));
        const auto completes = view.all([&](const TraceEvent& e) {
            return e.kind == EventKind::Complete && e.arg[0] == 1 && e.small == opcode && e.time > view.at(file).time;
        });
        REQUIRE(completes.size() == 1);
        CHECK(completes[0] < done);
        const std::int64_t result = view.at(completes[0]).signedArg(1);
        if (opcode == kOpWrite || opcode == kOpRead) CHECK(result == 4096);
        else if (opcode == kOpOpenAt) CHECK(result >= 0);
        else CHECK(result == 0);
    }
    return {fds[0], fds[1]};
}

} // namespace

static void phenomenaOfLesson13OnUring(const LessonRun& run) {
    const View view(run.trace);
    checkLesson13(run, view, "io_uring");
    INFO("io_uring run; output:\n" << run.output);
    CHECK(run.trace.header.backend == "io_uring");
    CHECK(view.all([](const TraceEvent& e) {
                  return (e.kind == EventKind::Submit || e.kind == EventKind::Complete) && e.small == kOpPollAdd;
              }).empty());
    for (const ThreadInfo& thread : run.trace.threads) CHECK(thread.name.rfind("blocking pool", 0) != 0);
    const std::set<std::uint64_t> socket_fibers = {view.fiber("ping"), view.fiber("pong")};
    int parked = 0;
    for (std::size_t i = 0; i < run.trace.events.size(); ++i) {
        const TraceEvent& submit = view.at(i);
        if (submit.kind != EventKind::Submit || !socket_fibers.count(submit.arg[0])) continue;
        if (submit.small != kOpSend && submit.small != kOpRecv) continue;
        INFO(view.names.at(submit.arg[0]) << " submitted opcode " << int(submit.small) << " at " << submit.time << " ns");
        auto away = view.nextOnThread(i, kindIs(EventKind::Switch));
        REQUIRE(away);
        CHECK(view.at(*away).arg[0] == submit.arg[0]);
        CHECK(view.at(*away).small == static_cast<std::uint8_t>(SwitchReason::IoWait));
        ++parked;
    }
    CHECK(parked >= 2 * 10 * 2);
    for (std::uint8_t opcode : {kOpWrite, kOpRead}) {
        const auto completes = view.all([&](const TraceEvent& e) {
            return e.kind == EventKind::Complete && e.arg[0] == 1 && e.small == opcode;
        });
        REQUIRE(completes.size() == 1);
        CHECK(view.worker(view.at(completes[0])) >= 0);
    }
}

static void phenomenaOfLesson13OnEpoll(const LessonRun& run) {
    const View view(run.trace);
    const auto [ping_fd, pong_fd] = checkLesson13(run, view, "epoll");
    INFO("epoll run; output:\n" << run.output);
    // The header says which backend ran (it used to say io_uring always).
    CHECK(run.trace.header.backend == "epoll");
    const std::uint64_t ping = view.fiber("ping");
    const std::uint64_t pong = view.fiber("pong");
    int recv_waits[2] = {0, 0}; // polls on ping's and pong's connections that a recv retried
    const auto polls = view.all([](const TraceEvent& e) { return e.kind == EventKind::Submit && e.small == kOpPollAdd; });
    REQUIRE(!polls.empty());
    for (std::size_t i : polls) {
        const TraceEvent& submit = view.at(i);
        const std::uint64_t fiber = submit.arg[0];
        INFO("poll by fiber " << fiber << " on fd " << submit.signedArg(1) << " at " << submit.time << " ns");
        // The fiber parks; its readiness (an event mask) comes back as the
        // poll's completion, and only then does it run again.
        auto away = view.nextOnThread(i, kindIs(EventKind::Switch));
        REQUIRE(away);
        CHECK(view.at(*away).arg[0] == fiber);
        CHECK(view.at(*away).small == static_cast<std::uint8_t>(SwitchReason::IoWait));
        auto ready = view.next(i, [&](const TraceEvent& e) { return e.kind == EventKind::Complete && e.arg[0] == fiber; });
        REQUIRE(ready);
        CHECK(view.at(*ready).small == kOpPollAdd);
        CHECK(view.at(*ready).signedArg(1) > 0);
        CHECK(!view.next(i, [&](const TraceEvent& e) { return switchTo(fiber)(e) && e.time < view.at(*ready).time; }).has_value());
        CHECK(view.next(*ready, switchTo(fiber)).has_value());
        auto retry = view.next(*ready, [&](const TraceEvent& e) { return e.kind == EventKind::Submit && e.arg[0] == fiber; });
        if (!retry || view.at(*retry).small != kOpRecv || view.at(*retry).signedArg(1) != submit.signedArg(1)) continue;
        if (fiber == ping && submit.signedArg(1) == ping_fd) ++recv_waits[0];
        if (fiber == pong && submit.signedArg(1) == pong_fd) ++recv_waits[1];
    }
    // Normally nearly every receive of both waits; but a busy machine can
    // preempt ping right after its send, letting pong answer before ping's
    // recv: then that recv needs no wait. Both sides never waiting would
    // take that twenty times in a row.
    INFO("recv waits: ping " << recv_waits[0] << ", pong " << recv_waits[1]);
    CHECK(recv_waits[0] + recv_waits[1] >= 1);
    // Every send and receive that went through is a submit (as the attempt
    // began) and a complete (as it returned), back to back on one thread:
    // the fiber never parked on it.
    int immediate = 0;
    for (std::size_t i = 0; i < run.trace.events.size(); ++i) {
        const TraceEvent& submit = view.at(i);
        if (submit.kind != EventKind::Submit || (submit.arg[0] != ping && submit.arg[0] != pong)) continue;
        if (submit.small != kOpSend && submit.small != kOpRecv) continue;
        INFO(view.names.at(submit.arg[0]) << " submitted opcode " << int(submit.small) << " at " << submit.time << " ns");
        auto after = view.nextOnThread(i, [](const TraceEvent&) { return true; });
        REQUIRE(after);
        CHECK(view.at(*after).kind == EventKind::Complete);
        CHECK(view.at(*after).arg[0] == submit.arg[0]);
        CHECK(view.at(*after).small == submit.small);
        ++immediate;
    }
    CHECK(immediate >= 2 * 10 * 2);
    // The file's open, write and read: submitted on a worker, completed on
    // a "blocking pool N" thread, then the main fiber resumes on a worker.
    for (std::uint8_t opcode : {kOpOpenAt, kOpWrite, kOpRead}) {
        INFO("file opcode " << int(opcode));
        const auto submits = view.all([&](const TraceEvent& e) {
            return e.kind == EventKind::Submit && e.arg[0] == 1 && e.small == opcode;
        });
        const auto completes = view.all([&](const TraceEvent& e) {
            return e.kind == EventKind::Complete && e.arg[0] == 1 && e.small == opcode;
        });
        REQUIRE(submits.size() == 1);
        REQUIRE(completes.size() == 1);
        CHECK(!onPoolThread(view, view.at(submits[0])));
        CHECK(onPoolThread(view, view.at(completes[0])));
        auto away = view.nextOnThread(submits[0], kindIs(EventKind::Switch));
        REQUIRE(away);
        CHECK(view.at(*away).arg[0] == 1);
        CHECK(view.at(*away).small == static_cast<std::uint8_t>(SwitchReason::IoWait));
        auto resumed = view.next(completes[0], switchTo(1));
        REQUIRE(resumed);
        CHECK(!onPoolThread(view, view.at(*resumed)));
    }
}

// The half of lesson 13 a trace recorded on its backend shows.
static void phenomenaOfLesson13(const LessonRun& run) {
    if (run.trace.header.backend == "epoll") phenomenaOfLesson13OnEpoll(run);
    else phenomenaOfLesson13OnUring(run);
}

TEST_CASE("lesson 13: one program on io_uring (completions) and on epoll (readiness, a blocking pool)",
          "[lessons][lesson13]") {
    // io_uring: every socket call is one submission that parks its fiber
    // until the kernel completes it; no readiness waits; files in the ring.
    if (const auto run = tryRunLesson(LESSON13, "13-uring", {"--backend", "uring"}, true)) {
        phenomenaOfLesson13OnUring(*run);
    } else {
        WARN("the kernel refuses io_uring here: lesson 13's io_uring half is skipped");
    }

    // epoll: a socket call that would block waits for readiness (poll
    // submit/complete on its descriptor) and is retried; the call that
    // succeeds is a submit and complete at the same instant; file I/O runs
    // on a blocking-pool thread.
    const LessonRun run = runLesson(LESSON13, "13-epoll", {"--backend", "epoll"});
    phenomenaOfLesson13OnEpoll(run);
}

namespace {

// What lesson 14 must show on any thread count.
void checkLesson14(const LessonRun& run, const View& view) {
    requireCheckpointsMatchNarrative(view, "14-read-mostly-cache");
    const std::vector<std::string> order = {"gate opens",          "refresher locks", "late reader arrives",
                                            "first refresh done",  "late reader reads", "second refresh done",
                                            "readers done",        "fetches start",     "impatient fetch",
                                            "impatient fetch gives up", "fetches done"};
    std::map<std::string, std::size_t> at;
    for (const auto& name : order) at[name] = view.checkpoint(name);
    for (std::size_t i = 1; i < order.size(); ++i) {
        INFO("checkpoint \"" << order[i - 1] << "\" comes before \"" << order[i] << "\"");
        REQUIRE(at[order[i - 1]] < at[order[i]]);
    }
    // Every wait is on a part of a primitive the program named
    // (setObjectName): the model calls each by its name, never an address.
    {
        const analysis::Timeline timeline = analysis::buildTimeline(run.trace);
        const std::set<std::string> parts = {"start.waiters", "all_reading.waiters", "table.readers", "table.writers",
                                             "fetch_slots.waiters", "two_fetching.waiters"};
        std::set<std::string> waited_on;
        for (std::size_t i : view.all(kindIs(EventKind::ConditionWait))) {
            const TraceEvent e = view.at(i);
            const std::string* name = analysis::objectNameAt(timeline, e.arg[1], e.time);
            INFO("condition-wait at " << e.time << " ns on object " << e.arg[1]);
            REQUIRE(name);
            CHECK(parts.count(*name) == 1);
            waited_on.insert(*name);
        }
        CHECK(waited_on.count("start.waiters") == 1);
        CHECK(waited_on.count("table.readers") == 1);
        CHECK(waited_on.count("table.writers") == 1);
    }
    if (!run.golden) {
        CHECK(run.output.find("it read version 1") != std::string::npos);
        CHECK(run.output.find("4 misses fetched, at most 2 at once") != std::string::npos);
        CHECK(run.output.find("gave up: TimedOut") != std::string::npos);
    }

    std::vector<std::uint64_t> readers;
    for (int i = 0; i < 4; ++i) readers.push_back(view.fiber("reader " + std::to_string(i)));
    const std::uint64_t late = view.fiber("late reader");
    const std::uint64_t refresher = view.fiber("refresher");
    const std::uint64_t impatient = view.fiber("impatient fetch");
    // The condition-waits of `fiber` strictly between events `from` and `to`.
    auto waitsBetween = [&](std::uint64_t fiber, std::size_t from, std::size_t to) {
        std::vector<std::size_t> found;
        for (std::size_t i = from + 1; i < to; ++i)
            if (view.at(i).kind == EventKind::ConditionWait && view.at(i).arg[0] == fiber) found.push_back(i);
        return found;
    };

    // The gate (an Event): the readers that reached it wait on its
    // condition; set() wakes them all with one broadcast, and nobody waits
    // on it after that.
    std::set<std::uint64_t> gate_conditions;
    for (std::uint64_t r : readers)
        for (std::size_t i : waitsBetween(r, 0, at["gate opens"])) gate_conditions.insert(view.at(i).arg[1]);
    REQUIRE(gate_conditions.size() == 1);
    const std::uint64_t gate = *gate_conditions.begin();
    const auto gate_wakes = view.all([&](const TraceEvent& e) { return e.kind == EventKind::ConditionWake && e.arg[1] == gate; });
    // One broadcast: since format 7 a record per fiber it woke, all at one
    // instant on one thread (one record naming the first, before).
    REQUIRE(!gate_wakes.empty());
    for (std::size_t w : gate_wakes) {
        CHECK(view.at(w).small == static_cast<std::uint8_t>(ConditionWakeHow::Broadcast));
        CHECK(view.at(w).time == view.at(gate_wakes[0]).time);
        CHECK(view.at(w).thread == view.at(gate_wakes[0]).thread);
    }
    CHECK(gate_wakes[0] > at["gate opens"]);
    CHECK(view.all([&](const TraceEvent& e) {
                  return e.kind == EventKind::ConditionWait && e.arg[1] == gate && e.time > view.at(at["gate opens"]).time;
              }).empty());

    // Writer preference: the refresher waits for the readers holding the
    // lock (on the writers' condition)...
    const auto refresher_waits = waitsBetween(refresher, at["refresher locks"], at["first refresh done"]);
    REQUIRE(refresher_waits.size() == 1);
    const std::size_t writer_waits = refresher_waits[0];
    const std::uint64_t writers_cv = view.at(writer_waits).arg[1];
    // ...and the late reader, refused by tryLockShared() only once the
    // refresher waited, waits too (on the readers' condition), and reads
    // only after the refresher's unlock.
    CHECK(writer_waits < at["late reader arrives"]);
    // The last reader out wakes it with a signal.
    CHECK(view.next(writer_waits, [&](const TraceEvent& e) {
                  return e.kind == EventKind::ConditionWake && e.arg[0] == refresher && e.arg[1] == writers_cv &&
                         e.small == static_cast<std::uint8_t>(ConditionWakeHow::Signal) &&
                         e.time < view.at(at["first refresh done"]).time;
              }).has_value());
    const auto late_waits = waitsBetween(late, at["late reader arrives"], at["late reader reads"]);
    REQUIRE(late_waits.size() == 1);
    const std::uint64_t readers_cv = view.at(late_waits[0]).arg[1];
    CHECK(readers_cv != writers_cv);
    CHECK(readers_cv != gate);
    // So do the four readers' next lookups, although readers hold the lock.
    for (std::uint64_t r : readers) {
        INFO(view.names.at(r) << " queues behind the waiting refresher");
        const auto waits = waitsBetween(r, writer_waits, at["first refresh done"]);
        REQUIRE(waits.size() == 1);
        CHECK(view.at(waits[0]).arg[1] == readers_cv);
    }
    // The refresher's unlock admits the waiting readers as one batch: one
    // broadcast, one schedule of them all...
    const auto batch_wake = view.next(at["first refresh done"], [&](const TraceEvent& e) {
        return e.kind == EventKind::ConditionWake && e.arg[1] == readers_cv;
    });
    REQUIRE(batch_wake);
    CHECK(view.at(*batch_wake).small == static_cast<std::uint8_t>(ConditionWakeHow::Broadcast));
    CHECK(*batch_wake < at["late reader reads"]);
    const auto batch_schedule = view.nextOnThread(*batch_wake, kindIs(EventKind::Schedule));
    REQUIRE(batch_schedule);
    // One record per fiber since format 7 (a batch's records at one
    // instant), one with a count before: the fibers they place, either way.
    std::uint64_t batch = 0;
    for (std::size_t k = *batch_schedule; k < run.trace.events.size(); ++k) {
        const TraceEvent e = run.trace.events[k];
        if (e.time != view.at(*batch_schedule).time) break;
        if (e.kind == EventKind::Schedule && e.thread == view.at(*batch_schedule).thread) batch += e.arg[1];
    }
    INFO("the batch: " << batch << " readers");
    CHECK(batch >= 2);
    // ...before the refresher's own next lock(), which waits for them to leave.
    const auto second_waits = waitsBetween(refresher, at["first refresh done"], at["second refresh done"]);
    REQUIRE(second_waits.size() == 1);
    CHECK(view.at(second_waits[0]).arg[1] == writers_cv);
    // The readers queue behind it again for their next lookup.
    for (std::uint64_t r : readers) {
        INFO(view.names.at(r) << " queues behind the refresher's second lock()");
        const auto waits = waitsBetween(r, at["first refresh done"], at["second refresh done"]);
        REQUIRE(!waits.empty());
        CHECK(view.at(waits.back()).arg[1] == readers_cv);
    }
    // What each reader read, by its marks: version 0, then version 1 in the
    // batch between the refreshes, then version 2.
    for (int i = 0; i < 4; ++i) {
        const std::string name = "reader " + std::to_string(i);
        INFO(name);
        std::vector<std::size_t> reads[3];
        for (int v = 0; v < 3; ++v)
            reads[v] = view.all([&](const TraceEvent& e) {
                return e.kind == EventKind::Mark && view.trace.string(e.arg[0]) == name + " reads v" + std::to_string(v);
            });
        for (int v = 0; v < 3; ++v) REQUIRE(!reads[v].empty());
        CHECK(reads[0].back() < at["first refresh done"]);
        CHECK(reads[1].front() > at["first refresh done"]);
        CHECK(reads[1].back() < at["second refresh done"]);
        CHECK(reads[2].front() > at["second refresh done"]);
        CHECK(reads[2].back() < at["readers done"]);
    }

    // The fetches: one timeout each, never more than two in flight (the
    // semaphore's two slots), and two at once at some moment.
    const auto fetchers = view.fibersNamedLike("fetch ");
    REQUIRE(fetchers.size() == 4);
    const std::set<std::uint64_t> fetcher_set(fetchers.begin(), fetchers.end());
    int in_flight = 0, most = 0, submits = 0, completes = 0;
    for (std::size_t i = 0; i < run.trace.events.size(); ++i) {
        const TraceEvent& e = view.at(i);
        if (e.small != kOpTimeout || !fetcher_set.count(e.arg[0])) continue;
        if (e.kind == EventKind::Submit) {
            CHECK(i > at["fetches start"]);
            ++submits;
            most = std::max(most, ++in_flight);
        } else if (e.kind == EventKind::Complete) {
            CHECK(e.signedArg(1) == -ETIME);
            CHECK(i < at["fetches done"]);
            ++completes;
            --in_flight;
        }
    }
    CHECK(submits == 4);
    CHECK(completes == 4);
    CHECK(most == 2);
    // The impatient fetch waits on the semaphore's condition (where patient
    // fetches wait too, and post() wakes them with a signal), never sleeps,
    // and its 1 ms Timeout passes: a condition-wake with how = timed-out,
    // no sooner than 1 ms after it began to wait.
    CHECK(view.all([&](const TraceEvent& e) { return e.kind == EventKind::Submit && e.arg[0] == impatient; }).empty());
    const auto impatient_waits = waitsBetween(impatient, at["impatient fetch"], at["impatient fetch gives up"]);
    REQUIRE(impatient_waits.size() == 1);
    const std::uint64_t slots_cv = view.at(impatient_waits[0]).arg[1];
    const auto timed_out = view.all([](const TraceEvent& e) {
        return e.kind == EventKind::ConditionWake && e.small == static_cast<std::uint8_t>(ConditionWakeHow::TimedOut);
    });
    REQUIRE(timed_out.size() == 1);
    const TraceEvent& wake = view.at(timed_out[0]);
    CHECK(wake.arg[0] == impatient);
    CHECK(wake.arg[1] == slots_cv);
    CHECK(timed_out[0] < at["impatient fetch gives up"]);
    CHECK(wake.time - view.at(at["impatient fetch"]).time >= kMs - kMs / 20);
    bool patient_waited = false, patient_signaled = false;
    for (const TraceEvent& e : run.trace.events) {
        if (!fetcher_set.count(e.arg[0]) || e.arg[1] != slots_cv) continue;
        patient_waited |= e.kind == EventKind::ConditionWait;
        patient_signaled |= e.kind == EventKind::ConditionWake && e.small == static_cast<std::uint8_t>(ConditionWakeHow::Signal);
    }
    CHECK(patient_waited);
    CHECK(patient_signaled);

    // Since format 8 the RwLock and the Semaphore appear as themselves: their
    // own records, in the order of their state's changes, and the object
    // state's cards, with their inner conditions not listed apart.
    if (run.trace.header.version < 8) return;
    const auto rwlockOp = [&](std::uint64_t fiber, trace::RwLockOp op, std::size_t from, std::size_t to) {
        std::vector<std::size_t> found;
        for (std::size_t i = from + 1; i < to; ++i)
            if (view.at(i).kind == EventKind::RwLockOp && view.at(i).arg[1] == fiber && view.at(i).small == static_cast<std::uint8_t>(op))
                found.push_back(i);
        return found;
    };
    const auto blocked = rwlockOp(refresher, trace::RwLockOp::WriteBlocked, at["refresher locks"], writer_waits);
    REQUIRE(blocked.size() == 1);
    const std::uint64_t lock = view.at(blocked[0]).arg[0];
    const auto locked = rwlockOp(refresher, trace::RwLockOp::WriteLocked, writer_waits, at["first refresh done"]);
    REQUIRE(locked.size() == 1);
    // (Its unlock follows the checkpoint: the guard's destructor.)
    const auto unlocked = rwlockOp(refresher, trace::RwLockOp::WriteUnlock, at["first refresh done"], at["late reader reads"]);
    REQUIRE(unlocked.size() == 1);
    // No reader holds it while the refresher writes.
    CHECK(view.all([&](const TraceEvent& e) {
                  return e.kind == EventKind::RwLockOp && e.arg[0] == lock && e.small == static_cast<std::uint8_t>(trace::RwLockOp::ReadLocked) &&
                         e.time > view.at(locked[0]).time && e.time < view.at(unlocked[0]).time;
              }).empty());
    REQUIRE(rwlockOp(late, trace::RwLockOp::ReadBlocked, at["late reader arrives"], late_waits[0]).size() == 1);
    {
        // Just after the late reader waits: the refresher and it wait for the lock.
        const analysis::ObjectState objects = analysis::objectStateAt(run.trace, analysis::buildTimeline(run.trace), view.at(late_waits[0]).time);
        const analysis::RwLockState* card = nullptr;
        for (const auto& r : objects.rwlocks)
            if (r.rwlock == lock) card = &r;
        REQUIRE(card);
        CHECK(card->waiting_writers == std::vector<std::uint64_t>{refresher});
        CHECK(std::count(card->waiting_readers.begin(), card->waiting_readers.end(), late) == 1);
        for (const auto& c : objects.conditions) {
            CHECK(c.condition != readers_cv);
            CHECK(c.condition != writers_cv);
        }
    }
    const auto gave_up = view.all([&](const TraceEvent& e) {
        return e.kind == EventKind::SemaphoreOp && e.arg[1] == impatient && e.small == static_cast<std::uint8_t>(trace::SemaphoreOp::GaveUp);
    });
    REQUIRE(gave_up.size() == 1);
    CHECK(gave_up[0] > timed_out[0]);
    CHECK(gave_up[0] < at["impatient fetch gives up"]);
    // The gate, as an Event: set between its checkpoint and its wakes; each
    // reader that blocked on it returns from its wait after that.
    const auto gate_set = view.next(at["gate opens"], [&](const TraceEvent& e) {
        return e.kind == EventKind::EventOp && e.small == static_cast<std::uint8_t>(trace::EventOp::Set);
    });
    REQUIRE(gate_set);
    CHECK(*gate_set < gate_wakes[0]);
    const std::uint64_t gate_event = view.at(*gate_set).arg[0];
    for (std::uint64_t r : readers) {
        INFO(view.names.at(r) << " at the gate");
        const auto blocks = view.all([&](const TraceEvent& e) {
            return e.kind == EventKind::EventOp && e.arg[0] == gate_event && e.arg[1] == r &&
                   e.small == static_cast<std::uint8_t>(trace::EventOp::Blocked);
        });
        const auto returns = view.all([&](const TraceEvent& e) {
            return e.kind == EventKind::EventOp && e.arg[0] == gate_event && e.arg[1] == r &&
                   e.small == static_cast<std::uint8_t>(trace::EventOp::Returned);
        });
        CHECK(blocks.size() == returns.size());
        CHECK(blocks.size() == waitsBetween(r, 0, at["gate opens"]).size());
        for (std::size_t k : blocks) CHECK(k < *gate_set);
        for (std::size_t k : returns) CHECK(k > *gate_set);
    }
    const auto takes = view.all([&](const TraceEvent& e) {
        return e.kind == EventKind::SemaphoreOp && fetcher_set.count(e.arg[1]) && e.small == static_cast<std::uint8_t>(trace::SemaphoreOp::Take);
    });
    CHECK(takes.size() == 4);
}

} // namespace

TEST_CASE("lesson 14: an Event gate, a writer-preferring RwLock, a Semaphore of two fetches and a timed-out wait",
          "[lessons][lesson14]") {
    // The claims hold on one thread (every step in one place) and on two
    // (the lesson's default), and on either backend: the primitives are
    // the scheduler's, not the kernel interface's.
    const std::vector<std::vector<std::string>> runs = {
        {"--threads", "1"}, {"--threads", "2"}, {"--threads", "2", "--backend", "epoll"}};
    for (const auto& args : runs) {
        const LessonRun run = runLesson(LESSON14, ("14-" + std::to_string(&args - runs.data())).c_str(), args);
        const View view(run.trace);
        INFO(Catch::Detail::stringify(args) << "; output:\n" << run.output);
        checkLesson14(run, view);
    }
}

namespace {

// Lesson 15's two parts, counted between their checkpoints.
struct Lesson15Part {
    int spawns = 0;             // fiber-create
    int handoffs = 0;           // schedule how=idle-handoff
    int own_queue = 0;          // schedule how=own-queue
    int run_next = 0;           // schedule how=run-next
    int wakeups_sent = 0;
    int wakeups_received = 0;
    int parks = 0;
    int steals = 0;             // steal and steal-half records
};

Lesson15Part countLesson15Part(const View& view, const std::string& from, const std::string& to) {
    Lesson15Part part;
    for (std::size_t i = view.checkpoint(from) + 1; i < view.checkpoint(to); ++i) {
        const TraceEvent& e = view.at(i);
        const auto how = static_cast<ScheduleHow>(e.small);
        part.spawns += e.kind == EventKind::FiberCreate;
        part.handoffs += e.kind == EventKind::Schedule && how == ScheduleHow::IdleHandoff;
        part.own_queue += e.kind == EventKind::Schedule && how == ScheduleHow::OwnQueue;
        part.run_next += e.kind == EventKind::Schedule && how == ScheduleHow::RunNext;
        part.wakeups_sent += e.kind == EventKind::WakeupSent;
        part.wakeups_received += e.kind == EventKind::WakeupReceived;
        part.parks += e.kind == EventKind::Park;
        part.steals += e.kind == EventKind::Steal || e.kind == EventKind::StealHalf;
    }
    return part;
}

std::ostream& operator<<(std::ostream& out, const Lesson15Part& p) {
    return out << "spawns " << p.spawns << ", idle-handoffs " << p.handoffs << ", own-queue " << p.own_queue << ", run-next "
               << p.run_next << ", wakeups sent/received " << p.wakeups_sent << "/" << p.wakeups_received << ", parks "
               << p.parks << ", steals " << p.steals;
}

bool ranScalingPolicy(const View& view) { return fiberscope::trace::ranScalingPolicy(view.trace); }

constexpr int kLesson15Pairs = 200;

} // namespace

// Asserted on fresh runs here (both policies), and on the shipped golden trace (seed) below.
// `loaded`: recorded beside a process that keeps a CPU busy.
static void phenomenaOfLesson15(const LessonRun& run, bool loaded) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "15-two-threads-slower");
    const std::vector<std::string> order = {"spawn and await", "pairs done", "tree begins", "tree done"};
    for (std::size_t i = 1; i < order.size(); ++i) {
        INFO("checkpoint \"" << order[i - 1] << "\" comes before \"" << order[i] << "\"");
        REQUIRE(view.checkpoint(order[i - 1]) < view.checkpoint(order[i]));
    }
    if (!run.golden) CHECK(run.output.find("(right)") != std::string::npos);
    // Two workers run, both started before the pairs (startWorkers; the
    // lesson's precondition), under either policy.
    CHECK(view.all(kindIs(EventKind::ThreadStart)).size() == 2);
    for (std::size_t i : view.all(kindIs(EventKind::ThreadStart))) {
        INFO("worker " << view.at(i).arg[0] << " starts at " << view.at(i).time << " ns");
        CHECK(i < view.checkpoint("spawn and await"));
    }
    const Lesson15Part pairs = countLesson15Part(view, "spawn and await", "pairs done");
    const Lesson15Part tree = countLesson15Part(view, "tree begins", "tree done");
    const bool scaling = ranScalingPolicy(view);
    INFO("policy " << (scaling ? "scaling" : "seed") << "\nspawn and await: " << pairs << "\ntree: " << tree);
    CHECK(pairs.spawns == kLesson15Pairs);
    CHECK(tree.spawns == 1111);
    if (!scaling) {
        // The seed: every spawn is offered to the idle thread first. In the
        // pairs, the other thread is idle at every spawn (and at every
        // finish, which readies the awaiter): a hand-off, and its MSG_RING,
        // the record right after it on the same thread, to the same worker.
        CHECK(pairs.handoffs >= kLesson15Pairs / 2);
        CHECK(pairs.run_next == 0);
        for (std::size_t i : view.all([](const TraceEvent& e) {
                 return e.kind == EventKind::Schedule && e.small == static_cast<std::uint8_t>(ScheduleHow::IdleHandoff);
             })) {
            const auto sent = view.nextOnThread(i, [](const TraceEvent&) { return true; });
            REQUIRE(sent);
            CHECK(view.at(*sent).kind == EventKind::WakeupSent);
            CHECK(view.at(*sent).arg[0] == view.at(i).arg[2]);
        }
        CHECK(pairs.wakeups_sent == pairs.handoffs);
        // In the tree, the other thread is mostly busy or has a hand-off
        // pending: nearly every offer fails and the spawn is queued at home
        // (own-queue), after a compare-and-swap on the other thread's queue
        // word that the trace cannot show.
        CHECK(tree.own_queue >= 900);
        CHECK(tree.run_next == 0);
        // Nor does a seed thread search before it parks.
        CHECK(view.all(kindIs(EventKind::Search)).empty());
    } else {
        // Scaling: nobody is handed work; a spawn goes to its spawner's
        // run_next (every worker runs by now), and a parked thread is woken
        // to search only when nobody searches: a few wake-ups, not one per
        // spawn.
        CHECK(pairs.handoffs + tree.handoffs == 0);
        CHECK(pairs.run_next == pairs.spawns);
        CHECK(tree.run_next == tree.spawns);
        // Quiet: a handful. Beside a busy process main's thread waits for a
        // CPU between pairs for longer than the woken worker's search, which
        // gives up and parks, and the next spawn wakes it again: up to one
        // wake-up per pair (200 of 200 was seen), never more, since a spawn
        // wakes at most one thread and only while nobody searches.
        INFO("wake-ups sent during the pairs: " << pairs.wakeups_sent);
        if (loaded) CHECK(pairs.wakeups_sent <= kLesson15Pairs);
        else CHECK(pairs.wakeups_sent <= kLesson15Pairs / 2);
        // Both workers run from the start (startWorkers), and main's spawns
        // wake a parked one to search: a wake-up is sent in the pairs
        // (whether the woken worker gets a CPU before they end is the OS's
        // to say).
        CHECK(pairs.wakeups_sent >= 1);
        // A woken worker searches (FORMAT.md "Search": a begin, then found,
        // gave-up or completions) before it parks again, unless it finds
        // work without searching, or another thread is searching already:
        // at most half the threads search (Go's bound), so one of two. Then
        // that search was under way when the woken worker looked, so it ends
        // after the wake-up arrived. (Its begin record may come a moment
        // after the look, even after the park if the searcher is preempted
        // between its count and its record, but before the parked worker's
        // next record: with two workers nobody else could wake it.)
        for (const std::size_t i : view.all(kindIs(EventKind::WakeupReceived))) {
            const auto park = view.nextOnThread(i, kindIs(EventKind::Park));
            if (!park) continue; // woken to leave: the program ended
            const auto search = view.nextOnThread(i, kindIs(EventKind::Search));
            const auto ran = view.nextOnThread(i, kindIs(EventKind::Switch));
            if (search && *search < *park) continue;
            if (ran && *ran < *park) continue;
            const auto after = view.nextOnThread(*park, [](const TraceEvent&) { return true; });
            const std::int64_t until = after ? view.at(*after).time : std::numeric_limits<std::int64_t>::max();
            const std::int64_t woken = view.at(i).time;
            bool other_searching = false;
            for (const std::size_t b : view.all([&](const TraceEvent& e) {
                     return e.kind == EventKind::Search && e.small == static_cast<std::uint8_t>(SearchOp::Begin) &&
                            e.thread != view.at(i).thread && e.time < until;
                 })) {
                const auto ended = view.nextOnThread(b, kindIs(EventKind::Search));
                if (!ended || view.at(*ended).time >= woken) other_searching = true;
            }
            INFO("worker " << view.worker(view.at(i)) << " received a wake-up at record " << i
                           << " and parked again at record " << *park
                           << " without a search of its own or a fiber run, while nobody else searched");
            CHECK(other_searching);
        }
    }
}

// A lesson's checks.md (`slug`: its folder), parsed.
static fiberscope::viewer::checks::LessonChecks lessonChecks(const std::string& slug) {
    fiberscope::viewer::checks::LessonChecks lesson;
    std::string error;
    const bool parsed = fiberscope::viewer::checks::parseChecks(
        readFile(std::string(FIBERSCOPE_LESSONS_DIR) + "/" + slug + "/checks.md"), slug + "/checks.md", lesson, error);
    INFO(error);
    REQUIRE(parsed);
    return lesson;
}

// Lesson 15's checks.md, with its three preconditions.
static fiberscope::viewer::checks::LessonChecks lesson15Checks() {
    const auto lesson = lessonChecks("15-two-threads-slower");
    REQUIRE(lesson.preconditions.size() == 3);
    REQUIRE(lesson.preconditions[0].policy == fiberscope::viewer::checks::Precondition::Policy::Any);
    REQUIRE(lesson.preconditions[1].policy == fiberscope::viewer::checks::Precondition::Policy::Seed);
    REQUIRE(lesson.preconditions[2].policy == fiberscope::viewer::checks::Precondition::Policy::Scaling);
    return lesson;
}

// Runs lesson 15 as `fiberscope lesson 15` does: again, up to
// kLessonAttempts times, while the run misses a precondition. Its first
// (worker 1 started before the pairs) is the runtime's to keep
// (startWorkers): every run meets it. The seed's second (the woken worker
// gets a CPU during the pairs) is the OS's to grant: on a loaded machine
// four runs in a row may miss it, and then, as `fiberscope lesson` does,
// the last run is shown anyway, and said.
static std::optional<LessonRun> runLesson15Shown(const char* tag, const std::vector<std::string>& args) {
    namespace checks = fiberscope::viewer::checks;
    const auto lesson = lesson15Checks();
    const std::vector<checks::Precondition> started = {lesson.preconditions[0]};
    std::optional<LessonRun> run;
    std::string unmet;
    for (int attempt = 1; attempt <= fiberscope::viewer::kLessonAttempts; ++attempt) {
        run = tryRunLesson(LESSON15, tag, args, true);
        if (!run) return run;
        INFO("lesson 15 " << Catch::Detail::stringify(args) << ", run " << attempt);
        CHECK(checks::unmetPrecondition(started, run->trace) == "");
        unmet = checks::unmetPrecondition(lesson.preconditions, run->trace);
        if (unmet.empty()) break;
        WARN("lesson 15 " << Catch::Detail::stringify(args) << ", run " << attempt << ": " << unmet);
    }
    return run;
}

TEST_CASE("lesson 15: the seed's hand-offs wake the other thread for every spawn; scaling keeps spawns local",
          "[lessons][lesson15]") {
    // The lesson's default (seed), then the runtime's default policy, on
    // io_uring (the MSG_RING the lesson shows) where the kernel allows it.
    const std::vector<std::string> uring = {"--backend", "uring"};
    const auto seed = runLesson15Shown("15-seed", uring);
    const auto scaling = runLesson15Shown("15-scaling", {"--backend", "uring", "--scheduler", "scaling"});
    if (!seed || !scaling) {
        WARN("the kernel refuses io_uring here: lesson 15 runs on epoll instead");
    }
    const LessonRun seed_run = seed ? *seed : *runLesson15Shown("15-seed-epoll", {"--backend", "epoll"});
    const LessonRun scaling_run =
        scaling ? *scaling : *runLesson15Shown("15-scaling-epoll", {"--backend", "epoll", "--scheduler", "scaling"});
    REQUIRE(!ranScalingPolicy(View(seed_run.trace)));
    REQUIRE(ranScalingPolicy(View(scaling_run.trace)));
    // A run shown after four that missed a precondition (the machine was
    // busy: `fiberscope lesson` says so) is held to what a loaded run shows.
    const auto lesson = lesson15Checks();
    const bool seed_met = fiberscope::viewer::checks::unmetPrecondition(lesson.preconditions, seed_run.trace).empty();
    const bool scaling_met = fiberscope::viewer::checks::unmetPrecondition(lesson.preconditions, scaling_run.trace).empty();
    phenomenaOfLesson15(seed_run, !seed_met);
    phenomenaOfLesson15(scaling_run, !scaling_met);
    // Side by side (the viewer's Compare): the seed's storm of wake-ups
    // against the scaling policy's few.
    const Lesson15Part seed_pairs = countLesson15Part(View(seed_run.trace), "spawn and await", "pairs done");
    const Lesson15Part scaling_pairs = countLesson15Part(View(scaling_run.trace), "spawn and await", "pairs done");
    INFO("seed: " << seed_pairs << "\nscaling: " << scaling_pairs);
    if (scaling_met) CHECK(seed_pairs.wakeups_sent >= 2 * scaling_pairs.wakeups_sent);
    else WARN("four scaling runs in a row had main's thread kept off its CPU between pairs: not compared");
}

// Lesson 15 compares what its text says it compares, also on a busy
// machine: in each of 20 runs per policy beside a process that keeps a CPU
// busy, both workers are started before the pairs (its first precondition:
// startWorkers), and the trace has the records the text names
// (phenomenaOfLesson15). Its second precondition, the other worker waking during
// the pairs, is the OS's to grant, which beside a busy process on 2 CPUs it
// often does not within the pairs' fraction of a millisecond: counted and
// said, not required (the quiet test above tries four runs for it, as
// `fiberscope lesson` does, and says when none had it).
TEST_CASE("lesson 15 runs both policies on two workers, 20 runs each under load", "[lessons][lesson15]") {
    namespace checks = fiberscope::viewer::checks;
    const checks::LessonChecks lesson = lesson15Checks();
    const std::vector<checks::Precondition> started = {lesson.preconditions[0]};
    // The seed's second precondition, counted under both policies.
    checks::Precondition woke = lesson.preconditions[1];
    woke.policy = checks::Precondition::Policy::Any;
    const test::BusyCompetitor busy;
    for (const char* policy : {"seed", "scaling"}) {
        int woken = 0;
        for (int round = 0; round < 20; ++round) {
            INFO("run " << round + 1 << " of 20 beside a busy process, policy " << policy);
            const LessonRun run = runLesson(LESSON15, "15-load", {"--scheduler", policy});
            CHECK(checks::unmetPrecondition(started, run.trace) == "");
            woken += checks::unmetPrecondition({woke}, run.trace).empty();
            phenomenaOfLesson15(run, true);
        }
        WARN("lesson 15 beside a busy process, " << policy << ": the other worker woke during the pairs in " << woken
                                                 << " of 20 runs");
    }
}

// Lesson 16: the scaling policy's decisions. Asserted on fresh runs here
// and on the golden trace below. `loaded`: beside a process that keeps a
// CPU busy, where the woken worker may get no CPU before the burst ends.
static void phenomenaOfLesson16(const LessonRun& run, bool loaded) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "16-scaling-decisions");
    const std::vector<std::string> order = {"spawn burst", "burst done", "yielders start", "yielders done", "quiet",
                                            "quiet done"};
    for (std::size_t i = 1; i < order.size(); ++i) {
        INFO("checkpoint \"" << order[i - 1] << "\" comes before \"" << order[i] << "\"");
        REQUIRE(view.checkpoint(order[i - 1]) < view.checkpoint(order[i]));
    }
    REQUIRE(ranScalingPolicy(view));
    CHECK(view.all(kindIs(EventKind::ThreadStart)).size() == 2);
    for (std::size_t i : view.all(kindIs(EventKind::ThreadStart))) CHECK(i < view.checkpoint("spawn burst"));
    const auto between = [&](const std::string& from, const std::string& to, auto pred) {
        std::vector<std::size_t> found;
        for (std::size_t i = view.checkpoint(from) + 1; i < view.checkpoint(to); ++i)
            if (pred(view.at(i))) found.push_back(i);
        return found;
    };
    const auto scheduled = [](ScheduleHow how) {
        return [how](const TraceEvent& e) { return e.kind == EventKind::Schedule && e.small == static_cast<std::uint8_t>(how); };
    };
    // Nobody is handed work under scaling, anywhere in the run.
    CHECK(view.all(scheduled(ScheduleHow::IdleHandoff)).empty());

    // The burst: every spawn goes to main's run_next; a fiber displaced
    // from it goes down to the deque at once (own-queue), and only a fiber
    // that was in run_next is displaced (a searcher may have taken one
    // before the next spawn: then none is). Only while main spawns: once
    // it awaits, a task finishing on the other thread makes main ready
    // there (own-queue too), which a loaded machine makes common.
    const auto spawns = between("spawn burst", "burst done", kindIs(EventKind::FiberCreate));
    const auto run_next = between("spawn burst", "burst done", scheduled(ScheduleHow::RunNext));
    REQUIRE(!run_next.empty());
    // The spawning ends at main's first switch after the last run-next, its
    // await (the displaced fiber's own-queue record, and a wake-up, come
    // after that run-next record, before the switch).
    const auto spawning_end = view.nextOnThread(run_next.back(), kindIs(EventKind::Switch));
    auto displaced = between("spawn burst", "burst done", scheduled(ScheduleHow::OwnQueue));
    std::erase_if(displaced, [&](std::size_t d) { return spawning_end && d > *spawning_end; });
    INFO(spawns.size() << " spawns, " << run_next.size() << " run-next, " << displaced.size() << " displaced");
    CHECK(spawns.size() == 6);
    CHECK(run_next.size() == spawns.size());
    CHECK(displaced.size() <= spawns.size() - 1);
    for (std::size_t d : displaced) {
        const auto put = view.previousOnThread(d, scheduled(ScheduleHow::RunNext));
        REQUIRE(put);
        const auto before = view.previousOnThread(*put, scheduled(ScheduleHow::RunNext));
        INFO("record " << d << ": schedule how=own-queue of fiber " << view.at(d).arg[0]);
        REQUIRE(before);
        CHECK(view.at(d).arg[0] == view.at(*before).arg[0]); // the one the new spawn displaced
        CHECK(view.at(d).time == view.at(*put).time);
    }
    // A parked worker is woken to search, not one per spawn: a spawn wakes
    // one only while it is parked, nobody searching (so a second only where
    // the woken one gave up and parked before the next spawn: on a loaded
    // machine, where main waits for a CPU between spawns longer than a
    // search lasts, that may be every spawn, never more).
    const auto sent = between("spawn burst", "burst done", kindIs(EventKind::WakeupSent));
    CHECK(sent.size() >= 1);
    CHECK(sent.size() <= spawns.size());
    if (!loaded && sent.size() == spawns.size()) WARN("a wake-up for every spawn of the burst: was the machine busy?");
    for (const std::size_t s : sent) {
        // The target's last record before it: its park.
        std::optional<std::size_t> last;
        for (std::size_t i = s; i-- > 0;)
            if (view.worker(view.at(i)) == static_cast<std::int64_t>(view.at(s).arg[0])) {
                last = i;
                break;
            }
        INFO("wakeup-sent at record " << s << " to worker " << view.at(s).arg[0]);
        REQUIRE(last);
        // (A worker publishes that it is idle after its search gives up and
        // before its park record: a spawn in between finds it idle.)
        const TraceEvent l = view.at(*last);
        CHECK((l.kind == EventKind::Park ||
               (l.kind == EventKind::Search && l.small == static_cast<std::uint8_t>(SearchOp::GaveUp))));
    }
    // What a thief takes first is the oldest: task 0. (Whether worker 1
    // got a CPU in time to steal is the lesson's precondition.)
    const auto stolen = between("spawn burst", "burst done", kindIs(EventKind::StealOne));
    if (!stolen.empty()) CHECK(view.at(stolen.front()).arg[0] == view.fiber("task 0"));
    // The reference run shows the whole story: that steal, and a thief
    // taking half of the yielders' ring.
    if (run.golden) {
        CHECK(!stolen.empty());
        CHECK(!between("yielders start", "yielders done", kindIs(EventKind::StealHalf)).empty());
    }

    // The yielders: each of the 40 yields puts the yielder at the back of
    // its thread's ring (the record right after the switch), and a thread
    // takes from its ring the oldest: simulated here, ring by ring, with a
    // steal-half taking the older half off the victim's and queueing all
    // but the last on the thief's (which it runs).
    std::set<std::uint64_t> yielders;
    for (int i = 0; i < 4; ++i) yielders.insert(view.fiber("yielder " + std::to_string(i)));
    std::map<std::uint32_t, std::deque<std::uint64_t>> rings; // trace thread -> its ring, oldest first
    int yields = 0, from_ring = 0;
    std::vector<std::uint64_t> half; // the current steal-half's fibers
    std::uint32_t half_thread = 0;
    const std::size_t end = view.checkpoint("yielders done");
    for (std::size_t i = view.checkpoint("yielders start") + 1; i < end; ++i) {
        const TraceEvent e = view.at(i);
        INFO("record " << i << " on worker " << view.worker(e));
        if (e.kind != EventKind::StealHalf && !half.empty()) { // the steal ended: it runs the last one
            for (std::size_t k = 0; k + 1 < half.size(); ++k) rings[half_thread].push_back(half[k]);
            half.clear();
        }
        if (e.kind == EventKind::Switch && e.small == static_cast<std::uint8_t>(SwitchReason::Yield) && yielders.count(e.arg[0])) {
            ++yields;
            const auto queued = view.nextOnThread(i, [](const TraceEvent&) { return true; });
            REQUIRE(queued);
            CHECK(view.at(*queued).kind == EventKind::Schedule);
            CHECK(view.at(*queued).small == static_cast<std::uint8_t>(ScheduleHow::OwnQueue));
            CHECK(view.at(*queued).arg[0] == e.arg[0]);
        }
        if (e.kind == EventKind::Schedule && e.small == static_cast<std::uint8_t>(ScheduleHow::OwnQueue) &&
            yielders.count(e.arg[0])) {
            const auto yielded = view.previousOnThread(i, kindIs(EventKind::Switch));
            if (yielded && view.at(*yielded).arg[0] == e.arg[0]) rings[e.thread].push_back(e.arg[0]);
        }
        if (e.kind == EventKind::StealHalf) {
            auto& victim_ring = [&]() -> std::deque<std::uint64_t>& {
                for (auto& [thread, ring] : rings)
                    if (thread != e.thread && !ring.empty() && ring.front() == e.arg[0]) return ring;
                FAIL("steal-half of fiber " << e.arg[0] << " from worker " << e.arg[1] << ": not the oldest of another ring");
                return rings[e.thread];
            }();
            victim_ring.pop_front();
            half.push_back(e.arg[0]);
            half_thread = e.thread;
        }
        if (e.kind == EventKind::Switch && yielders.count(e.arg[1])) {
            auto& ring = rings[e.thread];
            const auto at = std::find(ring.begin(), ring.end(), e.arg[1]);
            if (at != ring.end()) {
                ++from_ring;
                INFO("switch to yielder " << e.arg[1] << " while " << ring.front() << " waited longer in the ring");
                CHECK(at == ring.begin());
                ring.erase(at);
            }
        }
    }
    INFO(yields << " yields, " << from_ring << " runs taken from a ring");
    CHECK(yields == 40);
    CHECK(from_ring >= 30);

    // Searches: on each thread a begin, then its end, before the thread's
    // next begin or park; `searchers` counts the searching threads (two
    // that run dry at the same moment may both begin).
    std::map<std::uint32_t, std::size_t> open;
    for (std::size_t i : view.all([](const TraceEvent& e) { return e.kind == EventKind::Search || e.kind == EventKind::Park; })) {
        const TraceEvent e = view.at(i);
        INFO("record " << i << " on worker " << view.worker(e));
        if (e.kind == EventKind::Park) {
            CHECK(open.count(e.thread) == 0);
        } else if (e.small == static_cast<std::uint8_t>(SearchOp::Begin)) {
            CHECK(open.count(e.thread) == 0);
            CHECK(e.arg[0] >= 1);
            CHECK(e.arg[0] <= 2);
            open[e.thread] = i;
        } else {
            CHECK(open.erase(e.thread) == 1);
            CHECK(e.arg[0] <= 1);
        }
    }
    // The quiet stretch: a thread out of work searched and gave up (the
    // search may have begun before it, as the yielders ran out).
    if (!loaded) CHECK(!between("quiet", "quiet done", [](const TraceEvent& e) {
                          return e.kind == EventKind::Search && e.small == static_cast<std::uint8_t>(SearchOp::GaveUp);
                      }).empty());
    CHECK(!between("quiet", "quiet done", kindIs(EventKind::Park)).empty());
}

TEST_CASE("lesson 16: run_next, the oldest to a thief, a FIFO ring of yielders, a search before parking",
          "[lessons][lesson16]") {
    namespace checks = fiberscope::viewer::checks;
    const auto lesson = lessonChecks("16-scaling-decisions");
    REQUIRE(lesson.preconditions.size() == 3); // worker 1 started; a steal-one in the burst; a steal-half among the yielders
    // Run as `fiberscope lesson 16` does: again while a run misses a
    // precondition (the woken worker got no CPU during the burst), up to
    // kLessonAttempts times; the last run is asserted on anyway.
    std::optional<LessonRun> run;
    std::string unmet;
    for (int attempt = 1; attempt <= fiberscope::viewer::kLessonAttempts; ++attempt) {
        run = tryRunLesson(LESSON16, "16", {"--backend", "uring"}, true);
        if (!run) run = runLesson(LESSON16, "16-epoll", {"--backend", "epoll"});
        unmet = checks::unmetPrecondition(lesson.preconditions, run->trace);
        if (unmet.empty()) break;
        WARN("lesson 16, run " << attempt << ": " << unmet);
    }
    // Four runs that missed a precondition: the machine is busy (as
    // `fiberscope lesson` says), and the last is held to a loaded run's claims.
    phenomenaOfLesson16(*run, !unmet.empty());
    CHECK(run->output.find("the tasks ran on threads") != std::string::npos);
}

TEST_CASE("lesson 16 beside a busy process, 10 runs", "[lessons][lesson16]") {
    const test::BusyCompetitor busy;
    for (int round = 0; round < 10; ++round) {
        INFO("run " << round + 1 << " of 10 beside a busy process");
        phenomenaOfLesson16(runLesson(LESSON16, "16-load"), true);
    }
}

// Lesson 17: a lock held across an I/O wait, a convoy. Asserted on fresh
// runs here and on the golden trace below.
static void phenomenaOfLesson17(const LessonRun& run) {
    const View view(run.trace);
    requireCheckpointsMatchNarrative(view, "17-find-the-problem");
    REQUIRE(view.checkpoint("serving") < view.checkpoint("served"));
    if (!run.golden) CHECK(run.output.find("all answered") != std::string::npos);
    const std::size_t from = view.checkpoint("serving"), to = view.checkpoint("served");
    std::vector<std::size_t> contended, handoffs;
    for (std::size_t i = from + 1; i < to; ++i) {
        if (view.at(i).kind == EventKind::MutexContended) contended.push_back(i);
        if (view.at(i).kind == EventKind::MutexHandoff) handoffs.push_back(i);
    }
    // The convoy: most of the 80 requests find the lock taken, and most
    // unlocks hand it to a waiter.
    INFO(contended.size() << " contended, " << handoffs.size() << " hand-offs");
    CHECK(contended.size() >= 40);
    CHECK(handoffs.size() >= 40);
    // Its cause: the unlocking fiber held the lock across its write. Before
    // each hand-off, that fiber's last switch away was an io-wait, after
    // the write it submitted (and its completion came back since).
    int under_lock = 0;
    for (std::size_t h : handoffs) {
        const std::uint64_t holder = view.at(h).arg[0];
        std::optional<std::size_t> away;
        for (std::size_t i = h; i-- > from;)
            if (view.at(i).kind == EventKind::Switch && view.at(i).arg[0] == holder) {
                away = i;
                break;
            }
        if (!away || view.at(*away).small != static_cast<std::uint8_t>(SwitchReason::IoWait)) continue;
        const auto submit = view.previousOnThread(*away, kindIs(EventKind::Submit));
        if (submit && view.at(*submit).arg[0] == holder) ++under_lock;
    }
    INFO(under_lock << " of the hand-offs came after the holder's own io-wait for its write");
    CHECK(under_lock * 10 >= static_cast<int>(handoffs.size()) * 9);
    // Every request wrote its audit line.
    std::size_t writes = 0;
    for (std::size_t i = from + 1; i < to; ++i) writes += view.at(i).kind == EventKind::Submit;
    CHECK(writes >= 80);
}

TEST_CASE("lesson 17: a lock held across a write makes a convoy, and the trace shows it", "[lessons][lesson17]") {
    phenomenaOfLesson17(runLesson(LESSON17, "17"));
    phenomenaOfLesson17(runLesson(LESSON17, "17-one", {"--threads", "1"}));
}

TEST_CASE("lesson 17 beside a busy process, 5 runs", "[lessons][lesson17]") {
    const test::BusyCompetitor busy;
    for (int round = 0; round < 5; ++round) {
        INFO("run " << round + 1 << " of 5 beside a busy process");
        phenomenaOfLesson17(runLesson(LESSON17, "17-load"));
    }
}

TEST_CASE("every lesson takes --threads N and --backend uring|epoll and rejects anything else with a one-line usage "
          "error",
          "[lessons][args]") {
    const std::map<int, std::string> lessons = lessonPrograms();
    REQUIRE(lessons.size() >= 15);
    const std::string output = tempDir() + "/fiberscope-test-lesson-" + std::to_string(getpid()) + "-args.out";
    const std::vector<std::vector<std::string>> bad = {{"--bogus"},
                                                       {"--threads"},
                                                       {"--threads", "0"},
                                                       {"--threads", "two"},
                                                       {"--threads", "2", "extra"},
                                                       {"--backend"},
                                                       {"--backend", "kqueue"},
                                                       {"--threads", "2", "--backend"},
                                                       {"--pin", "extra"}};
    for (const auto& [number, program] : lessons) {
        const char* exe = program.c_str();
        for (const auto& args : bad) {
            INFO(exe << " " << Catch::Detail::stringify(args));
            const Process p = runProcess(exe, args, {"FIBERSCOPE_TRACE="}, output);
            CHECK(WIFEXITED(p.status));
            CHECK(WEXITSTATUS(p.status) == 2);
            CHECK(std::count(p.output.begin(), p.output.end(), '\n') == 1);
            CHECK(p.output.find("usage: ") != std::string::npos);
        }
    }
}

// Every lesson on every configuration its arguments offer (2 and 4 threads,
// both policies, both backends), twice: once quiet, once beside a process
// that keeps a CPU busy (where the rare interleavings happen). Each run is
// a checking recording (tryRunLesson): it must exit 0 and its trace verify,
// records and model against the runtime's truth records.
TEST_CASE("every lesson on every configuration, quiet and under load, records a trace that verifies", "[lessons][verify]") {
    const std::map<int, std::string> lessons = lessonPrograms();
    REQUIRE(lessons.size() >= 15);
    for (const bool loaded : {false, true}) {
        // A competitor for the CPUs while `loaded`.
        std::optional<test::BusyCompetitor> busy;
        if (loaded) busy.emplace();
        for (const auto& [number, program] : lessons)
            for (const char* threads : {"2", "4"})
                for (const char* policy : {"seed", "scaling"})
                    for (const char* backend : {"uring", "epoll"}) {
                        INFO((loaded ? "beside a busy process" : "quiet"));
                        const std::string tag = std::string("verify-") + threads + policy + backend;
                        (void)tryRunLesson(program.c_str(), tag.c_str(), {"--threads", threads, "--scheduler", policy, "--backend", backend},
                                           /*may_lack_io_uring=*/true);
                    }
    }
    // And with the runtime's jitter points on (FIBERSCOPE_TEST_JITTER: a
    // stall, as a preemption would, between a decision and its record, a
    // pop and its switch...): where a record could follow its effect, a
    // stall there shows it (lesson 2's pop and steal-back, found so).
    for (const auto& [number, program] : lessons)
        for (const char* threads : {"2", "4"})
            for (const char* policy : {"seed", "scaling"}) {
                INFO("jitter on");
                const std::string tag = std::string("verify-jitter-") + threads + policy;
                (void)tryRunLesson(program.c_str(), tag.c_str(), {"--threads", threads, "--scheduler", policy},
                                   /*may_lack_io_uring=*/true, {"FIBERSCOPE_TEST_JITTER=100"});
            }
    // And pinned (--pin: each worker on a CPU of its own), at each lesson's defaults.
    for (const auto& [number, program] : lessons) {
        INFO("pinned");
        const std::optional<LessonRun> run = tryRunLesson(program.c_str(), "verify-pinned", {"--pin"}, /*may_lack_io_uring=*/true);
        if (!run) continue;
        bool marked = false;
        for (const TraceEvent& e : run->trace.events)
            marked |= e.kind == EventKind::Mark && run->trace.string(e.arg[0]).rfind("pinned: worker 0 to CPU ", 0) == 0;
        CHECK(marked);
    }
}

// ---------------------------------------------------------------------------
// Predict, then check (lessons/NN-*/checks.md, viewer/src/lessons/checks.hpp)

// Every lesson's checks.md parses; on fresh recordings (the lesson's default
// arguments, and each thread count its `threads:` line names) every
// question's answer evaluates and its `show` names an event of the trace;
// and the exercise's expectation is false on the unchanged lesson, so that
// `fiberscope lesson N --check` can fail.
TEST_CASE("every lesson's questions answer on fresh runs, and its exercise is not done yet", "[lessons][checks]") {
    namespace checks = fiberscope::viewer::checks;
    const std::map<int, std::string> programs = lessonPrograms();
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(FIBERSCOPE_LESSONS_DIR))
        if (std::filesystem::exists(entry.path() / "checks.md")) files.push_back(entry.path() / "checks.md");
    std::sort(files.begin(), files.end());
    CHECK(files.size() >= 6);
    for (const auto& file : files) {
        const std::string slug = file.parent_path().filename().string();
        const int number = std::atoi(slug.substr(0, 2).c_str());
        INFO("lesson " << slug);
        REQUIRE(programs.count(number) == 1);
        checks::LessonChecks lesson;
        std::string error;
        const bool parsed = checks::parseChecks(readFile(file.string()), slug + "/checks.md", lesson, error);
        INFO(error);
        REQUIRE(parsed);
        CHECK(lesson.questions.size() >= 2);
        CHECK(lesson.questions.size() <= 4);
        REQUIRE(lesson.has_exercise);
        CHECK(lesson.exercise.text.find("--check") != std::string::npos);
        std::vector<std::vector<std::string>> runs = {{}};
        for (int threads : lesson.threads) runs.push_back({"--threads", std::to_string(threads)});
        for (const auto& args : runs) {
            INFO("arguments: " << Catch::Detail::stringify(args));
            // A question asks about what the scheduler did, which a fresh run
            // shows nearly always but not surely (on a loaded machine under a
            // sanitizer a second worker's OS thread may never get to steal):
            // up to three runs, and the last is held to every question.
            const auto answersAll = [&](const LessonRun& run) {
                for (const checks::Question& q : lesson.questions) {
                    std::int64_t value = 0;
                    std::size_t index = 0;
                    std::string why;
                    if (!checks::evaluate(q.answer, run.trace, value, why) || !why.empty() ||
                        !checks::resolve(q.show, run.trace, index, why) || !why.empty())
                        return false;
                }
                return true;
            };
            LessonRun run = runLesson(programs.at(number).c_str(), ("checks-" + slug).c_str(), args);
            for (int attempt = 1; attempt < 3 && !answersAll(run); ++attempt) {
                WARN("lesson " << slug << ": a question found nothing to answer in run " << attempt << "; running it again");
                run = runLesson(programs.at(number).c_str(), ("checks-" + slug).c_str(), args);
            }
            for (const checks::Question& q : lesson.questions) {
                INFO("question at line " << q.line << ": " << q.text);
                std::int64_t value = 0;
                std::size_t index = 0;
                std::string why;
                CHECK(checks::evaluate(q.answer, run.trace, value, why));
                CHECK(why.empty());
                CHECK(checks::resolve(q.show, run.trace, index, why));
                CHECK(why.empty());
            }
            if (!args.empty()) continue;
            bool done = true;
            std::int64_t value = 0;
            std::string why;
            INFO("exercise: expect " << lesson.exercise.expect.text);
            const bool evaluated = checks::holds(lesson.exercise.expect, run.trace, done, value, why);
            INFO(why << " value " << value);
            CHECK(evaluated);
            CHECK_FALSE(done);
        }
    }
}

// ---------------------------------------------------------------------------
// The golden traces (assets/traces/lessonNN-<slug>.fstrace, assets/traces/README.md):
// one per lesson, recorded on a quiet machine, what the lesson panel's
// "Reference run" and `fiberscope lesson N --reference` show. Each reads back
// strictly, was recorded from its own lesson's program, shows the phenomena
// its lesson test asserts on a fresh run, and answers its checks.md
// questions (with its exercise not done).
TEST_CASE("every lesson's golden trace shows its lesson's phenomena and answers its questions", "[lessons][golden]") {
    namespace checks = fiberscope::viewer::checks;
    const std::map<int, void (*)(const LessonRun&)> phenomena = {
        {1, phenomenaOfLesson1},   {2, phenomenaOfLesson2},   {3, phenomenaOfLesson3},   {4, phenomenaOfLesson4},
        {5, phenomenaOfLesson5},   {6, phenomenaOfLesson6},   {7, phenomenaOfLesson7},   {8, phenomenaOfLesson8},
        {9, phenomenaOfLesson9},   {10, phenomenaOfLesson10}, {11, phenomenaOfLesson11}, {12, phenomenaOfLesson12},
        {13, phenomenaOfLesson13}, {14, [](const LessonRun& run) { checkLesson14(run, View(run.trace)); }},
        {15, [](const LessonRun& run) { phenomenaOfLesson15(run, false); }},
        {16, [](const LessonRun& run) { phenomenaOfLesson16(run, false); }},
        {17, phenomenaOfLesson17}};
    std::vector<std::filesystem::path> dirs;
    for (const auto& entry : std::filesystem::directory_iterator(FIBERSCOPE_LESSONS_DIR))
        if (std::filesystem::exists(entry.path() / "lesson.md")) dirs.push_back(entry.path());
    std::sort(dirs.begin(), dirs.end());
    REQUIRE(dirs.size() == phenomena.size());
    for (const auto& dir : dirs) {
        const std::string slug = dir.filename().string();
        const int number = std::atoi(slug.substr(0, 2).c_str());
        const std::string path = std::string(FIBERSCOPE_GOLDEN_TRACES) + "/lesson" + slug + ".fstrace";
        INFO("lesson " << slug << ", golden trace " << path);
        REQUIRE(phenomena.count(number) == 1);
        REQUIRE(std::filesystem::exists(path));
        // Small enough to ship: a course's worth stays well under a megabyte.
        CHECK(std::filesystem::file_size(path) < 300 * 1024);
        LessonRun run;
        run.golden = true;
        ReadError error;
        const bool read = readTrace(path, run.trace, error, {.strict = true});
        INFO(error.text());
        REQUIRE(read);
        REQUIRE(run.trace.header.complete);
        REQUIRE(run.trace.lost_events == 0);
        REQUIRE(run.trace.warnings.empty());
        requireConsistent(run.trace);
        // Recorded from this lesson's program (the viewer recognises it by that).
        REQUIRE(!run.trace.header.command_line.empty());
        CHECK(std::filesystem::path(run.trace.header.command_line[0]).filename().string() == "lesson" + slug);
        // Lessons 5 and 12 teach io_uring: their pictures are io_uring's.
        if (number == 5 || number == 12) CHECK(run.trace.header.backend == "io_uring");
        phenomena.at(number)(run);

        const std::filesystem::path checks_file = dir / "checks.md";
        if (!std::filesystem::exists(checks_file)) continue;
        checks::LessonChecks lesson;
        std::string why;
        REQUIRE(checks::parseChecks(readFile(checks_file.string()), slug + "/checks.md", lesson, why));
        for (const checks::Question& q : lesson.questions) {
            INFO("question at line " << q.line << ": " << q.text);
            std::int64_t value = 0;
            std::size_t index = 0;
            CHECK(checks::evaluate(q.answer, run.trace, value, why));
            CHECK(why.empty());
            CHECK(checks::resolve(q.show, run.trace, index, why));
            CHECK(why.empty());
        }
        if (lesson.has_exercise) {
            bool done = true;
            std::int64_t value = 0;
            INFO("exercise: expect " << lesson.exercise.expect.text);
            CHECK(checks::holds(lesson.exercise.expect, run.trace, done, value, why));
            CHECK_FALSE(done);
        }
    }
}
