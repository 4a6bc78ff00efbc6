// The lessons' predict-then-check language (viewer/src/lessons/checks.hpp)
// on hand-built traces: counts with filters and ranges, first/last, marks
// and checkpoints, worker-of and fiber-of, expectations, and errors that
// name the line and the token.
#include <catch2/catch.hpp>

#include "../support/decoded_trace.hpp"
#include "fiberscope/analysis/timeline.hpp"
#include "lessons/checks.hpp"

using namespace fiberscope::viewer::checks;
using fiberscope::trace::EventKind;
using test::ev;

namespace {

// Worker 0 creates fibers 2..4, schedules them (4 on worker 1 by an idle
// hand-off), wakes worker 1, which steals; a checkpoint in between.
fiberscope::trace::Trace sample() {
    return test::makeTrace(2,
                           {
                               ev(10, 0, EventKind::FiberCreate, 2, 1),
                               ev(11, 0, EventKind::Schedule, 2, 1, 0, 2), // own-queue
                               ev(20, 0, EventKind::FiberCreate, 3, 1),
                               ev(21, 0, EventKind::Schedule, 3, 1, 0, 2),
                               ev(25, 0, EventKind::Mark, 1),
                               ev(30, 0, EventKind::FiberCreate, 4, 1),
                               ev(31, 0, EventKind::Schedule, 4, 1, 1, 0), // idle-handoff to 1
                               ev(32, 0, EventKind::WakeupSent, 1),
                               ev(40, 1, EventKind::WakeupReceived, 0),
                               ev(41, 1, EventKind::Switch, 0, 4, 0, 9), // idle -> 4
                               ev(50, 1, EventKind::Steal, 3, 0),
                               ev(51, 1, EventKind::Switch, 4, 3, 0, 7), // finish: 4 -> 3
                               ev(60, 0, EventKind::Switch, 1, 2, 0, 2), // await: 1 -> 2
                           },
                           {"checkpoint: spawned"});
}

std::int64_t value(const std::string& query, const fiberscope::trace::Trace& t) {
    Query q;
    std::string error;
    INFO(query);
    REQUIRE(parseQuery(query, "q", q, error));
    std::int64_t v = -1;
    INFO(error);
    REQUIRE(evaluate(q, t, v, error));
    return v;
}

std::string parseError(const std::string& query) {
    Query q;
    std::string error;
    CHECK_FALSE(parseQuery(query, "checks.md:7", q, error));
    return error;
}

} // namespace

TEST_CASE("checks: counts with filters and ranges", "[checks]") {
    const auto t = sample();
    CHECK(value("count fiber-create", t) == 3);
    CHECK(value("count fiber-create before first steal", t) == 3);
    CHECK(value("count fiber-create after checkpoint \"spawned\"", t) == 1);
    CHECK(value("count fiber-create before mark \"checkpoint: spawned\"", t) == 2);
    CHECK(value("count schedule where how=own-queue", t) == 2);
    CHECK(value("count schedule where how=idle-handoff where target=1", t) == 1);
    // Several pairs after one `where` must all match, like repeated `where`s.
    CHECK(value("count schedule where how=idle-handoff target=1", t) == 1);
    CHECK(value("count schedule where how=idle-handoff target=0", t) == 0);
    CHECK(value("count schedule where how=own-queue fiber=3", t) == 1);
    CHECK(value("count schedule where how=own-queue fiber=3 before first steal", t) == 1);
    CHECK(value("count schedule where how=new-worker", t) == 0);
    CHECK(value("count switch on worker 1", t) == 2);
    CHECK(value("count switch where reason=finish", t) == 1);
    CHECK(value("count switch of fiber 4", t) == 2);
    CHECK(value("count switch to fiber 4", t) == 1);
    CHECK(value("count wakeup-sent after first fiber-create of fiber 3 before first steal", t) == 1);
    // A range's end inside another range's end: the nested reference takes no range of its own.
    CHECK(value("count schedule after first fiber-create before first schedule where how=idle-handoff", t) == 2);
}

