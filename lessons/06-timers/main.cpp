// Lesson 6: timers.
//
// Twelve "sleeper" fibers, started in a scrambled order, each sleep until
// their own deadline (some share one). A sleep is an IORING_OP_TIMEOUT in
// the ring of the thread the fiber runs on: the kernel keeps the timers
// sorted and completes each at its deadline, so the sleepers wake in
// deadline order whatever order they went to sleep in.
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

constexpr const char* kName = "lesson06-timers";
// Deadlines in milliseconds after the common start, in spawn order.
constexpr int kDeadlinesMs[] = {50, 10, 80, 30, 100, 70, 20, 60, 90, 40, 30, 70};

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 1);
    fiberscope::EventLoop& loop = *loop_owner;

    // Absolute deadlines on the monotonic clock, from one common start: the
    // order of wake-ups does not depend on when each sleeper got to run.
    fiberscope::trace::mark("checkpoint: common start"); // just before the clock read
    const fiberscope::Timestamp start = loop.now().value();
    std::mutex order_mutex; // an OS mutex, held for one append, never across a suspension
    std::vector<int> wake_order;
    std::vector<fiberscope::Future<fiberscope::Status>> sleepers;
    for (int deadline : kDeadlinesMs)
        sleepers.push_back(loop.async([&, deadline]() -> fiberscope::Status {
            fiberscope::setFiberName("sleeper " + std::to_string(deadline) + "ms");
            auto slept = loop.sleepUntil(start + std::chrono::milliseconds(deadline));
            std::lock_guard lock(order_mutex);
            wake_order.push_back(deadline);
            return slept;
        }));
    fiberscope::trace::mark("checkpoint: sleepers started");
    std::printf("Started %zu sleepers in this order of deadlines (ms):", sleepers.size());
    for (int deadline : kDeadlinesMs) std::printf(" %d", deadline);
    std::printf("\n");

    int failed = 0;
    for (auto& sleeper : sleepers) failed += !sleeper.await();
    fiberscope::trace::mark("checkpoint: all awake");
    const double elapsed_ms = std::chrono::duration<double, std::milli>(loop.now().value() - start).count();

    std::printf("They woke in this order:                        ");
    for (int deadline : wake_order) std::printf(" %d", deadline);
    std::printf("\nAll awake after %.1f ms (the latest deadline is 100 ms); %d sleep(s) failed.\n", elapsed_ms, failed);
    return failed ? 1 : 0;
}
