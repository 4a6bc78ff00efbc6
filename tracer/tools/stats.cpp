// `fiberscope stats`: where the time went, per thread and per fiber, and how
// long ready fibers waited for a thread.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <ostream>

#include "trace_tools.hpp"

namespace fiberscope::trace {

LatencySummary summarizeLatencies(std::vector<std::int64_t>& samples) {
    LatencySummary summary;
    if (samples.empty()) return summary;
    std::sort(samples.begin(), samples.end());
    const std::size_t n = samples.size();
    // Nearest rank: the smallest sample with at least q of them at or below it.
    auto rank = [&](double q) {
        auto index = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
        return samples[std::clamp<std::size_t>(index, 1, n) - 1];
    };
    summary.count = n;
    for (std::int64_t s : samples) summary.total += s;
    summary.p50 = rank(0.50);
    summary.p90 = rank(0.90);
    summary.p99 = rank(0.99);
    summary.max = samples.back();
    return summary;
}

namespace {

struct FiberAccumulator {
    FiberStats stats;
    std::int64_t first_seen = -1;
    std::int64_t ready_since = -1; // -1: not known ready
    std::int64_t last_thread = -1;
    bool running = false;
    std::vector<std::int64_t> latencies;
};

struct StatsBuilder {
    std::unordered_map<std::uint64_t, FiberAccumulator> fibers;
    std::vector<ThreadStats> threads;
    std::vector<bool> recorded;             // by thread number
    std::vector<std::int64_t> live_workers; // worker index -> thread, from thread-start records
    std::vector<std::int64_t> known_workers; // the same from the thread table
};

FiberAccumulator& fiberAt(StatsBuilder& b, std::uint64_t id, std::int64_t time) {
    FiberAccumulator& f = b.fibers[id];
    f.stats.id = id;
    if (f.first_seen < 0) f.first_seen = time;
    return f;
}

void markReady(StatsBuilder& b, std::uint64_t id, std::int64_t time) {
    if (id == 0) return;
    FiberAccumulator& f = fiberAt(b, id, time);
    if (!f.running && f.ready_since < 0) f.ready_since = time;
}

void switchIn(StatsBuilder& b, std::uint64_t id, std::uint32_t thread, std::int64_t time) {
    FiberAccumulator& f = fiberAt(b, id, time);
    ++f.stats.runs;
    if (f.last_thread >= 0 && f.last_thread != thread) ++f.stats.migrations;
    f.last_thread = thread;
    if (f.ready_since >= 0) f.latencies.push_back(std::max<std::int64_t>(0, time - f.ready_since));
    f.ready_since = -1;
    f.running = true;
}

ThreadStats* threadOfWorker(StatsBuilder& b, std::uint64_t worker) {
    std::int64_t thread = -1;
    if (worker < b.live_workers.size()) thread = b.live_workers[worker];
    if (thread < 0 && worker < b.known_workers.size()) thread = b.known_workers[worker];
    if (thread < 0 || static_cast<std::size_t>(thread) >= b.threads.size()) return nullptr;
    return &b.threads[static_cast<std::size_t>(thread)];
}

void countEvent(StatsBuilder& b, TraceStats& out, const Event& e) {
    ThreadStats& t = b.threads[e.thread];
    switch (e.kind) {
    case EventKind::ThreadStart:
        if (e.arg[0] <= 65535) {
            if (b.live_workers.size() <= e.arg[0]) b.live_workers.resize(e.arg[0] + 1, -1);
            b.live_workers[e.arg[0]] = e.thread;
        }
        break;
    case EventKind::Switch: {
        ++t.switches;
        ++out.switches;
        if (e.small <= kMaxSwitchReason) ++out.switch_reasons[e.small];
        if (const std::uint64_t from = e.arg[0]) {
            FiberAccumulator& f = fiberAt(b, from, e.time);
            f.running = false;
            if (e.small == static_cast<std::uint8_t>(SwitchReason::Finish) && f.stats.finished < 0)
                f.stats.finished = e.time;
        }
        if (const std::uint64_t to = e.arg[1]) switchIn(b, to, e.thread, e.time);
        break;
    }
    case EventKind::FiberCreate: {
        FiberAccumulator& f = fiberAt(b, e.arg[0], e.time);
        f.stats.created = e.time;
        f.stats.parent = e.arg[1];
        markReady(b, e.arg[0], e.time);
        break;
    }
    case EventKind::FiberFinish: {
        FiberAccumulator& f = fiberAt(b, e.arg[0], e.time);
        if (f.stats.finished < 0) f.stats.finished = e.time;
        break;
    }
    case EventKind::Schedule:
    case EventKind::ConditionWake:
        markReady(b, e.arg[0], e.time);
        break;
    case EventKind::MutexHandoff:
        markReady(b, e.arg[1], e.time);
        break;
    case EventKind::Complete:
        ++t.completions;
        markReady(b, e.arg[0], e.time);
        break;
    case EventKind::Submit:
        ++t.submits;
        break;
    case EventKind::Steal:
        ++t.steals_taken;
        if (ThreadStats* victim = threadOfWorker(b, e.arg[1])) ++victim->steals_given;
        break;
    case EventKind::WakeupSent:
        ++t.wakeups_sent;
        break;
    case EventKind::WakeupReceived:
        ++t.wakeups_received;
        break;
    case EventKind::Park:
        ++t.parks;
        break;
    default:
        break;
    }
}

} // namespace

TraceStats computeStats(const Trace& trace) {
    TraceStats out;
    out.duration_ns = traceEnd(trace);
    out.events = trace.events.size();

    StatsBuilder b;
    b.threads.resize(trace.threads.size());
    b.recorded.assign(trace.threads.size(), false);
    b.known_workers = workerThreads(trace);
    const std::vector<std::uint64_t> initial = initialFibers(trace);
    for (const Event& e : trace.events) {
        if (e.thread >= b.threads.size()) continue;
        if (!b.recorded[e.thread]) {
            b.recorded[e.thread] = true;
            // Whatever ran when the thread first recorded counts as a run.
            if (initial[e.thread]) switchIn(b, initial[e.thread], e.thread, e.time);
        }
        countEvent(b, out, e);
    }

    // Time per state, from the timelines.
    const std::vector<ThreadTimeline> timelines = buildThreadTimelines(trace);
    for (const ThreadTimeline& timeline : timelines) {
        if (timeline.thread >= b.threads.size() || !b.recorded[timeline.thread]) continue;
        ThreadStats& t = b.threads[timeline.thread];
        t.thread = timeline.thread;
        t.worker = timeline.worker;
        t.name = timeline.name;
        t.begin = timeline.begin;
        t.end = timeline.end;
        t.alive_ns = timeline.alive_ns;
        for (const StateSpan& span : timeline.spans) {
            const std::int64_t length = span.end - span.begin;
            switch (span.state) {
            case ThreadState::Running:
                t.busy_ns += length;
                fiberAt(b, span.fiber, span.begin).stats.run_ns += length;
                break;
            case ThreadState::Idle: t.idle_ns += length; break;
            case ThreadState::Parked: t.parked_ns += length; break;
            }
        }
        out.threads.push_back(t);
    }

    const FiberNames names = collectFiberNames(trace);
    std::vector<std::int64_t> all_latencies;
    for (auto& [id, f] : b.fibers) {
        if (id == 0) continue;
        FiberStats stats = f.stats;
        stats.name = fiberDisplayName(names, id);
        const std::int64_t begin = stats.created >= 0 ? stats.created : f.first_seen;
        const std::int64_t end = stats.finished >= 0 ? stats.finished : out.duration_ns;
        stats.wait_ns = std::max<std::int64_t>(0, end - begin - stats.run_ns);
        all_latencies.insert(all_latencies.end(), f.latencies.begin(), f.latencies.end());
        stats.latency = summarizeLatencies(f.latencies);
        out.fibers.push_back(std::move(stats));
    }
    std::sort(out.fibers.begin(), out.fibers.end(), [](const FiberStats& a, const FiberStats& b) {
        return a.run_ns != b.run_ns ? a.run_ns > b.run_ns : a.id < b.id;
    });
    out.latency = summarizeLatencies(all_latencies);
    return out;
}

// ---------------------------------------------------------------------------
// The text report

namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    va_list copy;
    va_copy(copy, args);
    const int length = std::vsnprintf(nullptr, 0, fmt, copy);
    va_end(copy);
    std::string text(length > 0 ? static_cast<std::size_t>(length) : 0, '\0');
    if (length > 0) std::vsnprintf(text.data(), text.size() + 1, fmt, args);
    va_end(args);
    return text;
}

