// Where in the program a point of the trace is: the file and line of the
// latest mark or zone-begin (trace::mark, trace::Zone) before it, which the
// tracer records as a source-location record right after the mark (format
// version 4, FORMAT.md "Source locations"). Nothing is kept per event: the
// location is read from the trace when asked for (the record after the
// mark on its thread), so the model costs no memory for it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::viewer {

struct SourceLine {
    std::string file;       // as the compiler named it ("/src/lessons/01-hello-fibers/main.cpp")
    std::uint32_t line = 0; // from 1
    std::uint32_t event = analysis::kNoEvent; // the mark or zone-begin it places
    std::uint64_t fiber = 0; // the fiber running when it was recorded (0: an idle loop)
};

// The location of mark or zone-begin `event` (the next record of its thread,
// when that is a source-location at its time), or none (another kind, or a
// trace older than version 4).
std::optional<SourceLine> sourceLineOf(const trace::Trace& trace, const analysis::Timeline& timeline, std::uint32_t event);

inline constexpr std::uint32_t kAnyThread = UINT32_MAX;

// The location of the latest mark or zone-begin at or before `time` of the
// fiber running on trace thread `thread` at `time` (none if the thread runs
// no fiber then), or with kAnyThread of any fiber. With `file_suffix`, only
// locations whose file ends with it count ("/01-hello-fibers/main.cpp"),
// so the runtime's own zones do not hide the program's. The search reads
// back over at most `limit` marks and zones.
std::optional<SourceLine> sourceLineAt(const trace::Trace& trace, const analysis::Timeline& timeline, std::uint32_t thread,
                                       std::int64_t time, std::string_view file_suffix = {}, std::size_t limit = 100000);

} // namespace fiberscope::viewer
