// Every sync wait is a cancel point: Mutex::lock, Condition::wait and
// Queue::get/put return Canceled promptly when their fiber is canceled, and a
// cancel racing a wake-up (unlock, signal, put) has exactly one outcome.
#include "test_support.hpp"

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

using namespace fiberscope;
using namespace std::chrono_literals;

namespace {

// How long a cancel may take to reach a parked fiber before the test calls
// it ignored. The target (10 ms) is a number for a benchmark, not a
// timed test on a shared machine: without the cancel point these waits end
// only when the holder lets go (here: never, or seconds later), so half a
// second (two under the sanitizers) tells the two apart without flaking.
double promptLimit() { return std::getenv("FIBERSCOPE_TEST_SCALE") ? 2.0 : 0.5; }

template <class T>
Status statusOf(const Result<T>& r) {
    if (r) return {};
    return r.error();
}

} // namespace

TEST_CASE("a fiber blocked in Mutex::lock is canceled promptly, without the mutex", "[cancel_sync][mutex]") {
    test::Watchdog dog("mutex cancel", 30s);
    auto loop = test::makeLoop(2);
    Mutex mutex;
    mutex.lockUncancelable();
    for (int i = 0; i < test::scaled(20); ++i) {
        auto waiter = loop->async([&] { return mutex.lock(); });
        (void)loop->sleep(2ms); // let it park on the mutex
        const auto start = std::chrono::steady_clock::now();
        Status status = waiter.cancel();
        const double took = test::secondsSince(start);
        REQUIRE(status.error() == Errc::Canceled);
        CHECK(took < promptLimit());
    }
    // Nobody is left on the list: unlock frees it.
    mutex.unlock();
    REQUIRE(mutex.try_lock());
    mutex.unlock();
}

TEST_CASE("Mutex::lock with a cancel pending: Canceled if it must wait, the mutex if it is free", "[cancel_sync][mutex]") {
    test::Watchdog dog("mutex pending cancel", 30s);
    auto loop = test::makeLoop(2);
    Mutex mutex;
    std::atomic<bool> canceled{false};
    auto fiber = loop->async([&]() -> int {
        while (!loop->cancelRequested()) (void)loop->sleep(1ms);
        canceled = true;
        Status free_lock = mutex.lock(); // uncontended: taken, the cancel stays pending
        if (!free_lock) return 1;
        mutex.unlock();
        return loop->cancelRequested() ? 0 : 2;
    });
    (void)loop->sleep(1ms);
    REQUIRE(fiber.cancel() == 0);
    REQUIRE(canceled);

    mutex.lockUncancelable();
    auto contended = loop->async([&] {
        (void)loop->sleep(1s); // canceled at once: the cancel is now pending
        return mutex.lock();   // contended with a pending cancel: Canceled at once
    });
    REQUIRE(contended.cancel().error() == Errc::Canceled);
    mutex.unlock();
    REQUIRE(mutex.try_lock());
    mutex.unlock();
}

TEST_CASE("lockUncancelable and waitUncancelable ignore a cancel, which stays pending", "[cancel_sync][mutex]") {
    test::Watchdog dog("uncancelable", 30s);
    auto loop = test::makeLoop(2);
    Mutex mutex;
    Condition condition;
    bool flag = false;
    mutex.lockUncancelable();
    std::atomic<int> stage{0};
    auto waiter = loop->async([&] {
        mutex.lockUncancelable();
        const bool pending_after_lock = loop->cancelRequested();
        stage = 1;
        while (!flag) condition.waitUncancelable(mutex);
        mutex.unlock();
        return pending_after_lock && loop->cancelRequested();
    });
    (void)loop->sleep(2ms);
    auto canceler = loop->async([&] { return waiter.cancel(); }); // blocks until the waiter ends
    (void)loop->sleep(5ms);
    REQUIRE(stage == 0); // still waiting for the mutex despite the cancel
    mutex.unlock();
    while (stage != 1) (void)loop->sleep(1ms);
    (void)loop->sleep(5ms);
    mutex.lockUncancelable();
    flag = true;
    mutex.unlock();
    condition.signal();
    REQUIRE(canceler.await());
}

