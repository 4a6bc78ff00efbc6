// The scheduler's state at an instant: what each thread runs, its ready
// queue, its in-flight ring operations, who is parked.
//
// Design: buildTimeline turns every stay of a fiber in a ready queue and every
// in-flight ring operation into an item with a [start, end) (timeline.hpp,
// ReplayIndex). buildReplayIndex sweeps the items by start and stores a
// checkpoint (the items open at that moment) every max(4096, open items)
// items, so checkpoints cost O(items) memory in total. stateAt binary searches
// the last checkpoint at or before the time, takes its open items plus the
// items started since, and keeps those still open: O(log n + K + answer). The
// running fiber / idle / parked state of each thread is a binary search in its
// lane. Times resolve to the state after every event at that time.
#pragma once

#include <cstdint>
#include <vector>

#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::analysis {

struct ReadyEntry {
    std::uint64_t fiber = 0;
    std::int64_t since = 0;         // when it was queued there
    std::uint32_t event = kNoEvent; // the schedule that queued it
};

struct InFlightOp {
    std::uint64_t fiber = 0;
    std::uint8_t opcode = 0; // IORING_OP_*
    std::int32_t fd = 0;
    std::int64_t since = 0;
    std::uint32_t event = kNoEvent; // the submit
};

struct ThreadState {
    std::uint32_t thread = 0; // trace thread number
    std::int64_t worker = -1;
    bool alive = false;        // from its first record to its thread-stop (or the trace's end: ThreadLane::alive_end)
    State state = State::Idle; // Running, Idle or Parked
    std::uint64_t running = 0; // the fiber running (State::Running)
    std::vector<ReadyEntry> ready;      // its ready queue, by `since`
    std::vector<InFlightOp> in_flight;  // operations in its ring, by `since`
};

struct SchedulerState {
    std::int64_t time = 0;
    std::vector<ThreadState> threads;    // in lane order (timeline.threads)
    std::vector<std::uint32_t> parked;   // trace thread numbers of the parked threads
};

SchedulerState stateAt(const Timeline& timeline, std::int64_t time);

// A fiber's stay in one thread's ready queue: the model's Queued item, cut
// where a steal moved its queue (its slot) to another thread, so the
// timeline can draw each queue's fibers under its thread's lane.
struct QueueStay {
    std::uint64_t fiber = 0;
    std::int64_t start = 0;         // queued here (or moved here by a steal)
    std::int64_t end = kOpenEnd;    // taken (run, or moved on by a steal); kOpenEnd: still there at the trace's end
    std::uint32_t lane = 0;         // index in timeline.threads
    std::uint32_t event = kNoEvent; // the schedule that queued it (on the first thread it waited on)
    bool moved_in = false;          // `start` is a steal of the queue it was in
    bool moved_out = false;         // `end` is a steal of this queue
};

// Every stay that overlaps [from, to), by lane, then start. Returns false
// (and `out` empty) if more than `limit` queue items overlap the window: a
// view that wide is drawn as the ready counts instead. O(log n + K + answer),
// as stateAt.
bool queueStaysIn(const Timeline& timeline, std::int64_t from, std::int64_t to, std::size_t limit,
                  std::vector<QueueStay>& out);

// Builds timeline.replay.checkpoints from timeline.replay.items (buildTimeline calls it).
void buildReplayIndex(Timeline& timeline, std::size_t checkpoint_every = 4096);

} // namespace fiberscope::analysis
