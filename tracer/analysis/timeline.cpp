// buildTimeline: one pass over the trace's events in time order, driving a
// state machine per thread and per fiber (see timeline.hpp for the model).
// The pass can stop after any record and go on when more arrive
// (TimelineBuilder, for a file followed while it is written): what is still
// open is closed on a copy (Builder::close), and the few answers that need
// later records are checked as those arrive (see TimelineBuilder).
//
// Since format version 7 every record is stamped before its effect could be
// seen by another thread (FORMAT.md "Validation rules"), so the time order
// is causal order, to within the CPUs' clock skew (a few hundred ns). Files
// of version 6 and older were not: schedule() wrote its record after the
// hand-off CAS or after starting the new worker, so the other thread may
// already have run the fiber; for them a schedule record naming a fiber that
// was switched to after the scheduling thread's previous record is late and
// changes nothing. "Became ready" is ignored for a running fiber (but for a
// blocking-pool completion, which makes it ready once it switches away), and
// wake-up sends and answers pair as wakeup_pairing.hpp says.
//
// Cost: a trace of millions of events makes millions of fibers, so the pass
// does no per-event hashing or allocation in the common case. A look-ahead
// pass over each append's records counts each thread's records by kind, so
// the per-thread and per-kind lists are allocated once at their final size
// when the trace arrives whole (and grow geometrically when it arrives in
// pieces); fiber ids (dense from 1 in the
// runtime's traces) index a vector; a fiber's short lists (flows waiting for
// its next switch-in, its in-flight operations) live in shared pools; and the
// final ordering of fibers by id is read off that vector rather than sorted.
#include "fiberscope/analysis/timeline.hpp"
#include "fiberscope/analysis/wakeup_pairing.hpp"
#include "fiberscope/trace_merge.hpp"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <new>
#include <deque>
#include <future>
#include <list>
#include <system_error>
#include <unordered_set>
#include <unordered_map>

#include "fiberscope/analysis/lod.hpp"
#include "fiberscope/analysis/state_at.hpp"
#include "fiberscope/trace_vocabulary.hpp"

namespace fiberscope::analysis {

namespace {

using trace::Event;
using trace::EventKind;
using trace::ScheduleHow;
using trace::SwitchReason;

constexpr std::uint32_t kNoItem = UINT32_MAX;
constexpr std::uint32_t kNoFiber = UINT32_MAX;
constexpr std::uint32_t kNil = UINT32_MAX;

// The first fiber field of a record (create: the fiber; switch: from; group
// and queue: their fiber field) into `fiber`; false if it has none. The
// record table says which fields are fibers (trace_records.hpp).
bool firstFiber(const Event& e, std::uint64_t& fiber) noexcept { return trace::firstField(e, trace::FieldType::Fiber, fiber); }

// Short FIFO lists, one per fiber, as singly linked nodes in one shared pool
// (freed nodes are reused): most fibers hold zero or one entry at a time, and
// a vector per fiber would cost an allocation per fiber.
template <class T>
class ListPool {
public:
    struct List {
        std::uint32_t head = kNil;
        std::uint32_t tail = kNil;
        bool empty() const noexcept { return head == kNil; }
    };

    void pushBack(List& list, const T& value) {
        std::uint32_t n = free_;
        if (n != kNil) {
            free_ = nodes_[n].next;
            nodes_[n] = Node{value, kNil};
        } else {
            n = static_cast<std::uint32_t>(nodes_.size());
            nodes_.push_back(Node{value, kNil});
        }
        if (list.tail == kNil) list.head = n;
        else nodes_[list.tail].next = n;
        list.tail = n;
    }
    // Calls f(value) for each entry, in order.
    template <class F>
    void forEach(const List& list, F&& f) {
        for (std::uint32_t n = list.head; n != kNil; n = nodes_[n].next) f(nodes_[n].value);
    }
    // Removes and returns the first of the oldest kMatchWindow entries that
    // satisfies `pred`, else the first entry; false if the list is empty. The
    // window keeps each call O(1): a real fiber has one or two operations in
    // flight, and a crafted trace with thousands must not make loading quadratic.
    static constexpr int kMatchWindow = 8;
    template <class Pred>
    bool takeMatchOrFirst(List& list, Pred&& pred, T& out) {
        if (list.empty()) return false;
        std::uint32_t prev = kNil, n = list.head;
        for (int looked = 0; n != kNil && !pred(nodes_[n].value); ++looked) {
            if (looked + 1 == kMatchWindow) {
                n = kNil;
                break;
            }
            prev = n, n = nodes_[n].next;
        }
        if (n == kNil) prev = kNil, n = list.head;
        out = nodes_[n].value;
        const std::uint32_t next = nodes_[n].next;
        if (prev == kNil) list.head = next;
        else nodes_[prev].next = next;
        if (list.tail == n) list.tail = prev;
        nodes_[n].next = free_;
        free_ = n;
        return true;
    }
    void clear(List& list) {
        if (list.empty()) return;
        nodes_[list.tail].next = free_;
        free_ = list.head;
        list = List{};
    }

private:
    struct Node {
        T value;
        std::uint32_t next = kNil;
    };
    std::vector<Node> nodes_;
    std::uint32_t free_ = kNil;
};

// The fibers that became ready on one thread and are not yet accounted for
// by a schedule record, in order. A schedule record names its first fiber
// and a count: take() finds that fiber through a map and removes it and the
// ones after it, leaving holes that compact() squeezes out once they
// outnumber the live entries; so every call is amortized O(1 + taken), however
// long the list grows between parks (a thread that never parks).
class PendingReady {
public:
    // It runs without a schedule record having taken it (the idle loop's
    // first completion, a hand-off): no longer pending.
    void erase(std::uint64_t fiber) {
        auto it = position_.find(fiber);
        if (it == position_.end()) return;
        entries_[it->second] = kHole;
        ++holes_;
        position_.erase(it);
        if (holes_ > 32 && holes_ > entries_.size() / 2) compact();
    }
    void push(std::uint64_t fiber) {
        // Pending already (made ready before, and run or moved without a
        // schedule record taking it: the idle loop's first completion, a
        // hand-off): it is pending from now on, after the others, as a
        // schedule record's list will have it.
        auto [it, added] = position_.try_emplace(fiber, entries_.size());
        if (!added) {
            entries_[it->second] = kHole;
            ++holes_;
            it->second = entries_.size();
        }
        entries_.push_back(fiber);
    }
    // Appends to `out` the fiber `head` and up to `count - 1` pending after it,
    // removing them; false (nothing appended) if `head` is not pending.
    bool take(std::uint64_t head, std::uint64_t count, std::vector<std::uint64_t>& out) {
        auto it = position_.find(head);
        if (it == position_.end()) return false;
        std::size_t at = it->second;
        for (std::uint64_t taken = 0; at < entries_.size() && taken < std::max<std::uint64_t>(count, 1); ++at) {
            const std::uint64_t fiber = entries_[at];
            if (fiber == kHole) continue;
            out.push_back(fiber);
            position_.erase(fiber);
            entries_[at] = kHole;
            ++holes_;
            ++taken;
        }
        if (holes_ > 32 && holes_ > entries_.size() / 2) compact();
        return true;
    }
    void clear() {
        entries_.clear();
        position_.clear();
        holes_ = 0;
    }

private:
    static constexpr std::uint64_t kHole = UINT64_MAX;
    void compact() {
        std::size_t kept = 0;
        for (const std::uint64_t fiber : entries_) {
            if (fiber == kHole) continue;
            position_[fiber] = kept;
            entries_[kept++] = fiber;
        }
        entries_.resize(kept);
        holes_ = 0;
    }
    std::vector<std::uint64_t> entries_;                        // kHole where taken
    std::unordered_map<std::uint64_t, std::size_t> position_;   // pending fiber -> index
    std::size_t holes_ = 0;
};

// The fibers waiting on one condition, in order of waiting. Finding the one a
// wake names is a map look-up, not a scan, so N waiters woken newest-first
// cost O(N) in all.
class ConditionWaiters {
public:
    void add(std::uint64_t fiber) {
        if (where_.count(fiber)) return; // already waiting
        order_.push_back(fiber);
        where_.emplace(fiber, std::prev(order_.end()));
    }
    // The wake of `fiber` (all: and every waiter after it), appended to `out`;
    // `fiber` itself even if it was not seen waiting.
    void wake(std::uint64_t fiber, bool all, std::vector<std::uint64_t>& out) {
        auto it = where_.find(fiber);
        if (it == where_.end()) {
            out.push_back(fiber);
            return;
        }
        auto from = it->second;
        auto to = all ? order_.end() : std::next(from);
        for (auto w = from; w != to; ++w) {
            out.push_back(*w);
            where_.erase(*w);
        }
        order_.erase(from, to);
    }

private:
    std::list<std::uint64_t> order_;
    std::unordered_map<std::uint64_t, std::list<std::uint64_t>::iterator> where_;
};

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

// A fiber's life is Ready, Running, then (Waiting, Ready, Running)* and
// Finished: 3 + 3k intervals. Starting its lane at capacity 3 and doubling
// fits k = 0, 1, 3, 7 exactly, so most fiber lanes need no trimming copy.
constexpr std::size_t kFiberLaneStart = 3;

// A model whose thread lanes and replay items hold at least this many
// intervals and items in all is closed on two threads (Builder::close).
constexpr std::size_t kParallelIndexIntervals = 1u << 16;

// Gives back growth slack (the model lives as long as the trace is open). A
// list reserved at an upper bound or estimate that keeps under 1/8 slack is
// left alone rather than copied whole (the never-written tail of a large
// allocation is not even resident).
template <class List>
void trimSlack(List& v) {
    if (v.capacity() - v.size() > v.size() / 8) v.shrink_to_fit();
}

// Two ways to reorder `v` so that v[k] becomes the old v[order[k]].
//
// permute moves each element once into a new list of the exact size, reading
// kAhead elements ahead with a prefetch: the reads are independent of each
// other, at the cost of one extra copy of `v` at the peak. For the fiber
// lanes (by first appearance -> by id), whose permutation's cycles wander
// over the whole list; measured at 10M events: ~120 ms where following the
// cycles took ~200 ms (thread CPU time).
//
// permuteInPlace follows the cycles (`order` is used up), each step a load
// that depends on the one before it, prefetched along the cycle. No copy:
// for the flows, whose order is nearly sorted already (a flow is made when
// its effect happens, shortly after its cause), so the cycles are short and
// local (10M events: ~55 ms).
template <class T>
void permute(std::vector<T>& v, const std::vector<std::uint32_t>& order) {
    constexpr std::size_t kAhead = 16;
    std::vector<T> moved;
    moved.reserve(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
        if (k + kAhead < order.size()) __builtin_prefetch(&v[order[k + kAhead]]);
        moved.push_back(std::move(v[order[k]]));
    }
    v = std::move(moved);
}

template <class T>
void permuteInPlace(std::vector<T>& v, std::vector<std::uint32_t>& order) {
    constexpr std::uint32_t kDone = UINT32_MAX;
    constexpr int kAhead = 8;
    for (std::uint32_t k = 0; k < order.size(); ++k) {
        if (order[k] == kDone || order[k] == k) continue;
        std::uint32_t ahead = k; // kAhead steps further along the cycle, while it lasts
        for (int step = 0; step < kAhead && order[ahead] != k; ++step) ahead = order[ahead];
        T held = std::move(v[k]);
        std::uint32_t j = k;
        for (;;) {
            if (order[ahead] != k) {
                ahead = order[ahead];
                __builtin_prefetch(&v[ahead]);
            }
            const std::uint32_t from = order[j];
            order[j] = kDone;
            if (from == k) {
                v[j] = std::move(held);
                break;
            }
            v[j] = std::move(v[from]);
            j = from;
        }
    }
}

// Sorts `keys`, which are usually nearly in order (a flow is made when its
// effect happens, shortly after its cause): an insertion sort costs one
// compare per key plus one move per inversion, so it runs until it has spent
// a few moves per key and leaves the rest to std::sort (10M events: the
// flows' keys in ~10 ms, where std::sort took ~80).
template <class Key>
void sortNearlySorted(std::vector<Key>& keys) {
    const std::size_t budget = 8 * keys.size() + 64;
    std::size_t moves = 0;
    for (std::size_t k = 1; k < keys.size(); ++k) {
        if (!(keys[k] < keys[k - 1])) continue;
        const Key held = keys[k];
        std::size_t j = k;
        for (; j > 0 && held < keys[j - 1]; --j) keys[j] = keys[j - 1];
        keys[j] = held;
        moves += k - j;
        if (moves > budget) {
            std::sort(keys.begin(), keys.end());
            return;
        }
    }
}

// Record kinds that add an Instant to their thread's lane (see Builder::event):
// the record table's instants, all but switch, park, unpark, zone edges, strings.
bool makesInstant(EventKind kind) noexcept { return trace::recordKind(kind).instant; }

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
    bool append(const trace::Trace& trace) {
        const auto& events = trace.events;
        const std::size_t n = events.size();
        if (n < done_) return false;
        if (!refreshThreads(trace)) return false;
        if (done_ == 0 && n) tl_.start_time = events.front().time;
        if (!lookAhead(events, done_, n)) return false;
        raiseDenseLimit(n);
        for (std::size_t i = done_; i < n; ++i) event(events[i], static_cast<std::uint32_t>(i));
        done_ = n;
        return true;
    }
    // A first append of records not yet in trace.events: each thread's in
    // time order, as the reader decoded them, read in the order mergeByTime
    // gives them (the order and indices trace.events will have). False if
    // this is not a first append or what they say makes it start over.
    bool appendStreams(const trace::Trace& trace, const std::vector<std::vector<Event>>& per_thread) {
        if (done_ != 0) return false;
        std::size_t n = 0;
        std::int64_t first = INT64_MAX;
        for (const auto& records : per_thread) {
            n += records.size();
            if (!records.empty()) first = std::min(first, records.front().time);
        }
        if (n == 0) return false; // (nothing to read beside the merge)
        if (!refreshThreads(trace)) return false;
        tl_.start_time = first;
        if (!lookAheadStreams(per_thread, n)) return false;
        raiseDenseLimit(n);
        struct Reader {
            Builder& builder;
            std::uint32_t next = 0;
            std::size_t size() const noexcept { return 0; }
            void reserve(std::size_t) noexcept {}
            void push_back(const Event& e) { builder.event(e, next++); }
        } reader{*this};
        trace::mergeByTime(per_thread, reader);
        done_ = n;
        return true;
    }
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

