// spawnTraced: fork + exec with an exec-error pipe (close-on-exec: a
// successful exec closes it, so the parent's read returns 0; a failed one
// writes errno first), so that "no such program" is one clear line rather
// than a child that exits 127.
#include "platform/child_process.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace fiberscope::viewer {

pid_t spawnTraced(const std::vector<std::string>& program, const std::string& trace_path, std::string& error,
                  bool* not_run) {
    if (not_run) *not_run = false;
    if (program.empty()) {
        error = "no program to run";
        return -1;
    }
    int exec_error[2];
    if (pipe2(exec_error, O_CLOEXEC) != 0) {
        error = std::string("cannot create a pipe: ") + std::strerror(errno);
        return -1;
    }
    // argv is built before fork: the child only calls async-signal-safe functions (and setenv, single-threaded there).
    std::vector<char*> argv;
    for (const std::string& arg : program) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
        error = std::string("cannot fork: ") + std::strerror(errno);
        close(exec_error[0]);
        close(exec_error[1]);
        return -1;
    }
    if (pid == 0) {
        close(exec_error[0]);
        setenv("FIBERSCOPE_TRACE", trace_path.c_str(), 1);
        execvp(argv[0], argv.data());
        const int failure = errno;
        [[maybe_unused]] ssize_t written = write(exec_error[1], &failure, sizeof failure);
        _exit(127);
    }
    close(exec_error[1]);
    int failure = 0;
    ssize_t got;
    do got = read(exec_error[0], &failure, sizeof failure);
    while (got < 0 && errno == EINTR);
    close(exec_error[0]);
    if (got == static_cast<ssize_t>(sizeof failure)) {
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
        error = "cannot run '" + program[0] + "': " + std::strerror(failure);
        if (not_run) *not_run = true;
        return -1;
    }
    return pid;
}

std::string describeExit(int status) {
    if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
    return "stopped";
}

int exitCode(int status) {
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return 1;
}

} // namespace fiberscope::viewer
