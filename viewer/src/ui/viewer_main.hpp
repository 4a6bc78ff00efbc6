// Entry points of the GUI for the `fiberscope` command.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ui/side_panel.hpp"

namespace fiberscope::viewer {

// Opens the viewer window (on `path`, or empty). Returns a process exit code.
// `lesson` > 0: show that lesson's narrative beside the trace. `compare`:
// a second trace in the compare slot (as the lesson panel's Compare).
// A file whose recording is still going on is followed as it grows.
int runViewer(const std::string& path, int lesson = 0, const std::string& compare = {});
// Runs `program` recording into `trace_path` and shows its timeline growing
// while it runs (`fiberscope view --live`). Returns the program's exit code.
int runLiveViewer(const std::vector<std::string>& program, const std::string& trace_path);

struct ScreenshotOptions {
    std::string trace;   // the trace to draw
    std::string output;  // PNG path
    int width = 1600, height = 900;
    bool has_range = false;
    double range_start_ns = 0, range_end_ns = 0;
    std::int64_t cursor_ns = -1; // pin the scheduler state here (-1: middle of the view)
    SidePanel panel = SidePanel::State; // the side tab shown
    int lesson = 0;              // > 0: the lesson whose narrative the lesson panel shows
    bool open_dialog = false;    // show the Open dialog (for documentation)
    std::string compare_trace;   // shown in the compare slot under the trace (as Compare does)
    float motion_fraction = -1;  // >= 0: the state panel's chips frozen this far into their move (App::motion_fraction)
    int steps = 0;               // decisions stepped (the lesson panel's "step >") before the picture
    int tour = 0;                // the narrated tour's sentences stepped ("tour >"), with --lesson
    // Live: run this program recording into `live_trace`, draw its timeline
    // while it runs, and take the picture `live_after_ns` into the run (then
    // stop the program if it still runs). `trace` is unused.
    std::vector<std::string> live_program;
    std::string live_trace;
    std::int64_t live_after_ns = 1'000'000'000;
};

// Renders the viewer's view of a trace offscreen (starting Xvfb when there is
// no display) and writes it to a PNG. Returns a process exit code; prints a
// one-line error on failure.
int runScreenshot(const ScreenshotOptions& options);

// Measures load and frame times at 10k and `large_events` events (see viewer_bench.cpp).
int runViewerBenchmark(std::uint64_t large_events);

} // namespace fiberscope::viewer
