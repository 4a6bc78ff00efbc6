// The `fiberscope` command line against bad input, table-driven: every case
// must exit nonzero (not by a signal) within a few seconds with exactly one
// line on stderr that names what is wrong, and nothing on stdout. Also the
// strict value parsers on their own, and the screenshot's private Xvfb dying
// with a fiberscope killed by SIGKILL.
#include <catch2/catch.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/values.hpp"
#include "../support/contradicting_trace.hpp"
#include "../support/trace_builder.hpp"

extern char** environ;

// Sanitized builds start slower and reserve terabytes of shadow address
// space, so they cannot run under an RLIMIT_AS.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define FIBERSCOPE_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FIBERSCOPE_TEST_SANITIZED 1
#endif
#endif
#ifndef FIBERSCOPE_TEST_SANITIZED
#define FIBERSCOPE_TEST_SANITIZED 0
#endif

namespace {

constexpr bool kSanitized = FIBERSCOPE_TEST_SANITIZED;

const std::string kTool = FIBERSCOPE_TOOL;
const std::string kSampleTrace = FIBERSCOPE_SAMPLE_TRACE;
const std::string kWork = FIBERSCOPE_CLI_WORK_DIR;

struct Outcome {
    bool exited = false; // false: killed by a signal, or by us at the timeout
    int code = -1;
    int signal = 0;
    bool timed_out = false;
    std::string out, err;
};

// The environment for the tool: no display, so nothing opens a window.
std::vector<std::string> toolEnvironment() {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e)
        if (std::strncmp(*e, "DISPLAY=", 8) != 0) env.emplace_back(*e);
    return env;
}

struct Spawned {
    pid_t pid = -1;
    int out = -1, err = -1;
};

// `address_space`: an RLIMIT_AS for the child in bytes (0: none), as
// `ulimit -v` would set it; then it is started with fork + exec, since
// posix_spawn cannot set a limit.
Spawned spawnTool(const std::vector<std::string>& args, rlim_t address_space = 0) {
    int out[2], err[2];
    REQUIRE(pipe2(out, O_CLOEXEC) == 0);
    REQUIRE(pipe2(err, O_CLOEXEC) == 0);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    std::vector<std::string> argv_strings{kTool};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& s : argv_strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings = toolEnvironment();
    std::vector<char*> envp;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    Spawned spawned;
    int rc = 0;
    if (address_space == 0) {
        rc = posix_spawn(&spawned.pid, kTool.c_str(), &actions, nullptr, argv.data(), envp.data());
    } else {
        spawned.pid = fork();
        if (spawned.pid == 0) {
            const rlimit limit{address_space, address_space};
            dup2(out[1], STDOUT_FILENO);
            dup2(err[1], STDERR_FILENO);
            const int null = open("/dev/null", O_RDONLY);
            dup2(null, STDIN_FILENO);
            if (setrlimit(RLIMIT_AS, &limit) == 0) execve(kTool.c_str(), argv.data(), envp.data());
            _exit(127);
        }
        rc = spawned.pid < 0 ? errno : 0;
    }
    posix_spawn_file_actions_destroy(&actions);
    close(out[1]);
    close(err[1]);
    REQUIRE(rc == 0);
    spawned.out = out[0];
    spawned.err = err[0];
    return spawned;
}

