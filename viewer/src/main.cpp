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
// add...() function in commands/ that declares its options and returns what
// runs it (commands/command.hpp says how to add one).
#include <cstdio>
#include <iostream>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "commands/command.hpp"

#ifndef FIBERSCOPE_VERSION
#define FIBERSCOPE_VERSION "dev"
#endif

namespace {

using namespace fiberscope::commands;

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
    commands.push_back(addRecords(top));
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
