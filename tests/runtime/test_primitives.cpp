// Event, Semaphore and RwLock: their semantics, under many fibers on several
// threads, with timeouts, with cancels (promptness, and no post/set/
// admission lost to a cancel that races it), and RwLock's writer preference.
//
// Catch2 is not thread-safe: fibers only count into atomics or return
// values; every assertion runs on the test's own thread. Every wait a
// fiber makes has a timeout, and a watchdog ends the run with a message
// should anything hang all the same.
#include "test_support.hpp"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <shared_mutex>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include <fiberscope/analysis/timeline.hpp>
#include <fiberscope/trace.hpp>

#include "../support/recorded_trace.hpp"

using namespace fiberscope;
using namespace std::chrono_literals;

namespace {

// How long a cancel may take to end a parked waiter: generous, since the
// machine is shared (a wait that ignored the cancel would take seconds).
double promptLimit() { return std::getenv("FIBERSCOPE_TEST_SCALE") ? 2.0 : 0.5; }

// Polls `done` (every millisecond, up to 5 s): whether it became true.
template <class F>
bool eventually(EventLoop& loop, F done) {
    const auto start = std::chrono::steady_clock::now();
    while (!done()) {
        if (test::secondsSince(start) > 5.0) return false;
        (void)loop.sleep(1ms);
    }
    return true;
}

constexpr auto kLong = 10s; // the bound on waits that must succeed

} // namespace

// ---------------------------------------------------------------- Event

TEST_CASE("Event: set wakes every waiter, a set event returns at once, reset clears it", "[primitives][event]") {
    test::Watchdog guard("event basics", 60s);
    auto loop = test::makeLoop(2);
    Event event;
    REQUIRE_FALSE(event.isSet());
    REQUIRE(event.wait(0ms).error() == Errc::TimedOut);
    REQUIRE(event.waitUncancelable(1ms).error() == Errc::TimedOut);

    constexpr int kWaiters = 8;
    std::atomic<int> woken{0};
    std::vector<Future<Status>> waiters;
    for (int i = 0; i < kWaiters; ++i)
        waiters.push_back(loop->async([&, i]() -> Status {
            Status s = i % 2 ? event.wait(kLong) : event.waitUncancelable(kLong);
            if (s) ++woken;
            return s;
        }));
    (void)loop->sleep(10ms);
    CHECK(woken == 0);
    event.set();
    for (auto& waiter : waiters) REQUIRE(waiter.await());
    REQUIRE(woken == kWaiters);

    REQUIRE(event.isSet());
    const auto start = std::chrono::steady_clock::now();
    REQUIRE(event.wait());
    REQUIRE(event.wait(0ms));
    event.waitUncancelable();
    CHECK(test::secondsSince(start) < promptLimit());
    event.set(); // already set: no effect
    REQUIRE(event.isSet());

    event.reset();
    REQUIRE_FALSE(event.isSet());
    REQUIRE(event.wait(1ms).error() == Errc::TimedOut);
    event.set();
    REQUIRE(event.wait(0ms));
}

TEST_CASE("Event: set() then reset() at once still releases the fibers that were waiting", "[primitives][event]") {
    test::Watchdog guard("event set-reset", 60s);
    auto loop = test::makeLoop(2);
    // A waiter the OS delayed between `started` and parking (a loaded
    // machine) was not waiting at the set(): it rightly waits for the next
    // one, so each round releases the stragglers with a second set(). The
    // claim is that parked waiters are released: most of them, every run.
    const int rounds = test::scaled(20);
    int released_by_first = 0;
    for (int round = 0; round < rounds; ++round) {
        INFO("round " << round);
        Event event;
        std::atomic<int> started{0}, returned{0};
        std::vector<Future<Status>> waiters;
        for (int i = 0; i < 4; ++i)
            waiters.push_back(loop->async([&] {
                ++started;
                Status s = event.wait(kLong);
                ++returned;
                return s;
            }));
        REQUIRE(eventually(*loop, [&] { return started == 4; }));
        (void)loop->sleep(10ms); // from started to parked is a few instructions
        event.set();
        event.reset();
        REQUIRE_FALSE(event.isSet());
        (void)eventually(*loop, [&] { return returned == 4; });
        released_by_first += returned.load();
        event.set(); // the stragglers, if any
        for (auto& waiter : waiters) REQUIRE(waiter.await());
    }
    CHECK(released_by_first >= rounds * 4 / 2);
}