    // --- Threads as they appear ----------------------------------------------
    // The build indexes threads by their trace index (lane_of_thread is the
    // identity until close()), so a thread that appears later takes the next
    // index and nothing read before moves. Its queue slot is its index too.
    void ensureThreads(std::size_t count) {
        for (std::size_t t = tb_.size(); t < count; ++t) {
            tl_.lane_of_thread.push_back(static_cast<std::uint32_t>(t));
            ThreadLane& tl = tl_.threads.emplace_back();
            tl.thread = static_cast<std::uint32_t>(t);
            ThreadBuild& b = tb_.emplace_back();
            b.slot = static_cast<std::uint32_t>(t);
            slots_.emplace_back();
            tl_.replay.slots.emplace_back().push_back({INT64_MIN, static_cast<std::uint32_t>(t)});
        }
    }

    // Thread t runs worker w (from the thread table or its thread-start).
    // False if that contradicts a look-up already made: w was looked up and
    // missed, or a higher-numbered thread already answered for it.
    bool learnWorker(std::uint32_t t, std::int64_t w) {
        ThreadLane& tl = tl_.threads[t];
        if (w < 0 || w == tl.worker) return true;
        if (tl.worker >= 0) return false; // its worker changed (a second loop on the thread)
        if (missed_workers_.count(w)) return false;
        if (auto it = lane_of_worker_.find(w); it != lane_of_worker_.end()) {
            if (it->second > t && done_ > 0) return false;
            it->second = std::min(it->second, t); // nothing read yet: the lowest-numbered thread answers
        } else {
            lane_of_worker_.emplace(w, t);
        }
        tl.worker = w;
        return true;
    }

    bool refreshThreads(const trace::Trace& trace) {
        before_v7_ = trace.header.version != 0 && trace.header.version <= 6;
        ensureThreads(trace.threads.size());
        for (std::uint32_t t = 0; t < trace.threads.size(); ++t)
            if (!learnWorker(t, trace.threads[t].worker)) return false;
        return true;
    }

    // --- Look-ahead -----------------------------------------------------------
    // One pass over the new records before reading them: what each thread
    // ran before its first switch (that switch's `from`; nothing if it first
    // parks or unparks), workers named only by a thread-start, and counts by
    // kind so the lists the main pass appends to are allocated once (at
    // their exact size when everything arrives in one append). False if a
    // thread whose first records were read as running nothing (its first
    // switch had not arrived) now turns out to have run a fiber.
    bool lookAhead(const trace::EventList& events, std::size_t from, std::size_t to) {
        // Reads each record's thread and kind alone (and whether a switch
        // names a fiber), decoding a whole record only where its fields are
        // needed: most records are decoded once, by the main pass.
        struct Records {
            const trace::EventList& events;
            std::uint32_t thread(std::size_t i) const noexcept { return events.thread(i); }
            EventKind kind(std::size_t i) const noexcept { return events.kind(i); }
            bool hasTo(std::size_t i) const noexcept { return events.hasField(i, 1); }
            std::uint64_t arg0(std::size_t i) const noexcept { return events[i].arg[0]; }
        };
        std::vector<KindCounts> kinds(tb_.size(), KindCounts{});
        std::size_t switch_ins = 0;
        if (!scan(Records{events}, from, to, kinds, switch_ins)) return false;
        reserveLists(kinds, switch_ins, to - from);
        return true;
    }
    // The same over each thread's records apart (appendStreams: what it
    // learns of a thread depends only on that thread's own order, but for
    // the worker of two threads, which on a first append is the lower one's
    // whatever the order).
    bool lookAheadStreams(const std::vector<std::vector<Event>>& per_thread, std::size_t total) {
        struct Records {
            const std::vector<Event>& events;
            std::uint32_t thread(std::size_t i) const noexcept { return events[i].thread; }
            EventKind kind(std::size_t i) const noexcept { return events[i].kind; }
            bool hasTo(std::size_t i) const noexcept { return events[i].arg[1] != 0; }
            std::uint64_t arg0(std::size_t i) const noexcept { return events[i].arg[0]; }
        };
        std::vector<KindCounts> kinds(tb_.size(), KindCounts{});
        std::size_t switch_ins = 0;
        for (const auto& records : per_thread)
            if (!scan(Records{records}, 0, records.size(), kinds, switch_ins)) return false;
        reserveLists(kinds, switch_ins, total);
        return true;
    }
    template <class Records>
    bool scan(const Records& records, std::size_t from, std::size_t to, std::vector<KindCounts>& kinds, std::size_t& switch_ins) {
        for (std::size_t i = from; i < to; ++i) {
            const std::uint32_t thread = records.thread(i);
            const EventKind kind = records.kind(i);
            if (thread >= tb_.size()) {
                ensureThreads(static_cast<std::size_t>(thread) + 1);
                kinds.resize(tb_.size(), KindCounts{});
            }
            ThreadBuild& b = tb_[thread];
            ++kinds[thread][static_cast<std::size_t>(kind)];
            switch_ins += kind == EventKind::Switch && records.hasTo(i);
            if (kind == EventKind::ThreadStart && tl_.threads[thread].worker < 0 &&
                !learnWorker(thread, static_cast<std::int64_t>(records.arg0(i))))
                return false;
            if (b.initial_known) continue;
            if (kind == EventKind::Switch || kind == EventKind::Park || kind == EventKind::Unpark) {
                if (b.started) return false; // read as running nothing before it
                b.initial = kind == EventKind::Switch ? records.arg0(i) : 0;
                b.initial_known = true;
            }
        }
        return true;
    }

    // Room for what this append adds: exact for the first, at least doubling after.
    template <class List>
    static void reserveMore(List& v, std::size_t more) {
        const std::size_t need = v.size() + more;
        if (need > v.capacity()) v.reserve(v.capacity() ? std::max(need, 2 * v.capacity()) : need);
    }

