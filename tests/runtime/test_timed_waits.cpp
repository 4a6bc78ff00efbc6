// Timed sync waits: Condition::wait and Queue::get/put with a Timeout return
// TimedOut once it passes, and a signal, a cancel and the timeout that race
// have exactly one outcome; plus the plain-thread rules for Mutex and
// Condition (README "Threads").
#include "test_support.hpp"

#include <atomic>
#include <thread>
#include <vector>

using namespace fiberscope;
using namespace std::chrono_literals;

namespace {

// Generous upper bounds: the machine is shared and sanitizers are slow.
double slack() { return std::getenv("FIBERSCOPE_TEST_SCALE") ? 3.0 : 1.0; }

} // namespace

TEST_CASE("Condition::wait with a Timeout returns TimedOut after it, holding the mutex", "[timed_waits]") {
    test::Watchdog dog("condition timeout", 30s);
    for (unsigned threads : {1u, 2u}) {
        auto loop = test::makeLoop(threads);
        Mutex mutex;
        Condition condition;
        for (auto limit : {0ms, 1ms, 20ms}) {
            auto result = loop->async([&] {
                mutex.lockUncancelable(); // no Catch assertion on a fiber: Catch is not thread-safe
                const auto start = std::chrono::steady_clock::now();
                Status status = condition.wait(mutex, limit);
                const double took = test::secondsSince(start);
                // Still ours: another fiber's try_lock fails.
                bool held = !loop->async([&] {
                    if (!mutex.try_lock()) return false;
                    mutex.unlock();
                    return true;
                }).await();
                mutex.unlock();
                return std::tuple{status, took, held};
            }).await();
            auto [status, took, held] = result;
            INFO("threads " << threads << ", timeout " << limit.count() << " ms");
            REQUIRE(!status);
            CHECK(status.error() == Errc::TimedOut);
            CHECK(took >= std::chrono::duration<double>(limit).count() * 0.99);
            CHECK(took < 1.0 * slack());
            CHECK(held);
        }
    }
}

TEST_CASE("a signal before the Timeout wins, and the withdrawn deadline never fires later", "[timed_waits]") {
    test::Watchdog dog("condition signal before timeout", 30s);
    auto loop = test::makeLoop(2);
    Mutex mutex;
    Condition condition;
    bool ready = false;
    for (int round = 0; round < test::scaled(50); ++round) {
        ready = false;
        auto waiter = loop->async([&] {
            mutex.lockUncancelable(); // no Catch assertion on a fiber: Catch is not thread-safe
            Status status;
            while (!ready && status) status = condition.wait(mutex, 5s);
            mutex.unlock();
            return status;
        });
        (void)loop->sleep(100us);
        REQUIRE(mutex.lock());
        ready = true;
        mutex.unlock();
        condition.signal();
        Status status = waiter.await();
        INFO("round " << round);
        REQUIRE(status);
    }
    // The 5 s deadlines are withdrawn: an untimed wait now ends only by its signal.
    std::atomic<bool> signaled{false};
    auto later = loop->async([&] {
        REQUIRE(mutex.lock());
        Status status = condition.wait(mutex);
        mutex.unlock();
        return std::pair{status, signaled.load()};
    });
    (void)loop->sleep(30ms);
    signaled = true;
    condition.signal();
    auto [status, after_signal] = later.await();
    CHECK(status);
    CHECK(after_signal);
}

TEST_CASE("timed waits racing signals on two threads: every wait ends once, nothing hangs", "[timed_waits]") {
    test::Watchdog dog("timed wait race", 60s);
    auto loop = test::makeLoop(2);
    Mutex mutex;
    Condition condition;
    std::atomic<long> timed_out{0}, woken{0}, other{0};
    std::atomic<bool> stop{false};
    const int waiters = 8;
    const long rounds = test::scaled(400);
    std::vector<Future<void>> fibers;
    for (int w = 0; w < waiters; ++w)
        fibers.push_back(loop->async([&] {
            // Counters, not Catch assertions: these fibers run on two
            // threads at once, and Catch is not thread-safe.
            for (long i = 0; i < rounds; ++i) {
                if (!mutex.lock()) {
                    ++other;
                    continue;
                }
                Status status = condition.wait(mutex, std::chrono::microseconds(50 + (i % 7) * 100));
                mutex.unlock();
                if (status) ++woken;
                else if (status.error() == Errc::TimedOut) ++timed_out;
                else ++other;
            }
        }));
    auto signaler = loop->async([&] {
        while (!stop.load()) {
            condition.signal();
            if (woken.load() % 3 == 0) condition.broadcast();
            loop->yield();
        }
    });
    for (auto& f : fibers) f.await();
    stop = true;
    signaler.await();
    CHECK(other.load() == 0);
    CHECK(timed_out.load() + woken.load() == waiters * rounds);
}