double percent(std::int64_t part, std::int64_t whole) {
    return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string latencyOrDash(const LatencySummary& l, std::int64_t value) {
    return l.count ? formatDuration(value) : std::string("-");
}

void writeHeader(const Trace& trace, const TraceStats& stats, const std::string& title, std::ostream& out) {
    const TraceHeader& h = trace.header;
    std::string command;
    for (const std::string& arg : h.command_line) command += (command.empty() ? "" : " ") + arg;
    out << "Fiberscope trace" << (title.empty() ? "" : " ") << terminalSafe(title) << "\n";
    out << "  command       " << (command.empty() ? "(not recorded)" : terminalSafe(command)) << "\n";
    out << "  duration      " << formatDuration(stats.duration_ns)
        << (h.complete ? " (recording stopped cleanly)" : " (recording did not stop cleanly)") << "\n";
    if (h.tsc_clock)
        out << format("  clock         TSC at %.3f GHz\n", static_cast<double>(h.ticks_per_second) / 1e9);
    else
        out << "  clock         monotonic (" << formatCount(h.ticks_per_second) << " ticks/s)\n";
    if (h.start_realtime_ns) {
        const std::time_t seconds = static_cast<std::time_t>(h.start_realtime_ns / 1000000000u);
        std::tm utc{};
        char when[64];
        if (gmtime_r(&seconds, &utc) && std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &utc))
            out << "  started       " << when << "\n";
    }
    out << "  pid           " << h.pid << "\n";
    out << "  cpus          " << h.cpu_count << "\n";
    out << "  backend       " << (h.backend.empty() ? "(unknown)" : terminalSafe(h.backend)) << "\n";
    const double per_event = trace.events.empty() ? 0.0
                                                  : static_cast<double>(trace.file_bytes) / static_cast<double>(trace.events.size());
    out << "  events        " << formatCount(trace.events.size()) << " in " << formatCount(trace.chunks) << " chunks, "
        << format("%.1f", per_event) << " bytes/event (" << formatCount(trace.file_bytes) << " bytes)\n";
    out << "  lost events   " << formatCount(trace.lost_events) << (trace.lost_events ? " (statistics are approximate)" : "")
        << "\n";
    if (trace.warnings.empty()) out << "  warnings      none\n";
    for (const std::string& warning : trace.warnings) out << "  warning       " << terminalSafe(warning) << "\n";
}

