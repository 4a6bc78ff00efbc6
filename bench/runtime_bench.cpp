// Fiberscope runtime micro-benchmarks (Google Benchmark).
//
//   BM_YieldPingPong       two fibers on one thread yield to each other;
//                          one iteration = one yield = one context switch.
//   BM_SpawnAwait/threads  spawn an empty fiber and await it; one iteration
//                          = one spawn + await (1 and 2 worker threads).
//   BM_Skynet              skynet: 1M leaf fibers, branching 10, on the
//                          default number of threads (the CPU count).
//   BM_SkynetOneThread     the same skynet on one thread (threads = 1).
//   BM_Scaling{Skynet,Yield,Handoff}/threads:1|2|4
//                          the scaling table: skynet, 64 fibers yielding,
//                          16 pairs handing a token through Queues.
//   BM_ReadClock           one read of the trace clock (rdtsc on x86_64).
//   BM_TraceEvent          one recorded event (clock read + encode) while a
//                          Recorder is active.
//   BM_SkynetTraced        BM_Skynet with a Recorder active; reports the
//                          trace's events and bytes per event.
//
// The loops leave EventLoopOptions::scheduler unset, so FIBERSCOPE_SCHEDULER=
// seed|scaling picks the policy (and FIBERSCOPE_BACKEND the backend) for a
// whole run; bench/compare.sh runs spawn+await and skynet under each policy.
//
// Each benchmark creates its EventLoop once per run (outside the timed
// region) and reports wall-clock time: with M:N scheduling the work may run
// on worker threads, so the benchmark thread's CPU time would undercount.
#include <benchmark/benchmark.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>
#include <fiberscope/trace_reader.hpp>

