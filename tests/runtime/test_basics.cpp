#include "test_support.hpp"

#include <atomic>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>

using namespace fiberscope;

TEST_CASE("async and await return the fiber's result", "[basics]") {
    auto loop = test::makeLoop(2);
    auto f = loop->async([] { return 40 + 2; });
    REQUIRE(f.await() == 42);
    REQUIRE_FALSE(f.valid());
}

TEST_CASE("void, move-only and over-aligned results", "[basics]") {
    auto loop = test::makeLoop(2);
    int side = 0;
    auto v = loop->async([&] { side = 7; });
    v.await();
    REQUIRE(side == 7);

    auto p = loop->async([] { return std::make_unique<int>(5); });
    REQUIRE(*p.await() == 5);

    struct alignas(128) Wide {
        unsigned char bytes[256];
    };
    auto w = loop->async([] {
        Wide x{};
        x.bytes[255] = 9;
        return x;
    });
    Wide got = w.await();
    REQUIRE(got.bytes[255] == 9);
    REQUIRE(reinterpret_cast<std::uintptr_t>(&got) % 128 == 0);
}

TEST_CASE("a fiber whose result is 4 KiB, and a closure of 64 KiB", "[basics]") {
    auto loop = test::makeLoop(2);
    struct Big {
        std::array<unsigned char, 4096> bytes;
    };
    auto f = loop->async([] {
        Big b;
        for (std::size_t i = 0; i < b.bytes.size(); ++i) b.bytes[i] = static_cast<unsigned char>(i * 7);
        return b;
    });
    Big b = f.await();
    for (std::size_t i = 0; i < b.bytes.size(); ++i) REQUIRE(b.bytes[i] == static_cast<unsigned char>(i * 7));

    std::array<unsigned char, 65536> huge{};
    huge[65535] = 3;
    auto g = loop->async([huge] { return int(huge[65535]); });
    REQUIRE(g.await() == 3);
}

TEST_CASE("exceptions thrown in a fiber are rethrown by await", "[basics]") {
    auto loop = test::makeLoop(2);
    auto f = loop->async([]() -> int { throw std::runtime_error("boom"); });
    REQUIRE_THROWS_WITH(f.await(), "boom");
}

TEST_CASE("fibers spawn fibers, across threads", "[basics]") {
    auto loop = test::makeLoop(4);
    auto outer = loop->async([&] {
        std::vector<Future<int>> inner;
        for (int i = 0; i < 100; ++i) inner.push_back(loop->async([i] { return i; }));
        int sum = 0;
        for (auto& f : inner) sum += f.await();
        return sum;
    });
    REQUIRE(outer.await() == 4950);
    REQUIRE(loop->activeThreads() >= 1);
    REQUIRE(loop->activeThreads() <= 4);
}

TEST_CASE("a dropped Future cancels and joins its fiber", "[basics]") {
    auto loop = test::makeLoop(2);
    std::atomic<int> state{0};
    {
        auto f = loop->async([&] {
            auto s = loop->sleep(std::chrono::seconds(30));
            state = s ? 1 : (s.error() == Errc::Canceled ? 2 : 3);
        });
    }
    REQUIRE(state == 2);
}

TEST_CASE("yield lets the other fibers of the thread run", "[basics]") {
    auto loop = test::makeLoop(1);
    std::vector<int> order;
    auto a = loop->async([&] {
        for (int i = 0; i < 3; ++i) {
            order.push_back(0);
            loop->yield();
        }
    });
    auto b = loop->async([&] {
        for (int i = 0; i < 3; ++i) {
            order.push_back(1);
            loop->yield();
        }
    });
    a.await();
    b.await();
    REQUIRE(order.size() == 6);
    // Interleaved, not one after the other.
    int switches = 0;
    for (std::size_t i = 1; i < order.size(); ++i) switches += order[i] != order[i - 1];
    REQUIRE(switches >= 4);
}

TEST_CASE("create refuses bad options and a second loop on one thread", "[basics][errors]") {
    REQUIRE(EventLoop::create({.ring_entries = 0}).error() == Errc::InvalidArgument);
    REQUIRE(EventLoop::create({.ring_entries = 64, .completion_entries = 32}).error() == Errc::InvalidArgument);
    REQUIRE(EventLoop::create({.completion_entries = 1u << 17}).error() == Errc::InvalidArgument);
    auto loop = test::makeLoop(1);
    REQUIRE(EventLoop::create({}).error() == Errc::InvalidArgument);
    REQUIRE(EventLoop::current() == loop.get());
}

TEST_CASE("loops can be created and destroyed many times", "[basics]") {
    for (int i = 0; i < test::scaled(50); ++i) {
        auto loop = test::makeLoop(2);
        auto f = loop->async([] { return 1; });
        REQUIRE(f.await() == 1);
    }
    REQUIRE(EventLoop::current() == nullptr);
}
