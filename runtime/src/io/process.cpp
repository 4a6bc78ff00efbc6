// Child processes: spawnProcess, wait, kill (process.hpp).
//
// Why posix_spawn and not fork: fork copies one thread of a process whose
// other threads (the loop's workers) may hold locks, and its page tables;
// glibc's posix_spawn clones with CLONE_VM | CLONE_VFORK onto a stack of its
// own and runs only async-signal-safe steps before exec, so it is safe from
// any fiber on any worker, and since glibc 2.24 an exec failure (ENOENT,
// EACCES, ENOEXEC) comes back as its return value, not as a child that
// exits with 127. The calling thread waits for the exec (vfork semantics),
// well under a millisecond; spawning is not an io_uring operation.
//
// Why pidfd_open right after posix_spawn (and not clone3 CLONE_PIDFD): the
// child is ours and unreaped, so its pid cannot be reused before we wait for
// it, and the pidfd taken in between names it exactly. (Only a waitpid(-1)
// elsewhere in the process, or SIGCHLD set to SIG_IGN, could reap it first;
// see process.hpp.) From then on every call goes through the pidfd:
// pidfd_send_signal, and waitid(P_PIDFD), which is IORING_OP_WAITID on
// io_uring where the kernel has it (6.7+). Before that, and on epoll, the
// wait is the pidfd's readiness (it turns readable when the child exits:
// IORING_OP_POLL_ADD, or the epoll backend's park on EPOLLIN, see poller.cpp)
// and then waitid(WNOHANG), which reaps at once. Either way a cancel or a
// Timeout withdraws the wait before anything is reaped: the child keeps
// running and can be waited for again.
//
// Why every pipe is O_CLOEXEC and every child end is moved above fd 2: a
// spawn on another thread at the same moment must not inherit our ends
// (posix_spawn's dup2 onto 0, 1, 2 clears the flag for the child's copy
// only), and a child end that happened to be 0, 1 or 2 (the parent had closed
// its stdin, say) would be clobbered by the dup2 of another stream before
// its own dup2 ran.
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "support/errors.hpp"
#include "fiberscope/event_loop.hpp"
#include "loop.hpp"
#include "io/operation.hpp"
#include "io/epoll/poller.hpp"
#include "io/syscall_io.hpp"
#include "support/tracing.hpp"

#include "fiberscope/trace.hpp"

extern char** environ;

namespace fiberscope {

using namespace detail;

namespace {

// NUL-terminated copies of some strings and the null-terminated array of
// pointers to them that exec wants, in one malloc'ed block (the runtime
// never throws, so no std::vector<std::string>).
class CStrings {
public:
    CStrings() = default;
    CStrings(const CStrings&) = delete;
    CStrings& operator=(const CStrings&) = delete;
    ~CStrings() { std::free(array_); }