void writeThreads(const TraceStats& stats, std::ostream& out) {
    out << "\nThreads (busy = running a fiber, idle = in the idle loop, parked = waiting in the kernel;\n"
           "         percentages of each thread's lifetime)\n";
    out << format("  %3s %-12s %10s %17s %17s %17s %8s %11s %11s %8s\n", "#", "name", "alive", "busy", "idle", "parked",
                  "switches", "steals t/g", "wakeups s/r", "complete");
    auto share = [](std::int64_t part, std::int64_t whole) {
        return format("%10s %5.1f%%", formatDuration(part).c_str(), percent(part, whole));
    };
    for (const ThreadStats& t : stats.threads) {
        out << format("  %3u %-12.12s %10s %s %s %s %8s %11s %11s %8s\n", t.thread, terminalSafe(t.name).c_str(),
                      formatDuration(t.alive_ns).c_str(), share(t.busy_ns, t.alive_ns).c_str(),
                      share(t.idle_ns, t.alive_ns).c_str(), share(t.parked_ns, t.alive_ns).c_str(),
                      formatCount(t.switches).c_str(),
                      format("%" PRIu64 "/%" PRIu64, t.steals_taken, t.steals_given).c_str(),
                      format("%" PRIu64 "/%" PRIu64, t.wakeups_sent, t.wakeups_received).c_str(),
                      formatCount(t.completions).c_str());
    }
    out << "  switches by reason:";
    bool any = false;
    for (std::uint8_t r = 0; r <= kMaxSwitchReason; ++r) {
        if (!stats.switch_reasons[r]) continue;
        out << (any ? ", " : " ") << switchReasonName(static_cast<SwitchReason>(r)) << " "
            << formatCount(stats.switch_reasons[r]);
        any = true;
    }
    out << (any ? "\n" : " none\n");
}

