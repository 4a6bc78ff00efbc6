// `fiberscope screenshot TRACE -o out.png`: the viewer's picture, headless.

#include <cerrno>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "ui/viewer_main.hpp"
#include "commands/command.hpp"

namespace fiberscope::commands {

Command addScreenshot(CLI::App& top) {
    struct Options {
        fiberscope::viewer::ScreenshotOptions shot;
        std::int64_t lesson = 0;
        std::pair<std::int64_t, std::int64_t> range;
        bool live = false;
        std::int64_t motion = -1; // --motion PERCENT
        std::int64_t steps = 0;   // --steps N
        std::int64_t tour = 0;    // --tour N
    };
    auto options = std::make_shared<Options>();
    fiberscope::viewer::ScreenshotOptions& shot = options->shot;
    CLI::App* app = addCommand(top, "screenshot", "render the viewer's view of a trace to a PNG (headless)",
                               "Renders the viewer's view of FILE to a PNG without a window. With no display\n"
                               "it starts Xvfb for the duration (apt-get install xvfb), which dies with it.\n"
                               "Times take a unit: ns, us, ms (a bare number) or s, e.g. --range 1.5ms:4ms\n"
                               "--cursor 2ms. With --live, runs PROGRAM (after --) recording into --trace FILE\n"
                               "and takes the picture --after DURATION into the run, while it still runs\n"
                               "(then stops it): what 'fiberscope view --live' would show at that moment.");
    app->add_option("FILE", shot.trace, "the trace")->type_name("");
    app->add_option("-o,--output", shot.output, "the PNG to write")->type_name("OUT.png");
    cli::addParsedOption<std::pair<std::int64_t, std::int64_t>>(
        *app, "--range", options->range,
        [&shot](std::string_view text, std::pair<std::int64_t, std::int64_t>& range, std::string& error) {
            if (!cli::parseTimeRange(text, range.first, range.second, error)) return false;
            shot.has_range = true;
            return true;
        },
        "the time range to show, e.g. 2ms:5ms (default: all of it)", "START:END");
    cli::addParsedOption<int>(
        *app, "--size", shot.width,
        [&shot](std::string_view text, int& width, std::string& error) {
            return cli::parseSize(text, 320, 8192, width, shot.height, error);
        },
        "the picture's size, 320x240 to 8192x8192 (default: 1600x900)", "WxH");
    cli::addParsedOption<std::int64_t>(*app, "--cursor", shot.cursor_ns, timeValue(cli::TimeSign::non_negative),
                                       "pin the scheduler state at this time, e.g. 3ms (default: the view's middle)",
                                       "TIME");
    cli::addParsedOption<fiberscope::viewer::SidePanel>(
        *app, "--panel", shot.panel,
        [choose = oneOf(fiberscope::viewer::sidePanelNames(), "a panel")](std::string_view text,
                                                                         fiberscope::viewer::SidePanel& panel,
                                                                         std::string& error) {
            int index = 0;
            if (!choose(text, index, error)) return false;
            panel = fiberscope::viewer::kSidePanels[static_cast<std::size_t>(index)].panel;
            return true;
        },
        "the side panel to show (default: state)", "PANEL");
    cli::addParsedOption<std::int64_t>(*app, "--lesson", options->lesson, wholeNumber(1, std::numeric_limits<int>::max()),
                                       "show lesson N's narrative in the lesson panel", "N");
    app->add_flag("--open-dialog", shot.open_dialog, "show the Open dialog (for documentation)");
    app->add_option("--compare", shot.compare_trace, "a second trace in the compare slot (as the lesson panel's Compare)")->type_name("FILE");
    cli::addParsedOption<std::int64_t>(*app, "--motion", options->motion, wholeNumber(0, 100),
                                       "freeze the state panel's chips PERCENT of the way into the cursor's state (for tests)",
                                       "PERCENT");
    cli::addParsedOption<std::int64_t>(*app, "--steps", options->steps, wholeNumber(0, 10000),
                                       "step N scheduling decisions (the lesson panel's step >) before the picture", "N");
    cli::addParsedOption<std::int64_t>(*app, "--tour", options->tour, wholeNumber(0, 10000),
                                       "with --lesson: walk N sentences of its text (the lesson panel's tour >)", "N");
    app->add_flag("--live", options->live, "run PROGRAM (after --) and picture it while it runs");
    cli::addParsedOption<std::int64_t>(*app, "--after", shot.live_after_ns, timeValue(cli::TimeSign::positive),
                                       "with --live: when to take the picture (default: 1s)", "DURATION");
    app->add_option("--trace", shot.live_trace, "with --live: where the program records (default: fiberscope.fstrace)")
        ->type_name("FILE");
    auto run = [app, &top, options]() -> int {
        fiberscope::viewer::ScreenshotOptions& shot = options->shot;
        if (options->live) {
            const Args program = liveProgram(shot.trace, *app, top);
            if (const std::string complaint =
                    liveProgramComplaint(program, "fiberscope screenshot --live -o out.png -- PROGRAM [ARGS...]");
                !complaint.empty())
                return usageError("screenshot", complaint);
            if (shot.output.empty()) return usageError("screenshot", "where to? add -o out.png");
            if (shot.live_trace.empty()) shot.live_trace = "fiberscope.fstrace";
            if (const std::string clash = outputClash("--trace", shot.live_trace, programPath(program[0]), "the program to run");
                !clash.empty())
                return usageError("screenshot", clash);
            if (const std::string clash = outputClash("-o", shot.output, shot.live_trace, "the trace it records"); !clash.empty())
                return usageError("screenshot", clash);
            shot.live_program = program;
            shot.trace.clear();
        } else {
            if (const std::string complaint = cli::leftoverComplaint(*app, "one trace at a time"); !complaint.empty())
                return usageError("screenshot", complaint);
            if (!top.remaining().empty()) return usageError("screenshot", "a program to run needs --live");
            if (app->count("--after") || app->count("--trace")) return usageError("screenshot", "--after and --trace only go with --live");
            if (shot.trace.empty()) return usageError("screenshot", "which trace? fiberscope screenshot FILE -o out.png");
            if (shot.output.empty()) return usageError("screenshot", "where to? add -o out.png");
            if (const std::string clash = outputClash("-o", shot.output, shot.trace, "the input trace"); !clash.empty())
                return usageError("screenshot", clash);
        }
        if (options->lesson > 0) {
            std::string catalogue_error, error;
            const auto lessons = fiberscope::viewer::loadLessons(catalogue_error);
            if (!findLesson(lessons, options->lesson, catalogue_error, error)) {
                std::fprintf(stderr, "fiberscope screenshot: --lesson: %s\n", error.c_str());
                return kUsage;
            }
            shot.lesson = static_cast<int>(options->lesson);
            shot.panel = fiberscope::viewer::SidePanel::Lesson;
        }
        if (options->motion >= 0) shot.motion_fraction = static_cast<float>(options->motion) / 100.0f;
        shot.steps = static_cast<int>(options->steps);
        if (options->tour > 0 && options->lesson <= 0) return usageError("screenshot", "--tour needs --lesson N");
        shot.tour = static_cast<int>(options->tour);
        if (!shot.compare_trace.empty()) {
            if (const std::string clash = outputClash("-o", shot.output, shot.compare_trace, "the compared trace"); !clash.empty())
                return usageError("screenshot", clash);
            if (!checkTraceInput(shot.compare_trace)) return kBadFile;
        }
        if (shot.has_range) {
            shot.range_start_ns = static_cast<double>(options->range.first);
            shot.range_end_ns = static_cast<double>(options->range.second);
        }
        if (!options->live && !checkTraceInput(shot.trace)) return kBadFile;
        if (options->live)
            if (const std::string problem = unwritableOutput(shot.live_trace, "the trace", true); !problem.empty())
                return fileError("screenshot", problem + "; choose another --trace (nothing was run)");
        if (const std::string problem = unwritableOutput(shot.output, "the picture", false); !problem.empty())
            return fileError("screenshot", problem + "; choose another -o" + (options->live ? " (nothing was run)" : ""));
        const int status = fiberscope::viewer::runScreenshot(shot);
        if (status == 0) std::printf("wrote %s\n", shot.output.c_str());
        return status;
    };
    return {app, run, [options] { return "rendering " + (options->live ? options->shot.live_trace : options->shot.trace); }, true};
}

} // namespace fiberscope::commands
