// Fault injection for the tests: preemption where it hurts.
//
// A lost wake-up hides in a window a few instructions wide that only a
// preemption at exactly the wrong instruction opens (a worker parking just
// as work is queued for it, a signal between an unlink and a schedule).
// On a loaded laptop, or under qemu, such windows open now and then; a test
// on a quiet machine may never see one. With FIBERSCOPE_TEST_JITTER=P in
// the environment (read when a loop is created; P per mille, 1 to 1000),
// every jitter point below stalls its thread with probability P/1000: a
// yield of the OS thread, or now and then a sleep of up to 50 us, as a
// preemption would. The random-program oracle (tests/random) turns it on
// for some of its seeds. Off (the default, and every real use), a point
// costs a relaxed load and a predictable branch.
//
// A loop's growth is delayed too (jitterSkipsGrowth, below).
//
// The points: where a thread decides to park, publishes itself idle, or
// looks at the others' queues (search.cpp, worker.cpp); between a CAS's
// look and the CAS (hand-offs, steals: schedule.cpp, queue.cpp); between a
// primitive's unlink and the schedule that publishes the fiber (mutex,
// condition); before a switch's pending task (switch_message.cpp).
#pragma once

#include <atomic>

namespace fiberscope::detail {

// Per mille: how often a jitter point stalls (0: never).
extern std::atomic<unsigned> g_test_jitter;
// Reads FIBERSCOPE_TEST_JITTER (EventLoop::create).
void readTestJitter() noexcept;
// The stall itself (fault_injection.cpp).
void jitterSlow(unsigned per_mille) noexcept;
bool jitterSkipsGrowthSlow() noexcept;

// With jitter on, three chances in four to start a worker are passed up,
// as a thread that is slow to start (under qemu, or on a loaded machine)
// would pass them: workers then start late, after their fibers have been
// through queues and waiter lists, which is where a worker's first work
// can carry what it should not (issue 35: a stale queue link). Off, a
// relaxed load and a branch.
inline bool jitterSkipsGrowth() noexcept {
    // relaxed: a test knob, as in jitter().
    return g_test_jitter.load(std::memory_order_relaxed) != 0 && jitterSkipsGrowthSlow();
}

inline void jitter() noexcept {
    // relaxed: a test knob, set before any loop runs.
    if (const unsigned p = g_test_jitter.load(std::memory_order_relaxed)) [[unlikely]]
        jitterSlow(p);
}

} // namespace fiberscope::detail