std::string fiberRow(const std::string& id, const std::string& name, std::uint64_t runs, std::uint64_t moves,
                     std::int64_t run, std::int64_t wait, const LatencySummary& l) {
    return format("  %6s %-22.22s %7s %6s %10s %10s %10s %10s %10s %10s\n", id.c_str(), name.c_str(),
                  formatCount(runs).c_str(), formatCount(moves).c_str(), formatDuration(run).c_str(),
                  formatDuration(wait).c_str(), latencyOrDash(l, l.p50).c_str(), latencyOrDash(l, l.p90).c_str(),
                  latencyOrDash(l, l.p99).c_str(), latencyOrDash(l, l.max).c_str());
}

void writeFibers(const TraceStats& stats, std::ostream& out, std::size_t top) {
    const std::size_t shown = std::min(top, stats.fibers.size());
    out << "\nFibers: " << formatCount(stats.fibers.size()) << " in all";
    if (shown < stats.fibers.size()) out << ", the " << shown << " that ran longest";
    out << "\n  (wait = alive but not running; moves = runs on another thread than the run before;\n"
           "   latency = from ready to running)\n";
    out << format("  %6s %-22s %7s %6s %10s %10s %10s %10s %10s %10s\n", "id", "name", "runs", "moves", "run", "wait",
                  "lat p50", "lat p90", "lat p99", "lat max");
    for (std::size_t i = 0; i < shown; ++i) {
        const FiberStats& f = stats.fibers[i];
        out << fiberRow(std::to_string(f.id), terminalSafe(f.name), f.runs, f.migrations, f.run_ns, f.wait_ns, f.latency);
    }
    if (shown < stats.fibers.size()) out << "  ... " << formatCount(stats.fibers.size() - shown) << " more\n";
    std::uint64_t runs = 0, moves = 0;
    std::int64_t run = 0, wait = 0;
    for (const FiberStats& f : stats.fibers) {
        runs += f.runs;
        moves += f.migrations;
        run += f.run_ns;
        wait += f.wait_ns;
    }
    out << fiberRow("", "total", runs, moves, run, wait, stats.latency);
}

void writeLatency(const TraceStats& stats, std::ostream& out) {
    const LatencySummary& l = stats.latency;
    out << "\nSchedule-to-run latency: ";
    if (!l.count) {
        out << "no samples\n";
        return;
    }
    out << formatCount(l.count) << " samples, p50 " << formatDuration(l.p50) << ", p90 " << formatDuration(l.p90)
        << ", p99 " << formatDuration(l.p99) << ", max " << formatDuration(l.max) << ", mean "
        << formatDuration(l.total / static_cast<std::int64_t>(l.count)) << "\n";
}

} // namespace

void writeStats(const Trace& trace, std::ostream& out, StatsOptions options) {
    const TraceStats stats = computeStats(trace);
    writeHeader(trace, stats, options.title, out);
    writeThreads(stats, out);
    writeFibers(stats, out, options.top_fibers);
    writeLatency(stats, out);
}

} // namespace fiberscope::trace
