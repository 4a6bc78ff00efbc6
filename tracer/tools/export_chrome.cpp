// `fiberscope export --format chrome`: the trace as Chrome Trace Event JSON,
// for Perfetto (ui.perfetto.dev) and chrome://tracing.
//
// Layout:
//   process 1 "threads": one track per trace thread with the fiber runs
//     (X slices named after the fiber), idle and parked slices, and instants
//     (ring submits and completions, cancels, synchronisation, scheduling).
//   process 2 "fibers": one track per fiber (tid = fiber id) with its runs
//     (named after the thread they ran on) and its zones (B/E). Slices on
//     one track must nest, so runs are cut where a zone begins or ends.
//   Marks are global instants. Flow arrows: every flow of the model
//   (wake-ups, steals, spawns, completions, await chains, cancels, mutex
//   hand-offs and condition wakes), named after its kind.
// Everything is read off the trace's model (fiberscope/analysis): the thread
// tracks are its thread lanes, the fiber tracks its fiber lanes and zones,
// the arrows its flows, so the export and the viewer show the same thing.
// Times are microseconds with a fractional part (nanosecond precision).
#include <algorithm>
#include <climits>
#include <ostream>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "trace_tools.hpp"

namespace fiberscope::trace {

void appendJsonString(std::string& out, std::string_view text) {
    static const char* const kHex = "0123456789abcdef";
    out += '"';
    std::size_t i = 0;
    while (i < text.size()) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
            ++i;
        } else if (c < 0x20) {
            switch (c) {
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            case '\r': out += "\\r"; break;
            default:
                out += "\\u00";
                out += kHex[c >> 4];
                out += kHex[c & 0xF];
            }
            ++i;
        } else if (c < 0x80) {
            out += static_cast<char>(c);
            ++i;
        } else {
            // A UTF-8 sequence: copy it if well formed, else U+FFFD.
            std::size_t length = 0;
            std::uint32_t code = 0;
            if ((c & 0xE0) == 0xC0) length = 2, code = c & 0x1F;
            else if ((c & 0xF0) == 0xE0) length = 3, code = c & 0x0F;
            else if ((c & 0xF8) == 0xF0) length = 4, code = c & 0x07;
            bool valid = length != 0 && i + length <= text.size();
            for (std::size_t k = 1; valid && k < length; ++k) {
                const auto next = static_cast<unsigned char>(text[i + k]);
                valid = (next & 0xC0) == 0x80;
                code = (code << 6) | (next & 0x3F);
            }
            static const std::uint32_t kMinimum[5] = {0, 0, 0x80, 0x800, 0x10000};
            valid = valid && code >= kMinimum[length] && code <= 0x10FFFF && (code < 0xD800 || code > 0xDFFF);
            if (valid) {
                out.append(text.substr(i, length));
                i += length;
            } else {
                out += "\\ufffd";
                ++i;
            }
        }
    }
    out += '"';
}

namespace {

constexpr int kThreadsPid = 1;
constexpr int kFibersPid = 2;

// Nanoseconds as microseconds with three decimals: 1234567 -> "1234.567".
void appendMicros(std::string& out, std::int64_t signed_ns) {
    // The magnitude as unsigned: -INT64_MIN does not fit an int64.
    std::uint64_t ns = static_cast<std::uint64_t>(signed_ns);
    if (signed_ns < 0) {
        out += '-';
        ns = 0 - ns;
    }
    out += std::to_string(ns / 1000);
    const auto frac = static_cast<int>(ns % 1000);
    out += '.';
    out += static_cast<char>('0' + frac / 100);
    out += static_cast<char>('0' + frac / 10 % 10);
    out += static_cast<char>('0' + frac % 10);
}

// The "args" object of one event, built field by field.
struct Args {
    std::string text;
    Args& add(const char* key, std::int64_t value) {
        key_(key);
        text += std::to_string(value);
        return *this;
    }
    Args& add(const char* key, std::uint64_t value) {
        key_(key);
        text += std::to_string(value);
        return *this;
    }
    Args& add(const char* key, std::string_view value) {
        key_(key);
        appendJsonString(text, value);
        return *this;
    }
    Args& add(const char* key, const char* value) { return add(key, std::string_view(value)); }

private:
    void key_(const char* key) {
        text += text.empty() ? "{" : ",";
        appendJsonString(text, key);
        text += ':';
    }
};

// Writes the events, one per line, buffering the output.
struct JsonOut {
    std::ostream& stream;
    std::string buffer;
    bool first = true;