TEST_CASE("checks: worker-of and fiber-of an event", "[checks]") {
    const auto t = sample();
    CHECK(value("worker-of first steal", t) == 1);
    CHECK(value("worker-of first schedule", t) == 0);
    CHECK(value("fiber-of first switch on worker 1", t) == 4); // a switch's fiber is its `to`
    CHECK(value("fiber-of last switch", t) == 2);
    CHECK(value("fiber-of first steal", t) == 3);
    CHECK(value("fiber-of first fiber-create after checkpoint \"spawned\"", t) == 4);
    CHECK(value("worker-of first switch where reason=finish", t) == 1);
    // A mutex hand-off's fiber is the one it hands the mutex to.
    const auto handoff = test::makeTrace(1, {ev(5, 0, EventKind::MutexHandoff, 1, 5, 0x99)});
    CHECK(value("fiber-of first mutex-handoff", handoff) == 5);
    CHECK(value("count mutex-handoff of fiber 1", handoff) == 1);
    CHECK(value("count mutex-handoff to fiber 1", handoff) == 0);
    CHECK(describeAnswer(AnswerKind::Worker, 1) == "worker 1");
    CHECK(describeAnswer(AnswerKind::Fiber, 5) == "fiber 5");
    CHECK(describeAnswer(AnswerKind::Count, 3) == "3");
}

TEST_CASE("checks: references resolve to events, or say what the trace lacks", "[checks]") {
    const auto t = sample();
    std::string error;
    EventRef ref;
    std::size_t index = 0;
    REQUIRE(parseEventRef("first steal", "s", ref, error));
    REQUIRE(resolve(ref, t, index, error));
    CHECK(index == 10);
    REQUIRE(parseEventRef("last fiber-create before first steal", "s", ref, error));
    REQUIRE(resolve(ref, t, index, error));
    CHECK(index == 5);
    REQUIRE(parseEventRef("checkpoint \"spawned\"", "s", ref, error));
    REQUIRE(resolve(ref, t, index, error));
    CHECK(index == 4);
    REQUIRE(parseEventRef("first park", "s", ref, error));
    CHECK_FALSE(resolve(ref, t, index, error));
    CHECK(error == "this trace has no first park");
    REQUIRE(parseEventRef("first steal after checkpoint \"nowhere\"", "s", ref, error));
    CHECK_FALSE(resolve(ref, t, index, error));
    CHECK(error == "this trace has no checkpoint \"nowhere\"");
    Query q;
    REQUIRE(parseQuery("fiber-of first mark", "s", q, error));
    std::int64_t v = 0;
    CHECK_FALSE(evaluate(q, t, v, error));
    CHECK(error == "a mark record names no fiber");
}

TEST_CASE("checks: a student's answer graded on the trace", "[checks]") {
    const auto t = sample();
    LessonChecks checks;
    std::string error;
    REQUIRE(parseChecks("### Q: Which worker steals first?\nanswer: worker-of first steal\nshow: first steal\nwhy: w\n"
                        "### Q: How many parks?\nanswer: count park\nshow: first park\nwhy: w\n"
                        "### Q: Where?\nanswer: fiber-of first park\nshow: first steal\nwhy: w\n",
                        "checks.md", checks, error));
    Verdict v = grade(checks.questions[0], t, 1);
    CHECK(v.right);
    CHECK(v.text == "Right.");
    CHECK(v.has_event);
    CHECK(v.event == 10);
    v = grade(checks.questions[0], t, 0);
    CHECK_FALSE(v.right);
    CHECK(v.text == "Not quite: the trace says worker 1.");
    CHECK(v.event == 10);
    v = grade(checks.questions[1], t, 0); // right, but nothing to show
    CHECK(v.right);
    CHECK_FALSE(v.has_event);
    CHECK(v.text == "Right. (this trace has no first park to show.)");
    v = grade(checks.questions[2], t, 0);
    CHECK_FALSE(v.right);
    CHECK(v.text == "This trace cannot answer it: this trace has no first park.");
}

