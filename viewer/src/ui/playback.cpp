// Step mode and playback: a student walks the scheduler's decisions one at a
// time (the records the record table marks `step`: schedule, steal, wake-up,
// submit, complete, cancel, hand-offs, marks... not the frequent switches),
// by hand (step < / step >) or played at a chosen number of decisions per
// second. Playing paces by decisions rather than by trace time: a lesson's
// interesting moments are microseconds apart while its waits last
// milliseconds, so constant-speed time either crawls through the story or
// jumps over it. Playback pauses at each checkpoint, where the narrative has
// something to say.
#include <algorithm>

#include "lessons/catalog.hpp"
#include "model/describe.hpp"
#include "model/explain.hpp"
#include "ui/app.hpp"

namespace fiberscope::viewer {

namespace {

bool ofInterest(trace::EventKind kind) { return trace::recordKind(kind).step; }

bool isCheckpoint(const trace::Trace& trace, const trace::Event& e) {
    return e.kind == trace::EventKind::Mark && trace.string(e.arg[0]).rfind(kCheckpointPrefix, 0) == 0;
}

} // namespace

bool stepDecision(App& app, int direction) {
    if (!app.trace || !app.timeline) return false;
    const trace::Trace& trace = *app.trace;
    if (trace.events.empty()) return false;
    std::int64_t index;
    if (app.step_event == kNoEvent || app.step_event >= trace.events.size()) {
        const std::int64_t from = app.cursor >= 0 ? app.cursor : static_cast<std::int64_t>(app.view.start);
        auto it = std::lower_bound(trace.events.begin(), trace.events.end(), from,
                                   [](const trace::Event& e, std::int64_t t) { return e.time < t; });
        index = (it - trace.events.begin()) - (direction > 0 ? 1 : 0);
    } else {
        index = app.step_event;
    }
    for (index += direction; index >= 0 && index < static_cast<std::int64_t>(trace.events.size()); index += direction) {
        if (!ofInterest(trace.events[static_cast<std::size_t>(index)].kind)) continue;
        app.step_event = static_cast<std::uint32_t>(index);
        app.panels.tour.lit.clear(); // a decision, not a sentence, is shown now
        const Explanation ex = explain(*app.timeline, trace, app.step_event);
        app.step_text = ex.text + (ex.function.empty() ? "" : "  [" + ex.function + "]");
        revealTime(app, trace.events[app.step_event].time);
        return true;
    }
    return false;
}

void startPlayback(App& app) {
    if (!app.timeline) return;
    app.playing = true;
    app.playback_credit = 1.0; // the first decision at once
    // From the start when nothing is selected or the last run played to the end.
    if ((app.cursor < 0 && app.step_event == kNoEvent) || app.cursor >= app.timeline->end_time) {
        app.step_event = kNoEvent;
        app.cursor = app.timeline->start_time;
    }
}

void advancePlayback(App& app, double seconds) {
    if (!app.playing || !app.trace || !app.timeline) return;
    app.playback_credit += seconds * static_cast<double>(app.playback_rate);
    // At most a few decisions a frame: a slow frame must not become a jump.
    for (int steps = 0; app.playback_credit >= 1.0 && steps < 8; ++steps) {
        app.playback_credit -= 1.0;
        if (!stepDecision(app, +1)) { // the end
            app.playing = false;
            break;
        }
        if (isCheckpoint(*app.trace, app.trace->events[app.step_event])) {
            app.playing = false; // the narrative has something to say here
            break;
        }
    }
    if (!app.playing) app.playback_credit = 0;
}

} // namespace fiberscope::viewer