    void reserveLists(const std::vector<KindCounts>& kinds, std::size_t switch_ins, std::size_t events_added) {
        KindCounts total{};
        for (std::uint32_t t = 0; t < kinds.size(); ++t) {
            const KindCounts& k = kinds[t];
            ThreadLane& tl = tl_.threads[t];
            std::size_t events = 0, instants = 0;
            for (std::size_t kind = 0; kind < k.size(); ++kind) {
                total[kind] += k[kind];
                events += k[kind];
                if (makesInstant(static_cast<EventKind>(kind))) instants += k[kind];
            }
            if (!events) continue;
            reserveMore(tl.instants, instants);
            // An interval begins at the thread's first record and at most at each switch, park and unpark.
            const auto at = [&](EventKind kind) { return k[static_cast<std::size_t>(kind)]; };
            reserveMore(tl.lane.intervals, 1 + at(EventKind::Switch) + at(EventKind::Park) + at(EventKind::Unpark));
        }
        reserveMore(tl_.kinds.before, events_added / kKindStride + 1);
        reserveMore(tl_.kinds.thread_bits, events_added / kKindStride + 1);
        const auto all = [&](EventKind kind) { return total[static_cast<std::size_t>(kind)]; };
        // Every flow starts at one create, complete, await, steal, mutex hand-off, condition
        // wake (a broadcast's: one per waiter, estimated as one), cancel delivery (two), or
        // matched wake-up pair.
        reserveMore(tl_.flows.stored, all(EventKind::FiberCreate) + all(EventKind::Complete) + all(EventKind::Await) + all(EventKind::Steal) + all(EventKind::StealHalf) + all(EventKind::StealOne) +
                                   all(EventKind::MutexHandoff) + all(EventKind::ConditionWake) + 2 * all(EventKind::CancelDelivered) +
                                   std::min(all(EventKind::WakeupSent), all(EventKind::WakeupReceived)));
        reserveMore(tl_.latencies.stored, switch_ins); // at most one per switch to a fiber
        // Usually one item per schedule and per submit, plus the queues steals move.
        reserveMore(tl_.replay.items, all(EventKind::Schedule) + all(EventKind::Submit) + all(EventKind::Steal) + all(EventKind::StealHalf) +
                                        all(EventKind::StealOne) + all(EventKind::Overflow));
        // Fibers: those created, plus a few that were running before the recording began.
        const std::size_t fibers = all(EventKind::FiberCreate) + (tl_.fibers.empty() ? kinds.size() + 16 : 0);
        reserveMore(tl_.fibers, fibers);
        reserveMore(fb_, fibers);
    }

    // Ids of a runtime's fibers run from 1 up to about the number of fibers;
    // larger ones (a long-running process, a damaged trace) are hashed. The
    // limit grows with the trace; hashed ids under the new limit move to the
    // dense index, so each id has one place.
    void raiseDenseLimit(std::size_t events) {
        const std::uint64_t limit = 2 * static_cast<std::uint64_t>(events) + 4096;
        if (limit <= dense_limit_) return;
        dense_limit_ = limit;
        for (auto it = sparse_.begin(); it != sparse_.end();) {
            if (it->first >= limit) {
                ++it;
                continue;
            }
            if (it->first >= dense_.size()) dense_.resize(it->first + 1, kNoFiber);
            dense_[it->first] = it->second;
            it = sparse_.erase(it);
        }
    }

    // The thread running `worker`, -1 if none has yet (remembered: a thread
    // that appears later with it makes the build start over).
    std::int64_t laneOfWorker(std::uint64_t worker) {
        auto it = lane_of_worker_.find(static_cast<std::int64_t>(worker));
        if (it != lane_of_worker_.end()) return static_cast<std::int64_t>(it->second);
        missed_workers_.insert(static_cast<std::int64_t>(worker));
        return -1;
    }
    std::uint32_t threadOfLane(std::uint32_t lane) const { return lane; }

    // --- Fibers -------------------------------------------------------------
    std::uint32_t fiberIndex(std::uint64_t id, bool* created = nullptr) {
        std::uint32_t* slot;
        if (id < dense_limit_) {
            if (id >= dense_.size()) { // grow geometrically, up to the limit
                const std::uint64_t doubled = std::min<std::uint64_t>(2 * dense_.size(), dense_limit_);
                dense_.resize(std::max<std::uint64_t>(id + 1, doubled), kNoFiber);
            }
            slot = &dense_[id];
        } else {
            slot = &sparse_.try_emplace(id, kNoFiber).first->second;
        }
        const bool inserted = *slot == kNoFiber;
        if (created) *created = inserted;
        if (inserted) {
            *slot = static_cast<std::uint32_t>(tl_.fibers.size());
            tl_.fibers.emplace_back().setFiberId(id);
            fb_.emplace_back();
        }
        return *slot;
    }

    void setFiber(std::uint32_t f, std::int64_t t, State s, std::int32_t thread, WaitReason r, std::uint32_t cause) {
        FiberBuild& b = fb_[f];
        // A finished fiber stays Finished (a damaged trace's later switch
        // away from it changes nothing), so its Finished interval is its
        // lane's last: FiberLane::finished reads it there.
        if (b.finished) return;
        if (b.has_open) {
            if (b.open.state == s && b.open.reason == r && (s != State::Running || b.open.thread == thread)) {
                if (s == State::Ready && thread >= 0) b.open.thread = thread; // placed on a queue now
                return;
            }
            b.open.end = t;
            auto& intervals = tl_.fibers[f].lane.intervals;
            if (intervals.capacity() == 0) intervals.reserve(kFiberLaneStart);
            intervals.push_back(b.open);
        }
        b.open = Interval{t, t, tl_.fibers[f].fiber(), cause, thread, s, r};
        b.has_open = true;
    }

    // Closes the fiber's open interval at `t` without opening another.
    void endFiberLane(std::uint32_t f, std::int64_t t) {
        FiberBuild& b = fb_[f];
        if (!b.has_open) return;
        b.open.end = std::max(b.open.start, t);
        auto& intervals = tl_.fibers[f].lane.intervals;
        if (intervals.capacity() == 0) intervals.reserve(kFiberLaneStart);
        intervals.push_back(b.open);
        b.has_open = false;
    }

    // A finished fiber's finishing switch: its open interval, the Finished
    // one (setFiber opens no other after it; endFiberLane only ends it).
    FlowEnd finishEnd(std::uint32_t f) const {
        const Interval& open = fb_[f].open;
        return FlowEnd{open.start, tl_.fibers[f].fiber(), static_cast<std::uint32_t>(open.thread), open.cause};
    }

    // Marks a fiber ready (not if it is running: a late record; nor if finished).
    bool makeReady(std::uint32_t f, std::int64_t t, std::int32_t thread, std::uint32_t cause) {
        FiberBuild& b = fb_[f];
        if (b.finished || (b.has_open && b.open.state == State::Running)) return false;
        if (!(b.has_open && b.open.state == State::Ready)) b.ready_since = t;
        setFiber(f, t, State::Ready, thread, WaitReason::None, cause);
        return true;
    }

    void finishFiber(std::uint32_t f, std::int64_t t, std::uint32_t thread, std::uint32_t event) {
        FiberBuild& b = fb_[f];
        if (b.finished) return;
        const std::uint64_t id = tl_.fibers[f].fiber();
        setFiber(f, t, State::Finished, static_cast<std::int32_t>(thread), WaitReason::None, event);
        b.finished = true;
        b.ready_since = -1;
        closeQueued(f, t);
        if (auto it = zone_stacks_.find(f); it != zone_stacks_.end()) {
            for (std::uint32_t z : it->second) tl_.fibers[f].editZones()[z].end = t;
            zone_stacks_.erase(it);
        }
        if (auto it = awaiters_.find(id); it != awaiters_.end()) {
            const FlowEnd end = finishEnd(f);
            const std::vector<std::uint64_t> waiters = std::move(it->second);
            awaiters_.erase(it);
            for (std::uint64_t w : waiters) {
                const std::uint32_t k = fiberIndex(w); // may grow fb_: no references held across it
                pending_.pushBack(fb_[k].pending, Flow{FlowKind::AwaitChain, end, {}});
            }
        }
    }

    // --- Ready-queue items ----------------------------------------------------
    std::uint32_t newItem(const StateItem& item) {
        tl_.replay.items.push_back(item);
        return static_cast<std::uint32_t>(tl_.replay.items.size() - 1);
    }
    // Ends item `id` at `t` (the items are packed: changed by value, not in place).
    StateItem endItem(std::uint32_t id, std::int64_t t) {
        StateItem item = tl_.replay.items[id];
        item.end = t;
        tl_.replay.items.set(id, item);
        return item;
    }

    // Where a steal's flow starts: when and where the stolen fiber was queued
    // (its open queue stay), else the steal itself on the victim's thread.
    FlowEnd stolenFrom(std::uint64_t fiber, std::int64_t victim, std::int64_t t, std::uint32_t here) {
        FlowEnd from{t, fiber, victim >= 0 ? threadOfLane(static_cast<std::uint32_t>(victim)) : here, kNoEvent};
        const std::uint32_t f = fiberIndex(fiber);
        if (fb_[f].ready_item != kNoItem) {
            const StateItem& item = tl_.replay.items[fb_[f].ready_item];
            from.time = item.start;
            from.event = item.event;
        }
        return from;
    }

    void openQueued(std::uint32_t f, std::uint32_t slot, std::int64_t t, std::uint32_t event) {
        closeQueued(f, t);
        StateItem item;
        item.start = t;
        item.fiber = tl_.fibers[f].fiber();
        item.where = slot;
        item.event = event;
        item.kind = ItemKind::Queued;
        const std::uint32_t id = newItem(item);
        slots_[slot].items.push_back(id);
        ++slots_[slot].open;
        fb_[f].ready_item = id;
    }

    void closeQueued(std::uint32_t f, std::int64_t t) {
        FiberBuild& b = fb_[f];
        if (b.ready_item == kNoItem) return;
        const StateItem item = endItem(b.ready_item, t);
        Slot& slot = slots_[item.where];
        --slot.open;
        b.ready_item = kNoItem;
        if (slot.items.size() > 2 * static_cast<std::size_t>(slot.open) + 32) {
            const auto& items = tl_.replay.items;
            std::erase_if(slot.items, [&](std::uint32_t id) { return items[id].end != kOpenEnd; });
        }
    }

    std::uint32_t slotOwner(std::uint32_t slot) const { return tl_.replay.slots[slot].back().thread; }

