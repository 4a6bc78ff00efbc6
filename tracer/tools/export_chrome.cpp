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
//   Marks are global instants. Flow arrows: wake-ups (sender -> receiver),
//   steals (victim -> thief) and spawns (parent -> the child's first run).
// Times are microseconds with a fractional part (nanosecond precision).
#include <algorithm>
#include <climits>
#include <deque>
#include <map>
#include <optional>
#include <ostream>

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
    JsonOut& json;
    const FiberNames names;
    const std::vector<ThreadTimeline> timelines;
    std::vector<std::int64_t> known_workers; // worker -> thread, from the thread table
    std::vector<std::int64_t> live_workers = {};  // worker -> thread, from thread-start records
    std::vector<std::uint64_t> current = {};      // thread -> fiber running
    std::uint64_t next_flow = 1;
    // Wake-ups sent and not yet received, by (sender worker, target worker).
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::deque<std::pair<std::uint32_t, std::int64_t>>> wakeups = {};
    struct Where {
        std::uint32_t thread = 0;
        std::int64_t time = 0;
        std::int64_t end = 0;
    };
    std::unordered_map<std::uint64_t, Where> first_run = {};
    std::unordered_map<std::uint64_t, std::vector<FiberItem>> fiber_items = {};
    std::unordered_map<std::uint64_t, std::vector<std::string>> open_zones = {};
};

std::string runName(const ExportState& s, std::uint64_t fiber) { return fiberDisplayName(s.names, fiber); }

std::optional<std::uint32_t> threadOfWorker(const ExportState& s, std::uint64_t worker) {
    std::int64_t thread = -1;
    if (worker < s.live_workers.size()) thread = s.live_workers[worker];
    if (thread < 0 && worker < s.known_workers.size()) thread = s.known_workers[worker];
    if (thread < 0) return std::nullopt;
    return static_cast<std::uint32_t>(thread);
}

bool aliveAt(const ExportState& s, std::uint32_t thread, std::int64_t time) {
    return thread < s.timelines.size() && !s.timelines[thread].spans.empty() && s.timelines[thread].begin <= time &&
           time <= s.timelines[thread].end;
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
    for (const ThreadTimeline& t : s.timelines) {
        if (t.spans.empty()) continue;
        s.json.metadata("thread_name", kThreadsPid, t.thread, t.name);
        s.json.sortIndex("thread_sort_index", kThreadsPid, t.thread, t.worker >= 0 ? t.worker : 100000 + t.thread);
    }
}

