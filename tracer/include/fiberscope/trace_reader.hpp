// Reading .fstrace files into memory: validating, fast, never crashing.
//
//     fiberscope::trace::Trace trace;
//     fiberscope::trace::ReadError error;
//     if (!fiberscope::trace::readTrace("out.fstrace", trace, error))
//         std::fprintf(stderr, "%s\n", error.text().c_str());
//
// A truncated file (a program that crashed, a copy cut short) loads up to
// its last complete chunk, with a warning naming the offset; with
// `ReadOptions::strict` it is an error instead. Corrupt or foreign bytes are
// always an error naming the offset and what is wrong.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fiberscope/trace_event_list.hpp"
#include "fiberscope/trace_events.hpp"
#include "fiberscope/trace_records.hpp"

namespace fiberscope::trace {

// Field `field` (an index into recordKind(e.kind).fields) as the reader
// stored it: a fiber, worker, string id, object or count as is, a signed
// value as int64 bits, an enumerated value or opcode from `small`.
constexpr std::uint64_t fieldValue(const Event& e, int field) noexcept {
    const RecordKindInfo& info = recordKind(e.kind);
    if (field < 0 || field >= info.field_count) return 0;
    const int slot = eventSlot(info, field);
    return slot < 0 ? e.small : e.arg[slot];
}

// The record's fiber fields, in record order, into `out` (at most 3; a
// fiber 0 is the idle loop and is listed too). Returns how many.
constexpr std::size_t fiberFields(const Event& e, std::uint64_t out[3]) noexcept {
    const RecordKindInfo& info = recordKind(e.kind);
    std::size_t n = 0;
    for (int k = 0, slot = 0; k < info.field_count && n < 3; ++k) {
        const FieldType t = info.fields[k].type;
        if (t == FieldType::Enum || t == FieldType::Opcode) continue;
        if (t == FieldType::Fiber) out[n++] = e.arg[slot];
        ++slot;
    }
    return n;
}

// The record's first field of type `type` into `value`; false if it has none.
constexpr bool firstField(const Event& e, FieldType type, std::uint64_t& value) noexcept {
    const RecordKindInfo& info = recordKind(e.kind);
    for (int k = 0; k < info.field_count; ++k)
        if (info.fields[k].type == type) {
            value = fieldValue(e, k);
            return true;
        }
    return false;
}

struct ThreadInfo {
    std::uint32_t number = 0;    // trace thread number
    std::int64_t worker = -1;    // the runtime's worker index, -1 if unknown
    std::uint64_t name_id = 0;
    std::string name;
};

struct TraceHeader {
    std::uint32_t version = 0;
    std::uint64_t ticks_per_second = 0;
    std::uint64_t start_realtime_ns = 0;
    std::int64_t duration_ns = 0; // from the header if complete, else the last event
    std::uint32_t cpu_count = 0;
    std::uint32_t pid = 0;
    bool tsc_clock = false;
    bool complete = false; // the recorder stopped cleanly
    std::string backend;
    std::vector<std::string> command_line;
};

struct Trace {
    TraceHeader header;
    EventList events;                 // by time; ties by thread index, each thread's in its recorded order
    std::vector<ThreadInfo> threads;  // one per thread that recorded, by its number in the file
    std::vector<std::string> strings; // indexed by string id (0 = ""); sparse ids are renumbered
    std::uint64_t lost_events = 0;
    std::uint64_t chunks = 0;
    std::uint64_t file_bytes = 0;
    std::vector<std::string> warnings;
    // Unique to this read in this process (nextTraceSerial): what a cache
    // built from the trace is keyed by, since the next trace may be
    // allocated where this one was.
    std::uint64_t serial = 0;

    const std::string& string(std::uint64_t id) const noexcept {
        static const std::string empty;
        return id < strings.size() ? strings[id] : empty;
    }
};

// A number no trace or model of this process had before (Trace::serial,
// analysis::Timeline::serial).
std::uint64_t nextTraceSerial() noexcept;

// Whether the trace's program ran the scaling scheduler policy: its
// kScalingPolicyMark, among the first records (worker 0 writes it at the
// loop's start).
bool ranScalingPolicy(const Trace& trace) noexcept;

struct ReadError {
    std::string path;
    std::uint64_t offset = 0;
    std::string message;
    // "path: offset N: message"
    std::string text() const;
};

// Sees each thread's decoded records while the reader merges them into
// Trace::events, so that work on them (the model's build:
// fiberscope/analysis/load.hpp) can run beside the merge on a thread of its
// own rather than after the read.
struct MergeObserver {
    virtual ~MergeObserver() = default;
    // Before the merge. `trace` has its header, threads and strings (they do
    // not change until merged() has returned; its events do), and
    // per_thread[t] holds thread t's records in time order: mergeByTime
    // (trace_merge.hpp) gives the order and index Trace::events will have.
    virtual void merging(const Trace& trace, const std::vector<std::vector<Event>>& per_thread) = 0;
    // After the merge, or when it failed: `per_thread` is freed once this
    // returns, so whatever reads it must be done.
    virtual void merged() noexcept = 0;
};

struct ReadOptions {
    bool strict = false; // a truncated tail is an error, not a warning
    // If set, receives the number of bytes parsed so far (for a progress bar
    // while another thread loads a large file).
    std::atomic<std::uint64_t>* progress = nullptr;
    // If set, called around the merge (readTrace and parseTrace only; a
    // follower merges as it polls).
    MergeObserver* observer = nullptr;
};

// Reads (mmaps) a trace file.
bool readTrace(const std::string& path, Trace& out, ReadError& error, ReadOptions options = {});
// Parses trace bytes already in memory (the file reader and the fuzzer use it).
bool parseTrace(std::span<const std::uint8_t> bytes, Trace& out, ReadError& error, ReadOptions options = {});

} // namespace fiberscope::trace
