#include "platform/virtual_display.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace fiberscope::viewer {

bool VirtualDisplay::ensure(std::string& error) {
    if (const char* display = std::getenv("DISPLAY"); display && *display) return true;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        error = std::string("cannot start Xvfb: pipe: ") + std::strerror(errno);
        return false;
    }
    // Everything the child needs is prepared before fork: between fork and
    // exec only async-signal-safe calls are allowed.
    const std::string fd_text = std::to_string(fds[1]);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ < 0) {
        error = std::string("cannot start Xvfb: fork: ") + std::strerror(errno);
        close(fds[0]);
        close(fds[1]);
        return false;
    }
    if (pid_ == 0) {
        // Xvfb must not outlive us however we end (a crash, SIGKILL): the
        // kernel sends it SIGKILL when this thread's process dies. If we died
        // already, between fork and this call, the signal will never come, so
        // give up now. (The death signal survives exec; Xvfb is not setuid.)
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(126);
        // Xvfb writes the display number it picked to this fd: keep it open
        // across exec.
        fcntl(fds[1], F_SETFD, 0);
        const int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0) {
            dup2(devnull, STDOUT_FILENO);
            dup2(devnull, STDERR_FILENO);
        }
        execlp("Xvfb", "Xvfb", "-displayfd", fd_text.c_str(), "-screen", "0", "1920x1200x24", "-nolisten", "tcp",
               static_cast<char*>(nullptr));
        _exit(127);
    }
    close(fds[1]);
    std::string number;
    pollfd p{fds[0], POLLIN, 0};
    char c;
    // Up to 10 s for Xvfb to come up and report its display.
    bool timed_out = false;
    for (;;) {
        const int ready = poll(&p, 1, 10'000);
        if (ready == 0) timed_out = true;
        if (ready <= 0 || read(fds[0], &c, 1) != 1 || c == '\n') break;
        number += c;
    }
    close(fds[0]);
    if (number.empty()) {
        kill(pid_, SIGTERM);
        int status = 0;
        waitpid(pid_, &status, 0);
        pid_ = -1;
        if (!timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 127) {
            error = "no display and Xvfb is not installed (apt-get install xvfb), so nothing can be drawn";
            return false;
        }
        // Say why, as far as we can tell: Xvfb's own messages went to
        // /dev/null, and the usual cause under a tight limit is descriptors.
        error = "no display, and Xvfb did not start";
        if (timed_out) error += " (it reported no display within 10 s)";
        else if (WIFEXITED(status)) error += " (it exited with status " + std::to_string(WEXITSTATUS(status)) + ")";
        else if (WIFSIGNALED(status)) error += " (it was killed by signal " + std::to_string(WTERMSIG(status)) + ")";
        rlimit files{};
        if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < 64)
            error += "; 'ulimit -n' is " + std::to_string(files.rlim_cur) + ", fewer descriptors than Xvfb needs: raise it";
        return false;
    }
    setenv("DISPLAY", (":" + number).c_str(), 1);
    return true;
}

VirtualDisplay::~VirtualDisplay() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
    unsetenv("DISPLAY");
}

} // namespace fiberscope::viewer
