// Reading a mark's location back from the trace (source_location.hpp). The
// marks and zones are found by kind through the timeline's KindIndex (which
// skips strides of records without one), their locations by the next record
// of the same thread: no list of marks is built or kept.
#include "model/source_location.hpp"

#include <algorithm>

namespace fiberscope::viewer {

using analysis::kNone;
using trace::EventKind;

std::optional<SourceLine> sourceLineOf(const trace::Trace& trace, const analysis::Timeline& timeline, std::uint32_t event) {
    if (event >= trace.events.size()) return std::nullopt;
    const trace::Event e = trace.events[event];
    if (e.kind != EventKind::Mark && e.kind != EventKind::ZoneBegin) return std::nullopt;
    const std::size_t next = analysis::nextOnThread(timeline, trace, e.thread, std::size_t{event} + 1);
    if (next >= trace.events.size()) return std::nullopt;
    const trace::Event where = trace.events[next];
    if (where.kind != EventKind::SourceLocation || where.time != e.time || where.arg[1] == 0) return std::nullopt;
    SourceLine line;
    line.file = trace.string(where.arg[0]);
    line.line = static_cast<std::uint32_t>(std::min<std::uint64_t>(where.arg[1], UINT32_MAX));
    line.event = event;
    line.fiber = analysis::runningFiber(timeline, e.thread, e.time);
    return line;
}

std::optional<SourceLine> sourceLineAt(const trace::Trace& trace, const analysis::Timeline& timeline, std::uint32_t thread,
                                       std::int64_t time, std::string_view file_suffix, std::size_t limit) {
    std::uint64_t fiber = 0;
    if (thread != kAnyThread) {
        fiber = analysis::runningFiber(timeline, thread, time);
        if (fiber == 0) return std::nullopt;
    }
    // Records at or before `time` are [0, end).
    const std::size_t end = analysis::firstEventAt(trace, time, /*after=*/true);
    std::size_t mark = analysis::previousOfKind(timeline, trace, EventKind::Mark, end);
    std::size_t zone = analysis::previousOfKind(timeline, trace, EventKind::ZoneBegin, end);
    for (std::size_t seen = 0; seen < limit && (mark != kNone || zone != kNone); ++seen) {
        // The later of the two candidates (kNone is the largest value: the other one).
        std::size_t i;
        if (mark == kNone || (zone != kNone && zone > mark)) {
            i = zone;
            zone = analysis::previousOfKind(timeline, trace, EventKind::ZoneBegin, i);
        } else {
            i = mark;
            mark = analysis::previousOfKind(timeline, trace, EventKind::Mark, i);
        }
        if (fiber != 0) {
            const trace::Event e = trace.events[i];
            if (analysis::runningFiber(timeline, e.thread, e.time) != fiber) continue;
        }
        std::optional<SourceLine> line = sourceLineOf(trace, timeline, static_cast<std::uint32_t>(i));
        if (!line) continue;
        if (!file_suffix.empty() && !std::string_view(line->file).ends_with(file_suffix)) continue;
        return line;
    }
    return std::nullopt;
}

} // namespace fiberscope::viewer
