// Lesson 1: hello fibers.
//
// The main fiber spawns four "greeter" fibers, each of which names itself,
// sleeps a little (suspending only itself), and returns a greeting. The main
// fiber awaits them one by one. Each greeter reports the OS thread it started
// on and the one it finished on: after a suspension a fiber may resume on
// another worker thread.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

using namespace std::chrono_literals;

namespace {

constexpr const char* kName = "lesson01-hello-fibers";

// --threads N (1..1024); anything else is a one-line usage error.

// Small stable names for OS threads ("A", "B", ...), in order of appearance.
char threadLetter() {
    static std::mutex mutex;
    static std::map<std::thread::id, char> letters;
    std::lock_guard lock(mutex); // an OS mutex, never held across a suspension
    auto [it, added] = letters.try_emplace(std::this_thread::get_id(), static_cast<char>('A' + letters.size()));
    return it->second;
}

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 2);
    fiberscope::EventLoop& loop = *loop_owner;
    fiberscope::setFiberName("main");
    // Workers start lazily, when work finds no thread idle (lesson 3 shows
    // it). Start both now, so that the greeters' story is not interrupted
    // by an OS thread starting: worker 1 is parked when they are spawned.
    if (const fiberscope::Status started = loop.startWorkers(); !started) {
        std::fprintf(stderr, "%s: cannot start the workers: %s\n", kName, started.error().message());
        return 1;
    }
    std::printf("Main fiber on OS thread %c; spawning 4 greeters on up to %u worker threads.\n", threadLetter(),
                loop.maxThreads());

    // async() allocates a stack, makes the fiber ready (schedule()) and
    // returns at once: nothing has run yet.
    std::vector<fiberscope::Future<std::string>> greeters;
    fiberscope::trace::mark("checkpoint: spawning");
    for (int i = 0; i < 4; ++i)
        greeters.push_back(loop.async([&loop, i] {
            const std::string name = "greeter " + std::to_string(i);
            fiberscope::setFiberName(name);
            const char started_on = threadLetter();
            // Suspends this fiber only; its thread runs other fibers meanwhile.
            (void)loop.sleep(std::chrono::milliseconds(5 * (4 - i)));
            const char finished_on = threadLetter();
            return name + ": started on thread " + started_on + ", finished on thread " + finished_on;
        }));
    fiberscope::trace::mark("checkpoint: spawned");

    // await() suspends the main fiber until that greeter has finished.
    for (auto& greeter : greeters) std::printf("  %s\n", greeter.await().c_str());
    fiberscope::trace::mark("checkpoint: all awaited");

    std::printf("%u worker thread(s) ran the fibers.\n", loop.activeThreads());
    return 0;
}
