// The validator (tracer/analysis/validate.hpp): each rule holds on a trace
// that keeps it and fails on the same trace with one record delayed,
// dropped or falsified; and on recorded lesson traces, a random record that
// made a fiber ready, dropped, is always caught.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <random>
#include <string>
#include <vector>

#include "decoded_trace.hpp"
#include "fiberscope/analysis/timeline.hpp"
#include "fiberscope/analysis/validate.hpp"
#include "fiberscope/trace_reader.hpp"
#include "fiberscope/trace_records.hpp"
#include "fiberscope/trace_vocabulary.hpp"

using fiberscope::analysis::Rule;
using fiberscope::analysis::ValidationReport;
using fiberscope::analysis::validateTrace;
using fiberscope::trace::EventKind;
using fiberscope::trace::ScheduleHow;
using fiberscope::trace::SwitchReason;
using fiberscope::trace::Trace;
using test::ev;
namespace trace = fiberscope::trace;

namespace {

constexpr std::uint8_t sw(SwitchReason r) { return static_cast<std::uint8_t>(r); }
constexpr std::uint8_t how(ScheduleHow h) { return static_cast<std::uint8_t>(h); }
constexpr std::uint8_t kRead = 22;

Trace v7(std::vector<trace::Event> events, unsigned threads = 2) {
    Trace t = test::makeTrace(threads, std::move(events));
    t.header.version = 7;
    return t;
}

std::string describe(const Trace& trace, const ValidationReport& r) {
    std::string out;
    for (const auto& v : r.violations) out += fiberscope::analysis::describeViolation(trace, v) + "\n";
    return out;
}

// The trace keeps every rule; `mutated` breaks exactly `rule` (at least).
void holdsThenBreaks(const Trace& good, const Trace& mutated, Rule rule) {
    const ValidationReport ok = validateTrace(good);
    INFO("the good trace:\n" << describe(good, ok));
    CHECK(ok.ok());
    const ValidationReport bad = validateTrace(mutated);
    INFO("rule " << fiberscope::analysis::ruleInfo(rule).name << "; the mutated trace:\n" << describe(mutated, bad));
    CHECK(bad.by_rule[static_cast<std::size_t>(rule)] >= 1);
}

// A spawn handed to worker 1, run there, awaited by main on worker 0; a
// read on worker 1, its completion, the finish that wakes main.
std::vector<trace::Event> handOffStory() {
    return {
        ev(0, 0, EventKind::ThreadStart, 0),
        ev(1, 1, EventKind::ThreadStart, 1),
        ev(2, 1, EventKind::Park),
        ev(10, 0, EventKind::FiberCreate, 2, 1),
        ev(11, 0, EventKind::Schedule, 2, 1, 1, how(ScheduleHow::IdleHandoff)),
        ev(12, 0, EventKind::WakeupSent, 1),
        ev(15, 0, EventKind::Await, 1, 2),
        ev(20, 0, EventKind::Switch, 1, 0, 0, sw(SwitchReason::Await)),
        ev(21, 0, EventKind::Park),
        ev(3000, 1, EventKind::WakeupReceived, 0),
        ev(3001, 1, EventKind::Unpark, 1),
        ev(3002, 1, EventKind::Switch, 0, 2, 0, sw(SwitchReason::Idle)),
        ev(3010, 1, EventKind::Submit, 2, 3, 0, kRead),
        ev(3011, 1, EventKind::Switch, 2, 0, 0, sw(SwitchReason::IoWait)),
        ev(3012, 1, EventKind::Park),
        ev(6000, 1, EventKind::Complete, 2, 8, 0, kRead),
        ev(6001, 1, EventKind::Unpark, 1),
        ev(6002, 1, EventKind::Switch, 0, 2, 0, sw(SwitchReason::Idle)),
        ev(6010, 1, EventKind::Switch, 2, 0, 0, sw(SwitchReason::Finish)),
        ev(6010, 1, EventKind::FiberFinish, 2),
        ev(6011, 1, EventKind::Schedule, 1, 1, 0, how(ScheduleHow::IdleHandoff)),
        ev(6012, 1, EventKind::WakeupSent, 0),
        ev(9000, 0, EventKind::WakeupReceived, 1),
        ev(9001, 0, EventKind::Unpark, 1),
        ev(9002, 0, EventKind::Switch, 0, 1, 0, sw(SwitchReason::Idle)),
    };
}

// The story with record k replaced (or removed, when `with` is empty).
std::vector<trace::Event> edited(std::vector<trace::Event> events, std::size_t k, std::vector<trace::Event> with) {
    events.erase(events.begin() + static_cast<std::ptrdiff_t>(k));
    events.insert(events.begin() + static_cast<std::ptrdiff_t>(k), with.begin(), with.end());
    return events;
}

std::size_t find(const std::vector<trace::Event>& events, EventKind kind, std::size_t nth = 0) {
    for (std::size_t k = 0; k < events.size(); ++k)
        if (events[k].kind == kind && nth-- == 0) return k;
    FAIL("no such record");
    return 0;
}

} // namespace

