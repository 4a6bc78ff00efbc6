// Helpers shared by the runtime tests.
#pragma once

#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>
#include <cstdlib>
#include <string>

#include <fiberscope/fiberscope.hpp>

#include "../support/busy_competitor.hpp"

// Readable failure messages for errors ("TimedOut (errno 62)").
namespace Catch {
template <>
struct StringMaker<fiberscope::Error> {
    static std::string convert(const fiberscope::Error& e) {
        return std::string(e.name()) + " (errno " + std::to_string(e.sys_errno) + ")";
    }
};
template <>
struct StringMaker<fiberscope::Errc> {
    static std::string convert(fiberscope::Errc code) { return fiberscope::errcName(code); }
};
} // namespace Catch

namespace test {

// Scales iteration counts down under sanitizers (FIBERSCOPE_TEST_SCALE=N divides).
inline long scaled(long n) {
    static const long divisor = [] {
        const char* s = std::getenv("FIBERSCOPE_TEST_SCALE");
        long d = s ? std::atol(s) : 1;
        return d > 0 ? d : 1;
    }();
    long r = n / divisor;
    return r > 0 ? r : 1;
}

// The user-mode emulator this suite runs under ("qemu-user": ctest sets
// FIBERSCOPE_TEST_EMULATOR in the aarch64 cross build), or nullptr on a real
// kernel. A test that checks what qemu-user does not emulate (madvise, and so
// guard markers; seccomp; posix_spawn's exec report; fork then threads;
// exec of the test binary) skips there with a line saying why.
inline const char* emulator() {
    const char* name = std::getenv("FIBERSCOPE_TEST_EMULATOR");
    return name && *name ? name : nullptr;
}

inline std::unique_ptr<fiberscope::EventLoop> makeLoop(unsigned threads) {
    auto loop = fiberscope::EventLoop::create({.threads = threads});
    if (!loop) FAIL("EventLoop::create failed: " << loop.error().message());
    return std::move(loop).value();
}

inline double secondsSince(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A hang is a failure with a message, never a stuck test run: exits the
// test program (status 3) if the scope is not left within `limit`.
class Watchdog {
public:
    Watchdog(const char* what, std::chrono::seconds limit)
        : thread_([this, what, limit] {
              std::unique_lock lock(mutex_);
              if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
                  std::fprintf(stderr, "test: '%s' did not end within %lld s (a wait that should have ended hung)\n",
                               what, static_cast<long long>(limit.count()));
                  std::_Exit(3);
              }
          }) {}
    ~Watchdog() {
        {
            std::lock_guard lock(mutex_);
            done_ = true;
        }
        cv_.notify_one();
        thread_.join();
    }
    Watchdog(const Watchdog&) = delete;
    Watchdog& operator=(const Watchdog&) = delete;

private:
    std::mutex mutex_;
    std::condition_variable cv_;
    bool done_ = false;
    std::thread thread_;
};

} // namespace test

// Ends the test case with a warning when it runs under an emulator that
// cannot do what it checks (see test::emulator()).
#define FIBERSCOPE_SKIP_UNDER_EMULATOR(why)                                  \
    do {                                                                     \
        if (const char* emulator_name = test::emulator()) {                  \
            WARN("skipped under " << emulator_name << ": " << why);          \
            return;                                                          \
        }                                                                    \
    } while (0)
