// The `fiberscope` command's subcommands, one file each (commands/*.cpp),
// and what they share: the exit codes, the one-line errors, the checks on
// input and output files and the value parsers. main.cpp reads the command
// line and runs the one chosen. Add a command: a file with its add...()
// function (its options, and what runs it), declared here, and one line in
// main.cpp's list.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command_line.hpp"
#include "cli/values.hpp"
#include "fiberscope/trace_reader.hpp"
#include "lessons/catalog.hpp"

namespace fiberscope::commands {

namespace cli = fiberscope::cli;
using fiberscope::trace::ReadError;
using fiberscope::trace::Trace;
using Args = std::vector<std::string>;

// Exit codes: 0 success, 1 a file could not be read or written (or memory
// ran out), 2 a usage error; `record` exits with the program's status.
constexpr int kOk = 0;
constexpr int kBadFile = 1;
constexpr int kUsage = 2;

// A subcommand's entry in the dispatch: how to run it once parsed, and what
// it is doing, for the out-of-memory message ("exporting t.fstrace").
struct Command {
    CLI::App* app = nullptr;
    std::function<int()> run;
    std::function<std::string()> activity;
    bool takes_top_leftovers = false; // record: after "--", its program lands there
};

// --- Shared (common.cpp) ------------------------------------------------------

int usageError(const std::string& command, const std::string& message);
bool checkTraceInput(const std::string& path);
std::string outputClash(const std::string& option, const std::string& output, const std::string& input,
                        const char* input_role);
std::string unwritableOutput(const std::string& path, const char* what, bool trace);
int fileError(const std::string& command, const std::string& message);
bool loadTrace(const std::string& path, Trace& trace);
void warnIfInconsistent(const std::string& path, const Trace& trace);
const fiberscope::viewer::Lesson* findLesson(const std::vector<fiberscope::viewer::Lesson>& lessons, std::int64_t number,
                                             const std::string& catalogue_error, std::string& error);
std::function<bool(std::string_view, std::int64_t&, std::string&)> wholeNumber(std::int64_t min, std::int64_t max);
std::function<bool(std::string_view, std::int64_t&, std::string&)> timeValue(cli::TimeSign sign);
std::function<bool(std::string_view, int&, std::string&)> oneOf(std::vector<std::string> words, std::string what);
CLI::App* addCommand(CLI::App& top, const std::string& name, const std::string& summary, const std::string& details);

// --- The commands -------------------------------------------------------------

Command addRecord(CLI::App& top, cli::HelpFormatter& help); // record.cpp
std::string programPath(const std::string& name);           // record.cpp: a program named on the command line, found
Command addStats(CLI::App& top);                            // stats.cpp
Command addVerify(CLI::App& top);                           // verify.cpp
Command addExport(CLI::App& top);                           // export.cpp
Command addTimeline(CLI::App& top);                         // timeline.cpp
Command addRecords(CLI::App& top);                          // records.cpp
Command addView(CLI::App& top, cli::HelpFormatter& help);   // view.cpp
int view(const std::string& path, const std::string& compare); // view.cpp: the viewer, the default command
Args liveProgram(const std::string& file_slot, const CLI::App& app, const CLI::App& top); // view.cpp
std::string liveProgramComplaint(const Args& program, const std::string& usage);       // view.cpp
Command addScreenshot(CLI::App& top);                       // screenshot.cpp
Command addLessons(CLI::App& top);                          // lesson.cpp
Command addLesson(CLI::App& top);                           // lesson.cpp
Command addBenchmark(CLI::App& top);                        // benchmark.cpp

} // namespace fiberscope::commands
