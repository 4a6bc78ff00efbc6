// Playback paces by decisions and pauses at checkpoints; Compare's time axis
// spans the longer of the two runs; the viewer warns when a trace had more
// workers than CPUs. (The App's logic, without a window.)
#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include "../support/decoded_trace.hpp"
#include "lessons/catalog.hpp"
#include "ui/app.hpp"

using namespace fiberscope::viewer;
namespace trace = fiberscope::trace;

namespace {

bool isStep(const App& app, std::uint32_t event) { return trace::recordKind(app.trace->events[event].kind).step; }

bool isCheckpoint(const App& app, std::uint32_t event) {
    const trace::Event& e = app.trace->events[event];
    return e.kind == trace::EventKind::Mark && app.trace->string(e.arg[0]).rfind(kCheckpointPrefix, 0) == 0;
}

} // namespace

TEST_CASE("playback takes decisions at its rate and pauses at each checkpoint", "[playback]") {
    App app;
    app.headless = true;
    REQUIRE(loadTrace(app, FIBERSCOPE_SAMPLE_TRACE));
    app.playback_rate = 4;
    startPlayback(app);
    REQUIRE(app.playing);
    // The first decision at once, then one per quarter second at 4 a second.
    advancePlayback(app, 0.0);
    REQUIRE(app.step_event != kNoEvent);
    const std::uint32_t first = app.step_event;
    REQUIRE(isStep(app, first));
    for (std::uint32_t i = 0; i < first; ++i) REQUIRE_FALSE(isStep(app, i)); // no decision skipped before it
    advancePlayback(app, 0.1); // 0.4 of a decision: none yet
    REQUIRE(app.step_event == first);
    advancePlayback(app, 0.15); // 1.0: the next one
    REQUIRE(app.step_event > first);
    for (std::uint32_t i = first + 1; i < app.step_event; ++i) REQUIRE_FALSE(isStep(app, i));
    REQUIRE(app.cursor == app.trace->events[app.step_event].time);
    // Played on, it stops at the first checkpoint (the sample has two).
    int frames = 0;
    while (app.playing && frames++ < 100000) advancePlayback(app, 1.0);
    REQUIRE_FALSE(app.playing);
    REQUIRE(isCheckpoint(app, app.step_event));
    const std::uint32_t checkpoint = app.step_event;
    // Play again: on to the next checkpoint, or the end.
    startPlayback(app);
    frames = 0;
    while (app.playing && frames++ < 100000) advancePlayback(app, 1.0);
    REQUIRE(app.step_event > checkpoint);
    REQUIRE((isCheckpoint(app, app.step_event) || !stepDecision(app, +1)));
    // Stepping back from there returns decisions in reverse.
    const std::uint32_t here = app.step_event;
    REQUIRE(stepDecision(app, -1));
    REQUIRE(app.step_event < here);
    REQUIRE(isStep(app, app.step_event));
}

TEST_CASE("Compare's time axis spans the longer run", "[playback][compare]") {
    App app;
    app.headless = true;
    REQUIRE(loadTrace(app, FIBERSCOPE_SAMPLE_TRACE));
    const double own_end = static_cast<double>(app.timeline->end_time);
    REQUIRE(shownSpan(app).t1 == own_end);
    using test::ev;
    auto longer = std::make_unique<trace::Trace>(test::makeTrace(
        1, {ev(0, 0, trace::EventKind::ThreadStart), ev(10, 0, trace::EventKind::Switch, 0, 1),
            ev(static_cast<std::int64_t>(own_end) * 3, 0, trace::EventKind::Switch, 1, 0)}));
    app.compare_timeline = std::make_unique<Timeline>(buildTimeline(*longer));
    app.compare_trace = std::move(longer);
    REQUIRE(shownSpan(app).t1 == static_cast<double>(app.compare_timeline->end_time));
    REQUIRE(shownSpan(app).t1 >= 3 * own_end);
    app.fit_requested = true;
    app.open_lesson_view = false; // (the sample is lesson 1's: it would open on its first checkpoint)
    applyViewRequests(app);
    REQUIRE(app.view.end >= 3 * own_end); // Fit shows all of the longer run
}

TEST_CASE("a trace with more workers than CPUs is flagged", "[playback][warnings]") {
    using test::ev;
    trace::Trace t = test::makeTrace(2, {ev(0, 0, trace::EventKind::Switch, 0, 1), ev(0, 1, trace::EventKind::Switch, 0, 2),
                                         ev(100, 0, trace::EventKind::Switch, 1, 0), ev(100, 1, trace::EventKind::Switch, 2, 0)});
    t.header.cpu_count = 1;
    const Timeline tl = buildTimeline(t);
    const auto warnings = traceWarnings(t, tl);
    REQUIRE(warnings.size() == 1);
    REQUIRE(warnings[0].find("2 worker threads ran on 1 CPUs") != std::string::npos);
    t.header.cpu_count = 2;
    REQUIRE(traceWarnings(t, buildTimeline(t)).empty());
}
