// The trace tools: what `fiberscope stats`, `export` and `timeline` print,
// and the models behind them (which the viewer reuses).
//
//     fiberscope::trace::Trace trace;            // read with readTrace()
//     fiberscope::trace::writeStats(trace, std::cout);
//     std::string error;
//     fiberscope::trace::writeChromeJson(trace, file, error);
//     fiberscope::trace::writeTextTimeline(trace, std::cout, {});
//
// Everything here is plain data and free functions over a Trace; nothing
// keeps state between calls.
//
// The model: a trace thread runs one thing at a time. The latest `switch`
// record on a thread says which fiber runs there (0 = the idle loop); a
// thread's state before its first switch is that switch's `from`. Between
// `park` and `unpark` the thread waits in the kernel. A thread lives from its
// first record (normally thread-start) to its thread-stop (or the end of the
// trace); its time is split into running (a fiber), idle (the idle loop,
// not parked) and parked.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fiberscope/analysis/timeline.hpp"
#include "fiberscope/trace_reader.hpp"
#include "fiberscope/trace_vocabulary.hpp"

namespace fiberscope::trace {

// ---------------------------------------------------------------------------
// Thread timelines

enum class ThreadState : std::uint8_t { Running, Idle, Parked };

inline constexpr std::uint8_t kNoSwitchReason = 0xFF;

// One stretch of a thread in one state.
struct StateSpan {
    std::int64_t begin = 0; // ns since the recording started
    std::int64_t end = 0;
    std::uint64_t fiber = 0; // the fiber running (Running spans only)
    ThreadState state = ThreadState::Idle;
    // Running spans: why the fiber stopped (a SwitchReason), or
    // kNoSwitchReason if the span ended otherwise (thread stop, end of trace).
    std::uint8_t out_reason = kNoSwitchReason;
};

struct ThreadTimeline {
    std::uint32_t thread = 0; // index into Trace::threads (= the trace thread number in a well-formed file)
    std::int64_t worker = -1;
    std::string name;
    std::int64_t begin = 0;    // first moment alive
    std::int64_t end = 0;      // last moment alive
    std::int64_t alive_ns = 0; // time alive (begin..end minus stopped gaps)
    std::vector<StateSpan> spans; // in time order, covering the alive time
};

// One timeline per trace thread (indexed by thread number). Threads that
// never recorded anything have no spans.
std::vector<ThreadTimeline> buildThreadTimelines(const Trace& trace);

// The fiber each thread runs when its recording starts (index: thread number).
std::vector<std::uint64_t> initialFibers(const Trace& trace);

// The end of the trace: the header's duration, or the last record if later.
std::int64_t traceEnd(const Trace& trace);

// Fiber names from fiber-create and fiber-name records (the last one wins).
using FiberNames = std::unordered_map<std::uint64_t, std::string>;
FiberNames collectFiberNames(const Trace& trace);
// The name to show for a fiber: its recorded name, "main" for fiber 1,
// "idle" for 0, else "fiber #id".
std::string fiberDisplayName(const FiberNames& names, std::uint64_t fiber);

// For each worker index, the trace thread that first announced it (-1: none).
std::vector<std::int64_t> workerThreads(const Trace& trace);

// formatDuration, formatCount and opcodeName: trace_vocabulary.hpp.
// `text` made safe for a terminal: control characters (C0, DEL, C1) and
// bytes that are not UTF-8 become "\xNN", a backslash becomes "\\"; other
// printable text, UTF-8 included, is unchanged. Every text output of the
// tools passes trace strings (names, labels, command line) through this.
std::string terminalSafe(std::string_view text);

// ---------------------------------------------------------------------------
// Statistics (`fiberscope stats`)

struct LatencySummary {
    std::uint64_t count = 0;
    std::int64_t total = 0;
    std::int64_t p50 = 0;
    std::int64_t p90 = 0;
    std::int64_t p99 = 0;
    std::int64_t max = 0;
};
// Nearest-rank percentiles of `samples` (sorted in place).
LatencySummary summarizeLatencies(std::vector<std::int64_t>& samples);

struct ThreadStats {
    std::uint32_t thread = 0;
    std::int64_t worker = -1;
    std::string name;
    std::int64_t begin = 0;
    std::int64_t end = 0;
    std::int64_t alive_ns = 0;
    std::int64_t busy_ns = 0;   // running a fiber
    std::int64_t idle_ns = 0;   // in the idle loop, not parked
    std::int64_t parked_ns = 0; // waiting in the kernel
    std::uint64_t switches = 0;
    std::uint64_t steals_taken = 0; // this thread stole from others
    std::uint64_t steals_given = 0; // others stole from this thread
    std::uint64_t wakeups_sent = 0;
    std::uint64_t wakeups_received = 0;
    std::uint64_t submits = 0;
    std::uint64_t completions = 0;
    std::uint64_t parks = 0;
};

struct FiberStats {
    std::uint64_t id = 0;
    std::uint64_t parent = 0;
    std::string name;
    std::int64_t created = -1;  // fiber-create time, -1 if before the recording
    std::int64_t finished = -1; // when it finished, -1 if it did not
    std::int64_t run_ns = 0;    // running on some thread
    std::int64_t wait_ns = 0;   // alive but not running (blocked or ready)
    std::uint64_t runs = 0;     // times switched in
    std::uint64_t migrations = 0; // runs on a different thread than the previous run
    LatencySummary latency;     // schedule-to-run
};

struct TraceStats {
    std::int64_t duration_ns = 0;
    std::uint64_t events = 0;
    std::uint64_t switches = 0;
    std::uint64_t switch_reasons[kMaxSwitchReason + 1] = {};
    std::vector<ThreadStats> threads; // threads that recorded something, by thread number
    std::vector<FiberStats> fibers;   // every fiber but 0, by run time (longest first)
    LatencySummary latency;           // schedule-to-run over all fibers
};

// Read off the trace's model (fiberscope/analysis/timeline.hpp): a thread's
// busy, idle and parked times are its lane's Running, Idle and Parked time,
// over its life (first record to thread-stop, or the trace's end); a fiber's
// run and wait times, runs and moves are its lane's (wait = Ready + Waiting);
// schedule-to-run latency is the model's samples: from the moment a fiber
// became ready (created, scheduled, its I/O completed, woken by a condition,
// handed a mutex, or switched away by a yield) to its next switch-in.
TraceStats computeStats(const Trace& trace);
// The same from a model already built from `trace`.
TraceStats computeStats(const Trace& trace, const analysis::Timeline& timeline);

struct StatsOptions {
    std::size_t top_fibers = 20;
    std::string title; // shown in the heading, e.g. the file name
};
void writeStats(const Trace& trace, std::ostream& out, StatsOptions options = {});

// ---------------------------------------------------------------------------
// Chrome Trace Event JSON (`fiberscope export --format chrome`)

// Writes the object form ({"traceEvents":[...],"displayTimeUnit":"ns"}),
// which Perfetto and chrome://tracing open. Process 1 has one track per
// trace thread (fiber runs, idle and parked slices, instants); process 2,
// "fibers", has one track per fiber (its runs, wherever they ran, and its
// zones). Flow arrows link wake-ups, steals and spawns. Returns false with
// `error` set if the stream fails.
bool writeChromeJson(const Trace& trace, std::ostream& out, std::string& error);

// Appends `text` to `out` as a JSON string literal (quotes included);
// invalid UTF-8 becomes U+FFFD.
void appendJsonString(std::string& out, std::string_view text);

// ---------------------------------------------------------------------------
// Text timeline (`fiberscope timeline`)

struct TimelineOptions {
    int max_rows = 60;          // bucket width is chosen so rows <= max_rows
    std::int64_t bucket_ns = 0; // fixed bucket width instead (0 = automatic)
    std::size_t legend_limit = 40; // fiber names listed at most
};

// One column per thread, one row per time bucket; a cell is the fiber that
// ran most in the bucket (its id; `+` if others ran too), `.` idle, `_`
// parked, blank when the thread was not alive. Marks label their row.
void writeTextTimeline(const Trace& trace, std::ostream& out, TimelineOptions options = {});

} // namespace fiberscope::trace
