#include "lessons/catalog.hpp"

#include "fiberscope/trace_reader.hpp"
#include "lessons/checks.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "platform/window.hpp"

namespace fiberscope::viewer {

namespace {

bool isDir(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string lessonsDir() {
    if (const char* dir = std::getenv("FIBERSCOPE_LESSONS"); dir && *dir) return dir;
#ifdef FIBERSCOPE_INSTALL_LESSONS
    if (isDir(FIBERSCOPE_INSTALL_LESSONS)) return FIBERSCOPE_INSTALL_LESSONS;
#endif
#ifdef FIBERSCOPE_SOURCE_LESSONS
    return FIBERSCOPE_SOURCE_LESSONS;
#else
    return "lessons";
#endif
}

std::string programDir() {
    if (const char* dir = std::getenv("FIBERSCOPE_LESSON_BIN"); dir && *dir) return dir;
#ifdef FIBERSCOPE_BUILD_LESSONS
    if (isDir(FIBERSCOPE_BUILD_LESSONS)) return FIBERSCOPE_BUILD_LESSONS;
#endif
#ifdef FIBERSCOPE_INSTALL_LESSON_BIN
    return FIBERSCOPE_INSTALL_LESSON_BIN;
#else
    return ".";
#endif
}

std::string readFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

void parseHeading(Lesson& lesson) {
    std::istringstream in(lesson.markdown);
    std::string line;
    bool in_summary = false;
    while (std::getline(in, line)) {
        if (lesson.title.empty()) {
            if (line.rfind("# ", 0) == 0) {
                lesson.title = line.substr(2);
                // "Lesson 4 — Work stealing" -> "Work stealing"
                for (const char* dash : {" \xE2\x80\x94 ", " - ", ": "}) {
                    const auto at = lesson.title.find(dash);
                    if (at != std::string::npos && lesson.title.rfind("Lesson", 0) == 0) {
                        lesson.title = lesson.title.substr(at + std::strlen(dash));
                        break;
                    }
                }
            }
            continue;
        }
        if (line.empty()) {
            if (in_summary) break;
            continue;
        }
        if (line[0] == '#') break;
        in_summary = true;
        if (!lesson.summary.empty()) lesson.summary += ' ';
        lesson.summary += line;
    }
    if (lesson.title.empty()) lesson.title = lesson.slug;
}

} // namespace

int lessonOfCommand(const std::vector<Lesson>& lessons, const std::vector<std::string>& command_line) {
    if (command_line.empty()) return -1;
    const std::string& program = command_line.front();
    const std::size_t slash = program.find_last_of('/');
    const std::string name = slash == std::string::npos ? program : program.substr(slash + 1);
    for (std::size_t i = 0; i < lessons.size(); ++i)
        if (name == "lesson" + lessons[i].slug) return static_cast<int>(i);
    return -1;
}

std::vector<Lesson> loadLessons(std::string& error) {
    std::vector<Lesson> lessons;
    const std::string dir = lessonsDir();
    DIR* d = opendir(dir.c_str());
    if (!d) {
        error = "cannot find the lessons in '" + dir + "': " + std::strerror(errno) + " (set FIBERSCOPE_LESSONS)";
        return lessons;
    }
    while (dirent* entry = readdir(d)) {
        const std::string name = entry->d_name;
        if (name.size() < 4 || !std::isdigit(static_cast<unsigned char>(name[0])) ||
            !std::isdigit(static_cast<unsigned char>(name[1])) || name[2] != '-')
            continue;
        Lesson lesson;
        lesson.number = std::atoi(name.substr(0, 2).c_str());
        lesson.slug = name;
        lesson.markdown = readFile(dir + "/" + name + "/lesson.md");
        lesson.checks = readFile(dir + "/" + name + "/checks.md");
        lesson.source = dir + "/" + name + "/main.cpp";
        lesson.program = programDir() + "/lesson" + name;
        lesson.reference = assetPath("traces/lesson" + name + ".fstrace");
        parseHeading(lesson);
        lessons.push_back(std::move(lesson));
    }
    closedir(d);
    std::sort(lessons.begin(), lessons.end(), [](const Lesson& a, const Lesson& b) { return a.number < b.number; });
    if (lessons.empty()) error = "no lessons in '" + dir + "'";
    return lessons;
}

std::string LessonArguments::describe() const {
    std::string text;
    if (threads > 0) text += "--threads " + std::to_string(threads);
    if (!backend.empty()) text += (text.empty() ? "" : " ") + std::string("--backend ") + backend;
    if (!scheduler.empty()) text += (text.empty() ? "" : " ") + std::string("--scheduler ") + scheduler;
    if (pin) text += (text.empty() ? "" : " ") + std::string("--pin");
    return text.empty() ? "its defaults" : text;
}

std::string lessonProgramMissing(const Lesson& lesson) {
    if (access(lesson.program.c_str(), X_OK) == 0) return {};
    return "lesson " + std::to_string(lesson.number) + "'s program '" + lesson.program +
           "' is not built (build the project, or set FIBERSCOPE_LESSON_BIN)";
}

bool runLesson(const Lesson& lesson, const LessonArguments& arguments, const std::string& trace_path, bool echo,
               LessonRun& run, std::string& error) {
    if (error = lessonProgramMissing(lesson); !error.empty()) return false;
    unlink(trace_path.c_str());
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        error = std::string("pipe: ") + std::strerror(errno);
        return false;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        error = std::string("fork: ") + std::strerror(errno);
        return false;
    }
    if (pid == 0) {
        dup2(fds[1], STDOUT_FILENO);
        dup2(fds[1], STDERR_FILENO);
        setenv("FIBERSCOPE_TRACE", trace_path.c_str(), 1);
        const std::string threads_text = std::to_string(arguments.threads);
        const char* argv[9] = {lesson.program.c_str()};
        int argc = 1;
        if (arguments.threads > 0) {
            argv[argc++] = "--threads";
            argv[argc++] = threads_text.c_str();
        }
        if (!arguments.backend.empty()) {
            argv[argc++] = "--backend";
            argv[argc++] = arguments.backend.c_str();
        }
        if (!arguments.scheduler.empty()) {
            argv[argc++] = "--scheduler";
            argv[argc++] = arguments.scheduler.c_str();
        }
        if (arguments.pin) argv[argc++] = "--pin";
        execv(lesson.program.c_str(), const_cast<char* const*>(argv));
        _exit(127);
    }
    close(fds[1]);
    char buffer[4096];
    ssize_t n;
    while ((n = read(fds[0], buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
        if (n <= 0) continue;
        run.output.append(buffer, static_cast<std::size_t>(n));
        if (echo) (void)!write(STDOUT_FILENO, buffer, static_cast<std::size_t>(n));
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    run.trace_path = trace_path;
    run.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (run.exit_status != 0) {
        error = "lesson " + std::to_string(lesson.number) + " exited with status " + std::to_string(run.exit_status);
        return false;
    }
    return true;
}

std::string LessonRun::describeAttempts() const {
    if (attempt == 1 && unmet.empty()) return "";
    std::string text = "run " + std::to_string(attempt) + " of up to " + std::to_string(kLessonAttempts);
    for (std::size_t i = 0; i < discarded.size(); ++i)
        text += (i ? "; run " : " (run ") + std::to_string(i + 1) + ": " + discarded[i];
    if (!discarded.empty()) text += ")";
    if (!unmet.empty()) text += "; this run too misses what the lesson needs: " + unmet;
    return text;
}

bool runLessonShown(const Lesson& lesson, const LessonArguments& arguments, const std::string& trace_path, bool echo,
                    LessonRun& run, std::string& error, const std::function<void(const std::string&)>& say) {
    checks::LessonChecks parsed;
    std::string parse_error;
    const bool checked = arguments.threads == 0 && !lesson.checks.empty() &&
                         checks::parseChecks(lesson.checks, lesson.slug + "/checks.md", parsed, parse_error) &&
                         !parsed.preconditions.empty();
    std::vector<std::string> discarded;
    for (int attempt = 1;; ++attempt) {
        run = LessonRun{};
        if (!runLesson(lesson, arguments, trace_path, echo, run, error)) return false;
        run.attempt = attempt;
        run.discarded = discarded;
        if (!checked) return true;
        trace::Trace trace;
        trace::ReadError read_error;
        // An unreadable trace is the caller's to report, with its own message.
        if (!trace::readTrace(trace_path, trace, read_error)) return true;
        run.unmet = checks::unmetPrecondition(parsed.preconditions, trace);
        if (run.unmet.empty() || attempt == kLessonAttempts) return true;
        if (say) say("run " + std::to_string(attempt) + " did not show the lesson's phenomenon: " + run.unmet + "; running it again");
        discarded.push_back(run.unmet);
    }
}

} // namespace fiberscope::viewer
