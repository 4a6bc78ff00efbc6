// Lesson 15: why two threads were slower than one.
//
// The scheduler's own cost, with nothing else to hide it: fibers that do
// nothing but be spawned, scheduled, run and awaited.
//   1. Spawn an empty fiber and await it at once, 200 times (the runtime
//      benchmark's spawn+await).
//   2. skynet, small: a tree in which every node spawns ten children and
//      awaits them, and each of the 1,000 leaves returns its number; the sum
//      is checked (1,111 fibers).
// All workers are started first (EventLoop::startWorkers). By default it runs on two threads
// under the seed's scheduler, as the course so far; `--threads 1` is the
// baseline, and `--scheduler scaling` runs the same under the runtime's
// default policy. It prints what each part took and how many of the tree's
// fibers each OS thread ran.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

namespace {

constexpr const char* kName = "lesson15-two-threads-slower";
constexpr std::int64_t kLeaves = 1000;
constexpr std::int64_t kBranching = 10;
constexpr std::int64_t kExpected = kLeaves * (kLeaves - 1) / 2; // 0 + 1 + ... + 999
constexpr int kPairs = 200;                                        // spawn-then-await pairs

// Fibers run per OS thread (a node counts where it finished): a counter
// per thread, each on its own cache line, so that counting adds no fight
// between the threads of its own.
struct alignas(64) RunCount {
    std::atomic<int> fibers{0};
};
constexpr int kMaxCounted = 64;
std::array<RunCount, kMaxCounted> run_counts;
std::atomic<int> counted_threads{0};
thread_local int run_count_slot = -1;
// Not inlined: a fiber may resume on another thread, where an inlined thread_local's address is stale.
[[gnu::noinline]] void countRun() {
    if (run_count_slot < 0) run_count_slot = std::min(counted_threads.fetch_add(1), kMaxCounted - 1);
    run_counts[static_cast<std::size_t>(run_count_slot)].fibers.fetch_add(1, std::memory_order_relaxed);
}

// The subtree of `size` leaves numbered from `first`: a leaf returns its
// number; a node spawns its ten subtrees, then awaits each and adds them up.
std::int64_t skynet(fiberscope::EventLoop& loop, std::int64_t first, std::int64_t size) {
    if (size == 1) {
        countRun();
        return first;
    }
    const std::int64_t child_size = size / kBranching;
    std::array<fiberscope::Future<std::int64_t>, kBranching> children;
    for (std::int64_t i = 0; i < kBranching; ++i) {
        const std::int64_t child_first = first + i * child_size;
        children[static_cast<std::size_t>(i)] =
            loop.async([&loop, child_first, child_size] { return skynet(loop, child_first, child_size); });
    }
    std::int64_t sum = 0;
    for (auto& child : children) sum += child.await();
    countRun();
    return sum;
}

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 2);
    fiberscope::EventLoop& loop = *loop_owner;
    std::printf("On up to %u threads, scheduler %s: %d spawn-then-await pairs, then skynet with %lld leaves, %lld children "
                "per node (%lld fibers).\n",
                loop.maxThreads(), fiberscope::schedulerPolicyName(loop.scheduler()), kPairs, static_cast<long long>(kLeaves),
                static_cast<long long>(kBranching), 1LL + 10 + 100 + 1000);

    // Workers start lazily (lesson 3), and under the scaling policy a spawn
    // that is awaited at once never needs a second one: start them all now,
    // so that both policies run the pairs on two threads.
    if (const fiberscope::Status started = loop.startWorkers(); !started) {
        std::fprintf(stderr, "%s: cannot start the workers: %s\n", kName, started.error().message());
        return 1;
    }

    // Part 1: spawn an empty fiber and await it at once, kPairs times.
    fiberscope::trace::mark("checkpoint: spawn and await");
    const auto pairs_start = std::chrono::steady_clock::now();
    for (int i = 0; i < kPairs; ++i)
        if (loop.async([] { return 1; }).await() != 1) return 1;
    const auto pairs_took = std::chrono::steady_clock::now() - pairs_start;
    fiberscope::trace::mark("checkpoint: pairs done");
    std::printf("%d spawn-then-await pairs: %lld ns each\n", kPairs,
                static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(pairs_took).count() / kPairs));

    // Part 2: the tree.
    fiberscope::trace::mark("checkpoint: tree begins");
    const auto start = std::chrono::steady_clock::now();
    const std::int64_t sum = loop.async([&loop] { return skynet(loop, 0, kLeaves); }).await();
    const auto took = std::chrono::steady_clock::now() - start;
    fiberscope::trace::mark("checkpoint: tree done");

    std::printf("the tree: sum %lld (%s) in %lld us\n", static_cast<long long>(sum), sum == kExpected ? "right" : "WRONG",
                static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(took).count()));
    std::vector<int> counts;
    for (int i = 0; i < std::min(counted_threads.load(), kMaxCounted); ++i)
        counts.push_back(run_counts[static_cast<std::size_t>(i)].fibers.load(std::memory_order_relaxed));
    std::sort(counts.rbegin(), counts.rend());
    std::printf("the tree's fibers run per OS thread:");
    for (int n : counts) std::printf(" %d", n);
    std::printf("\n");
    return sum == kExpected ? 0 : 1;
}
