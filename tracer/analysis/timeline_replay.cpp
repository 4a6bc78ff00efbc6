// The replay's rules: what each record does to the builder's state
// (Builder::event and the functions it calls), record by record in time
// order. The Builder, the state it keeps and the costs it is held to are in
// timeline_builder.hpp; the validator (validate.cpp) replays the same records
// to check them, and its rules can be read beside these.
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
#include "timeline_builder.hpp"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fiberscope/trace_merge.hpp"
#include "fiberscope/trace_vocabulary.hpp"
#include "read_back.hpp"

namespace fiberscope::analysis::detail {

using trace::Event;
using trace::EventKind;
using trace::ScheduleHow;
using trace::SwitchReason;

namespace {

// A fiber's life is Ready, Running, then (Waiting, Ready, Running)* and
// Finished: 3 + 3k intervals. Starting its lane at capacity 3 and doubling
// fits k = 0, 1, 3, 7 exactly, so most fiber lanes need no trimming copy.
constexpr std::size_t kFiberLaneStart = 3;

// Record kinds that add an Instant to their thread's lane (see Builder::event):
// the record table's instants, all but switch, park, unpark, zone edges, strings.
bool makesInstant(EventKind kind) noexcept { return trace::recordKind(kind).instant; }

} // namespace

bool Builder::append(const trace::Trace& trace) {
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

bool Builder::appendStreams(const trace::Trace& trace, const std::vector<std::vector<Event>>& per_thread) {
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

// --- Threads as they appear ----------------------------------------------
// The build indexes threads by their trace index (lane_of_thread is the
// identity until close()), so a thread that appears later takes the next
// index and nothing read before moves. Its queue slot is its index too.
void Builder::ensureThreads(std::size_t count) {
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
bool Builder::learnWorker(std::uint32_t t, std::int64_t w) {
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

bool Builder::refreshThreads(const trace::Trace& trace) {
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
bool Builder::lookAhead(const trace::EventList& events, std::size_t from, std::size_t to) {
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
bool Builder::lookAheadStreams(const std::vector<std::vector<Event>>& per_thread, std::size_t total) {
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
bool Builder::scan(const Records& records, std::size_t from, std::size_t to, std::vector<KindCounts>& kinds, std::size_t& switch_ins) {
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
void Builder::reserveMore(List& v, std::size_t more) {
    const std::size_t need = v.size() + more;
    if (need > v.capacity()) v.reserve(v.capacity() ? std::max(need, 2 * v.capacity()) : need);
}

void Builder::reserveLists(const std::vector<KindCounts>& kinds, std::size_t switch_ins, std::size_t events_added) {
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
void Builder::raiseDenseLimit(std::size_t events) {
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
std::int64_t Builder::laneOfWorker(std::uint64_t worker) {
    auto it = lane_of_worker_.find(static_cast<std::int64_t>(worker));
    if (it != lane_of_worker_.end()) return static_cast<std::int64_t>(it->second);
    missed_workers_.insert(static_cast<std::int64_t>(worker));
    return -1;
}

std::uint32_t Builder::threadOfLane(std::uint32_t lane) const { return lane; }

// --- Fibers -------------------------------------------------------------
std::uint32_t Builder::fiberIndex(std::uint64_t id, bool* created) {
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

void Builder::setFiber(std::uint32_t f, std::int64_t t, State s, std::int32_t thread, WaitReason r, std::uint32_t cause) {
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
void Builder::endFiberLane(std::uint32_t f, std::int64_t t) {
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
FlowEnd Builder::finishEnd(std::uint32_t f) const {
    const Interval& open = fb_[f].open;
    return FlowEnd{open.start, tl_.fibers[f].fiber(), static_cast<std::uint32_t>(open.thread), open.cause};
}

// Marks a fiber ready (not if it is running: a late record; nor if finished).
bool Builder::makeReady(std::uint32_t f, std::int64_t t, std::int32_t thread, std::uint32_t cause) {
    FiberBuild& b = fb_[f];
    if (b.finished || (b.has_open && b.open.state == State::Running)) return false;
    if (!(b.has_open && b.open.state == State::Ready)) b.ready_since = t;
    setFiber(f, t, State::Ready, thread, WaitReason::None, cause);
    return true;
}

void Builder::finishFiber(std::uint32_t f, std::int64_t t, std::uint32_t thread, std::uint32_t event) {
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
std::uint32_t Builder::newItem(const StateItem& item) {
    tl_.replay.items.push_back(item);
    return static_cast<std::uint32_t>(tl_.replay.items.size() - 1);
}

// Ends item `id` at `t` (the items are packed: changed by value, not in place).
StateItem Builder::endItem(std::uint32_t id, std::int64_t t) {
    StateItem item = tl_.replay.items[id];
    item.end = t;
    tl_.replay.items.set(id, item);
    return item;
}

// Where a steal's flow starts: when and where the stolen fiber was queued
// (its open queue stay), else the steal itself on the victim's thread.
FlowEnd Builder::stolenFrom(std::uint64_t fiber, std::int64_t victim, std::int64_t t, std::uint32_t here) {
    FlowEnd from{t, fiber, victim >= 0 ? threadOfLane(static_cast<std::uint32_t>(victim)) : here, kNoEvent};
    const std::uint32_t f = fiberIndex(fiber);
    if (fb_[f].ready_item != kNoItem) {
        const StateItem& item = tl_.replay.items[fb_[f].ready_item];
        from.time = item.start;
        from.event = item.event;
    }
    return from;
}

void Builder::openQueued(std::uint32_t f, std::uint32_t slot, std::int64_t t, std::uint32_t event) {
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

void Builder::closeQueued(std::uint32_t f, std::int64_t t) {
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

std::uint32_t Builder::slotOwner(std::uint32_t slot) const { return tl_.replay.slots[slot].back().thread; }

// A steal record: the thief takes the victim's queue word from `head`
// down. The fibers above it were popped by the owner, which runs them
// next (its switch record comes later): they stay. The word is a stack
// of schedule records' lists, so above the head are the stays opened by
// later schedule records, and those of its own record listed before it;
// a slot's items are in creation order, so they are the few at its end
// and just before the head's: found in O(log n + their number), and the
// rest of the queue moves as a whole (stealQueue).
void Builder::stealWord(std::uint32_t thief, std::uint32_t victim, std::uint64_t head, std::int64_t t) {
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
void Builder::stealQueue(std::uint32_t thief, std::uint32_t victim, std::int64_t t) {
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
const std::vector<std::uint64_t>& Builder::members(std::uint32_t lane, std::uint64_t head, std::uint64_t count) {
    members_.clear();
    if (!tb_[lane].pending_ready.take(head, count, members_)) members_.push_back(head);
    return members_;
}

// --- Threads ---------------------------------------------------------------
void Builder::setThread(std::uint32_t lane, std::int64_t t, State s, std::uint64_t fiber, std::uint32_t cause) {
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

void Builder::startThread(std::uint32_t lane, std::int64_t t) {
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
void Builder::stopThread(std::uint32_t lane, std::int64_t t) {
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
void Builder::restartThread(std::uint32_t lane, std::int64_t t, std::uint32_t cause) {
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
void Builder::event(const Event& e, std::uint32_t i) {
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
        tb_[lane].started_at = t;
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
    case EventKind::ObjectName:
        // The name's text is the trace's: close() looks it up.
        object_names_.push_back({e.arg[0], t, e.arg[1]});
        return;
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
        // The target's start (wakeup_pairing.hpp): a receipt answers a send
        // made after it, a bounce one made before it (a target not yet
        // started: any send).
        std::optional<std::int64_t> started = tb.started_at;
        if (!received) {
            // (Not laneOfWorker: a target that has not appeared yet has not
            // started, which is all this needs to know.)
            const auto target = lane_of_worker_.find(static_cast<std::int64_t>(e.arg[0]));
            started = target != lane_of_worker_.end() ? tb_[target->second].started_at : std::nullopt;
        }
        const auto prefer = [&](const Flow& send) {
            if (!started) return true;
            return received ? send.from.time >= *started : send.from.time < *started;
        };
        if (auto flow = wakeups_.answered(key, answer, prefer); flow && received) {
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

void Builder::addInstant(const Event& e, std::uint32_t i, ThreadLane& tl, const ThreadBuild& tb) {
    Instant instant;
    instant.event = i;
    if (std::uint64_t named = 0; !firstFiber(e, named)) tl.instant_fibers.emplace_back(static_cast<std::uint32_t>(tl.instants.size()), tb.running);
    tl.instants.push_back(instant);
}

void Builder::onSwitch(const Event& e, std::uint32_t i, std::uint32_t lane) {
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

} // namespace fiberscope::analysis::detail
