// foundBy (viewer/src/model/found_by.hpp): how a worker found its next
// fiber, read from the records, on every lesson's golden trace.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include <fiberscope/trace_reader.hpp>
#include <fiberscope/trace_records.hpp>

#include "model/found_by.hpp"

using namespace fiberscope;
using namespace fiberscope::viewer;
using trace::EventKind;

namespace {

struct Loaded {
    trace::Trace trace;
    analysis::Timeline timeline;
};

Loaded load(const std::string& name) {
    Loaded l;
    trace::ReadError error;
    const std::string path = std::string(FIBERSCOPE_GOLDEN_TRACES) + "/" + name;
    INFO(path << ": " << error.text());
    REQUIRE(trace::readTrace(path, l.trace, error, {.strict = true}));
    l.timeline = analysis::buildTimeline(l.trace);
    return l;
}

std::size_t markIndex(const trace::Trace& t, const std::string& label) {
    for (std::size_t i = 0; i < t.events.size(); ++i)
        if (t.events[i].kind == EventKind::Mark && t.string(t.events[i].arg[0]) == label) return i;
    FAIL("no mark " << label);
    return 0;
}

std::uint64_t fiberNamed(const trace::Trace& t, const std::string& name) {
    for (const trace::Event& e : t.events)
        if (e.kind == EventKind::FiberName && t.string(e.arg[1]) == name) return e.arg[0];
    FAIL("no fiber named " << name);
    return 0;
}

// foundBy just after switch `s`, on its thread.
FoundBy runOf(const Loaded& l, std::size_t s) {
    const auto found = foundBy(l.timeline, l.trace, l.trace.events[s].thread, l.trace.events[s].time);
    REQUIRE(found);
    return *found;
}

} // namespace

TEST_CASE("how a worker found each fiber it ran: every switch of every golden trace, its evidence naming it",
          "[viewer][found-by]") {
    int golden = 0;
    for (const auto& entry : std::filesystem::directory_iterator(FIBERSCOPE_GOLDEN_TRACES)) {
        if (entry.path().extension() != ".fstrace") continue;
        ++golden;
        const Loaded l = load(entry.path().filename().string());
        const bool scaling = trace::ranScalingPolicy(l.trace);
        int runs = 0;
        for (std::size_t s = 0; s < l.trace.events.size(); ++s) {
            const trace::Event sw = l.trace.events[s];
            if (sw.kind != EventKind::Switch || sw.arg[1] == 0) continue;
            // Only the last switch at its instant on its thread is "the last decision at that time".
            const std::size_t next = analysis::nextOnThread(l.timeline, l.trace, sw.thread, s + 1);
            if (next < l.trace.events.size() && l.trace.events[next].time == sw.time) continue;
            ++runs;
            INFO(entry.path().filename().string() << ", switch at record " << s << " to fiber " << sw.arg[1]);
            const FoundBy f = runOf(l, s);
            CHECK(f.decision == s);
            CHECK(f.fiber == sw.arg[1]);
            switch (f.step) {
            case FindStep::Steal: {
                REQUIRE(f.evidence < l.trace.events.size());
                const trace::Event st = l.trace.events[f.evidence];
                CHECK((st.kind == EventKind::Steal || st.kind == EventKind::StealHalf || st.kind == EventKind::StealOne));
                CHECK(st.arg[0] == sw.arg[1]);
                CHECK(st.thread == sw.thread);
                CHECK(f.evidence < s);
                break;
            }
            case FindStep::RunNext: {
                CHECK(scaling);
                REQUIRE(f.evidence < l.trace.events.size());
                const trace::Event sc = l.trace.events[f.evidence];
                CHECK(sc.kind == EventKind::Schedule);
                CHECK(sc.small == static_cast<std::uint8_t>(trace::ScheduleHow::RunNext));
                CHECK(sc.arg[0] == sw.arg[1]);
                break;
            }
            case FindStep::Park: {
                CHECK(sw.arg[0] == 0); // from the idle loop, woken
                REQUIRE(f.evidence < l.trace.events.size());
                CHECK(l.trace.events[f.evidence].kind == EventKind::Unpark);
                break;
            }
            case FindStep::Direct:
                // Handed over: a finish to its awaiter, a yield to a waiter it gave the lock.
                CHECK(sw.arg[0] != 0);
                break;
            case FindStep::OwnQueue: break;
            case FindStep::Search: FAIL("a run is never 'search'"); break;
            }
        }
        CHECK(runs > 0);
    }
    CHECK(golden >= 16);
}

