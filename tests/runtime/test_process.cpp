// Child processes: spawnProcess, wait, kill (process.hpp), on whichever
// backend FIBERSCOPE_BACKEND picks. Every wait has a Timeout, and a child a
// test leaves behind (a failed REQUIRE) is killed and reaped by a guard with
// plain syscalls, so nothing hangs and no zombie outlives its test.
#include "test_support.hpp"

#include <dirent.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstring>
#include <string>
#include <vector>

// For the io_uring fallback test: clears the loop's WAITID bit.
#include "../../runtime/src/loop.hpp"

using namespace fiberscope;
using namespace std::chrono_literals;

namespace Catch {
template <>
struct StringMaker<fiberscope::ExitStatus> {
    static std::string convert(const fiberscope::ExitStatus& s) {
        if (s.exited()) return "exited(" + std::to_string(s.value) + ")";
        return "signaled(" + std::to_string(s.value) + (s.core_dumped ? ", core dumped)" : ")");
    }
};
} // namespace Catch

namespace {

constexpr auto kWait = 10s; // the bound on every wait for a child that should end

// Kills and reaps the child if the test did not (a failed REQUIRE unwinds
// through here: plain blocking syscalls, nothing that suspends a fiber).
void reap(Child& child) {
    if (child.pidfd < 0) return;
    syscall(SYS_pidfd_send_signal, child.pidfd, SIGKILL, nullptr, 0);
    siginfo_t info{};
    waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(child.pidfd), &info, WEXITED);
    ::close(child.pidfd);
    child.pidfd = -1;
}
struct Reaper {
    Child& child;
    explicit Reaper(Child& c) : child(c) {}
    Reaper(const Reaper&) = delete;
    ~Reaper() { reap(child); }
};
struct ReapAll {
    std::vector<Child>& children;
    explicit ReapAll(std::vector<Child>& c) : children(c) {}
    ReapAll(const ReapAll&) = delete;
    ~ReapAll() {
        for (Child& child : children) reap(child);
    }
};

Child spawn(EventLoop& loop, std::initializer_list<std::string_view> argv, ProcessOptions options = {}) {
    auto child = loop.spawnProcess(argv, options);
    if (!child) FAIL("spawnProcess(" << *argv.begin() << ") failed: " << child.error().name());
    REQUIRE(child->pid > 0);
    REQUIRE(child->pidfd >= 0);
    REQUIRE(child->waitable());
    return *child;
}

// Everything `file` yields until end-of-file, each read bounded.
std::string readAll(EventLoop& loop, File file) {
    std::string text;
    char buffer[256];
    for (;;) {
        auto n = loop.read(file, std::as_writable_bytes(std::span(buffer)), kWait);
        // No Catch assertion here: it may run on a fiber beside the test's
        // own assertions, and Catch is not thread-safe. A failure shows in
        // the text the caller compares.
        if (!n) return text + "<read failed: " + n.error().name() + ">";
        if (*n == 0) return text;
        text.append(buffer, *n);
    }
}

bool cloexec(int fd) { return (fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }

// Open descriptors, not counting a lazily started worker's ring, epoll
// instance or eventfd.
int openFdCount() {
    int count = 0;
    if (DIR* dir = opendir("/proc/self/fd")) {
        while (dirent* entry = readdir(dir)) {
            if (entry->d_name[0] == '.') continue;
            char target[256] = {};
            const std::string link = std::string("/proc/self/fd/") + entry->d_name;
            if (readlink(link.c_str(), target, sizeof target - 1) > 0 &&
                (std::strstr(target, "io_uring") || std::strstr(target, "eventpoll") || std::strstr(target, "eventfd")))
                continue;
            ++count;
        }
        closedir(dir);
    }
    return count - 1; // opendir's own
}

// No child of this process is left, running or a zombie.
bool noChildLeft() {
    siginfo_t info{};
    return waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
}

} // namespace

