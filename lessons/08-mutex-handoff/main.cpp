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

namespace {

constexpr const char* kName = "lesson08-mutex-handoff";
constexpr int kTellers = 4;
constexpr int kDeposits = 25;

bool parseArgs(int argc, char** argv, unsigned& threads) {
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--threads" && i + 1 < argc) {
            char* end = nullptr;
            const unsigned long n = std::strtoul(argv[++i], &end, 10);
            if (*end == '\0' && n >= 1 && n <= 1024) {
                threads = static_cast<unsigned>(n);
                continue;
            }
        }
        std::fprintf(stderr, "%s: bad argument '%s'; usage: %s [--threads N]\n", kName, argv[i], kName);
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
    unsigned threads = 2;
    if (!parseArgs(argc, argv, threads)) return 2;
    auto created = fiberscope::EventLoop::create({.threads = threads});
    if (!created) {
        std::fprintf(stderr, "%s: cannot start the event loop: %s\n", kName, created.error().message());
        return 1;
    }
    fiberscope::EventLoop& loop = **created;

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
                std::lock_guard lock(mutex); // may suspend: the mutex is a fiber mutex
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
