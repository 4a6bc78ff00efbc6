// The `fiberscope` command: record a program, and look at its trace.
//
//     fiberscope record -o out.fstrace -- ./prog args...
//     fiberscope stats out.fstrace
//     fiberscope timeline out.fstrace [--rows N] [--bucket 1ms]
//     fiberscope export --format chrome out.fstrace -o out.json
//     fiberscope view out.fstrace          (the GUI, once it lands)
//
// Exit codes: 0 success, 1 a file could not be read or written, 2 a usage
// error; `record` exits with the program's status. Each subcommand is one
// function below, listed in kCommands; add a command by adding both.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "fiberscope/trace_reader.hpp"
#include "trace_tools.hpp"
#include "lessons/catalog.hpp"
#include "ui/viewer_main.hpp"

#ifndef FIBERSCOPE_VERSION
#define FIBERSCOPE_VERSION "dev"
#endif

namespace {

using fiberscope::trace::ReadError;
using fiberscope::trace::Trace;
using Args = std::vector<std::string>;

constexpr int kOk = 0;
constexpr int kBadFile = 1;
constexpr int kUsage = 2;

struct Command {
    const char* name;
    const char* summary;
    const char* help;
    int (*run)(const Args& args);
};

// ---------------------------------------------------------------------------
// Helpers

int usageError(const char* command, const std::string& message) {
    std::fprintf(stderr, "fiberscope%s%s: %s (see 'fiberscope %s%s--help')\n", command ? " " : "", command ? command : "",
                 message.c_str(), command ? command : "", command ? " " : "");
    return kUsage;
}

int printHelp(const char* help) {
    std::fputs(help, stdout);
    return kOk;
}

bool isHelp(const std::string& arg) { return arg == "--help" || arg == "-h"; }

// An option with a value, as "--name value" or "--name=value" (or "-o value"
// for a short name). Returns false if args[i] is not this option. When it
// is, sets `value` (or `missing` if no value follows) and advances i past it.
bool valueOption(const Args& args, std::size_t& i, const char* long_name, const char* short_name, std::string& value,
                 bool& missing) {
    const std::string& arg = args[i];
    const std::string prefix = std::string(long_name) + "=";
    if (arg.compare(0, prefix.size(), prefix) == 0) {
        value = arg.substr(prefix.size());
        missing = value.empty();
        return true;
    }
    if (arg != long_name && (!short_name || arg != short_name)) return false;
    missing = i + 1 >= args.size();
    if (!missing) value = args[++i];
    return true;
}

bool parsePositive(const std::string& text, long& value) {
    if (text.empty()) return false;
    char* end = nullptr;
    errno = 0;
    value = std::strtol(text.c_str(), &end, 10);
    return errno == 0 && *end == '\0' && value > 0;
}

// "250us", "2ms", "1.5s", "800ns" -> nanoseconds.
bool parseDuration(const std::string& text, std::int64_t& ns) {
    char* end = nullptr;
    errno = 0;
    const double number = std::strtod(text.c_str(), &end);
    if (errno != 0 || end == text.c_str() || !(number > 0)) return false;
    const std::string unit = end;
    double scale = 0;
    if (unit == "ns") scale = 1;
    else if (unit == "us") scale = 1e3;
    else if (unit == "ms") scale = 1e6;
    else if (unit == "s") scale = 1e9;
    else return false;
    const double value = number * scale;
    if (value < 1 || value > 1e18) return false;
    ns = static_cast<std::int64_t>(value);
    return true;
}

// Reads a trace, printing its warnings. On failure prints the error and
// returns false (the caller exits with kBadFile).
bool loadTrace(const std::string& path, Trace& trace) {
    ReadError error;
    if (!fiberscope::trace::readTrace(path, trace, error)) {
        std::fprintf(stderr, "fiberscope: %s\n", error.text().c_str());
        return false;
    }
    for (const std::string& warning : trace.warnings) std::fprintf(stderr, "warning: %s: %s\n", path.c_str(), warning.c_str());
    return true;
}

// ---------------------------------------------------------------------------
// fiberscope record

const char kRecordHelp[] =
    "usage: fiberscope record [-o FILE] [--] PROGRAM [ARGS...]\n"
    "\n"
    "Runs PROGRAM with FIBERSCOPE_TRACE=FILE, so a program built on the fiberscope\n"
    "runtime records a trace of every scheduling decision into FILE, then prints a\n"
    "one-line summary of the trace. Exits with the program's exit status.\n"
    "\n"
    "  -o, --output FILE   where to write the trace (default: fiberscope.fstrace)\n"
    "  -h, --help          show this help\n";

struct ChildResult {
    int exit_code = 0;
    bool exec_failed = false;
};

// Forks and execs `program`, waits for it (ignoring SIGINT/SIGQUIT meanwhile,
// so Ctrl-C stops the program and we still report the trace).
ChildResult runChild(const Args& program, const std::string& trace_path) {
    ChildResult result;
    int exec_error[2];
    if (pipe2(exec_error, O_CLOEXEC) != 0) {
        std::fprintf(stderr, "fiberscope: cannot create a pipe: %s\n", std::strerror(errno));
        return {kBadFile, true};
    }
    const pid_t pid = fork();
    if (pid < 0) {
        std::fprintf(stderr, "fiberscope: cannot fork: %s\n", std::strerror(errno));
        close(exec_error[0]);
        close(exec_error[1]);
        return {kBadFile, true};
    }
    if (pid == 0) {
        close(exec_error[0]);
        setenv("FIBERSCOPE_TRACE", trace_path.c_str(), 1);
        std::vector<char*> argv;
        for (const std::string& arg : program) argv.push_back(const_cast<char*>(arg.c_str()));
        argv.push_back(nullptr);
        execvp(argv[0], argv.data());
        const int error = errno;
        [[maybe_unused]] ssize_t written = write(exec_error[1], &error, sizeof error);
        _exit(127);
    }
    close(exec_error[1]);
    struct sigaction ignore {}, old_int {}, old_quit {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    int error = 0;
    ssize_t got;
    do got = read(exec_error[0], &error, sizeof error);
    while (got < 0 && errno == EINTR);
    close(exec_error[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
    if (got == static_cast<ssize_t>(sizeof error)) {
        std::fprintf(stderr, "fiberscope: cannot run '%s': %s\n", program[0].c_str(), std::strerror(error));
        return {127, true};
    }
    if (WIFEXITED(status)) {
        result.exit_code = WEXITSTATUS(status);
        if (result.exit_code != 0)
            std::fprintf(stderr, "fiberscope: %s exited with status %d\n", program[0].c_str(), result.exit_code);
    } else if (WIFSIGNALED(status)) {
        result.exit_code = 128 + WTERMSIG(status);
        std::fprintf(stderr, "fiberscope: %s was killed by signal %d (%s)\n", program[0].c_str(), WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
    }
    return result;
}

int runRecord(const Args& args) {
    std::string output = "fiberscope.fstrace";
    Args program;
    for (std::size_t i = 0; i < args.size(); ++i) {
        bool missing = false;
        if (args[i] == "--") {
            program.assign(args.begin() + static_cast<long>(i) + 1, args.end());
            break;
        }
        if (isHelp(args[i])) return printHelp(kRecordHelp);
        if (valueOption(args, i, "--output", "-o", output, missing)) {
            if (missing) return usageError("record", "-o needs a file name");
            continue;
        }
        if (args[i].size() > 1 && args[i][0] == '-') return usageError("record", "unknown option '" + args[i] + "'");
        program.assign(args.begin() + static_cast<long>(i), args.end()); // the program and its own arguments
        break;
    }
    if (program.empty()) return usageError("record", "no program to run; usage: fiberscope record -o FILE -- PROGRAM [ARGS...]");

    // To tell a fresh trace from an old file of the same name.
    struct timespec started {};
    clock_gettime(CLOCK_REALTIME, &started);
    const ChildResult child = runChild(program, output);
    if (child.exec_failed) return child.exit_code;
    const int failed = child.exit_code != 0 ? child.exit_code : kBadFile;

    struct stat st {};
    const bool fresh = stat(output.c_str(), &st) == 0 &&
                       (st.st_mtim.tv_sec > started.tv_sec ||
                        (st.st_mtim.tv_sec == started.tv_sec && st.st_mtim.tv_nsec >= started.tv_nsec));
    if (!fresh) {
        std::fprintf(stderr, "fiberscope: %s wrote no trace to %s%s\n", program[0].c_str(), output.c_str(),
                     child.exit_code == 0 ? " (is it built on the fiberscope runtime?)" : "");
        return failed;
    }
    Trace trace;
    if (!loadTrace(output, trace)) return failed;
    std::size_t threads = 0;
    for (const auto& t : trace.threads) threads += t.worker >= 0;
    std::fprintf(stderr, "fiberscope: trace written to %s: %s events, %zu worker thread%s, %s\n", output.c_str(),
                 fiberscope::trace::formatCount(trace.events.size()).c_str(), threads, threads == 1 ? "" : "s",
                 fiberscope::trace::formatDuration(fiberscope::trace::traceEnd(trace)).c_str());
    return child.exit_code;
}

// ---------------------------------------------------------------------------
// fiberscope stats

const char kStatsHelp[] =
    "usage: fiberscope stats FILE [--top N]\n"
    "\n"
    "Summarises a trace: the recording, each thread's busy / idle / parked time,\n"
    "switches, steals and wake-ups, the fibers that ran longest with their\n"
    "schedule-to-run latency, and the latency over all fibers.\n"
    "\n"
    "  --top N      how many fibers to list (default: 20)\n"
    "  -h, --help   show this help\n";

int runStats(const Args& args) {
    std::string path;
    fiberscope::trace::StatsOptions options;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string value;
        bool missing = false;
        if (isHelp(args[i])) return printHelp(kStatsHelp);
        if (valueOption(args, i, "--top", nullptr, value, missing)) {
            long top = 0;
            if (missing || !parsePositive(value, top)) return usageError("stats", "--top needs a positive number");
            options.top_fibers = static_cast<std::size_t>(top);
        } else if (args[i].size() > 1 && args[i][0] == '-') {
            return usageError("stats", "unknown option '" + args[i] + "'");
        } else if (path.empty()) {
            path = args[i];
        } else {
            return usageError("stats", "one trace file at a time ('" + args[i] + "' is extra)");
        }
    }
    if (path.empty()) return usageError("stats", "no trace file given");
    Trace trace;
    if (!loadTrace(path, trace)) return kBadFile;
    options.title = path;
    fiberscope::trace::writeStats(trace, std::cout, options);
    return kOk;
}

// ---------------------------------------------------------------------------
// fiberscope export

const char kExportHelp[] =
    "usage: fiberscope export [--format chrome] FILE -o OUT.json\n"
    "\n"
    "Converts a trace to Chrome Trace Event JSON, which ui.perfetto.dev and\n"
    "chrome://tracing open: one track per thread with the fiber runs, one track\n"
    "per fiber (in the \"fibers\" process) with its runs and zones, and arrows for\n"
    "wake-ups, steals and spawns.\n"
    "\n"
    "  --format chrome    the output format (chrome is the only one so far)\n"
    "  -o, --output OUT   where to write; '-' for standard output\n"
    "  -h, --help         show this help\n";

int runExport(const Args& args) {
    std::string path, output, format = "chrome";
    for (std::size_t i = 0; i < args.size(); ++i) {
        bool missing = false;
        if (isHelp(args[i])) return printHelp(kExportHelp);
        if (valueOption(args, i, "--format", "-f", format, missing)) {
            if (missing) return usageError("export", "--format needs a format name (chrome)");
        } else if (valueOption(args, i, "--output", "-o", output, missing)) {
            if (missing) return usageError("export", "-o needs a file name");
        } else if (args[i].size() > 1 && args[i][0] == '-') {
            return usageError("export", "unknown option '" + args[i] + "'");
        } else if (path.empty()) {
            path = args[i];
        } else {
            return usageError("export", "one trace file at a time ('" + args[i] + "' is extra)");
        }
    }
    if (format != "chrome") return usageError("export", "unknown format '" + format + "'; the only format is chrome");
    if (path.empty()) return usageError("export", "no trace file given");
    if (output.empty()) return usageError("export", "no output file given (-o OUT.json, or -o - for standard output)");
    Trace trace;
    if (!loadTrace(path, trace)) return kBadFile;

    std::string error;
    if (output == "-") {
        if (!fiberscope::trace::writeChromeJson(trace, std::cout, error)) {
            std::fprintf(stderr, "fiberscope: cannot write to standard output: %s\n", error.c_str());
            return kBadFile;
        }
        return kOk;
    }
    std::ofstream file(output, std::ios::binary | std::ios::trunc);
    if (!file) {
        std::fprintf(stderr, "fiberscope: cannot write %s: %s\n", output.c_str(), std::strerror(errno));
        return kBadFile;
    }
    bool written = fiberscope::trace::writeChromeJson(trace, file, error);
    file.close();
    written = written && !file.fail();
    if (!written) {
        std::fprintf(stderr, "fiberscope: cannot write %s: %s\n", output.c_str(), error.empty() ? "write failed" : error.c_str());
        return kBadFile;
    }
    std::printf("Wrote %s (Chrome trace JSON); open it in https://ui.perfetto.dev or chrome://tracing\n", output.c_str());
    return kOk;
}

// ---------------------------------------------------------------------------
// fiberscope timeline

const char kTimelineHelp[] =
    "usage: fiberscope timeline FILE [--rows N] [--bucket DURATION]\n"
    "\n"
    "Prints a map of which fiber ran on which thread over time: one column per\n"
    "thread, one row per time bucket. A cell shows the fiber that ran longest in\n"
    "the bucket (its id, + if others ran too), '.' idle, '_' parked (waiting in\n"
    "the kernel). Marks label their row; named fibers are listed below.\n"
    "\n"
    "  --rows N            at most N rows (default: 60); the bucket is a round number\n"
    "  --bucket DURATION   a fixed bucket instead, e.g. 500us, 2ms, 1s\n"
    "  -h, --help          show this help\n";

int runTimeline(const Args& args) {
    std::string path;
    fiberscope::trace::TimelineOptions options;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string value;
        bool missing = false;
        if (isHelp(args[i])) return printHelp(kTimelineHelp);
        if (valueOption(args, i, "--rows", nullptr, value, missing)) {
            long rows = 0;
            if (missing || !parsePositive(value, rows) || rows > 1000000)
                return usageError("timeline", "--rows needs a positive number");
            options.max_rows = static_cast<int>(rows);
        } else if (valueOption(args, i, "--bucket", nullptr, value, missing)) {
            if (missing || !parseDuration(value, options.bucket_ns))
                return usageError("timeline", "--bucket needs a duration such as 500us, 2ms or 1s");
        } else if (args[i].size() > 1 && args[i][0] == '-') {
            return usageError("timeline", "unknown option '" + args[i] + "'");
        } else if (path.empty()) {
            path = args[i];
        } else {
            return usageError("timeline", "one trace file at a time ('" + args[i] + "' is extra)");
        }
    }
    if (path.empty()) return usageError("timeline", "no trace file given");
    Trace trace;
    if (!loadTrace(path, trace)) return kBadFile;
    fiberscope::trace::writeTextTimeline(trace, std::cout, options);
    return kOk;
}

// ---------------------------------------------------------------------------
// fiberscope view

const char kViewHelp[] =
    "usage: fiberscope view [FILE]\n"
    "\n"
    "Opens the Fiberscope viewer (on FILE if given): per-thread and per-fiber\n"
    "timelines, flows between threads, the scheduler's state at any instant,\n"
    "statistics of a range, and every event explained. Needs a display; without\n"
    "one, use 'fiberscope screenshot'.\n";

const char kScreenshotHelp[] =
    "usage: fiberscope screenshot FILE -o OUT.png [--range START:END] [--size WxH]\n"
    "                             [--cursor TIME] [--panel state|selection|events|legend|lesson]\n"
    "                             [--lesson N] [--open-dialog]\n"
    "\n"
    "Renders the viewer's view of FILE to a PNG without a window. With no display\n"
    "it starts Xvfb for the duration (apt-get install xvfb). Times take a unit:\n"
    "ns, us, ms (the default) or s, e.g. --range 1.5ms:4ms --cursor 2ms.\n";

int runView(const Args& args) {
    std::string path;
    for (const std::string& arg : args) {
        if (isHelp(arg)) return printHelp(kViewHelp);
        if (!arg.empty() && arg[0] == '-') return usageError("view", "unknown option '" + arg + "'");
        if (!path.empty()) return usageError("view", "one trace at a time");
        path = arg;
    }
    return fiberscope::viewer::runViewer(path);
}

// "A:B" with units (ns, us, ms, s; default ms) -> nanoseconds.
bool parseRange(const std::string& text, double& start, double& end) {
    const auto colon = text.find(':');
    if (colon == std::string::npos) return false;
    auto parse = [](std::string part, double& out) {
        double scale = 1e6;
        for (auto [suffix, factor] : {std::pair{"ns", 1.0}, std::pair{"us", 1e3}, std::pair{"ms", 1e6}, std::pair{"s", 1e9}}) {
            const std::string sfx = suffix;
            if (part.size() > sfx.size() && part.compare(part.size() - sfx.size(), sfx.size(), sfx) == 0) {
                scale = factor;
                part.resize(part.size() - sfx.size());
                break;
            }
        }
        char* rest = nullptr;
        const double value = std::strtod(part.c_str(), &rest);
        if (part.empty() || *rest) return false;
        out = value * scale;
        return true;
    };
    return parse(text.substr(0, colon), start) && parse(text.substr(colon + 1), end) && end > start;
}

int runScreenshot(const Args& args) {
    fiberscope::viewer::ScreenshotOptions options;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        auto value = [&](const char* flag) -> const std::string* {
            if (i + 1 >= args.size()) return nullptr;
            (void)flag;
            return &args[++i];
        };
        if (isHelp(arg)) return printHelp(kScreenshotHelp);
        if (arg == "-o" || arg == "--output") {
            const std::string* v = value("-o");
            if (!v) return usageError("screenshot", "-o needs a PNG path");
            options.output = *v;
        } else if (arg == "--range") {
            const std::string* v = value("--range");
            if (!v || !parseRange(*v, options.range_start_ns, options.range_end_ns))
                return usageError("screenshot", "--range takes START:END, e.g. 0:20ms or 1.5ms:2ms");
            options.has_range = true;
        } else if (arg == "--size") {
            const std::string* v = value("--size");
            int w = 0, h = 0;
            if (!v || std::sscanf(v->c_str(), "%dx%d", &w, &h) != 2 || w < 320 || h < 240 || w > 8192 || h > 8192)
                return usageError("screenshot", "--size takes WIDTHxHEIGHT, e.g. 1600x900 (320x240 to 8192x8192)");
            options.width = w;
            options.height = h;
        } else if (arg == "--cursor") {
            const std::string* v = value("--cursor");
            double a = 0, b = 0;
            if (!v || !parseRange(*v + ":" + *v + "1", a, b))
                return usageError("screenshot", "--cursor takes a time, e.g. 3.2ms");
            options.cursor_ns = static_cast<std::int64_t>(a);
        } else if (arg == "--panel") {
            const std::string* v = value("--panel");
            const char* names[] = {"state", "selection", "events", "legend", "lesson"};
            int found = -1;
            for (int k = 0; k < 5; ++k)
                if (v && *v == names[k]) found = k;
            if (found < 0) return usageError("screenshot", "--panel takes state, selection, events, legend or lesson");
            options.panel = found;
        } else if (arg == "--open-dialog") {
            options.open_dialog = true;
        } else if (arg == "--lesson") {
            const std::string* v = value("--lesson");
            if (!v || std::atoi(v->c_str()) <= 0) return usageError("screenshot", "--lesson takes a lesson number");
            options.lesson = std::atoi(v->c_str());
            options.panel = 4;
        } else if (!arg.empty() && arg[0] == '-') {
            return usageError("screenshot", "unknown option '" + arg + "'");
        } else if (options.trace.empty()) {
            options.trace = arg;
        } else {
            return usageError("screenshot", "one trace at a time");
        }
    }
    if (options.trace.empty()) return usageError("screenshot", "which trace? fiberscope screenshot FILE -o out.png");
    if (options.output.empty()) return usageError("screenshot", "where to? add -o out.png");
    const int status = fiberscope::viewer::runScreenshot(options);
    if (status == 0) std::printf("wrote %s\n", options.output.c_str());
    return status;
}

const char kLessonsHelp[] =
    "usage: fiberscope lessons\n"
    "\n"
    "Lists the lessons of the course: a small program each, a narrative, and a\n"
    "trace whose scheduling phenomenon the viewer shows and explains.\n";

const char kLessonHelp[] =
    "usage: fiberscope lesson N [--threads K] [--backend uring|epoll] [-o FILE] [--no-view]\n"
    "\n"
    "Runs lesson N's program with tracing on, records its trace (to FILE, else\n"
    "a file in $TMPDIR or /tmp), prints a text timeline (one column per worker\n"
    "thread), then opens the viewer on it. With no display (or --no-view) it\n"
    "writes a PNG of the viewer's picture instead and says where.\n"
    "\n"
    "  --threads K         the program's worker threads (default: the lesson's)\n"
    "  --backend B         its I/O backend, uring or epoll (default: automatic,\n"
    "                      FIBERSCOPE_BACKEND if set, else io_uring, or epoll\n"
    "                      where the kernel refuses io_uring); see lesson 13\n"
    "  -o, --output FILE   where to write the trace\n"
    "  --no-view           write the PNG even with a display\n";

int runLessons(const Args& args) {
    for (const std::string& arg : args) {
        if (isHelp(arg)) return printHelp(kLessonsHelp);
        return usageError("lessons", "takes no arguments, got '" + arg + "'");
    }
    std::string error;
    const auto lessons = fiberscope::viewer::loadLessons(error);
    if (lessons.empty()) {
        std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
        return kBadFile;
    }
    std::printf("The Fiberscope course (run one with 'fiberscope lesson N'):\n\n");
    for (const auto& lesson : lessons) std::printf("  %2d  %s\n", lesson.number, lesson.title.c_str());
    return 0;
}

int runLesson(const Args& args) {
    int number = -1, threads = 0;
    std::string output, backend;
    bool no_view = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& arg = args[i];
        if (isHelp(arg)) return printHelp(kLessonHelp);
        if (arg == "--threads") {
            if (i + 1 >= args.size() || std::atoi(args[i + 1].c_str()) <= 0 || std::atoi(args[i + 1].c_str()) > 256)
                return usageError("lesson", "--threads takes a number from 1 to 256");
            threads = std::atoi(args[++i].c_str());
        } else if (arg == "--backend") {
            if (i + 1 >= args.size() || (args[i + 1] != "uring" && args[i + 1] != "io_uring" && args[i + 1] != "epoll"))
                return usageError("lesson", "--backend takes uring or epoll");
            backend = args[++i] == "epoll" ? "epoll" : "uring";
        } else if (arg == "-o" || arg == "--output") {
            if (i + 1 >= args.size()) return usageError("lesson", "-o needs a trace path");
            output = args[++i];
        } else if (arg == "--no-view") {
            no_view = true;
        } else if (!arg.empty() && arg[0] != '-' && number < 0) {
            char* end = nullptr;
            const long n = std::strtol(arg.c_str(), &end, 10);
            if (*end || n <= 0) return usageError("lesson", "'" + arg + "' is not a lesson number; see 'fiberscope lessons'");
            number = static_cast<int>(n);
        } else {
            return usageError("lesson", "unknown argument '" + arg + "'");
        }
    }
    if (number < 0) return usageError("lesson", "which lesson? e.g. 'fiberscope lesson 1' (list: 'fiberscope lessons')");
    std::string error;
    const auto lessons = fiberscope::viewer::loadLessons(error);
    const fiberscope::viewer::Lesson* lesson = nullptr;
    for (const auto& l : lessons)
        if (l.number == number) lesson = &l;
    if (!lesson) {
        std::fprintf(stderr, "fiberscope: there is no lesson %d%s%s; see 'fiberscope lessons'\n", number,
                     error.empty() ? "" : ": ", error.c_str());
        return kUsage;
    }
    if (output.empty()) {
        const char* tmp = std::getenv("TMPDIR");
        output = std::string(tmp && *tmp ? tmp : "/tmp") + "/fiberscope-lesson" + lesson->slug +
                 (backend.empty() ? "" : "-" + backend) + ".fstrace";
    }
    std::printf("== Lesson %d: %s ==\n", lesson->number, lesson->title.c_str());
    if (!lesson->summary.empty()) std::printf("%s\n", lesson->summary.c_str());
    std::printf("\n-- the program says --\n");
    std::fflush(stdout);
    fiberscope::viewer::LessonRun run;
    if (!fiberscope::viewer::runLesson(*lesson, threads, backend, output, true, run, error)) {
        std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
        return kBadFile;
    }
    fiberscope::trace::Trace trace;
    fiberscope::trace::ReadError read_error;
    if (!fiberscope::trace::readTrace(output, trace, read_error)) {
        std::fprintf(stderr, "fiberscope: %s\n", read_error.text().c_str());
        return kBadFile;
    }
    std::printf("\n-- what the scheduler did (trace: %s) --\n", output.c_str());
    std::fflush(stdout);
    fiberscope::trace::writeTextTimeline(trace, std::cout);
    std::cout.flush();
    const char* display = std::getenv("DISPLAY");
    if (!no_view && display && *display) return fiberscope::viewer::runViewer(output, lesson->number);
    fiberscope::viewer::ScreenshotOptions shot;
    shot.trace = output;
    shot.lesson = lesson->number;
    shot.panel = 4;
    shot.output = output.substr(0, output.size() - (output.size() > 8 && output.ends_with(".fstrace") ? 8 : 0)) + ".png";
    if (const int status = fiberscope::viewer::runScreenshot(shot); status != 0) return status;
    std::printf("\nNo display%s: wrote the viewer's picture to %s\n", no_view ? " wanted (--no-view)" : "", shot.output.c_str());
    std::printf("Open it interactively with: fiberscope view %s\n", output.c_str());
    return 0;
}

const char kBenchmarkHelp[] =
    "usage: fiberscope benchmark [--events N]\n"
    "\n"
    "Measures the viewer at scale: writes a 10k-event and an N-event (default\n"
    "10 million) synthetic trace, then reports the reader's time, the load time\n"
    "(reader + model) and the frame time at three zoom levels for each, with the\n"
    "ratios the viewer is held to (frame time at N events <= 2x at 10k; load <=\n"
    "5x read). Starts Xvfb when there is no display.\n";

int runBenchmark(const Args& args) {
    std::uint64_t events = 10'000'000;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (isHelp(args[i])) return printHelp(kBenchmarkHelp);
        if (args[i] == "--events" && i + 1 < args.size()) {
            events = std::strtoull(args[++i].c_str(), nullptr, 10);
            if (events < 10'000 || events > 100'000'000) return usageError("benchmark", "--events takes 10000 to 100000000");
        } else {
            return usageError("benchmark", "unknown argument '" + args[i] + "'");
        }
    }
    return fiberscope::viewer::runViewerBenchmark(events);
}

// ---------------------------------------------------------------------------
// Dispatch

const Command kCommands[] = {
    {"record", "run a program and record its trace", kRecordHelp, runRecord},
    {"stats", "summarise a trace: threads, fibers, latency", kStatsHelp, runStats},
    {"timeline", "print a text map of which fiber ran where", kTimelineHelp, runTimeline},
    {"export", "convert a trace to Chrome/Perfetto JSON", kExportHelp, runExport},
    {"view", "open a trace in the viewer", kViewHelp, runView},
    {"lessons", "list the lessons of the course", kLessonsHelp, runLessons},
    {"lesson", "run a lesson (on io_uring or epoll), show its trace and explain it", kLessonHelp, runLesson},
    {"benchmark", "measure the viewer's load and frame times at 10k and 10M events", kBenchmarkHelp, runBenchmark},
    {"screenshot", "render the viewer's view of a trace to a PNG (headless)", kScreenshotHelp, runScreenshot},
};
const std::size_t kCommandCount = sizeof kCommands / sizeof kCommands[0];

void printUsage(std::FILE* to) {
    std::fprintf(to, "usage: fiberscope COMMAND [ARGS...]\n\ncommands:\n");
    for (std::size_t i = 0; i < kCommandCount; ++i) std::fprintf(to, "  %-9s %s\n", kCommands[i].name, kCommands[i].summary);
    std::fprintf(to, "\n'fiberscope COMMAND --help' describes a command.\n");
}

const Command* findCommand(const std::string& name) {
    for (std::size_t i = 0; i < kCommandCount; ++i)
        if (name == kCommands[i].name) return &kCommands[i];
    return nullptr;
}

} // namespace

int main(int argc, char** argv) {
    const Args args(argv + 1, argv + argc);
    if (args.empty()) return runView(args); // the viewer is the default
    const std::string& name = args[0];
    if (isHelp(name)) {
        printUsage(stdout);
        return kOk;
    }
    if (name == "help") {
        if (args.size() < 2) {
            printUsage(stdout);
            return kOk;
        }
        const Command* command = findCommand(args[1]);
        if (!command) return usageError(nullptr, "unknown command '" + args[1] + "'");
        return printHelp(command->help);
    }
    if (name == "--version") {
        std::printf("fiberscope %s\n", FIBERSCOPE_VERSION);
        return kOk;
    }
    const Command* command = findCommand(name);
    if (!command) {
        if (name.size() > 1 && name[0] == '-') return usageError(nullptr, "unknown option '" + name + "'");
        return usageError(nullptr, "unknown command '" + name + "'");
    }
    return command->run(Args(args.begin() + 1, args.end()));
}