TEST_CASE("a fiber blocked in Condition::wait is canceled promptly and returns holding the mutex",
          "[cancel_sync][condition]") {
    test::Watchdog dog("condition cancel", 30s);
    auto loop = test::makeLoop(2);
    Mutex mutex;
    Condition condition;
    for (int i = 0; i < test::scaled(20); ++i) {
        auto waiter = loop->async([&]() -> int {
            mutex.lockUncancelable();
            Status status = condition.wait(mutex);
            const bool held = !mutex.try_lock(); // we hold it: try_lock must fail
            mutex.unlock();
            if (status) return 1;
            return held ? 0 : 2;
        });
        (void)loop->sleep(2ms);
        const auto start = std::chrono::steady_clock::now();
        REQUIRE(waiter.cancel() == 0);
        CHECK(test::secondsSince(start) < promptLimit());
    }
    // No canceled waiter is left on the list: a signal finds nobody.
    REQUIRE(mutex.try_lock());
    mutex.unlock();
}

TEST_CASE("Queue::get and Queue::put are canceled promptly and leave the queue intact", "[cancel_sync][queue]") {
    test::Watchdog dog("queue cancel", 30s);
    auto loop = test::makeLoop(2);
    Queue<int> queue(1);
    for (int i = 0; i < test::scaled(20); ++i) {
        auto getter = loop->async([&] { return queue.get(); });
        (void)loop->sleep(2ms);
        auto start = std::chrono::steady_clock::now();
        REQUIRE(getter.cancel().error() == Errc::Canceled);
        CHECK(test::secondsSince(start) < promptLimit());

        REQUIRE(queue.put(i)); // fills it
        auto putter = loop->async([&] { return queue.put(-1); });
        (void)loop->sleep(2ms);
        start = std::chrono::steady_clock::now();
        REQUIRE(putter.cancel().error() == Errc::Canceled);
        CHECK(test::secondsSince(start) < promptLimit());
        auto item = queue.get();
        REQUIRE(item);
        REQUIRE(*item == i); // the canceled put stored nothing
    }
}

TEST_CASE("Group::cancel ends a member blocked in Queue::get", "[cancel_sync][group]") {
    test::Watchdog dog("group cancel", 30s);
    auto loop = test::makeLoop(2);
    Queue<int> queue(4);
    Mutex mutex;
    mutex.lockUncancelable();
    Condition condition;
    Group group(*loop);
    group.async([&] { return statusOf(queue.get()); });
    group.async([&] { return mutex.lock(); });
    group.async([&]() -> Status {
        Mutex local;
        local.lockUncancelable();
        Status s = condition.wait(local);
        local.unlock();
        return s;
    });
    (void)loop->sleep(5ms);
    const auto start = std::chrono::steady_clock::now();
    Status status = group.cancel();
    CHECK(test::secondsSince(start) < promptLimit());
    // Every member ended with Canceled, which a canceled group does not
    // report as an error (group.hpp).
    REQUIRE(status);
    mutex.unlock();
}

TEST_CASE("dropping a Future blocked on a Queue ends it", "[cancel_sync][queue]") {
    test::Watchdog dog("dropped future", 30s);
    auto loop = test::makeLoop(2);
    Queue<int> empty(1), full(1);
    REQUIRE(full.put(0));
    std::atomic<int> ended{0};
    {
        auto getter = loop->async([&] {
            auto r = empty.get();
            ++ended;
            return r;
        });
        auto putter = loop->async([&] {
            auto s = full.put(1);
            ++ended;
            return s;
        });
        (void)loop->sleep(5ms);
    } // both dropped: canceled and joined
    REQUIRE(ended == 2);
}

