// The trace tools: what `fiberscope stats`, `export` and `timeline` print.
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
// The tools have no model of their own: each reads the one model of the
// trace, fiberscope::analysis::Timeline (tracer/analysis), which the viewer
// draws. A thread lane says what a thread ran when (a fiber, its idle loop,
// or parked in the kernel) over its life, from its first record to its
// thread-stop (or the end of the trace); a fiber lane says when the fiber
// was ready, running, waiting (for what) and finished; flows link causes to
// effects. Each entry point builds the model from the trace, or takes one
// already built.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "fiberscope/analysis/timeline.hpp"
#include "fiberscope/analysis/validate.hpp"
#include "fiberscope/trace_reader.hpp"
#include "fiberscope/trace_vocabulary.hpp"

namespace fiberscope::trace {

// The end of the trace: the header's duration, or the last record if later
// (the model's Timeline::end_time).
std::int64_t traceEnd(const Trace& trace);

// formatDuration, formatCount and opcodeName: trace_vocabulary.hpp.
// `text` made safe for a terminal: control characters (C0, DEL, C1) and
// bytes that are not UTF-8 become "\xNN", a backslash becomes "\\"; other
// printable text, UTF-8 included, is unchanged. Every text output of the
// tools passes trace strings (names, labels, command line) through this.
std::string terminalSafe(std::string_view text);

// ---------------------------------------------------------------------------
// Records (`fiberscope records`): the records as they are, one a line: the
// time since the recording began, the thread, the kind and every field by
// the record table's names ("schedule fiber=4(task 3) count=1 target=0
// how=idle-handoff"), the words FORMAT.md and the lessons use.

inline constexpr std::int64_t kAnyWorker = INT64_MIN;
struct RecordsOptions {
    std::int64_t from = INT64_MIN, to = INT64_MAX; // ns since the recording began, both included
    std::vector<EventKind> kinds;                  // empty: every kind
    std::int64_t fiber = -1;                       // only records with a fiber field naming it
    std::int64_t worker = kAnyWorker;              // only records of this worker's thread
    std::size_t limit = 0;                         // at most this many lines (0: all), then how many more match
};
// (A kind by its name: recordKindNamed, trace_records.hpp.)
// One record's kind and fields, as writeRecords prints them (it reads the
// trace's fiber names each call: for a few records; writeRecords reads them once).
std::string recordText(const Trace& trace, const Event& e);
// Writes the records `options` selects; returns how many matched.
std::size_t writeRecords(const Trace& trace, std::ostream& out, const RecordsOptions& options);

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
    std::uint64_t steals_taken = 0; // this thread stole from others (steal records: whole queues; steal-half: one fiber each)
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
// Verification (`fiberscope verify`, and a line on stderr from the others)

// The validator's report on `trace` (analysis/validate.hpp); a checking
// recording's truth records are also held against the model (built here
// unless `timeline` is given).
analysis::ValidationReport verifyTrace(const Trace& trace, const analysis::Timeline* timeline = nullptr,
                                       const analysis::ValidationOptions& options = {});
// One line for a user of stats or export when the trace fails validation
// ("warning: this trace contradicts itself in 3 places, the first ...; run
// 'fiberscope verify'"), or empty when it passes.
std::string verificationWarning(const Trace& trace, const analysis::ValidationReport& report);

// ---------------------------------------------------------------------------
// Chrome Trace Event JSON (`fiberscope export --format chrome`)

// Writes the object form ({"traceEvents":[...],"displayTimeUnit":"ns"}),
// which Perfetto and chrome://tracing open. Process 1 has one track per
// trace thread (fiber runs, idle and parked slices, instants); process 2,
// "fibers", has one track per fiber (its runs, wherever they ran, and its
// zones). Flow arrows are the model's flows (analysis::FlowKind), named by
// flowKindName. All of it is the model's lanes, zones and flows. Returns
// false with `error` set if the stream fails.
bool writeChromeJson(const Trace& trace, std::ostream& out, std::string& error);
// The same from a model already built from `trace`.
bool writeChromeJson(const Trace& trace, const analysis::Timeline& timeline, std::ostream& out, std::string& error);

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
// The columns are the model's thread lanes (a thread with no switch, park or
// unpark, such as a blocking-pool thread, has none and no column).
void writeTextTimeline(const Trace& trace, std::ostream& out, TimelineOptions options = {});
// The same from a model already built from `trace`.
void writeTextTimeline(const Trace& trace, const analysis::Timeline& timeline, std::ostream& out, TimelineOptions options = {});

} // namespace fiberscope::trace