TEST_CASE("Event: many rounds of waiters on 4 threads racing the set() from another fiber", "[primitives][event]") {
    test::Watchdog guard("event stress", 120s);
    auto loop = test::makeLoop(4);
    const long rounds = test::scaled(1000);
    std::atomic<long> passed{0}, failed{0};
    for (long round = 0; round < rounds; ++round) {
        Event event;
        std::vector<Future<void>> fibers;
        for (int i = 0; i < 6; ++i)
            fibers.push_back(loop->async([&] {
                if (event.wait(kLong)) ++passed;
                else ++failed;
            }));
        // The setter races the waiters parking: no sleep before it.
        fibers.push_back(loop->async([&] { event.set(); }));
        for (auto& fiber : fibers) fiber.await();
    }
    REQUIRE(failed == 0);
    REQUIRE(passed == rounds * 6);
}

// ------------------------------------------------------------ Semaphore

TEST_CASE("Semaphore: permits are counted, post(n) wakes n waiters", "[primitives][semaphore]") {
    test::Watchdog guard("semaphore basics", 60s);
    auto loop = test::makeLoop(2);
    Semaphore semaphore(2);
    REQUIRE(semaphore.tryWait());
    REQUIRE(semaphore.tryWait());
    REQUIRE_FALSE(semaphore.tryWait());
    REQUIRE(semaphore.wait(0ms).error() == Errc::TimedOut);
    semaphore.post();
    REQUIRE(semaphore.wait(0ms));
    semaphore.post(2);
    REQUIRE(semaphore.wait());
    semaphore.waitUncancelable();
    REQUIRE_FALSE(semaphore.tryWait());

    constexpr int kWaiters = 5;
    std::atomic<int> done{0};
    std::vector<Future<Status>> waiters;
    for (int i = 0; i < kWaiters; ++i)
        waiters.push_back(loop->async([&, i]() -> Status {
            Status s = i % 2 ? semaphore.wait(kLong) : semaphore.waitUncancelable(kLong);
            if (s) ++done;
            return s;
        }));
    (void)loop->sleep(10ms);
    CHECK(done == 0);
    semaphore.post(3);
    REQUIRE(eventually(*loop, [&] { return done == 3; }));
    (void)loop->sleep(20ms);
    REQUIRE(done == 3); // three permits, three waiters through
    semaphore.post(0);  // nothing
    (void)loop->sleep(5ms);
    REQUIRE(done == 3);
    semaphore.post(2);
    for (auto& waiter : waiters) REQUIRE(waiter.await());
    REQUIRE(done == kWaiters);
    REQUIRE_FALSE(semaphore.tryWait());
}

TEST_CASE("Semaphore: fibers on 4 threads never exceed the permits", "[primitives][semaphore]") {
    test::Watchdog guard("semaphore stress", 120s);
    auto loop = test::makeLoop(4);
    constexpr int kPermits = 3, kFibers = 24;
    const long iterations = test::scaled(2000);
    Semaphore semaphore(kPermits);
    std::atomic<int> inside{0}, most{0};
    std::atomic<long> over{0}, failed{0}, entered{0};
    std::vector<Future<void>> fibers;
    for (int f = 0; f < kFibers; ++f)
        fibers.push_back(loop->async([&, f] {
            for (long i = 0; i < iterations; ++i) {
                const bool tried = (f + i) % 5 == 0 && semaphore.tryWait();
                if (!tried) {
                    Status s = (f + i) % 7 == 0 ? semaphore.waitUncancelable(kLong) : semaphore.wait(kLong);
                    if (!s) {
                        ++failed;
                        return;
                    }
                }
                ++entered;
                const int now = ++inside;
                if (now > kPermits) ++over;
                for (int seen = most.load(); now > seen && !most.compare_exchange_weak(seen, now);) {
                }
                if (i % 3 == 0) loop->yield();
                --inside;
                semaphore.post();
            }
        }));
    for (auto& fiber : fibers) fiber.await();
    REQUIRE(failed == 0);
    REQUIRE(over == 0);
    REQUIRE(entered == kFibers * iterations);
    CHECK(most >= 1);
    for (int i = 0; i < kPermits; ++i) REQUIRE(semaphore.tryWait()); // every permit came back
    REQUIRE_FALSE(semaphore.tryWait());
}

