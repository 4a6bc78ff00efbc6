#include "test_support.hpp"

#include <atomic>
#include <deque>

using namespace fiberscope;

static long skynet(EventLoop& loop, long num, long size, long div) {
    if (size == 1) return num;
    std::vector<Future<long>> children;
    children.reserve(div);
    for (long i = 0; i < div; ++i) {
        long sub = num + i * (size / div);
        children.push_back(loop.async([&loop, sub, size, div] { return skynet(loop, sub, size / div, div); }));
    }
    long sum = 0;
    for (auto& c : children) sum += c.await();
    return sum;
}

TEST_CASE("skynet: 1M fibers on all threads return the right sum", "[stress]") {
    // 1M leaves; scaled down (to a power of ten, at least 1000) under the
    // sanitizers. ThreadSanitizer also caps live fibers at about 8000.
    long size = 1'000'000;
    while (size > 1000 && size > test::scaled(1'000'000)) size /= 10;
    auto loop = test::makeLoop(0);
    auto start = std::chrono::steady_clock::now();
    auto total = loop->async([&] { return skynet(*loop, 0, size, 10); });
    REQUIRE(total.await() == size * (size - 1) / 2);
    INFO("skynet " << size << " took " << test::secondsSince(start) << " s");
}

TEST_CASE("10k fibers incrementing under a Mutex give the exact count", "[stress][mutex]") {
    auto loop = test::makeLoop(4);
    Mutex mutex;
    long counter = 0; // deliberately not atomic: the mutex protects it
    const int fibers = static_cast<int>(std::max(1000L, test::scaled(10'000))), rounds = 10;
    for (int iteration = 0; iteration < test::scaled(5); ++iteration) {
        counter = 0;
        std::vector<Future<void>> all;
        all.reserve(fibers);
        for (int i = 0; i < fibers; ++i)
            all.push_back(loop->async([&] {
                for (int r = 0; r < rounds; ++r) {
                    std::lock_guard lock(mutex);
                    long seen = counter;
                    if (r % 3 == 0) loop->yield(); // hold the lock across a switch
                    counter = seen + 1;
                }
            }));
        for (auto& f : all) f.await();
        REQUIRE(counter == long(fibers) * rounds);
    }
}

TEST_CASE("producer/consumer on Condition loses no wakeup", "[stress][condition]") {
    auto loop = test::makeLoop(4);
    for (int iteration = 0; iteration < test::scaled(20); ++iteration) {
        Mutex mutex;
        Condition nonempty;
        std::deque<int> items; // FIFO: the stop marks come after all items
        std::atomic<int> wait_failures{0};
        const int producers = 4, consumers = 4, per_producer = 2000;
        std::atomic<long> consumed_sum{0};
        std::atomic<int> consumed{0};
        std::vector<Future<void>> all;
        for (int c = 0; c < consumers; ++c)
            all.push_back(loop->async([&] {
                for (;;) {
                    std::unique_lock lock(mutex);
                    while (items.empty())
                        if (!nonempty.wait(mutex)) ++wait_failures;
                    int item = items.front();
                    items.pop_front();
                    lock.unlock();
                    if (item < 0) return;
                    consumed_sum += item;
                    ++consumed;
                }
            }));
        std::vector<Future<void>> producing;
        for (int p = 0; p < producers; ++p)
            producing.push_back(loop->async([&] {
                for (int i = 1; i <= per_producer; ++i) {
                    {
                        std::lock_guard lock(mutex);
                        items.push_back(i);
                    }
                    nonempty.signal();
                    if (i % 64 == 0) loop->yield();
                }
            }));
        for (auto& f : producing) f.await();
        for (int c = 0; c < consumers; ++c) {
            {
                std::lock_guard lock(mutex);
                items.push_back(-1);
            }
            nonempty.signal();
        }
        for (auto& f : all) f.await();
        REQUIRE(wait_failures == 0);
        REQUIRE(consumed == producers * per_producer);
        REQUIRE(consumed_sum == long(producers) * per_producer * (per_producer + 1) / 2);
    }
}
