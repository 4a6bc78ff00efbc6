// Lesson 7: select and cancel.
//
// Two fibers race: "fast" finishes after 20 ms, "slow" sleeps for ten
// seconds. select() returns as soon as the first one finishes; the main
// fiber then cancels the loser, whose sleep is still in flight in some
// thread's ring. The cancellation travels as a MSG_RING to that ring, whose
// owner submits IORING_OP_ASYNC_CANCEL; the sleep completes with -ECANCELED
// and the slow fiber returns Errc::Canceled right away.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

using namespace std::chrono_literals;

namespace {

constexpr const char* kName = "lesson07-select-and-cancel";

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 2);
    fiberscope::EventLoop& loop = *loop_owner;
    const auto start = std::chrono::steady_clock::now();
    auto elapsedMs = [&] {
        return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    };

    // The slow fiber raises `armed` just before it goes to sleep, so the fast
    // one can start its 20 ms only once the long sleep is (about to be) in
    // flight: the race is always won by "fast" with "slow" mid-sleep.
    std::atomic<bool> armed{false};
    auto slow = loop.async([&]() -> fiberscope::Status {
        fiberscope::setFiberName("slow");
        armed = true;
        return loop.sleep(10s); // a cancel point: returns Canceled if canceled meanwhile
    });
    auto fast = loop.async([&]() -> fiberscope::Status {
        fiberscope::setFiberName("fast");
        while (!armed)
            if (auto s = loop.sleep(1ms); !s) return s;
        return loop.sleep(20ms);
    });
    std::printf("Racing a 20 ms operation against a 10 s one on up to %u threads.\n", loop.maxThreads());

    // select() is itself a cancel point (a Result: Canceled if the main fiber
    // were canceled); nobody cancels main here, so it holds an index.
    const std::size_t winner = fiberscope::select(fast, slow).value();
    fiberscope::trace::mark("checkpoint: select returned");
    const double selected_ms = elapsedMs();

    // cancel() asks the loser to stop, then awaits it. (The program prints
    // only after: a terminal's write would sit between select and cancel.)
    fiberscope::trace::mark("checkpoint: cancel the loser");
    const fiberscope::Status loser = winner == 0 ? slow.cancel() : fast.cancel();
    fiberscope::trace::mark("checkpoint: loser joined");
    const double joined_ms = elapsedMs();
    std::printf("select() returned after %.1f ms: \"%s\" won.\n", selected_ms, winner == 0 ? "fast" : "slow");
    std::printf("The loser was joined after %.1f ms and returned: %s.\n", joined_ms, loser ? "success" : loser.error().name());
    const fiberscope::Status won = winner == 0 ? fast.await() : slow.await();
    return won && !loser && loser.error() == fiberscope::Errc::Canceled ? 0 : 1;
}