TEST_CASE("the validator: each rule holds on a consistent story and breaks on a falsified one", "[validate]") {
    const std::vector<trace::Event> story = handOffStory();
    const Trace good = v7(story);

    SECTION("switch-from: a switch leaving a fiber its thread does not run") {
        trace::Event e = story[find(story, EventKind::Switch, 2)];
        e.arg[0] = 9;
        holdsThenBreaks(good, v7(edited(story, find(story, EventKind::Switch, 2), {e})), Rule::SwitchFrom);
    }
    SECTION("run-not-ready: the hand-off's schedule record dropped") {
        holdsThenBreaks(good, v7(edited(story, find(story, EventKind::Schedule), {})), Rule::RunNotReady);
    }
    SECTION("run-not-ready: the hand-off's schedule record delayed past the run it enabled (version 6's new-worker lie)") {
        trace::Event late = story[find(story, EventKind::Schedule)];
        late.time = 5000; // past the run at 3002 by more than the clocks' slack
        auto events = edited(story, find(story, EventKind::Schedule), {});
        events.push_back(late);
        holdsThenBreaks(good, v7(events), Rule::RunNotReady);
    }
    SECTION("run-queued-elsewhere: worker 0 runs the fiber it handed to worker 1") {
        auto events = story;
        events.push_back(ev(25, 0, EventKind::Unpark, 0));
        events.push_back(ev(26, 0, EventKind::Switch, 0, 2, 0, sw(SwitchReason::Idle)));
        events.push_back(ev(27, 0, EventKind::Switch, 2, 0, 0, sw(SwitchReason::Yield)));
        holdsThenBreaks(good, v7(events), Rule::RunQueuedElsewhere);
    }
    SECTION("run-twice: a fiber switched to on worker 0 while it runs on worker 1") {
        auto events = story;
        events.push_back(ev(3005, 0, EventKind::Unpark, 0));
        events.push_back(ev(3006, 0, EventKind::Switch, 0, 2, 0, sw(SwitchReason::Idle)));
        holdsThenBreaks(good, v7(events), Rule::RunTwice);
    }
    SECTION("after-finish: a finished fiber scheduled again") {
        auto events = story;
        events.push_back(ev(6020, 1, EventKind::Schedule, 2, 1, 1, how(ScheduleHow::OwnQueue)));
        holdsThenBreaks(good, v7(events), Rule::AfterFinish);
    }
    SECTION("created-twice and finished-twice") {
        auto events = story;
        events.push_back(ev(9010, 0, EventKind::FiberCreate, 2, 1));
        holdsThenBreaks(good, v7(events), Rule::CreatedTwice);
        events = story;
        events.push_back(ev(9010, 0, EventKind::FiberFinish, 2));
        holdsThenBreaks(good, v7(events), Rule::FinishedTwice);
    }
    SECTION("schedule-not-ready: a schedule of the awaiter before the fiber it awaits finished (version 6's lie)") {
        trace::Event early = story[find(story, EventKind::Schedule, 1)];
        early.time = 3003;
        early.thread = 1;
        auto events = edited(story, find(story, EventKind::Schedule, 1), {early});
        holdsThenBreaks(good, v7(events), Rule::ScheduleNotReady);
    }
    SECTION("wakeup-unmatched: a wake-up received that nobody sent, and one bounced that was never sent") {
        holdsThenBreaks(good, v7(edited(story, find(story, EventKind::WakeupSent), {})), Rule::WakeupUnmatched);
        auto events = story;
        events.push_back(ev(9010, 0, EventKind::WakeupBounced, 1, static_cast<std::uint64_t>(-77)));
        holdsThenBreaks(good, v7(events), Rule::WakeupUnmatched);
    }
    SECTION("wakeup-bounced answers a send: the receipt that would have matched is then unmatched") {
        auto events = story;
        events.push_back(ev(13, 0, EventKind::WakeupBounced, 1, static_cast<std::uint64_t>(-77)));
        holdsThenBreaks(good, v7(events), Rule::WakeupUnmatched);
    }
    SECTION("park-pairs: a park while parked, an unpark without a park, a park while running a fiber") {
        auto events = story;
        events.push_back(ev(22, 0, EventKind::Park));
        holdsThenBreaks(good, v7(events), Rule::ParkPairs);
        holdsThenBreaks(good, v7(edited(story, find(story, EventKind::Park, 1), {})), Rule::ParkPairs);
        events = story;
        events.push_back(ev(3003, 1, EventKind::Park));
        holdsThenBreaks(good, v7(events), Rule::ParkPairs);
    }
    SECTION("complete-no-submit: a completion with no operation in flight") {
        holdsThenBreaks(good, v7(edited(story, find(story, EventKind::Submit), {})), Rule::CompleteNoSubmit);
    }
    SECTION("search-pairs and zone-pairs") {
        auto events = story;
        events.push_back(ev(9010, 0, EventKind::Search, 0, 0, 0, static_cast<std::uint8_t>(trace::SearchOp::GaveUp)));
        holdsThenBreaks(good, v7(events), Rule::SearchPairs);
        events = story;
        events.push_back(ev(9010, 0, EventKind::ZoneEnd));
        holdsThenBreaks(good, v7(events), Rule::ZonePairs);
        events = story;
        events.push_back(ev(9010, 0, EventKind::ZoneBegin, 1));
        events.push_back(ev(9011, 0, EventKind::ZoneEnd));
        CHECK(validateTrace(v7(events)).ok());
    }
    SECTION("backdated: the runtime reported a record stamped before its thread's previous one") {
        auto events = story;
        events.push_back(ev(9010, 0, EventKind::Truth, 0, 5000, 0, static_cast<std::uint8_t>(trace::TruthOp::Backdated)));
        holdsThenBreaks(good, v7(events), Rule::Backdated);
    }
    SECTION("truth: the runtime took a fiber the records had queued elsewhere, or found its queues empty") {
        auto events = story;
        events.push_back(ev(3001, 1, EventKind::Truth, 2, 0, 0, static_cast<std::uint8_t>(trace::TruthOp::Queued)));
        CHECK(validateTrace(v7(events)).ok()); // handed to worker 1: true
        events = story;
        events.push_back(ev(25, 0, EventKind::Truth, 2, 0, 0, static_cast<std::uint8_t>(trace::TruthOp::Queued)));
        holdsThenBreaks(good, v7(events), Rule::Truth);
        events = story;
        events.push_back(ev(2500, 1, EventKind::Truth, 0, 0, 0, static_cast<std::uint8_t>(trace::TruthOp::Empty)));
        holdsThenBreaks(good, v7(events), Rule::Truth);
    }
    SECTION("records of two threads within the clocks' slack are tried in either order") {
        // Worker 1 runs the fiber 300 ns before worker 0's hand-off record says
        // it was handed over: within the slack, the two have no known order.
        auto events = story;
        events[find(events, EventKind::Schedule)].time = 3002 + 300;
        events[find(events, EventKind::WakeupSent)].time = 3002 + 301;
        CHECK(validateTrace(v7(events)).ok());
        // 3 us is beyond it.
        events = story;
        events[find(events, EventKind::Schedule)].time = 3002 + 3000;
        events[find(events, EventKind::WakeupSent)].time = 3002 + 3001;
        holdsThenBreaks(good, v7(events), Rule::RunNotReady);
    }
}