TEST_CASE("Semaphore: producers posting in chunks, consumers taking one at a time, nothing lost",
          "[primitives][semaphore]") {
    test::Watchdog guard("semaphore producer-consumer", 120s);
    auto loop = test::makeLoop(4);
    Semaphore semaphore(0);
    constexpr int kProducers = 4, kConsumers = 6;
    const long per_consumer = test::scaled(3000);
    const long total = per_consumer * kConsumers;
    const long per_producer = total / kProducers; // producer 0 posts the remainder too
    std::atomic<long> consumed{0}, failed{0};
    std::vector<Future<void>> fibers;
    for (int c = 0; c < kConsumers; ++c)
        fibers.push_back(loop->async([&] {
            for (long i = 0; i < per_consumer; ++i) {
                if (!semaphore.wait(kLong)) {
                    ++failed;
                    return;
                }
                ++consumed;
            }
        }));
    for (int p = 0; p < kProducers; ++p)
        fibers.push_back(loop->async([&, p] {
            long left = per_producer + (p == 0 ? total - per_producer * kProducers : 0);
            for (long chunk = 1; left > 0; chunk = chunk % 3 + 1) {
                const long n = chunk < left ? chunk : left;
                semaphore.post(static_cast<std::size_t>(n));
                left -= n;
                if (left % 4 == 0) loop->yield();
            }
        }));
    for (auto& fiber : fibers) fiber.await();
    REQUIRE(failed == 0);
    REQUIRE(consumed == total);
    REQUIRE_FALSE(semaphore.tryWait());
}

// --------------------------------------------------------------- RwLock

TEST_CASE("RwLock: readers share, a writer excludes, try and timed forms", "[primitives][rwlock]") {
    test::Watchdog guard("rwlock basics", 60s);
    auto loop = test::makeLoop(2);
    RwLock lock;
    REQUIRE(lock.tryLockShared());
    REQUIRE(lock.lockShared(0ms));
    REQUIRE_FALSE(lock.tryLock());
    REQUIRE(lock.lock(10ms).error() == Errc::TimedOut);
    REQUIRE(lock.lockUncancelable(1ms).error() == Errc::TimedOut);
    // The writers that gave up no longer hold readers back.
    REQUIRE(lock.tryLockShared());
    lock.unlockShared();
    lock.unlockShared();
    lock.unlockShared();

    REQUIRE(lock.tryLock());
    REQUIRE_FALSE(lock.tryLock());
    REQUIRE_FALSE(lock.tryLockShared());
    REQUIRE(lock.lockShared(10ms).error() == Errc::TimedOut);
    REQUIRE(lock.lockSharedUncancelable(1ms).error() == Errc::TimedOut);
    lock.unlock();

    // The adopt_lock pattern with the standard guards.
    REQUIRE(lock.lock());
    { std::lock_guard held(lock, std::adopt_lock); }
    REQUIRE(lock.lockShared());
    { std::shared_lock held(lock, std::adopt_lock); }
    {
        std::shared_lock held(lock, std::try_to_lock);
        REQUIRE(held.owns_lock());
    }
    lock.lockUncancelable();
    lock.unlock();
    lock.lockSharedUncancelable();
    lock.unlockShared();
    REQUIRE(lock.tryLock());
    lock.unlock();
}

