// `fiberscope stats TRACE`: threads, fibers, latency.

#include <cstdio>
#include <iostream>
#include <string>

#include "trace_tools.hpp"
#include "commands/command.hpp"

namespace fiberscope::commands {

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

} // namespace fiberscope::commands
