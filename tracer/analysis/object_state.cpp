// objectStateAt: a snapshotted replay of the records that change a mutex, a
// condition, a queue, a wake-up, a cancel or a timer (see object_state.hpp
// for the design). One apply() is the meaning of each record; the index is
// built by running it twice over those records (once to learn from the
// future who held each mutex, once to take the snapshots).
#include "fiberscope/analysis/object_state.hpp"

#include <algorithm>
#include <cerrno>
#include <optional>
#include <utility>
#include <unordered_set>

#include "fiberscope/trace_vocabulary.hpp"

namespace fiberscope::analysis {

using trace::EventKind;

namespace {

bool relevant(const trace::Event& e) noexcept {
    switch (e.kind) {
    case EventKind::MutexContended:
    case EventKind::MutexHandoff:
    case EventKind::ConditionWait:
    case EventKind::ConditionWake:
    case EventKind::QueueOp:
    case EventKind::SemaphoreOp:
    case EventKind::RwLockOp:
    case EventKind::EventOp:
    case EventKind::CancelRequest:
    case EventKind::CancelDelivered:
    case EventKind::FiberFinish:
    case EventKind::WakeupSent:
    case EventKind::WakeupReceived:
    case EventKind::WakeupBounced:
    case EventKind::ThreadStart: return true;
    case EventKind::Submit:
    case EventKind::Complete: return e.small == trace::kOpTimeout;
    default: return false;
    }
}

// A fiber joins or leaves a waiter list; s.listed follows.
void join(ObjectReplay& s, FiberList& list, std::uint64_t fiber) { s.listed += list.pushBack(fiber); }
void leave(ObjectReplay& s, FiberList& list, std::uint64_t fiber) { s.listed -= list.erase(fiber); }
void clearList(ObjectReplay& s, FiberList& list) { s.listed -= list.size(), list.clear(); }

// (insert, not emplace: a set's emplace makes the node before it finds the pair there, and
// most waits are a fiber waiting again for what it waited for before.)
void noteWait(ObjectReplay& s, std::uint64_t fiber, std::uint64_t object) { s.waits.insert({fiber, object}); }

// The records after which a fiber waits for nothing, though none names the
// object it waited for (canceled, timed out, finished): its fiber, else none.
std::optional<std::uint64_t> leavesAll(const trace::Event& e) noexcept {
    switch (e.kind) {
    case EventKind::CancelDelivered:
    case EventKind::FiberFinish: return e.arg[0];
    case EventKind::ConditionWake:
        if (static_cast<trace::ConditionWakeHow>(e.small) == trace::ConditionWakeHow::TimedOut) return e.arg[0];
        return std::nullopt;
    default: return std::nullopt;
    }
}

// The objects `fiber` may wait for, as a range of s.waits.
auto waitsOf(const ObjectReplay& s, std::uint64_t fiber) {
    const auto first = s.waits.lower_bound({fiber, 0});
    auto last = first;
    while (last != s.waits.end() && last->first == fiber) ++last;
    return std::pair{first, last};
}

// After a record of `fiber` on queue `q`: its `since` is now, if it is still
// blocked in it (so an earlier wake no longer counts), else it has none.
void touchQueue(ObjectReplay& s, ObjectReplay::Queue& q, std::uint64_t fiber) {
    if (q.producers.contains(fiber) || q.consumers.contains(fiber)) s.listed += q.since.insert_or_assign(fiber, ++s.clock).second;
    else s.listed -= q.since.erase(fiber);
}

// A fiber that stopped waiting for something without a record naming the
// object (canceled, timed out, finished) leaves every list it is in.
void leaveAll(ObjectReplay& s, std::uint64_t fiber) {
    const auto [first, last] = waitsOf(s, fiber);
    for (auto it = first; it != last; ++it) {
        const std::uint64_t object = it->second;
        if (auto m = s.mutexes.find(object); m != s.mutexes.end()) leave(s, m->second.waiters, fiber);
        if (auto c = s.conditions.find(object); c != s.conditions.end()) {
            leave(s, c->second, fiber);
            if (c->second.empty()) s.conditions.erase(c);
        }
        if (auto q = s.queues.find(object); q != s.queues.end()) {
            leave(s, q->second.producers, fiber), leave(s, q->second.consumers, fiber);
            s.listed -= q->second.since.erase(fiber);
        }
        // Its waiting ends; a hold it has (a reader's) stays until unlocked.
        if (auto m = s.semaphores.find(object); m != s.semaphores.end()) leave(s, m->second.waiters, fiber);
        if (auto r = s.rwlocks.find(object); r != s.rwlocks.end())
            leave(s, r->second.waiting_writers, fiber), leave(s, r->second.waiting_readers, fiber);
        if (auto v = s.events.find(object); v != s.events.end()) leave(s, v->second.waiters, fiber);
    }
    s.waits.erase(first, last);
    s.wakes.erase(fiber);
    s.inside.erase(fiber); // (a Queue's wait has no gave-up record)
}

// A mutex or condition record of a fiber inside a Semaphore or RwLock: the
// object is that primitive's part.
void learnPart(ObjectReplay& s, std::uint64_t fiber, std::uint64_t object) {
    const auto in = s.inside.find(fiber);
    if (in != s.inside.end()) s.part_of.emplace(object, in->second);
}
void enterPrimitive(ObjectReplay& s, std::uint64_t fiber, std::uint64_t primitive) { s.inside.insert_or_assign(fiber, primitive); }
void leavePrimitive(ObjectReplay& s, std::uint64_t fiber) { s.inside.erase(fiber); }

// A Queue's put or get waits on one of its conditions: a wake of a fiber
// blocked in it lets it retry; its next condition-wait blocks it again.
// Kept once per fiber, not in each queue it is blocked in (a fiber in many
// queues, woken many times, would make that quadratic): a queue reads it
// when asked (see ObjectReplay::Queue::since).
void queueWoken(ObjectReplay& s, std::uint64_t fiber, bool woken) {
    const auto first = s.waits.lower_bound({fiber, 0});
    if (first == s.waits.end() || first->first != fiber) return; // blocked in no queue
    s.wakes[fiber] = ObjectReplay::Wake{woken, ++s.clock};
}

// Whether a fiber blocked in queue `q` (in its producers or consumers) was
// woken since its last record there.
bool wokenIn(const ObjectReplay& s, const ObjectReplay::Queue& q, std::uint64_t fiber) {
    const auto w = s.wakes.find(fiber);
    const auto since = q.since.find(fiber);
    return w != s.wakes.end() && w->second.woken && since != q.since.end() && w->second.at > since->second;
}

std::int64_t workerOf(const ObjectIndex& index, std::uint32_t thread) noexcept {
    return thread < index.worker_of.size() ? index.worker_of[thread] : -1;
}

void apply(ObjectReplay& s, const ObjectIndex& index, const trace::Event& e, std::uint32_t id) {
    switch (e.kind) {
    case EventKind::MutexContended: {
        learnPart(s, e.arg[0], e.arg[1]);
        ObjectReplay::Mutex& m = s.mutexes[e.arg[1]];
        if (m.waiters.empty()) {
            // A new episode of waiting: whoever holds it locked it without a record.
            const auto h = index.holder_at.find(id);
            m.owner = h == index.holder_at.end() ? 0 : h->second;
            m.owner_since = -1;
        }
        join(s, m.waiters, e.arg[0]); // (again: it moves to the top of the stack)
        noteWait(s, e.arg[0], e.arg[1]);
        break;
    }
    case EventKind::MutexHandoff: {
        learnPart(s, e.arg[0], e.arg[2]), learnPart(s, e.arg[1], e.arg[2]);
        ObjectReplay::Mutex& m = s.mutexes[e.arg[2]];
        m.owner = e.arg[1];
        m.owner_since = e.time;
        leave(s, m.waiters, e.arg[1]);
        break;
    }
    case EventKind::ConditionWait: {
        learnPart(s, e.arg[0], e.arg[1]);
        join(s, s.conditions[e.arg[1]], e.arg[0]);
        noteWait(s, e.arg[0], e.arg[1]);
        queueWoken(s, e.arg[0], false);
        break;
    }
    case EventKind::ConditionWake: {
        learnPart(s, e.arg[0], e.arg[1]);
        const auto how = static_cast<trace::ConditionWakeHow>(e.small);
        auto it = s.conditions.find(e.arg[1]);
        if (it != s.conditions.end()) {
            // Before version 7 a broadcast's one record named the head and
            // woke every waiter; since, each fiber it woke has its record.
            if (how == trace::ConditionWakeHow::Broadcast && index.broadcast_wakes_all) {
                it->second.forEach([&](std::uint64_t f) { queueWoken(s, f, true); });
                clearList(s, it->second);
            } else leave(s, it->second, e.arg[0]);
            if (it->second.empty()) s.conditions.erase(it);
        }
        // A timed-out wait returns: a Queue put or get blocked on it gives up.
        if (how == trace::ConditionWakeHow::TimedOut) leaveAll(s, e.arg[0]);
        else queueWoken(s, e.arg[0], true);
        break;
    }
    case EventKind::QueueOp: {
        ObjectReplay::Queue& q = s.queues[e.arg[0]];
        const std::uint64_t fiber = e.arg[1];
        switch (static_cast<trace::QueueOp>(e.small)) {
        case trace::QueueOp::Put: ++q.depth, leave(s, q.producers, fiber), leavePrimitive(s, fiber); break;
        case trace::QueueOp::Get: q.depth = std::max<std::int64_t>(0, q.depth - 1), leave(s, q.consumers, fiber), leavePrimitive(s, fiber); break;
        case trace::QueueOp::PutBlocked: join(s, q.producers, fiber), noteWait(s, fiber, e.arg[0]), enterPrimitive(s, fiber, e.arg[0]); break;
        case trace::QueueOp::GetBlocked: join(s, q.consumers, fiber), noteWait(s, fiber, e.arg[0]), enterPrimitive(s, fiber, e.arg[0]); break;
        case trace::QueueOp::Close:
            q.closed = true, clearList(s, q.producers), clearList(s, q.consumers);
            s.listed -= q.since.size(), q.since.clear();
            return;
        }
        // Any record of it on the queue ends a wake's effect there.
        touchQueue(s, q, fiber);
        break;
    }
    case EventKind::SemaphoreOp: {
        ObjectReplay::Semaphore& m = s.semaphores[e.arg[0]];
        const std::uint64_t fiber = e.arg[1];
        switch (static_cast<trace::SemaphoreOp>(e.small)) {
        case trace::SemaphoreOp::Take: ++m.taken, leave(s, m.waiters, fiber), leavePrimitive(s, fiber); break;
        case trace::SemaphoreOp::Blocked: join(s, m.waiters, fiber), noteWait(s, fiber, e.arg[0]), enterPrimitive(s, fiber, e.arg[0]); break;
        case trace::SemaphoreOp::GaveUp: leave(s, m.waiters, fiber), leavePrimitive(s, fiber); break;
        case trace::SemaphoreOp::Post: m.posted += e.arg[2]; break;
        }
        break;
    }
    case EventKind::RwLockOp: {
        ObjectReplay::RwLock& r = s.rwlocks[e.arg[0]];
        const std::uint64_t fiber = e.arg[1];
        switch (static_cast<trace::RwLockOp>(e.small)) {
        case trace::RwLockOp::ReadLocked: leave(s, r.waiting_readers, fiber), join(s, r.readers, fiber), leavePrimitive(s, fiber); break;
        case trace::RwLockOp::WriteLocked:
            leave(s, r.waiting_writers, fiber), r.writer = fiber, r.writer_since = e.time, leavePrimitive(s, fiber);
            break;
        case trace::RwLockOp::ReadBlocked: join(s, r.waiting_readers, fiber), noteWait(s, fiber, e.arg[0]), enterPrimitive(s, fiber, e.arg[0]); break;
        case trace::RwLockOp::WriteBlocked: join(s, r.waiting_writers, fiber), noteWait(s, fiber, e.arg[0]), enterPrimitive(s, fiber, e.arg[0]); break;
        case trace::RwLockOp::GaveUp: leave(s, r.waiting_readers, fiber), leave(s, r.waiting_writers, fiber), leavePrimitive(s, fiber); break;
        case trace::RwLockOp::ReadUnlock: leave(s, r.readers, fiber); break;
        case trace::RwLockOp::WriteUnlock: r.writer = 0, r.writer_since = -1; break;
        }
        break;
    }
    case EventKind::EventOp: {
        ObjectReplay::SyncEvent& v = s.events[e.arg[0]];
        const std::uint64_t fiber = e.arg[1];
        switch (static_cast<trace::EventOp>(e.small)) {
        case trace::EventOp::Set: v.set = 1; break;
        case trace::EventOp::Reset: v.set = 0; break;
        case trace::EventOp::Blocked:
            v.set = 0, join(s, v.waiters, fiber), noteWait(s, fiber, e.arg[0]), enterPrimitive(s, fiber, e.arg[0]);
            break;
        case trace::EventOp::Returned:
        case trace::EventOp::GaveUp: leave(s, v.waiters, fiber), leavePrimitive(s, fiber); break;
        }
        break;
    }
    case EventKind::CancelRequest:
        if (!s.cancels.count(e.arg[0])) s.cancels[e.arg[0]] = PendingCancel{e.arg[0], e.thread, e.time, id};
        break;
    case EventKind::CancelDelivered:
        s.cancels.erase(e.arg[0]);
        leaveAll(s, e.arg[0]);
        break;
    case EventKind::FiberFinish:
        s.cancels.erase(e.arg[0]);
        leaveAll(s, e.arg[0]);
        break;
    case EventKind::WakeupSent: {
        const PendingWakeup send{e.thread, static_cast<std::int64_t>(e.arg[0]), e.time, id};
        (void)s.wakeups.sent(s.wakeups.key(workerOf(index, e.thread), send.target), send);
        break;
    }
    case EventKind::ThreadStart: s.started[static_cast<std::int64_t>(e.arg[0])] = e.time; break;
    case EventKind::WakeupReceived:
    case EventKind::WakeupBounced: {
        // As the model pairs them (timeline_replay.cpp): a receipt answers a
        // send made after the target's thread-start, a bounce one made before.
        const bool received = e.kind == EventKind::WakeupReceived;
        const std::int64_t target = received ? workerOf(index, e.thread) : static_cast<std::int64_t>(e.arg[0]);
        const auto started = s.started.find(target);
        const auto prefer = [&](const PendingWakeup& send) {
            if (started == s.started.end()) return true;
            return received ? send.sent >= started->second : send.sent < started->second;
        };
        const std::uint64_t key = received ? s.wakeups.key(static_cast<std::int64_t>(e.arg[0]), target)
                                           : s.wakeups.key(workerOf(index, e.thread), target);
        (void)s.wakeups.answered(key, {}, prefer);
        break;
    }
    case EventKind::Submit: {
        const auto f = index.fires_at.find(id);
        const std::uint64_t key = ++s.clock;
        s.timers.emplace(key, TimerState{e.arg[0], e.thread, e.time, f == index.fires_at.end() ? -1 : f->second, id});
        s.timer_of.emplace(e.arg[0], key);
        break;
    }
    case EventKind::Complete: { // ends the fiber's oldest timer
        const auto it = s.timer_of.lower_bound({e.arg[0], 0});
        if (it != s.timer_of.end() && it->first == e.arg[0]) s.timers.erase(it->second), s.timer_of.erase(it);
        break;
    }
    default: break;
    }
}

} // namespace

std::size_t ObjectReplay::size() const noexcept {
    return mutexes.size() + conditions.size() + queues.size() + semaphores.size() + rwlocks.size() + events.size() + inside.size() +
           part_of.size() +
           wakeups.size() + started.size() + cancels.size() + timers.size() + timer_of.size() + waits.size() + wakes.size() + listed;
}

std::size_t ObjectReplay::recount() const {
    std::size_t n = mutexes.size() + conditions.size() + queues.size() + semaphores.size() + rwlocks.size() + events.size() + inside.size() +
                    part_of.size() + wakeups.size() + started.size() + cancels.size() + timers.size() + timer_of.size() + waits.size() + wakes.size();
    for (const auto& [a, m] : semaphores) n += m.waiters.size();
    for (const auto& [a, r] : rwlocks) n += r.readers.size() + r.waiting_writers.size() + r.waiting_readers.size();
    for (const auto& [a, v] : events) n += v.waiters.size();
    for (const auto& [a, m] : mutexes) n += m.waiters.size();
    for (const auto& [a, w] : conditions) n += w.size();
    for (const auto& [a, q] : queues) n += q.producers.size() + q.consumers.size() + q.since.size();
    return n;
}

ObjectIndex buildObjectIndex(const trace::Trace& trace, const Timeline& timeline, std::size_t every) {
    ObjectIndex index;
    index.events_indexed = trace.events.size();
    index.broadcast_wakes_all = trace.header.version != 0 && trace.header.version <= 6;
    index.worker_of.assign(trace.threads.size(), -1);
    for (const ThreadLane& lane : timeline.threads)
        if (lane.thread < index.worker_of.size()) index.worker_of[lane.thread] = lane.worker;
    // A fiber's finish changes an object only if the fiber was in one of its
    // lists or had a cancel pending: only a record naming it as a waiter (a
    // mutex's, a condition's, a queue's) or a cancel request puts it there.
    // The finishes of the others (most fibers of a busy program: one record
    // in seven of the benchmark's trace) are left out, which keeps the index
    // to the records that change something (4 bytes each, kept while viewing).
    std::unordered_set<std::uint64_t> listed; // fibers a waiter or cancel record named
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
        const trace::Event& e = trace.events[i];
        if (!relevant(e)) continue;
        switch (e.kind) {
        case EventKind::MutexContended:
        case EventKind::ConditionWait:
        case EventKind::CancelRequest: listed.insert(e.arg[0]); break;
        case EventKind::QueueOp:
        case EventKind::SemaphoreOp:
        case EventKind::RwLockOp:
        case EventKind::EventOp: listed.insert(e.arg[1]); break;
        case EventKind::FiberFinish:
            if (!listed.erase(e.arg[0])) continue; // (a finished fiber waits no more)
            break;
        default: break;
        }
        index.records.push_back(static_cast<std::uint32_t>(i));
    }