TEST_CASE("RwLock: readers and writers on 4 threads: no reader overlaps a writer", "[primitives][rwlock]") {
    test::Watchdog guard("rwlock stress", 120s);
    auto loop = test::makeLoop(4);
    constexpr int kReaders = 8, kWriters = 3;
    const long iterations = test::scaled(2000);
    RwLock lock;
    std::atomic<int> readers_in{0}, writers_in{0}, most_readers{0};
    std::atomic<long> violations{0}, failed{0};
    long written = 0; // guarded by the write lock
    std::vector<Future<void>> fibers;
    for (int r = 0; r < kReaders; ++r)
        fibers.push_back(loop->async([&, r] {
            for (long i = 0; i < iterations; ++i) {
                const bool tried = (r + i) % 4 == 0 && lock.tryLockShared();
                if (!tried) {
                    Status s = (r + i) % 5 == 0 ? lock.lockSharedUncancelable(kLong) : lock.lockShared(kLong);
                    if (!s) {
                        ++failed;
                        return;
                    }
                }
                const int now = ++readers_in;
                if (writers_in != 0) ++violations;
                for (int seen = most_readers.load(); now > seen && !most_readers.compare_exchange_weak(seen, now);) {
                }
                if (i % 2 == 0) loop->yield();
                if (writers_in != 0) ++violations;
                --readers_in;
                lock.unlockShared();
            }
        }));
    for (int w = 0; w < kWriters; ++w)
        fibers.push_back(loop->async([&, w] {
            for (long i = 0; i < iterations; ++i) {
                const bool tried = (w + i) % 4 == 0 && lock.tryLock();
                if (!tried) {
                    Status s = (w + i) % 5 == 0 ? lock.lockUncancelable(kLong) : lock.lock(kLong);
                    if (!s) {
                        ++failed;
                        return;
                    }
                }
                if (writers_in.fetch_add(1) != 0 || readers_in != 0) ++violations;
                ++written;
                if (i % 2 == 0) loop->yield();
                if (readers_in != 0) ++violations;
                writers_in.fetch_sub(1);
                lock.unlock();
            }
        }));
    for (auto& fiber : fibers) fiber.await();
    REQUIRE(failed == 0);
    REQUIRE(violations == 0);
    REQUIRE(written == kWriters * iterations);
    CHECK(most_readers >= 1);
    REQUIRE(lock.tryLock()); // nothing left held
    lock.unlock();
}

TEST_CASE("RwLock writer preference: with readers holding and a writer waiting, a new reader waits for the writer",
          "[primitives][rwlock]") {
    test::Watchdog guard("rwlock writer preference", 60s);
    auto loop = test::makeLoop(2);
    for (int round = 0; round < test::scaled(10); ++round) {
        INFO("round " << round);
        RwLock lock;
        REQUIRE(lock.tryLockShared()); // two readers, held by the test
        REQUIRE(lock.tryLockShared());
        std::atomic<int> order{0}, writer_at{0}, reader_at{0};
        std::atomic<bool> writer_in{false}, reader_saw_writer{false};
        auto writer = loop->async([&]() -> Status {
            if (auto s = lock.lock(kLong); !s) return s;
            writer_at = ++order;
            writer_in = true;
            (void)loop->sleep(10ms);
            writer_in = false;
            lock.unlock();
            return {};
        });
        // The writer is waiting once a new reader cannot get in (the readers
        // holding do not keep one out; only a waiting writer does).
        REQUIRE(eventually(*loop, [&] {
            if (!lock.tryLockShared()) return true;
            lock.unlockShared();
            return false;
        }));
        REQUIRE(lock.lockShared(5ms).error() == Errc::TimedOut);
        auto reader = loop->async([&]() -> Status {
            if (auto s = lock.lockShared(kLong); !s) return s;
            reader_at = ++order;
            reader_saw_writer = writer_in.load();
            lock.unlockShared();
            return {};
        });
        (void)loop->sleep(10ms);
        REQUIRE(order == 0); // neither got in while the two readers hold
        lock.unlockShared();
        lock.unlockShared();
        REQUIRE(writer.await());
        REQUIRE(reader.await());
        REQUIRE(writer_at == 1);
        REQUIRE(reader_at == 2);
        REQUIRE_FALSE(reader_saw_writer);
        REQUIRE(lock.tryLock());
        lock.unlock();
    }
}

