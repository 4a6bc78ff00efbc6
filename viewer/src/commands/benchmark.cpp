// `fiberscope benchmark`: the viewer's load and frame times.

#include <string>

#include "ui/viewer_main.hpp"
#include "commands/command.hpp"

namespace fiberscope::commands {

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

} // namespace fiberscope::commands
