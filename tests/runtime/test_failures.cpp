// Failure paths a user can trigger: stack overflow, io_uring refused by the
// kernel. Each runs in a child process, whose stderr and exit are checked.
#include "test_support.hpp"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <functional>
#include <string>

using namespace fiberscope;

namespace {

// ThreadSanitizer cannot follow a child forked from a multi-threaded
// process that then starts threads of its own; those tests skip under it.
#if defined(__SANITIZE_THREAD__)
constexpr bool kForkUnsupported = true;
#else
constexpr bool kForkUnsupported = false;
#endif

struct ChildResult {
    int status = 0;
    std::string err;
};

// Runs `body` in a forked child with stderr captured.
ChildResult runChild(const std::function<int()>& body) {
    int pipe_fds[2];
    REQUIRE(pipe(pipe_fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        dup2(pipe_fds[1], STDERR_FILENO);
        close(pipe_fds[0]);
        close(pipe_fds[1]);
        _exit(body());
    }
    close(pipe_fds[1]);
    ChildResult result;
    char buffer[4096];
    ssize_t n;
    while ((n = read(pipe_fds[0], buffer, sizeof buffer)) > 0) result.err.append(buffer, static_cast<std::size_t>(n));
    close(pipe_fds[0]);
    waitpid(pid, &result.status, 0);
    return result;
}

// Recurses until `limit` (never reached in practice: the stack runs out).
__attribute__((noinline)) int recurse(int depth, int limit) {
    volatile char frame[1024];
    frame[0] = static_cast<char>(depth);
    if (depth == limit) return frame[0];
    return recurse(depth + 1, limit) + frame[0];
}

} // namespace

TEST_CASE("a stack overflow names the fiber instead of a bare SIGSEGV", "[failures]") {
    auto child = runChild([] {
        auto loop = EventLoop::create({.threads = 1, .stack_size = 64 * 1024}).value();
        auto f = loop->async([] { return recurse(0, 1 << 30); });
        return f.await();
    });
    INFO("child stderr: " << child.err);
    REQUIRE(WIFSIGNALED(child.status));
    REQUIRE(child.err.find("stack overflow in fiber #") != std::string::npos);
    REQUIRE(child.err.find("stack_size") != std::string::npos);
}

// Installs a seccomp filter like Docker's default profile: io_uring_setup
// fails with EPERM. Returns false if the filter could not be installed.
static bool refuseIoUring() {
    sock_filter filter[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    sock_fprog program{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return false;
    return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) == 0;
}

TEST_CASE("io_uring refused and asked for explicitly is a clear error, not a crash", "[failures][backend]") {
    auto child = runChild([] {
        if (!refuseIoUring()) return 10;
        auto loop = EventLoop::create({.backend = IoBackend::io_uring});
        if (loop) return 12;
        if (loop.error() != Errc::IoUringUnavailable) return 13;
        std::fprintf(stderr, "%s\n", loop.error().message());
        return 0;
    });
    INFO("child stderr: " << child.err);
    REQUIRE(WIFEXITED(child.status));
    REQUIRE(WEXITSTATUS(child.status) == 0);
    REQUIRE(child.err.find("io_uring") != std::string::npos);
}

TEST_CASE("io_uring refused: the loop falls back to epoll with one log line, and works", "[failures][backend]") {
    if (kForkUnsupported) {
        WARN("skipped under ThreadSanitizer (it does not support threads started after fork)");
        return;
    }
    auto child = runChild([] {
        if (!refuseIoUring()) return 10;
        ::unsetenv("FIBERSCOPE_BACKEND");
        for (int round = 0; round < 2; ++round) {
            auto made = EventLoop::create({.threads = 2});
            if (!made) return 12;
            auto& loop = *made;
            if (loop->backend() != IoBackend::epoll) return 13;
            // Timers, a pipe through the readiness path, a regular file
            // through the blocking pool, fibers on both threads.
            int fds[2];
            if (pipe(fds) != 0) return 14;
            auto reader = loop->async([&] {
                char byte = 0;
                auto n = loop->read(File{fds[0]}, std::as_writable_bytes(std::span(&byte, 1)));
                return n && *n == 1 && byte == 'x';
            });
            if (!loop->sleep(std::chrono::milliseconds(2))) return 15;
            if (::write(fds[1], "x", 1) != 1) return 16;
            if (!reader.await()) return 17;
            auto file = loop->openFile("/proc/self/stat");
            if (!file) return 18;
            char text[16] = {};
            auto n = loop->pread(*file, std::as_writable_bytes(std::span(text)), 0);
            if (!n || *n == 0) return 19;
            if (!loop->close(*file)) return 20;
            ::close(fds[0]);
            ::close(fds[1]);
        }
        return 0;
    });
    INFO("child stderr: " << child.err);
    REQUIRE(WIFEXITED(child.status));
    REQUIRE(WEXITSTATUS(child.status) == 0);
    // Exactly one line, however many loops the process creates.
    const auto first = child.err.find("fiberscope: the kernel refused io_uring");
    REQUIRE(first != std::string::npos);
    REQUIRE(child.err.find("using the epoll backend") != std::string::npos);
    REQUIRE(child.err.find("fiberscope:", first + 1) == std::string::npos);
}

TEST_CASE("a bad FIBERSCOPE_BACKEND is a one-line error naming the choices", "[failures][backend]") {
    auto child = runChild([] {
        ::setenv("FIBERSCOPE_BACKEND", "kqueue", 1);
        auto loop = EventLoop::create();
        if (loop) return 12;
        if (loop.error() != Errc::UnsupportedBackend) return 13;
        return 0;
    });
    INFO("child stderr: " << child.err);
    REQUIRE(WIFEXITED(child.status));
    REQUIRE(WEXITSTATUS(child.status) == 0);
    REQUIRE(child.err.find("FIBERSCOPE_BACKEND='kqueue'") != std::string::npos);
    REQUIRE(child.err.find("uring or epoll") != std::string::npos);
}