TEST_CASE("the validator: mutexes, conditions, steals and the overflow list", "[validate]") {
    constexpr std::uint64_t kMutex = 0x1000, kCond = 0x2000;
    // Fibers 2 and 3 on worker 0: 2 holds the mutex (uncontended, unrecorded),
    // 3 finds it locked and waits; 2's unlock hands it over; 3 then waits on
    // a condition, whose unlock hands the mutex back to... nobody; 2 signals.
    const std::vector<trace::Event> story = {
        ev(0, 0, EventKind::ThreadStart, 0),
        ev(1, 1, EventKind::ThreadStart, 1),
        ev(2, 1, EventKind::Park),
        ev(10, 0, EventKind::FiberCreate, 2, 1),
        ev(11, 0, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::OwnQueue)),
        ev(12, 0, EventKind::FiberCreate, 3, 1),
        ev(13, 0, EventKind::Schedule, 3, 1, 0, how(ScheduleHow::OwnQueue)),
        ev(20, 0, EventKind::Switch, 1, 3, 0, sw(SwitchReason::Yield)),
        ev(21, 0, EventKind::Schedule, 1, 1, 0, how(ScheduleHow::OwnQueue)),
        ev(22, 0, EventKind::MutexContended, 3, kMutex),
        ev(23, 0, EventKind::Switch, 3, 2, 0, sw(SwitchReason::Mutex)),
        ev(30, 0, EventKind::MutexHandoff, 2, 3, kMutex),
        ev(31, 0, EventKind::Switch, 2, 3, 0, sw(SwitchReason::Handoff)),
        ev(32, 0, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::OwnQueue)),
        ev(40, 0, EventKind::ConditionWait, 3, kCond),
        ev(41, 0, EventKind::Switch, 3, 2, 0, sw(SwitchReason::Condition)),
        ev(50, 0, EventKind::ConditionWake, 3, kCond, 0, static_cast<std::uint8_t>(trace::ConditionWakeHow::Signal)),
        ev(51, 0, EventKind::Schedule, 3, 1, 0, how(ScheduleHow::OwnQueue)),
        ev(60, 0, EventKind::Switch, 2, 0, 0, sw(SwitchReason::Finish)),
        ev(60, 0, EventKind::FiberFinish, 2),
        ev(3000, 1, EventKind::Unpark, 0),
        ev(3001, 1, EventKind::Steal, 3, 0),
        ev(3002, 1, EventKind::Switch, 0, 3, 0, sw(SwitchReason::Idle)),
    };
    const Trace good = v7(story);
    SECTION("wake-not-waiting: a hand-off to a fiber not waiting for that mutex") {
        trace::Event e = story[find(story, EventKind::MutexHandoff)];
        e.arg[2] = 0x3000;
        holdsThenBreaks(good, v7(edited(story, find(story, EventKind::MutexHandoff), {e})), Rule::WakeNotWaiting);
    }
    SECTION("mutex-owner: a hand-off by the fiber that waits for the mutex") {
        trace::Event e = story[find(story, EventKind::MutexHandoff)];
        e.arg[0] = 3;
        e.arg[1] = 2;
        holdsThenBreaks(good, v7(edited(story, find(story, EventKind::MutexHandoff), {e})), Rule::MutexOwner);
    }
    SECTION("schedule-not-ready: Condition::wait's unlock handing the mutex to a waiter without a record (version 6's lie)") {
        // Fiber 2 holds the mutex (taken uncontended: unrecorded); 3 finds it
        // locked and waits; 2 waits on a condition, whose unlock hands the
        // mutex to 3, which is queued.
        const std::vector<trace::Event> recorded = {
            ev(0, 0, EventKind::ThreadStart, 0),
            ev(10, 0, EventKind::FiberCreate, 2, 1),
            ev(11, 0, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::OwnQueue)),
            ev(12, 0, EventKind::FiberCreate, 3, 1),
            ev(13, 0, EventKind::Schedule, 3, 1, 0, how(ScheduleHow::OwnQueue)),
            ev(20, 0, EventKind::Switch, 1, 2, 0, sw(SwitchReason::Yield)),
            ev(21, 0, EventKind::Schedule, 1, 1, 0, how(ScheduleHow::OwnQueue)),
            ev(30, 0, EventKind::Switch, 2, 3, 0, sw(SwitchReason::Yield)),
            ev(31, 0, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::OwnQueue)),
            ev(40, 0, EventKind::MutexContended, 3, kMutex),
            ev(41, 0, EventKind::Switch, 3, 2, 0, sw(SwitchReason::Mutex)),
            ev(50, 0, EventKind::ConditionWait, 2, kCond),
            ev(51, 0, EventKind::Switch, 2, 1, 0, sw(SwitchReason::Condition)),
            ev(52, 0, EventKind::MutexHandoff, 2, 3, kMutex),
            ev(53, 0, EventKind::Schedule, 3, 1, 0, how(ScheduleHow::OwnQueue)),
            ev(60, 0, EventKind::Switch, 1, 3, 0, sw(SwitchReason::Yield)),
        };
        auto unrecorded = recorded;
        unrecorded.erase(unrecorded.begin() + static_cast<std::ptrdiff_t>(find(unrecorded, EventKind::MutexHandoff)));
        holdsThenBreaks(v7(recorded, 1), v7(unrecorded, 1), Rule::ScheduleNotReady);
        // mutex-taken: the mutex came free before 3 queued itself.
        auto taken = recorded;
        taken[find(taken, EventKind::MutexHandoff)] = ev(52, 0, EventKind::MutexTaken, 3, kMutex);
        CHECK(validateTrace(v7(taken, 1)).ok());
    }
    SECTION("wake-not-waiting: a condition waking a fiber that does not wait on it") {
        trace::Event e = story[find(story, EventKind::ConditionWake)];
        e.arg[1] = 0x3000;
        holdsThenBreaks(good, v7(edited(story, find(story, EventKind::ConditionWake), {e})), Rule::WakeNotWaiting);
    }
    SECTION("steal-source: a steal naming a fiber the victim's word did not hold, or the wrong kind of steal") {
        trace::Event e = story[find(story, EventKind::Steal)];
        e.arg[1] = 1; // from itself
        holdsThenBreaks(good, v7(edited(story, find(story, EventKind::Steal), {e})), Rule::StealSource);
        e = story[find(story, EventKind::Steal)];
        e.kind = EventKind::StealHalf; // a word's fiber, said to come from a ring
        holdsThenBreaks(good, v7(edited(story, find(story, EventKind::Steal), {e})), Rule::StealSource);
        e = story[find(story, EventKind::Steal)];
        e.kind = EventKind::StealOne; // ... or from run_next
        e.small = static_cast<std::uint8_t>(trace::StealOneFrom::RunNext);
        holdsThenBreaks(good, v7(edited(story, find(story, EventKind::Steal), {e})), Rule::StealSource);
    }
}

