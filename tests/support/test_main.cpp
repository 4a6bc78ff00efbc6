// Catch2 main with a watchdog: a test case that runs longer than
// FIBERSCOPE_TEST_TIMEOUT seconds (default 120) is reported by name and the
// process exits with failure, so a lost wake-up shows as a clear message
// instead of a hang.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

namespace {

std::mutex g_mutex;
std::condition_variable g_changed;
std::string g_current;
std::uint64_t g_generation = 0;
bool g_done = false;

struct Watchdog : Catch::TestEventListenerBase {
    using TestEventListenerBase::TestEventListenerBase;
    void testCaseStarting(const Catch::TestCaseInfo& info) override {
        std::lock_guard lock(g_mutex);
        g_current = info.name;
        ++g_generation;
        g_changed.notify_all();
    }
};

void watch(int seconds) {
    std::unique_lock lock(g_mutex);
    while (!g_done) {
        const std::uint64_t generation = g_generation;
        if (g_changed.wait_for(lock, std::chrono::seconds(seconds), [&] { return g_done || g_generation != generation; }))
            continue;
        std::fprintf(stderr, "\nFAILED (timeout): test case \"%s\" did not finish within %d s: a hang (lost wake-up or deadlock?)\n",
                     g_current.c_str(), seconds);
        std::fflush(stderr);
        _exit(3);
    }
}

} // namespace

CATCH_REGISTER_LISTENER(Watchdog)

int main(int argc, char** argv) {
    const char* env = std::getenv("FIBERSCOPE_TEST_TIMEOUT");
    const int seconds = env && std::atoi(env) > 0 ? std::atoi(env) : 120;
    std::thread watchdog(watch, seconds);
    const int result = Catch::Session().run(argc, argv);
    {
        std::lock_guard lock(g_mutex);
        g_done = true;
        g_changed.notify_all();
    }
    watchdog.join();
    return result;
}