TEST_CASE("process: exit codes, true and false", "[process]") {
    auto loop = test::makeLoop(2);
    {
        Child child = spawn(*loop, {"/bin/sh", "-c", "exit 3"});
        Reaper reaper{child};
        auto status = loop->wait(child, kWait);
        REQUIRE(status);
        REQUIRE(*status == ExitStatus::exitedWith(3));
        REQUIRE(status->code() == 3);
        REQUIRE(status->signal() == -1);
        REQUIRE_FALSE(status->success());
        // Reaped: the pidfd is closed, a second wait and a kill say so.
        REQUIRE_FALSE(child.waitable());
        REQUIRE(loop->wait(child, kWait).error() == Errc::ProcessNotFound);
        REQUIRE(loop->kill(child).error() == Errc::ProcessNotFound);
    }
    {
        Child child = spawn(*loop, {"true"}); // found on PATH
        Reaper reaper{child};
        auto status = loop->wait(child, kWait);
        REQUIRE(status);
        REQUIRE(status->success());
        REQUIRE(*status == ExitStatus::exitedWith(0));
    }
    {
        Child child = spawn(*loop, {"false"});
        Reaper reaper{child};
        REQUIRE(loop->wait(child, kWait).value() == ExitStatus::exitedWith(1));
    }
}

TEST_CASE("process: echo through a stdout pipe, stderr apart", "[process]") {
    auto loop = test::makeLoop(2);
    Child child = spawn(*loop, {"/bin/sh", "-c", "echo hello; echo oops >&2"},
                        {.stdout_mode = Stdio::pipe, .stderr_mode = Stdio::pipe});
    Reaper reaper{child};
    REQUIRE_FALSE(child.stdin_pipe.valid());
    REQUIRE(child.stdout_pipe.valid());
    REQUIRE(child.stderr_pipe.valid());
    REQUIRE(cloexec(child.stdout_pipe.fd));
    REQUIRE(cloexec(child.stderr_pipe.fd));
    REQUIRE(readAll(*loop, child.stdout_pipe) == "hello\n");
    REQUIRE(readAll(*loop, child.stderr_pipe) == "oops\n");
    REQUIRE(loop->close(child.stdout_pipe));
    REQUIRE(loop->close(child.stderr_pipe));
    REQUIRE(loop->wait(child, kWait).value().success());
}

TEST_CASE("process: a stdin pipe to cat and back", "[process]") {
    auto loop = test::makeLoop(2);
    Child child = spawn(*loop, {"cat"}, {.stdin_mode = Stdio::pipe, .stdout_mode = Stdio::pipe});
    Reaper reaper{child};
    REQUIRE(cloexec(child.stdin_pipe.fd));
    // Read on another fiber while this one writes: more than a pipe holds.
    std::string sent;
    for (int i = 0; i < 20000; ++i) sent += "line " + std::to_string(i) + "\n";
    auto reader = loop->async([&] { return readAll(*loop, child.stdout_pipe); });
    std::size_t offset = 0;
    while (offset < sent.size()) {
        auto n = loop->write(child.stdin_pipe, std::as_bytes(std::span(sent.data() + offset, sent.size() - offset)), kWait);
        REQUIRE(n);
        offset += *n;
    }
    REQUIRE(loop->close(child.stdin_pipe)); // cat sees end-of-file
    REQUIRE(reader.await() == sent);
    REQUIRE(loop->close(child.stdout_pipe));
    REQUIRE(loop->wait(child, kWait).value().success());
}

TEST_CASE("process: kill a sleeping child with SIGKILL", "[process]") {
    auto loop = test::makeLoop(2);
    Child child = spawn(*loop, {"sleep", "30"});
    Reaper reaper{child};
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(loop->kill(child, SIGKILL));
    auto status = loop->wait(child, kWait);
    REQUIRE(status);
    REQUIRE(*status == ExitStatus::signaledBy(9));
    REQUIRE(status->signal() == SIGKILL);
    REQUIRE(status->code() == -1);
    REQUIRE(test::secondsSince(start) < 5.0);
    // SIGTERM, the default signal, and a bad signal number.
    Child other = spawn(*loop, {"sleep", "30"});
    Reaper other_reaper{other};
    REQUIRE(loop->kill(other, 12345).error() == Errc::InvalidArgument);
    REQUIRE(loop->kill(other));
    REQUIRE(loop->wait(other, kWait).value() == ExitStatus::signaledBy(SIGTERM));
}

