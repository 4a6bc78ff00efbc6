// Finding events: filter by kind set / thread / fiber / time range, search
// fiber names, and step to the next or previous event of a kind.
//
// Design: each query picks the smallest candidate set the Timeline can give
// -- one thread's events or one kind's events (every event, skipping the
// strides of the kind index that hold none of them: nextOnThread,
// nextOfKind), else the whole trace -- binary searches the start time, and
// scans forward testing the rest of the filter. A
// fiber matches the fiber fields a record carries (eventFibers); records with
// no fiber field (mark, zone, wakeup-sent, ...) match the fiber running on
// their thread at that moment.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "fiberscope/trace_reader.hpp"
#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::viewer {
using namespace fiberscope::analysis; // the viewer reads the analysis model (tracer/analysis) as its own
} // namespace fiberscope::viewer

namespace fiberscope::viewer {

constexpr std::uint64_t kindBit(trace::EventKind kind) noexcept { return std::uint64_t{1} << static_cast<unsigned>(kind); }
inline constexpr std::uint64_t kAllKinds = ~std::uint64_t{0};

struct EventFilter {
    std::uint64_t kinds = kAllKinds; // kindBit(kind) set: the kind passes
    std::int64_t thread = -1;        // trace thread number; -1: any
    bool any_fiber = true;           // false: only events involving `fiber`
    std::uint64_t fiber = 0;
    std::int64_t t0 = INT64_MIN;     // inclusive time range
    std::int64_t t1 = INT64_MAX;
};

// The fiber fields of a record, in record order (create: fiber, parent;
// switch: from, to; await: fiber, target; ...). Returns how many (0..2).
std::size_t eventFibers(const trace::Event& event, std::uint64_t out[3]) noexcept;
// Whether the record names `fiber`, or (no fiber field) happened while it ran.
bool eventInvolvesFiber(const Timeline& timeline, const trace::Event& event, std::uint64_t fiber) noexcept;
bool matches(const Timeline& timeline, const trace::Event& event, const EventFilter& filter) noexcept;

// The events the event table lists under `filter`: not a mark's
// source-location record (the line of the mark before it, not an event).
inline EventFilter listedEvents(EventFilter filter) noexcept {
    filter.kinds &= ~kindBit(trace::EventKind::SourceLocation);
    return filter;
}

// Indices (into trace.events) of the matching events, by time, at most `limit`.
void filterEvents(const Timeline& timeline, const trace::Trace& trace, const EventFilter& filter,
                  std::vector<std::uint32_t>& out, std::size_t limit = SIZE_MAX);
// How many events match (same scan, nothing stored).
std::size_t countEvents(const Timeline& timeline, const trace::Trace& trace, const EventFilter& filter);

// Fiber ids whose name contains `needle` (ASCII case-insensitive), by id.
// An empty needle matches every fiber.
std::vector<std::uint64_t> findFibers(const Timeline& timeline, std::string_view needle);

// The first event of `kind` strictly after `time` (on `thread` unless -1), or kNoEvent.
std::uint32_t nextEvent(const Timeline& timeline, const trace::Trace& trace, trace::EventKind kind, std::int64_t time,
                        std::int64_t thread = -1);
// The last event of `kind` strictly before `time` (on `thread` unless -1), or kNoEvent.
std::uint32_t previousEvent(const Timeline& timeline, const trace::Trace& trace, trace::EventKind kind, std::int64_t time,
                            std::int64_t thread = -1);
// The same for any filter (its t0/t1 are ignored).
std::uint32_t nextMatching(const Timeline& timeline, const trace::Trace& trace, const EventFilter& filter, std::int64_t time);
std::uint32_t previousMatching(const Timeline& timeline, const trace::Trace& trace, const EventFilter& filter, std::int64_t time);

} // namespace fiberscope::viewer
