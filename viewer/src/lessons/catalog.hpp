// The course catalogue: which lessons exist, their titles and narratives,
// where their programs are, and running one with tracing on.
//
// Lessons live in lessons/NN-name/ (lesson.md, main.cpp); their programs are
// built as lessonNN-name. The `fiberscope` command finds both next to its
// build tree or install prefix (or $FIBERSCOPE_LESSONS / $FIBERSCOPE_LESSON_BIN).
// Programs run as child processes: the viewer never links the runtime.
#pragma once

#include <functional>
#include <iterator>
#include <string>
#include <vector>

namespace fiberscope::viewer {

struct Lesson {
    int number = 0;
    std::string slug;      // "04-work-stealing"
    std::string title;     // the first "# " heading of lesson.md, without "Lesson N — "
    std::string summary;   // the first paragraph after it
    std::string markdown;  // lesson.md
    std::string checks;    // checks.md: questions and an exercise (lessons/checks.hpp); empty if none
    std::string program;   // path of the built program (may not exist)
    std::string source;    // path of its main.cpp, beside lesson.md (may not exist; the lesson panel's code view)
    // Its golden trace: the reference run recorded on a quiet machine and
    // shipped in assets/traces/lessonNN-name.fstrace (found as the fonts are,
    // platform/window.hpp's assetPath: build tree or install prefix); may not exist.
    std::string reference;
};

std::vector<Lesson> loadLessons(std::string& error);

// The lesson whose program a trace was recorded from, by its header's
// command line (its first word is the program: ".../lesson07-select-and-cancel",
// wherever it was built or installed): an index into `lessons`, or -1.
int lessonOfCommand(const std::vector<Lesson>& lessons, const std::vector<std::string>& command_line);

struct LessonRun {
    std::string trace_path;
    std::string output;  // what the program printed (stdout and stderr)
    int exit_status = 0;
    // runLessonShown: which run this is (1 = the first), why each run before
    // it was not kept, and, when even the last missed a precondition, which
    // (empty: this run shows the lesson's phenomenon).
    int attempt = 1;
    std::vector<std::string> discarded;
    std::string unmet;

    // "run 2 of up to 3 (run 1: worker 1 runs before ...)", or "" for a first run that met everything.
    std::string describeAttempts() const;
};

// What a lesson's program is asked for on its command line: --threads when
// `threads` > 0, --backend when `backend` is "uring" or "epoll" (empty: the
// program's automatic choice, which FIBERSCOPE_BACKEND may steer),
// --scheduler when `scheduler` is "seed" or "scaling" (empty: the lesson's
// own, the seed's for every lesson; see lessons/lesson_start.hpp).
struct LessonArguments {
    int threads = 0;
    std::string backend;
    std::string scheduler;
    bool pin = false; // --pin: each worker on a CPU of its own

    // How a run with these arguments is named to the student ("--threads 1 --scheduler scaling").
    std::string describe() const;
};

// Why the lesson's program cannot be run (it is not built), or "" if it can.
std::string lessonProgramMissing(const Lesson& lesson);

// Runs a lesson's program with FIBERSCOPE_TRACE=trace_path and `arguments`.
// `echo`: also copy its output to our stdout as it runs.
bool runLesson(const Lesson& lesson, const LessonArguments& arguments, const std::string& trace_path, bool echo,
               LessonRun& run, std::string& error);

// How many times runLessonShown runs a lesson at most.
inline constexpr int kLessonAttempts = 4;

// Runs the lesson as runLesson does, then checks its trace against the
// lesson's preconditions (checks.md `requires:`, for its default thread
// count: a run with --threads is kept as it is); a run that misses one is
// run again, up to kLessonAttempts times, and the last is kept either way.
// `say` (may be empty) hears one line per run that is not kept.
bool runLessonShown(const Lesson& lesson, const LessonArguments& arguments, const std::string& trace_path, bool echo,
                    LessonRun& run, std::string& error, const std::function<void(const std::string&)>& say = {});

// The backends a lesson program can be asked for: {"", "uring", "epoll"}
// (index 0: automatic), and how the viewer names them.
inline constexpr const char* kLessonBackends[] = {"", "uring", "epoll"};
inline constexpr const char* kLessonBackendNames[] = {"automatic", "io_uring", "epoll"};
// The scheduler policies likewise (index 0: the lesson's own).
inline constexpr const char* kLessonSchedulers[] = {"", "seed", "scaling"};
inline constexpr const char* kLessonSchedulerNames[] = {"lesson's", "seed", "scaling"};
static_assert(std::size(kLessonBackends) == std::size(kLessonBackendNames));
static_assert(std::size(kLessonSchedulers) == std::size(kLessonSchedulerNames));

// Checkpoints are marks whose label starts with this prefix.
inline constexpr const char* kCheckpointPrefix = "checkpoint: ";

} // namespace fiberscope::viewer