// A select on fibers 2 and 3: 2's finish is recorded first (its claim on
// main comes late and loses), 3's finisher claims main first and switches
// straight to it on the other thread. Only that switch says who won.
TEST_CASE("the validator: a select's later finisher on another thread may win the claim and run it", "[validate]") {
    const std::vector<trace::Event> race = {
        ev(0, 0, EventKind::ThreadStart, 0),
        ev(1, 1, EventKind::ThreadStart, 1),
        ev(2, 1, EventKind::Park),
        ev(10, 0, EventKind::FiberCreate, 2, 1),
        ev(11, 0, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::OwnQueue)),
        ev(12, 0, EventKind::FiberCreate, 3, 1),
        ev(13, 0, EventKind::Schedule, 3, 1, 1, how(ScheduleHow::IdleHandoff)),
        ev(14, 0, EventKind::WakeupSent, 1),
        ev(15, 0, EventKind::Await, 1, 2),
        ev(16, 0, EventKind::Await, 1, 3),
        ev(17, 0, EventKind::Switch, 1, 2, 0, sw(SwitchReason::Select)),
        ev(20, 1, EventKind::WakeupReceived, 0),
        ev(21, 1, EventKind::Unpark, 1),
        ev(22, 1, EventKind::Switch, 0, 3, 0, sw(SwitchReason::Idle)),
        ev(30, 0, EventKind::Switch, 2, 0, 0, sw(SwitchReason::Finish)),
        ev(30, 0, EventKind::FiberFinish, 2),
        ev(40, 1, EventKind::Switch, 3, 1, 0, sw(SwitchReason::Finish)),
        ev(40, 1, EventKind::FiberFinish, 3),
        ev(50, 0, EventKind::Park),
    };
    // Main awaits 2 alone: then 3's finish has no claim on it, and running it
    // on worker 1 contradicts the wake-up 2's finish gave it on worker 0.
    std::vector<trace::Event> single = race;
    single.erase(single.begin() + 9); // the await of 3
    single[9].small = sw(SwitchReason::Await);
    holdsThenBreaks(v7(race), v7(single), Rule::RunNotReady);
}

