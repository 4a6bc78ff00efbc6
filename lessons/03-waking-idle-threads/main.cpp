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

using namespace std::chrono_literals;

namespace {

constexpr const char* kName = "lesson03-waking-idle-threads";
constexpr int kTasksPerBurst = 12;

bool parseArgs(int argc, char** argv, unsigned& threads) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--threads" && i + 1 < argc) {
            char* end = nullptr;
            const unsigned long n = std::strtoul(argv[++i], &end, 10);
            if (*end == '\0' && n >= 1 && n <= 1024) {
                threads = static_cast<unsigned>(n);
                continue;
            }
        }
        std::fprintf(stderr, "%s: bad argument '%s'; usage: %s [--threads N]\n", kName, argv[i], kName);
        return false;
    }
    return true;
}

// CPU-bound work: keeps its thread busy for `duration` without suspending.
void compute(std::chrono::microseconds duration) {
    const auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < end) {
    }
}

} // namespace

int main(int argc, char** argv) {
    unsigned threads = 4;
    if (!parseArgs(argc, argv, threads)) return 2;
    auto created = fiberscope::EventLoop::create({.threads = threads});
    if (!created) {
        std::fprintf(stderr, "%s: cannot start the event loop: %s\n", kName, created.error().message());
        return 1;
    }
    fiberscope::EventLoop& loop = **created;
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