    // A steal record: the thief takes the victim's queue word from `head`
    // down. The fibers above it were popped by the owner, which runs them
    // next (its switch record comes later): they stay. The word is a stack
    // of schedule records' lists, so above the head are the stays opened by
    // later schedule records, and those of its own record listed before it;
    // a slot's items are in creation order, so they are the few at its end
    // and just before the head's: found in O(log n + their number), and the
    // rest of the queue moves as a whole (stealQueue).
    void stealWord(std::uint32_t thief, std::uint32_t victim, std::uint64_t head, std::int64_t t) {
        const std::uint32_t f_head = fiberIndex(head);
        const std::uint32_t h = fb_[f_head].ready_item;
        const Slot& slot = slots_[tb_[victim].slot];
        std::vector<std::uint32_t> above; // fiber indices
        if (h != kNoItem && tl_.replay.items[h].where == tb_[victim].slot) {
            const auto& items = tl_.replay.items;
            const std::uint32_t head_event = items[h].event;
            const auto at = std::lower_bound(slot.items.begin(), slot.items.end(), h);
            for (auto it = slot.items.end(); it != at && *(it - 1) > h;) {
                --it;
                const StateItem item = items[*it];
                if (item.end == kOpenEnd && item.event != head_event) above.push_back(fiberIndex(item.fiber));
            }
            for (auto it = at; it != slot.items.begin();) {
                --it;
                const StateItem item = items[*it];
                if (item.event != head_event) break;
                if (item.end == kOpenEnd) above.push_back(fiberIndex(item.fiber));
            }
        }
        std::vector<std::uint32_t> events;
        events.reserve(above.size());
        for (std::uint32_t f : above) events.push_back(tl_.replay.items[fb_[f].ready_item].event);
        stealQueue(thief, victim, t);
        for (std::size_t k = 0; k < above.size(); ++k) openQueued(above[k], tb_[victim].slot, t, events[k]);
    }

    // The thief (lane `thief`) takes the victim's whole queue.
    void stealQueue(std::uint32_t thief, std::uint32_t victim, std::int64_t t) {
        std::uint32_t big = tb_[victim].slot, small = tb_[thief].slot;
        if (slots_[small].open > slots_[big].open) std::swap(big, small);
        // Move the open items of the smaller queue into the bigger one.
        std::vector<std::uint32_t> moving;
        moving.swap(slots_[small].items);
        slots_[small].open = 0;
        for (std::uint32_t id : moving) {
            StateItem copy = tl_.replay.items[id];
            if (copy.end != kOpenEnd) continue;
            endItem(id, t);
            copy.start = t;
            copy.where = big;
            const std::uint32_t moved = newItem(copy);
            slots_[big].items.push_back(moved);
            ++slots_[big].open;
            fb_[fiberIndex(copy.fiber)].ready_item = moved;
        }
        tb_[thief].slot = big;
        tb_[victim].slot = small;
        const std::uint32_t thief_thread = threadOfLane(thief), victim_thread = threadOfLane(victim);
        if (slotOwner(big) != thief_thread) tl_.replay.slots[big].push_back({t, thief_thread});
        if (slotOwner(small) != victim_thread) tl_.replay.slots[small].push_back({t, victim_thread});
    }

    // The fibers a schedule record placed (into members_): the head plus, when
    // they are known, the count - 1 fibers that became ready after it on this thread.
    const std::vector<std::uint64_t>& members(std::uint32_t lane, std::uint64_t head, std::uint64_t count) {
        members_.clear();
        if (!tb_[lane].pending_ready.take(head, count, members_)) members_.push_back(head);
        return members_;
    }

    // --- Threads ---------------------------------------------------------------
    void setThread(std::uint32_t lane, std::int64_t t, State s, std::uint64_t fiber, std::uint32_t cause) {
        ThreadBuild& b = tb_[lane];
        if (!b.alive) return; // stopped: its records change no lane until a thread-start
        if (b.has_open) {
            if (b.open.state == s && b.open.fiber == fiber) return;
            b.open.end = t;
            tl_.threads[lane].lane.intervals.push_back(b.open);
        }
        b.open = Interval{t, t, fiber, cause, static_cast<std::int32_t>(threadOfLane(lane)), s, WaitReason::None};
        b.has_open = true;
    }

    void startThread(std::uint32_t lane, std::int64_t t) {
        ThreadBuild& b = tb_[lane];
        b.started = true;
        b.alive = true;
        b.alive_since = t;
        tl_.threads[lane].first_time = t;
        b.running = b.initial;
        if (!b.initial_known) return; // no scheduling records on this thread: no intervals
        setThread(lane, t, b.initial ? State::Running : State::Idle, b.initial, kNoEvent);
        if (b.initial) {
            bool created = false;
            const std::uint32_t f = fiberIndex(b.initial, &created);
            if (created) setFiber(f, t, State::Running, static_cast<std::int32_t>(threadOfLane(lane)), WaitReason::None, kNoEvent);
        }
    }

    // Thread-stop: the thread's idle loop returned. Its lane ends here; what
    // it records afterwards (the main thread resuming the main fiber outside
    // the loop) is not the loop's, until a thread-start (a new loop) revives it.
    void stopThread(std::uint32_t lane, std::int64_t t) {
        ThreadBuild& b = tb_[lane];
        ThreadLane& tl = tl_.threads[lane];
        tl.stopped = true;
        if (!b.alive) return;
        if (b.has_open) {
            b.open.end = std::max(b.open.start, t);
            tl.lane.intervals.push_back(b.open);
            b.has_open = false;
        }
        // A fiber still running here (a damaged trace) stops with its thread.
        if (b.running) {
            const std::uint32_t f = fiberIndex(b.running);
            const FiberBuild& fb = fb_[f];
            if (fb.has_open && fb.open.state == State::Running && fb.open.thread == static_cast<std::int32_t>(threadOfLane(lane)))
                endFiberLane(f, t);
        }
        tl.alive_ns += std::max<std::int64_t>(0, t - b.alive_since);
        tl.alive_end = std::max(b.alive_since, t);
        b.alive = false;
    }

    // A thread-start after a thread-stop: the thread runs a loop again, with
    // the fiber it last switched to (or its idle loop).
    void restartThread(std::uint32_t lane, std::int64_t t, std::uint32_t cause) {
        ThreadBuild& b = tb_[lane];
        b.alive = true;
        b.alive_since = t;
        if (!b.initial_known) return;
        setThread(lane, t, b.running ? State::Running : State::Idle, b.running, cause);
        if (b.running) {
            const std::uint32_t f = fiberIndex(b.running);
            if (!fb_[f].finished) setFiber(f, t, State::Running, static_cast<std::int32_t>(threadOfLane(lane)), WaitReason::None, cause);
        }
    }