TEST_CASE("checks: expectations", "[checks]") {
    const auto t = sample();
    struct Row {
        const char* text;
        bool result;
    };
    for (const Row& row : {Row{"count steal == 1", true}, Row{"count steal == 0", false}, Row{"count steal != 0", true},
                           Row{"count fiber-create >= 3", true}, Row{"count fiber-create > 3", false},
                           Row{"count fiber-create <= 2", false}, Row{"count fiber-create < 4", true},
                           Row{"worker-of first steal==1", true}}) {
        Expect x;
        std::string error;
        INFO(row.text);
        REQUIRE(parseExpect(row.text, "e", x, error));
        bool result = !row.result;
        std::int64_t found = -1;
        REQUIRE(holds(x, t, result, found, error));
        CHECK(result == row.result);
    }
}

TEST_CASE("checks: parse errors name the line and the token", "[checks]") {
    CHECK(parseError("count stael") == "checks.md:7: unknown record kind 'stael'");
    CHECK(parseError("count") == "checks.md:7: expected a record kind, found the end of the line");
    CHECK(parseError("tally steal") == "checks.md:7: expected 'count', 'worker-of' or 'fiber-of', found 'tally'");
    CHECK(parseError("count schedule where how=idle") ==
          "checks.md:7: 'idle' is not a value of schedule's how (one of: idle-handoff, new-worker, own-queue, run-next)");
    CHECK(parseError("count steal where thief=1") ==
          "checks.md:7: a steal record has no field 'thief' (its fields: fiber, victim)");
    CHECK(parseError("count steal to fiber 3") == "checks.md:7: a steal record has no 'to' field; use 'of fiber'");
    CHECK(parseError("count steal on worker x") == "checks.md:7: expected a number, found 'x'");
    CHECK(parseError("count steal before") ==
          "checks.md:7: expected 'first', 'last', 'mark' or 'checkpoint', found the end of the line");
    CHECK(parseError("count steal before mark spawned") == "checks.md:7: expected a quoted label after 'mark', found 'spawned'");
    CHECK(parseError("count steal 3") == "checks.md:7: unexpected '3'");
    CHECK(parseError("count mark where label=3") ==
          "checks.md:7: field 'label' is a string; only numbers and enumerated values can be matched");
    Expect x;
    std::string error;
    CHECK_FALSE(parseExpect("count steal = 0", "checks.md:9", x, error));
    CHECK(error == "checks.md:9: expected a comparison (== != >= <= > <), found '='");
    CHECK_FALSE(parseExpect("count steal ==", "checks.md:9", x, error));
    CHECK(error == "checks.md:9: expected a number to compare with, found the end of the line");
}

TEST_CASE("checks: checks.md sections", "[checks]") {
    const std::string text = "# Lesson 4 checks\n"
                             "threads: 1 2\n"
                             "\n"
                             "### Q: Which worker steals first?\n"
                             "answer: worker-of first steal\n"
                             "show: first steal\n"
                             "why: the thread that ran dry steals.\n"
                             "\n"
                             "## Exercise\n"
                             "Change `kDepth` in main.cpp,\n"
                             "rebuild.\n"
                             "\n"
                             "Then run it.\n"
                             "expect: count steal == 0\n"
                             "says: nothing to steal.\n";
    LessonChecks checks;
    std::string error;
    REQUIRE(parseChecks(text, "checks.md", checks, error));
    REQUIRE(checks.questions.size() == 1);
    CHECK(checks.questions[0].line == 4);
    CHECK(checks.questions[0].text == "Which worker steals first?");
    CHECK(checks.questions[0].answer.kind == AnswerKind::Worker);
    CHECK(checks.questions[0].show.text == "first steal");
    CHECK(checks.questions[0].why == "the thread that ran dry steals.");
    CHECK(checks.threads == std::vector<int>{1, 2});
    REQUIRE(checks.has_exercise);
    CHECK(checks.exercise.text == "Change `kDepth` in main.cpp, rebuild.\n\nThen run it.");
    CHECK(checks.exercise.expect.text == "count steal == 0");
    CHECK(checks.exercise.says == "nothing to steal.");

    struct Bad {
        const char* text;
        const char* error;
    };
    for (const Bad& bad : {
             Bad{"### Q: a?\nanswer: count stael\n", "checks.md:2: unknown record kind 'stael'"},
             Bad{"### Q: a?\nanswer: count steal\nwhy: w\n", "checks.md:1: the question has no 'show:'"},
             Bad{"### Q: a?\nanswer: count steal\nshow: first steal\nwhy: w\nhmm\n",
                 "checks.md:5: expected 'answer:', 'show:' or 'why:', found 'hmm'"},
             Bad{"answer: count steal\n", "checks.md:1: 'answer:' outside a question or the exercise"},
             Bad{"## Exercise\nexpect: count steal == 0\nsays: s\n",
                 "checks.md:1: the exercise has no text (the change to make)"},
             Bad{"## Exercise\nDo it.\nsays: s\n", "checks.md:1: the exercise has no 'expect:'"},
             Bad{"## Exercise\nDo it.\nexpect: count steal == 0\nsays: s\n### Q: a?\n",
                 "checks.md:5: questions come before the exercise"},
             Bad{"# nothing\n", "checks.md: no questions and no exercise"},
             Bad{"threads: 0\n", "checks.md:1: not a thread count '0'"},
         }) {
        INFO(bad.text);
        CHECK_FALSE(parseChecks(bad.text, "checks.md", checks, error));
        CHECK(error == bad.error);
    }
}