TEST_CASE("a cancel of a timed wait returns Canceled, not TimedOut; under protection the timeout still ends it",
          "[timed_waits]") {
    test::Watchdog dog("timed wait cancel", 30s);
    auto loop = test::makeLoop(2);
    Mutex mutex;
    Condition condition;
    for (int i = 0; i < test::scaled(20); ++i) {
        auto waiter = loop->async([&] {
            mutex.lockUncancelable(); // no Catch assertion on a fiber: Catch is not thread-safe
            Status status = condition.wait(mutex, 10s);
            mutex.unlock();
            return status;
        });
        (void)loop->sleep(1ms);
        const auto start = std::chrono::steady_clock::now();
        Status status = waiter.cancel();
        CHECK(test::secondsSince(start) < 0.5 * slack());
        REQUIRE(!status);
        CHECK(status.error() == Errc::Canceled);
    }
    auto shielded = loop->async([&] {
        CancelProtection protect;
        mutex.lockUncancelable(); // no Catch assertion on a fiber: Catch is not thread-safe
        Status status = condition.wait(mutex, 20ms);
        mutex.unlock();
        return status;
    });
    (void)loop->sleep(1ms);
    Status status = shielded.cancel();
    REQUIRE(!status);
    CHECK(status.error() == Errc::TimedOut);
}

TEST_CASE("Queue::get and put with a Timeout", "[timed_waits][queue]") {
    test::Watchdog dog("queue timeouts", 30s);
    auto loop = test::makeLoop(2);
    Queue<int> queue(1);
    auto empty = queue.get(5ms);
    REQUIRE(!empty);
    CHECK(empty.error() == Errc::TimedOut);
    REQUIRE(queue.put(1, 5ms));
    Status full = queue.put(2, 5ms);
    REQUIRE(!full);
    CHECK(full.error() == Errc::TimedOut);
    auto first = queue.get(5ms);
    REQUIRE(first);
    CHECK(*first == 1); // the timed-out put stored nothing
    // An item that arrives within the timeout is taken.
    auto producer = loop->async([&] {
        (void)loop->sleep(5ms);
        return queue.put(7);
    });
    auto got = queue.getUncancelable(5s);
    REQUIRE(got);
    CHECK(*got == 7);
    CHECK(producer.await());
    auto none = queue.getUncancelable(1ms);
    REQUIRE(!none);
    CHECK(none.error() == Errc::TimedOut);
}

TEST_CASE("Mutex::lock and Condition::wait on a plain std::thread return NotOnLoopThread", "[timed_waits][threads]") {
    auto loop = test::makeLoop(1);
    Mutex mutex;
    Condition condition;
    mutex.lockUncancelable(); // held by the main fiber: the plain thread would have to wait
    Status lock_status, wait_status;
    bool try_lock_result = true;
    std::thread plain([&] {
        lock_status = mutex.lock();
        try_lock_result = mutex.try_lock();
        wait_status = condition.wait(mutex);
    });
    plain.join();
    mutex.unlock();
    REQUIRE(!lock_status);
    CHECK(lock_status.error() == Errc::NotOnLoopThread);
    CHECK(!try_lock_result);
    REQUIRE(!wait_status);
    CHECK(wait_status.error() == Errc::NotOnLoopThread);
    // With nobody waiting, signal() from a plain thread has nothing to do.
    std::thread([&] { condition.signal(); condition.broadcast(); }).join();
}
