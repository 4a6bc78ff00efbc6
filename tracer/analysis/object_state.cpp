// objectStateAt: a snapshotted replay of the records that change a mutex, a
// condition, a queue, a wake-up, a cancel or a timer (see object_state.hpp
// for the design). One apply() is the meaning of each record; the index is
// built by running it twice over those records (once to learn from the
// future who held each mutex, once to take the snapshots).
#include "fiberscope/analysis/object_state.hpp"

#include <algorithm>
#include <cerrno>
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
    case EventKind::CancelRequest:
    case EventKind::CancelDelivered:
    case EventKind::FiberFinish:
    case EventKind::WakeupSent:
    case EventKind::WakeupReceived:
    case EventKind::WakeupBounced: return true;
    case EventKind::Submit:
    case EventKind::Complete: return e.small == trace::kOpTimeout;
    default: return false;
    }
}

void erase(std::vector<std::uint64_t>& list, std::uint64_t fiber) {
    list.erase(std::remove(list.begin(), list.end(), fiber), list.end());
}

bool contains(const std::vector<std::uint64_t>& list, std::uint64_t fiber) {
    return std::find(list.begin(), list.end(), fiber) != list.end();
}

void noteWait(ObjectReplay& s, std::uint64_t fiber, std::uint64_t object) {
    auto& objects = s.waits_of[fiber];
    if (!contains(objects, object)) objects.push_back(object);
}

// A fiber that stopped waiting for something without a record naming the
// object (canceled, timed out, finished) leaves every list it is in.
void leaveAll(ObjectReplay& s, std::uint64_t fiber) {
    const auto of = s.waits_of.find(fiber);
    if (of == s.waits_of.end()) return;
    for (std::uint64_t object : of->second) {
        if (auto m = s.mutexes.find(object); m != s.mutexes.end()) erase(m->second.waiters, fiber);
        if (auto c = s.conditions.find(object); c != s.conditions.end()) {
            erase(c->second, fiber);
            if (c->second.empty()) s.conditions.erase(c);
        }
        if (auto q = s.queues.find(object); q != s.queues.end())
            erase(q->second.producers, fiber), erase(q->second.consumers, fiber), erase(q->second.woken, fiber);
    }
    s.waits_of.erase(of);
}

// A Queue's put or get waits on one of its conditions: a wake of a fiber
// blocked in it lets it retry; its next condition-wait blocks it again.
void queueWoken(ObjectReplay& s, std::uint64_t fiber, bool woken) {
    const auto of = s.waits_of.find(fiber);
    if (of == s.waits_of.end()) return;
    for (std::uint64_t object : of->second) {
        const auto it = s.queues.find(object);
        if (it == s.queues.end()) continue;
        ObjectReplay::Queue& queue = it->second;
        if (!contains(queue.producers, fiber) && !contains(queue.consumers, fiber)) continue;
        erase(queue.woken, fiber);
        if (woken) queue.woken.push_back(fiber);
    }
}

std::int64_t workerOf(const ObjectIndex& index, std::uint32_t thread) noexcept {
    return thread < index.worker_of.size() ? index.worker_of[thread] : -1;
}

void apply(ObjectReplay& s, const ObjectIndex& index, const trace::Event& e, std::uint32_t id) {
    switch (e.kind) {
    case EventKind::MutexContended: {
        ObjectReplay::Mutex& m = s.mutexes[e.arg[1]];
        if (m.waiters.empty()) {
            // A new episode of waiting: whoever holds it locked it without a record.
            const auto h = index.holder_at.find(id);
            m.owner = h == index.holder_at.end() ? 0 : h->second;
            m.owner_since = -1;
        }
        erase(m.waiters, e.arg[0]);
        m.waiters.push_back(e.arg[0]);
        noteWait(s, e.arg[0], e.arg[1]);
        break;
    }
    case EventKind::MutexHandoff: {
        ObjectReplay::Mutex& m = s.mutexes[e.arg[2]];
        m.owner = e.arg[1];
        m.owner_since = e.time;
        erase(m.waiters, e.arg[1]);
        break;
    }
    case EventKind::ConditionWait: {
        auto& w = s.conditions[e.arg[1]];
        erase(w, e.arg[0]);
        w.push_back(e.arg[0]);
        noteWait(s, e.arg[0], e.arg[1]);
        queueWoken(s, e.arg[0], false);
        break;
    }
    case EventKind::ConditionWake: {
        const auto how = static_cast<trace::ConditionWakeHow>(e.small);
        auto it = s.conditions.find(e.arg[1]);
        if (it != s.conditions.end()) {
            // Before version 7 a broadcast's one record named the head and
            // woke every waiter; since, each fiber it woke has its record.
            if (how == trace::ConditionWakeHow::Broadcast && index.broadcast_wakes_all) {
                for (std::uint64_t f : it->second) queueWoken(s, f, true);
                it->second.clear();
            } else erase(it->second, e.arg[0]);
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
        case trace::QueueOp::Put: ++q.depth, erase(q.producers, fiber); break;
        case trace::QueueOp::Get: q.depth = std::max<std::int64_t>(0, q.depth - 1), erase(q.consumers, fiber); break;
        case trace::QueueOp::PutBlocked: erase(q.producers, fiber), q.producers.push_back(fiber), noteWait(s, fiber, e.arg[0]); break;
        case trace::QueueOp::GetBlocked: erase(q.consumers, fiber), q.consumers.push_back(fiber), noteWait(s, fiber, e.arg[0]); break;
        case trace::QueueOp::Close: q.closed = true, q.producers.clear(), q.consumers.clear(); break;
        }
        erase(q.woken, fiber);
        if (static_cast<trace::QueueOp>(e.small) == trace::QueueOp::Close) q.woken.clear();
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
    case EventKind::WakeupReceived:
        (void)s.wakeups.answered(s.wakeups.key(static_cast<std::int64_t>(e.arg[0]), workerOf(index, e.thread)), {});
        break;
    case EventKind::WakeupBounced:
        (void)s.wakeups.answered(s.wakeups.key(workerOf(index, e.thread), static_cast<std::int64_t>(e.arg[0])), {});
        break;
    case EventKind::Submit: {
        const auto f = index.fires_at.find(id);
        s.timers.push_back(TimerState{e.arg[0], e.thread, e.time, f == index.fires_at.end() ? -1 : f->second, id});
        break;
    }
    case EventKind::Complete: {
        const auto it = std::find_if(s.timers.begin(), s.timers.end(), [&](const TimerState& t) { return t.fiber == e.arg[0]; });
        if (it != s.timers.end()) s.timers.erase(it);
        break;
    }
    default: break;
    }
}

} // namespace

