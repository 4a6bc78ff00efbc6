// Peer: Boost.Context ping-pong with boost::context::continuation.
//
// The benchmark thread and one continuation resume each other. Both sides'
// resume() calls are counted, so one iteration = one resume = one context
// switch, the same unit as Fiberscope's BM_YieldPingPong. This is the bare
// switch with no scheduler at all: the floor a fiber runtime's yield is
// measured against.
#include <benchmark/benchmark.h>

#include <boost/context/continuation.hpp>

#include <cstdint>
#include <utility>

namespace {

namespace ctx = boost::context;

void BM_BoostContextResume(benchmark::State& state) {
    bool stop = false;
    std::int64_t peer_resumes = 0;
    // callcc enters the lambda at once; its first resume() hands control
    // back here, after which every resume() from either side is one switch.
    ctx::continuation peer = ctx::callcc([&stop, &peer_resumes](ctx::continuation&& back) {
        while (!stop) {
            back = back.resume();
            ++peer_resumes;
        }
        return std::move(back);
    });
    const std::int64_t half = (state.max_iterations + 1) / 2;
    std::int64_t own_resumes = 0;
    while (state.KeepRunningBatch(2 * half)) {
        for (std::int64_t i = 0; i < half; ++i) {
            peer = peer.resume(); // there and back: 2 resumes
            ++own_resumes;
        }
    }
    stop = true;
    peer = peer.resume(); // lets the lambda return; `peer` becomes empty
    if (peer || peer_resumes != own_resumes + 1) state.SkipWithError("continuation ping-pong lost a resume");
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BoostContextResume)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