TEST_CASE("destroying the loop ends detached fibers blocked on a Mutex, a Condition, a Queue, a select, a Group "
          "and a timed wait",
          "[cancel_sync][teardown]") {
    test::Watchdog dog("teardown", 30s);
    for (int kind = 0; kind < 7; ++kind) {
        INFO("kind " << kind);
        Mutex mutex;
        Condition condition;
        Queue<int> queue(1);
        std::atomic<int> parked{0}, canceled{0};
        {
            auto loop = test::makeLoop(2);
            if (kind == 0) mutex.lockUncancelable(); // held for good by the main fiber
            if (kind == 3) REQUIRE(queue.put(0));    // full for good
            for (int i = 0; i < 3; ++i)
                loop->asyncDetached([&, kind] {
                    ++parked;
                    Status s;
                    switch (kind) {
                    case 0: s = mutex.lock(); break;
                    case 1: {
                        Mutex local;
                        local.lockUncancelable();
                        s = condition.wait(local);
                        local.unlock();
                        break;
                    }
                    case 2: s = statusOf(queue.get()); break;
                    case 3: s = queue.put(1); break;
                    case 4: {
                        auto sleeper = loop->async([&] { return loop->sleep(30s); });
                        s = statusOf(select(sleeper));
                        break;
                    }
                    case 5: {
                        Group group(*loop);
                        group.async([&] { return statusOf(queue.get()); });
                        s = group.wait();
                        break;
                    }
                    case 6: {
                        Mutex local;
                        local.lockUncancelable();
                        s = condition.wait(local, 30s);
                        local.unlock();
                        break;
                    }
                    }
                    if (!s && s.error() == Errc::Canceled) ++canceled;
                });
            while (parked != 3) (void)loop->sleep(1ms);
            (void)loop->sleep(2ms);
        } // ~EventLoop cancels and joins them
        REQUIRE(canceled == 3);
        if (kind == 0) mutex.unlock(); // outside the loop: the fast path, nobody waits
    }
}

TEST_CASE("a cancel racing Mutex::unlock: the waiter gets the mutex or Canceled, never both, no hand-off lost",
          "[cancel_sync][mutex][stress]") {
    test::Watchdog dog("mutex race", 120s);
    auto loop = test::makeLoop(4);
    long got = 0, canceled = 0;
    for (int round = 0; round < test::scaled(3000); ++round) {
        Mutex mutex;
        std::atomic<bool> held{false}, go{false};
        auto holder = loop->async([&] {
            mutex.lockUncancelable();
            held = true;
            while (!go.load()) loop->yield();
            mutex.unlock();
        });
        while (!held) loop->yield();
        auto waiter = loop->async([&]() -> int {
            Status s = mutex.lock();
            if (!s) return 0; // Canceled: we must not hold it (checked below)
            const bool pending = loop->cancelRequested();
            mutex.unlock();
            return pending ? 1 : 2; // got it: the cancel must stay pending
        });
        // A second, uncancelable waiter: it must get the mutex whatever
        // happened to the first (a hand-off to a canceled fiber would be lost).
        auto other = loop->async([&] {
            mutex.lockUncancelable();
            mutex.unlock();
        });
        for (int spin = round % 7; spin > 0; --spin) loop->yield(); // vary who gets parked first
        go = true;
        // 2: the holder (another thread) handed the waiter the mutex and the
        // waiter finished before this cancel was even requested: a legal
        // order, and one more "got it". What must never happen (holding it
        // and returning Canceled) is checked by try_lock below.
        const int outcome = waiter.cancel();
        if (outcome == 0) ++canceled;
        else ++got;
        holder.await();
        other.await();
        REQUIRE(mutex.try_lock()); // nobody holds it: a canceled waiter was not handed it
        mutex.unlock();
    }
    WARN("mutex race: " << got << " waiters got the mutex, " << canceled << " were canceled");
}

