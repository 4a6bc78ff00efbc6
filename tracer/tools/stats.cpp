// `fiberscope stats`: where the time went, per thread and per fiber, and how
// long ready fibers waited for a thread.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <ctime>
#include <ostream>

#include "fiberscope/analysis/totals.hpp"
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

// Everything below is read off the model (fiberscope/analysis): thread
// times from the thread lanes, fiber times, runs and moves from the fiber
// lanes, latencies from its samples; record counts from its per-thread
// tallies. Nothing here replays the trace.
TraceStats computeStats(const Trace& trace, const analysis::Timeline& timeline) {
    using analysis::State;
    TraceStats out;
    out.duration_ns = timeline.end_time;
    out.events = trace.events.size();
    for (std::size_t i = analysis::nextOfKind(timeline, trace, EventKind::Switch, 0); i < trace.events.size();
         i = analysis::nextOfKind(timeline, trace, EventKind::Switch, i + 1)) {
        ++out.switches;
        if (trace.events[i].small <= kMaxSwitchReason) ++out.switch_reasons[trace.events[i].small];
    }

    // Threads that recorded something, by thread number.
    for (std::uint32_t lane : timeline.lane_of_thread) {
        const analysis::ThreadLane& tl = timeline.threads[lane];
        if (tl.record_count == 0) continue;
        // The trace writer's pseudo thread (FORMAT.md, "CPU samples") holds
        // nothing but cpu-samples about the other threads: not a thread of the program.
        std::uint64_t records = 0;
        for (std::uint32_t n : tl.records) records += n;
        if (records == tl.records[static_cast<std::size_t>(EventKind::CpuSample)]) continue;
        ThreadStats t;
        t.thread = tl.thread;
        t.worker = tl.worker;
        t.name = tl.name;
        t.begin = tl.first_time;
        t.end = tl.alive_end;
        t.alive_ns = tl.alive_ns;
        const analysis::LaneTotals totals = analysis::laneTotals(tl.lane);
        t.busy_ns = totals.time(State::Running);
        t.idle_ns = totals.time(State::Idle);
        t.parked_ns = totals.time(State::Parked);
        const auto count = [&](EventKind kind) { return std::uint64_t{tl.records[static_cast<std::size_t>(kind)]}; };
        t.switches = count(EventKind::Switch);
        t.steals_taken = count(EventKind::Steal) + count(EventKind::StealHalf) + count(EventKind::StealOne);
        t.steals_given = tl.steals_given;
        t.wakeups_sent = count(EventKind::WakeupSent);
        t.wakeups_received = count(EventKind::WakeupReceived);
        t.submits = count(EventKind::Submit);
        t.completions = count(EventKind::Complete);
        t.parks = count(EventKind::Park);
        out.threads.push_back(std::move(t));
    }

    // Every fiber but the idle loop's 0.
    const analysis::FiberLatencies latencies = analysis::latenciesByFiber(timeline);
    for (std::size_t k = 0; k < timeline.fibers.size(); ++k) {
        const analysis::FiberLane& fl = timeline.fibers[k];
        if (fl.fiber() == 0) continue;
        FiberStats f;
        f.id = fl.fiber();
        f.parent = fl.parent();
        f.name = fl.name();
        f.created = fl.created();
        f.finished = fl.finished();
        const analysis::LaneTotals totals = analysis::laneTotals(fl.lane);
        f.run_ns = totals.time(State::Running);
        f.wait_ns = totals.time(State::Ready) + totals.time(State::Waiting);
        f.runs = totals.runs;
        f.migrations = totals.migrations;
        std::vector<std::int64_t> samples(latencies.values.begin() + static_cast<std::ptrdiff_t>(latencies.offsets[k]),
                                          latencies.values.begin() + static_cast<std::ptrdiff_t>(latencies.offsets[k + 1]));
        f.latency = summarizeLatencies(samples);
        out.fibers.push_back(std::move(f));
    }
    std::sort(out.fibers.begin(), out.fibers.end(), [](const FiberStats& a, const FiberStats& b) {
        return a.run_ns != b.run_ns ? a.run_ns > b.run_ns : a.id < b.id;
    });
    std::vector<std::int64_t> all = latencies.values;
    out.latency = summarizeLatencies(all);
    return out;
}

TraceStats computeStats(const Trace& trace) { return computeStats(trace, analysis::buildTimeline(trace)); }

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
    // The name column fits "blocking pool thread 0", up to 24 characters.
    int names = 12;
    for (const ThreadStats& t : stats.threads) names = std::max(names, std::min(24, static_cast<int>(terminalSafe(t.name).size())));
    out << format("  %3s %-*s %10s %17s %17s %17s %8s %11s %11s %8s\n", "#", names, "name", "alive", "busy", "idle", "parked",
                  "switches", "steals t/g", "wakeups s/r", "complete");
    auto share = [](std::int64_t part, std::int64_t whole) {
        return format("%10s %5.1f%%", formatDuration(part).c_str(), percent(part, whole));
    };
    for (const ThreadStats& t : stats.threads) {
        out << format("  %3u %-*.*s %10s %s %s %s %8s %11s %11s %8s\n", t.thread, names, names, terminalSafe(t.name).c_str(),
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
