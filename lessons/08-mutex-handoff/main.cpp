// Lesson 8: mutex contention and direct hand-off.
//
// Four "teller" fibers update one shared balance under a fiberscope::Mutex,
// and each keeps the mutex across a yield() (as if the update took a while),
// so the others find it locked. A fiber that finds the mutex locked is
// suspended on it; unlock() then hands the mutex straight to a waiter and
// switches to it: the mutex is never free in between, nobody can barge in.
//
// The main fiber holds the mutex while it starts the tellers, one at a time,
// waiting until each has found it locked: the trace opens with four tellers
// queued on the mutex in a known order, and main's unlock() is the first
// hand-off. (Without that, teller 0 starts on the worker main's first
// async() starts, and can make all its deposits alone, each yield a hand-off
// to the other worker and a steal back, before teller 1 even exists.)
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

using namespace std::chrono_literals;

namespace {

constexpr const char* kName = "lesson08-mutex-handoff";
constexpr int kTellers = 4;
constexpr int kDeposits = 25;

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 2);
    fiberscope::EventLoop& loop = *loop_owner;

    fiberscope::Mutex mutex;
    long balance = 0; // guarded by `mutex`
    std::printf("%d tellers make %d deposits each, holding the mutex across a yield, on up to %u threads.\n",
                kTellers, kDeposits, loop.maxThreads());
    // Main holds the mutex while the tellers arrive.
    mutex.lockUncancelable();
    std::atomic<int> arrived{0}; // tellers that reached their first lock()
    fiberscope::trace::mark("checkpoint: tellers start");
    std::vector<fiberscope::Future<void>> tellers;
    for (int t = 0; t < kTellers; ++t) {
        tellers.push_back(loop.async([&, t] {
            fiberscope::setFiberName("teller " + std::to_string(t));
            // relaxed: a count main polls; the mutex orders the balance.
            arrived.fetch_add(1, std::memory_order_relaxed);
            for (int d = 0; d < kDeposits; ++d) {
                if (!mutex.lock()) return; // may suspend (a fiber mutex); Canceled only if canceled meanwhile
                std::lock_guard lock(mutex, std::adopt_lock);
                const long seen = balance;
                loop.yield(); // the critical section takes a while: others run and find the mutex locked
                balance = seen + 1;
            } // unlock: hands the mutex to a waiter, if any, and switches to it
        }));
        // Wait (through the loop) until this teller is queued on the mutex,
        // so the waiters queue up in the order 0, 1, 2, 3.
        while (arrived.load(std::memory_order_relaxed) <= t) (void)loop.sleep(1ms);
        (void)loop.sleep(1ms); // from its arrival to its suspension in lock()
    }
    fiberscope::trace::mark("checkpoint: main unlocks");
    mutex.unlock(); // hands the mutex to the most recent waiter and switches to it
    for (auto& teller : tellers) teller.await();
    fiberscope::trace::mark("checkpoint: tellers done");

    std::printf("Final balance: %ld (expected %d): no deposit was lost.\n", balance, kTellers * kDeposits);
    return balance == kTellers * kDeposits ? 0 : 1;
}
