// No input makes a tool superlinear: each hostile pattern, repeated 10x more,
// must take well under 10^2 = 100x the time (a quadratic step would show as
// ~100x; linear work as ~10x). The best of three runs is compared, so that a
// loaded machine's pauses do not count.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include "consume_trace.hpp"
#include "hostile_traces.hpp"

using namespace fiberscope;

namespace {

double secondsToLoad(const std::vector<std::uint8_t>& bytes) {
    double best = 1e9;
    for (int run = 0; run < 3; ++run) {
        const auto begin = std::chrono::steady_clock::now();
        trace::Trace trace;
        trace::ReadError error;
        if (trace::parseTrace(bytes, trace, error)) (void)testing::consumeTrace(trace);
        best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
    }
    return best;
}

std::size_t testScale() {
    const char* scale = std::getenv("FIBERSCOPE_TEST_SCALE");
    const long value = scale ? std::atol(scale) : 1;
    return value > 1 ? static_cast<std::size_t>(value) : 1;
}

} // namespace

TEST_CASE("every tool loads each hostile pattern in time linear in its size", "[hostile][scaling]") {
    // Large enough that a quadratic step dominates every fixed cost: 50k
    // repetitions squared is 2.5e9 steps, seconds; linear work is ~0.1 s.
    const std::size_t n = 5000 / testScale();
    for (const auto& pattern : testing::hostilePatterns()) {
        const auto small = pattern.make(n), large = pattern.make(10 * n);
        // A shared machine can stall one measurement for a few hundred ms:
        // up to three tries, each of both sizes. Quadratic work fails all three.
        double t1 = 0, t10 = 0;
        for (int attempt = 0; attempt < 3; ++attempt) {
            t1 = secondsToLoad(small);
            t10 = secondsToLoad(large);
            // 1 ms of slack for patterns too cheap to time at the small size.
            if (t10 < 30 * std::max(t1, 1e-3)) break;
        }
        INFO(pattern.name << ": " << n << " -> " << t1 * 1e3 << " ms, " << 10 * n << " -> " << t10 * 1e3 << " ms ("
                          << t10 / std::max(t1, 1e-6) << "x)");
        CHECK(t10 < 30 * std::max(t1, 1e-3));
    }
}
