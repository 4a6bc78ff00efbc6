// Lesson 8: mutex contention and direct hand-off.
//
// Four "teller" fibers update one shared balance under a fiberscope::Mutex,
// and each keeps the mutex across a yield() (as if the update took a while),
// so the others find it locked. A fiber that finds the mutex locked is
// suspended on it; unlock() then hands the mutex straight to a waiter and
// switches to it: the mutex is never free in between, nobody can barge in.
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

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
    fiberscope::trace::mark("checkpoint: tellers start");
    std::vector<fiberscope::Future<void>> tellers;
    for (int t = 0; t < kTellers; ++t)
        tellers.push_back(loop.async([&, t] {
            fiberscope::setFiberName("teller " + std::to_string(t));
            for (int d = 0; d < kDeposits; ++d) {
                if (!mutex.lock()) return; // may suspend (a fiber mutex); Canceled only if canceled meanwhile
                std::lock_guard lock(mutex, std::adopt_lock);
                const long seen = balance;
                loop.yield(); // the critical section takes a while: others run and find the mutex locked
                balance = seen + 1;
            } // unlock: hands the mutex to a waiter, if any, and switches to it
        }));
    for (auto& teller : tellers) teller.await();
    fiberscope::trace::mark("checkpoint: tellers done");

    std::printf("Final balance: %ld (expected %d): no deposit was lost.\n", balance, kTellers * kDeposits);
    return balance == kTellers * kDeposits ? 0 : 1;
}
