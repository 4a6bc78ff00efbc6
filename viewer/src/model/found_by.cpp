#include "model/found_by.hpp"

#include "fiberscope/trace_records.hpp"

namespace fiberscope::viewer {

using analysis::kNoEvent;
using analysis::State;
using trace::EventKind;

namespace {

using analysis::kNone;
// How many schedule records back a run looks for its fiber's last one (a
// fiber waits in run_next for microseconds: it is taken, displaced or
// stolen; one found nowhere in reach came from the thread's other queues).
constexpr int kScheduleReach = 20'000;

// Records a decision's own records may have among them that say nothing of it.
bool incidental(EventKind kind) {
    return kind == EventKind::Truth || kind == EventKind::SourceLocation || kind == EventKind::StringDef ||
           kind == EventKind::CpuSample || kind == EventKind::LostEvents;
}

FoundBy classifyRun(const Timeline& tl, const trace::Trace& trace, std::uint32_t thread, std::size_t s) {
    const trace::Event sw = trace.events[s];
    FoundBy found;
    found.decision = static_cast<std::uint32_t>(s);
    found.fiber = sw.arg[1];
    // A mutex unlock that handed the lock over switches straight to its new owner.
    if (sw.small == static_cast<std::uint8_t>(trace::SwitchReason::Handoff)) {
        found.step = FindStep::Direct;
        return found;
    }
    // In no queue right before it ran (its lane Waiting, not Ready): handed
    // over. Ready: since when (its last schedule is looked for from then on).
    std::int64_t ready_since = INT64_MIN;
    if (const analysis::FiberLane* lane = analysis::findFiber(tl, found.fiber); lane && !lane->lane.intervals.empty()) {
        const auto& ivs = lane->lane.intervals;
        std::size_t k = analysis::intervalAt(lane->lane, sw.time);
        if (k >= ivs.size()) k = ivs.size() - 1;
        while (k > 0 && ivs[k].cause != s && ivs[k].start >= sw.time) --k;
        while (k + 1 < ivs.size() && ivs[k].cause != s && ivs[k + 1].start <= sw.time) ++k;
        if (ivs[k].cause == s && k > 0 && ivs[k - 1].state == State::Waiting) {
            found.step = FindStep::Direct;
            return found;
        }
        if (ivs[k].cause == s && k > 0 && ivs[k - 1].state == State::Ready) ready_since = ivs[k - 1].start;
    }
    // The records just before the switch on its thread: a steal of it (after
    // the search that found it), or an unpark since its last run.
    bool steal_window = true;
    for (std::size_t i = analysis::previousOnThread(tl, trace, thread, s); i != kNone;
         i = analysis::previousOnThread(tl, trace, thread, i)) {
        const trace::Event e = trace.events[i];
        if (incidental(e.kind)) continue;
        if (e.kind == EventKind::Switch) break;
        if (steal_window && e.kind == EventKind::Search) {
            found.searched = true;
            continue;
        }
        // The last searcher that found work wakes another to search in its place.
        if (steal_window && (e.kind == EventKind::WakeupSent || e.kind == EventKind::WakeupBounced)) continue;
        if (steal_window && (e.kind == EventKind::Steal || e.kind == EventKind::StealHalf || e.kind == EventKind::StealOne) &&
            e.arg[0] == found.fiber) {
            found.step = FindStep::Steal;
            found.evidence = static_cast<std::uint32_t>(i);
            return found;
        }
        steal_window = false;
        if (e.kind == EventKind::Unpark && sw.arg[0] == 0) {
            found.step = FindStep::Park;
            found.evidence = static_cast<std::uint32_t>(i);
            return found;
        }
    }
    // From its own queues: run_next if its last schedule put it there.
    found.step = FindStep::OwnQueue;
    std::size_t i = s;
    for (int n = 0; n < kScheduleReach; ++n) {
        i = analysis::previousOfKind(tl, trace, EventKind::Schedule, i);
        if (i == kNone) break;
        const trace::Event e = trace.events[i];
        if (e.time < ready_since) break; // before this ready stay: not how it got here
        if (e.arg[0] != found.fiber) continue;
        found.evidence = static_cast<std::uint32_t>(i);
        if (e.small == static_cast<std::uint8_t>(trace::ScheduleHow::RunNext) && e.thread == thread) found.step = FindStep::RunNext;
        break;
    }
    return found;
}

} // namespace

const char* findStepName(FindStep step) noexcept {
    switch (step) {
    case FindStep::Direct: return "handed over";
    case FindStep::RunNext: return "run_next";
    case FindStep::OwnQueue: return "own queue";
    case FindStep::Steal: return "steal";
    case FindStep::Search: return "search";
    case FindStep::Park: return "park";
    }
    return "?";
}

std::optional<FoundBy> foundBy(const Timeline& timeline, const trace::Trace& trace, std::uint32_t thread, std::int64_t time) {
    const std::size_t end = analysis::firstEventAt(trace, time, true);
    for (std::size_t i = analysis::previousOnThread(timeline, trace, thread, end); i != kNone;
         i = analysis::previousOnThread(timeline, trace, thread, i)) {
        const trace::Event e = trace.events[i];
        switch (e.kind) {
        case EventKind::Switch:
            if (e.arg[1] == 0) return std::nullopt; // out of work, looking in its own queues
            return classifyRun(timeline, trace, thread, i);
        case EventKind::Park: return FoundBy{FindStep::Park, static_cast<std::uint32_t>(i), kNoEvent, 0, false};
        case EventKind::Search:
            if (e.small == static_cast<std::uint8_t>(trace::SearchOp::Begin))
                return FoundBy{FindStep::Search, static_cast<std::uint32_t>(i), kNoEvent, 0, false};
            return std::nullopt; // a search ended: about to run what it found, or to park
        case EventKind::Unpark: return std::nullopt; // woken: looking at what it was given
        default: break;
        }
    }
    return std::nullopt;
}

} // namespace fiberscope::viewer