    Status fill(std::span<const std::string_view> strings) {
        std::size_t bytes = (strings.size() + 1) * sizeof(char*);
        for (std::string_view s : strings) {
            if (s.find('\0') != std::string_view::npos) return Error{Errc::InvalidArgument, EINVAL};
            bytes += s.size() + 1;
        }
        array_ = static_cast<char**>(std::malloc(bytes));
        if (!array_) return Error{Errc::OutOfMemory, ENOMEM};
        char* text = reinterpret_cast<char*>(array_ + strings.size() + 1);
        for (std::size_t i = 0; i < strings.size(); ++i) {
            array_[i] = text;
            std::memcpy(text, strings[i].data(), strings[i].size());
            text += strings[i].size();
            *text++ = 0;
        }
        array_[strings.size()] = nullptr;
        return {};
    }
    char** get() const noexcept { return array_; }

private:
    char** array_ = nullptr;
};

// What posix_spawn's errno means (Zig's names where this runtime has none).
Error spawnError(int err) {
    switch (err) {
    case ENOEXEC: case ELIBBAD: return {Errc::InvalidExecutable, err};
    case E2BIG: case EAGAIN: return {Errc::SystemResources, err}; // argument list too long, RLIMIT_NPROC
    default: return openError(err); // ENOENT, EACCES, ENOTDIR, ELOOP, ETXTBSY, EMFILE, ...
    }
}

Error processError(int err) {
    if (err == ESRCH || err == ECHILD) return {Errc::ProcessNotFound, err};
    return systemError(err);
}

void closeQuietly(int& fd) noexcept {
    if (fd >= 0) ::close(fd);
    fd = -1;
}

// The three streams' pipes while spawning: [stream][0 = parent's end,
// 1 = child's end]. Whatever is still open at the end is closed.
struct Pipes {
    int fds[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
    ~Pipes() {
        for (auto& stream : fds)
            for (int& fd : stream) closeQuietly(fd);
    }
    Status open(int stream) {
        int ends[2];
        if (pipe2(ends, O_CLOEXEC) != 0) return systemError(errno);
        // stdin: the child reads (ends[0]); stdout, stderr: the child writes.
        fds[stream][0] = stream == 0 ? ends[1] : ends[0];
        fds[stream][1] = stream == 0 ? ends[0] : ends[1];
        int& child_end = fds[stream][1];
        if (child_end <= STDERR_FILENO) {
            const int moved = fcntl(child_end, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
            if (moved < 0) return systemError(errno);
            ::close(child_end);
            child_end = moved;
        }
        return {};
    }
};

// RAII for the spawn attribute objects.
struct SpawnSetup {
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    int actions_ok = -1, attributes_ok = -1;
    SpawnSetup() {
        actions_ok = posix_spawn_file_actions_init(&actions);
        attributes_ok = posix_spawnattr_init(&attributes);
    }
    ~SpawnSetup() {
        if (actions_ok == 0) posix_spawn_file_actions_destroy(&actions);
        if (attributes_ok == 0) posix_spawnattr_destroy(&attributes);
    }
};

ExitStatus decode(const siginfo_t& info) {
    switch (info.si_code) {
    case CLD_EXITED: return ExitStatus::exitedWith(info.si_status);
    case CLD_DUMPED: return ExitStatus::signaledBy(info.si_status, true);
    default: return ExitStatus::signaledBy(info.si_status, false); // CLD_KILLED (WEXITED reports nothing else)
    }
}

// An io_uring without IORING_OP_WAITID (before Linux 6.7): wait for the
// pidfd to turn readable, then reap without blocking. Returns 0 (reaped,
// `info` filled in) or -errno (-ETIMEDOUT, -ECANCELED, ...).
Result<int> pollThenReap(int pidfd, siginfo_t& info, Timeout timeout) {
    const std::int64_t deadline = timeout.limited() ? monotonicNanoseconds() + timeout.duration.count() : -1;
    for (;;) {
        std::int64_t remaining = -1;
        if (deadline >= 0) {
            remaining = deadline - monotonicNanoseconds();
            if (remaining < 0) remaining = 0;
        }
        Operation poll{.opcode = IORING_OP_POLL_ADD, .fd = pidfd, .flags = POLLIN, .timeout_ns = remaining};
        auto ready = execute(poll);
        if (!ready) return ready.error();
        if (ready->result < 0) return ready->result;
        Operation reap{.opcode = kOpWaitid, .fd = pidfd, .address = &info, .length = P_PIDFD, .flags = WEXITED};
        const int reaped = performInline(reap, currentFiberId()).result;
        // -EAGAIN: readable but not yet reapable (not seen on Linux; a pidfd
        // turns readable once the whole thread group has exited). Poll again.
        if (reaped != -EAGAIN) return reaped;
    }
}

} // namespace

Result<Child> EventLoop::spawnProcess(std::span<const std::string_view> argv, ProcessOptions options) {
    if (argv.empty()) return Error{Errc::InvalidArgument, EINVAL};
    CStrings args;
    if (auto filled = args.fill(argv); !filled) return filled.error();
    CStrings environment;
    if (options.environment)
        if (auto filled = environment.fill(*options.environment); !filled) return filled.error();
    char cwd[PATH_MAX];
    if (!options.cwd.empty()) {
        if (options.cwd.size() >= sizeof cwd) return Error{Errc::NameTooLong, ENAMETOOLONG};
        if (options.cwd.find('\0') != std::string_view::npos) return Error{Errc::InvalidArgument, EINVAL};
        std::memcpy(cwd, options.cwd.data(), options.cwd.size());
        cwd[options.cwd.size()] = 0;
    }

    SpawnSetup setup;
    if (setup.actions_ok != 0) return spawnError(setup.actions_ok);
    if (setup.attributes_ok != 0) return spawnError(setup.attributes_ok);
    Pipes pipes;
    const Stdio modes[3] = {options.stdin_mode, options.stdout_mode, options.stderr_mode};
    for (int stream = 0; stream < 3; ++stream) {
        int failed = 0;
        switch (modes[stream]) {
        case Stdio::inherit: break;
        case Stdio::pipe:
            if (auto opened = pipes.open(stream); !opened) return opened.error();
            failed = posix_spawn_file_actions_adddup2(&setup.actions, pipes.fds[stream][1], stream);
            break;
        case Stdio::null:
            failed = posix_spawn_file_actions_addopen(&setup.actions, stream, "/dev/null",
                                                      stream == 0 ? O_RDONLY : O_WRONLY, 0);
            break;
        }
        if (failed) return spawnError(failed);
    }
    if (!options.cwd.empty())
        if (int failed = posix_spawn_file_actions_addchdir_np(&setup.actions, cwd)) return spawnError(failed);
    // A clean start: the spawning worker's signal mask, and whatever the
    // parent ignores (SIGPIPE, often), are not the child's business.
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&setup.attributes, &none);
    posix_spawnattr_setsigdefault(&setup.attributes, &all);
    posix_spawnattr_setflags(&setup.attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

    char** envp = options.environment ? environment.get() : environ;
    pid_t pid = -1;
    const int spawned = options.search_path
                            ? posix_spawnp(&pid, args.get()[0], &setup.actions, &setup.attributes, args.get(), envp)
                            : posix_spawn(&pid, args.get()[0], &setup.actions, &setup.attributes, args.get(), envp);
    if (spawned != 0) return spawnError(spawned);

    const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); // always O_CLOEXEC
    if (pidfd < 0) {
        // No pidfd (EMFILE, or a kernel before 5.3): a child we could not
        // wait for or signal safely. End it now rather than leak it.
        const int err = errno;
        ::kill(pid, SIGKILL);
        while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
        }
        return systemError(err);
    }
    Child child;
    child.pid = pid;
    child.pidfd = pidfd;
    File* ends[3] = {&child.stdin_pipe, &child.stdout_pipe, &child.stderr_pipe};
    for (int stream = 0; stream < 3; ++stream) {
        ends[stream]->fd = pipes.fds[stream][0];
        pipes.fds[stream][0] = -1; // the caller's now; the child's ends close with `pipes`
    }
    if (trace::enabled()) {
        char label[128];
        const int n = std::snprintf(label, sizeof label, "spawn pid %d: %.*s", static_cast<int>(pid),
                                    static_cast<int>(std::min<std::size_t>(argv[0].size(), 96)), argv[0].data());
        trace::markCopy(std::string_view(label, static_cast<std::size_t>(std::min<int>(n, sizeof label - 1))));
    }
    return child;
}

Result<ExitStatus> EventLoop::wait(Child& child, Timeout timeout) {
    if (child.pidfd < 0) return Error{Errc::ProcessNotFound, ECHILD};
    siginfo_t info{};
    int result;
    if (impl_->backend == IoBackend::io_uring && !(impl_->ring_opcodes & (std::uint64_t{1} << kOpWaitid))) {
        auto reaped = pollThenReap(child.pidfd, info, timeout);
        if (!reaped) return reaped.error();
        result = *reaped;
    } else {
        // io_uring: IORING_OP_WAITID. epoll: waitid(WNOHANG), parked on the
        // pidfd's EPOLLIN while it says -EAGAIN (poller.cpp).
        Operation op{.opcode = kOpWaitid, .fd = child.pidfd, .address = &info, .length = P_PIDFD, .flags = WEXITED,
                     .timeout_ns = timeoutNanoseconds(timeout)};
        auto done = execute(op);
        if (!done) return done.error();
        result = done->result;
    }
    if (result == -ECHILD) {
        // Reaped by someone else (SIGCHLD ignored, a waitpid(-1)): it is gone
        // for good, and so is any use of the pidfd.
        (void)closeDescriptor(child.pidfd);
        child.pidfd = -1;
    }
    if (result < 0) return processError(-result);
    (void)closeDescriptor(child.pidfd); // not cancelable: always closes
    child.pidfd = -1;
    return decode(info);
}

Status EventLoop::kill(const Child& child, int signal) {
    if (child.pidfd < 0) return Error{Errc::ProcessNotFound, ESRCH};
    if (syscall(SYS_pidfd_send_signal, child.pidfd, signal, nullptr, 0) != 0) return processError(errno);
    if (trace::enabled()) {
        char label[64];
        const int n = std::snprintf(label, sizeof label, "kill pid %d with signal %d", static_cast<int>(child.pid), signal);
        trace::markCopy(std::string_view(label, static_cast<std::size_t>(std::min<int>(n, sizeof label - 1))));
    }
    return {};
}

} // namespace fiberscope
