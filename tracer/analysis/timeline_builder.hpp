// The model's builder: buildTimeline (timeline.cpp) is one pass over the
// trace's events in time order, driving a state machine per thread and per
// fiber (see timeline.hpp for the model). The pass can stop after any record
// and go on when more arrive (TimelineBuilder, for a file followed while it
// is written): what is still open is closed on a copy (Builder::close), and
// the few answers that need later records are checked as those arrive (see
// TimelineBuilder).
//
// Cost: a trace of millions of events makes millions of fibers, so the pass
// does no per-event hashing or allocation in the common case. A look-ahead
// pass over each append's records counts each thread's records by kind, so
// the per-thread and per-kind lists are allocated once at their final size
// when the trace arrives whole (and grow geometrically when it arrives in
// pieces); fiber ids (dense from 1 in the runtime's traces) index a vector;
// a fiber's short lists (flows waiting for its next switch-in, its in-flight
// operations) live in shared pools (replay_lists.hpp); and the final
// ordering of fibers by id is read off that vector rather than sorted
// (Builder::fiberOrder).
//
// Where its parts are:
//   timeline_builder.hpp  the Builder and the state it keeps per thread and per fiber (this file)
//   timeline_replay.cpp   what each record does to that state (Builder::event): the replay's
//                         rules, to read beside the validator's (validate.cpp)
//   timeline_close.cpp    Builder::close: what is still open ends, lanes and fibers go in order,
//                         the model is indexed and packed
//   replay_lists.hpp      the lists the state keeps (ListPool, PendingReady, ConditionWaiters)
//   permute.hpp           reordering the long lists at close
//   read_back.hpp         what the model reads back rather than keeps
// Private to the analysis library (not under include/): nothing here is
// part of timeline.hpp's interface.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <optional>
#include <vector>

#include "fiberscope/analysis/timeline.hpp"
#include "fiberscope/analysis/wakeup_pairing.hpp"
#include "replay_lists.hpp"

namespace fiberscope::analysis::detail {

inline constexpr std::uint32_t kNoItem = UINT32_MAX;
inline constexpr std::uint32_t kNoFiber = UINT32_MAX;

struct FiberBuild {
    Interval open;
    bool has_open = false;
    bool finished = false;
    std::uint8_t last_opcode = 0;
    std::int64_t ready_since = -1;      // start of the current ready episode, -1 if not ready
    std::uint32_t last_switch_in = kNoEvent; // the last switch to it
    std::uint32_t ready_item = kNoItem; // its open Queued item
    ListPool<std::uint32_t>::List ops;  // its open InFlight items (Builder::ops_)
    ListPool<Flow>::List pending;       // flows that end at its next switch-in (Builder::pending_)
    // (Its open zones are in Builder::zone_stacks_: few fibers have any. Its
    // finishing switch is its open interval once finished: finishEnd.)
    std::uint64_t name_id = 0;          // the string that names it (resolved when the model is closed)
};

struct ThreadBuild {
    Interval open;
    bool has_open = false;
    bool started = false;
    bool alive = false;         // between its first record (or a thread-start) and a thread-stop
    std::int64_t alive_since = 0;
    bool initial_known = false;
    std::uint64_t initial = 0;  // the fiber running before its first switch
    std::uint64_t running = 0;
    std::uint32_t slot = 0;     // its ready-queue slot
    PendingReady pending_ready;               // became ready here, not yet scheduled or run
    std::uint64_t handoff_head = 0;           // the last idle hand-off it made
    std::int64_t handoff_time = INT64_MIN;
    std::optional<std::int64_t> started_at;   // its latest thread-start (wake-ups sent after it were delivered)
    std::vector<std::uint32_t> zone_stack;    // zones of its idle loop
    std::uint32_t last_event = kNoEvent;      // its latest record so far
};

struct Slot {
    std::vector<std::uint32_t> items; // Queued items, open or closed (compacted now and then)
    std::uint32_t open = 0;
};

// A cancel of one fiber on its way: requested (by whom, where), then
// delivered (the target's ring or mailbox saw it), then done (the canceled
// operation's completion, or the canceled wait's resume).
struct CancelState {
    FlowEnd request;
    FlowEnd delivery;
    bool requested = false;
    bool delivered = false;
};

// Wake-ups paired as the state panel pairs them (wakeup_pairing.hpp): a
// send waits as a Flow whose `to.fiber` holds the head it handed over; an
// answer is where the arrow ends (a bounce ends it without an arrow).
struct WakeupAnswer {
    FlowEnd to;
    bool received = true; // false: bounced
};
using WakeupPairs = WakeupPairing<Flow, WakeupAnswer>;

class Builder {
public:
    // Reads trace.events[appended(), end). False if what arrived changes the
    // meaning of records already read (see TimelineBuilder): the caller starts over.
    bool append(const trace::Trace& trace);
    // A first append of records not yet in trace.events: each thread's in
    // time order, as the reader decoded them, read in the order mergeByTime
    // gives them (the order and indices trace.events will have). False if
    // this is not a first append or what they say makes it start over.
    bool appendStreams(const trace::Trace& trace, const std::vector<std::vector<trace::Event>>& per_thread);
    std::size_t appended() const noexcept { return done_; }

    // Ends the model of what was appended in `out` (a copy of the model so
    // far, or the model itself when the build ends): what is still open
    // closes at the trace's end, lanes go in worker order, fibers in id order.
    // Closes `out`, a copy of the model (snapshot) or the model itself
    // (finish: `scratch` is this builder, whose scratch it frees, after the
    // last read of it, while it does the rest).
    void close(Timeline& out, const trace::Trace& trace, Builder* scratch = nullptr) const;
    const Timeline& model() const noexcept { return tl_; }
    Timeline& model() noexcept { return tl_; }
    // Frees the scratch the build keeps beside the model (close, at finish).
    void release() {
        fb_ = {};
        dense_ = {};
        sparse_ = {};
    }

private:
    using KindCounts = std::array<std::size_t, trace::kMaxEventKind + 1>;

