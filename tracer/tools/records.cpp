// `fiberscope records`: the records themselves, one a line, each field by the
// record table's name (trace_records.hpp), the words FORMAT.md and the
// lessons use: what a student checks a lesson's sentence against.

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <ostream>

#include "trace_tools.hpp"

namespace fiberscope::trace {

namespace {

// "4 (ping)" for a named fiber, "4" otherwise; 0 is the idle loop.
std::string fiberText(const Trace& trace, const std::vector<std::string>& names, std::uint64_t fiber) {
    std::string text = std::to_string(fiber);
    if (fiber < names.size() && !names[fiber].empty()) text += "(" + terminalSafe(names[fiber]) + ")";
    (void)trace;
    return text;
}

// Every fiber's name (setFiberName), by number: the last name given.
std::vector<std::string> fiberNames(const Trace& trace) {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
        const Event e = trace.events[i];
        if (e.kind != EventKind::FiberName || e.arg[0] > (std::uint64_t{1} << 24)) continue;
        if (names.size() <= e.arg[0]) names.resize(e.arg[0] + 1);
        names[e.arg[0]] = trace.string(e.arg[1]);
    }
    return names;
}

std::string fieldsText(const Trace& trace, const std::vector<std::string>& names, const Event& e) {
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
        case FieldType::Fiber: text += fiberText(trace, names, value); break;
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
    const std::vector<std::string> names = fiberNames(trace);
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
