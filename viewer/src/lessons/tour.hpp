// The narrated tour of a lesson: its lesson.md, sentence by sentence. A
// sentence that names a checkpoint (`checkpoint: tree begins`) or records
// (`wakeup-sent`, `schedule ... how=idle-handoff`, `how=own-queue`,
// `idle-handoff`) is a stop: the lesson panel shows that checkpoint's window,
// lights the named records there on the timeline, puts the scheduler state
// and the code view at the first of them, and shows the sentence.
//
// Names resolve only through the record table (trace_records.hpp): a kind
// by its name, a field by its kind's field names, a value by the field's
// enumerated names. So the same parse checks the narrative: a snippet that
// names a field its kind does not have (`schedule head=F`) or a value the
// field cannot take is a finding (snippetFindings), which a test turns into
// a failure for every lesson.
//
// Plain data and free functions; no GL, so the tests link it directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fiberscope/trace_reader.hpp"

namespace fiberscope::viewer::tour {

// A record a sentence names: a kind, and the enumerated or numeric field
// values it spells out (`how=idle-handoff`, `count=4`).
struct RecordRef {
    trace::EventKind kind = trace::EventKind::Mark;
    struct Match {
        int field = -1; // index in the kind's table row
        std::uint64_t value = 0;
    };
    std::vector<Match> fields;
    std::string text; // as written
};

struct Stop {
    int line = 0;             // lesson.md's line the sentence starts on
    std::string sentence;     // its text, Markdown marks removed
    std::string checkpoint;   // the story it is in: the last checkpoint named so far ("checkpoint: X"), or ""
    std::vector<RecordRef> records;
    // The backend its section is about ("### On epoll: readiness", lesson
    // 13): "io_uring", "epoll", or "" for any.
    std::string backend;
};

// The stops of a lesson.md, in order: its sentences from "What to look for"
// on (the whole document if it has no such heading) up to "Try this",
// fenced code left out; each with the backend its "###" section names.
std::vector<Stop> parseTour(const std::string& markdown);

// What the record snippets of a lesson.md (code spans and fenced lines that
// begin with a record kind's name) say that the record table contradicts:
// "lesson.md:41: schedule has no field 'head' (its fields: fiber, count,
// target, how)". Empty: every snippet spells its records right.
std::vector<std::string> snippetFindings(const std::string& markdown, const std::string& file);

// Whether `e` is a record `ref` names.
bool matches(const RecordRef& ref, const trace::Event& e) noexcept;

// The records in trace.events[first, last) that `stop` names, at most
// `limit` (indices into trace.events).
std::vector<std::uint32_t> recordsOf(const Stop& stop, const trace::Trace& trace, std::size_t first, std::size_t last,
                                     std::size_t limit);

} // namespace fiberscope::viewer::tour
