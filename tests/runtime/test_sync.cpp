#include "test_support.hpp"

#include <atomic>

using namespace fiberscope;
using namespace std::chrono_literals;

TEST_CASE("Mutex excludes, and try_lock fails while held", "[mutex]") {
    auto loop = test::makeLoop(2);
    Mutex mutex;
    REQUIRE(mutex.lock()); // uncontended: cannot be canceled
    auto other = loop->async([&] { return mutex.try_lock(); });
    REQUIRE_FALSE(other.await());
    auto waiter = loop->async([&] {
        std::lock_guard lock(mutex);
        return 1;
    });
    (void)loop->sleep(5ms);
    REQUIRE(waiter.valid());
    mutex.unlock(); // hands the mutex to the waiter
    REQUIRE(waiter.await() == 1);
    REQUIRE(mutex.try_lock());
    mutex.unlock();
}

TEST_CASE("Condition broadcast wakes every waiter", "[condition]") {
    auto loop = test::makeLoop(4);
    Mutex mutex;
    Condition cond;
    bool open = false;
    std::atomic<int> woke{0};
    std::vector<Future<void>> waiters;
    for (int i = 0; i < 50; ++i)
        waiters.push_back(loop->async([&] {
            std::unique_lock lock(mutex);
            while (!open) (void)cond.wait(lock);
            ++woke;
        }));
    (void)loop->sleep(5ms);
    {
        std::lock_guard lock(mutex);
        open = true;
    }
    cond.broadcast();
    for (auto& w : waiters) w.await();
    REQUIRE(woke == 50);
}

TEST_CASE("Queue passes every item from producers to consumers, then closes", "[queue]") {
    auto loop = test::makeLoop(4);
    for (int round = 0; round < test::scaled(10); ++round) {
        Queue<int> queue(8);
        std::atomic<long> sum{0};
        std::atomic<int> count{0};
        std::vector<Future<void>> consumers;
        for (int c = 0; c < 3; ++c)
            consumers.push_back(loop->async([&] {
                while (auto item = queue.get()) {
                    sum += *item;
                    ++count;
                }
            }));
        std::vector<Future<void>> producers;
        for (int p = 0; p < 3; ++p)
            producers.push_back(loop->async([&] {
                for (int i = 1; i <= 1000; ++i) (void)queue.put(i);
            }));
        for (auto& p : producers) p.await();
        queue.close();
        for (auto& c : consumers) c.await();
        REQUIRE(count == 3000);
        REQUIRE(sum == 3L * 1000 * 1001 / 2);
        REQUIRE(queue.put(1).error() == Errc::Closed);
        REQUIRE(queue.get().error() == Errc::Closed);
    }
}

TEST_CASE("Group waits for all members and reports the first error", "[group]") {
    auto loop = test::makeLoop(4);
    Group group(*loop);
    std::atomic<int> ran{0};
    for (int i = 0; i < 20; ++i)
        group.async([&, i]() -> Status {
            (void)loop->sleep(std::chrono::milliseconds(i % 3));
            ++ran;
            if (i == 7) return Errc::InvalidArgument;
            return {};
        });
    Status result = group.wait();
    REQUIRE(ran == 20);
    REQUIRE_FALSE(result);
    REQUIRE(result.error() == Errc::InvalidArgument);
    REQUIRE(group.wait()); // nothing left, no error
}

TEST_CASE("Group cancel stops every member, including nested ones", "[group][cancel]") {
    auto loop = test::makeLoop(4);
    std::atomic<int> canceled{0};
    Group group(*loop);
    for (int i = 0; i < 10; ++i)
        group.async([&] {
            if (!loop->sleep(60s)) ++canceled;
            group.async([&] {
                if (!loop->sleep(60s)) ++canceled;
            });
        });
    (void)loop->sleep(5ms);
    auto start = std::chrono::steady_clock::now();
    (void)group.cancel();
    REQUIRE(canceled == 20);
    REQUIRE(test::secondsSince(start) < 5.0);
}

TEST_CASE("Group cancel reaches members that a concurrent wait is awaiting", "[group][cancel]") {
    auto loop = test::makeLoop(2);
    Group group(*loop);
    std::atomic<int> canceled{0};
    for (int i = 0; i < 4; ++i)
        group.async([&] {
            if (!loop->sleep(30s)) ++canceled;
        });
    auto waiter = loop->async([&] { return group.wait(); });
    (void)loop->sleep(5ms); // the waiter is now awaiting the first member
    auto start = std::chrono::steady_clock::now();
    (void)group.cancel();
    REQUIRE(waiter.await());
    REQUIRE(canceled == 4);
    REQUIRE(test::secondsSince(start) < 5.0);
}
