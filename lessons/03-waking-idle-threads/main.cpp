// Lesson 3: waking idle threads.
//
// One "spawner" fiber releases a burst of CPU-bound tasks. The loop starts
// with a single worker thread and starts more only when work appears and no
// thread is idle (lazy worker spawn). After the first burst the workers run
// out of work, park in the kernel, and the second burst has to wake them:
// schedule() hands a task to an idle worker and sends it a MSG_RING.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

using namespace std::chrono_literals;

namespace {

constexpr const char* kName = "lesson03-waking-idle-threads";
constexpr int kTasksPerBurst = 12;

// CPU-bound work: keeps its thread busy for `duration` without suspending.
void compute(std::chrono::microseconds duration) {
    const auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < end) {
    }
}

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 4);
    fiberscope::EventLoop& loop = *loop_owner;
    std::printf("Up to %u worker threads; %u running before any work.\n", loop.maxThreads(), loop.activeThreads());

    std::mutex seen_mutex; // an OS mutex, held for one insert, never across a suspension
    std::set<std::thread::id> seen;
    auto burst = [&](const char* checkpoint) {
        seen.clear();
        fiberscope::trace::mark(checkpoint);
        std::vector<fiberscope::Future<void>> tasks;
        for (int i = 0; i < kTasksPerBurst; ++i)
            tasks.push_back(loop.async([&] {
                compute(2ms);
                std::lock_guard lock(seen_mutex);
                seen.insert(std::this_thread::get_id());
            }));
        for (auto& task : tasks) task.await();
    };

    auto spawner = loop.async([&] {
        fiberscope::setFiberName("spawner");
        burst("checkpoint: first burst");
        std::printf("First burst: %d tasks ran on %zu OS threads; %u workers started so far.\n", kTasksPerBurst,
                    seen.size(), loop.activeThreads());
        // Nothing to do for a while: every worker parks in io_uring_enter.
        (void)loop.sleep(30ms);
        fiberscope::trace::mark("checkpoint: workers parked");
        burst("checkpoint: second burst");
        std::printf("Second burst: %d tasks ran on %zu OS threads; %u workers started in all.\n",
                    kTasksPerBurst, seen.size(), loop.activeThreads());
    });
    spawner.await();
    fiberscope::trace::mark("checkpoint: done");
    return 0;
}