    // Timers: pair each timeout submit with its fiber's next timeout complete.
    std::multimap<std::uint64_t, std::uint32_t> open_timers; // fiber -> submits (equal keys keep their insertion order)
    for (std::uint32_t id : index.records) {
        const trace::Event& e = trace.events[id];
        if (e.kind == EventKind::Submit) open_timers.emplace(e.arg[0], id);
        else if (e.kind == EventKind::Complete) {
            const auto it = open_timers.lower_bound(e.arg[0]); // its oldest
            if (it == open_timers.end() || it->first != e.arg[0]) continue;
            if (e.signedArg(1) == -ETIME) index.fires_at[it->second] = e.time;
            open_timers.erase(it);
        }
    }

    // Pass 1: who held each mutex while fibers waited (the next hand-off's `from`).
    {
        ObjectReplay s;
        std::map<std::uint64_t, std::uint32_t> episode; // mutex -> the contended record that began its waiting
        std::vector<std::uint64_t> left;                // objects a record took a fiber off without naming them
        for (std::uint32_t id : index.records) {
            const trace::Event& e = trace.events[id];
            if (e.kind == EventKind::MutexContended) {
                const auto m = s.mutexes.find(e.arg[1]);
                if (m == s.mutexes.end() || m->second.waiters.empty()) episode[e.arg[1]] = id;
            } else if (e.kind == EventKind::MutexHandoff) {
                const auto ep = episode.find(e.arg[2]);
                if (ep != episode.end()) index.holder_at[ep->second] = e.arg[0], episode.erase(ep);
            }
            left.clear();
            if (const auto fiber = leavesAll(e)) {
                const auto [first, last] = waitsOf(s, *fiber);
                for (auto it = first; it != last; ++it) left.push_back(it->second);
            }
            apply(s, index, e, id);
            // Waiting that ended without a hand-off (canceled): its holder is
            // unknown. Only such a record empties a mutex's waiters.
            for (std::uint64_t object : left) {
                const auto ep = episode.find(object);
                if (ep == episode.end()) continue;
                const auto m = s.mutexes.find(object);
                if (m == s.mutexes.end() || m->second.waiters.empty()) episode.erase(ep);
            }
        }
    }