TEST_CASE("RwLock: a writer's unlock admits the waiting readers before the next waiting writer",
          "[primitives][rwlock]") {
    test::Watchdog guard("rwlock reader batch", 60s);
    auto loop = test::makeLoop(2);
    for (int round = 0; round < test::scaled(10); ++round) {
        INFO("round " << round);
        RwLock lock;
        lock.lockUncancelable(); // the first writer: the test
        std::atomic<int> order{0}, started{0}, readers_in{0};
        std::atomic<int> reader_at[2] = {0, 0};
        std::atomic<bool> overlap{false};
        std::vector<Future<Status>> readers;
        for (int r = 0; r < 2; ++r)
            readers.push_back(loop->async([&, r]() -> Status {
                ++started;
                if (auto s = lock.lockShared(kLong); !s) return s;
                reader_at[r] = ++order;
                ++readers_in;
                (void)loop->sleep(10ms);
                --readers_in;
                lock.unlockShared();
                return {};
            }));
        REQUIRE(eventually(*loop, [&] { return started == 2; }));
        (void)loop->sleep(10ms);
        auto writer = loop->async([&]() -> Status {
            ++started;
            if (auto s = lock.lock(kLong); !s) return s;
            if (readers_in != 0) overlap = true;
            const int at = ++order;
            lock.unlock();
            return at == 3 ? Status{} : Status{Errc::Unexpected};
        });
        REQUIRE(eventually(*loop, [&] { return started == 3; }));
        (void)loop->sleep(10ms);
        REQUIRE(order == 0);
        lock.unlock();
        for (auto& reader : readers) REQUIRE(reader.await());
        REQUIRE(writer.await()); // third: after both readers
        REQUIRE_FALSE(overlap);
        REQUIRE(reader_at[0] <= 2);
        REQUIRE(reader_at[1] <= 2);
    }
}

// ------------------------------------------------------------- Timeouts

TEST_CASE("Timed waits return TimedOut after the timeout, not before", "[primitives][timeout]") {
    test::Watchdog guard("timeouts", 60s);
    auto loop = test::makeLoop(2);
    constexpr auto kTimeout = 60ms;
    const double limit = std::chrono::duration<double>(kTimeout).count();
    Event event;
    Semaphore semaphore(0);
    RwLock lock;
    // A fiber waits (as a real user would, off the test's thread) and
    // reports what it got and how long it took.
    auto timed = [&](auto wait) {
        return loop->async([wait]() -> std::pair<Status, double> {
            const auto start = std::chrono::steady_clock::now();
            Status s = wait();
            return {s, test::secondsSince(start)};
        });
    };
    REQUIRE(lock.tryLockShared()); // a reader holds: writers time out
    auto writer_wait = [&] { return lock.lock(kTimeout); };
    auto writer_wait_u = [&] { return lock.lockUncancelable(kTimeout); };
    std::vector<std::pair<const char*, Future<std::pair<Status, double>>>> waits;
    waits.emplace_back("Event::wait", timed([&] { return event.wait(kTimeout); }));
    waits.emplace_back("Event::waitUncancelable", timed([&] { return event.waitUncancelable(kTimeout); }));
    waits.emplace_back("Semaphore::wait", timed([&] { return semaphore.wait(kTimeout); }));
    waits.emplace_back("Semaphore::waitUncancelable", timed([&] { return semaphore.waitUncancelable(kTimeout); }));
    waits.emplace_back("RwLock::lock", timed(writer_wait));
    waits.emplace_back("RwLock::lockUncancelable", timed(writer_wait_u));
    for (auto& [name, wait] : waits) {
        INFO(name);
        auto [status, took] = wait.await();
        REQUIRE(status.error() == Errc::TimedOut);
        CHECK(took >= limit);
        CHECK(took < limit + promptLimit());
    }
    lock.unlockShared();

    lock.lockUncancelable(); // a writer holds: readers time out
    auto reader = timed([&] { return lock.lockShared(kTimeout); });
    auto reader_u = timed([&] { return lock.lockSharedUncancelable(kTimeout); });
    for (auto* wait : {&reader, &reader_u}) {
        auto [status, took] = wait->await();
        REQUIRE(status.error() == Errc::TimedOut);
        CHECK(took >= limit);
        CHECK(took < limit + promptLimit());
    }
    lock.unlock();
    // Nothing timed out left anything held or counted.
    REQUIRE(lock.tryLock());
    lock.unlock();
    REQUIRE_FALSE(semaphore.tryWait());
    REQUIRE_FALSE(event.isSet());
}

TEST_CASE("RwLock: a writer that times out lets in the readers queued behind it", "[primitives][timeout][rwlock]") {
    test::Watchdog guard("rwlock writer timeout", 60s);
    auto loop = test::makeLoop(2);
    RwLock lock;
    REQUIRE(lock.tryLockShared()); // a reader holds for the whole test
    auto writer = loop->async([&] { return lock.lock(100ms); });
    REQUIRE(eventually(*loop, [&] {
        if (!lock.tryLockShared()) return true;
        lock.unlockShared();
        return false;
    }));
    const auto start = std::chrono::steady_clock::now();
    auto reader = loop->async([&]() -> Status {
        if (auto s = lock.lockShared(kLong); !s) return s;
        lock.unlockShared();
        return {};
    });
    REQUIRE(writer.await().error() == Errc::TimedOut);
    REQUIRE(reader.await()); // admitted when the writer gave up, not kLong later
    CHECK(test::secondsSince(start) < 0.1 + promptLimit());
    lock.unlockShared();
    REQUIRE(lock.tryLock());
    lock.unlock();
}

