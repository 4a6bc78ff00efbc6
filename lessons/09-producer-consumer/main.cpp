// Lesson 9: producer and consumers, with Condition and Queue.
//
// Two "consumer" fibers first wait at a gate (a Mutex + Condition + flag)
// until the main fiber opens it with broadcast(). Then they take items from
// a bounded Queue that a "producer" fills faster than they can empty it:
// consumers block on an empty queue, the producer blocks on a full one.
// Finally close() wakes everybody and the consumers drain and stop.
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

constexpr const char* kName = "lesson09-producer-consumer";
constexpr int kConsumers = 2;
constexpr int kItems = 40;
constexpr std::size_t kCapacity = 4;

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 2);
    fiberscope::EventLoop& loop = *loop_owner;

    // The gate: a flag guarded by a fiber Mutex, and a Condition to wait on.
    fiberscope::Mutex gate_mutex;
    fiberscope::Condition gate;
    bool open = false; // guarded by gate_mutex
    int at_gate = 0;   // guarded by gate_mutex

    fiberscope::Queue<int> queue(kCapacity);
    std::atomic<int> consumed{0};
    std::atomic<long> sum{0};

    std::vector<fiberscope::Future<int>> consumers;
    for (int c = 0; c < kConsumers; ++c)
        consumers.push_back(loop.async([&, c] {
            fiberscope::setFiberName("consumer " + std::to_string(c));
            {
                if (!gate_mutex.lock()) return 0; // a cancel point while it waits
                std::unique_lock lock(gate_mutex, std::adopt_lock);
                ++at_gate;
                // wait() releases the mutex while suspended and relocks it;
                // always re-check the predicate.
                while (!open)
                    if (!gate.wait(lock)) return 0;
            }
            int taken = 0;
            for (;;) {
                auto item = queue.get(); // suspends while the queue is empty
                if (!item) break;        // Closed, and nothing left
                (void)loop.sleep(1ms);   // "processing": slower than the producer
                sum += *item;
                ++taken;
                ++consumed;
            }
            return taken;
        }));

    // Open the gate once both consumers wait at it. (Holding gate_mutex and
    // seeing at_gate == kConsumers means both are queued on the condition.)
    for (;;) {
        gate_mutex.lockUncancelable(); // nobody cancels the main fiber
        std::unique_lock lock(gate_mutex, std::adopt_lock);
        if (at_gate == kConsumers) {
            open = true;
            fiberscope::trace::mark("checkpoint: gate opens");
            gate.broadcast();
            break;
        }
        lock.unlock();
        (void)loop.sleep(1ms);
    }
    std::printf("Both consumers waited at the gate; broadcast() let them through.\n");

    // Give the consumers time to find the queue empty and block in get().
    (void)loop.sleep(5ms);
    fiberscope::trace::mark("checkpoint: producer starts");
    auto producer = loop.async([&] {
        fiberscope::setFiberName("producer");
        for (int i = 1; i <= kItems; ++i)
            if (!queue.put(i)) return false; // suspends while the queue is full
        return true;
    });
    const bool produced = producer.await();

    // Let the consumers drain the queue and block on it, empty, then close it.
    while (consumed < kItems) (void)loop.sleep(1ms);
    (void)loop.sleep(5ms);
    fiberscope::trace::mark("checkpoint: queue closed");
    queue.close();

    int total = 0;
    for (int c = 0; c < kConsumers; ++c) {
        const int taken = consumers[c].await();
        std::printf("  consumer %d took %d items\n", c, taken);
        total += taken;
    }
    std::printf("The producer put %d items through a queue of capacity %zu; consumers took %d (sum %ld).\n",
                kItems, kCapacity, total, sum.load());
    return produced && total == kItems && sum == kItems * (kItems + 1) / 2 ? 0 : 1;
}
