// The context switch keeps what the ABI says a call keeps. The switch saves
// only sp, the frame pointer and the resume address, and declares every other
// register clobbered, so that the compiler saves the callee-saved ones (x86-64:
// rbx, r12-r15; AArch64: x19-x28 and d8-d15) around it. A register missing
// from a clobber list would be one the other fibers overwrite behind the
// compiler's back. Here fibers hold ten integers and eight doubles live across
// every yield (a call, so the compiler keeps them in callee-saved registers)
// while other fibers run the same code with other values; each result must
// equal the same computation with no switch at all; and a fiber's frames are
// 16-byte aligned. Written for the aarch64 run under qemu-user
// (scripts/test_aarch64.sh), where that switch is checked: dropping x19-x21 or
// v8 from its clobber list, or starting a fiber 8 bytes off, fails a case here.
#include "test_support.hpp"

#include <cstdint>
#include <vector>

using namespace fiberscope;

namespace {

// An opaque call that does nothing: the same register pressure, no switch.
__attribute__((noinline)) void noSwitch() { asm volatile("" ::: "memory"); }

template <typename Pause>
long churn(Pause pause, long seed, int rounds) {
    // Unsigned: the mixing wraps (signed overflow would be undefined).
    const unsigned long s = static_cast<unsigned long>(seed);
    unsigned long a0 = s * 3 + 1, a1 = s * 5 + 2, a2 = s * 7 + 3, a3 = s * 11 + 4, a4 = s * 13 + 5;
    unsigned long a5 = s * 17 + 6, a6 = s * 19 + 7, a7 = s * 23 + 8, a8 = s * 29 + 9, a9 = s * 31 + 10;
    double d0 = seed * 0.5 + 0.25, d1 = seed * 0.25 + 0.5, d2 = seed * 0.125 + 1, d3 = seed * 1.5 + 2;
    double d4 = seed * 2.5 + 3, d5 = seed * 3.5 + 4, d6 = seed * 4.5 + 5, d7 = seed * 5.5 + 6;
    for (int r = 0; r < rounds; ++r) {
        pause();
        a0 = a0 * 31 + a9;
        a1 ^= a0 >> 3;
        a2 += a1 * 7;
        a3 = a3 * 5 - a2;
        a4 ^= a3 << 2;
        a5 += a4 >> 1;
        a6 = a6 * 3 + a5;
        a7 ^= a6 * 11;
        a8 += a7 >> 4;
        a9 = a9 * 13 - a8;
        d0 = d0 * 0.999 + d7;
        d1 = d1 * 0.998 + d0 * 0.001;
        d2 = d2 * 0.997 + d1 * 0.002;
        d3 = d3 * 0.996 + d2 * 0.003;
        d4 = d4 * 0.995 + d3 * 0.004;
        d5 = d5 * 0.994 + d4 * 0.005;
        d6 = d6 * 0.993 + d5 * 0.006;
        d7 = d7 * 0.992 + d6 * 0.007;
    }
    const double d = d0 + d1 + d2 + d3 + d4 + d5 + d6 + d7;
    return static_cast<long>(a0 ^ a1 ^ a2 ^ a3 ^ a4 ^ a5 ^ a6 ^ a7 ^ a8 ^ a9 ^ static_cast<unsigned long>(static_cast<long>(d * 1e6)));
}

} // namespace

TEST_CASE("values live across a switch in callee-saved registers survive it, on one thread and across threads", "[switch]") {
    constexpr int kFibers = 6;
    const int rounds = static_cast<int>(test::scaled(2000));
    for (unsigned threads : {1u, 2u}) {
        test::Watchdog watchdog("fibers yielding with registers live", std::chrono::seconds(60));
        auto loop = test::makeLoop(threads);
        EventLoop& l = *loop;
        std::vector<Future<long>> fibers;
        for (long seed = 1; seed <= kFibers; ++seed)
            fibers.push_back(l.async([&l, seed, rounds] { return churn([&l] { l.yield(); }, seed, rounds); }));
        for (long seed = 1; seed <= kFibers; ++seed) {
            INFO(threads << " thread(s), fiber with seed " << seed);
            REQUIRE(fibers[static_cast<std::size_t>(seed - 1)].await() == churn(noSwitch, seed, rounds));
        }
    }
}

namespace {
// The frame address of a function the entry trampoline's call chain reaches:
// 16-byte aligned when the stack pointer met the ABI at the call (AArch64
// requires sp % 16 == 0 always; x86-64 rsp % 16 == 8 at entry, 0 after the
// frame pointer's push).
__attribute__((noinline)) std::uintptr_t frameAddress() {
    return reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
}
} // namespace

TEST_CASE("a fiber's frames are 16-byte aligned, first run and after a switch", "[switch]") {
    auto loop = test::makeLoop(1);
    EventLoop& l = *loop;
    auto f = l.async([&l] {
        const std::uintptr_t first = frameAddress();
        l.yield();
        return first % 16 == 0 && frameAddress() % 16 == 0;
    });
    REQUIRE(f.await());
}
