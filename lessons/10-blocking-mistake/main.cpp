// Lesson 10: the blocking mistake.
//
// A "dispatcher" fiber starts a few short "request" fibers, then has a chore
// of its own that takes 8 ms. It does the chore four ways:
//   1. ::usleep(): a blocking syscall, not through the loop (the mistake);
//   2. a CPU busy loop that never yields (the same mistake, in CPU form);
//   3. loop.sleep(): the same wait, through the loop (the fix for waiting);
//   4. the busy loop cut into 0.5 ms slices with yield() between them (the
//      fix for computing).
// Each request measures how long it waited between being started (made
// ready) and actually running. While the dispatcher blocks its thread, the
// requests queued behind it cannot run: the thread is not available to the
// scheduler until the dispatcher suspends.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

using namespace std::chrono_literals;

namespace {

constexpr const char* kName = "lesson10-blocking-mistake";
constexpr int kRounds = 6;
constexpr int kRequestsPerRound = 3;
constexpr auto kChore = 8ms;

using Clock = std::chrono::steady_clock;

void compute(std::chrono::microseconds duration) {
    const auto end = Clock::now() + duration;
    while (Clock::now() < end) {
    }
}

enum class Chore { BlockingSyscall, BusyLoop, SleepThroughLoop, BusyLoopWithYields };

struct Phase {
    Chore chore;
    const char* checkpoint;
    const char* description;
};

constexpr Phase kPhases[] = {
    {Chore::BlockingSyscall, "checkpoint: blocking syscall", "::usleep(8 ms), a blocking syscall"},
    {Chore::BusyLoop, "checkpoint: busy loop", "8 ms busy loop, never yielding"},
    {Chore::SleepThroughLoop, "checkpoint: sleeping through the loop", "loop.sleep(8 ms), through the loop"},
    {Chore::BusyLoopWithYields, "checkpoint: busy loop with yields", "8 ms busy loop, yield() every 0.5 ms"},
};

void doChore(fiberscope::EventLoop& loop, Chore chore) {
    switch (chore) {
    case Chore::BlockingSyscall:
        ::usleep(std::chrono::microseconds(kChore).count()); // the whole thread sleeps
        break;
    case Chore::BusyLoop:
        compute(kChore); // the whole thread computes
        break;
    case Chore::SleepThroughLoop:
        (void)loop.sleep(kChore); // only this fiber waits; the thread runs the others
        break;
    case Chore::BusyLoopWithYields:
        for (auto done = 0us; done < kChore; done += 500us) {
            compute(500us);
            loop.yield(); // let the ready fibers run, then continue
        }
        break;
    }
}

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 1);
    fiberscope::EventLoop& loop = *loop_owner;
    std::printf("A dispatcher starts %d requests, then does an 8 ms chore; %d rounds per phase, %u thread(s).\n",
                kRequestsPerRound, kRounds, loop.maxThreads());

    bool blocking_hurts = true;
    double blocking_median_ms = 1e9;
    for (const Phase& phase : kPhases) {
        std::mutex waits_mutex; // an OS mutex, held for one append, never across a suspension
        std::vector<double> waits_ms;
        auto dispatcher = loop.async([&] {
            fiberscope::setFiberName("dispatcher");
            fiberscope::trace::mark(phase.checkpoint);
            for (int round = 0; round < kRounds; ++round) {
                std::vector<fiberscope::Future<void>> requests;
                for (int r = 0; r < kRequestsPerRound; ++r)
                    requests.push_back(loop.async([&, r, ready_at = Clock::now()] {
                        const double waited = std::chrono::duration<double, std::milli>(Clock::now() - ready_at).count();
                        fiberscope::setFiberName("request " + std::to_string(r + 1));
                        compute(20us);
                        std::lock_guard lock(waits_mutex);
                        waits_ms.push_back(waited);
                    }));
                doChore(loop, phase.chore);
                for (auto& request : requests) request.await();
            }
        });
        dispatcher.await();
        std::sort(waits_ms.begin(), waits_ms.end());
        const double median = waits_ms[waits_ms.size() / 2];
        std::printf("  %-40s requests waited: median %6.2f ms, max %6.2f ms\n", phase.description, median,
                    waits_ms.back());
        if (phase.chore == Chore::BlockingSyscall) blocking_median_ms = median;
        if (phase.chore == Chore::SleepThroughLoop) blocking_hurts = blocking_median_ms > 10 * median;
    }
    fiberscope::trace::mark("checkpoint: done");
    std::printf(blocking_hurts ? "Blocking the thread made every request queued behind it wait for the chore.\n"
                               : "With this many threads the requests found another thread: try --threads 1.\n");
    return 0;
}