// Thread tracks: every span; and the runs, collected per fiber.
void writeThreadSpans(ExportState& s) {
    for (const ThreadTimeline& t : s.timelines) {
        for (const StateSpan& span : t.spans) {
            switch (span.state) {
            case ThreadState::Running: {
                Args args;
                args.add("fiber", span.fiber);
                if (span.out_reason != kNoSwitchReason)
                    args.add("switched out", switchReasonName(static_cast<SwitchReason>(span.out_reason)));
                s.json.slice(kThreadsPid, t.thread, span.begin, span.end, runName(s, span.fiber), "fiber", args);
                FiberItem item;
                item.time = span.begin;
                item.end = span.end;
                item.thread = t.thread;
                item.out_reason = span.out_reason;
                s.fiber_items[span.fiber].push_back(item);
                auto [it, inserted] = s.first_run.try_emplace(span.fiber, ExportState::Where{t.thread, span.begin, span.end});
                if (!inserted && span.begin < it->second.time) it->second = {t.thread, span.begin, span.end};
                break;
            }
            case ThreadState::Idle:
                s.json.slice(kThreadsPid, t.thread, span.begin, span.end, "idle", "idle");
                break;
            case ThreadState::Parked:
                s.json.slice(kThreadsPid, t.thread, span.begin, span.end, "parked", "parked");
                break;
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

void zoneBegin(ExportState& s, const Event& e) {
    const std::uint64_t fiber = s.current[e.thread];
    const std::string& label = s.trace.string(e.arg[0]);
    if (fiber == 0) {
        threadInstant(s, e, "zone begin: " + label, "zone", Args{});
        return;
    }
    FiberItem item;
    item.time = e.time;
    item.kind = FiberItem::ZoneBegin;
    item.label = label.empty() ? "zone" : label;
    s.fiber_items[fiber].push_back(item);
    s.open_zones[fiber].push_back(item.label);
}

void zoneEnd(ExportState& s, const Event& e) {
    const std::uint64_t fiber = s.current[e.thread];
    auto open = s.open_zones.find(fiber);
    if (fiber == 0 || open == s.open_zones.end() || open->second.empty()) {
        threadInstant(s, e, "zone end", "zone", Args{});
        return;
    }
    open->second.pop_back();
    FiberItem item;
    item.time = e.time;
    item.kind = FiberItem::ZoneEnd;
    s.fiber_items[fiber].push_back(item);
}

void steal(ExportState& s, const Event& e, const std::unordered_map<std::uint64_t, std::pair<std::uint32_t, std::int64_t>>& ready) {
    const auto victim = threadOfWorker(s, e.arg[1]);
    std::uint32_t from_thread = 0;
    std::int64_t from_time = e.time;
    if (victim && aliveAt(s, *victim, e.time)) {
        from_thread = *victim;
    } else if (auto it = ready.find(e.arg[0]); it != ready.end()) {
        // The victim had not started yet (its first work was taken from it):
        // start the arrow where the fibers were queued.
        from_thread = it->second.first;
        from_time = it->second.second;
    } else {
        return;
    }
    s.json.flow(s.next_flow++, "steal", from_thread, from_time, e.thread, e.time);
}

void spawn(ExportState& s, const Event& e) {
    auto it = s.first_run.find(e.arg[0]);
    if (it == s.first_run.end()) return;
    const ExportState::Where& run = it->second;
    // Aim inside the child's first slice so the arrow binds to it.
    s.json.flow(s.next_flow++, "spawn", e.thread, e.time, run.thread, run.time + (run.end - run.time) / 2);
}

// Instants, flows and zones, replaying which fiber runs where.
void writeEvents(ExportState& s) {
    const std::vector<std::uint64_t> initial = initialFibers(s.trace);
    s.current = initial;
    // Where each fiber was last made ready (thread, time), for steal arrows.
    std::unordered_map<std::uint64_t, std::pair<std::uint32_t, std::int64_t>> ready;
    for (const Event& e : s.trace.events) {
        if (e.thread >= s.current.size()) continue;
        const std::int64_t worker = s.trace.threads[e.thread].worker;
        switch (e.kind) {
        case EventKind::ThreadStart:
            if (e.arg[0] <= 65535) {
                if (s.live_workers.size() <= e.arg[0]) s.live_workers.resize(e.arg[0] + 1, -1);
                s.live_workers[e.arg[0]] = e.thread;
            }
            break;
        case EventKind::Switch:
            s.current[e.thread] = e.arg[1];
            break;
        case EventKind::FiberCreate:
            ready[e.arg[0]] = {e.thread, e.time};
            spawn(s, e);
            break;
        case EventKind::Schedule:
            ready[e.arg[0]] = {e.thread, e.time};
            break;
        case EventKind::Steal:
            steal(s, e, ready);
            break;
        case EventKind::WakeupSent:
            if (worker >= 0) s.wakeups[{static_cast<std::uint64_t>(worker), e.arg[0]}].push_back({e.thread, e.time});
            break;
        case EventKind::WakeupReceived: {
            if (worker < 0) break;
            auto it = s.wakeups.find({e.arg[0], static_cast<std::uint64_t>(worker)});
            if (it == s.wakeups.end() || it->second.empty()) break;
            const auto [from_thread, from_time] = it->second.front();
            it->second.pop_front();
            s.json.flow(s.next_flow++, "wakeup", from_thread, from_time, e.thread, e.time);
            break;
        }
        case EventKind::Mark:
            s.json.instant(kThreadsPid, e.thread, e.time, s.trace.string(e.arg[0]), "mark", 'g',
                           Args{}.add("fiber", s.current[e.thread]).add("thread", s.trace.threads[e.thread].name));
            break;
        case EventKind::ZoneBegin:
            zoneBegin(s, e);
            break;
        case EventKind::ZoneEnd:
            zoneEnd(s, e);
            break;
        case EventKind::LostEvents:
            s.json.instant(kThreadsPid, e.thread, e.time, "lost " + std::to_string(e.arg[0]) + " events", "lost", 'g');
            break;
        default:
            break;
        }
        if (threadInstantKind(e.kind)) recordInstant(s, e);
    }
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

void writeFiberTracks(ExportState& s) {
    const std::int64_t trace_end = traceEnd(s.trace);
    std::vector<std::uint64_t> fibers;
    for (const auto& [fiber, items] : s.fiber_items) fibers.push_back(fiber);
    std::sort(fibers.begin(), fibers.end());
    for (std::uint64_t fiber : fibers) {
        std::vector<FiberItem>& items = s.fiber_items[fiber];
        // Zones still open at the end close with the trace.
        for (std::size_t i = s.open_zones[fiber].size(); i > 0; --i) {
            FiberItem end;
            end.time = trace_end;
            end.kind = FiberItem::ZoneEnd;
            items.push_back(end);
        }
        const bool named = s.names.count(fiber) || fiber == 1;
        s.json.metadata("thread_name", kFibersPid, fiber,
                        named ? runName(s, fiber) + " (#" + std::to_string(fiber) + ")" : runName(s, fiber));
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
                s.json.slice(kFibersPid, fiber, item.time, item.end, s.timelines[item.thread].name, "run", args);
                break;
            }
            }
        }
    }
}

} // namespace

bool writeChromeJson(const Trace& trace, std::ostream& out, std::string& error) {
    JsonOut json{out, {}, true};
    ExportState s{.trace = trace,
                  .json = json,
                  .names = collectFiberNames(trace),
                  .timelines = buildThreadTimelines(trace),
                  .known_workers = workerThreads(trace)};
    json.buffer = "{\"traceEvents\":[";
    writeMetadata(s);
    writeThreadSpans(s);
    writeEvents(s);
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