    // --- Events ------------------------------------------------------------------
    void event(const Event& e, std::uint32_t i) {
        const std::uint32_t lane = e.thread;
        ThreadBuild& tb = tb_[lane];
        ThreadLane& tl = tl_.threads[lane];
        const std::int64_t t = e.time;
        if (!tb.started) startThread(lane, t);
        const std::uint32_t previous = tb.last_event; // this thread's record before this one
        tb.last_event = i;
        tl.last_time = t;
        ++tl.record_count;
        ++tl.records[static_cast<std::size_t>(e.kind)];
        if (i % kKindStride == 0) {
            tl_.kinds.before.push_back(tl_.kinds.total);
            tl_.kinds.thread_bits.push_back(0);
        }
        tl_.kinds.thread_bits.back() |= std::uint64_t{1} << (e.thread % 64);
        ++tl_.kinds.total[static_cast<std::size_t>(e.kind)];
        const std::uint32_t T = e.thread;
        const auto thread = static_cast<std::int32_t>(T);

        switch (e.kind) {
        case EventKind::Switch: onSwitch(e, i, lane); return;
        case EventKind::Park:
            // (Fibers made ready before it parks stay pending: a blocking-pool
            // completion is made ready here, and placed by the schedule
            // record after the unpark.)
            setThread(lane, t, State::Parked, 0, i);
            tb.running = 0;
            return;
        case EventKind::Unpark:
            setThread(lane, t, tb.running ? State::Running : State::Idle, tb.running, i);
            return;
        case EventKind::ZoneBegin: {
            Zone zone;
            zone.start = t;
            zone.end = t;
            zone.label = e.arg[0];
            zone.begin_event = i;
            zone.thread = thread;
            if (tb.running) {
                const std::uint32_t f = fiberIndex(tb.running);
                std::vector<std::uint32_t>& stack = zone_stacks_[f];
                zone.depth = static_cast<std::uint32_t>(stack.size());
                std::vector<Zone>& zones = tl_.fibers[f].editZones();
                stack.push_back(static_cast<std::uint32_t>(zones.size()));
                zones.push_back(zone);
            } else {
                zone.depth = static_cast<std::uint32_t>(tb.zone_stack.size());
                tb.zone_stack.push_back(static_cast<std::uint32_t>(tl.zones.size()));
                tl.zones.push_back(zone);
            }
            return;
        }
        case EventKind::ZoneEnd: {
            // The innermost open zone of the fiber running here, else of the idle loop.
            std::vector<std::uint32_t>* stack = &tb.zone_stack;
            Zone* zone = nullptr;
            if (tb.running) {
                const std::uint32_t f = fiberIndex(tb.running);
                const auto it = zone_stacks_.find(f);
                stack = it != zone_stacks_.end() ? &it->second : nullptr;
                if (stack && !stack->empty()) zone = &tl_.fibers[f].editZones()[stack->back()];
            } else if (!stack->empty()) {
                zone = &tl.zones[stack->back()];
            }
            if (zone) {
                zone->end = t;
                zone->end_event = i;
                stack->pop_back();
            }
            return;
        }
        case EventKind::StringDef: return;
        case EventKind::ThreadStart:
            if (!tb.alive) restartThread(lane, t, i);
            break;
        case EventKind::ThreadStop: stopThread(lane, t); break;
        default: break;
        }

        addInstant(e, i, tl, tb);
        switch (e.kind) {
        case EventKind::FiberCreate: {
            const std::uint32_t f = fiberIndex(e.arg[0]);
            FiberLane& fl = tl_.fibers[f];
            // (thread >= 0: createdInTrace; makeReady below opens a new fiber's first interval at t)
            fl.setCreated(t, static_cast<std::int32_t>(thread), e.arg[1], !fb_[f].has_open && !fb_[f].finished && fl.lane.intervals.empty());
            if (fb_[f].name_id == 0 && e.arg[2] != 0) fb_[f].name_id = e.arg[2]; // string 0 is the empty name
            makeReady(f, t, -1, i);
            pending_.pushBack(fb_[f].pending, Flow{FlowKind::Spawn, FlowEnd{t, e.arg[1], T, i}, {}});
            return;
        }
        case EventKind::FiberFinish: finishFiber(fiberIndex(e.arg[0]), t, T, i); return;
        case EventKind::FiberName: {
            // An empty name names nothing: the fiber keeps the one it had.
            const std::uint32_t f = fiberIndex(e.arg[0]);
            if (e.arg[1] == 0) return;
            fb_[f].name_id = e.arg[1];
            return;
        }
        case EventKind::Schedule: {
            const auto how = static_cast<ScheduleHow>(e.small);
            // Own queue and run_next: this thread's (the model keeps one queue a thread).
            const std::int64_t target = how == ScheduleHow::OwnQueue || how == ScheduleHow::RunNext
                                            ? static_cast<std::int64_t>(lane)
                                            : laneOfWorker(e.arg[2]);
            const std::int32_t target_thread = target >= 0 ? static_cast<std::int32_t>(threadOfLane(static_cast<std::uint32_t>(target))) : -1;
            for (std::uint64_t m : members(lane, e.arg[0], e.arg[1])) {
                if (m == 0) continue;
                const std::uint32_t f = fiberIndex(m);
                // Before format version 7 a hand-off or new worker acted before
                // schedule() wrote its record: if the fiber was switched to after
                // this thread's previous record, that record is late. (Since
                // version 7 a record is stamped before its effect: it is never late.)
                const std::uint32_t ran = fb_[f].last_switch_in;
                if (before_v7_ && ran != kNoEvent && (previous == kNoEvent || ran > previous)) continue;
                if (!makeReady(f, t, target_thread, i)) continue;
                if (target >= 0) openQueued(f, tb_[static_cast<std::size_t>(target)].slot, t, i);
            }
            if (how == ScheduleHow::IdleHandoff) {
                tb.handoff_head = e.arg[0];
                tb.handoff_time = t;
            }
            return;
        }
        case EventKind::Steal: {
            const std::uint64_t head = e.arg[0];
            const std::int64_t victim = laneOfWorker(e.arg[1]);
            const FlowEnd from = stolenFrom(head, victim, t, T);
            if (victim >= 0) ++tl_.threads[static_cast<std::size_t>(victim)].steals_given;
            if (victim >= 0 && static_cast<std::uint32_t>(victim) != lane) stealWord(lane, static_cast<std::uint32_t>(victim), head, t);
            tl_.flows.push_back(Flow{FlowKind::Steal, from, FlowEnd{t, head, T, i}});
            return;
        }
        case EventKind::StealHalf:
        case EventKind::StealOne: {
            // One fiber of a steal-half batch, or the one fiber of a
            // steal-one: it moves from the victim's queue to this thread's
            // (the last one is switched to at once, which closes its stay
            // here). The victim's other fibers stay.
            const std::uint64_t fiber = e.arg[0];
            const std::int64_t victim = laneOfWorker(e.arg[1]);
            const FlowEnd from = stolenFrom(fiber, victim, t, T);
            const std::uint32_t f = fiberIndex(fiber);
            if (fb_[f].ready_item != kNoItem) openQueued(f, tb_[lane].slot, t, i);
            if (victim >= 0) ++tl_.threads[static_cast<std::size_t>(victim)].steals_given;
            tl_.flows.push_back(Flow{FlowKind::Steal, from, FlowEnd{t, fiber, T, i}});
            return;
        }
        case EventKind::WakeupSent: {
            Flow flow{FlowKind::Wakeup, FlowEnd{t, tb.running, T, i}, {}};
            flow.to.fiber = tb.handoff_time == t ? tb.handoff_head : 0;
            if (const auto answer = wakeups_.sent(WakeupPairs::key(tl.worker, static_cast<std::int64_t>(e.arg[0])), flow)) {
                if (answer->received) {
                    const std::uint64_t head = flow.to.fiber;
                    flow.to = answer->to;
                    flow.to.fiber = head;
                    tl_.flows.push_back(flow);
                }
            }
            return;
        }
        case EventKind::WakeupReceived:
        case EventKind::WakeupBounced: {
            const bool received = e.kind == EventKind::WakeupReceived;
            const std::uint64_t key = received ? WakeupPairs::key(static_cast<std::int64_t>(e.arg[0]), tl.worker)
                                               : WakeupPairs::key(tl.worker, static_cast<std::int64_t>(e.arg[0]));
            const WakeupAnswer answer{FlowEnd{t, 0, T, i}, received};
            if (auto flow = wakeups_.answered(key, answer); flow && received) {
                const std::uint64_t head = flow->to.fiber;
                flow->to = answer.to;
                flow->to.fiber = head;
                tl_.flows.push_back(*flow);
            }
            return;
        }
        case EventKind::Submit: {
            const std::uint32_t f = fiberIndex(e.arg[0]);
            StateItem item;
            item.start = t;
            item.fiber = e.arg[0];
            item.fd = static_cast<std::int32_t>(e.signedArg(1));
            item.where = T;
            item.event = i;
            item.kind = ItemKind::InFlight;
            item.opcode = e.small;
            ops_.pushBack(fb_[f].ops, newItem(item));
            fb_[f].last_opcode = e.small;
            return;
        }
        case EventKind::Complete: {
            const std::uint32_t f = fiberIndex(e.arg[0]);
            // The oldest in-flight operation with this opcode, else the oldest.
            std::uint32_t id = kNoItem;
            // The thread whose ring held the operation makes the fiber ready
            // (schedules it): a blocking-pool thread records the completion,
            // the fiber's worker places it.
            std::uint32_t owner = lane;
            if (ops_.takeMatchOrFirst(fb_[f].ops, [&](std::uint32_t op) { return tl_.replay.items[op].opcode == e.small; }, id)) {
                const StateItem item = endItem(id, t);
                pending_.pushBack(fb_[f].pending, Flow{FlowKind::Completion, FlowEnd{item.start, item.fiber, item.where, item.event}, {}});
                if (item.where < tb_.size()) owner = item.where;
            }
            if (makeReady(f, t, thread, i)) tb_[owner].pending_ready.push(e.arg[0]);
            // A blocking-pool thread finished it while the fiber still ran
            // (it had not yet switched away): it is ready as soon as it does.
            else if (owner != lane && !fb_[f].finished) early_completions_[f] = owner;
            // A canceled operation completes with -ECANCELED (-EINTR for an
            // interrupted system call): the delivered cancel's effect.
            const std::int64_t result = e.signedArg(1);
            if ((result == -ECANCELED || result == -EINTR) && !cancels_.empty())
                if (auto it = cancels_.find(e.arg[0]); it != cancels_.end() && it->second.delivered) {
                    tl_.flows.push_back(Flow{FlowKind::Canceled, it->second.delivery, FlowEnd{t, e.arg[0], T, i}});
                    cancels_.erase(it);
                }
            return;
        }
        case EventKind::CancelRequest: {
            // The record names the target; the requester is whoever runs here.
            CancelState& c = cancels_[e.arg[0]];
            if (!c.requested && !c.delivered) c.request = FlowEnd{t, tb.running, T, i}, c.requested = true;
            return;
        }
        case EventKind::CancelDelivered: {
            CancelState& c = cancels_[e.arg[0]];
            const FlowEnd delivery{t, e.arg[0], T, i};
            if (c.requested && !c.delivered) tl_.flows.push_back(Flow{FlowKind::Cancel, c.request, delivery});
            if (!c.delivered) c.delivery = delivery, c.delivered = true;
            return;
        }
        case EventKind::ConditionWait: condition_waiters_[e.arg[1]].add(e.arg[0]); return;
        case EventKind::ConditionWake: {
            std::vector<std::uint64_t>& woken = woken_;
            woken.clear();
            // Before version 7 a broadcast's one record named the first waiter and
            // woke the rest too; since, each fiber a broadcast woke has its record.
            const bool broadcast = e.small == static_cast<std::uint8_t>(trace::ConditionWakeHow::Broadcast);
            condition_waiters_[e.arg[1]].wake(e.arg[0], broadcast && before_v7_, woken);
            // Signal and broadcast come from the fiber running here; a timed-out wait woke itself.
            const bool signaled = e.small != static_cast<std::uint8_t>(trace::ConditionWakeHow::TimedOut);
            for (std::uint64_t w : woken) {
                if (!w) continue;
                const std::uint32_t f = fiberIndex(w);
                if (!makeReady(f, t, -1, i)) continue;
                tb.pending_ready.push(w);
                if (signaled) pending_.pushBack(fb_[f].pending, Flow{FlowKind::ConditionWake, FlowEnd{t, tb.running, T, i}, {}});
            }
            return;
        }
        case EventKind::MutexTaken: {
            // It found the mutex free as it went to wait: it holds it and is
            // ready (a schedule on this thread places it).
            const std::uint32_t f = fiberIndex(e.arg[0]);
            if (makeReady(f, t, thread, i)) tb.pending_ready.push(e.arg[0]);
            return;
        }
        case EventKind::Overflow: {
            // The loop's overflow list is no thread's queue: a fiber put there
            // stays ready but leaves its thread's queue; one taken joins this
            // thread's.
            const std::uint32_t f = fiberIndex(e.arg[0]);
            if (e.small == static_cast<std::uint8_t>(trace::OverflowOp::Put)) closeQueued(f, t);
            else openQueued(f, tb_[lane].slot, t, i);
            return;
        }
        case EventKind::MutexHandoff:
            // `from` unlocked by handing the mutex to `to`: the arrow ends at the new owner's resume.
            if (e.arg[1]) {
                const std::uint32_t f = fiberIndex(e.arg[1]);
                if (makeReady(f, t, thread, i)) pending_.pushBack(fb_[f].pending, Flow{FlowKind::MutexHandoff, FlowEnd{t, e.arg[0], T, i}, {}});
            }
            return;
        case EventKind::Await: {
            const std::uint32_t waiter = fiberIndex(e.arg[0]);
            const std::uint32_t target = fiberIndex(e.arg[1]);
            tl_.fibers[target].setAwaitedBy(e.arg[0]);
            if (fb_[target].finished) pending_.pushBack(fb_[waiter].pending, Flow{FlowKind::AwaitChain, finishEnd(target), {}});
            else awaiters_[e.arg[1]].push_back(e.arg[0]);
            return;
        }
        default: return;
        }
    }


    void addInstant(const Event& e, std::uint32_t i, ThreadLane& tl, const ThreadBuild& tb) {
        Instant instant;
        instant.event = i;
        if (std::uint64_t named = 0; !firstFiber(e, named)) tl.instant_fibers.emplace_back(static_cast<std::uint32_t>(tl.instants.size()), tb.running);
        tl.instants.push_back(instant);
    }

