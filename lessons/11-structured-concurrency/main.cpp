// Lesson 11: structured concurrency with Group.
//
// A Group owns its members: Group::async starts a member (members may start
// more members), wait() awaits them all, cancel() asks them all to stop and
// then awaits them, and the destructor cancels whatever is left, so no
// member outlives the group. Here three "sleeper" fibers (one of which
// starts a "late sleeper" into the group) sleep for ten seconds through the
// loop, and a "waiter" waits on a Condition nobody signals. A "canceler"
// fiber cancels the group: every sleep is interrupted at once through its
// ring, and the waiter is taken off the condition's list at once (every wait
// is a cancel point), so cancel() returns in a few milliseconds.
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

constexpr const char* kName = "lesson11-structured-concurrency";
constexpr int kSleepers = 3;
constexpr int kMembers = kSleepers + 2; // + the late sleeper + the waiter

using Clock = std::chrono::steady_clock;

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 2);
    fiberscope::EventLoop& loop = *loop_owner;
    const auto start = Clock::now();

    std::mutex report_mutex; // an OS mutex, held for one append, never across a suspension
    std::vector<std::string> report;
    auto finish = [&](const std::string& who, const fiberscope::Status& status) {
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        std::lock_guard lock(report_mutex);
        report.push_back(who + ": " + (status ? "finished" : status.error().name()) + " at " +
                         std::to_string(static_cast<int>(ms)) + " ms");
        return status;
    };

    std::atomic<int> started{0}; // members that reached their wait
    fiberscope::Mutex mutex;
    fiberscope::Condition condition;
    bool signaled = false; // guarded by `mutex`; nobody sets it: only the cancel ends that wait

    fiberscope::Group group(loop);
    for (int i = 0; i < kSleepers; ++i)
        group.async([&, i] {
            const std::string name = "sleeper " + std::to_string(i);
            fiberscope::setFiberName(name);
            if (i == 0)
                group.async([&] { // a member may start more members
                    fiberscope::setFiberName("late sleeper");
                    ++started;
                    return finish("late sleeper", loop.sleep(10s));
                });
            ++started;
            return finish(name, loop.sleep(10s)); // a cancel point while in flight
        });
    group.async([&] {
        fiberscope::setFiberName("waiter");
        // Mutex::lock() is a cancel point too: lock, then adopt the lock.
        if (auto locked = mutex.lock(); !locked) return finish("waiter", locked);
        std::unique_lock lock(mutex, std::adopt_lock);
        ++started;
        fiberscope::Status status;
        while (!signaled && status) status = condition.wait(lock); // a cancel takes it off the condition
        return finish("waiter", status);
    });

    // Wait until every member is in its wait (then a little more, so the
    // sleeps are surely in flight in their rings).
    while (started < kMembers) (void)loop.sleep(1ms);
    (void)loop.sleep(10ms);
    // (Said after the cancel: a terminal's write here would sit in the story.)

    fiberscope::trace::mark("checkpoint: cancel the group");
    auto canceler = loop.async([&] {
        fiberscope::setFiberName("canceler");
        return group.cancel(); // asks every member to stop, then waits for them all
    });
    const fiberscope::Status result = canceler.await();
    fiberscope::trace::mark("checkpoint: group done");
    std::printf("%d members were waiting: %d sleepers (10 s each) and a condition waiter.\n", kMembers, kSleepers + 1);
    for (const auto& line : report) std::printf("  %s\n", line.c_str());
    // The members' Canceled is what the cancel asked for, not an error.
    std::printf("Group::cancel() returned: %s (the members' Canceled is not an error).\n",
                result ? "success" : result.error().name());
    return result && report.size() == kMembers ? 0 : 1;
}
