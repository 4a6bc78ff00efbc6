// Lesson 16: how the scaling policy decides.
//
// The runtime's default policy, `scaling`, on three small workloads, each
// showing one of its decisions:
//   1. A burst of spawns: main spawns six tasks (each ~30 us of work) and
//      awaits them. A spawn goes to the spawner's run_next slot, the one
//      before it down to its deque of new work; one parked worker is woken
//      to search, and it steals the deque's oldest task.
//   2. Yielders: four fibers each take ten turns of ~5 us, yielding between
//      turns. A yield goes to the back of the thread's ring of yielders
//      (FIFO: every yielder gets its turn); the other worker, out of work,
//      takes the older half of that ring in one steal.
//   3. Quiet: main sleeps 2 ms. A worker out of work searches the other
//      threads for a while (10 us) before it parks.
// It runs on two threads under `scaling`; `--scheduler seed` runs the same
// program under the seed's policy (lessons 1-15), for comparison.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

namespace {

constexpr const char* kName = "lesson16-scaling-decisions";
constexpr int kTasks = 6;
constexpr int kYielders = 4;
constexpr int kTurns = 10;
constexpr int kLongUs = 100; // the long task's work: a tenth of the yielders' turns

// Work that keeps the thread busy for `us` microseconds (a stand-in for a
// computation: it never suspends).
void work(std::chrono::microseconds us) {
    const auto until = std::chrono::steady_clock::now() + us;
    while (std::chrono::steady_clock::now() < until) {
    }
}

// The OS thread a fiber runs on (not inlined: after a yield it may resume on another thread).
thread_local int thread_number = -1;
std::atomic<int> threads_seen{0};
[[gnu::noinline]] int currentThreadNumber() {
    if (thread_number < 0) thread_number = threads_seen.fetch_add(1);
    return thread_number;
}

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 2, fiberscope::SchedulerPolicy::scaling);
    fiberscope::EventLoop& loop = *loop_owner;
    std::printf("On up to %u threads, scheduler %s: %d tasks, then %d yielders of %d turns, then 2 ms of quiet.\n",
                loop.maxThreads(), fiberscope::schedulerPolicyName(loop.scheduler()), kTasks, kYielders, kTurns);
    // Both workers running before the story starts (lesson 15 says why).
    if (const fiberscope::Status started = loop.startWorkers(); !started) {
        std::fprintf(stderr, "%s: cannot start the workers: %s\n", kName, started.error().message());
        return 1;
    }
    (void)currentThreadNumber(); // main's thread is thread 0

    // Part 1: a burst of spawns.
    fiberscope::trace::mark("checkpoint: spawn burst");
    std::vector<fiberscope::Future<int>> tasks;
    for (int i = 0; i < kTasks; ++i)
        tasks.push_back(loop.async([i] {
            fiberscope::setFiberName("task " + std::to_string(i));
            work(std::chrono::microseconds(30));
            return currentThreadNumber();
        }));
    std::string where;
    for (auto& task : tasks) where += std::to_string(task.await());
    fiberscope::trace::mark("checkpoint: burst done");

    // Part 2: yielders, all on one thread while the other is busy.
    fiberscope::trace::mark("checkpoint: yielders start");
    auto long_task = loop.async([] {
        fiberscope::setFiberName("long task");
        work(std::chrono::microseconds(kLongUs));
        return currentThreadNumber();
    });
    std::vector<fiberscope::Future<int>> yielders;
    for (int i = 0; i < kYielders; ++i)
        yielders.push_back(loop.async([&loop, i] {
            fiberscope::setFiberName("yielder " + std::to_string(i));
            int moves = 0, last = currentThreadNumber();
            for (int turn = 0; turn < kTurns; ++turn) {
                work(std::chrono::microseconds(5));
                loop.yield(); // to the back of this thread's ring
                const int now = currentThreadNumber();
                moves += now != last;
                last = now;
            }
            return moves;
        }));
    int moves = 0;
    for (auto& yielder : yielders) moves += yielder.await();
    const int long_thread = long_task.await();
    fiberscope::trace::mark("checkpoint: yielders done");

    // Part 3: nothing to do.
    fiberscope::trace::mark("checkpoint: quiet");
    (void)loop.sleep(std::chrono::milliseconds(2));
    fiberscope::trace::mark("checkpoint: quiet done");

    std::printf("the tasks ran on threads %s (0: main's)\n", where.c_str());
    std::printf("the long task ran on thread %d; the yielders moved between threads %d times in %d turns\n", long_thread, moves,
                kYielders * kTurns);
    return 0;
}