// An await of a fiber whose fiber-finish came first. The finisher records
// fiber-finish before the exchange that publishes "finished": an awaiter
// that registers between the two is scheduled by the finisher's finish
// task, on the finisher's thread, not by its own handler. Here worker 1's
// schedule of main and worker 0's pop of it share a 16 ns tick (qemu's
// 62.5 MHz counter), and the reader puts worker 0's record first. Seen
// once under qemu-user (aarch64) in the ping-pong jitter test, where the
// validator had main woken by its own handler at once and called the
// finish task's schedule schedule-not-ready.
TEST_CASE("the validator: an await after the target's fiber-finish ends by a schedule on either thread, whatever their order at one instant",
          "[validate]") {
    const std::vector<trace::Event> late = {
        ev(0, 0, EventKind::ThreadStart, 0),
        ev(1, 1, EventKind::ThreadStart, 1),
        ev(2, 1, EventKind::Park),
        ev(10, 0, EventKind::FiberCreate, 2, 1),
        ev(11, 0, EventKind::Schedule, 2, 1, 1, how(ScheduleHow::IdleHandoff)),
        ev(12, 0, EventKind::WakeupSent, 1),
        ev(20, 1, EventKind::WakeupReceived, 0),
        ev(21, 1, EventKind::Unpark, 1),
        ev(22, 1, EventKind::Switch, 0, 2, 0, sw(SwitchReason::Idle)),
        ev(100, 0, EventKind::Await, 1, 2),
        ev(100, 1, EventKind::Switch, 2, 0, 0, sw(SwitchReason::Finish)),
        ev(100, 1, EventKind::FiberFinish, 2),
        ev(110, 0, EventKind::Switch, 1, 0, 0, sw(SwitchReason::Await)),
        ev(111, 0, EventKind::Park),
        ev(150, 0, EventKind::Unpark, 0),
        ev(150, 0, EventKind::Switch, 0, 1, 0, sw(SwitchReason::Idle)), // pops what worker 1 handed it...
        ev(150, 1, EventKind::Schedule, 1, 1, 0, how(ScheduleHow::IdleHandoff)), // ...at the same tick
        ev(150, 1, EventKind::WakeupSent, 0),
    };
    const ValidationReport ok = validateTrace(v7(late));
    INFO(describe(v7(late), ok));
    CHECK(ok.ok());
    // The common case: main's own handler finds the fiber finished and schedules it on its thread.
    std::vector<trace::Event> own = late;
    own.erase(own.begin() + 14, own.end());
    own.push_back(ev(112, 0, EventKind::Schedule, 1, 1, 0, how(ScheduleHow::OwnQueue)));
    own.push_back(ev(113, 0, EventKind::Switch, 0, 1, 0, sw(SwitchReason::Idle)));
    own.erase(own.begin() + 13); // (no park)
    const ValidationReport own_ok = validateTrace(v7(own));
    INFO(describe(v7(own), own_ok));
    CHECK(own_ok.ok());
    // Not any thread's: a third thread that neither awaited nor finished cannot end the wait.
    std::vector<trace::Event> third = late;
    third.insert(third.begin() + 2, ev(1, 2, EventKind::ThreadStart, 2));
    for (auto& e : third)
        if (e.kind == EventKind::Schedule && e.arg[0] == 1) e.thread = 2;
    for (auto& e : third)
        if (e.kind == EventKind::WakeupSent && e.time == 150) e.thread = 2;
    const ValidationReport bad = validateTrace(v7(third, 3));
    INFO(describe(v7(third, 3), bad));
    CHECK(bad.by_rule[static_cast<std::size_t>(Rule::ScheduleNotReady)] >= 1);
    // The finisher's thread only while its finish task may still run: once
    // it has switched again, a late schedule of main there contradicts.
    std::vector<trace::Event> stale = late;
    stale.insert(stale.begin() + 12, ev(105, 1, EventKind::Switch, 0, 0, 0, sw(SwitchReason::Idle))); // (its idle loop goes on)
    stale.insert(stale.begin() + 13, ev(106, 1, EventKind::Park));
    for (auto& e : stale)
        if (e.time == 150 && e.thread == 1 && e.kind == EventKind::Schedule) e.time = 149;
    stale.erase(std::remove_if(stale.begin(), stale.end(), [](const trace::Event& e) { return e.time == 150 && e.thread == 1; }),
                stale.end());
    std::stable_sort(stale.begin(), stale.end(), [](const trace::Event& a, const trace::Event& b) { return a.time < b.time; });
    const ValidationReport late_bad = validateTrace(v7(stale));
    INFO(describe(v7(stale), late_bad));
    CHECK(late_bad.by_rule[static_cast<std::size_t>(Rule::ScheduleNotReady)] >= 1);
    // And the recording it was seen in verifies, the model against the runtime's truth records too.
    Trace kept;
    trace::ReadError error;
    REQUIRE(trace::readTrace(std::string(FIBERSCOPE_TEST_DATA) + "/validate-await-after-finish-aarch64.fstrace", kept, error));
    ValidationReport report = validateTrace(kept);
    fiberscope::analysis::checkModelAgainstTruth(kept, fiberscope::analysis::buildTimeline(kept), report);
    INFO(describe(kept, report));
    CHECK(report.ok());
    CHECK(report.truth_records > 0);
}

