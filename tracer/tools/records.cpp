// `fiberscope records`: the records themselves, one a line, each field by the
// record table's name (trace_records.hpp), the words FORMAT.md and the
// lessons use: what a student checks a lesson's sentence against.

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ostream>
#include <unordered_map>

#include "trace_tools.hpp"

namespace fiberscope::trace {

namespace {

using FiberNames = std::unordered_map<std::uint64_t, std::string>;

// "4(ping)" for a named fiber, "4" otherwise; 0 is the idle loop.
std::string fiberText(const FiberNames& names, std::uint64_t fiber) {
    std::string text = std::to_string(fiber);
    if (const auto it = names.find(fiber); it != names.end() && !it->second.empty())
        text += "(" + terminalSafe(it->second) + ")";
    return text;
}

// Every fiber's name (setFiberName), by number: the last name given (a map:
// a crafted trace's fiber numbers may be anything).
FiberNames fiberNames(const Trace& trace) {
    FiberNames names;
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
        const Event e = trace.events[i];
        if (e.kind == EventKind::FiberName) names[e.arg[0]] = trace.string(e.arg[1]);
    }
    return names;
}

std::string fieldsText(const Trace& trace, const FiberNames& names, const Event& e) {
    const RecordKindInfo& info = recordKind(e.kind);
    std::string text = info.name ? info.name : "kind-" + std::to_string(static_cast<unsigned>(e.kind));
    for (int k = 0; k < info.field_count; ++k) {
        const FieldInfo& f = info.fields[k];
        const std::uint64_t value = fieldValue(e, k);
        text += ' ';
        text += f.name;
        text += '=';
        switch (f.type) {
        case FieldType::Enum: {
            const char* name = enumValueName(f, value);
            text += name ? name : "?" + std::to_string(value);
            break;
        }
        case FieldType::Opcode:
            text += std::to_string(value) + "(" + opcodeName(static_cast<std::uint8_t>(value)) + ")";
            break;
        case FieldType::Signed: text += std::to_string(static_cast<std::int64_t>(value)); break;
        case FieldType::String: text += "\"" + terminalSafe(trace.string(value)) + "\""; break;
        case FieldType::WorkerPlusOne: text += value ? std::to_string(value - 1) : "none"; break;
        case FieldType::Fiber: text += fiberText(names, value); break;
        case FieldType::Object: {
            char hex[24];
            std::snprintf(hex, sizeof hex, "0x%" PRIx64, value);
            text += hex;
            break;
        }
        default: text += std::to_string(value); break;
        }
    }
    return text;
}

bool namesFiber(const Event& e, std::uint64_t fiber) {
    std::uint64_t fibers[3];
    const std::size_t n = fiberFields(e, fibers);
    for (std::size_t k = 0; k < n; ++k)
        if (fibers[k] == fiber) return true;
    return false;
}

} // namespace

std::string recordText(const Trace& trace, const Event& e) { return fieldsText(trace, fiberNames(trace), e); }

std::size_t writeRecords(const Trace& trace, std::ostream& out, const RecordsOptions& options) {
    const FiberNames names = fiberNames(trace);
    std::vector<std::string> threads(trace.threads.size());
    std::size_t width = 8;
    for (std::size_t t = 0; t < trace.threads.size(); ++t) {
        threads[t] = terminalSafe(threadDisplayName(trace.threads[t].worker, trace.threads[t].number));
        width = std::max(width, threads[t].size());
    }
    std::size_t written = 0, matched = 0;
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
        const Event e = trace.events[i];
        if (e.time < options.from) continue;
        if (e.time > options.to) break;
        if (!options.kinds.empty() && std::find(options.kinds.begin(), options.kinds.end(), e.kind) == options.kinds.end())
            continue;
        if (options.fiber >= 0 && !namesFiber(e, static_cast<std::uint64_t>(options.fiber))) continue;
        const std::int64_t worker = e.thread < trace.threads.size() ? trace.threads[e.thread].worker : -1;
        if (options.worker != kAnyWorker && worker != options.worker) continue;
        ++matched;
        if (options.limit && written == options.limit) continue;
        char time[32];
        std::snprintf(time, sizeof time, "%14.3f us  ", static_cast<double>(e.time) / 1000.0);
        std::string thread = e.thread < threads.size() ? threads[e.thread] : "thread " + std::to_string(e.thread);
        thread.resize(std::max(thread.size(), width), ' ');
        out << time << thread << "  " << fieldsText(trace, names, e) << '\n';
        ++written;
    }
    if (written < matched)
        out << "(" << matched - written << " more record" << (matched - written == 1 ? "" : "s")
            << " match: --limit N shows more, --from and --to narrow the time)\n";
    return matched;
}

} // namespace fiberscope::trace