    // Starts an event object with the fields every event has.
    void open(char ph, int pid, std::uint64_t tid, std::string_view name, std::string_view cat) {
        buffer += first ? "\n{\"ph\":\"" : ",\n{\"ph\":\"";
        first = false;
        buffer += ph;
        buffer += "\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) + ",\"name\":";
        appendJsonString(buffer, name);
        if (!cat.empty()) {
            buffer += ",\"cat\":";
            appendJsonString(buffer, cat);
        }
    }
    void time(const char* key, std::int64_t ns) {
        buffer += ",\"";
        buffer += key;
        buffer += "\":";
        appendMicros(buffer, ns);
    }
    void close(const Args& args = {}) {
        if (!args.text.empty()) buffer += ",\"args\":" + args.text + "}";
        buffer += '}';
        if (buffer.size() > (1u << 20)) flush();
    }
    void flush() {
        stream.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
        buffer.clear();
    }

    void metadata(const char* what, int pid, std::uint64_t tid, std::string_view name) {
        open('M', pid, tid, what, "");
        close(Args{}.add("name", name));
    }
    void sortIndex(const char* what, int pid, std::uint64_t tid, std::int64_t index) {
        open('M', pid, tid, what, "");
        close(Args{}.add("sort_index", index));
    }
    void slice(int pid, std::uint64_t tid, std::int64_t begin, std::int64_t end, std::string_view name,
               std::string_view cat, const Args& args = {}) {
        open('X', pid, tid, name, cat);
        time("ts", begin);
        time("dur", end - begin);
        close(args);
    }
    void instant(int pid, std::uint64_t tid, std::int64_t at, std::string_view name, std::string_view cat, char scope,
                 const Args& args = {}) {
        open('i', pid, tid, name, cat);
        time("ts", at);
        buffer += ",\"s\":\"";
        buffer += scope;
        buffer += '"';
        close(args);
    }
    void zone(char ph, std::uint64_t fiber, std::int64_t at, std::string_view label) {
        open(ph, kFibersPid, fiber, label, "zone");
        time("ts", at);
        close();
    }
    // A flow arrow from (from_thread, from_time) to (to_thread, to_time).
    void flow(std::uint64_t id, std::string_view name, std::uint32_t from_thread, std::int64_t from_time,
              std::uint32_t to_thread, std::int64_t to_time) {
        open('s', kThreadsPid, from_thread, name, name);
        time("ts", from_time);
        buffer += ",\"id\":" + std::to_string(id);
        close();
        open('f', kThreadsPid, to_thread, name, name);
        time("ts", to_time);
        buffer += ",\"bp\":\"e\",\"id\":" + std::to_string(id);
        close();
    }
};

// A run that did not end with a switch (a park, a thread-stop, the trace's end, a zone cut).
constexpr std::uint8_t kNoSwitchReason = 0xFF;

// One piece of what a fiber track shows, in time order.
struct FiberItem {
    enum Kind : std::uint8_t { ZoneEnd, ZoneBegin, Run };
    std::int64_t time = 0;
    Kind kind = Run;
    std::int64_t end = 0;       // Run
    std::uint32_t thread = 0;   // Run
    std::uint8_t out_reason = kNoSwitchReason; // Run
    std::string label;          // ZoneBegin
};

struct ExportState {
    const Trace& trace;
    const analysis::Timeline& tl;
    JsonOut& json;
};

std::string fiberName(const ExportState& s, std::uint64_t fiber) {
    const analysis::FiberLane* lane = analysis::findFiber(s.tl, fiber);
    return lane ? lane->name() : fiber == 0 ? std::string("idle") : "fiber #" + std::to_string(fiber);
}

std::string threadName(const ExportState& s, std::uint32_t thread) {
    const analysis::ThreadLane* lane = analysis::findThread(s.tl, thread);
    return lane ? lane->name : "thread " + std::to_string(thread);
}

// Why the run in intervals[k] stopped: the reason of the switch that began
// the next interval, if one did at its end (not a park, a thread-stop, the end).
std::uint8_t outReason(const ExportState& s, const analysis::IntervalList& intervals, std::size_t k) {
    if (k + 1 >= intervals.size() || intervals[k + 1].start != intervals[k].end) return kNoSwitchReason;
    const std::uint32_t cause = intervals[k + 1].cause;
    if (cause == analysis::kNoEvent || cause >= s.trace.events.size()) return kNoSwitchReason;
    const Event& e = s.trace.events[cause];
    return e.kind == EventKind::Switch ? e.small : kNoSwitchReason;
}

void writeMetadata(ExportState& s) {
    std::string program = "fiberscope trace";
    if (!s.trace.header.command_line.empty()) {
        program = s.trace.header.command_line[0];
        if (auto slash = program.rfind('/'); slash != std::string::npos) program = program.substr(slash + 1);
    }
    s.json.metadata("process_name", kThreadsPid, 0, program + " (threads)");
    s.json.sortIndex("process_sort_index", kThreadsPid, 0, 0);
    s.json.metadata("process_name", kFibersPid, 0, "fibers");
    s.json.sortIndex("process_sort_index", kFibersPid, 0, 1);
    for (const analysis::ThreadLane& t : s.tl.threads) {
        if (t.record_count == 0) continue;
        s.json.metadata("thread_name", kThreadsPid, t.thread, t.name);
        s.json.sortIndex("thread_sort_index", kThreadsPid, t.thread, t.worker >= 0 ? t.worker : 100000 + t.thread);
    }
}

// Thread tracks: each thread lane's intervals (empty idle and parked ones
// carry nothing; an empty run is still a run).
void writeThreadSlices(ExportState& s) {
    using analysis::State;
    for (const analysis::ThreadLane& t : s.tl.threads) {
        const auto& intervals = t.lane.intervals;
        for (std::size_t k = 0; k < intervals.size(); ++k) {
            const analysis::Interval& iv = intervals[k];
            if (iv.state == State::Running) {
                Args args;
                args.add("fiber", iv.fiber);
                if (const std::uint8_t reason = outReason(s, intervals, k); reason != kNoSwitchReason)
                    args.add("switched out", switchReasonName(static_cast<SwitchReason>(reason)));
                s.json.slice(kThreadsPid, t.thread, iv.start, iv.end, fiberName(s, iv.fiber), "fiber", args);
            } else if (iv.duration() > 0) {
                const char* what = iv.state == State::Parked ? "parked" : "idle";
                s.json.slice(kThreadsPid, t.thread, iv.start, iv.end, what, what);
            }
        }
    }
}

void threadInstant(ExportState& s, const Event& e, std::string_view name, const char* cat, const Args& args) {
    s.json.instant(kThreadsPid, e.thread, e.time, name, cat, 't', args);
}

// The record's fields as arguments, named and typed by the record table
// (trace_records.hpp): fibers, workers, objects and counts as numbers,
// enumerated values and opcodes by name (an opcode also as the viewer calls
// it), strings as their text.
Args fieldArgs(const Trace& trace, const Event& e) {
    Args args;
    const RecordKindInfo& info = recordKind(e.kind);
    for (int k = 0; k < info.field_count; ++k) {
        const FieldInfo& f = info.fields[k];
        const std::uint64_t value = fieldValue(e, k);
        switch (f.type) {
        case FieldType::Enum: {
            const char* name = enumValueName(f, value);
            args.add(f.name, name ? name : "unknown");
            break;
        }
        case FieldType::Opcode:
            args.add(f.name, opcodeName(static_cast<std::uint8_t>(value)));
            args.add("operation", opcodeLabel(static_cast<std::uint8_t>(value)));
            break;
        case FieldType::Signed: args.add(f.name, static_cast<std::int64_t>(value)); break;
        case FieldType::String: args.add(f.name, trace.string(value)); break;
        case FieldType::WorkerPlusOne:
            if (value) args.add(f.name, value - 1);
            else args.add(f.name, "none");
            break;
        default: args.add(f.name, value); break;
        }
    }
    return args;
}

// The kinds shown as instants on their thread's track: the scheduling, ring,
// cancel and synchronisation instants of the record table, but for wake-ups,
// which are arrows (threads and fibers are tracks; marks are global).
bool threadInstantKind(EventKind kind) {
    const RecordKindInfo& info = recordKind(kind);
    if (!info.instant || kind == EventKind::WakeupSent || kind == EventKind::WakeupReceived) return false;
    const std::string_view category = info.category;
    return category == "sched" || category == "io" || category == "cancel" || category == "sync";
}

// A thread instant named after its kind, and for ring operations its opcode
// ("submit read"), with every field as an argument.
void recordInstant(ExportState& s, const Event& e) {
    std::string name = eventKindName(e.kind);
    std::uint64_t opcode = 0;
    if (firstField(e, FieldType::Opcode, opcode)) name += " " + opcodeName(static_cast<std::uint8_t>(opcode));
    threadInstant(s, e, name, recordKind(e.kind).category, fieldArgs(s.trace, e));
}

// Instants: every thread's instants (the model's: all records but switches,
// parks, unparks and zone edges), those the record table calls scheduling,
// ring, cancel or synchronisation steps on their thread's track, marks and
// lost records as global instants; the zones of an idle loop (which has no
// track of its own) as instants at their edges.
void writeInstants(ExportState& s) {
    for (const analysis::ThreadLane& t : s.tl.threads) {
        for (std::size_t k = 0; k < t.instants.size(); ++k) {
            const analysis::Instant& instant = t.instants[k];
            const Event& e = s.trace.events[instant.event];
            if (e.kind == EventKind::Mark) {
                Args args;
                args.add("fiber", analysis::instantFiber(s.trace, t, k)).add("thread", t.name);
                // Where it was made (format 4: the source-location record after it on its thread).
                const std::size_t next = analysis::nextOnThread(s.tl, s.trace, e.thread, std::size_t{instant.event} + 1);
                if (next < s.trace.events.size()) {
                    const Event where = s.trace.events[next];
                    if (where.kind == EventKind::SourceLocation && where.time == e.time)
                        args.add("source", s.trace.string(where.arg[0]) + ":" + std::to_string(where.arg[1]));
                }
                s.json.instant(kThreadsPid, e.thread, e.time, s.trace.string(e.arg[0]), "mark", 'g', args);
            }
            else if (e.kind == EventKind::LostEvents)
                s.json.instant(kThreadsPid, e.thread, e.time, "lost " + std::to_string(e.arg[0]) + " events", "lost", 'g');
            else if (threadInstantKind(e.kind))
                recordInstant(s, e);
        }
        for (const analysis::Zone& zone : t.zones) {
            threadInstant(s, s.trace.events[zone.begin_event], "zone begin: " + s.trace.string(zone.label), "zone", Args{});
            if (zone.end_event != analysis::kNoEvent) threadInstant(s, s.trace.events[zone.end_event], "zone end", "zone", Args{});
        }
    }
}

// What the OS did (cpu-sample records, FORMAT.md "CPU samples"): a counter
// per described thread, the percent of each sample interval it spent ready
// but waiting for a CPU, set at the interval's start (0 after the last).
void writeCpuSamples(ExportState& s) {
    const auto& threads = s.trace.threads;
    std::unordered_map<std::uint64_t, std::uint32_t> index_of; // file thread number -> Trace::threads index
    for (std::uint32_t i = 0; i < threads.size(); ++i) index_of.emplace(threads[i].number, i);
    // A thread's first sample counts from its first record.
    std::vector<std::int64_t> previous(threads.size(), INT64_MIN);
    for (const Event& e : s.trace.events)
        if (e.thread < previous.size() && previous[e.thread] == INT64_MIN && e.kind != EventKind::CpuSample)
            previous[e.thread] = e.time;
    std::vector<bool> any(threads.size(), false);
    const auto counter = [&](std::uint32_t t, std::int64_t at, std::int64_t percent) {
        s.json.open('C', kThreadsPid, 0, "waiting for a CPU: " + threads[t].name, "os");
        s.json.time("ts", at);
        s.json.close(Args{}.add("percent", percent));
    };
    for (const Event& e : s.trace.events) {
        if (e.kind != EventKind::CpuSample) continue;
        const auto it = index_of.find(e.arg[0]);
        if (it == index_of.end()) continue;
        const std::uint32_t t = it->second;
        const std::int64_t start = previous[t] == INT64_MIN ? e.time : previous[t];
        previous[t] = std::max(start, e.time);
        if (e.time <= start) continue;
        const double share = static_cast<double>(e.arg[2]) / static_cast<double>(e.time - start);
        counter(t, start, static_cast<std::int64_t>(std::min(1.0, share) * 100 + 0.5));
        any[t] = true;
    }
    for (std::uint32_t t = 0; t < threads.size(); ++t)
        if (any[t]) counter(t, previous[t], 0);
}

// Flow arrows: the model's flows, by start. An arrow that ends where a run
// begins (a spawn, a completion, an await, a hand-off: the switch-in) aims
// at the middle of that run, so that Perfetto binds it to the run rather
// than to the idle slice ending at the same instant.
std::int64_t flowEndTime(const ExportState& s, const analysis::FlowEnd& to) {
    if (to.event == analysis::kNoEvent || to.event >= s.trace.events.size() ||
        s.trace.events[to.event].kind != EventKind::Switch)
        return to.time;
    const analysis::ThreadLane* lane = analysis::findThread(s.tl, to.thread);
    if (!lane) return to.time;
    const auto& iv = lane->lane.intervals;
    auto it = std::lower_bound(iv.begin(), iv.end(), to.time, [](const analysis::Interval& a, std::int64_t t) { return a.start < t; });
    for (; it != iv.end() && it->start == to.time; ++it)
        if (it->state == analysis::State::Running && it->fiber == to.fiber) return it->start + it->duration() / 2;
    return to.time;
}

void writeFlows(ExportState& s) {
    std::uint64_t id = 1;
    for (const analysis::Flow& flow : analysis::flowsOf(s.tl))
        s.json.flow(id++, analysis::flowKindName(flow.kind), flow.from.thread, flow.from.time, flow.to.thread, flowEndTime(s, flow.to));
}

// Fiber tracks: runs cut at zone boundaries, and the zones around them.
// Items sort by time, zone records before runs at equal times (zones keep
// their recorded order), so every run piece lies wholly inside or outside
// each zone and the track nests.
std::vector<FiberItem> cutRuns(const std::vector<FiberItem>& items) {
    std::vector<std::int64_t> cuts;
    std::vector<FiberItem> runs;
    for (const FiberItem& item : items) {
        if (item.kind == FiberItem::Run) runs.push_back(item);
        else cuts.push_back(item.time);
    }
    std::sort(cuts.begin(), cuts.end());
    std::stable_sort(runs.begin(), runs.end(), [](const FiberItem& a, const FiberItem& b) { return a.time < b.time; });
    std::vector<FiberItem> pieces;
    pieces.reserve(items.size() + cuts.size());
    for (const FiberItem& item : items)
        if (item.kind != FiberItem::Run) pieces.push_back(item);
    std::int64_t previous_end = INT64_MIN;
    for (FiberItem run : runs) {
        // A fiber runs in one place at a time; if lost records make two runs
        // overlap, the later one is clipped so the track still nests.
        if (run.time < previous_end) run.time = previous_end;
        if (run.end < run.time) continue;
        previous_end = run.end;
        std::int64_t begin = run.time;
        for (auto cut = std::upper_bound(cuts.begin(), cuts.end(), begin); cut != cuts.end() && *cut < run.end; ++cut) {
            if (*cut == begin) continue;
            FiberItem piece = run;
            piece.time = begin;
            piece.end = *cut;
            piece.out_reason = kNoSwitchReason; // it did not stop here
            pieces.push_back(piece);
            begin = *cut;
        }
        run.time = begin;
        pieces.push_back(run);
    }
    std::stable_sort(pieces.begin(), pieces.end(), [](const FiberItem& a, const FiberItem& b) {
        if (a.time != b.time) return a.time < b.time;
        return (a.kind == FiberItem::Run) < (b.kind == FiberItem::Run);
    });
    return pieces;
}

// The items of one fiber's track: its runs (its lane's Running intervals)
// and its zones' edges, in recorded order (ties: an unclosed zone, ended by
// the fiber's finish or the trace's end, closes inner first).
std::vector<FiberItem> fiberItems(const ExportState& s, const analysis::FiberLane& fl) {
    std::vector<FiberItem> items;
    const auto& intervals = fl.lane.intervals;
    for (std::size_t k = 0; k < intervals.size(); ++k) {
        const analysis::Interval& iv = intervals[k];
        if (iv.state != analysis::State::Running) continue;
        FiberItem run;
        run.time = iv.start;
        run.end = iv.end;
        run.thread = static_cast<std::uint32_t>(std::max(iv.thread, 0));
        run.out_reason = outReason(s, intervals, k);
        items.push_back(run);
    }
    // Zone edges sorted by (time, recorded order); edges without a record last, deeper first.
    std::vector<std::tuple<std::int64_t, std::uint64_t, std::size_t, bool>> edges; // time, order, zone, begin
    for (std::size_t z = 0; z < fl.zones().size(); ++z) {
        const analysis::Zone& zone = fl.zones()[z];
        edges.emplace_back(zone.start, zone.begin_event, z, true);
        const std::uint64_t order = zone.end_event != analysis::kNoEvent ? zone.end_event : (std::uint64_t{1} << 40) - zone.depth;
        edges.emplace_back(zone.end, order, z, false);
    }
    std::sort(edges.begin(), edges.end());
    for (const auto& [time, order, z, begin] : edges) {
        FiberItem item;
        item.time = time;
        item.kind = begin ? FiberItem::ZoneBegin : FiberItem::ZoneEnd;
        if (begin) {
            item.label = s.trace.string(fl.zones()[z].label);
            if (item.label.empty()) item.label = "zone";
        }
        items.push_back(std::move(item));
    }
    return items;
}

void writeFiberTracks(ExportState& s) {
    for (const analysis::FiberLane& fl : s.tl.fibers) { // by id
        const std::uint64_t fiber = fl.fiber();
        if (fiber == 0) continue;
        const std::vector<FiberItem> items = fiberItems(s, fl);
        if (items.empty()) continue;
        const bool named = fl.named() || fiber == 1;
        s.json.metadata("thread_name", kFibersPid, fiber, named ? fl.name() + " (#" + std::to_string(fiber) + ")" : fl.name());
        s.json.sortIndex("thread_sort_index", kFibersPid, fiber, static_cast<std::int64_t>(fiber));
        std::vector<std::string> stack;
        for (const FiberItem& item : cutRuns(items)) {
            switch (item.kind) {
            case FiberItem::ZoneBegin:
                s.json.zone('B', fiber, item.time, item.label);
                stack.push_back(item.label);
                break;
            case FiberItem::ZoneEnd:
                s.json.zone('E', fiber, item.time, stack.empty() ? std::string("zone") : stack.back());
                if (!stack.empty()) stack.pop_back();
                break;
            case FiberItem::Run: {
                Args args;
                args.add("fiber", fiber);
                if (item.out_reason != kNoSwitchReason)
                    args.add("switched out", switchReasonName(static_cast<SwitchReason>(item.out_reason)));
                s.json.slice(kFibersPid, fiber, item.time, item.end, threadName(s, item.thread), "run", args);
                break;
            }
            }
        }
    }
}

} // namespace

bool writeChromeJson(const Trace& trace, std::ostream& out, std::string& error) {
    return writeChromeJson(trace, analysis::buildTimeline(trace), out, error);
}

bool writeChromeJson(const Trace& trace, const analysis::Timeline& timeline, std::ostream& out, std::string& error) {
    JsonOut json{out, {}, true};
    ExportState s{.trace = trace, .tl = timeline, .json = json};
    json.buffer = "{\"traceEvents\":[";
    writeMetadata(s);
    writeThreadSlices(s);
    writeInstants(s);
    writeCpuSamples(s);
    writeFlows(s);
    writeFiberTracks(s);
    json.buffer += "\n],\n\"displayTimeUnit\":\"ns\"}\n";
    json.flush();
    out.flush();
    if (!out) {
        error = "write failed";
        return false;
    }
    return true;
}

} // namespace fiberscope::trace
