// `fiberscope export --format chrome TRACE -o out.json`.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "trace_tools.hpp"
#include "commands/command.hpp"

namespace fiberscope::commands {

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

} // namespace fiberscope::commands