TEST_CASE("a cancel racing Condition::signal: exactly one waiter consumes the signal's token, none is lost",
          "[cancel_sync][condition][stress]") {
    test::Watchdog dog("condition race", 120s);
    auto loop = test::makeLoop(4);
    long consumed_by_canceled = 0, passed_on = 0;
    for (int round = 0; round < test::scaled(3000); ++round) {
        Mutex mutex;
        Condition condition;
        int tokens = 0;             // guarded by mutex
        std::atomic<int> waiting{0};
        auto consumer = [&](bool cancelable) {
            return [&, cancelable]() -> int {
                mutex.lockUncancelable();
                ++waiting;
                while (tokens == 0) {
                    if (cancelable) {
                        if (!condition.wait(mutex)) {
                            mutex.unlock();
                            return 0;
                        }
                    } else {
                        condition.waitUncancelable(mutex);
                    }
                }
                --tokens;
                mutex.unlock();
                return 1;
            };
        };
        auto victim = loop->async(consumer(true));
        auto bystander = loop->async(consumer(false));
        while (waiting != 2) loop->yield();
        for (int spin = round % 5; spin > 0; --spin) loop->yield();
        mutex.lockUncancelable();
        tokens = 1;
        mutex.unlock();
        auto signaler = loop->async([&] { condition.signal(); });
        const int victim_took = victim.cancel();
        signaler.await();
        if (victim_took) {
            ++consumed_by_canceled;
            mutex.lockUncancelable();
            tokens = 1; // release the bystander
            mutex.unlock();
            condition.signal();
        } else {
            ++passed_on; // the signal must reach the bystander: no new signal is sent
        }
        REQUIRE(bystander.await() == 1);
        mutex.lockUncancelable();
        REQUIRE(tokens == 0);
        mutex.unlock();
    }
    WARN("condition race: " << consumed_by_canceled << " signals taken by the canceled waiter, " << passed_on
                            << " passed on to the other");
}

TEST_CASE("a cancel racing Queue::put: the item is taken exactly once, never lost", "[cancel_sync][queue][stress]") {
    test::Watchdog dog("queue race", 120s);
    auto loop = test::makeLoop(4);
    long victim_items = 0, bystander_items = 0;
    for (int round = 0; round < test::scaled(3000); ++round) {
        Queue<int> queue(1);
        std::atomic<int> started{0};
        auto victim = loop->async([&] {
            ++started;
            return queue.get();
        });
        auto bystander = loop->async([&]() -> int {
            ++started;
            int got = 0;
            while (auto item = queue.getUncancelable()) got += *item;
            return got;
        });
        while (started != 2) loop->yield();
        for (int spin = round % 5; spin > 0; --spin) loop->yield();
        auto producer = loop->async([&] { return queue.put(7); });
        Result<int> taken = victim.cancel();
        REQUIRE(producer.await());
        if (taken) {
            REQUIRE(*taken == 7);
            ++victim_items;
        } else {
            REQUIRE(taken.error() == Errc::Canceled);
        }
        queue.close();
        const int rest = bystander.await();
        REQUIRE((taken ? 7 : 0) + rest == 7); // exactly once
        if (rest) ++bystander_items;
    }
    WARN("queue race: " << victim_items << " items went to the canceled getter, " << bystander_items
                        << " to the other");
}

TEST_CASE("CancelProtection defers a cancel past the scope: no cancel point inside returns Canceled",
          "[cancel_sync][protection]") {
    test::Watchdog dog("protection", 30s);
    auto loop = test::makeLoop(2);
    Mutex mutex;
    Queue<int> queue(1);
    std::atomic<bool> inside{false};
    auto fiber = loop->async([&]() -> int {
        int fails = 0;
        {
            CancelProtection protect;
            inside = true;
            if (!loop->sleep(30ms)) fails |= 1; // canceled meanwhile: not interrupted
            if (loop->cancelRequested()) fails |= 2;
            {
                CancelProtection nested; // nesting: the outer scope decides
            }
            if (loop->cancelRequested()) fails |= 4;
            if (!mutex.lock()) fails |= 8;      // waits for main's unlock
            mutex.unlock();
            auto item = queue.get();           // waits for main's put
            if (!item || *item != 5) fails |= 16;
        }
        if (!loop->cancelRequested()) fails |= 32; // pending again after the scope
        if (auto s = loop->sleep(10s); s || s.error() != Errc::Canceled) fails |= 64;
        return fails;
    });
    mutex.lockUncancelable();
    while (!inside) (void)loop->sleep(1ms);
    auto canceler = loop->async([&] { return fiber.cancel(); });
    (void)loop->sleep(50ms); // past the sleep: the fiber now waits for the mutex
    mutex.unlock();
    (void)loop->sleep(5ms);
    REQUIRE(queue.put(5));
    REQUIRE(canceler.await() == 0);
}