// Runs the tool to completion, killing it at the timeout.
Outcome runTool(const std::vector<std::string>& args, std::chrono::milliseconds timeout = std::chrono::seconds(10),
                rlim_t address_space = 0) {
    const Spawned child = spawnTool(args, address_space);
    Outcome outcome;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    pollfd fds[2] = {{child.out, POLLIN, 0}, {child.err, POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            outcome.timed_out = true;
            kill(child.pid, SIGKILL);
            break;
        }
        if (poll(fds, 2, static_cast<int>(left.count())) < 0) continue;
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char buffer[4096];
            const ssize_t got = read(fds[i].fd, buffer, sizeof buffer);
            if (got > 0) {
                (i == 0 ? outcome.out : outcome.err).append(buffer, static_cast<std::size_t>(got));
            } else {
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    close(child.out);
    close(child.err);
    int status = 0;
    while (waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {}
    outcome.exited = WIFEXITED(status);
    if (outcome.exited) outcome.code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
    return outcome;
}

std::string shellWords(const std::vector<std::string>& args) {
    std::string text = "fiberscope";
    for (const auto& a : args) text += " '" + (a.size() > 80 ? a.substr(0, 80) + "..." : a) + "'";
    return text;
}

std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void copyFile(const std::string& from, const std::string& to) {
    std::ofstream(to, std::ios::binary | std::ios::trunc) << readFile(from);
}

struct BadInput {
    std::vector<std::string> args;
    std::vector<std::string> needles; // each must appear in the one stderr line
    int code = 2;                     // 2 a usage error, 1 a bad file
};

// A scratch directory with a copy of the sample trace (so a case that
// wrongly overwrote its input would not damage the source tree) and a copy
// of a program for `record` to be asked to overwrite.
struct Scratch {
    std::string dir = kWork;
    std::string trace = kWork + "/t.fstrace";
    std::string trace_link = kWork + "/link.fstrace"; // a hard link to `trace`
    std::string junk = kWork + "/junk.fstrace";
    std::string missing = kWork + "/no-such.fstrace";
    std::string program = kWork + "/prog";
    std::string trace_bytes, program_bytes;
    Scratch() {
        std::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str());
        copyFile(kSampleTrace, trace);
        REQUIRE(link(trace.c_str(), trace_link.c_str()) == 0);
        std::ofstream(junk) << "this is not a trace\n";
        copyFile("/bin/true", program);
        chmod(program.c_str(), 0755);
        trace_bytes = readFile(trace);
        program_bytes = readFile(program);
        REQUIRE(!trace_bytes.empty());
    }
};

} // namespace

TEST_CASE("the value parsers are strict", "[cli]") {
    using namespace fiberscope::cli;
    std::int64_t v = 0;
    std::string error;

    SECTION("whole numbers") {
        CHECK(parseWholeNumber("42", 1, 100, v, error));
        CHECK(v == 42);
        for (const char* bad : {"", "4294967297", "0", "101", "-1", "+5", " 5", "5 ", "5x", "0x10", "1e3", "99999999999999999999999"}) {
            INFO(bad);
            CHECK_FALSE(parseWholeNumber(bad, 1, 100, v, error));
            CHECK(error.find('"') != std::string::npos);
        }
    }
    SECTION("times") {
        struct Good {
            const char* text;
            std::int64_t ns;
        };
        for (const Good good : {Good{"3ms", 3'000'000}, Good{"250us", 250'000}, Good{"1.5s", 1'500'000'000}, Good{"20ns", 20},
                                Good{"2", 2'000'000}, Good{"0.5", 500'000}, Good{"1e3ns", 1000}, Good{"9.2e18ns", 9'200'000'000'000'000'000}}) {
            INFO(good.text);
            REQUIRE(parseTime(good.text, TimeSign::positive, v, error));
            CHECK(v == good.ns);
        }
        for (const char* bad : {"", "3parsecs", "ms", "nan", "inf", "-inf", "infms", "1e400", "1e300s", "9.3e18ns", "3 ms",
                                "3MS", "0x10ms", "--3ms", "1e", "3ms3"}) {
            INFO(bad);
            CHECK_FALSE(parseTime(bad, TimeSign::any, v, error));
            CHECK(error.find(bad) != std::string::npos);
        }
        CHECK_FALSE(parseTime("0", TimeSign::positive, v, error));
        CHECK_FALSE(parseTime("-1ms", TimeSign::positive, v, error));
        CHECK(parseTime("0", TimeSign::non_negative, v, error));
        CHECK_FALSE(parseTime("-1ns", TimeSign::non_negative, v, error));
        CHECK(parseTime("-1ms", TimeSign::any, v, error));
        CHECK(v == -1'000'000);
    }
    SECTION("ranges") {
        std::int64_t a = 0, b = 0;
        REQUIRE(parseTimeRange("2ms:5ms", a, b, error));
        CHECK((a == 2'000'000 && b == 5'000'000));
        REQUIRE(parseTimeRange("0:20", a, b, error));
        CHECK(b == 20'000'000);
        for (const char* bad : {"0:1e400", "-inf:inf", "nan:1", "5ms:2ms", "2ms:2ms", "2ms", "1:2:3", ":", "", "1ms:",
                                "-9e18ns:9e18ns"}) {
            INFO(bad);
            CHECK_FALSE(parseTimeRange(bad, a, b, error));
        }
    }
    SECTION("sizes") {
        int w = 0, h = 0;
        REQUIRE(parseSize("1600x900", 320, 8192, w, h, error));
        CHECK((w == 1600 && h == 900));
        for (const char* bad : {"1600x900junk", "huge", "1600x", "x900", "-1600x900", "100x100", "99999x900",
                                "4294968896x900", "1600X900", "1600x900x2", " 1600x900"}) {
            INFO(bad);
            CHECK_FALSE(parseSize(bad, 320, 8192, w, h, error));
        }
    }
    SECTION("messages are printable and short") {
        const std::string evil = "\x1b]52;c;aGVsbG8=\a" + std::string(10000, 'x');
        CHECK_FALSE(parseTime(evil, TimeSign::any, v, error));
        CHECK(error.find('\x1b') == std::string::npos);
        CHECK(error.find('\a') == std::string::npos);
        CHECK(error.size() < 200);
    }
}

TEST_CASE("bad command lines get one line naming the problem and a nonzero exit", "[cli]") {
    const Scratch s;
    const std::string& t = s.trace;
    const std::string png = s.dir + "/out.png";
    const std::string huge(100000, '7'); // under MAX_ARG_STRLEN (128 KiB)
    const std::vector<BadInput> cases = {
        // The top level.
        {{"frobnicate"}, {"unknown command 'frobnicate'"}},
        {{"--frobnicate"}, {"unknown option '--frobnicate'"}},
        {{"help", "frobnicate"}, {"unknown command 'frobnicate'"}},
        {{"--frobnicate", "stats", t}, {"unknown option '--frobnicate'"}},
        {{"frobnicate", "record", "--", s.program}, {"unknown command 'frobnicate'"}},
        // Files.
        {{"stats", s.missing}, {s.missing}, 1},
        {{"stats", s.dir}, {s.dir, "directory"}, 1},
        {{"stats", "/dev/null"}, {"/dev/null", "not a regular file"}, 1},
        {{"stats", s.junk}, {"junk.fstrace"}, 1},
        {{"stats", s.dir + "/a\nb"}, {"a\\x0ab", "cannot open"}, 1},
        {{"view", s.dir + "/a\x1b[2Jb"}, {"a\\x1b[2Jb"}, 1},
        {{"timeline", s.missing}, {s.missing}, 1},
        {{"timeline", s.dir}, {"directory"}, 1},
        {{"export", s.missing, "-o", s.dir + "/x.json"}, {s.missing}, 1},
        {{"view", s.missing}, {s.missing}, 1},
        {{"view", s.dir}, {"directory"}, 1},
        {{"view", t, "--compare", s.missing}, {s.missing}, 1},
        {{"screenshot", s.missing, "-o", png}, {s.missing}, 1},
        {{"screenshot", s.dir, "-o", png}, {"directory"}, 1},
        // Missing and extra arguments.
        {{"stats"}, {"no trace file given"}},
        {{"stats", t, t}, {"is extra"}},
        {{"stats", "--frobnicate", t}, {"unknown option '--frobnicate'"}},
        {{"stats", "-o", "x", t}, {"unknown option '-o'"}},
        {{"stats", t, "--top"}, {"--top"}},
        {{"timeline"}, {"no trace file given"}},
        {{"export", t}, {"no output file given"}},
        {{"export", t, "-o"}, {"--output"}},
        {{"view", t, t}, {"one trace at a time"}},
        {{"view", "--frobnicate"}, {"unknown option '--frobnicate'"}},
        {{"view", "--live"}, {"--live needs a program to run"}},
        {{"view", "-o", "x.fstrace", t}, {"-o only goes with --live"}},
        {{"view", t, "--", "prog"}, {"a program to run needs --live"}},
        {{"view", "--compare", t}, {"--compare needs a FILE"}},
        {{"view", "--live", "--compare", t, "--", s.program}, {"--compare goes with a FILE"}},
        {{"view", "--live", "-o", s.program, "--", s.program}, {"-o"}},
        {{"screenshot", "--live", "-o", png}, {"--live needs a program to run"}},
        {{"screenshot", "--live", "--", s.program}, {"-o out.png"}},
        {{"screenshot", t, "-o", png, "--after", "1s"}, {"only go with --live"}},
        {{"screenshot", "--live", "-o", png, "--after", "-1s", "--", s.program}, {"--after"}},
        {{"screenshot"}, {"which trace"}},
        {{"screenshot", t}, {"-o out.png"}},
        {{"screenshot", t, "-o", png, "--range"}, {"--range"}},
        {{"screenshot", t, "-o", png, "--cursor"}, {"--cursor"}},
        {{"lessons", "extra"}, {"takes no arguments"}},
        {{"lesson"}, {"which lesson"}},
        {{"lesson", "1", "2"}, {"is extra"}},
        {{"lesson", "1", "--threads"}, {"--threads"}},
        {{"record"}, {"no program to run"}},
        {{"record", "-o"}, {"--output"}},
        {{"record", "--frobnicate", s.program}, {"unknown option '--frobnicate'"}},
        {{"benchmark", "extra"}, {"takes no arguments"}},
        // Numbers: strict, range-checked, no wraparound.
        {{"lesson", "4294967297"}, {"no lesson 4294967297"}},
        {{"lesson", "999"}, {"no lesson 999"}},
        {{"lesson", "0"}, {"'0' is not a lesson number"}},
        {{"lesson", "1x"}, {"'1x' is not a lesson number"}},
        {{"lesson", "one"}, {"'one' is not a lesson number"}},
        {{"lesson", "99999999999999999999999"}, {"is not a lesson number"}},
        {{"lesson", "1", "--threads", "0"}, {"--threads", "\"0\"", "1 to 256"}},
        {{"lesson", "1", "--threads", "257"}, {"--threads", "\"257\""}},
        {{"lesson", "1", "--threads", "4294967297"}, {"--threads", "out of range"}},
        {{"lesson", "1", "--threads", "-1"}, {"--threads", "\"-1\""}},
        {{"lesson", "1", "--threads", "2x"}, {"--threads", "not a whole number"}},
        {{"lesson", "1", "--backend", "kqueue"}, {"--backend", "kqueue", "uring or epoll"}},
        {{"lesson", "1", "--scheduler", "fifo"}, {"--scheduler", "fifo", "seed or scaling"}},
        {{"lesson", "1", "--reference", "--scheduler", "seed"}, {"--reference", "--scheduler"}},
        {{"lesson", "1", "-o", s.dir}, {"-o", "directory"}},
        {{"stats", t, "--top", "0"}, {"--top", "\"0\""}},
        {{"stats", t, "--top", "-5"}, {"--top", "\"-5\""}},
        {{"stats", t, "--top", "18446744073709551617"}, {"--top", "out of range"}},
        {{"stats", t, "--top="}, {"--top"}},
        {{"stats", t, "--top", huge}, {"--top", "out of range"}},
        {{"records", t, "--kind", "stael"}, {"no record kind is named 'stael'", "did you mean 'steal'?", "records --help"}},
        {{"records", t, "--kind", "a\x1b[2Jb"}, {"a\\x1b[2Jb"}},
        {{"records", t, "--from", "3parsecs"}, {"--from", "3parsecs"}},
        {{"records", t, "--from", "2ms", "--to", "1ms"}, {"--to is before --from"}},
        {{"records", t, "--limit", "0"}, {"--limit"}},
        {{"records", t, "--fiber", "-1"}, {"--fiber"}},
        {{"records"}, {"no trace file given"}},
        {{"records", s.missing}, {s.missing}, 1},
        {{"timeline", t, "--rows", "zero"}, {"--rows", "zero"}},
        {{"timeline", t, "--rows", "0"}, {"--rows"}},
        {{"timeline", t, "--rows", "1000001"}, {"--rows", "out of range"}},
        {{"timeline", t, "--rows", "4294967297"}, {"--rows", "out of range"}},
        {{"benchmark", "--events", "5"}, {"--events", "out of range"}},
        {{"benchmark", "--events", "1e9"}, {"--events", "not a whole number"}},
        {{"benchmark", "--events", "18446744073709551616"}, {"--events", "out of range"}},
        // Durations.
        {{"timeline", t, "--bucket", "3parsecs"}, {"--bucket", "3parsecs", "is not a duration"}},
        {{"timeline", t, "--bucket", "0"}, {"--bucket", "positive"}},
        {{"timeline", t, "--bucket", "-1ms"}, {"--bucket", "positive"}},
        {{"timeline", t, "--bucket", "nan"}, {"--bucket", "finite"}},
        {{"timeline", t, "--bucket", "inf"}, {"--bucket", "finite"}},
        {{"timeline", t, "--bucket", "1e400"}, {"--bucket", "out of range"}},
        {{"timeline", t, "--bucket", "1e300s"}, {"--bucket", "out of range"}},
        {{"timeline", t, "--bucket", ""}, {"--bucket"}},
        {{"screenshot", t, "-o", png, "--cursor", "3parsecs"}, {"--cursor", "\"3parsecs\" is not a duration", "3ms"}},
        {{"screenshot", t, "-o", png, "--cursor", "-1ms"}, {"--cursor", "-1ms"}},
        {{"screenshot", t, "-o", png, "--cursor", "nan"}, {"--cursor", "nan"}},
        {{"screenshot", t, "-o", png, "--cursor", "1e400"}, {"--cursor", "out of range"}},
        {{"screenshot", t, "-o", png, "--cursor", "\x1b]52;c;aGVsbG8=\a"}, {"--cursor", "\\x1b"}},
        // Ranges: these two used to spin forever.
        {{"screenshot", t, "-o", png, "--range", "0:1e400"}, {"--range", "out of range"}},
        {{"screenshot", t, "-o", png, "--range", "-inf:inf"}, {"--range", "finite"}},
        {{"screenshot", t, "-o", png, "--range=-inf:inf"}, {"--range", "finite"}},
        {{"screenshot", t, "-o", png, "--range", "5ms:2ms"}, {"--range", "does not end after it starts"}},
        {{"screenshot", t, "-o", png, "--range", "2ms"}, {"--range", "START:END"}},
        {{"screenshot", t, "-o", png, "--range", "1:2:3"}, {"--range", "START:END"}},
        {{"screenshot", t, "-o", png, "--range", "nan:1ms"}, {"--range", "finite"}},
        {{"screenshot", t, "-o", png, "--range", "-9e18ns:9e18ns"}, {"--range", "too wide"}},
        // Sizes, panels, lessons.
        {{"screenshot", t, "-o", png, "--size", "1600x900junk"}, {"--size", "1600x900junk"}},
        {{"screenshot", t, "-o", png, "--size", "huge"}, {"--size", "huge"}},
        {{"screenshot", t, "-o", png, "--size", "-1600x900"}, {"--size"}},
        {{"screenshot", t, "-o", png, "--size", "100x100"}, {"--size", "320 to 8192"}},
        {{"screenshot", t, "-o", png, "--size", "4294968896x900"}, {"--size"}},
        {{"screenshot", t, "-o", png, "--panel", "nope"}, {"--panel", "nope", "state"}},
        {{"screenshot", t, "-o", png, "--lesson", "99"}, {"--lesson", "no lesson 99"}},
        {{"screenshot", t, "-o", png, "--lesson", "0"}, {"--lesson", "\"0\""}},
        {{"screenshot", t, "-o", png, "--lesson", "4294967297"}, {"--lesson", "out of range"}},
        {{"screenshot", t, "-o", png, "--size", "1600x900", "--size", "800x600"}, {"--size"}},
        // Formats.
        {{"export", "--format", "svg", t, "-o", s.dir + "/out.svg"}, {"unknown format 'svg'"}},
        // No silent overwriting of an input, however the path is spelled.
        {{"export", t, "-o", t}, {"-o", "input trace"}},
        {{"export", t, "-o", s.dir + "/./t.fstrace"}, {"input trace"}},
        {{"export", t, "-o", s.trace_link}, {"input trace"}},
        {{"export", t, "-o", s.dir}, {"directory"}},
        {{"screenshot", t, "-o", t}, {"-o", "input trace"}},
        {{"screenshot", s.trace_link, "-o", t}, {"input trace"}},
        {{"record", "-o", s.program, "--", s.program}, {"-o", "the program to run"}},
        {{"record", "-o", s.dir, "--", s.program}, {"-o", "directory"}},
        // Outputs nobody can write (not even root can create a file in
        // /proc): found before anything is read, run or drawn.
        {{"record", "-o", "/proc/fiberscope-test.fstrace", "--", s.program}, {"cannot create the trace /proc/fiberscope-test.fstrace", "nothing was run"}, 1},
        {{"record", "-o", s.dir + "/no-such-dir/x.fstrace", "--", s.program}, {"no-such-dir/x.fstrace", "No such file"}, 1},
        {{"export", t, "-o", "/proc/fiberscope-test.json"}, {"cannot create the export", "choose another -o"}, 1},
        {{"screenshot", t, "-o", "/proc/fiberscope-test.png"}, {"cannot create the picture", "choose another -o"}, 1},
    };
    const auto started = std::chrono::steady_clock::now();
    for (const BadInput& c : cases) {
        const Outcome o = runTool(c.args);
        INFO(shellWords(c.args) << "\nexit " << o.code << " signal " << o.signal << "\nstderr: " << o.err << "\nstdout: " << o.out);
        CHECK_FALSE(o.timed_out);
        CHECK(o.exited);
        CHECK(o.code == c.code);
        CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
        CHECK((!o.err.empty() && o.err.back() == '\n'));
        CHECK(o.err.size() < 400);
        CHECK(o.err.find('\x1b') == std::string::npos);
        CHECK(o.out.empty());
        for (const std::string& needle : c.needles) CHECK(o.err.find(needle) != std::string::npos);
    }
    // The inputs the cases tried to overwrite are intact.
    CHECK(readFile(s.trace) == s.trace_bytes);
    CHECK(readFile(s.program) == s.program_bytes);
    // Fast: no case waits for anything.
    CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(kSanitized ? 60 : 20));
}

// `lesson N --check` for a lesson without an exercise to check is a usage
// error, and a checks.md that does not parse names its line; both before
// the lesson's program runs (a course in a scratch directory, whose lessons
// have no programs at all).
TEST_CASE("lesson --check needs an exercise", "[cli]") {
    const Scratch s;
    const std::string course = s.dir + "/course";
    for (const char* lesson : {"01-no-checks", "02-no-exercise", "03-bad-checks"}) {
        REQUIRE(std::system(("mkdir -p '" + course + "/" + lesson + "'").c_str()) == 0);
        std::ofstream(course + "/" + lesson + "/lesson.md") << "# Lesson " << lesson[1] << " \xE2\x80\x94 Test\n\nA test.\n";
    }
    std::ofstream(course + "/02-no-exercise/checks.md")
        << "### Q: How many?\nanswer: count steal\nshow: first steal\nwhy: because.\n";
    std::ofstream(course + "/03-bad-checks/checks.md") << "## Exercise\nChange it.\nexpect: count stael == 0\nsays: s\n";
    REQUIRE(setenv("FIBERSCOPE_LESSONS", course.c_str(), 1) == 0);
    struct Row {
        std::vector<std::string> args;
        std::vector<std::string> needles;
        int code = 2;
    };
    for (const Row& row : {
             Row{{"lesson", "1", "--check"}, {"fiberscope lesson:", "lesson 1 has no exercise to check (no checks.md)"}},
             Row{{"lesson", "2", "--check"}, {"fiberscope lesson:", "lesson 2's checks.md has no exercise"}},
             Row{{"lesson", "3", "--check"}, {"03-bad-checks/checks.md:3: unknown record kind 'stael'"}, 1},
         }) {
        const Outcome o = runTool(row.args);
        INFO(shellWords(row.args) << "\nexit " << o.code << "\nstderr: " << o.err << "\nstdout: " << o.out);
        CHECK(o.exited);
        CHECK(o.code == row.code);
        CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
        CHECK(o.out.empty());
        for (const std::string& needle : row.needles) CHECK(o.err.find(needle) != std::string::npos);
    }
    unsetenv("FIBERSCOPE_LESSONS");
}

// An output that cannot be written, or a lesson program that is not built,
// is found before anything runs or is printed: `record -o /proc/x.fstrace
// -- PROGRAM` used to run PROGRAM untraced, side effects and all, and then
// fail; `lesson N -o` printed the narrative and ran the lesson first. Each
// program here would leave a marker file behind had it run.
TEST_CASE("nothing runs and nothing is printed before the files are checked", "[cli]") {
    const Scratch s;
    const std::string marker = s.dir + "/ran";
    const auto ran = [&] { return access(marker.c_str(), F_OK) == 0; };
    const std::string proc = "/proc/fiberscope-test.fstrace", nodir = s.dir + "/no-such-dir/x.fstrace";
    const std::vector<std::string> touch = {"/bin/sh", "-c", "touch '" + marker + "'"};
    const auto with = [](std::vector<std::string> args, const std::vector<std::string>& program) {
        args.push_back("--");
        args.insert(args.end(), program.begin(), program.end());
        return args;
    };
    // The course: lesson 1's program would leave the marker; lesson 2 has none built.
    const std::string course = s.dir + "/course", bin = s.dir + "/bin";
    for (const char* lesson : {"01-marker", "02-unbuilt"}) {
        REQUIRE(std::system(("mkdir -p '" + course + "/" + lesson + "' '" + bin + "'").c_str()) == 0);
        std::ofstream(course + "/" + lesson + "/lesson.md") << "# Lesson " << lesson[1] << " \xE2\x80\x94 Test\n\nThe narrative.\n";
    }
    std::ofstream(bin + "/lesson01-marker") << "#!/bin/sh\ntouch '" << marker << "'\n";
    REQUIRE(chmod((bin + "/lesson01-marker").c_str(), 0755) == 0);
    REQUIRE(mkdir((s.dir + "/picture.png").c_str(), 0755) == 0); // where lesson -o picture.fstrace --no-view draws
    REQUIRE(setenv("FIBERSCOPE_LESSONS", course.c_str(), 1) == 0);
    REQUIRE(setenv("FIBERSCOPE_LESSON_BIN", bin.c_str(), 1) == 0);
    struct Row {
        std::vector<std::string> args;
        std::vector<std::string> needles;
    };
    for (const Row& row : {
             Row{with({"record", "-o", proc}, touch), {"fiberscope record:", "cannot create the trace " + proc, "nothing was run"}},
             Row{with({"record", "-o", nodir}, touch), {"cannot create the trace " + nodir, "No such file or directory"}},
             Row{with({"record", "--view", "-o", proc}, touch), {"cannot create the trace", "nothing was run"}},
             Row{with({"view", "--live", "-o", proc}, touch), {"fiberscope view:", "cannot create the trace", "nothing was run"}},
             Row{with({"screenshot", "--live", "--trace", proc, "-o", s.dir + "/x.png"}, touch), {"--trace", "nothing was run"}},
             Row{with({"screenshot", "--live", "--trace", s.dir + "/x.fstrace", "-o", "/proc/fiberscope-test.png"}, touch),
                 {"cannot create the picture", "nothing was run"}},
             Row{{"lesson", "1", "-o", proc}, {"fiberscope lesson:", "cannot create the trace " + proc, "nothing was run"}},
             Row{{"lesson", "1", "-o", nodir, "--no-view"}, {"cannot create the trace " + nodir}},
             Row{{"lesson", "1", "-o", s.dir + "/picture.fstrace", "--no-view"}, {"the picture " + s.dir + "/picture.png", "directory"}},
             Row{{"lesson", "2"}, {"fiberscope lesson:", "lesson 2's program", "is not built"}},
             Row{{"lesson", "2", "-o", proc}, {"is not built"}},
             Row{{"lesson", "1", "--reference", "--no-view"}, {"lesson01-marker.fstrace", "cannot open"}},
         }) {
        std::remove(marker.c_str());
        const Outcome o = runTool(row.args);
        INFO(shellWords(row.args) << "\nexit " << o.code << "\nstderr: " << o.err << "\nstdout: " << o.out);
        CHECK(o.exited);
        CHECK(o.code == 1);
        CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
        CHECK(o.out.empty()); // no narrative, no timeline
        for (const std::string& needle : row.needles) CHECK(o.err.find(needle) != std::string::npos);
        CHECK_FALSE(ran());
    }
    CHECK(access("/proc/fiberscope-test.fstrace", F_OK) != 0);
    // The marker works: with an output it can write, each program runs (and,
    // being no fiberscope program, writes no trace). No file the checks
    // created is left where the program did not write one.
    for (const auto& args : {with({"record", "-o", s.dir + "/ok.fstrace"}, touch), std::vector<std::string>{"lesson", "1", "-o", s.dir + "/ok.fstrace"}}) {
        std::remove(marker.c_str());
        const Outcome o = runTool(args);
        INFO(shellWords(args) << "\nexit " << o.code << "\nstderr: " << o.err << "\nstdout: " << o.out);
        CHECK(ran());
        CHECK(access((s.dir + "/ok.fstrace").c_str(), F_OK) != 0);
    }
    unsetenv("FIBERSCOPE_LESSONS");
    unsetenv("FIBERSCOPE_LESSON_BIN");
}

TEST_CASE("the documented forms parse", "[cli]") {
    const Scratch s;
    // Help is generated, goes to stdout, and exits 0.
    for (const char* command : {"record", "stats", "records", "export", "timeline", "view", "screenshot", "lesson", "lessons", "benchmark"}) {
        const Outcome o = runTool({command, "--help"});
        INFO(command << ": " << o.err);
        CHECK(o.code == 0);
        CHECK(o.out.find(std::string("usage: fiberscope ") + command) != std::string::npos);
        const Outcome h = runTool({"help", command});
        CHECK(h.code == 0);
        CHECK(h.out == o.out);
    }
    const Outcome top = runTool({"--help"});
    CHECK(top.code == 0);
    CHECK(top.out.find("commands:") != std::string::npos);
    const Outcome version = runTool({"--version"});
    CHECK(version.code == 0);
    CHECK(version.out.rfind("fiberscope ", 0) == 0);
    // Times with units, and bare numbers as milliseconds.
    for (const char* bucket : {"1ms", "250us", "0.5", "20000ns", "1s"}) {
        const Outcome o = runTool({"timeline", s.trace, "--bucket", bucket, "--rows", "5"});
        INFO(bucket << ": " << o.err);
        CHECK(o.code == 0);
    }
    const Outcome equals = runTool({"timeline", s.trace, "--bucket=1ms", "--rows=5"});
    CHECK(equals.code == 0);
    const Outcome stats = runTool({"stats", "--top", "3", s.trace});
    CHECK(stats.code == 0);
    // records: one line per record, every field by the record table's name.
    const Outcome records = runTool({"records", s.trace, "--kind", "fiber-create,switch", "--limit", "3"});
    CHECK(records.code == 0);
    CHECK(records.out.find("fiber-create fiber=") != std::string::npos);
    CHECK(records.out.find(" parent=") != std::string::npos);
    CHECK(records.out.find("more records match") != std::string::npos);
    CHECK(std::count(records.out.begin(), records.out.end(), '\n') == 4);
    const Outcome dashed = runTool({"stats", "--", s.trace});
    CHECK(dashed.code == 0);
    // A file named like a command is still a file.
    copyFile(s.trace, s.dir + "/lessons");
    const Outcome named = runTool({"stats", s.dir + "/lessons"});
    CHECK(named.code == 0);
    // export to standard output does not count as overwriting anything.
    const Outcome json = runTool({"export", s.trace, "-o", "-"});
    CHECK(json.code == 0);
    CHECK(json.out.rfind("{\"traceEvents\":[", 0) == 0);
    // record passes everything after the program's name to it, options included.
    const Outcome record = runTool({"record", "-o", s.dir + "/r.fstrace", "/bin/sh", "-c", "exit 3"});
    CHECK(record.code == 3);
    const Outcome dashes = runTool({"record", "-o", s.dir + "/r.fstrace", "--", "/bin/sh", "-c", "exit 4", "--", "x"});
    CHECK(dashes.code == 4);
}

// Issue 35: numbers read off a trace that contradicts itself are not to be
// trusted, and whoever reads them is told so: stats and export add one line
// on stderr naming the first contradiction and the count, and still do
// their job with exit status 0; on a consistent trace they add nothing.
TEST_CASE("stats and export warn in one line on stderr about a trace that contradicts itself", "[cli][verdict]") {
    const Scratch s;
    const std::string bad = s.dir + "/contradicting.fstrace";
    REQUIRE(test::writeContradictingTrace(bad));
    const auto oneWarning = [&](const Outcome& o) {
        INFO("stderr: " << o.err);
        CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
        CHECK(o.err.rfind("warning: " + bad + ": this trace contradicts itself in 2 places, first: 20.00 us thread 1 (worker 1): "
                          "wakeup-unmatched: ", 0) == 0);
        CHECK(o.err.find("fiberscope verify") != std::string::npos);
    };
    const Outcome stats = runTool({"stats", bad});
    CHECK(stats.code == 0);
    CHECK(stats.out.find("Threads") != std::string::npos); // the summary, as ever
    oneWarning(stats);
    const Outcome file = runTool({"export", bad, "-o", s.dir + "/contradicting.json"});
    CHECK(file.code == 0);
    CHECK(readFile(s.dir + "/contradicting.json").rfind("{\"traceEvents\":[", 0) == 0);
    oneWarning(file);
    const Outcome piped = runTool({"export", bad, "-o", "-"});
    CHECK(piped.code == 0);
    CHECK(piped.out.rfind("{\"traceEvents\":[", 0) == 0);
    oneWarning(piped);
    // A consistent trace (a lesson's golden run): nothing on stderr.
    for (const std::vector<std::string>& args : {std::vector<std::string>{"stats", s.trace},
                                                  std::vector<std::string>{"export", s.trace, "-o", s.dir + "/t.json"},
                                                  std::vector<std::string>{"export", s.trace, "-o", "-"}}) {
        const Outcome o = runTool(args);
        INFO(shellWords(args));
        CHECK(o.code == 0);
        CHECK(o.err.empty());
        CHECK(!o.out.empty());
    }
}

TEST_CASE("running out of memory is one line, not an abort", "[cli]") {
    if (kSanitized) {
        WARN("a sanitized fiberscope cannot start under an address-space limit; not tested here");
        return;
    }
    const Scratch s;
    // Two million events: some 80 MB once loaded, from a 6 MB file.
    using fiberscope::trace::EventKind;
    fiberscope::testing::TraceBuilder builder;
    builder.chunk(0).record(EventKind::ThreadStart, 1, {0, 0});
    for (int chunk = 0; chunk < 20; ++chunk) {
        builder.chunk(0, static_cast<std::uint64_t>(chunk) * 1'000'000);
        for (int i = 0; i < 50'000; ++i) builder.record(EventKind::Park, 1).record(EventKind::Unpark, 1, {0});
    }
    const std::string big = s.dir + "/big.fstrace";
    const std::vector<std::uint8_t> bytes = builder.bytes();
    std::ofstream(big, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    // Unlimited, it loads.
    const Outcome fine = runTool({"stats", big});
    INFO(fine.err);
    REQUIRE(fine.code == 0);
    // With 64 MB of address space it starts, but cannot hold the events.
    for (const char* command : {"stats", "timeline", "export"}) {
        std::vector<std::string> args{command, big};
        if (std::strcmp(command, "export") == 0) args.insert(args.end(), {"-o", s.dir + "/big.json"});
        const Outcome o = runTool(args, std::chrono::seconds(10), rlim_t{64} << 20);
        INFO(command << ": exit " << o.code << " signal " << o.signal << "\nstderr: " << o.err);
        CHECK(o.exited);
        CHECK(o.code == 1);
        CHECK(std::count(o.err.begin(), o.err.end(), '\n') == 1);
        CHECK(o.err.find("out of memory while") != std::string::npos);
        CHECK(o.err.find(big) != std::string::npos);
    }
}

TEST_CASE("the README's screenshot example works", "[cli][screenshot]") {
    const Scratch s;
    const std::string png = s.dir + "/readme.png";
    const Outcome o = runTool({"screenshot", s.trace, "-o", png, "--range", "2ms:5ms", "--size", "1600x900", "--cursor", "3ms"},
                              std::chrono::seconds(60));
    INFO(o.err);
    CHECK(o.code == 0);
    struct stat st {};
    CHECK(stat(png.c_str(), &st) == 0);
    CHECK(st.st_size > 1000);
}

namespace {

// The pids whose parent is `parent` and whose name is `name` (from /proc).
std::vector<pid_t> childrenNamed(pid_t parent, const std::string& name) {
    std::vector<pid_t> found;
    DIR* proc = opendir("/proc");
    if (!proc) return found;
    while (const dirent* entry = readdir(proc)) {
        const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
        if (pid <= 0) continue;
        const std::string stat = readFile("/proc/" + std::to_string(pid) + "/stat");
        // "pid (comm) state ppid ...": comm may hold spaces, so split at the last ')'.
        const std::size_t open = stat.find('('), close = stat.rfind(')');
        if (open == std::string::npos || close == std::string::npos) continue;
        int ppid = 0;
        char state = 0;
        if (std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) continue;
        if (ppid == parent && stat.substr(open + 1, close - open - 1) == name) found.push_back(pid);
    }
    closedir(proc);
    return found;
}

// Alive: /proc has it and it is not a zombie (a zombie has exited; in a
// container no init may be reaping it).
bool alive(pid_t pid) {
    const std::string stat = readFile("/proc/" + std::to_string(pid) + "/stat");
    const std::size_t close = stat.rfind(')');
    return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z';
}

// Whether the process holds a socket: fiberscope has none until it connects
// to the X server, which it does only once Xvfb is up and has said its display.
bool holdsSocket(pid_t pid) {
    const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* fds = opendir(dir.c_str());
    if (!fds) return false;
    bool found = false;
    while (const dirent* entry = readdir(fds)) {
        char target[64] = {};
        if (readlink((dir + "/" + entry->d_name).c_str(), target, sizeof target - 1) > 0 &&
            std::strncmp(target, "socket:", 7) == 0)
            found = true;
    }
    closedir(fds);
    return found;
}

} // namespace

TEST_CASE("the screenshot's Xvfb dies when fiberscope is killed", "[xvfb]") {
    if (access("/usr/bin/Xvfb", X_OK) != 0) {
        WARN("Xvfb is not installed; nothing to test");
        return;
    }
    const Scratch s;
    // A large picture keeps fiberscope drawing (with Xvfb up) long enough to
    // be caught; if it still finishes first, try again.
    bool tested = false;
    for (int attempt = 0; attempt < 3 && !tested; ++attempt) {
        const Spawned child = spawnTool({"screenshot", s.trace, "-o", s.dir + "/big.png", "--size", "8192x8192"});
        std::vector<pid_t> xvfb;
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        // Killed while Xvfb still starts, fiberscope would take Xvfb down with
        // it anyway (its display report meets a closed pipe): wait until
        // fiberscope is drawing on it.
        while ((xvfb.empty() || !holdsSocket(child.pid)) && std::chrono::steady_clock::now() < give_up && alive(child.pid)) {
            if (xvfb.empty()) xvfb = childrenNamed(child.pid, "Xvfb");
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        kill(child.pid, SIGKILL);
        int status = 0;
        waitpid(child.pid, &status, 0);
        close(child.out);
        close(child.err);
        if (xvfb.empty() || !WIFSIGNALED(status)) continue; // it finished before we caught it
        // As the user would: the kill, then a moment for the kernel to act.
        tested = true;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
        while (alive(xvfb.front()) && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        INFO("Xvfb pid " << xvfb.front());
        CHECK_FALSE(alive(xvfb.front()));
        if (alive(xvfb.front())) kill(xvfb.front(), SIGKILL); // do not leave it behind ourselves
    }
    CHECK(tested);
}