// --------------------------------------------------------------- Cancel

TEST_CASE("A canceled waiter returns Canceled promptly and the primitive stays consistent", "[primitives][cancel]") {
    test::Watchdog guard("cancel", 60s);
    auto loop = test::makeLoop(2);
    const int rounds = static_cast<int>(test::scaled(10));
    auto canceledPromptly = [&](Future<Status>& waiter) {
        (void)loop->sleep(2ms); // let it park
        const auto start = std::chrono::steady_clock::now();
        Status status = waiter.cancel();
        const double took = test::secondsSince(start);
        REQUIRE_FALSE(status);
        REQUIRE(status.error() == Errc::Canceled);
        CHECK(took < promptLimit());
    };

    SECTION("Event") {
        Event event;
        for (int i = 0; i < rounds; ++i) {
            auto waiter = loop->async([&] { return event.wait(kLong); });
            canceledPromptly(waiter);
        }
        REQUIRE_FALSE(event.isSet());
        auto waiter = loop->async([&] { return event.wait(kLong); });
        event.set();
        REQUIRE(waiter.await());
    }
    SECTION("Semaphore") {
        Semaphore semaphore(0);
        for (int i = 0; i < rounds; ++i) {
            auto waiter = loop->async([&] { return semaphore.wait(kLong); });
            canceledPromptly(waiter);
        }
        // No canceled waiter is left to absorb a permit.
        semaphore.post();
        REQUIRE(semaphore.tryWait());
        REQUIRE_FALSE(semaphore.tryWait());
    }
    SECTION("RwLock reader behind a writer") {
        RwLock lock;
        lock.lockUncancelable();
        for (int i = 0; i < rounds; ++i) {
            auto waiter = loop->async([&] { return lock.lockShared(kLong); });
            canceledPromptly(waiter);
        }
        lock.unlock();
        REQUIRE(lock.tryLock()); // no canceled reader holds it
        lock.unlock();
    }
    SECTION("RwLock writer behind a reader") {
        RwLock lock;
        REQUIRE(lock.tryLockShared());
        for (int i = 0; i < rounds; ++i) {
            auto waiter = loop->async([&] { return lock.lock(kLong); });
            canceledPromptly(waiter);
            // No canceled writer still keeps new readers out.
            REQUIRE(lock.tryLockShared());
            lock.unlockShared();
        }
        // A reader queued behind a writer that is then canceled gets in.
        auto writer = loop->async([&] { return lock.lock(kLong); });
        REQUIRE(eventually(*loop, [&] {
            if (!lock.tryLockShared()) return true;
            lock.unlockShared();
            return false;
        }));
        auto reader = loop->async([&]() -> Status {
            if (auto s = lock.lockShared(kLong); !s) return s;
            lock.unlockShared();
            return {};
        });
        (void)loop->sleep(5ms);
        canceledPromptly(writer);
        REQUIRE(reader.await());
        lock.unlockShared();
        REQUIRE(lock.tryLock());
        lock.unlock();
    }
}