TEST_CASE("CancelProtection with a cancel already pending hides it until the scope ends", "[cancel_sync][protection]") {
    auto loop = test::makeLoop(2);
    auto fiber = loop->async([&]() -> int {
        while (!loop->cancelRequested()) (void)loop->sleep(1ms);
        int fails = 0;
        {
            CancelProtection protect;
            if (loop->cancelRequested()) fails |= 1;
            if (!loop->sleep(1ms)) fails |= 2;
        }
        if (!loop->cancelRequested()) fails |= 4;
        return fails;
    });
    (void)loop->sleep(2ms);
    REQUIRE(fiber.cancel() == 0);
}

TEST_CASE("select is a cancel point: a canceled selector returns Canceled promptly, the futures keep running",
          "[cancel_sync][select]") {
    test::Watchdog dog("select cancel", 30s);
    auto loop = test::makeLoop(2);
    for (int i = 0; i < test::scaled(20); ++i) {
        auto sleeper = loop->async([&] { return loop->sleep(10s); });
        auto other = loop->async([&] { return loop->sleep(10s); });
        auto selector = loop->async([&]() -> Result<std::size_t> { return select(sleeper, other); });
        (void)loop->sleep(1ms);
        const auto start = std::chrono::steady_clock::now();
        auto result = selector.cancel();
        CHECK(test::secondsSince(start) < promptLimit());
        REQUIRE(!result);
        CHECK(result.error() == Errc::Canceled);
        // The futures were not canceled by it: they still sleep.
        CHECK(sleeper.valid());
        CHECK(sleeper.cancel().error() == Errc::Canceled);
        CHECK(other.cancel().error() == Errc::Canceled);
    }
    // A fiber canceled before it selects returns at once; under protection it waits.
    auto early = loop->async([&]() -> std::pair<bool, bool> {
        while (!loop->cancelRequested()) loop->yield();
        auto quick = loop->async([&] { return loop->sleep(5ms); });
        const bool canceled = !select(quick);
        bool protected_waited;
        {
            CancelProtection protect;
            auto again = loop->async([&] { return loop->sleep(5ms); });
            auto r = select(again);
            protected_waited = r && *r == 0;
            (void)again.await();
        }
        (void)quick.await();
        return {canceled, protected_waited};
    });
    auto [canceled, protected_waited] = early.cancel();
    CHECK(canceled);
    CHECK(protected_waited);
}

TEST_CASE("select racing a cancel against a finishing future has one outcome and never hangs",
          "[cancel_sync][select][stress]") {
    test::Watchdog dog("select cancel race", 60s);
    auto loop = test::makeLoop(2);
    long won = 0, canceled = 0;
    for (long i = 0; i < test::scaled(2000); ++i) {
        auto quick = loop->async([&, i] {
            for (long spin = 0; spin < i % 50; ++spin) loop->yield();
            return 7;
        });
        auto selector = loop->async([&]() -> Result<std::size_t> { return select(quick); });
        for (long spin = 0; spin < (i / 50) % 5; ++spin) loop->yield();
        auto result = selector.cancel();
        if (result) {
            REQUIRE(*result == 0);
            ++won;
        } else {
            REQUIRE(result.error() == Errc::Canceled);
            ++canceled;
        }
        REQUIRE(quick.await() == 7);
    }
    CHECK(won + canceled == test::scaled(2000));
}

TEST_CASE("Group::wait is a cancel point: the cancel goes to every member, wait joins them and returns Canceled",
          "[cancel_sync][group]") {
    test::Watchdog dog("group wait cancel", 30s);
    auto loop = test::makeLoop(2);
    Queue<int> queue(1);
    std::atomic<int> member_canceled{0};
    auto waiter = loop->async([&]() -> Status {
        Group group(*loop);
        for (int i = 0; i < 3; ++i)
            group.async([&]() -> Status {
                auto item = queue.get();
                if (!item && item.error() == Errc::Canceled) ++member_canceled;
                return item ? Status{} : Status(item.error());
            });
        return group.wait();
    });
    (void)loop->sleep(5ms);
    const auto start = std::chrono::steady_clock::now();
    Status status = waiter.cancel();
    CHECK(test::secondsSince(start) < promptLimit());
    REQUIRE(!status);
    CHECK(status.error() == Errc::Canceled);
    CHECK(member_canceled == 3); // joined: every member had ended
}
