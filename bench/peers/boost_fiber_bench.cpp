// Peer: Boost.Fiber, on its default scheduler (round_robin, one thread).
//
//   BM_BoostFiberYield   two fibers on one thread call
//                        boost::this_fiber::yield() in turn; one iteration =
//                        one yield = one switch (as BM_YieldPingPong).
//   BM_BoostFiberSkynet  skynet, 1M leaves, branching 10, in the shape of
//                        Boost.Fiber's own performance test: every node is a
//                        detached fiber started with launch::dispatch that
//                        sends its result to its parent over a
//                        buffered_channel; the stacks come from a
//                        fixedsize_stack allocator.
#include <benchmark/benchmark.h>

#include <boost/fiber/all.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace {

namespace fibers = boost::fibers;

void BM_BoostFiberYield(benchmark::State& state) {
    const std::int64_t half = (state.max_iterations + 1) / 2;
    while (state.KeepRunningBatch(2 * half)) {
        auto player = [half] {
            for (std::int64_t i = 0; i < half; ++i) boost::this_fiber::yield();
        };
        fibers::fiber ping(player);
        fibers::fiber pong(player);
        ping.join();
        pong.join();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BoostFiberYield)->UseRealTime();

constexpr std::uint64_t kSkynetLeaves = 1'000'000;
constexpr std::uint64_t kSkynetBranching = 10;
constexpr std::uint64_t kSkynetExpected = kSkynetLeaves * (kSkynetLeaves - 1) / 2; // 499999500000
constexpr std::uint64_t kSkynetFibers = 1'111'111;
// Per-fiber stack. The nodes are shallow; 16 KiB leaves ample headroom
// (fixedsize_stack has no guard page).
constexpr std::size_t kSkynetStack = 16 * 1024;

using Channel = fibers::buffered_channel<std::uint64_t>;
using StackAllocator = fibers::fixedsize_stack;

// Node `num` covering `size` leaves: a leaf sends its number to `parent`, an
// inner node starts one fiber per child, adds up what they send and sends
// the sum on.
void skynetNode(StackAllocator& stacks, Channel& parent, std::uint64_t num, std::uint64_t size) {
    if (size == 1) {
        parent.push(num);
        return;
    }
    // buffered_channel capacity must be a power of two; 16 >= the branching,
    // so no child ever blocks on its push.
    Channel results{16};
    const std::uint64_t child_size = size / kSkynetBranching;
    for (std::uint64_t i = 0; i < kSkynetBranching; ++i) {
        fibers::fiber(fibers::launch::dispatch, std::allocator_arg, stacks, skynetNode, std::ref(stacks),
                      std::ref(results), num + i * child_size, child_size)
            .detach();
    }
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i < kSkynetBranching; ++i) sum += results.value_pop();
    parent.push(sum);
}

void BM_BoostFiberSkynet(benchmark::State& state) {
    StackAllocator stacks{kSkynetStack};
    for (auto _ : state) {
        Channel root{2};
        fibers::fiber(fibers::launch::dispatch, std::allocator_arg, stacks, skynetNode, std::ref(stacks),
                      std::ref(root), std::uint64_t{0}, kSkynetLeaves)
            .detach();
        const std::uint64_t sum = root.value_pop();
        if (sum != kSkynetExpected) {
            state.SkipWithError(("skynet sum is " + std::to_string(sum) + ", expected " +
                                 std::to_string(kSkynetExpected)).c_str());
            break;
        }
    }
    state.counters["loop_threads"] = 1;
    state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * kSkynetFibers));
}
BENCHMARK(BM_BoostFiberSkynet)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