TEST_CASE("process: wait with a Timeout, then kill and wait", "[process]") {
    auto loop = test::makeLoop(2);
    Child child = spawn(*loop, {"sleep", "30"});
    Reaper reaper{child};
    const auto start = std::chrono::steady_clock::now();
    auto timed = loop->wait(child, 100ms);
    REQUIRE_FALSE(timed);
    REQUIRE(timed.error() == Errc::TimedOut);
    REQUIRE(test::secondsSince(start) >= 0.09);
    REQUIRE(test::secondsSince(start) < 5.0);
    // Still running, still waitable: a zero Timeout says so at once.
    REQUIRE(child.waitable());
    REQUIRE(loop->wait(child, 0ms).error() == Errc::TimedOut);
    REQUIRE(loop->kill(child, SIGKILL));
    REQUIRE(loop->wait(child, kWait).value() == ExitStatus::signaledBy(SIGKILL));
}

TEST_CASE("process: canceling a fiber blocked in wait", "[process][cancel]") {
    auto loop = test::makeLoop(2);
    Child child = spawn(*loop, {"sleep", "30"});
    Reaper reaper{child};
    for (int i = 0; i < 5; ++i) {
        std::atomic<bool> started{false};
        auto waiter = loop->async([&] {
            started.store(true, std::memory_order_relaxed); // only a hint for the sleep below
            return loop->wait(child, 20s);
        });
        // Let it park (sometimes not: a cancel before the wait starts is Canceled too).
        if (i % 2 == 0) REQUIRE(loop->sleep(20ms));
        const auto start = std::chrono::steady_clock::now();
        auto result = waiter.cancel();
        INFO("iteration " << i << ", started " << started.load());
        REQUIRE_FALSE(result);
        REQUIRE(result.error() == Errc::Canceled);
        REQUIRE(test::secondsSince(start) < 2.0);
        REQUIRE(child.waitable()); // not reaped: the child runs on
    }
    REQUIRE(loop->kill(child, SIGKILL));
    REQUIRE(loop->wait(child, kWait).value() == ExitStatus::signaledBy(SIGKILL));
}

TEST_CASE("process: spawn failures are named errors", "[process][errors]") {
    FIBERSCOPE_SKIP_UNDER_EMULATOR("it runs posix_spawn's CLONE_VM | CLONE_VFORK child as a fork, so an exec that "
                                   "fails is never reported to the parent");
    auto loop = test::makeLoop(2);
    REQUIRE(loop->spawnProcess({"fiberscope-no-such-program"}).error() == Errc::FileNotFound);
    REQUIRE(loop->spawnProcess({"/no/such/dir/program"}).error() == Errc::FileNotFound);
    // Not searched on PATH: "sh" is then a path in the working directory.
    ProcessOptions no_search{.search_path = false};
    REQUIRE(loop->spawnProcess({"fiberscope-no-such-program"}, no_search).error() == Errc::FileNotFound);
    // Not executable.
    REQUIRE(loop->spawnProcess({"/etc/passwd"}).error() == Errc::AccessDenied);
    // A missing working directory, an empty argv, a NUL in an argument.
    REQUIRE(loop->spawnProcess({"true"}, {.cwd = "/no/such/dir"}).error() == Errc::FileNotFound);
    REQUIRE(loop->spawnProcess(std::span<const std::string_view>{}).error() == Errc::InvalidArgument);
    const std::string with_nul("a\0b", 3);
    REQUIRE(loop->spawnProcess(std::array<std::string_view, 2>{"echo", with_nul}).error() == Errc::InvalidArgument);
    // An executable file that is no program: no #! line and not ELF.
    char path[] = "/tmp/fiberscope-test-noexec-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(::write(fd, "\x7f" "ELF-not-really", 14) == 14);
    ::close(fd);
    chmod(path, 0700);
    auto bad = loop->spawnProcess({std::string_view(path)});
    unlink(path);
    REQUIRE_FALSE(bad);
    REQUIRE(bad.error() == Errc::InvalidExecutable);
}