TEST_CASE("checks: preconditions (requires/because) parse, and the first unmet one is said in one line", "[checks]") {
    const std::string text = "# checks\n"
                             "opens: checkpoint \"spawned\"\n"
                             "focus: steal wakeup at checkpoint \"spawned\"\n"
                             "requires: count wakeup-sent >= 1\n"
                             "because: somebody is woken\n"
                             "requires: count steal where victim=0 == 1 \n"
                             "because: worker 1 steals from worker 0 once\n"
                             "### Q: a?\nanswer: count steal\nshow: first steal\nwhy: w\n";
    LessonChecks checks;
    std::string error;
    INFO(error);
    REQUIRE(parseChecks(text, "checks.md", checks, error));
    CHECK(checks.opens == "checkpoint: spawned");
    CHECK(checks.opens_links == 0);
    REQUIRE(checks.focus.size() == 1);
    CHECK(checks.focus[0].checkpoint == "checkpoint: spawned");
    CHECK(checks.focus[0].flow_kinds == ((1u << static_cast<unsigned>(fiberscope::analysis::FlowKind::Steal)) |
                                         (1u << static_cast<unsigned>(fiberscope::analysis::FlowKind::Wakeup))));
    REQUIRE(checks.preconditions.size() == 2);
    CHECK(checks.preconditions[1].line == 6);
    CHECK(checks.preconditions[1].because == "worker 1 steals from worker 0 once");
    const auto t = sample();
    CHECK(unmetPrecondition(checks.preconditions, t) == "");
    REQUIRE(parseChecks("requires: count steal >= 2\nbecause: two steals\n### Q: a?\nanswer: count steal\nshow: first "
                        "steal\nwhy: w\n",
                        "checks.md", checks, error));
    CHECK(unmetPrecondition(checks.preconditions, t) ==
          "two steals: not so in this run (count steal is 1, wanted >= 2)");
    // A precondition for one policy holds by itself on the other's run (the
    // sample ran the seed's policy).
    REQUIRE_FALSE(fiberscope::trace::ranScalingPolicy(t));
    REQUIRE(parseChecks("requires: under scaling: count steal >= 2\nbecause: two steals\nrequires: under seed:   count "
                        "steal >= 1\nbecause: one\n### Q: a?\nanswer: count steal\nshow: first steal\nwhy: w\n",
                        "checks.md", checks, error));
    REQUIRE(checks.preconditions.size() == 2);
    CHECK(checks.preconditions[0].policy == Precondition::Policy::Scaling);
    CHECK(checks.preconditions[1].policy == Precondition::Policy::Seed);
    CHECK(unmetPrecondition(checks.preconditions, t) == "");
    REQUIRE(parseChecks("requires: under seed: count steal >= 2\nbecause: two steals\n### Q: a?\nanswer: count "
                        "steal\nshow: first steal\nwhy: w\n",
                        "checks.md", checks, error));
    CHECK(unmetPrecondition(checks.preconditions, t) ==
          "two steals: not so in this run (count steal is 1, wanted >= 2)");
    // A precondition about a checkpoint the run lacks is unmet too, and says why.
    REQUIRE(parseChecks("requires: count steal after checkpoint \"later\" >= 0\nbecause: b\n### Q: a?\nanswer: count "
                        "steal\nshow: first steal\nwhy: w\n",
                        "checks.md", checks, error));
    CHECK(unmetPrecondition(checks.preconditions, t).rfind("b: not so in this run (", 0) == 0);

    // A repeating story opens on its first rounds.
    REQUIRE(parseChecks("opens: checkpoint \"main unlocks\" first 40 links\n### Q: a?\nanswer: count steal\nshow: first steal\nwhy: w\n",
                        "checks.md", checks, error));
    CHECK(checks.opens == "checkpoint: main unlocks");
    CHECK(checks.opens_links == 40);
    CHECK_FALSE(checks.opens_warm);
    checks = {};
    REQUIRE(parseChecks("opens: checkpoint \"pairs\" first 24 warm links\n### Q: a?\nanswer: count steal\nshow: first steal\nwhy: w\n",
                        "checks.md", checks, error));
    CHECK(checks.opens == "checkpoint: pairs");
    CHECK(checks.opens_links == 24);
    CHECK(checks.opens_warm);

    struct Bad {
        const char* text;
        const char* error;
    };
    for (const Bad& bad : {
             Bad{"opens: checkpoint \"x\" first links\n", "checks.md:1: expected 'opens: checkpoint \"NAME\" first N links' or '... first N warm links' (N from 1 to 100000)"},
             Bad{"opens: checkpoint \"x\" first 0 links\n", "checks.md:1: expected 'opens: checkpoint \"NAME\" first N links' or '... first N warm links' (N from 1 to 100000)"},
             Bad{"opens: checkpoint \"x\" first 4 arrows\n", "checks.md:1: expected 'opens: checkpoint \"NAME\" first N links' or '... first N warm links' (N from 1 to 100000)"},
             Bad{"requires: count steal >= 1\n### Q: a?\n", "checks.md:1: the 'requires:' has no 'because:'"},
             Bad{"requires: count steal >= 1\nrequires: count steal >= 1\n",
                 "checks.md:2: the 'requires:' before this one has no 'because:'"},
             Bad{"because: b\n", "checks.md:1: 'because:' belongs right after a 'requires:'"},
             Bad{"requires: under fifo: count steal >= 1\n",
                 "checks.md:1: 'requires: under' names a policy, seed or scaling: requires: under seed: count ..."},
             Bad{"opens: first steal\n", "checks.md:1: 'opens:' names a checkpoint: opens: checkpoint \"NAME\""},
             Bad{"focus: steals at checkpoint \"x\"\n",
                 "checks.md:1: 'steals' is not an arrow kind (one of: wakeup, steal, spawn, completion, await, cancel, canceled, "
                 "mutex-handoff, condition-wake)"},
             Bad{"focus: steal checkpoint \"x\"\n", "checks.md:1: 'checkpoint' is not an arrow kind (one of: wakeup, steal, spawn, "
                                                  "completion, await, cancel, canceled, mutex-handoff, condition-wake)"},
             Bad{"focus: at checkpoint \"x\"\n", "checks.md:1: expected 'focus: KIND... at checkpoint \"NAME\"'"},
             Bad{"focus: steal at mark \"x\"\n", "checks.md:1: expected 'focus: KIND... at checkpoint \"NAME\"'"},
             Bad{"opens: mark \"x\"\n", "checks.md:1: 'opens:' names a checkpoint: opens: checkpoint \"NAME\""},
             Bad{"requires: count steal\n", "checks.md:1: expected a comparison (== != >= <= > <), found the end of the line"},
             Bad{"### Q: a?\nrequires: count steal >= 1\n", "checks.md:2: expected 'answer:', 'show:' or 'why:', found 'requires: count steal >= 1'"},
         }) {
        INFO(bad.text);
        CHECK_FALSE(parseChecks(bad.text, "checks.md", checks, error));
        CHECK(error == bad.error);
    }
}
