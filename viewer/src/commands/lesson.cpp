// `fiberscope lessons` and `fiberscope lesson N`: the course.

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <string>

#include "trace_tools.hpp"
#include "lessons/checks.hpp"
#include "ui/viewer_main.hpp"
#include "commands/command.hpp"

namespace fiberscope::commands {

Command addLessons(CLI::App& top) {
    CLI::App* app = addCommand(top, "lessons", "list the lessons of the course",
                               "Lists the lessons of the course: a small program each, a narrative, and a\n"
                               "trace whose scheduling phenomenon the viewer shows and explains.");
    auto run = [app]() -> int {
        if (const std::string complaint = cli::leftoverComplaint(*app, "takes no arguments"); !complaint.empty())
            return usageError("lessons", complaint);
        std::string error;
        const auto lessons = fiberscope::viewer::loadLessons(error);
        if (lessons.empty()) {
            std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
            return kBadFile;
        }
        std::printf("The Fiberscope course (run one with 'fiberscope lesson N'):\n\n");
        for (const auto& lesson : lessons) std::printf("  %2d  %s\n", lesson.number, lesson.title.c_str());
        return kOk;
    };
    return {app, run, [] { return std::string("listing the lessons"); }};
}

// `fiberscope lesson N --reference`: the lesson's golden trace (shipped in
// assets/traces, Lesson::reference) shown as a run of it would be, without
// running anything: its text timeline, then the viewer, or with no display a
// PNG of its opening view (to -o's name with .png, else in $TMPDIR or /tmp).
// What it reads and writes is checked before it prints anything.
int showLessonReference(const fiberscope::viewer::Lesson& lesson, const std::string& output, bool no_view) {
    const char* display = std::getenv("DISPLAY");
    const bool view = !no_view && display && *display;
    fiberscope::viewer::ScreenshotOptions shot;
    shot.trace = lesson.reference;
    shot.lesson = lesson.number;
    shot.panel = fiberscope::viewer::SidePanel::Lesson;
    if (output.empty()) {
        const char* tmp = std::getenv("TMPDIR");
        shot.output = std::string(tmp && *tmp ? tmp : "/tmp") + "/fiberscope-lesson" + lesson.slug + "-reference.png";
    } else {
        shot.output = output.ends_with(".png") ? output
                                               : output.substr(0, output.size() - (output.ends_with(".fstrace") ? 8 : 0)) + ".png";
    }
    if (!view) {
        if (const std::string clash = outputClash("-o", shot.output, lesson.reference, "the reference trace"); !clash.empty())
            return usageError("lesson", clash);
    }
    if (!checkTraceInput(lesson.reference)) return kBadFile;
    if (!view)
        if (const std::string problem = unwritableOutput(shot.output, "the picture", false); !problem.empty())
            return fileError("lesson", problem + "; choose another -o");
    std::printf("== Lesson %d: %s (the reference run) ==\n", lesson.number, lesson.title.c_str());
    if (!lesson.summary.empty()) std::printf("%s\n", lesson.summary.c_str());
    Trace trace;
    if (!loadTrace(lesson.reference, trace)) return kBadFile;
    std::printf("\n-- what the scheduler did (reference trace, recorded on a quiet machine: %s) --\n",
                lesson.reference.c_str());
    std::fflush(stdout);
    fiberscope::trace::writeTextTimeline(trace, std::cout);
    std::cout.flush();
    if (view) return fiberscope::viewer::runViewer(lesson.reference, lesson.number);
    if (const int status = fiberscope::viewer::runScreenshot(shot); status != 0) return status;
    std::printf("\nNo display%s: wrote the reference run's picture to %s\n", no_view ? " wanted (--no-view)" : "",
                shot.output.c_str());
    std::printf("Open it interactively with: fiberscope lesson %d --reference\n", lesson.number);
    return kOk;
}

Command addLesson(CLI::App& top) {
    struct Options {
        std::string number, output;
        std::int64_t threads = 0;
        int backend = 0; // index into kLessonBackends: automatic, uring, epoll
        int scheduler = -1; // -1: the lesson's; 0 seed, 1 scaling (kLessonSchedulers[scheduler + 1])
        bool no_view = false;
        bool check = false; // run, then check the lesson's exercise on the trace (checks.md)
        bool reference = false; // show the lesson's golden trace instead of running it
        bool pin = false;       // pin the program's workers to CPUs
    };
    auto options = std::make_shared<Options>();
    CLI::App* app = addCommand(top, "lesson", "run a lesson (on io_uring or epoll), show its trace and explain it",
                               "Runs lesson N's program with tracing on, records its trace (to FILE, else\n"
                               "a file in $TMPDIR or /tmp), prints a text timeline (one column per worker\n"
                               "thread), then opens the viewer on it. With no display (or --no-view) it\n"
                               "writes a PNG of the viewer's picture instead and says where.\n"
                               "With --reference it runs nothing: it shows the lesson's reference run, the\n"
                               "golden trace shipped with the course (recorded on a quiet machine).");
    app->add_option("N", options->number, "the lesson's number (see 'fiberscope lessons')")->type_name("");
    cli::addParsedOption<std::int64_t>(*app, "--threads", options->threads, wholeNumber(1, 256),
                                       "the program's worker threads, 1 to 256 (default: the lesson's)", "K");
    cli::addParsedOption<int>(
        *app, "--backend", options->backend,
        [](std::string_view text, int& backend, std::string& error) {
            if (text == "uring" || text == "io_uring") return backend = 1, true;
            if (text == "epoll") return backend = 2, true;
            error = "\"" + cli::printable(text) + "\" is not a backend (use uring or epoll)";
            return false;
        },
        "its I/O backend, uring or epoll (default: automatic: FIBERSCOPE_BACKEND\n"
        "if set, else io_uring, or epoll where the kernel refuses io_uring); see lesson 13",
        "B");
    cli::addParsedOption<int>(*app, "--scheduler", options->scheduler, oneOf({"seed", "scaling"}, "a scheduler policy"),
                              "its scheduler policy, seed or scaling (default: the lesson's, the seed's;\n"
                              "the runtime's own default is scaling); see lesson 15",
                              "P");
    app->add_flag("--pin", options->pin,
                  "pin each of its worker threads to a CPU of its own, for a picture that\n"
                  "changes less from run to run (EventLoopOptions::pin_workers)");
    app->add_option("-o,--output", options->output, "where to write the trace")->type_name("FILE");
    app->add_flag("--no-view", options->no_view, "write the PNG even with a display");
    app->add_flag("--check", options->check,
                  "run it, then say whether the trace shows what the lesson's exercise\n"
                  "(its checks.md) expects of a changed main.cpp; exit 0 if it does, 1 if not");
    app->add_flag("--reference", options->reference,
                  "do not run it: show its reference run (the golden trace shipped with the\n"
                  "course); with no display its PNG goes to -o's name with .png");
    auto run = [app, options]() -> int {
        if (const std::string complaint = cli::leftoverComplaint(*app, "one lesson at a time"); !complaint.empty())
            return usageError("lesson", complaint);
        if (options->number.empty())
            return usageError("lesson", "which lesson? e.g. 'fiberscope lesson 1' (list: 'fiberscope lessons')");
        std::int64_t number = 0;
        std::string error;
        if (!cli::parseWholeNumber(options->number, 1, std::numeric_limits<std::int64_t>::max(), number, error)) {
            std::fprintf(stderr, "fiberscope lesson: '%s' is not a lesson number; see 'fiberscope lessons'\n",
                         cli::printable(options->number).c_str());
            return kUsage;
        }
        std::string catalogue_error;
        const auto lessons = fiberscope::viewer::loadLessons(catalogue_error);
        const fiberscope::viewer::Lesson* lesson = findLesson(lessons, number, catalogue_error, error);
        if (!lesson) {
            std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
            return kUsage;
        }
        if (options->reference) {
            if (options->check || options->pin || app->count("--threads") || app->count("--backend") || app->count("--scheduler"))
                return usageError("lesson", "--reference shows the shipped trace: it takes no --threads, --backend, --scheduler, "
                                            "--pin or --check");
            return showLessonReference(*lesson, options->output, options->no_view);
        }
        const fiberscope::viewer::LessonArguments arguments{static_cast<int>(options->threads),
                                                            fiberscope::viewer::kLessonBackends[options->backend],
                                                            fiberscope::viewer::kLessonSchedulers[options->scheduler + 1],
                                                            options->pin};
        std::string output = options->output;
        if (output.empty()) {
            const char* tmp = std::getenv("TMPDIR");
            output = std::string(tmp && *tmp ? tmp : "/tmp") + "/fiberscope-lesson" + lesson->slug +
                     (arguments.backend.empty() ? "" : "-" + arguments.backend) +
                     (arguments.scheduler.empty() ? "" : "-" + arguments.scheduler) + ".fstrace";
        }
        if (const std::string clash = outputClash("-o", output, lesson->program, "the lesson's program"); !clash.empty())
            return usageError("lesson", clash);
        fiberscope::viewer::checks::LessonChecks checks;
        if (options->check) {
            if (lesson->checks.empty())
                return usageError("lesson", "lesson " + std::to_string(lesson->number) + " has no exercise to check (no checks.md)");
            if (!fiberscope::viewer::checks::parseChecks(lesson->checks, lesson->slug + "/checks.md", checks, error)) {
                std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
                return kBadFile;
            }
            if (!checks.has_exercise)
                return usageError("lesson", "lesson " + std::to_string(lesson->number) + "'s checks.md has no exercise");
        }
        // What it runs and writes, before it prints or runs anything: the
        // program, the trace, and (with no view, unless it only checks) the
        // picture beside the trace.
        const char* display = std::getenv("DISPLAY");
        const bool view = !options->no_view && display && *display;
        const std::string picture =
            output.substr(0, output.size() - (output.size() > 8 && output.ends_with(".fstrace") ? 8 : 0)) + ".png";
        if (const std::string missing = fiberscope::viewer::lessonProgramMissing(*lesson); !missing.empty())
            return fileError("lesson", missing);
        if (const std::string problem = unwritableOutput(output, "the trace", true); !problem.empty())
            return fileError("lesson", problem + "; choose another -o (nothing was run)");
        if (!view && !options->check)
            if (const std::string problem = unwritableOutput(picture, "the picture", false); !problem.empty())
                return fileError("lesson", problem + " (it goes beside the trace); choose another -o (nothing was run)");
        std::printf("== Lesson %d: %s ==\n", lesson->number, lesson->title.c_str());
        if (!lesson->summary.empty()) std::printf("%s\n", lesson->summary.c_str());
        std::printf("\n-- the program says --\n");
        std::fflush(stdout);
        fiberscope::viewer::LessonRun run;
        // A run that misses the phenomenon's preconditions (checks.md
        // `requires:`; a loaded machine) is said in one line and run again.
        const auto say = [](const std::string& line) {
            std::printf("\nfiberscope lesson: %s\n\n-- the program says (again) --\n", line.c_str());
            std::fflush(stdout);
        };
        if (!fiberscope::viewer::runLessonShown(*lesson, arguments, output, true, run, error, say)) {
            std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
            return kBadFile;
        }
        if (!run.unmet.empty())
            std::printf("\nfiberscope lesson: %d runs and none showed the lesson's phenomenon (a busy machine?): %s; "
                        "showing the last (or: fiberscope lesson %d --reference)\n",
                        run.attempt, run.unmet.c_str(), lesson->number);
        Trace trace;
        if (!loadTrace(output, trace)) return kBadFile;
        if (options->check) {
            // The exercise, the value its query finds on this run, and the verdict: 0 if it appeared, 1 if not.
            const auto& exercise = checks.exercise;
            std::printf("\n-- the exercise (trace: %s) --\n%s\n\nexpect: %s\n", output.c_str(), exercise.text.c_str(),
                        exercise.expect.text.c_str());
            bool appeared = false;
            std::int64_t value = 0;
            if (!fiberscope::viewer::checks::holds(exercise.expect, trace, appeared, value, error)) {
                std::printf("The phenomenon did not appear: %s.\n", error.c_str());
                return 1;
            }
            const std::string found = fiberscope::viewer::checks::describeAnswer(exercise.expect.query.kind, value);
            std::printf("found:  %s is %s\n", exercise.expect.query.text.c_str(), found.c_str());
            if (appeared) std::printf("\nThe phenomenon appeared. %s\n", exercise.says.c_str());
            else
                std::printf("\nThe phenomenon did not appear (the trace shows %s, as the unchanged lesson does: is main.cpp "
                            "changed and rebuilt?).\nWhen it does: %s\n",
                            found.c_str(), exercise.says.c_str());
            return appeared ? kOk : 1;
        }
        std::printf("\n-- what the scheduler did (trace: %s) --\n", output.c_str());
        std::fflush(stdout);
        fiberscope::trace::writeTextTimeline(trace, std::cout);
        std::cout.flush();
        if (view) return fiberscope::viewer::runViewer(output, lesson->number);
        fiberscope::viewer::ScreenshotOptions shot;
        shot.trace = output;
        shot.lesson = lesson->number;
        shot.panel = fiberscope::viewer::SidePanel::Lesson;
        shot.output = picture;
        if (const int status = fiberscope::viewer::runScreenshot(shot); status != 0) return status;
        std::printf("\nNo display%s: wrote the viewer's picture to %s\n", options->no_view ? " wanted (--no-view)" : "",
                    shot.output.c_str());
        std::printf("Open it interactively with: fiberscope view %s\n", output.c_str());
        return kOk;
    };
    return {app, run, [options] { return "running lesson " + options->number; }};
}

} // namespace fiberscope::commands