TEST_CASE("the validator: an rwlock is held by one writer or by readers, never both", "[validate]") {
    constexpr std::uint64_t kLock = 0x4000;
    const auto op = [](trace::RwLockOp o) { return static_cast<std::uint8_t>(o); };
    using trace::RwLockOp;
    // Fiber 2 writes; 3 waits to read and is admitted by 2's unlock; 4 reads
    // beside it; once both are out, 2 writes again. (A read-unlock with no
    // hold recorded is one from before the recording: believed.)
    const std::vector<trace::Event> story = {
        ev(0, 0, EventKind::ThreadStart, 0),
        ev(1, 1, EventKind::ThreadStart, 1),
        ev(5, 1, EventKind::RwLockOp, kLock, 9, 0, op(RwLockOp::ReadUnlock)),
        ev(10, 0, EventKind::RwLockOp, kLock, 2, 0, op(RwLockOp::WriteLocked)),
        ev(12, 1, EventKind::RwLockOp, kLock, 3, 0, op(RwLockOp::ReadBlocked)),
        ev(20, 0, EventKind::RwLockOp, kLock, 2, 0, op(RwLockOp::WriteUnlock)),
        ev(30, 1, EventKind::RwLockOp, kLock, 3, 0, op(RwLockOp::ReadLocked)),
        ev(31, 0, EventKind::RwLockOp, kLock, 4, 0, op(RwLockOp::ReadLocked)),
        ev(40, 1, EventKind::RwLockOp, kLock, 3, 0, op(RwLockOp::ReadUnlock)),
        ev(41, 0, EventKind::RwLockOp, kLock, 4, 0, op(RwLockOp::ReadUnlock)),
        ev(50, 0, EventKind::RwLockOp, kLock, 2, 0, op(RwLockOp::WriteLocked)),
        ev(60, 0, EventKind::RwLockOp, kLock, 2, 0, op(RwLockOp::WriteUnlock)),
    };
    const Trace good = v7(story);
    SECTION("a reader admitted before the writer's unlock was recorded") {
        holdsThenBreaks(good, v7(edited(story, 5, {})), Rule::RwLockHolds);
    }
    SECTION("a writer taking it while a reader still holds it") {
        holdsThenBreaks(good, v7(edited(story, 9, {})), Rule::RwLockHolds);
    }
    SECTION("two writers at once") {
        std::vector<trace::Event> two = story;
        two.insert(two.begin() + 4, ev(11, 1, EventKind::RwLockOp, kLock, 5, 0, op(RwLockOp::WriteLocked)));
        holdsThenBreaks(good, v7(two), Rule::RwLockHolds);
    }
}