TEST_CASE("A cancel racing a post, a set or an unlock has one outcome and loses nothing", "[primitives][cancel]") {
    test::Watchdog guard("cancel races", 120s);
    auto loop = test::makeLoop(2);
    const long rounds = test::scaled(300);
    // How far things got before the next step: varies with the round, so
    // the wake-up (sent from a fiber of its own, often on the other thread)
    // and the cancel (sent from the test's thread) come in either order and
    // at every stage of the waiter parking.
    auto stagger = [&](long i) {
        if (i % 4 == 1) loop->yield();
        else if (i % 4 >= 2) (void)loop->sleep(std::chrono::microseconds(20 + (i % 11) * 30));
    };
    // Both outcomes should turn up over the rounds; neither is required (the
    // scheduling decides), but the counts are reported.
    long woken = 0, canceled = 0;

    SECTION("Semaphore post") {
        Semaphore semaphore(0);
        for (long i = 0; i < rounds; ++i) {
            INFO("round " << i);
            auto waiter = loop->async([&] { return semaphore.wait(kLong); });
            auto poster = loop->async([&, i] {
                stagger(i);
                semaphore.post();
            });
            stagger(i / 4);
            Status status = waiter.cancel();
            poster.await();
            if (status) {
                ++woken; // it had the permit: none is left
                REQUIRE_FALSE(semaphore.tryWait());
            } else {
                ++canceled; // it took nothing: the permit is still counted
                REQUIRE(status.error() == Errc::Canceled);
                REQUIRE(semaphore.tryWait());
                REQUIRE_FALSE(semaphore.tryWait());
            }
        }
    }
    SECTION("Event set") {
        for (long i = 0; i < rounds; ++i) {
            INFO("round " << i);
            Event event;
            auto waiter = loop->async([&] { return event.wait(kLong); });
            auto setter = loop->async([&, i] {
                stagger(i);
                event.set();
            });
            stagger(i / 4);
            Status status = waiter.cancel();
            setter.await();
            if (status) ++woken;
            else ++canceled;
            REQUIRE((status || status.error() == Errc::Canceled));
            REQUIRE(event.isSet());
            REQUIRE(event.wait(0ms));
        }
    }
    SECTION("RwLock admission of a reader") {
        RwLock lock;
        for (long i = 0; i < rounds; ++i) {
            INFO("round " << i);
            lock.lockUncancelable();
            // 0: admitted (and released), 1: Canceled, 2: anything else.
            auto reader = loop->async([&]() -> int {
                Status s = lock.lockShared(kLong);
                if (s) {
                    lock.unlockShared();
                    return 0;
                }
                return s.error() == Errc::Canceled ? 1 : 2;
            });
            auto unlocker = loop->async([&, i] {
                stagger(i);
                lock.unlock();
            });
            stagger(i / 4);
            const int outcome = reader.cancel();
            unlocker.await();
            REQUIRE(outcome != 2);
            (outcome == 0 ? woken : canceled) += 1;
            REQUIRE(lock.tryLock()); // nobody holds it
            lock.unlock();
        }
    }
    SECTION("RwLock hand-over to a writer") {
        RwLock lock;
        for (long i = 0; i < rounds; ++i) {
            INFO("round " << i);
            REQUIRE(lock.tryLockShared());
            auto writer = loop->async([&]() -> int {
                Status s = lock.lock(kLong);
                if (s) {
                    lock.unlock();
                    return 0;
                }
                return s.error() == Errc::Canceled ? 1 : 2;
            });
            auto unlocker = loop->async([&, i] {
                stagger(i);
                lock.unlockShared();
            });
            stagger(i / 4);
            const int outcome = writer.cancel();
            unlocker.await();
            REQUIRE(outcome != 2);
            (outcome == 0 ? woken : canceled) += 1;
            REQUIRE(lock.tryLock()); // nobody holds it, nor waits for it
            lock.unlock();
            REQUIRE(lock.tryLockShared());
            lock.unlockShared();
        }
    }
    INFO("woken " << woken << ", canceled " << canceled);
    SUCCEED();
}

TEST_CASE("The Uncancelable forms wait through a cancel, which stays pending", "[primitives][cancel]") {
    test::Watchdog guard("uncancelable", 60s);
    auto loop = test::makeLoop(2);
    Event event;
    Semaphore semaphore(0);
    RwLock lock;
    lock.lockUncancelable();
    std::atomic<int> through{0};
    // Each returns whether it waited successfully and saw the cancel pending after.
    auto event_waiter = loop->async([&] {
        const bool ok = static_cast<bool>(event.waitUncancelable(kLong));
        ++through;
        return ok && loop->cancelRequested();
    });
    auto semaphore_waiter = loop->async([&] {
        const bool ok = static_cast<bool>(semaphore.waitUncancelable(kLong));
        ++through;
        return ok && loop->cancelRequested();
    });
    auto reader = loop->async([&] {
        const bool ok = static_cast<bool>(lock.lockSharedUncancelable(kLong));
        if (ok) lock.unlockShared();
        ++through;
        return ok && loop->cancelRequested();
    });
    (void)loop->sleep(5ms);
    // Each cancel() waits for its fiber, so it runs on a fiber of its own.
    std::vector<Future<bool>> cancels;
    cancels.push_back(loop->async([&] { return event_waiter.cancel(); }));
    cancels.push_back(loop->async([&] { return semaphore_waiter.cancel(); }));
    cancels.push_back(loop->async([&] { return reader.cancel(); }));
    (void)loop->sleep(20ms);
    REQUIRE(through == 0); // the cancels did not end the waits
    event.set();
    semaphore.post();
    lock.unlock();
    for (auto& cancel : cancels) REQUIRE(cancel.await());
    REQUIRE(through == 3);
}

