// The `fiberscope` command: record a program, and look at its trace.
//
//     fiberscope record -o out.fstrace -- ./prog args...
//     fiberscope stats out.fstrace
//     fiberscope timeline out.fstrace [--rows N] [--bucket 1ms]
//     fiberscope export --format chrome out.fstrace -o out.json
//     fiberscope verify out.fstrace... [--summary]
//     fiberscope view out.fstrace
//     fiberscope screenshot out.fstrace -o out.png [--range 2ms:5ms] [--cursor 3ms]
//     fiberscope lessons | lesson N | benchmark
//
// One parser (CLI11) reads the whole command line; the values it takes go
// through the strict parsers of cli/values.hpp. Exit codes: 0 success, 1 a
// file could not be read or written (or memory ran out), 2 a usage error;
// `record` exits with the program's status. Every error is one line on
// stderr. A command checks the files it will read and write before it runs
// a program or prints anything (unwritableOutput). Each subcommand is an
// add...() function below that declares its options and returns what runs
// it; add a command by adding one.
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
#include <functional>
#include <iostream>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "cli/command_line.hpp"
#include "cli/values.hpp"
#include "fiberscope/analysis/validate.hpp"
#include "fiberscope/trace_reader.hpp"
#include "trace_tools.hpp"
#include "lessons/catalog.hpp"
#include "lessons/checks.hpp"
#include "platform/child_process.hpp"
#include "ui/viewer_main.hpp"

#ifndef FIBERSCOPE_VERSION
#define FIBERSCOPE_VERSION "dev"
#endif

namespace {

namespace cli = fiberscope::cli;
using fiberscope::trace::ReadError;
using fiberscope::trace::Trace;
using Args = std::vector<std::string>;

constexpr int kOk = 0;
constexpr int kBadFile = 1;
constexpr int kUsage = 2;

// ---------------------------------------------------------------------------
// Helpers

// A usage error found after parsing (a missing argument, an output that is
// an input), in the same one-line form as the parser's own.
int usageError(const std::string& command, const std::string& message) {
    const std::string who = command.empty() ? "fiberscope" : "fiberscope " + command;
    std::fprintf(stderr, "%s: %s; run '%s --help'\n", who.c_str(), message.c_str(), who.c_str());
    return kUsage;
}

// A trace the command is to read must exist and be a regular file. The
// reader checks too, but the viewer's quick check would block on a FIFO and
// call a directory "bad magic", and neither escapes the path it prints.
bool checkTraceInput(const std::string& path) {
    struct stat st {};
    if (stat(path.c_str(), &st) != 0) {
        std::fprintf(stderr, "fiberscope: %s: cannot open: %s\n", cli::printable(path, 4096).c_str(), std::strerror(errno));
        return false;
    }
    if (S_ISREG(st.st_mode)) return true;
    std::fprintf(stderr, "fiberscope: %s: is %s, not a trace file\n", cli::printable(path, 4096).c_str(),
                 S_ISDIR(st.st_mode) ? "a directory" : "not a regular file (a device, FIFO or socket)");
    return false;
}

// An output path must not be a directory nor the same file as an input
// (compared by device and inode, so "./t.fstrace" or a link counts too).
// Returns the complaint, or empty when the output is fine.
std::string outputClash(const std::string& option, const std::string& output, const std::string& input,
                        const char* input_role) {
    struct stat st {};
    if (stat(output.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        return option + " " + cli::printable(output, 4096) + " is a directory (give a file name)";
    if (!input.empty() && cli::sameFile(output, input))
        return option + " " + cli::printable(output, 4096) + " is " + input_role +
               "; writing it would destroy it (choose another file)";
    return {};
}

// A command checks that it can write its output before it runs or reads
// anything: `record -o /proc/x.fstrace -- PROGRAM` used to run PROGRAM
// untraced, with all its side effects, and only then fail, and `lesson N -o`
// printed the narrative and ran the lesson first. The path is opened for
// writing as its writer will open it, but not truncated; a file the check
// created is removed again, so a refused command leaves nothing behind. A
// trace (`trace`) must be a regular file: it is written with pwrite and read
// back. Another output (a PNG, JSON) may also be a device or a FIFO, which is
// not opened here (opening a FIFO waits for a reader). (A directory given
// as -o is outputClash's usage error; this finds one where a path made from
// it, like lesson's picture beside its trace, would go.) Returns the
// complaint ("cannot create the trace PATH: REASON"), or "" when it can be
// written.
std::string unwritableOutput(const std::string& path, const char* what, bool trace) {
    const std::string named = " " + std::string(what) + " " + cli::printable(path, 4096) + ": ";
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) {
        if (S_ISDIR(st.st_mode)) return "cannot write" + named + "it is a directory";
        if (!S_ISREG(st.st_mode)) return trace ? "cannot write" + named + "not a regular file (a device, FIFO or socket)" : "";
        const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) return "cannot write" + named + std::strerror(errno);
        close(fd);
        return {};
    }
    if (errno != ENOENT) return "cannot write" + named + std::strerror(errno);
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0) return "cannot create" + named + std::strerror(errno);
    close(fd);
    unlink(path.c_str());
    return {};
}

// A file that cannot be read or written, found before the command did
// anything: one line naming it and what to do, exit status 1. (`message`
// names its paths through cli::printable already.)
int fileError(const std::string& command, const std::string& message) {
    std::fprintf(stderr, "fiberscope %s: %s\n", command.c_str(), message.c_str());
    return kBadFile;
}

// Reads a trace, printing its warnings. On failure prints the error and
// returns false (the caller exits with kBadFile).
bool loadTrace(const std::string& path, Trace& trace) {
    if (!checkTraceInput(path)) return false;
    ReadError error;
    if (!fiberscope::trace::readTrace(path, trace, error)) {
        std::fprintf(stderr, "fiberscope: %s\n", cli::printable(error.text(), 4096).c_str());
        return false;
    }
    for (const std::string& warning : trace.warnings)
        std::fprintf(stderr, "warning: %s: %s\n", cli::printable(path, 4096).c_str(), warning.c_str());
    return true;
}

// The one line `stats` and `export` add on stderr for a trace that
// contradicts itself (trace::verificationWarning, escaped), so that nobody
// reads its numbers as the runtime's without knowing; nothing for a
// consistent trace. The command's output and exit status are unchanged.
void warnIfInconsistent(const std::string& path, const Trace& trace) {
    fiberscope::analysis::ValidationOptions options;
    options.max_kept = 1; // the line names the first; `fiberscope verify` lists them all
    const std::string warning =
        fiberscope::trace::verificationWarning(trace, fiberscope::trace::verifyTrace(trace, nullptr, options));
    if (!warning.empty()) std::fprintf(stderr, "warning: %s: %s\n", cli::printable(path, 4096).c_str(), warning.c_str());
}

