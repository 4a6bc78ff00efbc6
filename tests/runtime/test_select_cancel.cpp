#include "test_support.hpp"

#include <atomic>

using namespace fiberscope;
using namespace std::chrono_literals;

TEST_CASE("select returns the first future to finish", "[select]") {
    auto loop = test::makeLoop(2);
    for (int i = 0; i < test::scaled(50); ++i) {
        auto slow = loop->async([&] { return loop->sleep(200ms) ? 1 : -1; });
        auto fast = loop->async([&] { return loop->sleep(1ms) ? 2 : -2; });
        auto first = select(slow, fast);
        REQUIRE(first);
        REQUIRE(*first == 1);
        REQUIRE(fast.await() == 2);
        REQUIRE(slow.cancel() == -1); // the loser is canceled
    }
}

TEST_CASE("select sees an already finished future at once", "[select]") {
    auto loop = test::makeLoop(2);
    auto done = loop->async([] { return 5; });
    REQUIRE(done.await() == 5);
    auto pending = loop->async([&] { return loop->sleep(10s) ? 0 : 1; });
    auto ready = loop->async([] { return 3; });
    while (selectUncancelable(pending, ready) != 1) {
    }
    REQUIRE(ready.await() == 3);
    REQUIRE(pending.cancel() == 1);
}

TEST_CASE("select races many futures finishing together without losing or doubling a wake-up", "[select][stress]") {
    auto loop = test::makeLoop(4);
    for (int round = 0; round < test::scaled(2000); ++round) {
        std::vector<Future<int>> futures;
        for (int i = 0; i < 4; ++i) futures.push_back(loop->async([i] { return i; }));
        std::size_t first = selectUncancelable(std::span<Future<int>>(futures));
        REQUIRE(first < futures.size());
        int sum = 0;
        for (auto& f : futures) sum += f.await();
        REQUIRE(sum == 6);
    }
}

TEST_CASE("cancel of a long sleep returns Canceled promptly", "[cancel]") {
    auto loop = test::makeLoop(4);
    for (int i = 0; i < test::scaled(100); ++i) {
        auto sleeper = loop->async([&] { return loop->sleep(60s); });
        if (i % 2) (void)loop->sleep(1ms); // sometimes let it reach the ring first
        auto start = std::chrono::steady_clock::now();
        Status result = sleeper.cancel();
        REQUIRE_FALSE(result);
        REQUIRE(result.error() == Errc::Canceled);
        REQUIRE(test::secondsSince(start) < 5.0);
    }
}

TEST_CASE("a canceled fiber sees cancelRequested and fails its next operation", "[cancel]") {
    auto loop = test::makeLoop(2);
    std::atomic<bool> go{false};
    auto f = loop->async([&] {
        while (!go) loop->yield();
        bool requested = loop->cancelRequested();
        Status s = loop->sleep(1ms);
        return requested && !s && s.error() == Errc::Canceled;
    });
    detail::requestCancel(f.fiber());
    go = true;
    REQUIRE(f.await());
}

TEST_CASE("detached fibers run, and are canceled and joined at deinit", "[detached]") {
    std::atomic<int> finished{0}, canceled{0};
    {
        auto loop = test::makeLoop(2);
        for (int i = 0; i < 10; ++i)
            loop->asyncDetached([&] {
                if (loop->sleep(1ms)) ++finished;
            });
        for (int i = 0; i < 10; ++i)
            loop->asyncDetached([&] {
                if (!loop->sleep(60s)) ++canceled;
            });
        (void)loop->sleep(50ms);
    }
    REQUIRE(finished == 10);
    REQUIRE(canceled == 10);
}

TEST_CASE("a fiber polling with yield does not starve its thread's I/O", "[yield][io]") {
    // One thread: the poller never lets it go idle, yet the sleeper's timer
    // must be submitted and its completion reaped.
    auto loop = test::makeLoop(1);
    std::atomic<bool> slept{false};
    auto sleeper = loop->async([&] {
        (void)loop->sleep(std::chrono::milliseconds(5));
        slept = true;
    });
    auto start = std::chrono::steady_clock::now();
    auto poller = loop->async([&] {
        while (!slept && test::secondsSince(start) < 20) loop->yield();
        return slept.load();
    });
    REQUIRE(poller.await());
    sleeper.await();
    REQUIRE(test::secondsSince(start) < 5.0);
}
