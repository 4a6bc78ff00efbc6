// The state of the runtime's objects at an instant: who holds each mutex and
// who waits for it, who waits on each condition, each Queue's depth and its
// blocked producers and consumers, each Semaphore's and RwLock's holders and
// waiters, each Event's state and waiters, the wake-ups and cancels sent but
// not yet arrived, and the timers in flight with the time they fire.
//
// A Queue, a Semaphore, an RwLock or an Event is built on a Mutex and
// Conditions, whose records stay in the trace (they schedule the fibers).
// It appears as itself: a fiber between its blocked record and its put,
// get, take, lock, return or gave-up (or a cancel, time-out or finish) is
// inside the primitive, and the mutex and conditions it meets there are the
// primitive's parts, shown as the primitive rather than beside it.
//
// Design: these objects live only in the records that name them (mutex-
// contended/handoff, condition-wait/wake, queue, semaphore, rwlock, event,
// cancel-request/delivered, wakeup-sent/received, timeout submits and
// completes), a small share of a trace. buildObjectIndex keeps the indices of
// just those records, and a full snapshot of the replayed state every
// max(`every`, snapshot size) of them, so snapshots cost O(records) in total.
// objectStateAt binary searches the last snapshot at or before the time,
// copies it and replays at most `every` + snapshot-size records: a hover
// frame on a big trace stays cheap. The caller builds the index once per
// Timeline and keeps it.
//
// What the trace does not record, the index reads from the future, once:
//   * an uncontended lock or unlock writes nothing, so who holds a mutex that
//     a fiber found locked is known only from the next hand-off (its `from`
//     held it all along, since an unlock with waiters always hands off);
//   * a timer's deadline is not recorded, but one that completed with -ETIME
//     fired at its completion; one canceled or still pending at the end has
//     no known deadline.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "fiberscope/analysis/fiber_list.hpp"
#include "fiberscope/analysis/state_at.hpp"
#include "fiberscope/analysis/timeline.hpp"
#include "fiberscope/analysis/wakeup_pairing.hpp"
#include "fiberscope/trace_reader.hpp"

