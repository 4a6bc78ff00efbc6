// Decoded traces built by hand, for tests of what consumes a Trace (the
// analysis, the viewer's model). tests/support/trace_builder.hpp builds the
// file's bytes instead, for tests of the reader.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fiberscope/trace_reader.hpp"

namespace test {

namespace trace = fiberscope::trace;

// One decoded record.
inline trace::Event ev(std::int64_t time, std::uint32_t thread, trace::EventKind kind, std::uint64_t a0 = 0,
                       std::uint64_t a1 = 0, std::uint64_t a2 = 0, std::uint8_t small = 0) {
    trace::Event e;
    e.time = time;
    e.thread = thread;
    e.kind = kind;
    e.arg[0] = a0;
    e.arg[1] = a1;
    e.arg[2] = a2;
    e.small = small;
    return e;
}

// A complete trace of `threads` workers ("worker N", thread N) holding
// `events` in time order; string ids 1.. are `strings`.
inline trace::Trace makeTrace(unsigned threads, std::vector<trace::Event> events, std::vector<std::string> strings = {}) {
    trace::Trace t;
    t.header.complete = true;
    for (unsigned i = 0; i < threads; ++i) {
        trace::ThreadInfo info;
        info.number = i;
        info.worker = i;
        info.name = "worker " + std::to_string(i);
        t.threads.push_back(info);
    }
    t.strings.push_back("");
    for (auto& s : strings) t.strings.push_back(s);
    std::stable_sort(events.begin(), events.end(), [](const trace::Event& a, const trace::Event& b) { return a.time < b.time; });
    t.events = std::move(events);
    t.header.duration_ns = t.events.empty() ? 0 : t.events.back().time;
    return t;
}

} // namespace test