TEST_CASE("lesson 16: main's await runs run_next, the thief's first fiber is stolen, yielders come from the thread's own queues",
          "[viewer][found-by]") {
    const Loaded l = load("lesson16-scaling-decisions.fstrace");
    const std::size_t burst = markIndex(l.trace, "checkpoint: spawn burst");
    std::size_t await_switch = 0, steal_switch = 0;
    for (std::size_t i = burst; i < l.trace.events.size(); ++i) {
        const trace::Event e = l.trace.events[i];
        if (!await_switch && e.kind == EventKind::Switch && e.small == static_cast<std::uint8_t>(trace::SwitchReason::Await))
            await_switch = i;
        if (!steal_switch && e.kind == EventKind::StealOne)
            for (std::size_t j = i + 1; j < l.trace.events.size(); ++j)
                if (l.trace.events[j].kind == EventKind::Switch && l.trace.events[j].thread == e.thread) {
                    steal_switch = j;
                    break;
                }
    }
    REQUIRE(await_switch);
    const FoundBy awaited = runOf(l, await_switch);
    INFO("main's await switched to fiber " << awaited.fiber);
    CHECK(awaited.step == FindStep::RunNext);
    CHECK(awaited.fiber == fiberNamed(l.trace, "task 5"));
    REQUIRE(steal_switch);
    const FoundBy stolen = runOf(l, steal_switch);
    CHECK(stolen.step == FindStep::Steal);
    CHECK(stolen.fiber == fiberNamed(l.trace, "task 0"));
    // A yielder's second turn comes from its thread's ring: its own queues.
    const std::uint64_t yielder = fiberNamed(l.trace, "yielder 3");
    int turns = 0;
    for (std::size_t i = markIndex(l.trace, "checkpoint: yielders start"); i < l.trace.events.size(); ++i) {
        const trace::Event e = l.trace.events[i];
        if (e.kind != EventKind::Switch || e.arg[1] != yielder || e.small != static_cast<std::uint8_t>(trace::SwitchReason::Yield))
            continue;
        const FoundBy f = runOf(l, i);
        if (f.step == FindStep::OwnQueue) ++turns;
    }
    CHECK(turns >= 3);
    // In the quiet: a search under way, then a park.
    bool searched = false, parked = false;
    for (std::size_t i = markIndex(l.trace, "checkpoint: quiet"); i < markIndex(l.trace, "checkpoint: quiet done"); ++i) {
        const trace::Event e = l.trace.events[i];
        const auto at = foundBy(l.timeline, l.trace, e.thread, e.time);
        if (e.kind == EventKind::Search && e.small == static_cast<std::uint8_t>(trace::SearchOp::Begin)) {
            REQUIRE(at);
            CHECK(at->step == FindStep::Search);
            searched = true;
        }
        if (e.kind == EventKind::Park) {
            REQUIRE(at);
            CHECK(at->step == FindStep::Park);
            CHECK(at->fiber == 0);
            parked = true;
        }
    }
    CHECK(parked);
    (void)searched; // a search in the quiet is usual, not certain (it may end before it)
}

TEST_CASE("the seed's lessons: a finish hands over to its awaiter, a woken thread runs what it was given, a thief what it stole",
          "[viewer][found-by]") {
    // Lesson 2: ping's finish switches straight to main, which awaited it.
    {
        const Loaded l = load("lesson02-context-switch.fstrace");
        int direct = 0, own = 0;
        for (std::size_t i = 0; i < l.trace.events.size(); ++i) {
            const trace::Event e = l.trace.events[i];
            if (e.kind != EventKind::Switch || e.arg[1] == 0) continue;
            const FoundBy f = runOf(l, i);
            if (e.small == static_cast<std::uint8_t>(trace::SwitchReason::Yield)) {
                INFO("a yield's switch at record " << i);
                CHECK(f.step == FindStep::OwnQueue);
                ++own;
            }
            if (e.small == static_cast<std::uint8_t>(trace::SwitchReason::Finish) && e.arg[1] == 1) {
                CHECK(f.step == FindStep::Direct);
                ++direct;
            }
        }
        CHECK(own >= 30);
        CHECK(direct >= 1);
    }
    // Lesson 17: every mutex hand-off switches straight to the new owner.
    {
        const Loaded l = load("lesson17-find-the-problem.fstrace");
        int handoffs = 0;
        for (std::size_t i = 0; i < l.trace.events.size(); ++i) {
            const trace::Event e = l.trace.events[i];
            if (e.kind != EventKind::Switch || e.small != static_cast<std::uint8_t>(trace::SwitchReason::Handoff)) continue;
            INFO("the hand-off switch at record " << i);
            CHECK(runOf(l, i).step == FindStep::Direct);
            ++handoffs;
        }
        CHECK(handoffs >= 40);
    }
    // Lesson 4: every steal is followed by the thief running what it took.
    {
        const Loaded l = load("lesson04-work-stealing.fstrace");
        int steals = 0;
        for (std::size_t i = 0; i < l.trace.events.size(); ++i) {
            if (l.trace.events[i].kind != EventKind::Steal) continue;
            const std::size_t s = analysis::nextOnThread(l.timeline, l.trace, l.trace.events[i].thread, i + 1);
            REQUIRE(s < l.trace.events.size());
            if (l.trace.events[s].kind != EventKind::Switch) continue;
            INFO("steal at record " << i);
            CHECK(runOf(l, s).step == FindStep::Steal);
            ++steals;
        }
        CHECK(steals >= 3);
    }
    // Lesson 5: one thread; after each unpark the idle loop runs a fiber its completions made ready.
    {
        const Loaded l = load("lesson05-io-completions.fstrace");
        int woken = 0;
        for (std::size_t i = 0; i < l.trace.events.size(); ++i) {
            if (l.trace.events[i].kind != EventKind::Unpark) continue;
            const std::size_t s = analysis::nextOfKind(l.timeline, l.trace, EventKind::Switch, i);
            if (s >= l.trace.events.size() || l.trace.events[s].arg[0] != 0 || l.trace.events[s].arg[1] == 0) continue;
            INFO("the switch at record " << s << " after the unpark at " << i);
            CHECK(runOf(l, s).step == FindStep::Park);
            ++woken;
        }
        CHECK(woken >= 3);
    }
}
