// Misuse is a clear error, never undefined behaviour: a consumed or
// moved-from Future, select() over nothing, a throwing Group member or
// detached fiber, suspending calls from a plain std::thread, async() with no
// stack left, a named fiber's stack overflow, and a canceled Group. Cases
// that abort run in a forked child whose exit signal and stderr are checked.
#include "test_support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iterator>
#include <signal.h>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <fiberscope/trace.hpp>

using namespace fiberscope;
using namespace std::chrono_literals;

namespace {

// ThreadSanitizer cannot follow a child forked from a multi-threaded process
// that then starts threads of its own (as in test_failures.cpp).
#if defined(__SANITIZE_THREAD__)
constexpr bool kForkUnsupported = true;
#else
constexpr bool kForkUnsupported = false;
#endif

struct Child {
    int status = 0;
    std::string err;
    bool aborted() const { return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT; }
    bool exitedWith(int code) const { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
};

// Runs `body` in a forked child with stderr captured; the child is killed if
// it outlives 20 s (a misuse that hangs fails instead of hanging the suite).
Child runChild(const std::function<int()>& body) {
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        alarm(20);
        // The default action, not Catch's fatal-signal report, for the abort
        // under test.
        signal(SIGABRT, SIG_DFL);
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        close(fds[1]);
        _exit(body());
    }
    close(fds[1]);
    Child child;
    char buffer[4096];
    ssize_t n;
    while ((n = read(fds[0], buffer, sizeof buffer)) > 0) child.err.append(buffer, static_cast<std::size_t>(n));
    close(fds[0]);
    waitpid(pid, &child.status, 0);
    return child;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Lines of `text` (stderr) that start with "fiberscope:".
std::size_t runtimeLines(const std::string& text) {
    std::size_t count = 0;
    for (std::size_t at = 0; (at = text.find("fiberscope:", at)) != std::string::npos; ++at) ++count;
    return count;
}

#define SKIP_UNDER_TSAN()                                                                           \
    do {                                                                                            \
        if (kForkUnsupported) {                                                                     \
            WARN("skipped under ThreadSanitizer (it does not support threads started after fork)"); \
            return;                                                                                 \
        }                                                                                           \
    } while (0)

__attribute__((noinline)) int recurse(int depth, int limit) {
    volatile char frame[1024];
    frame[0] = static_cast<char>(depth);
    if (depth == limit) return frame[0];
    return recurse(depth + 1, limit) + frame[0];
}

} // namespace

TEST_CASE("every call on a consumed or moved-from Future aborts with one line naming it", "[misuse][future]") {
    SKIP_UNDER_TSAN();
    FIBERSCOPE_SKIP_UNDER_EMULATOR("a child forked from this threaded process crashes qemu-user once it starts threads (an assertion in qemu's cpu_exec)");
    struct Case {
        const char* name;
        std::function<void(EventLoop&)> misuse;
        const char* line;
    };
    const std::vector<Case> cases = {
        {"await twice",
         [](EventLoop& loop) {
             auto f = loop.async([] { return 1; });
             (void)f.await();
             (void)f.await();
         },
         "fiberscope: misuse: Future::await() on a Future that was already awaited or moved from\n"},
        {"await after move",
         [](EventLoop& loop) {
             auto f = loop.async([] { return 1; });
             auto g = std::move(f);
             (void)g.await();
             (void)f.await();
         },
         "fiberscope: misuse: Future::await() on a Future that was already awaited or moved from\n"},
        {"cancel after await",
         [](EventLoop& loop) {
             auto f = loop.async([] {});
             f.await();
             f.cancel();
         },
         "fiberscope: misuse: Future::cancel() on a Future that was already awaited or moved from\n"},
        {"await after cancel",
         [](EventLoop& loop) {
             auto f = loop.async([&] { return loop.sleep(60s); });
             (void)f.cancel();
             (void)f.await();
         },
         "fiberscope: misuse: Future::await() on a Future that was already awaited or moved from\n"},
        {"select over a moved-from future",
         [](EventLoop& loop) {
             auto f = loop.async([&] { return loop.sleep(60s); });
             auto g = std::move(f);
             (void)select(f, g);
         },
         "fiberscope: misuse: select() over a Future that was already awaited or moved from\n"},
        {"select over an awaited future in a span",
         [](EventLoop& loop) {
             std::vector<Future<int>> all;
             all.push_back(loop.async([] { return 1; }));
             (void)all[0].await();
             (void)select(std::span(all));
         },
         "fiberscope: misuse: select() over a Future that was already awaited or moved from\n"},
        {"select over an empty span",
         [](EventLoop&) {
             std::vector<Future<int>> none;
             (void)select(std::span(none));
         },
         "fiberscope: misuse: select() over an empty span of futures would wait forever\n"},
    };
    for (const Case& c : cases) {
        INFO("case: " << c.name);
        auto child = runChild([&] {
            auto loop = EventLoop::create({.threads = 2}).value();
            c.misuse(*loop);
            return 0; // not reached
        });
        INFO("child stderr: " << child.err);
        REQUIRE(child.aborted());
        CHECK(child.err == c.line);
    }
}

TEST_CASE("a moved-from or awaited Future is simply not valid, and destroying it is fine", "[misuse][future]") {
    auto loop = test::makeLoop(2);
    auto f = loop->async([] { return 7; });
    REQUIRE(f.valid());
    auto g = std::move(f);
    REQUIRE_FALSE(f.valid());
    REQUIRE(f.fiber() == nullptr);
    REQUIRE(g.await() == 7);
    REQUIRE_FALSE(g.valid());
}

TEST_CASE("a Group member that throws: wait() joins the others, rethrows once, and the Group dies cleanly",
          "[misuse][group]") {
    auto loop = test::makeLoop(4);
    std::atomic<int> finished{0};
    {
        Group group(*loop);
        group.async([&]() -> Status {
            (void)loop->sleep(1ms);
            throw std::runtime_error("member failed");
        });
        for (int i = 0; i < 5; ++i)
            group.async([&] {
                (void)loop->sleep(5ms);
                ++finished;
            });
        group.async([&]() -> Status { throw std::logic_error("second failure"); });
        std::string what;
        try {
            (void)group.wait();
        } catch (const std::exception& e) {
            what = e.what();
        }
        // The first exception collected, after every other member finished.
        CHECK((what == "member failed" || what == "second failure"));
        CHECK(finished == 5);
        CHECK(group.wait()); // nothing left, nothing rethrown again
    } // the destructor must not read a member's result again
    {
        // Nobody waits: the destructor's cancel drops the exception.
        Group group(*loop);
        group.async([]() -> Status { throw std::runtime_error("unseen"); });
        (void)loop->sleep(1ms);
    }
    SUCCEED("no crash");
}

TEST_CASE("an exception in a detached fiber is reported on stderr and in the trace", "[misuse][detached]") {
    SKIP_UNDER_TSAN();
    FIBERSCOPE_SKIP_UNDER_EMULATOR("a child forked from this threaded process crashes qemu-user once it starts threads (an assertion in qemu's cpu_exec)");
    const std::string trace_path = "/tmp/fiberscope-test-misuse-" + std::to_string(getpid()) + ".fstrace";
    auto child = runChild([&] {
        {
            trace::Recorder recorder(trace_path.c_str());
            auto loop = EventLoop::create({.threads = 2}).value();
            loop->asyncDetached([] {
                setFiberName("fetcher 3");
                throw std::runtime_error("connection lost");
            });
            (void)loop->sleep(20ms);
        }
        return 0;
    });
    INFO("child stderr: " << child.err);
    REQUIRE(child.exitedWith(0));
    const std::string expected = "\" ended with an exception: connection lost\n";
    CHECK(contains(child.err, "fiberscope: detached fiber #"));
    CHECK(contains(child.err, " \"fetcher 3" + expected));
    std::ifstream in(trace_path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::remove(trace_path.c_str());
    INFO("trace " << trace_path << " (" << bytes.size() << " bytes)");
    CHECK(contains(bytes, "\"fetcher 3\" ended with an exception: connection lost"));
}

TEST_CASE("suspending calls from a plain std::thread return NotOnLoopThread", "[misuse][thread]") {
    auto loop = test::makeLoop(2);
    Group group(*loop);
    std::vector<Error> errors;
    bool yielded = false, canceled = true;
    std::thread plain([&] {
        auto slept = loop->sleep(1ms);
        if (!slept) errors.push_back(slept.error());
        auto until = loop->sleepUntil(Timestamp{0});
        if (!until) errors.push_back(until.error());
        auto opened = loop->openFile("/proc/self/stat");
        if (!opened) errors.push_back(opened.error());
        char byte;
        auto n = loop->read(File{0}, std::as_writable_bytes(std::span(&byte, 1)));
        if (!n) errors.push_back(n.error());
        Socket none{-1};
        auto accepted = loop->accept(none);
        if (!accepted) errors.push_back(accepted.error());
        auto waited = group.wait();
        if (!waited) errors.push_back(waited.error());
        auto canceled_group = group.cancel();
        if (!canceled_group) errors.push_back(canceled_group.error());
        loop->yield(); // yields the OS thread
        yielded = true;
        canceled = loop->cancelRequested();
    });
    plain.join();
    REQUIRE(errors.size() == 7);
    for (const Error& e : errors) CHECK(e == Errc::NotOnLoopThread);
    CHECK(std::string(errcName(Errc::NotOnLoopThread)) == "NotOnLoopThread");
    CHECK(contains(errcMessage(Errc::NotOnLoopThread), "not one of the loop's"));
    CHECK(yielded);
    CHECK_FALSE(canceled);
    // The loop is unharmed.
    REQUIRE(loop->sleep(1ms));
}

TEST_CASE("awaiting a fiber from a plain std::thread aborts with one line naming it", "[misuse][thread]") {
    SKIP_UNDER_TSAN();
    FIBERSCOPE_SKIP_UNDER_EMULATOR("a child forked from this threaded process crashes qemu-user once it starts threads (an assertion in qemu's cpu_exec)");
    auto child = runChild([] {
        auto loop = EventLoop::create({.threads = 2}).value();
        auto f = loop->async([&] { return loop->sleep(50ms); });
        std::thread plain([&] { (void)f.await(); });
        plain.join();
        return 0;
    });
    INFO("child stderr: " << child.err);
    REQUIRE(child.aborted());
    CHECK(contains(child.err, "fiberscope: misuse: Future::await() on a thread that is not one of the loop's"));
    CHECK(runtimeLines(child.err) == 1);
}

TEST_CASE("with no stack to be had, async runs inline without throwing and asyncDetached reports its exception",
          "[misuse][oom]") {
    SKIP_UNDER_TSAN();
    auto child = runChild([] {
        // A slab of four 32 TiB stacks exceeds any x86-64 or arm64 address
        // space: every carve fails, deterministically.
        auto created = EventLoop::create({.threads = 1, .stack_size = std::size_t{1} << 45});
        if (!created) return 10;
        auto& loop = **created;
        if (loop.concurrent([] { return 1; }).error() != Errc::OutOfMemory) return 11;
        int ran_on = -1;
        try {
            auto f = loop.async([&] {
                ran_on = static_cast<int>(currentFiberId());
                return 42;
            });
            if (f.await() != 42) return 12;
        } catch (...) {
            return 13;
        }
        if (ran_on != 1) return 14; // inline, on the main fiber
        loop.asyncDetached([] { throw std::runtime_error("inline failure"); });
        return 0;
    });
    INFO("child stderr: " << child.err);
    REQUIRE(child.exitedWith(0));
    CHECK(contains(child.err, "fiberscope: cannot allocate fiber stack #1"));
    CHECK(contains(child.err, "fiberscope: asyncDetached's function (run inline on fiber #1: no fiber stack was free) "
                              "ended with an exception: inline failure\n"));
}

TEST_CASE("a stack overflow names the fiber by number and by its setFiberName name", "[misuse][overflow]") {
    SKIP_UNDER_TSAN();
    FIBERSCOPE_SKIP_UNDER_EMULATOR("it ignores madvise, so the runtime's guard markers (MADV_GUARD_INSTALL) are never installed and an overflow is a bare SIGSEGV");
    auto child = runChild([] {
        auto loop = EventLoop::create({.threads = 1, .stack_size = 64 * 1024}).value();
        auto f = loop->async([] {
            setFiberName("a name longer than the header keeps for messages, which is cut at 47 bytes");
            setFiberName("deep recursion");
            return recurse(0, 1 << 30);
        });
        return f.await();
    });
    INFO("child stderr: " << child.err);
    REQUIRE(WIFSIGNALED(child.status));
    CHECK(contains(child.err, "fiberscope: stack overflow in fiber #2 \"deep recursion\" (its stack is "));
}

TEST_CASE("a canceled Group stays canceled and does not report the Canceled it asked for", "[misuse][group][cancel]") {
    auto loop = test::makeLoop(2);
    Group group(*loop);
    for (int i = 0; i < 3; ++i) group.async([&] { return loop->sleep(60s); });
    (void)loop->sleep(2ms);
    auto start = std::chrono::steady_clock::now();
    // Every member returns Canceled because of this cancel: not an error.
    REQUIRE(group.cancel());
    // A member started after the cancel is canceled as it joins: its sleep
    // (started before or after the request reached it) returns Canceled.
    std::atomic<bool> slept_canceled{false};
    group.async([&] {
        Status slept = loop->sleep(60s);
        slept_canceled = !slept && slept.error() == Errc::Canceled;
        return slept;
    });
    REQUIRE(group.wait());
    CHECK(slept_canceled);
    CHECK(test::secondsSince(start) < 5.0);
    // Other errors are still reported from a canceled group.
    group.async([]() -> Status { return Errc::InvalidArgument; });
    auto failed = group.wait();
    REQUIRE_FALSE(failed);
    CHECK(failed.error() == Errc::InvalidArgument);

    // In a group nobody canceled, a member's own Canceled is its error.
    Group other(*loop);
    other.async([]() -> Status { return Errc::Canceled; });
    auto result = other.wait();
    REQUIRE_FALSE(result);
    CHECK(result.error() == Errc::Canceled);
}
