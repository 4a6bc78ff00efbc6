// Fault injection for the tests (fault_injection.hpp).
#include "support/fault_injection.hpp"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <thread>

namespace fiberscope::detail {

std::atomic<unsigned> g_test_jitter{0};

void readTestJitter() noexcept {
    const char* text = std::getenv("FIBERSCOPE_TEST_JITTER");
    const long p = text ? std::atol(text) : 0;
    // relaxed: read by jitter() on threads the loop starts after this.
    g_test_jitter.store(p > 0 ? static_cast<unsigned>(p > 1000 ? 1000 : p) : 0, std::memory_order_relaxed);
}

namespace {
// xorshift, per thread: no shared state to contend on (or to order).
std::uint64_t nextRandom() noexcept {
    thread_local std::uint64_t state = 0x9E3779B97F4A7C15ull ^ reinterpret_cast<std::uintptr_t>(&state);
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}
} // namespace

bool jitterSkipsGrowthSlow() noexcept { return nextRandom() % 4 != 0; }

void jitterSlow(unsigned per_mille) noexcept {
    const std::uint64_t state = nextRandom();
    if (state % 1000 >= per_mille) return;
    if ((state >> 20) % 8 == 0) std::this_thread::sleep_for(std::chrono::microseconds((state >> 24) % 50));
    else std::this_thread::yield();
}

} // namespace fiberscope::detail
