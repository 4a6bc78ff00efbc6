// Lesson 14: a read-mostly cache, with Event, RwLock, Semaphore and a timed wait.
//
// Four "reader" fibers wait at a start gate (an Event), then serve lookups
// under the cache's RwLock, shared, each holding it across a short sleep (as
// if copying a large entry out), so the readers overlap and the lock is never
// free of readers. A "refresher" takes the write lock twice in a row. The
// lock prefers writers: once the refresher waits, new readers (the four, and
// a "late reader" that comes along) wait behind it, and its unlock admits
// every reader waiting at that moment as one batch, before its own next
// lock. Then five lookups miss and fetch from a slow backing store through a
// Semaphore that lets two fetches run at once; an "impatient fetch" waits
// for a slot with a 1 ms Timeout and gives up with TimedOut.
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

using namespace std::chrono_literals;

namespace {

constexpr const char* kName = "lesson14-read-mostly-cache";
constexpr int kReaders = 4;
constexpr int kKeys = 8;                 // keys 0..7 are cached; 8 and up miss
constexpr int kFetches = 4;              // patient fetches (keys 8..11)
constexpr std::size_t kMaxFetches = 2;   // the backing store takes two requests at a time
constexpr auto kCopyTime = 1ms;          // a reader holds the read lock this long per lookup
constexpr auto kRefreshAfter = 2500us;   // the refresher starts this long after the readers
constexpr auto kRefreshTime = 3ms;       // the refresher holds the write lock this long
constexpr auto kFetchTime = 10ms;        // one fetch from the backing store
constexpr auto kImpatience = 1ms;        // the impatient fetch waits this long for a slot

using Clock = std::chrono::steady_clock;

// Guarded by the RwLock `table` in main.
struct Cache {
    int version = 0;
    std::map<int, std::string> entries;
};

std::string valueOf(int key, int version) {
    return "value " + std::to_string(key) + " (version " + std::to_string(version) + ")";
}

double msSince(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 2);
    fiberscope::EventLoop& loop = *loop_owner;

    fiberscope::RwLock table;
    Cache cache; // guarded by `table`
    for (int key = 0; key < kKeys; ++key) cache.entries[key] = valueOf(key, 0);

    fiberscope::Event start;       // the start gate: set once, every waiter goes
    fiberscope::Event all_reading; // set by the last reader to take its first read lock
    std::atomic<int> at_gate{0};   // readers that reached the gate
    std::atomic<int> reading{0};   // readers that took their first read lock
    // Names in the trace instead of addresses (and the primitives' parts:
    // table.readers, table.writers, start.waiters, ...).
    fiberscope::setObjectName(table, "table");
    fiberscope::setObjectName(start, "start");
    fiberscope::setObjectName(all_reading, "all_reading");
    std::printf("%d readers serve lookups from a cache of %d entries, on up to %u threads.\n", kReaders, kKeys,
                loop.maxThreads());

    // ---- Readers: serve lookups until they have seen the second refresh.
    std::array<std::array<int, 3>, kReaders> seen{}; // per reader: lookups of version 0, 1, 2
    auto reader = [&](int id) {
        const std::string name = "reader " + std::to_string(id);
        fiberscope::setFiberName(name);
        ++at_gate;
        if (auto s = start.wait(); !s) return s; // the gate: suspends until set()
        int version = 0;
        for (int lookup = 0; version < 2; ++lookup) {
            if (auto s = table.lockShared(); !s) return s; // a cancel point while it waits
            std::shared_lock guard(table, std::adopt_lock);
            if (lookup == 0 && ++reading == kReaders) all_reading.set();
            version = cache.version;
            const std::string value = cache.entries.at((id + lookup * kReaders) % kKeys);
            ++seen[id][version];
            fiberscope::trace::markCopy(name + " reads v" + std::to_string(version));
            (void)loop.sleep(kCopyTime); // copying the entry out takes a while, the read lock held
        } // unlockShared: the last reader out wakes a waiting writer
        return fiberscope::Status{};
    };

    // ---- The late reader: comes along once the refresher has started.
    int late_tries = 0;
    int late_version = -1;
    auto late_reader = [&] {
        fiberscope::setFiberName("late reader");
        // Started just before the refresher's lock(): tryLockShared()
        // succeeds only if we run before the refresher waits. Once it waits
        // (or holds the lock), a new reader is refused although readers
        // hold the lock: writer preference.
        while (table.tryLockShared()) {
            table.unlockShared();
            ++late_tries;
            (void)loop.sleep(100us);
        }
        fiberscope::trace::mark("checkpoint: late reader arrives");
        if (auto s = table.lockShared(); !s) return s; // waits behind the refresher
        std::shared_lock guard(table, std::adopt_lock);
        fiberscope::trace::mark("checkpoint: late reader reads");
        late_version = cache.version;
        (void)loop.sleep(kCopyTime);
        return fiberscope::Status{};
    };

    // ---- The refresher: rebuilds every entry, twice in a row.
    auto refresher = [&] {
        fiberscope::setFiberName("refresher");
        if (auto s = all_reading.wait(); !s) return s;
        (void)loop.sleep(kRefreshAfter); // the refresh is due a little later; the readers keep reading
        fiberscope::trace::mark("checkpoint: refresher locks");
        auto late = loop.async(late_reader);
        for (int round = 1; round <= 2; ++round) {
            if (auto s = table.lock(); !s) return s; // waits for the readers holding it to leave
            std::lock_guard guard(table, std::adopt_lock);
            (void)loop.sleep(kRefreshTime); // rebuilding the entries from the source
            ++cache.version;
            for (auto& [key, value] : cache.entries) value = valueOf(key, cache.version);
            fiberscope::trace::mark(round == 1 ? "checkpoint: first refresh done" : "checkpoint: second refresh done");
        } // unlock: admits every reader waiting now, as one batch
        return late.await();
    };

