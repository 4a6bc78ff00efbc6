// `fiberscope timeline TRACE`: a text map of which fiber ran where.

#include <cstdio>
#include <iostream>
#include <string>

#include "trace_tools.hpp"
#include "commands/command.hpp"

namespace fiberscope::commands {

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

} // namespace fiberscope::commands