namespace {

using fiberscope::EventLoop;
using fiberscope::Future;

// Creates a loop, or marks the benchmark as skipped (e.g. io_uring refused).
std::unique_ptr<EventLoop> makeLoop(benchmark::State& state, unsigned threads) {
    auto created = EventLoop::create({.threads = threads});
    if (!created) {
        state.SkipWithError((std::string("EventLoop::create failed: ") + created.error().message()).c_str());
        return nullptr;
    }
    return std::move(*created);
}

void BM_YieldPingPong(benchmark::State& state) {
    auto loop = makeLoop(state, 1);
    if (!loop) return;
    EventLoop* l = loop.get();
    // Each of the two fibers yields `half` times: 2 * half switches in all,
    // and the batch is counted as that many iterations, so the reported time
    // per iteration is the time per yield. (max_iterations is the count this
    // run was asked for; state.iterations() is still 0 before the loop.)
    const std::int64_t half = (state.max_iterations + 1) / 2;
    while (state.KeepRunningBatch(2 * half)) {
        auto player = [l, half] {
            for (std::int64_t i = 0; i < half; ++i) l->yield();
        };
        Future<void> ping = l->async(player);
        Future<void> pong = l->async(player);
        ping.await();
        pong.await();
    }
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_YieldPingPong)->UseRealTime();

void BM_SpawnAwait(benchmark::State& state) {
    auto loop = makeLoop(state, static_cast<unsigned>(state.range(0)));
    if (!loop) return;
    for (auto _ : state) loop->async([] {}).await();
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_SpawnAwait)->ArgName("threads")->Arg(1)->Arg(2)->UseRealTime();

constexpr std::int64_t kSkynetLeaves = 1'000'000;
constexpr std::int64_t kSkynetBranching = 10;
constexpr std::int64_t kSkynetExpected = kSkynetLeaves * (kSkynetLeaves - 1) / 2; // 499999500000
// Every node is a fiber: 1M leaves + 111111 inner nodes.
constexpr std::int64_t kSkynetFibers = 1'111'111;

// Node `num` covering `size` leaves: a leaf returns its number, an inner
// node starts one fiber per child and returns the sum of their results.
std::int64_t skynet(EventLoop& loop, std::int64_t num, std::int64_t size) {
    if (size == 1) return num;
    const std::int64_t child_size = size / kSkynetBranching;
    std::array<Future<std::int64_t>, kSkynetBranching> children;
    for (std::int64_t i = 0; i < kSkynetBranching; ++i) {
        const std::int64_t child_num = num + i * child_size;
        children[static_cast<std::size_t>(i)] =
            loop.async([&loop, child_num, child_size] { return skynet(loop, child_num, child_size); });
    }
    std::int64_t sum = 0;
    for (auto& child : children) sum += child.await();
    return sum;
}

void runSkynet(benchmark::State& state, unsigned threads) {
    auto loop = makeLoop(state, threads);
    if (!loop) return;
    EventLoop* l = loop.get();
    for (auto _ : state) {
        const std::int64_t sum = l->async([l] { return skynet(*l, 0, kSkynetLeaves); }).await();
        if (sum != kSkynetExpected) {
            state.SkipWithError(("skynet sum is " + std::to_string(sum) + ", expected " +
                                 std::to_string(kSkynetExpected)).c_str());
            break;
        }
    }
    state.counters["loop_threads"] = static_cast<double>(l->maxThreads());
    state.counters["loop_threads_started"] = static_cast<double>(l->activeThreads());
    state.SetItemsProcessed(state.iterations() * kSkynetFibers);
}

// The benchmark the targets refer to: default options, one worker per CPU.
void BM_Skynet(benchmark::State& state) { runSkynet(state, 0); }
BENCHMARK(BM_Skynet)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same on a single thread: the like-for-like peer of Boost.Fiber's
// round_robin scheduler, which runs all fibers on one thread.
void BM_SkynetOneThread(benchmark::State& state) { runSkynet(state, 1); }
BENCHMARK(BM_SkynetOneThread)->Unit(benchmark::kMillisecond)->UseRealTime();

// --- the scaling table: three workloads at 1, 2 and 4 threads --------------
// Each runs under the policy FIBERSCOPE_SCHEDULER names (compare.sh runs
// the table under seed and under scaling). 4 threads oversubscribe a
// 2-CPU machine: compare.sh says so beside the numbers.

// skynet: spawn-and-await trees, the spawn-heavy case.
void BM_ScalingSkynet(benchmark::State& state) { runSkynet(state, static_cast<unsigned>(state.range(0))); }
BENCHMARK(BM_ScalingSkynet)->ArgName("threads")->Arg(1)->Arg(2)->Arg(4)->Unit(benchmark::kMillisecond)->UseRealTime();

// Yield-heavy: 64 fibers yield 2000 times each; every thread's queue stays
// full, so the threads balance by stealing. One iteration = one yield.
void BM_ScalingYield(benchmark::State& state) {
    auto loop = makeLoop(state, static_cast<unsigned>(state.range(0)));
    if (!loop) return;
    EventLoop* l = loop.get();
    constexpr int kFibers = 64;
    constexpr std::int64_t kYields = 2000;
    while (state.KeepRunningBatch(kFibers * kYields)) {
        std::vector<Future<void>> fibers;
        fibers.reserve(kFibers);
        for (int f = 0; f < kFibers; ++f)
            fibers.push_back(l->async([l] {
                for (std::int64_t y = 0; y < kYields; ++y) l->yield();
            }));
        for (auto& f : fibers) f.await();
    }
    state.counters["loop_threads_started"] = static_cast<double>(l->activeThreads());
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ScalingYield)->ArgName("threads")->Arg(1)->Arg(2)->Arg(4)->UseRealTime();

// Hand-off-heavy: 16 pairs pass a token back and forth through two
// one-slot Queues, 2000 round trips a pair; every get and put wakes the
// partner, so every step makes a fiber ready (schedule(), and on the seed
// policy a hand-off to an idle thread with its wake-up). One iteration =
// one round trip.
void BM_ScalingHandoff(benchmark::State& state) {
    auto loop = makeLoop(state, static_cast<unsigned>(state.range(0)));
    if (!loop) return;
    EventLoop* l = loop.get();
    constexpr int kPairs = 16;
    constexpr int kTrips = 2000;
    while (state.KeepRunningBatch(kPairs * kTrips)) {
        std::vector<std::unique_ptr<fiberscope::Queue<int>>> there, back;
        std::vector<Future<void>> fibers;
        for (int p = 0; p < kPairs; ++p) {
            there.push_back(std::make_unique<fiberscope::Queue<int>>(1));
            back.push_back(std::make_unique<fiberscope::Queue<int>>(1));
            fiberscope::Queue<int>* to = there.back().get();
            fiberscope::Queue<int>* from = back.back().get();
            fibers.push_back(l->async([to, from] {
                for (int i = 0; i < kTrips; ++i) {
                    (void)to->put(i);
                    (void)from->get();
                }
            }));
            fibers.push_back(l->async([to, from] {
                for (int i = 0; i < kTrips; ++i) {
                    auto v = to->get();
                    (void)from->put(v ? *v : 0);
                }
            }));
        }
        for (auto& f : fibers) f.await();
    }
    state.counters["loop_threads_started"] = static_cast<double>(l->activeThreads());
    state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ScalingHandoff)->ArgName("threads")->Arg(1)->Arg(2)->Arg(4)->UseRealTime();

std::string benchTracePath(const char* name) {
    return "/tmp/fiberscope-bench-" + std::to_string(getpid()) + "-" + name + ".fstrace";
}

// Calibrates the trace clock (a Recorder does) so BM_ReadClock reads the
// same clock the events use.
void BM_ReadClock(benchmark::State& state) {
    const std::string path = benchTracePath("clock");
    fiberscope::trace::Recorder recorder(path);
    for (auto _ : state) benchmark::DoNotOptimize(fiberscope::trace::now());
    recorder.stop();
    unlink(path.c_str());
}
BENCHMARK(BM_ReadClock);

void BM_TraceEvent(benchmark::State& state) {
    const std::string path = benchTracePath("event");
    fiberscope::trace::Recorder recorder(path);
    if (!recorder.ok()) {
        state.SkipWithError(recorder.error().c_str());
        return;
    }
    std::uint64_t fiber = 2;
    for (auto _ : state) {
        // A typical record: a switch between two nearby fibers.
        fiberscope::trace::emit::switchTo(fiberscope::trace::now(), fiber, fiber + 1,
                                          fiberscope::trace::SwitchReason::Yield);
        ++fiber;
    }
    recorder.stop();
    unlink(path.c_str());
}
BENCHMARK(BM_TraceEvent);

void runSkynetTraced(benchmark::State& state, unsigned threads) {
    auto loop = makeLoop(state, threads);
    if (!loop) return;
    EventLoop* l = loop.get();
    const std::string path = benchTracePath("skynet");
    for (auto _ : state) {
        state.PauseTiming();
        auto recorder = std::make_unique<fiberscope::trace::Recorder>(path);
        state.ResumeTiming();
        const std::int64_t sum = l->async([l] { return skynet(*l, 0, kSkynetLeaves); }).await();
        state.PauseTiming();
        recorder.reset();
        state.ResumeTiming();
        if (sum != kSkynetExpected) {
            state.SkipWithError("skynet sum is wrong");
            break;
        }
    }
    fiberscope::trace::Trace trace;
    fiberscope::trace::ReadError error;
    if (fiberscope::trace::readTrace(path, trace, error)) {
        state.counters["events"] = static_cast<double>(trace.events.size());
        state.counters["bytes_per_event"] =
            static_cast<double>(trace.file_bytes) / static_cast<double>(trace.events.size());
        state.counters["lost_events"] = static_cast<double>(trace.lost_events);
    } else {
        state.SkipWithError(error.text().c_str());
    }
    unlink(path.c_str());
    state.SetItemsProcessed(state.iterations() * kSkynetFibers);
}
void BM_SkynetTraced(benchmark::State& state) { runSkynetTraced(state, 0); }
BENCHMARK(BM_SkynetTraced)->Unit(benchmark::kMillisecond)->UseRealTime();

// One thread: free of cross-core noise, so the tracing overhead shows plainly.
void BM_SkynetTracedOneThread(benchmark::State& state) { runSkynetTraced(state, 1); }
BENCHMARK(BM_SkynetTracedOneThread)->Unit(benchmark::kMillisecond)->UseRealTime();

} // namespace

BENCHMARK_MAIN();
