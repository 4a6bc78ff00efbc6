// `fiberscope record -o out.fstrace -- ./prog args...`: runs a program with tracing on.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "trace_tools.hpp"
#include "platform/child_process.hpp"
#include "ui/viewer_main.hpp"
#include "commands/command.hpp"

namespace fiberscope::commands {

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

} // namespace fiberscope::commands
