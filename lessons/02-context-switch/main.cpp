// Lesson 2: the context switch.
//
// Two fibers, "ping" and "pong", take turns on one worker thread: each does
// a bit of work and calls yield(), which switches to the other one. Every
// yield is a context switch carrying a SwitchMessage ("reschedule me"),
// performed by the fiber that receives the switch.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <string_view>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

namespace {

constexpr const char* kName = "lesson02-context-switch";
constexpr int kRounds = 20;

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 1);
    fiberscope::EventLoop& loop = *loop_owner;

    // Both fibers append to `turns`. On one thread they can't overlap; with
    // --threads 2 they may run at the same time, hence the (OS) mutex, held
    // for one append and never across a suspension.
    std::string turns;
    std::mutex turns_mutex;
    std::atomic<bool> yielded{false};
    auto player = [&](const char* name, char letter) {
        return [&loop, &turns, &turns_mutex, &yielded, name, letter] {
            fiberscope::setFiberName(name);
            for (int round = 0; round < kRounds; ++round) {
                {
                    std::lock_guard lock(turns_mutex);
                    turns += letter;
                }
                if (!yielded.exchange(true)) fiberscope::trace::mark("checkpoint: first yield");
                // Switch to the other ready fiber; our own rescheduling is
                // the pending task the receiver performs after the switch.
                loop.yield();
            }
        };
    };
    std::printf("Two fibers yield to each other %d times each on %u thread(s).\n", kRounds, loop.maxThreads());
    auto ping = loop.async(player("ping", 'i'));
    auto pong = loop.async(player("pong", 'o'));
    fiberscope::trace::mark("checkpoint: ping-pong begins");
    ping.await();
    pong.await();
    fiberscope::trace::mark("checkpoint: ping-pong done");

    std::printf("Turns taken (i = ping, o = pong): %s\n", turns.c_str());
    int alternations = 0;
    for (std::size_t i = 1; i < turns.size(); ++i) alternations += turns[i] != turns[i - 1];
    std::printf("%d of %zu consecutive turns changed hands.\n", alternations, turns.size() - 1);
    return 0;
}
