// stateAt: checkpointed replay of the ready-queue and in-flight items (see
// state_at.hpp for the design).
#include "fiberscope/analysis/state_at.hpp"

#include <algorithm>

namespace fiberscope::analysis {

void buildReplayIndex(Timeline& timeline, std::size_t checkpoint_every) {
    ReplayIndex& replay = timeline.replay;
    auto& items = replay.items;
    // Items are made in event order, so this is a no-op check in practice.
    // (They are packed: sorted as (start, index) keys, then reordered whole.)
    if (!std::is_sorted(items.begin(), items.end(), [](const StateItem& a, const StateItem& b) { return a.start < b.start; })) {
        std::vector<std::pair<std::int64_t, std::uint32_t>> keys(items.size());
        for (std::uint32_t k = 0; k < items.size(); ++k) keys[k] = {items[k].start, k};
        std::sort(keys.begin(), keys.end()); // by start, ties in their order: as a stable sort
        auto& packed = items.packed();
        const auto before = packed;
        for (std::size_t k = 0; k < keys.size(); ++k) packed[k] = before[keys[k].second];
    }
    replay.checkpoints.clear();
    replay.checkpoints.push_back(StateCheckpoint{INT64_MIN, 0, {}});
    if (checkpoint_every == 0) checkpoint_every = 1;
    // Min-heap by end of the items open at the sweep position.
    using Open = std::pair<std::int64_t, std::uint32_t>;
    std::vector<Open> open;
    const auto later = [](const Open& a, const Open& b) { return a.first > b.first; };
    std::size_t last = 0;
    for (std::size_t i = 0; i < items.size(); ++i) {
        const std::int64_t c = items[i].start;
        while (!open.empty() && open.front().first <= c) { // drop the items closed by now
            std::pop_heap(open.begin(), open.end(), later);
            open.pop_back();
        }
        // Spacing >= the snapshot's size keeps all snapshots together O(items).
        if (i - last >= std::max(checkpoint_every, open.size())) {
            StateCheckpoint cp;
            cp.time = c;
            cp.first_item = static_cast<std::uint32_t>(i);
            cp.active.reserve(open.size());
            for (const Open& o : open) cp.active.push_back(o.second);
            replay.checkpoints.push_back(std::move(cp));
            last = i;
        }
        if (items[i].end > items[i].start) {
            open.emplace_back(items[i].end, static_cast<std::uint32_t>(i));
            std::push_heap(open.begin(), open.end(), later);
        }
    }
}

namespace {

std::uint32_t ownerAt(const ReplayIndex& replay, std::uint32_t slot, std::int64_t time) {
    const auto& owners = replay.slots[slot];
    auto it = std::upper_bound(owners.begin(), owners.end(), time, [](std::int64_t t, const SlotOwner& o) { return t < o.since; });
    return it == owners.begin() ? owners.front().thread : std::prev(it)->thread;
}

} // namespace

SchedulerState stateAt(const Timeline& timeline, std::int64_t time) {
    SchedulerState state;
    state.time = time;
    state.threads.resize(timeline.threads.size());
    for (std::size_t lane = 0; lane < timeline.threads.size(); ++lane) {
        const ThreadLane& tl = timeline.threads[lane];
        ThreadState& ts = state.threads[lane];
        ts.thread = tl.thread;
        ts.worker = tl.worker;
        // Alive from its first record to its thread-stop; one that did not stop
        // stays in its last state to the trace's end.
        ts.alive = tl.record_count > 0 && tl.first_time <= time && time <= tl.alive_end;
        std::size_t k = intervalAt(tl.lane, time);
        if (k == kNone && ts.alive && !tl.lane.intervals.empty() && time > tl.lane.intervals.back().end)
            k = tl.lane.intervals.size() - 1;
        if (k != kNone) {
            const Interval& iv = tl.lane.intervals[k];
            ts.state = iv.state;
            ts.running = iv.state == State::Running ? iv.fiber : 0;
            if (iv.state == State::Parked) state.parked.push_back(tl.thread);
        }
    }

    const ReplayIndex& replay = timeline.replay;
    const auto& items = replay.items;
    if (replay.checkpoints.empty()) return state;
    auto cp_it = std::upper_bound(replay.checkpoints.begin(), replay.checkpoints.end(), time,
                                  [](std::int64_t t, const StateCheckpoint& c) { return t < c.time; });
    const StateCheckpoint& cp = cp_it == replay.checkpoints.begin() ? replay.checkpoints.front() : *std::prev(cp_it);
    const auto end = static_cast<std::size_t>(
        std::upper_bound(items.begin(), items.end(), time, [](std::int64_t t, const StateItem& it) { return t < it.start; }) -
        items.begin());
    const auto take = [&](std::uint32_t id) {
        const StateItem& item = items[id];
        if (!(item.start <= time && time < item.end)) return;
        if (item.kind == ItemKind::Queued) {
            const std::uint32_t thread = ownerAt(replay, item.where, time);
            if (thread >= timeline.lane_of_thread.size()) return;
            state.threads[timeline.lane_of_thread[thread]].ready.push_back(ReadyEntry{item.fiber, item.start, item.event});
        } else {
            if (item.where >= timeline.lane_of_thread.size()) return;
            state.threads[timeline.lane_of_thread[item.where]].in_flight.push_back(
                InFlightOp{item.fiber, item.opcode, item.fd, item.start, item.event});
        }
    };
    for (std::uint32_t id : cp.active) take(id);
    for (std::size_t id = cp.first_item; id < end; ++id) take(static_cast<std::uint32_t>(id));
    for (ThreadState& ts : state.threads) {
        std::sort(ts.ready.begin(), ts.ready.end(), [](const ReadyEntry& a, const ReadyEntry& b) {
            return a.since != b.since ? a.since < b.since : a.fiber < b.fiber;
        });
        std::sort(ts.in_flight.begin(), ts.in_flight.end(), [](const InFlightOp& a, const InFlightOp& b) {
            return a.since != b.since ? a.since < b.since : a.fiber < b.fiber;
        });
    }
    return state;
}

bool queueStaysIn(const Timeline& timeline, std::int64_t from, std::int64_t to, std::size_t limit,
                  std::vector<QueueStay>& out) {
    out.clear();
    const ReplayIndex& replay = timeline.replay;
    const auto& items = replay.items;
    if (replay.checkpoints.empty() || to <= from) return true;
    auto cp_it = std::upper_bound(replay.checkpoints.begin(), replay.checkpoints.end(), from,
                                  [](std::int64_t t, const StateCheckpoint& c) { return t < c.time; });
    const StateCheckpoint& cp = cp_it == replay.checkpoints.begin() ? replay.checkpoints.front() : *std::prev(cp_it);
    const auto end = static_cast<std::size_t>(
        std::upper_bound(items.begin(), items.end(), to, [](std::int64_t t, const StateItem& it) { return t < it.start; }) -
        items.begin());
    std::size_t seen = 0;
    bool fits = true;
    const auto take = [&](std::uint32_t id) {
        // Every item looked at counts toward the limit (a wide view of an
        // I/O-heavy trace is mostly in-flight items, each read every frame).
        if (++seen > limit) {
            fits = false;
            return;
        }
        const StateItem item = items[id];
        if (item.kind != ItemKind::Queued || item.end <= from || item.start >= to || item.where >= replay.slots.size()) return;
        // The slot's owners over the stay (a steal changes the owner of the
        // victim's slot, SlotOwner): one piece per owner, of those over the
        // window only (a long stay in a slot stolen back and forth has many).
        const auto& owners = replay.slots[item.where];
        const std::int64_t first = std::max(item.start, from);
        auto it = std::upper_bound(owners.begin(), owners.end(), first,
                                   [](std::int64_t t, const SlotOwner& o) { return t < o.since; });
        std::int64_t start = item.start; // (before the slot's first owner change, its first owner holds it: ownerAt)
        if (it != owners.begin()) start = std::max(item.start, (--it)->since);
        bool moved_in = start > item.start;
        for (; it != owners.end() && start < item.end && start < to; ++it) {
            const auto next = std::next(it);
            const bool moved_out = next != owners.end() && next->since < item.end;
            const std::int64_t stop = moved_out ? next->since : item.end;
            if (stop > from && it->thread < timeline.lane_of_thread.size() && stop > start)
                out.push_back(QueueStay{item.fiber, start, stop, timeline.lane_of_thread[it->thread], item.event, moved_in,
                                        moved_out});
            if (stop > start) moved_in = true;
            start = stop;
        }
    };
    for (std::uint32_t id : cp.active) take(id);
    for (std::size_t id = cp.first_item; id < end && fits; ++id) take(static_cast<std::uint32_t>(id));
    if (!fits) {
        out.clear();
        return false;
    }
    // A steal into a thief whose own queue was the larger re-queues the
    // victim's fibers as new items (the model merges small into large):
    // a stay that ends where a stay of the same fiber begins on another
    // lane at that instant was moved there, not run.
    std::sort(out.begin(), out.end(), [](const QueueStay& a, const QueueStay& b) {
        return a.fiber != b.fiber ? a.fiber < b.fiber : a.start < b.start;
    });
    for (std::size_t k = 0; k + 1 < out.size(); ++k)
        if (out[k].fiber == out[k + 1].fiber && out[k].end == out[k + 1].start && out[k].lane != out[k + 1].lane)
            out[k].moved_out = out[k + 1].moved_in = true;
    std::sort(out.begin(), out.end(), [](const QueueStay& a, const QueueStay& b) {
        return a.lane != b.lane ? a.lane < b.lane : a.start != b.start ? a.start < b.start : a.fiber < b.fiber;
    });
    return true;
}

} // namespace fiberscope::analysis
