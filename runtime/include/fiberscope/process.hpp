// Child processes: spawn one with arguments and pipes, wait for it (a cancel
// point, with a Timeout), signal it. As Zig's std.process.Child, on fibers.
//
//     auto child = loop->spawnProcess({"/bin/sh", "-c", "echo hi"}, {.stdout_mode = Stdio::pipe}).value();
//     char text[16];
//     auto n = loop->read(child.stdout_pipe, std::as_writable_bytes(std::span(text)));
//     loop->close(child.stdout_pipe);
//     auto status = loop->wait(child, std::chrono::seconds(5));   // Result<ExitStatus>
//
// Built on posix_spawn (safe in a multi-threaded parent: glibc clones with
// CLONE_VM | CLONE_VFORK, and an exec failure is its return value, so a
// missing program is FileNotFound from spawnProcess, not an exit status 127)
// and a pidfd (pidfd_open), which names the child with no pid-reuse race for
// kill (pidfd_send_signal) and wait (waitid P_PIDFD), and which the loop can
// wait on: IORING_OP_WAITID on io_uring (Linux 6.7+), otherwise the pidfd's
// readiness (IORING_OP_POLL_ADD, or epoll) followed by waitid(WNOHANG).
//
// A Child is plain data, like File. Whoever spawns it waits for it: the wait
// that reaps the child closes its pidfd and sets it to -1. The pipe ends are
// the caller's to close (EventLoop::close); close stdin_pipe to give the
// child end-of-file. One fiber waits for a given child at a time. A child
// never waited for stays a zombie until the process exits. With SIGCHLD set
// to SIG_IGN (or another waitpid(-1) in the process) the kernel reaps
// children on its own and wait returns ProcessNotFound.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <optional>
#include <span>
#include <string_view>

#include "fiberscope/file.hpp"

namespace fiberscope {

// What one of the child's standard streams (0, 1, 2) is.
//   inherit  the parent's descriptor (the default)
//   pipe     a new pipe; the parent's end is in Child (stdin_pipe is its
//            write end, stdout_pipe / stderr_pipe read ends), O_CLOEXEC
//   null     /dev/null
enum class Stdio { inherit, pipe, null };

struct ProcessOptions {
    Stdio stdin_mode = Stdio::inherit;
    Stdio stdout_mode = Stdio::inherit;
    Stdio stderr_mode = Stdio::inherit;
    // The child's working directory; empty: the parent's. A missing one is
    // reported by spawnProcess (FileNotFound, NotDir, ...).
    std::string_view cwd{};
    // The child's whole environment, as "NAME=value" strings; not set: the
    // parent's (environ, read while spawning).
    std::optional<std::span<const std::string_view>> environment{};
    // Look argv[0] up in the parent's PATH when it has no '/' (as execvp);
    // false: argv[0] is a path, relative to the parent's working directory.
    bool search_path = true;
};

// How a child ended (wait). Either it exited with a code (0-255), or a signal
// killed it (and maybe dumped core).
struct ExitStatus {
    enum class How : unsigned char { exited, signaled };
    How how = How::exited;
    int value = 0; // the exit code, or the signal number
    bool core_dumped = false;

    static constexpr ExitStatus exitedWith(int code) noexcept { return {How::exited, code, false}; }
    static constexpr ExitStatus signaledBy(int signal, bool core = false) noexcept {
        return {How::signaled, signal, core};
    }
    constexpr bool exited() const noexcept { return how == How::exited; }
    constexpr bool signaled() const noexcept { return how == How::signaled; }
    // Exited with code 0.
    constexpr bool success() const noexcept { return exited() && value == 0; }
    // The exit code (-1 if a signal killed it), the signal (-1 if it exited).
    constexpr int code() const noexcept { return exited() ? value : -1; }
    constexpr int signal() const noexcept { return signaled() ? value : -1; }
    friend constexpr bool operator==(const ExitStatus&, const ExitStatus&) = default;
};

// A spawned child process (EventLoop::spawnProcess). Plain data.
struct Child {
    pid_t pid = -1;
    // Names the child for wait and kill; closed (and -1) once wait reaped it.
    int pidfd = -1;
    // The parent's ends of the pipes asked for with Stdio::pipe (else
    // invalid): the caller closes them.
    File stdin_pipe;
    File stdout_pipe;
    File stderr_pipe;
    // True until wait has reaped the child.
    bool waitable() const noexcept { return pidfd >= 0; }
};

} // namespace fiberscope