    void onSwitch(const Event& e, std::uint32_t i, std::uint32_t lane) {
        ThreadBuild& tb = tb_[lane];
        const std::int64_t t = e.time;
        const std::uint32_t T = e.thread;
        const auto thread = static_cast<std::int32_t>(T);
        const std::uint64_t from = e.arg[0], to = e.arg[1];
        const auto reason = static_cast<SwitchReason>(e.small);
        if (from != 0 && from != to) {
            bool created = false;
            const std::uint32_t f = fiberIndex(from, &created);
            if (created) {
                // First seen leaving: it ran here since the thread's current interval began.
                const bool ran = tb.has_open && tb.open.fiber == from;
                setFiber(f, ran ? tb.open.start : t, State::Running, thread, WaitReason::None, ran ? tb.open.cause : kNoEvent);
            }
            FiberBuild& b = fb_[f];
            switch (reason) {
            case SwitchReason::Finish: finishFiber(f, t, T, i); break;
            case SwitchReason::IoWait: {
                if (!early_completions_.empty())
                    if (auto it = early_completions_.find(f); it != early_completions_.end()) {
                        // Its operation completed before it switched away: ready at once.
                        const std::uint32_t owner = it->second;
                        early_completions_.erase(it);
                        setFiber(f, t, State::Ready, thread, WaitReason::None, i);
                        b.ready_since = t;
                        tb_[owner].pending_ready.push(from);
                        break;
                    }
                const bool timer = trace::opcodeHas(b.last_opcode, trace::kOpNoteTimer);
                setFiber(f, t, State::Waiting, thread, timer ? WaitReason::Timer : WaitReason::Io, i);
                break;
            }
            case SwitchReason::Await: setFiber(f, t, State::Waiting, thread, WaitReason::Await, i); break;
            case SwitchReason::Select: setFiber(f, t, State::Waiting, thread, WaitReason::Select, i); break;
            case SwitchReason::Mutex: setFiber(f, t, State::Waiting, thread, WaitReason::Mutex, i); break;
            case SwitchReason::Condition: setFiber(f, t, State::Waiting, thread, WaitReason::Condition, i); break;
            case SwitchReason::Exit: setFiber(f, t, State::Waiting, thread, WaitReason::Exit, i); break;
            case SwitchReason::Yield:
            case SwitchReason::Handoff:
            case SwitchReason::Start:
            case SwitchReason::Idle:
                if (!b.finished) {
                    setFiber(f, t, State::Ready, thread, WaitReason::None, i);
                    b.ready_since = t;
                }
                break;
            }
        }
        if (to != 0 && !tb.alive) {
            // Switched to on a stopped thread: the main fiber resumed after its
            // loop shut down. It runs outside the loop, which the model does
            // not follow: its lane ends here, as the thread's did.
            const std::uint32_t f = fiberIndex(to);
            FiberBuild& b = fb_[f];
            closeQueued(f, t);
            endFiberLane(f, t);
            b.ready_since = -1;
            b.last_switch_in = i;
            pending_.clear(b.pending);
        } else if (to != 0) {
            const std::uint32_t f = fiberIndex(to);
            FiberBuild& b = fb_[f];
            closeQueued(f, t);
            tb.pending_ready.erase(to);
            if (b.has_open && b.open.state == State::Ready && b.ready_since >= 0)
                tl_.latencies.push_back(LatencySample{b.ready_since, t, to});
            b.ready_since = -1;
            b.last_switch_in = i;
            if (!b.finished) setFiber(f, t, State::Running, thread, WaitReason::None, i);
            pending_.forEach(b.pending, [&](Flow flow) {
                flow.to = FlowEnd{t, to, T, i};
                tl_.flows.push_back(flow);
            });
            pending_.clear(b.pending);
            // A delivered cancel with no canceled completion (a mutex or
            // condition wait unlinked, or an operation that had completed
            // first) takes effect when the fiber resumes.
            if (!cancels_.empty())
                if (auto it = cancels_.find(to); it != cancels_.end() && it->second.delivered) {
                    tl_.flows.push_back(Flow{FlowKind::Canceled, it->second.delivery, FlowEnd{t, to, T, i}});
                    cancels_.erase(it);
                }
        }
        setThread(lane, t, to ? State::Running : State::Idle, to, i);
        tb.running = to;
    }

    // The order of fibers by id (order[k]: the index in fb_ of the fiber
    // that goes to k): the ids ascending are read off the dense index, then
    // the large (hashed) ids sorted.
    std::vector<std::uint32_t> fiberOrder() const {
        std::vector<std::uint32_t> order;
        order.reserve(tl_.fibers.size());
        for (std::uint32_t f : dense_)
            if (f != kNoFiber) order.push_back(f);
        std::vector<std::pair<std::uint64_t, std::uint32_t>> large(sparse_.begin(), sparse_.end());
        std::sort(large.begin(), large.end());
        for (const auto& entry : large) order.push_back(entry.second);
        return order;
    }

