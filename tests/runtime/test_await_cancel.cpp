// A cancel that reaches a fiber inside Future::await is passed on to the
// fiber it awaits, and the await returns when that fiber does (cancel.hpp):
// so tearing a tree of fibers down always ends. Every kind of wait, nested
// one and two awaits deep, torn down each way a user can: canceling the
// outer future, dropping it, canceling the group it belongs to, and
// destroying the loop under a detached fiber. (Before, each of these hung
// forever: the awaiting fiber held its cancel for a cancel point it never
// reached, and the awaited fiber was never told.)
#include "test_support.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <functional>

using namespace fiberscope;
using namespace std::chrono_literals;

namespace {

enum class Wait { queue_get, mutex_lock, condition_wait, event_wait, semaphore_wait, rwlock_lock, sleep, pipe_read, select, group_wait };
constexpr Wait kWaits[] = {Wait::queue_get,      Wait::mutex_lock, Wait::condition_wait, Wait::event_wait, Wait::semaphore_wait,
                           Wait::rwlock_lock,    Wait::sleep,      Wait::pipe_read,      Wait::select,     Wait::group_wait};
const char* name(Wait w) {
    switch (w) {
    case Wait::queue_get: return "Queue::get";
    case Wait::mutex_lock: return "Mutex::lock";
    case Wait::condition_wait: return "Condition::wait";
    case Wait::event_wait: return "Event::wait";
    case Wait::semaphore_wait: return "Semaphore::wait";
    case Wait::rwlock_lock: return "RwLock::lock";
    case Wait::sleep: return "sleep";
    case Wait::pipe_read: return "read of an empty pipe";
    case Wait::select: return "select";
    case Wait::group_wait: return "Group::wait";
    }
    return "?";
}

// Everything the innermost wait waits on, none of which ever comes unless
// canceled.
struct Blockers {
    EventLoop& loop;
    Queue<int> queue{1};
    Mutex mutex, condition_mutex;
    Condition condition;
    Event event;
    Semaphore semaphore{0};
    RwLock rwlock;
    int pipe_fds[2] = {-1, -1};
    explicit Blockers(EventLoop& l) : loop(l) {
        REQUIRE(::pipe2(pipe_fds, O_CLOEXEC) == 0);
        mutex.lockUncancelable();
        rwlock.lockUncancelable();
    }
    ~Blockers() {
        rwlock.unlock();
        mutex.unlock();
        ::close(pipe_fds[0]);
        ::close(pipe_fds[1]);
    }

    Status wait(Wait w) {
        switch (w) {
        case Wait::queue_get: {
            auto r = queue.get();
            return r ? Status() : Status(r.error());
        }
        case Wait::mutex_lock: {
            Status s = mutex.lock();
            if (s) mutex.unlock();
            return s;
        }
        case Wait::condition_wait: {
            condition_mutex.lockUncancelable();
            Status s = condition.wait(condition_mutex);
            condition_mutex.unlock();
            return s;
        }
        case Wait::event_wait: return event.wait();
        case Wait::semaphore_wait: return semaphore.wait();
        case Wait::rwlock_lock: return rwlock.lockShared();
        case Wait::sleep: return loop.sleep(1h);
        case Wait::pipe_read: {
            std::byte b[4];
            auto r = loop.read(File{pipe_fds[0]}, b);
            return r ? Status() : Status(r.error());
        }
        case Wait::select: {
            auto a = loop.async([this] { return loop.sleep(1h); });
            auto s = select(a);
            (void)a.cancel();
            return s ? Status() : Status(s.error());
        }
        case Wait::group_wait: {
            Group group(loop);
            group.async([this] { return loop.sleep(1h); });
            return group.wait();
        }
        }
        return {};
    }

    // A fiber that waits `depth` awaits deep before the wait itself.
    Status nested(Wait w, int depth) {
        if (depth == 0) return wait(w);
        auto inner = loop.async([this, w, depth] { return nested(w, depth - 1); });
        return inner.await();
    }
};

} // namespace

TEST_CASE("a cancel reaching a fiber inside await goes on to the awaited fiber, one and two awaits deep",
          "[cancel][await]") {
    test::Watchdog dog("canceling fibers that await fibers blocked in every kind of wait", 120s);
    for (unsigned threads : {1u, 2u}) {
        auto loop = test::makeLoop(threads);
        for (Wait w : kWaits)
            for (int depth : {1, 2}) {
                INFO(threads << " thread(s), " << name(w) << ", " << depth << " await(s) deep");
                Blockers b(*loop);
                {
                    // Future::cancel of the outer fiber.
                    auto outer = loop->async([&b, w, depth] { return b.nested(w, depth); });
                    (void)loop->sleep(1ms);
                    const Status s = outer.cancel();
                    CHECK(s.error() == Errc::Canceled);
                }
                {
                    // The outer future dropped unawaited: its destructor cancels and joins it.
                    std::atomic<bool> ended{false};
                    {
                        auto outer = loop->async([&b, &ended, w, depth] {
                            Status s = b.nested(w, depth);
                            ended = true;
                            return s;
                        });
                        (void)loop->sleep(1ms);
                    }
                    CHECK(ended);
                }
                {
                    // A group canceled: its members' awaits pass the cancel on.
                    Group group(*loop);
                    group.async([&b, w, depth] { return b.nested(w, depth); });
                    (void)loop->sleep(1ms);
                    CHECK(group.cancel());
                }
            }
    }
}

TEST_CASE("destroying a loop whose detached fiber awaits a blocked fiber ends", "[cancel][await][shutdown]") {
    test::Watchdog dog("destroying loops under detached fibers awaiting blocked ones", 60s);
    for (Wait w : kWaits)
        for (int depth : {1, 2}) {
            INFO(name(w) << ", " << depth << " await(s) deep");
            auto loop = test::makeLoop(2);
            auto b = std::make_unique<Blockers>(*loop);
            std::atomic<bool> ended{false};
            loop->asyncDetached([&b, &ended, w, depth] {
                (void)b->nested(w, depth);
                ended = true;
            });
            (void)loop->sleep(1ms);
            loop.reset(); // cancels and joins the detached fiber
            CHECK(ended);
            // (The blockers' unlocks need a loop thread: the primitives are
            // released with nothing waiting, which works anywhere.)
            b.reset();
        }
}