    Timeline tl_;
    std::size_t done_ = 0;        // records appended
    std::vector<ThreadBuild> tb_; // by trace thread index (the lanes go in worker order when closed)
    std::vector<FiberBuild> fb_;  // parallel to tl_.fibers until the final ordering by id
    std::vector<Slot> slots_;
    ListPool<std::uint32_t> ops_;
    ListPool<Flow> pending_;
    std::vector<std::uint32_t> dense_;                        // fiber id -> index in fb_ (kNoFiber: none yet)
    std::uint64_t dense_limit_ = 0;                           // ids from here on go to sparse_
    std::unordered_map<std::uint64_t, std::uint32_t> sparse_; // fiber id -> index in fb_, for large ids
    std::vector<std::uint64_t> members_;                      // scratch: the fibers a schedule record placed
    std::vector<std::uint64_t> woken_;                        // scratch: the fibers a condition wake woke
    std::unordered_map<std::int64_t, std::uint32_t> lane_of_worker_; // worker -> its (lowest-numbered) thread
    std::unordered_set<std::int64_t> missed_workers_;         // workers looked up before any thread had them
    std::unordered_map<std::uint64_t, ConditionWaiters> condition_waiters_;
    std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> awaiters_;
    std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> zone_stacks_; // fiber index -> its open zones (indices into its lane's zones)
    WakeupPairs wakeups_;
    bool before_v7_ = false; // a file older than version 7: schedule records may follow their effect, a broadcast's record wakes them all
    std::unordered_map<std::uint64_t, CancelState> cancels_; // fibers with a cancel requested or delivered, not yet done
    std::unordered_map<std::uint32_t, std::uint32_t> early_completions_; // fiber index -> the lane that schedules it
    struct ObjectNameRecord {
        std::uint64_t object = 0;
        std::int64_t time = 0;
        std::uint64_t name = 0; // string id
    };
    std::vector<ObjectNameRecord> object_names_; // object-name records, in trace order

    // What each record does to the state above: timeline_replay.cpp, where
    // each function says what it does.

    // --- Threads as they appear ----------------------------------------------
    void ensureThreads(std::size_t count);
    bool learnWorker(std::uint32_t t, std::int64_t w);
    bool refreshThreads(const trace::Trace& trace);

    // --- Look-ahead -----------------------------------------------------------
    bool lookAhead(const trace::EventList& events, std::size_t from, std::size_t to);
    bool lookAheadStreams(const std::vector<std::vector<trace::Event>>& per_thread, std::size_t total);
    template <class Records>
    bool scan(const Records& records, std::size_t from, std::size_t to, std::vector<KindCounts>& kinds, std::size_t& switch_ins);
    template <class List>
    static void reserveMore(List& v, std::size_t more);
    void reserveLists(const std::vector<KindCounts>& kinds, std::size_t switch_ins, std::size_t events_added);
    void raiseDenseLimit(std::size_t events);
    std::int64_t laneOfWorker(std::uint64_t worker);
    std::uint32_t threadOfLane(std::uint32_t lane) const;

    // --- Fibers -------------------------------------------------------------
    std::uint32_t fiberIndex(std::uint64_t id, bool* created = nullptr);
    void setFiber(std::uint32_t f, std::int64_t t, State s, std::int32_t thread, WaitReason r, std::uint32_t cause);
    void endFiberLane(std::uint32_t f, std::int64_t t);
    FlowEnd finishEnd(std::uint32_t f) const;
    bool makeReady(std::uint32_t f, std::int64_t t, std::int32_t thread, std::uint32_t cause);
    void finishFiber(std::uint32_t f, std::int64_t t, std::uint32_t thread, std::uint32_t event);

    // --- Ready-queue items ----------------------------------------------------
    std::uint32_t newItem(const StateItem& item);
    StateItem endItem(std::uint32_t id, std::int64_t t);
    FlowEnd stolenFrom(std::uint64_t fiber, std::int64_t victim, std::int64_t t, std::uint32_t here);
    void openQueued(std::uint32_t f, std::uint32_t slot, std::int64_t t, std::uint32_t event);
    void closeQueued(std::uint32_t f, std::int64_t t);
    std::uint32_t slotOwner(std::uint32_t slot) const;
    void stealWord(std::uint32_t thief, std::uint32_t victim, std::uint64_t head, std::int64_t t);
    void stealQueue(std::uint32_t thief, std::uint32_t victim, std::int64_t t);
    const std::vector<std::uint64_t>& members(std::uint32_t lane, std::uint64_t head, std::uint64_t count);

    // --- Threads ---------------------------------------------------------------
    void setThread(std::uint32_t lane, std::int64_t t, State s, std::uint64_t fiber, std::uint32_t cause);
    void startThread(std::uint32_t lane, std::int64_t t);
    void stopThread(std::uint32_t lane, std::int64_t t);
    void restartThread(std::uint32_t lane, std::int64_t t, std::uint32_t cause);

    // --- Events ------------------------------------------------------------------
    void event(const trace::Event& e, std::uint32_t i);
    void addInstant(const trace::Event& e, std::uint32_t i, ThreadLane& tl, const ThreadBuild& tb);
    void onSwitch(const trace::Event& e, std::uint32_t i, std::uint32_t lane);

    // --- Closing (timeline_close.cpp) -------------------------------------------
    std::vector<std::uint32_t> fiberOrder() const;
};

} // namespace fiberscope::analysis::detail