    // Flows by start; ties in the order they were made, as a stable sort would
    // leave them. Sorting (start, index) keys and then moving each flow once
    // is about twice as fast as sorting the 56-byte flows themselves.
    static void sortFlows(FlowList& flows) {
        const auto by_from = [](const Flow& a, const Flow& b) { return a.from.time < b.from.time; };
        if (std::is_sorted(flows.begin(), flows.end(), by_from)) return;
        std::vector<std::pair<std::int64_t, std::uint32_t>> keys(flows.size());
        for (std::uint32_t k = 0; k < flows.size(); ++k) keys[k] = {flows[k].from.time, k};
        sortNearlySorted(keys);
        std::vector<std::uint32_t> order(flows.size());
        for (std::size_t k = 0; k < keys.size(); ++k) order[k] = keys[k].second;
        keys = {};
        permuteInPlace(flows.packed(), order); // a wide flow's item carries its side entry's index along
    }
};

// The spawn flow a fiber's lane gives back (FlowStore): from its creation
// (the fiber-create record being the cause of its first interval) to its
// first Running interval; false if it was not created in the trace or never ran.
bool spawnFromLane(const FiberLane& fl, Flow& flow) noexcept {
    const IntervalList& intervals = fl.lane.intervals;
    if (!fl.createdInTrace() || intervals.empty()) return false;
    std::size_t k = 0;
    while (k < intervals.size() && intervals.stateOf(k) != State::Running) ++k;
    if (k == intervals.size()) return false;
    const Interval run = intervals[k];
    flow.kind = FlowKind::Spawn;
    flow.from = FlowEnd{fl.created(), fl.parent(), static_cast<std::uint32_t>(fl.createdThread()), intervals.causeOf(0)};
    flow.to = FlowEnd{run.start, fl.fiber(), static_cast<std::uint32_t>(run.thread), run.cause};
    return true;
}

// Keeps each spawn flow that its fiber's lane gives back, field for field,
// as the index of that lane (FlowStore); the order of the flows is kept.
void keepSpawnsInLanes(Timeline& out) {
    out.flows.keepRefs([&](std::size_t, const Flow& flow, std::uint32_t& lane) {
        if (flow.kind != FlowKind::Spawn) return false;
        const FiberLane* fl = findFiber(out, flow.to.fiber);
        Flow given;
        if (!fl || !spawnFromLane(*fl, given) || !(given == flow)) return false;
        lane = static_cast<std::uint32_t>(fl - out.fibers.data());
        return true;
    });
}

// The sample a fiber's lane gives back (LatencyStore): the Ready interval
// before its Running interval `k`, to that one.
LatencySample latencyFromLane(const FiberLane& fl, std::size_t k) noexcept {
    return LatencySample{fl.lane.intervals.startOf(k - 1), fl.lane.intervals.startOf(k), fl.fiber()};
}

// Keeps each latency sample that its fiber's lane gives back as where in
// that lane (LatencyStore). Samples are by run time, and a lane's Running
// intervals too, so one cursor per lane finds each in one pass.
void keepLatenciesInLanes(Timeline& out) {
    if (out.latencies.stored.empty() || !out.latencies.refs.empty()) return;
    std::vector<std::uint32_t> cursor(out.fibers.size(), 0); // per lane: the first interval not yet passed
    out.latencies.keepRefs([&](std::size_t, const LatencySample& sample, LatencyRef& ref) {
        const FiberLane* fl = findFiber(out, sample.fiber);
        if (!fl) return false;
        const std::size_t lane = static_cast<std::size_t>(fl - out.fibers.data());
        const IntervalList& intervals = fl->lane.intervals;
        std::size_t k = cursor[lane];
        while (k < intervals.size() && intervals.startOf(k) < sample.run) ++k;
        cursor[lane] = static_cast<std::uint32_t>(k);
        // The Running interval from `run` (after any zero-length ones then).
        for (; k < intervals.size() && intervals.startOf(k) == sample.run; ++k) {
            if (k == 0 || intervals.stateOf(k) != State::Running || intervals.stateOf(k - 1) != State::Ready) continue;
            const LatencySample given = latencyFromLane(*fl, k);
            if (given.ready != sample.ready || given.run != sample.run || given.fiber != sample.fiber) continue;
            cursor[lane] = static_cast<std::uint32_t>(k + 1); // (one sample per Running interval)
            return LatencyRef::make(lane, k, ref); // (false: kept as a value)
        }
        return false;
    });
}

// The end of the trace as far as `count` records go: the last of them, or
// the header's duration if later.
std::int64_t endTimeOf(const trace::Trace& trace, std::size_t count) noexcept {
    const std::int64_t duration = std::max<std::int64_t>(0, trace.header.duration_ns);
    if (count == 0 || count > trace.events.size()) return count ? traceEndTime(trace) : duration;
    return std::max(trace.events[count - 1].time, trace.header.duration_ns);
}

void Builder::close(Timeline& out, const trace::Trace& trace, Builder* scratch) const {
    const std::int64_t end_time = endTimeOf(trace, done_);
    out.start_time = done_ ? trace.events.front().time : 0;
    out.end_time = end_time;
    static const std::string unnamed;
    for (std::uint32_t lane = 0; lane < tb_.size(); ++lane) {
        const ThreadBuild& b = tb_[lane];
        ThreadLane& tl = out.threads[lane];
        // A thread that did not stop was alive, in its last state, to the trace's end.
        if (b.alive) {
            if (b.has_open) {
                Interval open = b.open;
                open.end = std::max(open.start, end_time);
                tl.lane.intervals.push_back(open);
            }
            tl.alive_ns += std::max<std::int64_t>(0, end_time - b.alive_since);
            tl.alive_end = std::max(b.alive_since, end_time);
        }
        for (std::uint32_t z : b.zone_stack) tl.zones[z].end = b.alive ? end_time : tl.last_time;
        // The recorded name, except a blocking-pool thread's: every tool names it alike (trace_vocabulary.hpp).
        const std::string& recorded = lane < trace.threads.size() ? trace.threads[lane].name : unnamed;
        tl.name = !recorded.empty() && !trace::isBlockingPoolWorker(tl.worker) ? recorded : trace::threadDisplayName(tl.worker, lane);
    }
    for (std::uint32_t f = 0; f < fb_.size(); ++f) {
        const FiberBuild& b = fb_[f];
        FiberLane& fl = out.fibers[f];
        if (b.has_open) {
            Interval open = b.open;
            open.end = std::max(open.start, end_time);
            auto& intervals = fl.lane.intervals;
            if (intervals.size() == intervals.capacity()) intervals.reserve(intervals.size() + 1); // exact, not doubled
            intervals.push_back(open);
        }
        if (!fl.zones().empty()) {
            std::vector<Zone>& zones = fl.editZones();
            if (const auto it = zone_stacks_.find(f); it != zone_stacks_.end())
                for (std::uint32_t z : it->second) zones[z].end = end_time;
            // Zones are opened in time order, so this is a no-op check in practice.
            const auto by_start = [](const Zone& a, const Zone& z) { return a.start < z.start; };
            if (!std::is_sorted(zones.begin(), zones.end(), by_start)) std::stable_sort(zones.begin(), zones.end(), by_start);
        }
        // Its name: the string its create or fiber-name record gave (read now,
        // so a string defined after the record still names it), else its number.
        // (An id whose string is empty or undefined names nothing: named() is false.)
        if (b.name_id != 0) fl.setRecordedName(trace.string(b.name_id));
    }
    // Lanes by worker index, then the threads of no known worker by number.
    {
        const std::size_t count = out.threads.size();
        std::vector<std::uint32_t> order(count);
        for (std::uint32_t t = 0; t < count; ++t) order[t] = t;
        std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
            const std::int64_t wa = out.threads[a].worker, wb = out.threads[b].worker;
            if ((wa >= 0) != (wb >= 0)) return wa >= 0;
            return wa >= 0 ? wa < wb : a < b;
        });
        out.lane_of_thread.assign(count, 0);
        for (std::uint32_t lane = 0; lane < count; ++lane) out.lane_of_thread[order[lane]] = lane;
        permute(out.threads, order);
    }
    // The rest is split in two, run on two threads where the trace is big
    // enough to be worth a thread (issue 13: load time), touching disjoint
    // parts of `out`:
    //   * the thread lanes (a few long lanes, whose compaction and levels of
    //     detail take ~8% of a 10M-event load) and the replay index (its
    //     items' checkpoints and compaction), then the build's scratch,
    //     freed when `scratch` is given (finish(): ~200 ms at 10M events,
    //     mostly the kernel taking the pages back);
    //   * the fibers (their order by id, their lanes' store), the flows and
    //     the latency samples.
    // The fibers' order is read from the scratch before either starts. A
    // small trace, or one where no thread can be started, does both here.
    std::vector<std::uint32_t> fiber_order = fiberOrder();
    const auto index_threads_and_replay = [&out, scratch] {
        for (ThreadLane& tl : out.threads) {
            trimSlack(tl.lane.intervals);
            tl.lane.intervals.compact();
            trimSlack(tl.instants);
            trimSlack(tl.instant_fibers);
            trimSlack(tl.zones);
            buildLaneIndex(tl.lane);
        }
        trimSlack(out.replay.items);
        for (auto& owners : out.replay.slots) owners.shrink_to_fit();
        buildReplayIndex(out);
        out.replay.items.compact();
        if (scratch) scratch->release();
    };
    std::size_t thread_intervals = 0;
    for (const ThreadLane& tl : out.threads) thread_intervals += tl.lane.intervals.size();
    std::future<void> helper;
    if (thread_intervals + out.replay.items.size() >= kParallelIndexIntervals) {
        try {
            helper = std::async(std::launch::async, index_threads_and_replay);
        } catch (const std::system_error&) {
            // No thread (a process or memory limit): done below, here.
        }
    }
    permute(out.fibers, fiber_order);
    fiber_order = {};
    sortFlows(out.flows.stored);
    // The reach of the longest flow so far, at the end of each block of flows.
    out.flow_reach.assign((out.flows.size() + kFlowReachBlock - 1) / kFlowReachBlock, INT64_MIN);
    std::int64_t reach = INT64_MIN;
    for (std::size_t k = 0; k < out.flows.size(); ++k)
        out.flow_reach[k / kFlowReachBlock] = reach = std::max(reach, out.flows.stored[k].to.time);
    // Give back the growth slack: the model lives as long as the trace is open.
    trimSlack(out.fibers);
    // The fiber lanes' intervals move into one store (lane.hpp: a block per
    // lane cost ~76 bytes with the allocator's): the lanes that fit the
    // compact format are counted, then written in lane order, each list
    // freeing its build block (buildTimeline's malloc_trim hands the pages
    // back). A lane that does not fit keeps its block, trimmed.
    std::size_t store_words = 0;
    for (FiberLane& fl : out.fibers) {
        fl.trimZones();
        buildLaneIndex(fl.lane);
        const std::size_t words = fl.lane.intervals.storeWords();
        if (words == 0) {
            trimSlack(fl.lane.intervals);
            fl.lane.intervals.compact();
        }
        store_words += words;
    }
    {
        LaneStore store(store_words);
        std::uint64_t* at = store.data();
        for (FiberLane& fl : out.fibers)
            if (const std::size_t words = fl.lane.intervals.storeWords()) {
                fl.lane.intervals.moveToStore(at);
                at += words;
            }
        out.fiber_store = std::move(store); // (frees a store that an earlier close wrote, copied from above)
    }
    // What the fiber lanes give back is kept as references to them (after
    // the lanes' last change: they move into the store just above).
    keepSpawnsInLanes(out);
    keepLatenciesInLanes(out);
    trimSlack(out.flows.stored);
    trimSlack(out.latencies.stored);
    if (helper.valid()) helper.get(); // rethrows what it threw (bad_alloc)
    else index_threads_and_replay();
}

} // namespace

// --- TimelineBuilder ------------------------------------------------------------

struct TimelineBuilder::Impl {
    Builder builder;
    std::size_t restarts = 0;
};

TimelineBuilder::TimelineBuilder() : impl_(std::make_unique<Impl>()) {}
TimelineBuilder::~TimelineBuilder() = default;
TimelineBuilder::TimelineBuilder(TimelineBuilder&&) noexcept = default;
TimelineBuilder& TimelineBuilder::operator=(TimelineBuilder&&) noexcept = default;

void TimelineBuilder::append(const trace::Trace& trace) {
    if (impl_->builder.append(trace)) return;
    // What arrived changes what records already read mean: read them all again.
    ++impl_->restarts;
    impl_->builder = Builder();
    const bool whole = impl_->builder.append(trace); // a first append never starts over
    (void)whole;
}

bool TimelineBuilder::appendStreams(const trace::Trace& trace, const std::vector<std::vector<trace::Event>>& per_thread) {
    if (impl_->builder.appendStreams(trace, per_thread)) return true;
    impl_->builder = Builder(); // (what it read of them, if anything, is dropped: append reads trace.events anew)
    return false;
}

void TimelineBuilder::reset() { impl_->builder = Builder(); }
std::size_t TimelineBuilder::appended() const noexcept { return impl_->builder.appended(); }
std::size_t TimelineBuilder::restarts() const noexcept { return impl_->restarts; }

Timeline TimelineBuilder::snapshot(const trace::Trace& trace) const {
    Timeline out = impl_->builder.model();
    impl_->builder.close(out, trace);
    return out;
}

Timeline TimelineBuilder::finish(const trace::Trace& trace) && {
    Builder& builder = impl_->builder;
    builder.close(builder.model(), trace, &builder); // (frees the builder's scratch)
    Timeline out = std::move(builder.model());
    impl_.reset();
    return out;
}

std::uint32_t InstantList::wholeAt(std::size_t k) const noexcept { return sideValueAt(whole_, k); }

std::uint64_t instantLabel(const trace::Trace& trace, const Instant& instant) noexcept {
    std::uint64_t label = 0;
    if (instant.event < trace.events.size()) (void)trace::firstField(trace.events[instant.event], trace::FieldType::String, label);
    return label;
}

std::uint64_t instantFiber(const trace::Trace& trace, const ThreadLane& lane, std::size_t k) noexcept {
    if (k >= lane.instants.size()) return 0;
    const std::uint32_t event = lane.instants[k].event;
    if (std::uint64_t fiber = 0; event < trace.events.size() && firstFiber(trace.events[event], fiber)) return fiber;
    const auto& kept = lane.instant_fibers;
    const auto it = std::lower_bound(kept.begin(), kept.end(), static_cast<std::uint32_t>(k),
                                     [](const std::pair<std::uint32_t, std::uint64_t>& p, std::uint32_t index) { return p.first < index; });
    return it != kept.end() && it->first == k ? it->second : 0;
}

FiberLane::Fields FiberLane::fields() const noexcept {
    return {fiber(), parent(), awaitedBy(), createdThread(), (bits_ & kTimeWhole) != 0};
}

void FiberLane::store(const Fields& f) {
    const bool wide_id = f.fiber >= kWideId;
    std::uint64_t parent_code = 0;
    if (f.parent != 0) {
        const std::uint64_t code = f.fiber - f.parent + kParentBias; // (modular)
        parent_code = code >= 1 && code < kParentMask ? code : kParentMask;
    }
    const std::uint64_t awaited = f.awaited_by == 0 ? kAwaitedNone : f.awaited_by == f.parent ? kAwaitedParent : kAwaitedWhole;
    std::uint64_t thread = kThreadMask; // (whole)
    if (f.created_thread == -1) thread = 0;
    else if (f.created_thread >= 0 && static_cast<std::uint64_t>(f.created_thread) + 1 < kThreadMask) thread = static_cast<std::uint64_t>(f.created_thread) + 1;
    if (wide_id || parent_code == kParentMask || awaited == kAwaitedWhole || thread == kThreadMask) {
        Rare& r = rare(); // (may throw: nothing has changed yet)
        if (wide_id) r.fiber = f.fiber;
        if (parent_code == kParentMask) r.parent = f.parent;
        if (awaited == kAwaitedWhole) r.awaited_by = f.awaited_by;
        if (thread == kThreadMask) r.created_thread = f.created_thread;
    }
    bits_ = (wide_id ? kWideId : f.fiber) | parent_code << kParentShift | awaited << kAwaitedShift | thread << kThreadShift |
            (f.time_whole ? kTimeWhole : 0);
}