TEST_CASE("setObjectName names an object and a primitive's parts in the trace, and the model calls them so",
          "[primitives][trace]") {
    char dir[] = "/tmp/fiberscope-object-name-XXXXXX";
    REQUIRE(mkdtemp(dir));
    const std::string path = std::string(dir) + "/names.fstrace";
    std::uintptr_t table_address = 0, readers_address = 0, gate_address = 0, lock_address = 0;
    {
        trace::Recorder recorder(path);
        REQUIRE(recorder.ok());
        auto loop = test::makeLoop(2);
        RwLock table;
        Semaphore slots(2);
        Event gate;
        Queue<int> jobs(4);
        Mutex lock;
        fiberscope::setObjectName(table, "table"); // qualified: as a user would call it
        fiberscope::setObjectName(slots, "slots");
        fiberscope::setObjectName(gate, "gate");
        fiberscope::setObjectName(jobs, "jobs");
        fiberscope::setObjectName(lock, "lock");
        table_address = reinterpret_cast<std::uintptr_t>(&table);
        gate_address = reinterpret_cast<std::uintptr_t>(&gate);
        lock_address = reinterpret_cast<std::uintptr_t>(&lock);
        // A reader waits behind a writer: its wait is on table.readers.
        REQUIRE(table.lock());
        auto reader = loop->async([&] {
            if (auto s = table.lockShared(); !s) return false;
            table.unlockShared();
            return true;
        });
        REQUIRE(loop->sleep(std::chrono::milliseconds(2)));
        table.unlock();
        CHECK(reader.await());
        gate.set();
        REQUIRE(gate.wait());
        loop.reset();
        REQUIRE(recorder.stop());
    }
    const trace::Trace trace = test::readRecordedTrace(path);
    rmdir(dir);
    std::map<std::string, std::uint64_t> named; // name -> object
    for (const trace::Event& e : trace.events)
        if (e.kind == trace::EventKind::ObjectName) named[trace.string(e.arg[1])] = e.arg[0];
    for (const char* name : {"table", "table.mutex", "table.readers", "table.writers", "slots", "slots.mutex", "slots.waiters",
                             "gate", "gate.mutex", "gate.waiters", "jobs", "jobs.mutex", "jobs.not-empty", "jobs.not-full",
                             "lock"}) {
        INFO("object-name record for " << name);
        CHECK(named.count(name) == 1);
    }
    CHECK(named["table"] == table_address);
    CHECK(named["gate"] == gate_address);
    CHECK(named["lock"] == lock_address);
    // The reader's condition-wait names the condition the model calls table.readers.
    readers_address = named["table.readers"];
    const analysis::Timeline timeline = analysis::buildTimeline(trace);
    bool waited = false;
    for (const trace::Event& e : trace.events)
        if (e.kind == trace::EventKind::ConditionWait && e.arg[1] == readers_address) {
            waited = true;
            const std::string* name = analysis::objectNameAt(timeline, e.arg[1], e.time);
            REQUIRE(name);
            CHECK(*name == "table.readers");
            // Before it was named, it had no name.
            CHECK(analysis::objectNameAt(timeline, e.arg[1], trace.events.front().time - 1) == nullptr);
        }
    CHECK(waited);
    // A part at its primitive's own address (its first member, the mutex)
    // is named first: the address is called by the primitive's name.
    for (const auto& [address, name] : {std::pair{table_address, "table"}, std::pair{gate_address, "gate"}}) {
        const std::string* now = analysis::objectNameAt(timeline, address, trace.events.back().time);
        REQUIRE(now);
        CHECK(*now == name);
    }
}