// Which lesson has this number, or null (with a one-line reason in `error`).
const fiberscope::viewer::Lesson* findLesson(const std::vector<fiberscope::viewer::Lesson>& lessons, std::int64_t number,
                                             const std::string& catalogue_error, std::string& error) {
    for (const auto& lesson : lessons)
        if (lesson.number == number) return &lesson;
    error = "there is no lesson " + std::to_string(number) + (catalogue_error.empty() ? "" : " (" + catalogue_error + ")") +
            "; see 'fiberscope lessons'";
    return nullptr;
}

// The parsers of cli/values.hpp with their bounds bound, in the shape
// addParsedOption takes.
std::function<bool(std::string_view, std::int64_t&, std::string&)> wholeNumber(std::int64_t min, std::int64_t max) {
    return [min, max](std::string_view text, std::int64_t& value, std::string& error) {
        return cli::parseWholeNumber(text, min, max, value, error);
    };
}

std::function<bool(std::string_view, std::int64_t&, std::string&)> timeValue(cli::TimeSign sign) {
    return [sign](std::string_view text, std::int64_t& ns, std::string& error) { return cli::parseTime(text, sign, ns, error); };
}

// One of a fixed set of words, as its index.
std::function<bool(std::string_view, int&, std::string&)> oneOf(std::vector<std::string> words, std::string what) {
    return [words = std::move(words), what = std::move(what)](std::string_view text, int& index, std::string& error) {
        for (std::size_t i = 0; i < words.size(); ++i)
            if (text == words[i]) {
                index = static_cast<int>(i);
                return true;
            }
        std::string list;
        for (std::size_t i = 0; i < words.size(); ++i) list += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
        error = "\"" + cli::printable(text) + "\" is not " + what + " (use " + list + ")";
        return false;
    };
}

// A subcommand's entry in the dispatch: how to run it once parsed, and what
// it is doing, for the out-of-memory message ("exporting t.fstrace").
struct Command {
    CLI::App* app = nullptr;
    std::function<int()> run;
    std::function<std::string()> activity;
    bool takes_top_leftovers = false; // record: after "--", its program lands there
};

// A subcommand with the settings every one shares: listed under
// "commands:", unknown arguments collected (and reported in our words)
// rather than thrown, and the help flag described the same way.
CLI::App* addCommand(CLI::App& top, const std::string& name, const std::string& summary, const std::string& details) {
    CLI::App* app = top.add_subcommand(name, summary);
    app->group("commands");
    app->allow_extras();
    app->footer(details);
    app->set_help_flag("-h,--help", "show this help");
    return app;
}

// ---------------------------------------------------------------------------
// fiberscope record

struct ChildResult {
    int exit_code = 0;
    bool exec_failed = false;
};

// Forks and execs `program`, waits for it (ignoring SIGINT/SIGQUIT meanwhile,
// so Ctrl-C stops the program and we still report the trace).
ChildResult runChild(const Args& program, const std::string& trace_path) {
    ChildResult result;
    std::string error;
    bool not_run = false;
    const pid_t pid = fiberscope::viewer::spawnTraced(program, trace_path, error, &not_run);
    if (pid < 0) {
        std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
        return {not_run ? 127 : kBadFile, true};
    }
    struct sigaction ignore {}, old_int {}, old_quit {};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGQUIT, &old_quit, nullptr);
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

// Where execvp will find `name`: the name itself when it has a slash, else
// the first executable of that name on PATH (empty when there is none).
std::string programPath(const std::string& name) {
    if (name.find('/') != std::string::npos) return name;
    const char* search = std::getenv("PATH");
    const std::string dirs = search ? search : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= dirs.size()) {
        const std::size_t colon = std::min(dirs.find(':', start), dirs.size());
        const std::string dir = dirs.substr(start, colon - start);
        const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
        if (access(candidate.c_str(), X_OK) == 0) return candidate;
        start = colon + 1;
    }
    return {};
}