void FiberLane::setFiberId(std::uint64_t fiber) {
    Fields f = fields();
    f.fiber = fiber;
    store(f);
}

void FiberLane::setCreated(std::int64_t time, std::int32_t thread, std::uint64_t parent, bool starts_lane) {
    if (!starts_lane) rare().created = time; // (the flag is set below, once it is there)
    Fields f = fields();
    f.parent = parent;
    f.created_thread = thread;
    f.time_whole = !starts_lane;
    store(f);
}

void FiberLane::setAwaitedBy(std::uint64_t fiber) {
    Fields f = fields();
    f.awaited_by = fiber;
    store(f);
}

std::string FiberLane::name() const {
    if (named()) return std::string(recordedName());
    if (fiber() == 1) return "main";
    char buf[32] = "fiber #";
    const auto end = std::to_chars(buf + 7, buf + sizeof buf, fiber()).ptr;
    return std::string(buf, end);
}

std::int64_t traceEndTime(const trace::Trace& trace) noexcept {
    if (trace.events.empty()) return std::max<std::int64_t>(0, trace.header.duration_ns);
    return std::max(trace.events.back().time, trace.header.duration_ns);
}

Timeline buildTimeline(const trace::Trace& trace) {
    Timeline timeline;
    {
        TimelineBuilder builder;
        builder.append(trace);
        timeline = std::move(builder).finish(trace);
    }
#ifdef __GLIBC__
    // The build's scratch (per-fiber state, maps, pools: tens of bytes per
    // event) is freed by now, but interleaved with the model's small blocks,
    // so glibc keeps most of its pages resident; the model lives as long as
    // the trace is open, so hand them back (issue 13: resident memory).
    malloc_trim(0);
#endif
    return timeline;
}

const FiberLane* findFiber(const Timeline& timeline, std::uint64_t fiber) noexcept {
    const auto& fibers = timeline.fibers;
    if (fibers.empty() || fiber < fibers.front().fiber()) return nullptr;
    // Ids are usually dense: try where the fiber would be if they all were.
    const std::uint64_t guess = fiber - fibers.front().fiber();
    if (guess < fibers.size() && fibers[guess].fiber() == fiber) return &fibers[guess];
    auto it = std::lower_bound(fibers.begin(), fibers.end(), fiber, [](const FiberLane& f, std::uint64_t id) { return f.fiber() < id; });
    return it != fibers.end() && it->fiber() == fiber ? &*it : nullptr;
}

const ThreadLane* findThread(const Timeline& timeline, std::uint32_t thread) noexcept {
    if (thread >= timeline.lane_of_thread.size()) return nullptr;
    return &timeline.threads[timeline.lane_of_thread[thread]];
}

std::uint64_t runningFiber(const Timeline& timeline, std::uint32_t thread, std::int64_t time) noexcept {
    const ThreadLane* lane = findThread(timeline, thread);
    if (!lane) return 0;
    const std::size_t k = intervalAt(lane->lane, time);
    if (k == kNone) return 0;
    const Interval& iv = lane->lane.intervals[k];
    return iv.state == State::Running ? iv.fiber : 0;
}

Flow flowAt(const Timeline& timeline, std::size_t k) noexcept {
    const auto place = timeline.flows.place(k);
    if (!place.ref) return timeline.flows.stored[place.index];
    Flow flow;
    (void)spawnFromLane(timeline.fibers[timeline.flows.refs[place.index]], flow); // (it did when the flow was kept so)
    return flow;
}

LatencySample latencyAt(const Timeline& timeline, std::size_t k) noexcept {
    const auto place = timeline.latencies.place(k);
    if (!place.ref) return timeline.latencies.stored[place.index];
    const LatencyRef ref = timeline.latencies.refs[place.index];
    return latencyFromLane(timeline.fibers[ref.lane()], ref.interval());
}

void flowsInRange(const Timeline& timeline, std::int64_t t0, std::int64_t t1, std::vector<std::uint32_t>& out,
                  unsigned kind_mask, std::size_t limit) {
    out.clear();
    const auto& reach = timeline.flow_reach;
    // flow_reach is non-decreasing: the first block holding a flow that could
    // end at or after t0 (the flows before it all end before t0).
    std::size_t k = static_cast<std::size_t>(std::lower_bound(reach.begin(), reach.end(), t0) - reach.begin()) * kFlowReachBlock;
    for (; k < timeline.flows.size() && out.size() < limit; ++k) {
        const Flow flow = flowAt(timeline, k);
        if (flow.from.time > t1) break;
        if (flow.to.time < t0) continue;
        if (!(kind_mask & (1u << static_cast<unsigned>(flow.kind)))) continue;
        out.push_back(static_cast<std::uint32_t>(k));
    }
}

namespace {

// Events of `kind` in stride `b` (events [b * kKindStride, (b + 1) * kKindStride)).
std::uint32_t inStride(const KindIndex& index, std::size_t b, std::size_t kind) noexcept {
    const std::uint32_t end = b + 1 < index.before.size() ? index.before[b + 1][kind] : index.total[kind];
    return end - index.before[b][kind];
}

} // namespace

namespace {

bool threadMayBeIn(const KindIndex& index, std::size_t b, std::uint32_t thread) noexcept {
    return b >= index.thread_bits.size() || (index.thread_bits[b] >> (thread % 64) & 1);
}

// The first index p in [from, size) with hit(p), skipping each whole stride
// for which mayHold(stride) is false; else size.
template <class MayHold, class Hit>
std::size_t scanForward(std::size_t from, std::size_t size, MayHold&& mayHold, Hit&& hit) {
    for (std::size_t p = from; p < size;) {
        if (p % kKindStride == 0 && !mayHold(p / kKindStride)) {
            p += kKindStride;
            continue;
        }
        if (hit(p)) return p;
        ++p;
    }
    return size;
}

// The last index p before `before` with hit(p), skipping strides likewise; else kNone.
template <class MayHold, class Hit>
std::size_t scanBackward(std::size_t before, std::size_t size, MayHold&& mayHold, Hit&& hit) {
    for (std::size_t p = std::min(before, size); p > 0;) {
        if (p % kKindStride == 0 && !mayHold(p / kKindStride - 1)) {
            p -= kKindStride;
            continue;
        }
        --p;
        if (hit(p)) return p;
    }
    return kNone;
}

} // namespace

std::size_t nextOfKind(const Timeline& timeline, const trace::Trace& trace, trace::EventKind kind, std::size_t from) noexcept {
    const KindIndex& index = timeline.kinds;
    const auto k = static_cast<std::size_t>(kind);
    return scanForward(
        from, trace.events.size(), [&](std::size_t b) { return b >= index.before.size() || inStride(index, b, k) > 0; },
        [&](std::size_t p) { return trace.events.kind(p) == kind; });
}

std::size_t previousOfKind(const Timeline& timeline, const trace::Trace& trace, trace::EventKind kind, std::size_t before) noexcept {
    const KindIndex& index = timeline.kinds;
    const auto k = static_cast<std::size_t>(kind);
    return scanBackward(
        before, trace.events.size(), [&](std::size_t b) { return b >= index.before.size() || inStride(index, b, k) > 0; },
        [&](std::size_t p) { return trace.events.kind(p) == kind; });
}

std::size_t nextOnThread(const Timeline& timeline, const trace::Trace& trace, std::uint32_t thread, std::size_t from) noexcept {
    return scanForward(
        from, trace.events.size(), [&](std::size_t b) { return threadMayBeIn(timeline.kinds, b, thread); },
        [&](std::size_t p) { return trace.events.thread(p) == thread; });
}

std::size_t previousOnThread(const Timeline& timeline, const trace::Trace& trace, std::uint32_t thread, std::size_t before) noexcept {
    return scanBackward(
        before, trace.events.size(), [&](std::size_t b) { return threadMayBeIn(timeline.kinds, b, thread); },
        [&](std::size_t p) { return trace.events.thread(p) == thread; });
}

std::size_t countOfKind(const Timeline& timeline, const trace::Trace& trace, trace::EventKind kind, std::size_t lo, std::size_t hi) noexcept {
    const auto& events = trace.events;
    const KindIndex& index = timeline.kinds;
    const auto k = static_cast<std::size_t>(kind);
    hi = std::min(hi, events.size());
    if (lo >= hi) return 0;
    // Events of `kind` before p: the stride's count, plus the part of the stride before p.
    const auto rank = [&](std::size_t p) -> std::size_t {
        const std::size_t b = p / kKindStride;
        if (b >= index.before.size()) return index.total[k]; // p == events.size(), a stride's start
        std::size_t n = index.before[b][k];
        for (std::size_t q = b * kKindStride; q < p; ++q) n += events.kind(q) == kind;
        return n;
    };
    return rank(hi) - rank(lo);
}

std::size_t firstEventAt(const trace::Trace& trace, std::int64_t time, bool after) noexcept {
    const auto& events = trace.events;
    const auto it = after ? std::upper_bound(events.begin(), events.end(), time, [](std::int64_t t, const trace::Event& e) { return t < e.time; })
                          : std::lower_bound(events.begin(), events.end(), time, [](const trace::Event& e, std::int64_t t) { return e.time < t; });
    return static_cast<std::size_t>(it - events.begin());
}

const char* flowKindName(FlowKind kind) noexcept {
    switch (kind) {
    case FlowKind::Wakeup: return "wakeup";
    case FlowKind::Steal: return "steal";
    case FlowKind::Spawn: return "spawn";
    case FlowKind::Completion: return "completion";
    case FlowKind::AwaitChain: return "await";
    case FlowKind::Cancel: return "cancel";
    case FlowKind::Canceled: return "canceled";
    case FlowKind::MutexHandoff: return "mutex-handoff";
    case FlowKind::ConditionWake: return "condition-wake";
    }
    return "unknown";
}

} // namespace fiberscope::analysis