    std::vector<fiberscope::Future<fiberscope::Status>> readers;
    for (int id = 0; id < kReaders; ++id) readers.push_back(loop.async([&, id] { return reader(id); }));
    while (at_gate < kReaders) (void)loop.sleep(1ms);
    (void)loop.sleep(2ms); // let them settle into wait()
    fiberscope::trace::mark("checkpoint: gate opens");
    start.set();
    auto refresh = loop.async(refresher);

    bool ok = true;
    for (int id = 0; id < kReaders; ++id) {
        const fiberscope::Status s = readers[id].await();
        ok &= static_cast<bool>(s);
        std::printf("  reader %d: %d lookups of version 0, %d of version 1, %d of version 2%s\n", id, seen[id][0],
                    seen[id][1], seen[id][2], s ? "" : " (failed)");
    }
    ok &= static_cast<bool>(refresh.await());
    fiberscope::trace::mark("checkpoint: readers done");
    std::printf("The late reader: tryLockShared() refused it (after %d that succeeded), lockShared() waited\n"
                "behind the refresher, and it read version %d.\n",
                late_tries, late_version);

    // ---- Misses: fetch through a semaphore, at most kMaxFetches at once.
    fiberscope::Semaphore fetch_slots(kMaxFetches);
    fiberscope::Event two_fetching; // set when both slots are taken
    fiberscope::setObjectName(fetch_slots, "fetch_slots");
    fiberscope::setObjectName(two_fetching, "two_fetching");
    std::atomic<int> fetching{0}, most_fetching{0};
    std::atomic<int> in_line{0}; // fetches that came to the semaphore (the impatient one included)
    auto fetch = [&](int key, fiberscope::Timeout patience) -> fiberscope::Status {
        {
            if (auto s = table.lockShared(); !s) return s;
            std::shared_lock guard(table, std::adopt_lock);
            if (cache.entries.count(key)) return {}; // a hit after all
        }
        ++in_line;
        if (auto s = fetch_slots.wait(patience); !s) return s; // TimedOut: no slot within `patience`
        const int now_fetching = ++fetching;
        for (int most = most_fetching; now_fetching > most && !most_fetching.compare_exchange_weak(most, now_fetching);) {
        }
        if (now_fetching == static_cast<int>(kMaxFetches)) two_fetching.set();
        const fiberscope::Status slept = loop.sleep(kFetchTime); // the request to the backing store
        --fetching;
        fetch_slots.post(); // the slot goes to a waiting fetch, if any
        if (!slept) return slept;
        if (auto s = table.lock(); !s) return s;
        std::lock_guard guard(table, std::adopt_lock);
        cache.entries[key] = valueOf(key, cache.version);
        return {};
    };

    fiberscope::trace::mark("checkpoint: fetches start");
    std::vector<fiberscope::Future<fiberscope::Status>> fetches;
    for (int i = 0; i < kFetches; ++i)
        fetches.push_back(loop.async([&, i] {
            fiberscope::setFiberName("fetch " + std::to_string(i));
            return fetch(kKeys + i, {});
        }));
    (void)two_fetching.wait(); // both slots are taken now, for kFetchTime
    // ...and the other patient fetches wait in line before the impatient
    // one comes (then a little more, so that they surely wait).
    while (in_line < kFetches) (void)loop.sleep(100us);
    (void)loop.sleep(1ms);
    double impatient_ms = 0;
    auto impatient = loop.async([&] {
        fiberscope::setFiberName("impatient fetch");
        fiberscope::trace::mark("checkpoint: impatient fetch");
        const auto began = Clock::now();
        const fiberscope::Status s = fetch(kKeys + kFetches, kImpatience);
        impatient_ms = msSince(began);
        // (Given patience enough for a slot, it does not give up: the exercise.)
        fiberscope::trace::mark(s ? "checkpoint: impatient fetch got a slot" : "checkpoint: impatient fetch gives up");
        return s;
    });
    int fetched = 0;
    for (auto& f : fetches) fetched += f.await() ? 1 : 0;
    const fiberscope::Status gave_up = impatient.await();
    fiberscope::trace::mark("checkpoint: fetches done");

    // Either end is right: TimedOut with too little patience, a slot with enough.
    const bool impatient_ok = gave_up || gave_up.error() == fiberscope::Errc::TimedOut;
    std::printf("%d misses fetched, at most %d at once (the semaphore has %zu slots).\n", fetched,
                most_fetching.load(), kMaxFetches);
    const long long limit_ms = std::chrono::milliseconds(kImpatience).count();
    if (gave_up)
        std::printf("The impatient fetch got a slot within its limit of %lld ms, and fetched: %.2f ms in all.\n",
                    limit_ms, impatient_ms);
    else
        std::printf("The impatient fetch waited %.2f ms for a slot (limit %lld ms) and gave up: %s.\n", impatient_ms,
                    limit_ms, gave_up.error().name());
    return ok && late_version == 1 && fetched == kFetches && impatient_ok &&
                   most_fetching <= static_cast<int>(kMaxFetches)
               ? 0
               : 1;
}
