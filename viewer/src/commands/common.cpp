// What the subcommands share (commands/command.hpp).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "fiberscope/analysis/validate.hpp"
#include "trace_tools.hpp"
#include "commands/command.hpp"

namespace fiberscope::commands {

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

} // namespace fiberscope::commands
