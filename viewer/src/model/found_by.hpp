// How a worker found its next fiber: which step of findReadyFiber()
// (runtime/src/scheduler/queue.cpp) and the idle loop gave the fiber a
// switch runs, or which step a thread out of work is at now.
//
// The steps, in the order a thread tries them. The seed: pop its own queue
// word (LIFO), else steal another thread's whole word, else park. The
// scaling policy: its run_next slot, then its own queues (the deque of new
// work, newest first; the ring of yielders, oldest first), then steal from
// another thread, searching for a while, else park. A fiber that was in no
// queue at all was handed over directly: a finishing fiber's switch to its
// awaiter, a mutex unlock yielding to the waiter it handed the lock to.
//
// Read from the records a decision writes and the fiber's lane, never
// guessed: a steal, steal-half or steal-one record naming the fiber just
// before its switch (after the search that found it, if any); an unpark
// since the thread's last run; the fiber's lane Waiting (in no queue) or
// Ready right before it ran; its last schedule record (how=run-next).
#pragma once

#include <cstdint>
#include <optional>

#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::viewer {

using analysis::Timeline;

enum class FindStep : std::uint8_t {
    Direct,    // in no queue: handed over by the fiber that switched to it
    RunNext,   // the thread's run_next slot (scaling)
    OwnQueue,  // the thread's own queue word (seed) or deque and ring (scaling)
    Steal,     // taken from another thread's queue
    Search,    // (a thread out of work, now) searching the others' queues (scaling)
    Park,      // asleep in the kernel; or, for a run, woken from it with the fiber
};
inline constexpr int kFindStepCount = 6;
const char* findStepName(FindStep step) noexcept;

struct FoundBy {
    FindStep step = FindStep::OwnQueue;
    std::uint32_t decision = analysis::kNoEvent; // the switch (a run), or the record that began the state (a search, a park)
    std::uint32_t evidence = analysis::kNoEvent; // the record that says so (the steal, the unpark, the schedule), if any
    std::uint64_t fiber = 0;                     // the fiber run (0: the thread is out of work)
    bool searched = false;                       // a run: a search found it
};

// The last decision of trace thread `thread` at or before `time`: how it
// found the fiber it runs (or ran last), or, out of work, whether it
// searches or is parked now. None before the thread's first switch, and
// while it is out of work but neither searching nor parked.
std::optional<FoundBy> foundBy(const Timeline& timeline, const trace::Trace& trace, std::uint32_t thread, std::int64_t time);

} // namespace fiberscope::viewer