std::size_t ObjectReplay::size() const noexcept {
    std::size_t n = mutexes.size() + conditions.size() + queues.size() + wakeups.size() + cancels.size() + timers.size();
    for (const auto& [a, m] : mutexes) n += m.waiters.size();
    for (const auto& [a, w] : conditions) n += w.size();
    for (const auto& [a, q] : queues) n += q.producers.size() + q.consumers.size() + q.woken.size();
    for (const auto& [f, objects] : waits_of) n += 1 + objects.size();
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
        case EventKind::QueueOp: listed.insert(e.arg[1]); break;
        case EventKind::FiberFinish:
            if (!listed.erase(e.arg[0])) continue; // (a finished fiber waits no more)
            break;
        default: break;
        }
        index.records.push_back(static_cast<std::uint32_t>(i));
    }

    // Timers: pair each timeout submit with its fiber's next timeout complete.
    std::map<std::uint64_t, std::vector<std::uint32_t>> open_timers; // fiber -> submits, oldest first
    for (std::uint32_t id : index.records) {
        const trace::Event& e = trace.events[id];
        if (e.kind == EventKind::Submit) open_timers[e.arg[0]].push_back(id);
        else if (e.kind == EventKind::Complete) {
            auto it = open_timers.find(e.arg[0]);
            if (it == open_timers.end() || it->second.empty()) continue;
            if (e.signedArg(1) == -ETIME) index.fires_at[it->second.front()] = e.time;
            it->second.erase(it->second.begin());
        }
    }

    // Pass 1: who held each mutex while fibers waited (the next hand-off's `from`).
    {
        ObjectReplay s;
        std::map<std::uint64_t, std::uint32_t> episode; // mutex -> the contended record that began its waiting
        for (std::uint32_t id : index.records) {
            const trace::Event& e = trace.events[id];
            if (e.kind == EventKind::MutexContended) {
                const auto m = s.mutexes.find(e.arg[1]);
                if (m == s.mutexes.end() || m->second.waiters.empty()) episode[e.arg[1]] = id;
            } else if (e.kind == EventKind::MutexHandoff) {
                const auto ep = episode.find(e.arg[2]);
                if (ep != episode.end()) index.holder_at[ep->second] = e.arg[0], episode.erase(ep);
            }
            apply(s, index, e, id);
            // Waiting that ended without a hand-off (canceled): its holder is unknown.
            for (auto ep = episode.begin(); ep != episode.end();) {
                const auto m = s.mutexes.find(ep->first);
                ep = m == s.mutexes.end() || m->second.waiters.empty() ? episode.erase(ep) : std::next(ep);
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
    for (const auto& [address, m] : s.mutexes)
        out.mutexes.push_back(MutexState{address, m.owner, m.owner_since, {m.waiters.rbegin(), m.waiters.rend()}});
    for (const auto& [address, w] : s.conditions) out.conditions.push_back(ConditionState{address, w});
    for (const auto& [address, q] : s.queues) {
        // The woken are not blocked: listed apart.
        QueueState state{address, q.depth, q.closed, {}, {}, q.woken};
        for (std::uint64_t f : q.producers)
            if (!contains(q.woken, f)) state.producers.push_back(f);
        for (std::uint64_t f : q.consumers)
            if (!contains(q.woken, f)) state.consumers.push_back(f);
        out.queues.push_back(std::move(state));
    }
    s.wakeups.forEachWaiting([&](const PendingWakeup& w) { out.wakeups.push_back(w); });
    std::sort(out.wakeups.begin(), out.wakeups.end(), [](const PendingWakeup& a, const PendingWakeup& b) {
        return a.sent != b.sent ? a.sent < b.sent : a.event < b.event;
    });
    for (const auto& [fiber, c] : s.cancels) out.cancels.push_back(c);
    std::sort(out.cancels.begin(), out.cancels.end(),
              [](const PendingCancel& a, const PendingCancel& b) { return a.requested < b.requested; });
    out.timers = std::move(s.timers);
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
