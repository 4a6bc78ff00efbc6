// A lesson's predict-then-check questions and its exercise (lessons/NN-*/checks.md),
// and the small query language their answers are written in.
//
// The answers are never written down as numbers: each is a query over the
// trace the student just recorded, so it is true on any machine, any thread
// count the lesson allows, either backend. The language names record kinds,
// fields and enumerated values only through the one record table
// (fiberscope/trace_records.hpp), so a renamed field breaks checks.md's
// parse (a test parses every lesson's) rather than silently matching nothing.
//
//   query    := "count" KIND filters range | "worker-of" EVENTREF | "fiber-of" EVENTREF
//   EVENTREF := ("first" | "last") KIND filters range | "mark" "LABEL" | "checkpoint" "TEXT"
//   filters  := { "of fiber" N | "to fiber" N | "on worker" N | "where" FIELD=VALUE { FIELD=VALUE } }
//   range    := [ "after" EVENTREF ] [ "before" EVENTREF ]
//   expect   := query OP number            OP: == != >= <= > <
//
// `of fiber N`: any fiber field of the record is N; `to fiber N`: its `to`
// field (switch, mutex-handoff); `on worker N`: recorded by worker N's
// thread; `where FIELD=VALUE`: the kind's field by its table name, VALUE a
// number or (for an enumerated field) a value's name (`where opcode=11
// result=-62`: every pair must match). `fiber-of` a record
// with a `to` (switch, mutex-handoff) is its `to`, of any other record its
// first fiber field; `worker-of` is the
// worker whose thread recorded it. `checkpoint "TEXT"` is the mark
// "checkpoint: TEXT".
//
// The parser and evaluator depend only on the decoded trace (no GL), so the
// tests link them directly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fiberscope/trace_reader.hpp"

namespace fiberscope::viewer::checks {

struct EventRef;

struct Filter {
    enum class What { OfFiber, ToFiber, OnWorker, Where } what = What::OfFiber;
    int field = -1; // Where and ToFiber: the field's index in the kind's table row
    std::uint64_t value = 0;
};

// The records a count or a first/last looks at.
struct Selection {
    trace::EventKind kind = trace::EventKind::Mark;
    std::vector<Filter> filters;
    std::shared_ptr<EventRef> after, before; // null: from the start / to the end
};

struct EventRef {
    enum class How { First, Last, Mark } how = How::First;
    Selection selection; // First, Last
    std::string label;   // Mark (a checkpoint's full label)
    std::string text;    // as written, for messages ("first steal")
};

// What an answer is: a count, a worker index or a fiber number.
enum class AnswerKind { Count, Worker, Fiber };

struct Query {
    AnswerKind kind = AnswerKind::Count;
    Selection selection; // Count
    EventRef ref;        // Worker, Fiber
    std::string text;
};

struct Expect {
    Query query;
    enum class Op { Eq, Ne, Ge, Le, Gt, Lt } op = Op::Eq;
    std::int64_t number = 0;
    std::string text;
};

struct Question {
    int line = 0;
    std::string text; // "How many fibers does main create before the first steal?"
    Query answer;
    EventRef show;
    std::string why;
};

struct Exercise {
    int line = 0;
    std::string text; // the change to try, with the command to run (Markdown)
    Expect expect;
    std::string says; // what the trace then shows and why
};

// What the lesson's phenomenon needs of a run (`requires:`), and why
// (`because:`): both workers running before the story starts, the tree
// spread over the threads. A run on a loaded machine may miss one; then
// `fiberscope lesson N` says so and runs the lesson again (catalog.hpp).
// A precondition may hold for one scheduler policy only (`requires: under
// seed: ...`): the seed's hand-offs need the woken thread to arrive during
// the pairs, the scaling policy's run_next does not.
struct Precondition {
    enum class Policy : std::uint8_t { Any, Seed, Scaling };
    int line = 0;
    Policy policy = Policy::Any;
    Expect expect;
    std::string because; // "worker 1 runs before the pairs begin"
};

// The arrows a checkpoint's story is about (`focus: steal at checkpoint
// "tree begins"`): while its window is shown, the timeline draws the other
// kinds dimmed (not hidden), so that, say, wake-ups to busy workers do not
// bury lesson 4's steals. Bit k: analysis::FlowKind k.
struct Focus {
    int line = 0;
    std::string checkpoint; // full label
    std::uint32_t flow_kinds = 0;
};

struct LessonChecks {
    std::vector<Focus> focus;
    // The checkpoint the lesson opens on (`opens: checkpoint "NAME"`), its
    // full label, when not its first: the one whose story is the lesson's
    // phenomenon (lesson 12 opens on its clients, not on listenOn).
    std::string opens;
    // `opens: checkpoint "NAME" first N links`: the opening view shows only
    // the first N cause -> effect links of that window (0: all of it). A
    // story that repeats (lesson 8's 100 hand-offs, lesson 15's 200 pairs)
    // opens on its first few rounds, readable, not all of them in a smear.
    std::size_t opens_links = 0;
    // `first N warm links`: less a cold start (a round followed by a pause
    // many times the rounds' usual spacing: lesson 15's first pair, its
    // woken worker not yet running), where the rounds are all alike; not
    // where the first round is the story's own (lesson 8's main unlocking).
    bool opens_warm = false;
    std::vector<Precondition> preconditions;
    std::vector<Question> questions;
    bool has_exercise = false;
    Exercise exercise;
    // The thread counts the questions are written for (`threads: 1 2`;
    // absent: the lesson's default only, an empty list).
    std::vector<int> threads;
};

// Parses checks.md's text. Errors name the file, the line and the token:
// "checks.md:7: unknown record kind 'stael'".
bool parseChecks(const std::string& text, const std::string& file, LessonChecks& out, std::string& error);

// Parses one query, event reference or expectation alone (`file:line` prefixes errors).
bool parseQuery(const std::string& text, const std::string& where, Query& out, std::string& error);
bool parseEventRef(const std::string& text, const std::string& where, EventRef& out, std::string& error);
bool parseExpect(const std::string& text, const std::string& where, Expect& out, std::string& error);

// The index in trace.events of the record `ref` names; false (and why) if
// the trace has none.
bool resolve(const EventRef& ref, const trace::Trace& trace, std::size_t& index, std::string& error);

// A query's value on `trace`: a count, a worker index or a fiber number.
bool evaluate(const Query& query, const trace::Trace& trace, std::int64_t& value, std::string& error);

// The first of `preconditions` that `trace` does not meet (of those for the
// policy it ran: trace::ranScalingPolicy), as one line
// ("worker 1 runs before the pairs begin: count thread-start ... is 0, not
// == 1"), or "" if the run meets them all.
std::string unmetPrecondition(const std::vector<Precondition>& preconditions, const trace::Trace& trace);

// Whether `expect` holds on `trace`, and the value its query found.
bool holds(const Expect& expect, const trace::Trace& trace, bool& result, std::int64_t& value, std::string& error);

// "3", "worker 1", "fiber 5".
std::string describeAnswer(AnswerKind kind, std::int64_t value);

// A student's answer `given` to `question`, checked on `trace`: what the
// lesson panel says ("Right." / "Not quite: the trace says worker 1."), and
// the event to show (its `show:`), if the trace has it.
struct Verdict {
    bool right = false;
    std::int64_t value = 0;    // the trace's answer (when it has one)
    bool has_event = false;
    std::size_t event = 0;     // index in trace.events of the moment that shows it
    std::string text;
};
Verdict grade(const Question& question, const trace::Trace& trace, std::int64_t given);

} // namespace fiberscope::viewer::checks