TEST_CASE("process: working directory, environment, /dev/null", "[process]") {
    auto loop = test::makeLoop(2);
    const std::array<std::string_view, 2> env{"FIBERSCOPE_GREETING=hello there", "PATH=/usr/bin:/bin"};
    Child child = spawn(*loop, {"/bin/sh", "-c", "echo \"$FIBERSCOPE_GREETING\"; pwd; echo \"${HOME-unset}\""},
                        {.stdout_mode = Stdio::pipe, .cwd = "/", .environment = env});
    Reaper reaper{child};
    REQUIRE(readAll(*loop, child.stdout_pipe) == "hello there\n/\nunset\n");
    REQUIRE(loop->close(child.stdout_pipe));
    REQUIRE(loop->wait(child, kWait).value().success());

    // stdin from /dev/null: cat ends at once; stdout to /dev/null.
    Child quiet = spawn(*loop, {"cat"}, {.stdin_mode = Stdio::null, .stdout_mode = Stdio::null});
    Reaper quiet_reaper{quiet};
    REQUIRE_FALSE(quiet.stdin_pipe.valid());
    REQUIRE_FALSE(quiet.stdout_pipe.valid());
    REQUIRE(loop->wait(quiet, kWait).value().success());

    // A signal the parent ignores is at its default in the child.
    struct sigaction ignore{}, previous{};
    ignore.sa_handler = SIG_IGN;
    sigaction(SIGUSR1, &ignore, &previous);
    Child signaled = spawn(*loop, {"/bin/sh", "-c", "kill -USR1 $$; exit 0"});
    Reaper signaled_reaper{signaled};
    auto status = loop->wait(signaled, kWait);
    sigaction(SIGUSR1, &previous, nullptr);
    REQUIRE(status.value() == ExitStatus::signaledBy(SIGUSR1));
}

TEST_CASE("process: 50 children waited for concurrently from fibers", "[process][stress]") {
    auto loop = test::makeLoop(4);
    REQUIRE(noChildLeft());
    const int fds_before = openFdCount();
    constexpr int kChildren = 50;
    std::vector<Child> children;
    std::vector<Future<Result<ExitStatus>>> waiters;
    for (int i = 0; i < kChildren; ++i) {
        const std::string script = "sleep 0.0" + std::to_string(i % 10) + "; exit " + std::to_string(i);
        children.push_back(spawn(*loop, {"/bin/sh", "-c", script}));
    }
    ReapAll reap_all{children};
    for (auto& child : children) waiters.push_back(loop->async([&] { return loop->wait(child, 20s); }));
    for (int i = 0; i < kChildren; ++i) {
        auto status = waiters[i].await();
        INFO("child " << i);
        REQUIRE(status);
        REQUIRE(*status == ExitStatus::exitedWith(i));
    }
    // Every pidfd closed by the wait that reaped its child, every child reaped.
    REQUIRE(openFdCount() == fds_before);
    REQUIRE(noChildLeft());
}

TEST_CASE("process: io_uring without IORING_OP_WAITID waits on the pidfd's readiness", "[process][fallback]") {
    auto loop = test::makeLoop(2);
    if (loop->backend() != IoBackend::io_uring) {
        WARN("io_uring-only test: skipped on the " << ioBackendName(loop->backend()) << " backend");
        return;
    }
    // Before any worker starts (and reads the bits): as on a kernel before 6.7.
    loop->impl()->ring_opcodes &= ~(std::uint64_t{1} << 50);
    Child child = spawn(*loop, {"/bin/sh", "-c", "exit 7"});
    Reaper reaper{child};
    REQUIRE(loop->wait(child, kWait).value() == ExitStatus::exitedWith(7));

    Child sleeper = spawn(*loop, {"sleep", "30"});
    Reaper sleeper_reaper{sleeper};
    REQUIRE(loop->wait(sleeper, 50ms).error() == Errc::TimedOut);
    auto waiter = loop->async([&] { return loop->wait(sleeper, 20s); });
    REQUIRE(loop->sleep(20ms));
    REQUIRE(waiter.cancel().error() == Errc::Canceled);
    REQUIRE(loop->kill(sleeper, SIGKILL));
    REQUIRE(loop->wait(sleeper, kWait).value() == ExitStatus::signaledBy(SIGKILL));

    std::vector<Child> children;
    for (int i = 0; i < 10; ++i)
        children.push_back(spawn(*loop, {"/bin/sh", "-c", "exit " + std::to_string(i)}));
    ReapAll reap_all{children};
    std::vector<Future<Result<ExitStatus>>> waiters;
    for (auto& c : children) waiters.push_back(loop->async([&] { return loop->wait(c, 20s); }));
    for (int i = 0; i < 10; ++i) REQUIRE(waiters[i].await().value() == ExitStatus::exitedWith(i));
}
