// The shared model of the trace tools: thread timelines and fiber names.
// (The words they print with, opcode names and number formats, are the
// tracer's vocabulary: tracer/src/vocabulary.cpp.)
#include <cinttypes>
#include <cstdio>

#include "trace_tools.hpp"

namespace fiberscope::trace {

std::int64_t traceEnd(const Trace& trace) {
    std::int64_t end = trace.header.duration_ns;
    if (!trace.events.empty() && trace.events.back().time > end) end = trace.events.back().time;
    return end;
}

std::vector<std::uint64_t> initialFibers(const Trace& trace) {
    std::vector<std::uint64_t> initial(trace.threads.size(), 0);
    std::vector<bool> known(trace.threads.size(), false);
    for (const Event& e : trace.events) {
        if (e.kind != EventKind::Switch || e.thread >= initial.size() || known[e.thread]) continue;
        known[e.thread] = true;
        initial[e.thread] = e.arg[0];
    }
    return initial;
}

std::vector<std::int64_t> workerThreads(const Trace& trace) {
    std::vector<std::int64_t> threads;
    for (const ThreadInfo& t : trace.threads) {
        // Worker indexes are small; ignore absurd ones rather than allocate.
        if (t.worker < 0 || t.worker > 65535) continue;
        const auto worker = static_cast<std::size_t>(t.worker);
        if (threads.size() <= worker) threads.resize(worker + 1, -1);
        if (threads[worker] < 0) threads[worker] = static_cast<std::int64_t>(&t - trace.threads.data()); // its index
    }
    return threads;
}

namespace {

// Where one thread is while the timelines are replayed.
struct ThreadCursor {
    bool seen = false;  // has recorded anything yet
    bool alive = false; // between its start and its stop
    bool parked = false;
    std::uint64_t fiber = 0;
    std::int64_t since = 0; // start of the current span
};

ThreadState stateOf(const ThreadCursor& c) {
    if (c.parked) return ThreadState::Parked;
    return c.fiber ? ThreadState::Running : ThreadState::Idle;
}

// Ends the cursor's current span at `time` (recording it if alive).
void closeSpan(ThreadCursor& c, ThreadTimeline& timeline, std::int64_t time, std::uint8_t out_reason) {
    if (time < c.since) time = c.since; // clocks of different threads may disagree slightly
    if (c.alive) {
        const ThreadState state = stateOf(c);
        // Empty idle or parked spans carry nothing; empty runs are still runs.
        if (time > c.since || state == ThreadState::Running) {
            StateSpan span;
            span.begin = c.since;
            span.end = time;
            span.state = state;
            span.fiber = state == ThreadState::Running ? c.fiber : 0;
            span.out_reason = state == ThreadState::Running ? out_reason : kNoSwitchReason;
            timeline.spans.push_back(span);
        }
        timeline.alive_ns += time - c.since;
        timeline.end = time;
    }
    c.since = time;
}

void startAlive(ThreadCursor& c, ThreadTimeline& timeline, std::int64_t time) {
    if (c.alive) return;
    c.alive = true;
    c.since = time;
    timeline.end = time;
}

} // namespace

std::vector<ThreadTimeline> buildThreadTimelines(const Trace& trace) {
    std::vector<ThreadTimeline> timelines(trace.threads.size());
    for (std::size_t i = 0; i < trace.threads.size(); ++i) {
        timelines[i].thread = static_cast<std::uint32_t>(i); // an index into trace.threads, like Event::thread
        timelines[i].worker = trace.threads[i].worker;
        timelines[i].name = trace.threads[i].name;
    }
    const std::vector<std::uint64_t> initial = initialFibers(trace);
    std::vector<ThreadCursor> cursors(trace.threads.size());
    for (const Event& e : trace.events) {
        if (e.thread >= cursors.size()) continue;
        ThreadCursor& c = cursors[e.thread];
        ThreadTimeline& timeline = timelines[e.thread];
        if (!c.seen) {
            c.seen = true;
            c.fiber = initial[e.thread];
            timeline.begin = e.time;
            startAlive(c, timeline, e.time);
        }
        switch (e.kind) {
        case EventKind::ThreadStart:
            startAlive(c, timeline, e.time);
            break;
        case EventKind::ThreadStop:
            closeSpan(c, timeline, e.time, kNoSwitchReason);
            c.alive = false;
            break;
        case EventKind::Switch:
            closeSpan(c, timeline, e.time, e.small);
            c.fiber = e.arg[1];
            break;
        case EventKind::Park:
            closeSpan(c, timeline, e.time, kNoSwitchReason);
            c.parked = true;
            break;
        case EventKind::Unpark:
            closeSpan(c, timeline, e.time, kNoSwitchReason);
            c.parked = false;
            break;
        default:
            break;
        }
    }
    const std::int64_t end = traceEnd(trace);
    for (std::size_t i = 0; i < cursors.size(); ++i)
        if (cursors[i].alive) closeSpan(cursors[i], timelines[i], end, kNoSwitchReason);
    return timelines;
}

FiberNames collectFiberNames(const Trace& trace) {
    FiberNames names;
    for (const Event& e : trace.events) {
        if (e.kind == EventKind::FiberCreate && e.arg[2] != 0 && !trace.string(e.arg[2]).empty())
            names[e.arg[0]] = trace.string(e.arg[2]);
        else if (e.kind == EventKind::FiberName && !trace.string(e.arg[1]).empty())
            names[e.arg[0]] = trace.string(e.arg[1]);
    }
    return names;
}

std::string fiberDisplayName(const FiberNames& names, std::uint64_t fiber) {
    if (auto it = names.find(fiber); it != names.end()) return it->second;
    if (fiber == 0) return "idle";
    if (fiber == 1) return "main";
    return "fiber #" + std::to_string(fiber);
}

} // namespace fiberscope::trace
