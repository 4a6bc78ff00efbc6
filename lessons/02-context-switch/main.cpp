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

namespace {

constexpr const char* kName = "lesson02-context-switch";
constexpr int kRounds = 20;

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
    unsigned threads = 1; // one thread: the two fibers can only take turns
    if (!parseArgs(argc, argv, threads)) return 2;
    auto created = fiberscope::EventLoop::create({.threads = threads});
    if (!created) {
        std::fprintf(stderr, "%s: cannot start the event loop: %s\n", kName, created.error().message());
        return 1;
    }
    fiberscope::EventLoop& loop = **created;

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