TEST_CASE("the validator catches any dropped record that made a fiber ready, on recorded lessons", "[validate][recorded]") {
    // Lessons on several threads, recorded as checking recordings; each
    // must verify, and each copy with one record dropped that placed or woke
    // a fiber that later ran elsewhere must not.
    const std::string dir = FIBERSCOPE_LESSON_BIN_DIR;
    struct Case {
        const char* lesson;
        std::vector<std::string> args;
    };
    const std::vector<Case> cases = {{"lesson04-work-stealing", {"--threads", "2"}},
                                     {"lesson03-waking-idle-threads", {}},
                                     {"lesson04-work-stealing", {"--threads", "2", "--scheduler", "scaling"}},
                                     {"lesson12-echo-server", {"--threads", "2", "--scheduler", "scaling"}}};
    std::mt19937_64 rng(35);
    std::size_t checked = 0;
    for (const Case& c : cases) {
        INFO(c.lesson);
        const std::string path = "/tmp/fiberscope-validate-" + std::to_string(getpid()) + "-" + c.lesson + ".fstrace";
        std::string command = "FIBERSCOPE_TRACE=" + path + " FIBERSCOPE_TRACE_CHECK=1 " + dir + "/" + c.lesson;
        for (const std::string& a : c.args) command += " " + a;
        command += " >/dev/null 2>&1";
        REQUIRE(std::system(command.c_str()) == 0);
        Trace trace;
        trace::ReadError error;
        REQUIRE(trace::readTrace(path, trace, error));
        unlink(path.c_str());
        const ValidationReport whole = validateTrace(trace);
        INFO(describe(trace, whole));
        REQUIRE(whole.ok());
        REQUIRE(whole.truth_records > 0);
        // Candidates: records that make a fiber ready or place it, whose
        // fiber runs on another thread afterwards (so that its absence is
        // visible: a fiber woken and run on one thread needs no record).
        std::vector<trace::Event> events;
        for (std::size_t i = 0; i < trace.events.size(); ++i) events.push_back(trace.events[i]);
        std::vector<std::size_t> candidates;
        for (std::size_t i = 0; i < events.size(); ++i) {
            const trace::Event& e = events[i];
            const bool places = e.kind == EventKind::Schedule || trace::isSteal(e.kind) || e.kind == EventKind::MutexHandoff ||
                                e.kind == EventKind::ConditionWake;
            if (!places) continue;
            const std::uint64_t fiber = e.kind == EventKind::MutexHandoff ? e.arg[1] : e.arg[0];
            for (std::size_t j = i + 1; j < events.size(); ++j) {
                const trace::Event& r = events[j];
                if (r.kind == EventKind::Switch && r.arg[1] == fiber) {
                    // A steal's fiber was on the victim: without the record it
                    // runs on the thief while queued there. A record that
                    // made it ready on one thread matters where it runs on
                    // another (beyond the clocks' slack).
                    if (trace::isSteal(e.kind) || (r.thread != e.thread && r.time - e.time > 2000)) candidates.push_back(i);
                    break;
                }
                // Placed again before it ran: the drop is covered by that record.
                if ((r.kind == EventKind::Schedule || trace::isSteal(r.kind)) && r.arg[0] == fiber) break;
            }
        }
        // (A run may have none: a lesson whose threads happened not to
        // trade work. The cases together must have some: below.)
        checked += std::min<std::size_t>(candidates.size(), 12);
        std::shuffle(candidates.begin(), candidates.end(), rng);
        for (std::size_t k = 0; k < std::min<std::size_t>(candidates.size(), 12); ++k) {
            const std::size_t drop = candidates[k];
            Trace mutated;
            mutated.header = trace.header;
            mutated.threads = trace.threads;
            mutated.strings = trace.strings;
            std::vector<trace::Event> rest = events;
            rest.erase(rest.begin() + static_cast<std::ptrdiff_t>(drop));
            mutated.events = rest;
            const ValidationReport r = validateTrace(mutated);
            INFO("dropped record " << drop << " (" << trace::recordKind(events[drop].kind).name << " at " << events[drop].time << " ns)");
            CHECK_FALSE(r.ok());
        }
    }
    // Lessons 3 and 4 on the seed policy hand work over and steal in every run.
    CHECK(checked >= 10);
}

TEST_CASE("FORMAT.md's validation rules are the validator's, word for word", "[validate][records]") {
    std::ifstream in(FIBERSCOPE_FORMAT_MD);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    const std::string doc = text.str();
    for (const fiberscope::analysis::RuleInfo& rule : fiberscope::analysis::kRules) {
        INFO(rule.name);
        CHECK(doc.find(std::string("| `") + rule.name + "` | " + rule.sentence + " |") != std::string::npos);
    }
}
