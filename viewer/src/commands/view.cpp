// `fiberscope view TRACE` (and with no command): the viewer; `--live` follows a program.

#include <cstdio>
#include <string>
#include <vector>

#include "ui/viewer_main.hpp"
#include "commands/command.hpp"

namespace fiberscope::commands {

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

} // namespace fiberscope::commands