    // Pass 2: the snapshots, spaced at least as far apart as they are big.
    ObjectReplay s;
    index.snapshots.push_back(ObjectSnapshot{INT64_MIN, 0, {}});
    if (every == 0) every = 1;
    std::size_t last = 0;
    for (std::size_t i = 0; i < index.records.size(); ++i) {
        const trace::Event& e = trace.events[index.records[i]];
        // Only between records of different times, so a snapshot never splits an instant.
        if (i - last >= every && i - last >= s.size() && trace.events[index.records[i - 1]].time < e.time) {
            index.snapshots.push_back(ObjectSnapshot{e.time, i, s});
            last = i;
        }
        apply(s, index, e, index.records[i]);
    }
    return index;
}

ObjectState objectStateAt(const trace::Trace& trace, const ObjectIndex& index, std::int64_t time) {
    ObjectState out;
    out.time = time;
    if (index.snapshots.empty()) return out;
    // The last snapshot at or before `time`: it holds only records before it.
    auto it = std::upper_bound(index.snapshots.begin(), index.snapshots.end(), time,
                               [](std::int64_t t, const ObjectSnapshot& s) { return t < s.time; });
    const ObjectSnapshot& snap = it == index.snapshots.begin() ? index.snapshots.front() : *std::prev(it);
    ObjectReplay s = snap.state;
    for (std::size_t i = snap.next; i < index.records.size(); ++i) {
        const std::uint32_t id = index.records[i];
        if (id >= trace.events.size() || trace.events[id].time > time) break;
        apply(s, index, trace.events[id], id);
    }
    // A Semaphore's or RwLock's mutex and conditions appear as it.
    const auto part = [&](std::uint64_t object) { return s.part_of.count(object) != 0; };
    for (const auto& [address, m] : s.mutexes) {
        if (part(address)) continue;
        std::vector<std::uint64_t> waiters = m.waiters.fibers();
        std::reverse(waiters.begin(), waiters.end());
        out.mutexes.push_back(MutexState{address, m.owner, m.owner_since, std::move(waiters)});
    }
    for (const auto& [address, w] : s.conditions)
        if (!part(address)) out.conditions.push_back(ConditionState{address, w.fibers()});
    for (const auto& [address, m] : s.semaphores) out.semaphores.push_back(SemaphoreState{address, m.taken, m.posted, m.waiters.fibers()});
    for (const auto& [address, r] : s.rwlocks)
        out.rwlocks.push_back(RwLockState{address, r.writer, r.writer_since, r.readers.fibers(), r.waiting_writers.fibers(),
                                          r.waiting_readers.fibers()});
    for (const auto& [address, v] : s.events) out.events.push_back(SyncEventState{address, v.set, v.waiters.fibers()});
    for (const auto& entry : s.queues) {
        // (Not a structured binding: clang before 16 lets no lambda capture one.)
        const ObjectReplay::Queue& q = entry.second;
        // The woken are not blocked: listed apart, in the order of their wakes.
        QueueState state{entry.first, q.depth, q.closed, {}, {}, {}};
        std::vector<std::pair<std::uint64_t, std::uint64_t>> woken; // (wake's clock, fiber)
        for (const auto& [fiber, since] : q.since)
            if (wokenIn(s, q, fiber)) woken.emplace_back(s.wakes.at(fiber).at, fiber);
        std::sort(woken.begin(), woken.end());
        for (const auto& [at, fiber] : woken) state.woken.push_back(fiber);
        q.producers.forEach([&](std::uint64_t f) {
            if (!wokenIn(s, q, f)) state.producers.push_back(f);
        });
        q.consumers.forEach([&](std::uint64_t f) {
            if (!wokenIn(s, q, f)) state.consumers.push_back(f);
        });
        out.queues.push_back(std::move(state));
    }
    s.wakeups.forEachWaiting([&](const PendingWakeup& w) { out.wakeups.push_back(w); });
    std::sort(out.wakeups.begin(), out.wakeups.end(), [](const PendingWakeup& a, const PendingWakeup& b) {
        return a.sent != b.sent ? a.sent < b.sent : a.event < b.event;
    });
    for (const auto& [fiber, c] : s.cancels) out.cancels.push_back(c);
    std::sort(out.cancels.begin(), out.cancels.end(),
              [](const PendingCancel& a, const PendingCancel& b) { return a.requested < b.requested; });
    out.timers.reserve(s.timers.size());
    for (auto& [key, timer] : s.timers) out.timers.push_back(timer);
    return out;
}

ObjectState objectStateAt(const trace::Trace& trace, const Timeline& timeline, std::int64_t time) {
    return objectStateAt(trace, buildObjectIndex(trace, timeline), time);
}

std::size_t readyHead(const trace::Trace& trace, const std::vector<ReadyEntry>& ready) noexcept {
    if (ready.empty()) return kNone;
    std::size_t head = ready.size() - 1; // by since: the newest is last
    const ReadyEntry& newest = ready[head];
    if (newest.event < trace.events.size()) {
        const trace::Event& e = trace.events[newest.event];
        if (e.kind == EventKind::Schedule)
            for (std::size_t i = ready.size(); i-- > 0 && ready[i].since == newest.since;)
                if (ready[i].event == newest.event && ready[i].fiber == e.arg[0]) return i;
    }
    return head;
}

} // namespace fiberscope::analysis