namespace fiberscope::analysis {

struct MutexState {
    std::uint64_t mutex = 0;   // its address
    std::uint64_t owner = 0;   // 0: unknown (locked without a record)
    std::int64_t owner_since = -1; // the hand-off that gave it to `owner`, -1: it held it before the waiters came
    // The fibers waiting, the next to get it first (unlock hands the mutex
    // to the most recent waiter: a stack).
    std::vector<std::uint64_t> waiters;
};

struct ConditionState {
    std::uint64_t condition = 0;
    std::vector<std::uint64_t> waiters; // by when they began to wait
};

struct QueueState {
    std::uint64_t queue = 0;
    std::int64_t depth = 0;            // items in it (puts - gets since the recording began, at least 0)
    bool closed = false;
    std::vector<std::uint64_t> producers; // blocked because it was full (put-blocked, no put yet)
    std::vector<std::uint64_t> consumers; // blocked because it was empty
    // Producers or consumers a signal woke, not yet back: they put or get
    // next, or wait again (a condition-wait blocks them again).
    std::vector<std::uint64_t> woken;
};

struct SemaphoreState {
    std::uint64_t semaphore = 0;
    // Permits taken and posted since the recording began (the count it was
    // made with is not recorded: the count now is that + posted - taken).
    std::uint64_t taken = 0, posted = 0;
    std::vector<std::uint64_t> waiters; // blocked, by when they began to wait
};

struct RwLockState {
    std::uint64_t rwlock = 0;
    std::uint64_t writer = 0;          // the fiber holding it exclusively, 0: none known
    std::int64_t writer_since = -1;
    std::vector<std::uint64_t> readers; // holding it shared, by when they took it
    std::vector<std::uint64_t> waiting_writers, waiting_readers; // by when they began to wait
};

// A fiberscope::Event (the primitive; trace::Event is a record).
struct SyncEventState {
    std::uint64_t event = 0;
    // 1 set, 0 clear, -1 not known yet (its state before its first set or
    // reset record is not recorded).
    int set = -1;
    std::vector<std::uint64_t> waiters; // blocked, by when they began to wait
};

struct PendingWakeup {
    std::uint32_t thread = 0;   // the sending trace thread
    std::int64_t target = -1;   // the worker woken
    std::int64_t sent = 0;
    std::uint32_t event = kNoEvent;
};

struct PendingCancel {
    std::uint64_t fiber = 0;    // the fiber to cancel
    std::uint32_t thread = 0;   // where it was requested
    std::int64_t requested = 0;
    std::uint32_t event = kNoEvent;
};

struct TimerState {
    std::uint64_t fiber = 0;
    std::uint32_t thread = 0;   // whose ring (or epoll) holds it
    std::int64_t since = 0;
    std::int64_t fires = -1;    // when it fired (a -ETIME completion); -1: canceled or still pending at the end
    std::uint32_t event = kNoEvent; // the submit
};

struct ObjectState {
    std::int64_t time = 0;
    // By address; only those waited for or handed over so far, and not
    // known to be a Queue's, a Semaphore's, an RwLock's or an Event's part.
    std::vector<MutexState> mutexes;
    std::vector<ConditionState> conditions; // by address; only those with waiters (and not a part)
    std::vector<QueueState> queues;        // by address; every queue seen so far
    std::vector<SemaphoreState> semaphores; // by address; every one seen so far
    std::vector<RwLockState> rwlocks;       // by address; every one seen so far
    std::vector<SyncEventState> events;     // by address; every one seen so far
    std::vector<PendingWakeup> wakeups;    // by sent
    std::vector<PendingCancel> cancels;    // by requested
    std::vector<TimerState> timers;        // by since
};

// The replay's working state (kept in snapshots). A record changes it in
// O(log n) amortized, whatever the trace (a broadcast, a close or a finish
// visits each entry it removes, which its join paid for): a fiber leaves a
// list in O(1) on average, however long (fiber_list.hpp), a wake does not
// visit every queue its fiber waits in (a queue's woken are worked out when
// asked, from `wakes`), and size() is kept as the state changes rather than
// counted, since buildObjectIndex asks it after every record. A copy costs
// O(size()). (Issue 35: 100,000 fibers blocked on one Queue took minutes.)
struct ObjectReplay {
    struct Mutex {
        std::uint64_t owner = 0;
        std::int64_t owner_since = -1;
        FiberList waiters; // oldest first
    };
    struct Queue {
        std::int64_t depth = 0;
        bool closed = false;
        FiberList producers, consumers;
        // Each fiber in producers or consumers (exactly those) -> the `clock`
        // of its last record on this queue. It was woken since (a signal let
        // it retry; it puts, gets or waits again next) if its entry in
        // `wakes` is a wake with a later clock.
        std::map<std::uint64_t, std::uint64_t> since;
    };
    // A fiber's last condition record that concerns a Queue blocked in it:
    // woken (a wake) or not (a wait), at `clock`.
    struct Wake {
        bool woken = false;
        std::uint64_t at = 0;
    };
    struct Semaphore {
        std::uint64_t taken = 0, posted = 0;
        FiberList waiters;
    };
    struct RwLock {
        std::uint64_t writer = 0;
        std::int64_t writer_since = -1;
        FiberList readers, waiting_writers, waiting_readers;
    };
    std::map<std::uint64_t, Mutex> mutexes;
    std::map<std::uint64_t, FiberList> conditions;
    std::map<std::uint64_t, Queue> queues;
    std::map<std::uint64_t, Semaphore> semaphores;
    std::map<std::uint64_t, RwLock> rwlocks;
    struct SyncEvent {
        int set = -1;
        FiberList waiters;
    };
    std::map<std::uint64_t, SyncEvent> events;
    // Fiber -> the Queue, Semaphore, RwLock or Event it waits in (from its blocked
    // record to its put, get, take, lock or gave-up), and an inner mutex or
    // condition -> the primitive it is part of (learned from a fiber inside it).
    std::map<std::uint64_t, std::uint64_t> inside;
    std::map<std::uint64_t, std::uint64_t> part_of;
    // Wake-ups sent and not yet answered (received or bounced), paired as
    // the model pairs its flows (wakeup_pairing.hpp).
    struct NoAnswer {};
    WakeupPairing<PendingWakeup, NoAnswer> wakeups;
    std::map<std::int64_t, std::int64_t> started; // worker -> its latest thread-start (the pairing's preference)
    std::map<std::uint64_t, PendingCancel> cancels; // by fiber
    std::map<std::uint64_t, TimerState> timers;     // by `clock` at the submit: by since
    std::set<std::pair<std::uint64_t, std::uint64_t>> timer_of; // (fiber, its timers' keys): its oldest first
    // (fiber, object): the objects whose lists each fiber may be in (a
    // superset), so that a cancel, a time-out or a finish touches those,
    // not every object.
    std::set<std::pair<std::uint64_t, std::uint64_t>> waits;
    std::map<std::uint64_t, Wake> wakes; // only fibers in `waits`
    std::uint64_t clock = 0;  // counts the changes that need an order (the `since`s, wakes, timers)
    std::size_t listed = 0;   // entries in every FiberList and every Queue::since
    // Entries kept, in O(1): what a snapshot of it costs.
    std::size_t size() const noexcept;
    // The same, counted entry by entry (tests check that size() is kept right).
    std::size_t recount() const;
};

struct ObjectSnapshot {
    std::int64_t time = 0;      // the first record after it is at this time or later
    std::size_t next = 0;       // records [next, ...) are not in it
    ObjectReplay state;
};

struct ObjectIndex {
    std::vector<std::uint32_t> records;   // trace.events indices of the records that change an object, by time
    std::vector<std::int64_t> worker_of;  // trace thread number -> worker (-1 unknown)
    // contended record (event index) -> the fiber holding the mutex then (the next hand-off's `from`)
    std::unordered_map<std::uint32_t, std::uint64_t> holder_at;
    std::unordered_map<std::uint32_t, std::int64_t> fires_at; // timeout submit (event index) -> its -ETIME completion's time
    std::vector<ObjectSnapshot> snapshots; // by time; snapshots[0] is the empty state
    std::size_t events_indexed = 0;       // trace.events.size() when built (a grown live trace needs a new index)
    bool broadcast_wakes_all = false;     // a file before version 7: a broadcast's one record woke every waiter
};

ObjectIndex buildObjectIndex(const trace::Trace& trace, const Timeline& timeline, std::size_t every = 2048);
ObjectState objectStateAt(const trace::Trace& trace, const ObjectIndex& index, std::int64_t time);
// Builds the index and asks it once (tests, one-off tools; a viewer keeps the index).
ObjectState objectStateAt(const trace::Trace& trace, const Timeline& timeline, std::int64_t time);

// Where in `ready` (stateAt's, by since) the fiber that runs next is: the
// ready queue is a LIFO stack, so the newest entry, and among those queued
// by one schedule record, the one it names as the head. kNone if empty.
std::size_t readyHead(const trace::Trace& trace, const std::vector<ReadyEntry>& ready) noexcept;

} // namespace fiberscope::analysis