int record(const Args& program, const std::string& output) {
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

Command addRecord(CLI::App& top, cli::HelpFormatter& help) {
    struct Options {
        std::string output = "fiberscope.fstrace";
        bool view = false;
    };
    auto options = std::make_shared<Options>();
    CLI::App* app = addCommand(top, "record", "run a program and record its trace",
                               "Runs PROGRAM with FIBERSCOPE_TRACE=FILE, so a program built on the fiberscope\n"
                               "runtime records a trace of every scheduling decision into FILE, then prints a\n"
                               "one-line summary of the trace. Exits with the program's exit status.\n"
                               "With --view, the viewer shows the timeline growing while the program runs\n"
                               "(as 'fiberscope view --live').");
    help.setSynopsis(app, "[-o FILE] [--view] [--] PROGRAM [ARGS...]");
    // The program's own arguments are not ours: parsing stops at its name.
    app->prefix_command();
    app->add_option("-o,--output", options->output, "where to write the trace (default: fiberscope.fstrace)")->type_name("FILE");
    app->add_flag("--view", options->view, "watch the trace in the viewer while the program runs");
    auto run = [app, &top, options]() -> int {
        // CLI11 leaves the program and its arguments unparsed; after "--"
        // they land in the top level's leftovers instead of the command's.
        Args program = app->remaining();
        const bool after_dashes = program.empty();
        if (after_dashes) program = top.remaining();
        if (program.empty())
            return usageError("record", "no program to run; usage: fiberscope record -o FILE -- PROGRAM [ARGS...]");
        if (!after_dashes && program[0].size() > 1 && program[0][0] == '-')
            return usageError("record", "unknown option '" + cli::printable(program[0]) +
                                            "' (put '--' before a program whose name starts with '-')");
        if (const std::string clash = outputClash("-o", options->output, programPath(program[0]), "the program to run");
            !clash.empty())
            return usageError("record", clash);
        if (const std::string problem = unwritableOutput(options->output, "the trace", true); !problem.empty())
            return fileError("record", problem + "; choose another -o (nothing was run)");
        if (options->view) return fiberscope::viewer::runLiveViewer(program, options->output);
        return record(program, options->output);
    };
    return {app, run, [options] { return "recording " + options->output; }, true};
}

// ---------------------------------------------------------------------------
// fiberscope stats

Command addStats(CLI::App& top) {
    struct Options {
        std::string path;
        std::int64_t top = 20;
    };
    auto options = std::make_shared<Options>();
    CLI::App* app = addCommand(top, "stats", "summarise a trace: threads, fibers, latency",
                               "Summarises a trace: the recording, each thread's busy / idle / parked time,\n"
                               "switches, steals and wake-ups, the fibers that ran longest with their\n"
                               "schedule-to-run latency, and the latency over all fibers.");
    app->add_option("FILE", options->path, "the trace")->type_name("");
    cli::addParsedOption<std::int64_t>(*app, "--top", options->top, wholeNumber(1, 1'000'000),
                                       "how many fibers to list (default: 20)", "N");
    auto run = [app, options]() -> int {
        if (const std::string complaint = cli::leftoverComplaint(*app, "one trace file at a time"); !complaint.empty())
            return usageError("stats", complaint);
        if (options->path.empty()) return usageError("stats", "no trace file given");
        Trace trace;
        if (!loadTrace(options->path, trace)) return kBadFile;
        fiberscope::trace::StatsOptions stats;
        stats.top_fibers = static_cast<std::size_t>(options->top);
        stats.title = options->path;
        fiberscope::trace::writeStats(trace, std::cout, stats);
        std::cout.flush(); // (the summary first, then the warning, in that order on a terminal)
        warnIfInconsistent(options->path, trace);
        return kOk;
    };
    return {app, run, [options] { return "summarising " + options->path; }};
}

// ---------------------------------------------------------------------------
// fiberscope verify

Command addVerify(CLI::App& top) {
    struct Options {
        std::vector<std::string> paths;
        bool summary = false;
        std::int64_t max = 20;
        std::int64_t slack = 1000;
    };
    auto options = std::make_shared<Options>();
    CLI::App* app = addCommand(top, "verify", "check that a trace contradicts nothing the runtime did",
                               "Replays each trace against the rules of the scheduler's state machine\n"
                               "(tracer/FORMAT.md, \"Validation rules\") and prints one line per record that\n"
                               "breaks one: its time, thread, fiber, the rule and the records involved.\n"
                               "A trace recorded with FIBERSCOPE_TRACE_CHECK=1 also carries what the runtime\n"
                               "knew at its decisions; the replay and the viewer's model are held to it.\n"
                               "Exit status: 0 every trace is consistent, 1 a violation or an unreadable\n"
                               "file, 2 a usage error.");
    app->add_option("FILE", options->paths, "the traces")->type_name("");
    app->add_flag("--summary", options->summary, "print only each trace's count of violations by rule");
    cli::addParsedOption<std::int64_t>(*app, "--max", options->max, wholeNumber(1, 1'000'000),
                                       "violations printed per trace (default: 20; all are counted)", "N");
    cli::addParsedOption<std::int64_t>(*app, "--slack", options->slack, timeValue(cli::TimeSign::non_negative),
                                       "records of two threads closer than this are unordered (default: 1us, what two "
                                       "CPUs' clocks may differ by)",
                                       "TIME");
    auto run = [app, options]() -> int {
        if (const std::string complaint = cli::leftoverComplaint(*app, "trace files only"); !complaint.empty())
            return usageError("verify", complaint);
        if (options->paths.empty()) return usageError("verify", "no trace file given");
        int status = kOk;
        for (const std::string& path : options->paths) {
            Trace trace;
            if (!loadTrace(path, trace)) {
                status = kBadFile;
                continue;
            }
            fiberscope::analysis::ValidationOptions validation;
            validation.clock_slack_ns = options->slack;
            const fiberscope::analysis::ValidationReport report = fiberscope::trace::verifyTrace(trace, nullptr, validation);
            const std::string name = cli::printable(path, 4096);
            if (report.ok()) {
                std::printf("%s: consistent (%s records%s)\n", name.c_str(), std::to_string(trace.events.size()).c_str(),
                            report.truth_records ? (", " + std::to_string(report.truth_records) + " truth records checked").c_str() : "");
                continue;
            }
            status = kBadFile;
            std::printf("%s: %zu violation%s\n", name.c_str(), report.count, report.count == 1 ? "" : "s");
            if (options->summary) {
                for (std::size_t r = 0; r < fiberscope::analysis::kRuleCount; ++r)
                    if (report.by_rule[r])
                        std::printf("  %-22s %zu\n", fiberscope::analysis::kRules[r].name, report.by_rule[r]);
                continue;
            }
            std::size_t shown = 0;
            for (const auto& v : report.violations) {
                if (shown++ == static_cast<std::size_t>(options->max)) break;
                std::printf("  %s\n", fiberscope::trace::terminalSafe(fiberscope::analysis::describeViolation(trace, v)).c_str());
            }
            if (report.count > shown)
                std::printf("  ... and %zu more (--max N shows more, --summary counts them by rule)\n", report.count - std::min(shown, report.count));
        }
        return status;
    };
    return {app, run, [options] { return "verifying " + (options->paths.empty() ? std::string() : options->paths.front()); }};
}

// ---------------------------------------------------------------------------
// fiberscope export

Command addExport(CLI::App& top) {
    struct Options {
        std::string path, output;
        int format = 0; // chrome, the only one so far
    };
    auto options = std::make_shared<Options>();
    CLI::App* app = addCommand(top, "export", "convert a trace to Chrome/Perfetto JSON",
                               "Converts a trace to Chrome Trace Event JSON, which ui.perfetto.dev and\n"
                               "chrome://tracing open: one track per thread with the fiber runs, one track\n"
                               "per fiber (in the \"fibers\" process) with its runs and zones, and arrows for\n"
                               "wake-ups, steals and spawns.");
    app->add_option("FILE", options->path, "the trace")->type_name("");
    cli::addParsedOption<int>(
        *app, "-f,--format", options->format,
        [](std::string_view text, int& format, std::string& error) {
            if (text == "chrome") return format = 0, true;
            error = "unknown format '" + cli::printable(text) + "'; the only format is chrome";
            return false;
        },
        "the output format (chrome is the only one so far)", "chrome");
    app->add_option("-o,--output", options->output, "where to write; '-' for standard output")->type_name("OUT.json");
    auto run = [app, options]() -> int {
        if (const std::string complaint = cli::leftoverComplaint(*app, "one trace file at a time"); !complaint.empty())
            return usageError("export", complaint);
        if (options->path.empty()) return usageError("export", "no trace file given");
        const std::string& output = options->output;
        if (output.empty()) return usageError("export", "no output file given (-o OUT.json, or -o - for standard output)");
        if (output != "-") {
            if (const std::string clash = outputClash("-o", output, options->path, "the input trace"); !clash.empty())
                return usageError("export", clash);
            if (!checkTraceInput(options->path)) return kBadFile;
            if (const std::string problem = unwritableOutput(output, "the export", false); !problem.empty())
                return fileError("export", problem + "; choose another -o");
        }
        Trace trace;
        if (!loadTrace(options->path, trace)) return kBadFile;

        std::string error;
        if (output == "-") {
            if (!fiberscope::trace::writeChromeJson(trace, std::cout, error)) {
                std::fprintf(stderr, "fiberscope: cannot write to standard output: %s\n", error.c_str());
                return kBadFile;
            }
            std::cout.flush();
            warnIfInconsistent(options->path, trace);
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
            std::fprintf(stderr, "fiberscope: cannot write %s: %s\n", output.c_str(),
                         error.empty() ? "write failed" : error.c_str());
            return kBadFile;
        }
        std::printf("Wrote %s (Chrome trace JSON); open it in https://ui.perfetto.dev or chrome://tracing\n", output.c_str());
        std::fflush(stdout);
        warnIfInconsistent(options->path, trace);
        return kOk;
    };
    return {app, run, [options] { return "exporting " + options->path; }};
}

// ---------------------------------------------------------------------------
// fiberscope timeline

Command addTimeline(CLI::App& top) {
    struct Options {
        std::string path;
        std::int64_t rows = 60;
        std::int64_t bucket_ns = 0;
    };
    auto options = std::make_shared<Options>();
    CLI::App* app = addCommand(top, "timeline", "print a text map of which fiber ran where",
                               "Prints a map of which fiber ran on which thread over time: one column per\n"
                               "thread, one row per time bucket. A cell shows the fiber that ran longest in\n"
                               "the bucket (its id, + if others ran too), '.' idle, '_' parked (waiting in\n"
                               "the kernel). Marks label their row; named fibers are listed below.\n"
                               "Times take a unit: ns, us, ms (a bare number) or s.");
    app->add_option("FILE", options->path, "the trace")->type_name("");
    cli::addParsedOption<std::int64_t>(*app, "--rows", options->rows, wholeNumber(1, 1'000'000),
                                       "at most N rows (default: 60); the bucket is a round number", "N");
    cli::addParsedOption<std::int64_t>(*app, "--bucket", options->bucket_ns, timeValue(cli::TimeSign::positive),
                                       "a fixed bucket instead, e.g. 500us, 2ms, 1s", "DURATION");
    auto run = [app, options]() -> int {
        if (const std::string complaint = cli::leftoverComplaint(*app, "one trace file at a time"); !complaint.empty())
            return usageError("timeline", complaint);
        if (options->path.empty()) return usageError("timeline", "no trace file given");
        Trace trace;
        if (!loadTrace(options->path, trace)) return kBadFile;
        fiberscope::trace::TimelineOptions timeline;
        timeline.max_rows = static_cast<int>(options->rows);
        timeline.bucket_ns = options->bucket_ns;
        fiberscope::trace::writeTextTimeline(trace, std::cout, timeline);
        return kOk;
    };
    return {app, run, [options] { return "drawing the timeline of " + options->path; }};
}

// ---------------------------------------------------------------------------
// fiberscope view

// The program a --live command runs: what CLI11 put in the FILE slot (the
// program's name), then what it left over, the command's and, after "--",
// the top level's. Only the first "--" (the one that ends our options) is
// dropped: the program's own arguments stay as they are.
Args liveProgram(const std::string& file_slot, const CLI::App& app, const CLI::App& top) {
    Args program;
    if (!file_slot.empty()) program.push_back(file_slot);
    Args rest = app.remaining();
    for (const std::string& arg : top.remaining()) rest.push_back(arg);
    bool separator_seen = false;
    for (const std::string& arg : rest) {
        if (arg == "--" && !separator_seen) {
            separator_seen = true;
            continue;
        }
        program.push_back(arg);
    }
    return program;
}

// What is wrong with a --live program, or "" (`usage`: the command's form).
std::string liveProgramComplaint(const Args& program, const std::string& usage) {
    if (program.empty()) return "--live needs a program to run; usage: " + usage;
    if (program[0].size() > 1 && program[0][0] == '-')
        return "unknown option '" + cli::printable(program[0]) + "' (put '--' before a program whose name starts with '-')";
    return {};
}

int view(const std::string& path, const std::string& compare) {
    if (!path.empty() && !checkTraceInput(path)) return kBadFile;
    if (!compare.empty() && !checkTraceInput(compare)) return kBadFile;
    return fiberscope::viewer::runViewer(path, 0, compare);
}

Command addView(CLI::App& top, cli::HelpFormatter& help) {
    struct Options {
        std::string path;
        bool live = false;
        std::string output = "fiberscope.fstrace";
        std::string compare;
    };
    auto options = std::make_shared<Options>();
    CLI::App* app = addCommand(top, "view", "open a trace in the viewer",
                               "Opens the Fiberscope viewer (on FILE if given): per-thread and per-fiber\n"
                               "timelines, flows between threads, the scheduler's state at any instant,\n"
                               "statistics of a range, and every event explained. Needs a display; without\n"
                               "one, use 'fiberscope screenshot'. With no command at all, fiberscope opens it.\n"
                               "A FILE still being recorded is followed as it grows. With --live, runs\n"
                               "PROGRAM recording into FILE (-o) and shows its timeline growing while it runs;\n"
                               "exits with the program's status.");
    help.setSynopsis(app, "[FILE [--compare OTHER]] | --live [-o FILE] -- PROGRAM [ARGS...]");
    help.markOptional(app->add_option("FILE", options->path, "the trace (optional: File > Open, or drop a file)")->type_name(""));
    app->add_flag("--live", options->live, "run PROGRAM (after --) and watch its trace while it runs");
    app->add_option("-o,--output", options->output, "with --live: where to write the trace (default: fiberscope.fstrace)")
        ->type_name("FILE");
    app->add_option("--compare", options->compare,
                    "a second trace, drawn under the first with its totals beside (as the lesson panel's Compare)")
        ->type_name("OTHER");
    auto run = [app, &top, options]() -> int {
        if (options->live && app->count("--compare")) return usageError("view", "--compare goes with a FILE, not with --live");
        if (app->count("--compare") && options->path.empty()) return usageError("view", "--compare needs a FILE to compare it with");
        if (!options->live) {
            if (const std::string complaint = cli::leftoverComplaint(*app, "one trace at a time"); !complaint.empty())
                return usageError("view", complaint);
            if (app->count("--output")) return usageError("view", "-o only goes with --live (it names the trace to record)");
            if (!top.remaining().empty()) return usageError("view", "a program to run needs --live; usage: fiberscope view --live -- PROGRAM [ARGS...]");
            return view(options->path, options->compare);
        }
        const Args program = liveProgram(options->path, *app, top);
        if (const std::string complaint = liveProgramComplaint(program, "fiberscope view --live -- PROGRAM [ARGS...]");
            !complaint.empty())
            return usageError("view", complaint);
        if (const std::string clash = outputClash("-o", options->output, programPath(program[0]), "the program to run");
            !clash.empty())
            return usageError("view", clash);
        if (const std::string problem = unwritableOutput(options->output, "the trace", true); !problem.empty())
            return fileError("view", problem + "; choose another -o (nothing was run)");
        return fiberscope::viewer::runLiveViewer(program, options->output);
    };
    return {app, run, [options] { return options->live ? "watching " + options->output : "viewing " + options->path; }, true};
}

// ---------------------------------------------------------------------------
// fiberscope screenshot

Command addScreenshot(CLI::App& top) {
    struct Options {
        fiberscope::viewer::ScreenshotOptions shot;
        std::int64_t lesson = 0;
        std::pair<std::int64_t, std::int64_t> range;
        bool live = false;
        std::int64_t motion = -1; // --motion PERCENT
        std::int64_t steps = 0;   // --steps N
    };
    auto options = std::make_shared<Options>();
    fiberscope::viewer::ScreenshotOptions& shot = options->shot;
    CLI::App* app = addCommand(top, "screenshot", "render the viewer's view of a trace to a PNG (headless)",
                               "Renders the viewer's view of FILE to a PNG without a window. With no display\n"
                               "it starts Xvfb for the duration (apt-get install xvfb), which dies with it.\n"
                               "Times take a unit: ns, us, ms (a bare number) or s, e.g. --range 1.5ms:4ms\n"
                               "--cursor 2ms. With --live, runs PROGRAM (after --) recording into --trace FILE\n"
                               "and takes the picture --after DURATION into the run, while it still runs\n"
                               "(then stops it): what 'fiberscope view --live' would show at that moment.");
    app->add_option("FILE", shot.trace, "the trace")->type_name("");
    app->add_option("-o,--output", shot.output, "the PNG to write")->type_name("OUT.png");
    cli::addParsedOption<std::pair<std::int64_t, std::int64_t>>(
        *app, "--range", options->range,
        [&shot](std::string_view text, std::pair<std::int64_t, std::int64_t>& range, std::string& error) {
            if (!cli::parseTimeRange(text, range.first, range.second, error)) return false;
            shot.has_range = true;
            return true;
        },
        "the time range to show, e.g. 2ms:5ms (default: all of it)", "START:END");
    cli::addParsedOption<int>(
        *app, "--size", shot.width,
        [&shot](std::string_view text, int& width, std::string& error) {
            return cli::parseSize(text, 320, 8192, width, shot.height, error);
        },
        "the picture's size, 320x240 to 8192x8192 (default: 1600x900)", "WxH");
    cli::addParsedOption<std::int64_t>(*app, "--cursor", shot.cursor_ns, timeValue(cli::TimeSign::non_negative),
                                       "pin the scheduler state at this time, e.g. 3ms (default: the view's middle)",
                                       "TIME");
    cli::addParsedOption<fiberscope::viewer::SidePanel>(
        *app, "--panel", shot.panel,
        [choose = oneOf(fiberscope::viewer::sidePanelNames(), "a panel")](std::string_view text,
                                                                         fiberscope::viewer::SidePanel& panel,
                                                                         std::string& error) {
            int index = 0;
            if (!choose(text, index, error)) return false;
            panel = fiberscope::viewer::kSidePanels[static_cast<std::size_t>(index)].panel;
            return true;
        },
        "the side panel to show (default: state)", "PANEL");
    cli::addParsedOption<std::int64_t>(*app, "--lesson", options->lesson, wholeNumber(1, std::numeric_limits<int>::max()),
                                       "show lesson N's narrative in the lesson panel", "N");
    app->add_flag("--open-dialog", shot.open_dialog, "show the Open dialog (for documentation)");
    app->add_option("--compare", shot.compare_trace, "a second trace in the compare slot (as the lesson panel's Compare)")->type_name("FILE");
    cli::addParsedOption<std::int64_t>(*app, "--motion", options->motion, wholeNumber(0, 100),
                                       "freeze the state panel's chips PERCENT of the way into the cursor's state (for tests)",
                                       "PERCENT");
    cli::addParsedOption<std::int64_t>(*app, "--steps", options->steps, wholeNumber(0, 10000),
                                       "step N scheduling decisions (the lesson panel's step >) before the picture", "N");
    app->add_flag("--live", options->live, "run PROGRAM (after --) and picture it while it runs");
    cli::addParsedOption<std::int64_t>(*app, "--after", shot.live_after_ns, timeValue(cli::TimeSign::positive),
                                       "with --live: when to take the picture (default: 1s)", "DURATION");
    app->add_option("--trace", shot.live_trace, "with --live: where the program records (default: fiberscope.fstrace)")
        ->type_name("FILE");
    auto run = [app, &top, options]() -> int {
        fiberscope::viewer::ScreenshotOptions& shot = options->shot;
        if (options->live) {
            const Args program = liveProgram(shot.trace, *app, top);
            if (const std::string complaint =
                    liveProgramComplaint(program, "fiberscope screenshot --live -o out.png -- PROGRAM [ARGS...]");
                !complaint.empty())
                return usageError("screenshot", complaint);
            if (shot.output.empty()) return usageError("screenshot", "where to? add -o out.png");
            if (shot.live_trace.empty()) shot.live_trace = "fiberscope.fstrace";
            if (const std::string clash = outputClash("--trace", shot.live_trace, programPath(program[0]), "the program to run");
                !clash.empty())
                return usageError("screenshot", clash);
            if (const std::string clash = outputClash("-o", shot.output, shot.live_trace, "the trace it records"); !clash.empty())
                return usageError("screenshot", clash);
            shot.live_program = program;
            shot.trace.clear();
        } else {
            if (const std::string complaint = cli::leftoverComplaint(*app, "one trace at a time"); !complaint.empty())
                return usageError("screenshot", complaint);
            if (!top.remaining().empty()) return usageError("screenshot", "a program to run needs --live");
            if (app->count("--after") || app->count("--trace")) return usageError("screenshot", "--after and --trace only go with --live");
            if (shot.trace.empty()) return usageError("screenshot", "which trace? fiberscope screenshot FILE -o out.png");
            if (shot.output.empty()) return usageError("screenshot", "where to? add -o out.png");
            if (const std::string clash = outputClash("-o", shot.output, shot.trace, "the input trace"); !clash.empty())
                return usageError("screenshot", clash);
        }
        if (options->lesson > 0) {
            std::string catalogue_error, error;
            const auto lessons = fiberscope::viewer::loadLessons(catalogue_error);
            if (!findLesson(lessons, options->lesson, catalogue_error, error)) {
                std::fprintf(stderr, "fiberscope screenshot: --lesson: %s\n", error.c_str());
                return kUsage;
            }
            shot.lesson = static_cast<int>(options->lesson);
            shot.panel = fiberscope::viewer::SidePanel::Lesson;
        }
        if (options->motion >= 0) shot.motion_fraction = static_cast<float>(options->motion) / 100.0f;
        shot.steps = static_cast<int>(options->steps);
        if (!shot.compare_trace.empty()) {
            if (const std::string clash = outputClash("-o", shot.output, shot.compare_trace, "the compared trace"); !clash.empty())
                return usageError("screenshot", clash);
            if (!checkTraceInput(shot.compare_trace)) return kBadFile;
        }
        if (shot.has_range) {
            shot.range_start_ns = static_cast<double>(options->range.first);
            shot.range_end_ns = static_cast<double>(options->range.second);
        }
        if (!options->live && !checkTraceInput(shot.trace)) return kBadFile;
        if (options->live)
            if (const std::string problem = unwritableOutput(shot.live_trace, "the trace", true); !problem.empty())
                return fileError("screenshot", problem + "; choose another --trace (nothing was run)");
        if (const std::string problem = unwritableOutput(shot.output, "the picture", false); !problem.empty())
            return fileError("screenshot", problem + "; choose another -o" + (options->live ? " (nothing was run)" : ""));
        const int status = fiberscope::viewer::runScreenshot(shot);
        if (status == 0) std::printf("wrote %s\n", shot.output.c_str());
        return status;
    };
    return {app, run, [options] { return "rendering " + (options->live ? options->shot.live_trace : options->shot.trace); }, true};
}

// ---------------------------------------------------------------------------
// fiberscope lessons, fiberscope lesson

Command addLessons(CLI::App& top) {
    CLI::App* app = addCommand(top, "lessons", "list the lessons of the course",
                               "Lists the lessons of the course: a small program each, a narrative, and a\n"
                               "trace whose scheduling phenomenon the viewer shows and explains.");
    auto run = [app]() -> int {
        if (const std::string complaint = cli::leftoverComplaint(*app, "takes no arguments"); !complaint.empty())
            return usageError("lessons", complaint);
        std::string error;
        const auto lessons = fiberscope::viewer::loadLessons(error);
        if (lessons.empty()) {
            std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
            return kBadFile;
        }
        std::printf("The Fiberscope course (run one with 'fiberscope lesson N'):\n\n");
        for (const auto& lesson : lessons) std::printf("  %2d  %s\n", lesson.number, lesson.title.c_str());
        return kOk;
    };
    return {app, run, [] { return std::string("listing the lessons"); }};
}

// `fiberscope lesson N --reference`: the lesson's golden trace (shipped in
// assets/traces, Lesson::reference) shown as a run of it would be, without
// running anything: its text timeline, then the viewer, or with no display a
// PNG of its opening view (to -o's name with .png, else in $TMPDIR or /tmp).
// What it reads and writes is checked before it prints anything.
int showLessonReference(const fiberscope::viewer::Lesson& lesson, const std::string& output, bool no_view) {
    const char* display = std::getenv("DISPLAY");
    const bool view = !no_view && display && *display;
    fiberscope::viewer::ScreenshotOptions shot;
    shot.trace = lesson.reference;
    shot.lesson = lesson.number;
    shot.panel = fiberscope::viewer::SidePanel::Lesson;
    if (output.empty()) {
        const char* tmp = std::getenv("TMPDIR");
        shot.output = std::string(tmp && *tmp ? tmp : "/tmp") + "/fiberscope-lesson" + lesson.slug + "-reference.png";
    } else {
        shot.output = output.ends_with(".png") ? output
                                               : output.substr(0, output.size() - (output.ends_with(".fstrace") ? 8 : 0)) + ".png";
    }
    if (!view) {
        if (const std::string clash = outputClash("-o", shot.output, lesson.reference, "the reference trace"); !clash.empty())
            return usageError("lesson", clash);
    }
    if (!checkTraceInput(lesson.reference)) return kBadFile;
    if (!view)
        if (const std::string problem = unwritableOutput(shot.output, "the picture", false); !problem.empty())
            return fileError("lesson", problem + "; choose another -o");
    std::printf("== Lesson %d: %s (the reference run) ==\n", lesson.number, lesson.title.c_str());
    if (!lesson.summary.empty()) std::printf("%s\n", lesson.summary.c_str());
    Trace trace;
    if (!loadTrace(lesson.reference, trace)) return kBadFile;
    std::printf("\n-- what the scheduler did (reference trace, recorded on a quiet machine: %s) --\n",
                lesson.reference.c_str());
    std::fflush(stdout);
    fiberscope::trace::writeTextTimeline(trace, std::cout);
    std::cout.flush();
    if (view) return fiberscope::viewer::runViewer(lesson.reference, lesson.number);
    if (const int status = fiberscope::viewer::runScreenshot(shot); status != 0) return status;
    std::printf("\nNo display%s: wrote the reference run's picture to %s\n", no_view ? " wanted (--no-view)" : "",
                shot.output.c_str());
    std::printf("Open it interactively with: fiberscope lesson %d --reference\n", lesson.number);
    return kOk;
}

Command addLesson(CLI::App& top) {
    struct Options {
        std::string number, output;
        std::int64_t threads = 0;
        int backend = 0; // index into kLessonBackends: automatic, uring, epoll
        int scheduler = -1; // -1: the lesson's; 0 seed, 1 scaling (kLessonSchedulers[scheduler + 1])
        bool no_view = false;
        bool check = false; // run, then check the lesson's exercise on the trace (checks.md)
        bool reference = false; // show the lesson's golden trace instead of running it
        bool pin = false;       // pin the program's workers to CPUs
    };
    auto options = std::make_shared<Options>();
    CLI::App* app = addCommand(top, "lesson", "run a lesson (on io_uring or epoll), show its trace and explain it",
                               "Runs lesson N's program with tracing on, records its trace (to FILE, else\n"
                               "a file in $TMPDIR or /tmp), prints a text timeline (one column per worker\n"
                               "thread), then opens the viewer on it. With no display (or --no-view) it\n"
                               "writes a PNG of the viewer's picture instead and says where.\n"
                               "With --reference it runs nothing: it shows the lesson's reference run, the\n"
                               "golden trace shipped with the course (recorded on a quiet machine).");
    app->add_option("N", options->number, "the lesson's number (see 'fiberscope lessons')")->type_name("");
    cli::addParsedOption<std::int64_t>(*app, "--threads", options->threads, wholeNumber(1, 256),
                                       "the program's worker threads, 1 to 256 (default: the lesson's)", "K");
    cli::addParsedOption<int>(
        *app, "--backend", options->backend,
        [](std::string_view text, int& backend, std::string& error) {
            if (text == "uring" || text == "io_uring") return backend = 1, true;
            if (text == "epoll") return backend = 2, true;
            error = "\"" + cli::printable(text) + "\" is not a backend (use uring or epoll)";
            return false;
        },
        "its I/O backend, uring or epoll (default: automatic: FIBERSCOPE_BACKEND\n"
        "if set, else io_uring, or epoll where the kernel refuses io_uring); see lesson 13",
        "B");
    cli::addParsedOption<int>(*app, "--scheduler", options->scheduler, oneOf({"seed", "scaling"}, "a scheduler policy"),
                              "its scheduler policy, seed or scaling (default: the lesson's, the seed's;\n"
                              "the runtime's own default is scaling); see lesson 15",
                              "P");
    app->add_flag("--pin", options->pin,
                  "pin each of its worker threads to a CPU of its own, for a picture that\n"
                  "changes less from run to run (EventLoopOptions::pin_workers)");
    app->add_option("-o,--output", options->output, "where to write the trace")->type_name("FILE");
    app->add_flag("--no-view", options->no_view, "write the PNG even with a display");
    app->add_flag("--check", options->check,
                  "run it, then say whether the trace shows what the lesson's exercise\n"
                  "(its checks.md) expects of a changed main.cpp; exit 0 if it does, 1 if not");
    app->add_flag("--reference", options->reference,
                  "do not run it: show its reference run (the golden trace shipped with the\n"
                  "course); with no display its PNG goes to -o's name with .png");
    auto run = [app, options]() -> int {
        if (const std::string complaint = cli::leftoverComplaint(*app, "one lesson at a time"); !complaint.empty())
            return usageError("lesson", complaint);
        if (options->number.empty())
            return usageError("lesson", "which lesson? e.g. 'fiberscope lesson 1' (list: 'fiberscope lessons')");
        std::int64_t number = 0;
        std::string error;
        if (!cli::parseWholeNumber(options->number, 1, std::numeric_limits<std::int64_t>::max(), number, error)) {
            std::fprintf(stderr, "fiberscope lesson: '%s' is not a lesson number; see 'fiberscope lessons'\n",
                         cli::printable(options->number).c_str());
            return kUsage;
        }
        std::string catalogue_error;
        const auto lessons = fiberscope::viewer::loadLessons(catalogue_error);
        const fiberscope::viewer::Lesson* lesson = findLesson(lessons, number, catalogue_error, error);
        if (!lesson) {
            std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
            return kUsage;
        }
        if (options->reference) {
            if (options->check || options->pin || app->count("--threads") || app->count("--backend") || app->count("--scheduler"))
                return usageError("lesson", "--reference shows the shipped trace: it takes no --threads, --backend, --scheduler, "
                                            "--pin or --check");
            return showLessonReference(*lesson, options->output, options->no_view);
        }
        const fiberscope::viewer::LessonArguments arguments{static_cast<int>(options->threads),
                                                            fiberscope::viewer::kLessonBackends[options->backend],
                                                            fiberscope::viewer::kLessonSchedulers[options->scheduler + 1],
                                                            options->pin};
        std::string output = options->output;
        if (output.empty()) {
            const char* tmp = std::getenv("TMPDIR");
            output = std::string(tmp && *tmp ? tmp : "/tmp") + "/fiberscope-lesson" + lesson->slug +
                     (arguments.backend.empty() ? "" : "-" + arguments.backend) +
                     (arguments.scheduler.empty() ? "" : "-" + arguments.scheduler) + ".fstrace";
        }
        if (const std::string clash = outputClash("-o", output, lesson->program, "the lesson's program"); !clash.empty())
            return usageError("lesson", clash);
        fiberscope::viewer::checks::LessonChecks checks;
        if (options->check) {
            if (lesson->checks.empty())
                return usageError("lesson", "lesson " + std::to_string(lesson->number) + " has no exercise to check (no checks.md)");
            if (!fiberscope::viewer::checks::parseChecks(lesson->checks, lesson->slug + "/checks.md", checks, error)) {
                std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
                return kBadFile;
            }
            if (!checks.has_exercise)
                return usageError("lesson", "lesson " + std::to_string(lesson->number) + "'s checks.md has no exercise");
        }
        // What it runs and writes, before it prints or runs anything: the
        // program, the trace, and (with no view, unless it only checks) the
        // picture beside the trace.
        const char* display = std::getenv("DISPLAY");
        const bool view = !options->no_view && display && *display;
        const std::string picture =
            output.substr(0, output.size() - (output.size() > 8 && output.ends_with(".fstrace") ? 8 : 0)) + ".png";
        if (const std::string missing = fiberscope::viewer::lessonProgramMissing(*lesson); !missing.empty())
            return fileError("lesson", missing);
        if (const std::string problem = unwritableOutput(output, "the trace", true); !problem.empty())
            return fileError("lesson", problem + "; choose another -o (nothing was run)");
        if (!view && !options->check)
            if (const std::string problem = unwritableOutput(picture, "the picture", false); !problem.empty())
                return fileError("lesson", problem + " (it goes beside the trace); choose another -o (nothing was run)");
        std::printf("== Lesson %d: %s ==\n", lesson->number, lesson->title.c_str());
        if (!lesson->summary.empty()) std::printf("%s\n", lesson->summary.c_str());
        std::printf("\n-- the program says --\n");
        std::fflush(stdout);
        fiberscope::viewer::LessonRun run;
        // A run that misses the phenomenon's preconditions (checks.md
        // `requires:`; a loaded machine) is said in one line and run again.
        const auto say = [](const std::string& line) {
            std::printf("\nfiberscope lesson: %s\n\n-- the program says (again) --\n", line.c_str());
            std::fflush(stdout);
        };
        if (!fiberscope::viewer::runLessonShown(*lesson, arguments, output, true, run, error, say)) {
            std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
            return kBadFile;
        }
        if (!run.unmet.empty())
            std::printf("\nfiberscope lesson: %d runs and none showed the lesson's phenomenon (a busy machine?): %s; "
                        "showing the last (or: fiberscope lesson %d --reference)\n",
                        run.attempt, run.unmet.c_str(), lesson->number);
        Trace trace;
        if (!loadTrace(output, trace)) return kBadFile;
        if (options->check) {
            // The exercise, the value its query finds on this run, and the verdict: 0 if it appeared, 1 if not.
            const auto& exercise = checks.exercise;
            std::printf("\n-- the exercise (trace: %s) --\n%s\n\nexpect: %s\n", output.c_str(), exercise.text.c_str(),
                        exercise.expect.text.c_str());
            bool appeared = false;
            std::int64_t value = 0;
            if (!fiberscope::viewer::checks::holds(exercise.expect, trace, appeared, value, error)) {
                std::printf("The phenomenon did not appear: %s.\n", error.c_str());
                return 1;
            }
            const std::string found = fiberscope::viewer::checks::describeAnswer(exercise.expect.query.kind, value);
            std::printf("found:  %s is %s\n", exercise.expect.query.text.c_str(), found.c_str());
            if (appeared) std::printf("\nThe phenomenon appeared. %s\n", exercise.says.c_str());
            else
                std::printf("\nThe phenomenon did not appear (the trace shows %s, as the unchanged lesson does: is main.cpp "
                            "changed and rebuilt?).\nWhen it does: %s\n",
                            found.c_str(), exercise.says.c_str());
            return appeared ? kOk : 1;
        }
        std::printf("\n-- what the scheduler did (trace: %s) --\n", output.c_str());
        std::fflush(stdout);
        fiberscope::trace::writeTextTimeline(trace, std::cout);
        std::cout.flush();
        if (view) return fiberscope::viewer::runViewer(output, lesson->number);
        fiberscope::viewer::ScreenshotOptions shot;
        shot.trace = output;
        shot.lesson = lesson->number;
        shot.panel = fiberscope::viewer::SidePanel::Lesson;
        shot.output = picture;
        if (const int status = fiberscope::viewer::runScreenshot(shot); status != 0) return status;
        std::printf("\nNo display%s: wrote the viewer's picture to %s\n", options->no_view ? " wanted (--no-view)" : "",
                    shot.output.c_str());
        std::printf("Open it interactively with: fiberscope view %s\n", output.c_str());
        return kOk;
    };
    return {app, run, [options] { return "running lesson " + options->number; }};
}

// ---------------------------------------------------------------------------
// fiberscope benchmark

Command addBenchmark(CLI::App& top) {
    auto events = std::make_shared<std::int64_t>(10'000'000);
    CLI::App* app = addCommand(top, "benchmark", "measure the viewer's load and frame times at 10k and 10M events",
                               "Measures the viewer at scale: writes a 10k-event and an N-event (default\n"
                               "10 million) synthetic trace, then reports the reader's time, the load time\n"
                               "(reader + model), the frame time while panning at three zoom levels and the\n"
                               "memory (file size, resident memory while viewing, peak while loading, the\n"
                               "model's bytes per structure) for each, with the ratios the viewer is held\n"
                               "to (frame time at N events <= 2x at 10k; load <= 2x read; resident memory\n"
                               "<= 5x the file).\n"
                               "Then records for 4 s while a live view follows the file, and reports the\n"
                               "delay from a record being made to a frame drawing it (median, p99; target\n"
                               "p99 <= 250 ms). Starts Xvfb when there is no display.");
    cli::addParsedOption<std::int64_t>(*app, "--events", *events, wholeNumber(10'000, 100'000'000),
                                       "events in the large trace, 10000 to 100000000 (default: 10000000)", "N");
    auto run = [app, events]() -> int {
        if (const std::string complaint = cli::leftoverComplaint(*app, "takes no arguments"); !complaint.empty())
            return usageError("benchmark", complaint);
        return fiberscope::viewer::runViewerBenchmark(static_cast<std::uint64_t>(*events));
    };
    return {app, run, [] { return std::string("benchmarking the viewer"); }};
}

// ---------------------------------------------------------------------------
// Dispatch

// Parses the command line and runs the command it names. `activity` is kept
// up to date for main's out-of-memory message.
int runCommandLine(int argc, char** argv, std::string& activity) {
    activity = "reading the command line";
    CLI::App top("Record fiber-scheduler traces and look at them: the trace tools, the viewer and the course.",
                 "fiberscope");
    auto help = std::make_shared<cli::HelpFormatter>();
    help->label("Usage", "usage");
    help->label("Positionals", "arguments");
    help->label("OPTIONS", "options");
    help->setSynopsis(&top, "[COMMAND] [ARGS...]");
    top.formatter(help);
    top.failure_message(cli::oneLineFailure);
    top.footer("'fiberscope COMMAND --help' describes a command. With no command, the viewer opens.");
    top.option_defaults()->group("options"); // lower case, like "usage:" and "commands:"
    top.set_help_flag("-h,--help", "show this help");
    top.set_version_flag("--version", std::string("fiberscope ") + FIBERSCOPE_VERSION, "print the version");
    top.allow_extras();
    top.require_subcommand(0, 1);

    std::vector<Command> commands;
    commands.push_back(addRecord(top, *help));
    commands.push_back(addStats(top));
    commands.push_back(addTimeline(top));
    commands.push_back(addExport(top));
    commands.push_back(addVerify(top));
    commands.push_back(addView(top, *help));
    commands.push_back(addLessons(top));
    commands.push_back(addLesson(top));
    commands.push_back(addBenchmark(top));
    commands.push_back(addScreenshot(top));

    // `fiberscope help [COMMAND]`, as well as --help.
    auto help_topic = std::make_shared<std::string>();
    CLI::App* help_command = addCommand(top, "help", "describe a command", "");
    help->markOptional(help_command->add_option("COMMAND", *help_topic, "the command to describe")->type_name(""));
    commands.push_back({help_command, [&top, help_command, help_topic]() -> int {
                            if (const std::string complaint = cli::leftoverComplaint(*help_command, "one command at a time");
                                !complaint.empty())
                                return usageError("help", complaint);
                            if (help_topic->empty()) {
                                std::cout << top.help();
                                return kOk;
                            }
                            for (const CLI::App* app : top.get_subcommands([](const CLI::App*) { return true; }))
                                if (app->get_name() == *help_topic) {
                                    std::cout << app->help("fiberscope");
                                    return kOk;
                                }
                            return usageError("", "unknown command '" + cli::printable(*help_topic) + "'");
                        },
                        [] { return std::string("printing help"); }});

    try {
        top.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        // Help and --version are "errors" that succeed; the rest print one line.
        return top.exit(error) == 0 ? kOk : kUsage;
    }

    const std::vector<CLI::App*> chosen = top.get_subcommands();
    const Command* command = nullptr;
    for (const Command& c : commands)
        if (!chosen.empty() && c.app == chosen.front()) command = &c;
    // The top level has no options that take a value, so whatever it did not
    // know came before the command (argv[1] is then not the command's name)
    // or, after record's "--", is the program to run.
    std::vector<std::string> leftovers = top.remaining();
    if (command && command->takes_top_leftovers && argc > 1 && command->app->get_name() == argv[1]) leftovers.clear();
    if (!leftovers.empty()) {
        const std::string& first = leftovers.front();
        if (first.size() > 1 && first[0] == '-') return usageError("", "unknown option '" + cli::printable(first) + "'");
        return usageError("", "unknown command '" + cli::printable(first) + "'");
    }
    if (!command) {
        activity = "opening the viewer";
        return view("", ""); // the viewer is the default
    }
    activity = cli::printable(command->activity(), 300);
    return command->run();
}

} // namespace

int main(int argc, char** argv) {
    std::string activity;
    try {
        return runCommandLine(argc, argv, activity);
    } catch (const std::bad_alloc&) {
        // Without allocating: the message is built from what exists already.
        std::fputs("fiberscope: out of memory while ", stderr);
        std::fputs(activity.c_str(), stderr);
        std::fputs(" (free some memory or raise 'ulimit -v')\n", stderr);
        return kBadFile;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "fiberscope: failed while %s: %s\n", activity.c_str(),
                     fiberscope::cli::printable(error.what(), 300).c_str());
        return kBadFile;
    }
}
