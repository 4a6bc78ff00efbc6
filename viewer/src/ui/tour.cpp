// The narrated tour: the lesson's text walked sentence by sentence
// (lessons/tour.hpp finds the sentences that name a checkpoint or records).
// Each stop shows its checkpoint's window as a checkpoint link does, lights
// the records the sentence names there (ringed on the timeline), and puts
// the cursor, so the scheduler state and the code view, at the first of
// them. The records lit are looked for in the view first (what the student
// sees), then in the checkpoint's stretch of the trace: a sentence about a
// record the run does not have says so instead of lighting something else.
#include <algorithm>

#include "ui/app.hpp"

namespace fiberscope::viewer {

namespace {

constexpr std::size_t kMostLit = 400;

// The first record at or after `t`.
std::size_t firstAt(const trace::Trace& trace, double t) {
    std::size_t lo = 0, hi = trace.events.size();
    while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (static_cast<double>(trace.events[mid].time) < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// [its mark, the next checkpoint's mark) of checkpoint `label`, or the whole trace.
std::pair<std::size_t, std::size_t> stretchOf(const trace::Trace& trace, const std::string& label) {
    std::size_t first = 0;
    bool found = false;
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
        const trace::Event e = trace.events[i];
        if (e.kind != trace::EventKind::Mark) continue;
        const std::string& text = trace.string(e.arg[0]);
        if (text.rfind(kCheckpointPrefix, 0) != 0) continue;
        if (found) return {first, i};
        if (text == label) first = i, found = true;
    }
    return found ? std::make_pair(first, trace.events.size()) : std::make_pair(std::size_t{0}, trace.events.size());
}

} // namespace

bool tourStep(App& app, int direction) {
    if (!app.trace || !app.timeline || app.lesson_index < 0 ||
        app.lesson_index >= static_cast<int>(app.lessons.size()))
        return false;
    LessonTourState& tour = app.panels.tour;
    if (tour.lesson != app.lesson_index) {
        tour = LessonTourState();
        tour.lesson = app.lesson_index;
        tour.stops = tour::parseTour(app.lessons[static_cast<std::size_t>(app.lesson_index)].markdown);
    }
    const int next = tour.index + direction;
    if (next < 0 || next >= static_cast<int>(tour.stops.size())) return false;
    tour.index = next;
    const tour::Stop& stop = tour.stops[static_cast<std::size_t>(next)];
    const trace::Trace& trace = *app.trace;
    if (!stop.checkpoint.empty() && stop.checkpoint != app.active_checkpoint) revealCheckpoint(app, stop.checkpoint);
    // What it names: in view, else in its checkpoint's stretch.
    tour.lit = tour::recordsOf(stop, trace, firstAt(trace, app.view.start), firstAt(trace, app.view.end + 1), kMostLit);
    if (tour.lit.empty()) {
        const auto [first, last] = stretchOf(trace, stop.checkpoint);
        tour.lit = tour::recordsOf(stop, trace, first, last, kMostLit);
        if (!tour.lit.empty()) revealTime(app, trace.events[tour.lit.front()].time);
    }
    std::string text = "[" + std::to_string(next + 1) + "/" + std::to_string(tour.stops.size()) + "] " + stop.sentence;
    if (!stop.records.empty()) {
        if (tour.lit.empty()) text += "  (this run has none of these records here)";
        else
            text += "  (" + std::to_string(tour.lit.size()) + (tour.lit.size() == kMostLit ? "+" : "") + " lit, ringed)";
    }
    app.step_text = text;
    app.step_event = tour.lit.empty() ? kNoEvent : tour.lit.front();
    if (!tour.lit.empty()) app.cursor = trace.events[tour.lit.front()].time;
    app.playing = false;
    return true;
}

} // namespace fiberscope::viewer
