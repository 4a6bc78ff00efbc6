// The narrated tour: the lesson's text walked sentence by sentence
// (lessons/tour.hpp finds the sentences that name a checkpoint or records).
// Each stop shows its checkpoint's window as a checkpoint link does, lights
// the records the sentence names there (ringed on the timeline), and puts
// the cursor, so the scheduler state and the code view, at the first of
// them. The records lit are looked for in the view first (what the student
// sees), then where the checkpoint's story happens (storySegment): a
// sentence about a record the run does not have says so instead of
// lighting something else. Lit records crowded into a few pixels are
// zoomed to (frameLit).
#include <algorithm>
#include <cmath>
#include <optional>

#include "ui/app.hpp"

namespace fiberscope::viewer {

namespace {

constexpr std::size_t kMostLit = 400;
constexpr double kCrowded = 0.08;     // of the view's width: lit records closer than this are zoomed to
constexpr double kLeastRoom = 2000.0; // ns on each side of records zoomed to

// The first record at or after `t` (a view's edge, in ns, need not be whole).
std::size_t firstAt(const trace::Trace& trace, double t) {
    return analysis::firstEventAt(trace, static_cast<std::int64_t>(std::ceil(t)));
}

// Frames the lit records: when they are more than one and crowd into a few
// pixels of the view (lesson 1's greeters' four submits, 3 us at the edge
// of a 100 us view), or are not in it, the view moves to them, with room
// on both sides; records already spread over the view are left as shown.
void frameLit(App& app, const std::vector<std::uint32_t>& lit) {
    const trace::Trace& trace = *app.trace;
    const double first = static_cast<double>(trace.events[lit.front()].time);
    const double last = static_cast<double>(trace.events[lit.back()].time);
    const bool in_view = first >= app.view.start && last <= app.view.end;
    if (lit.size() < 2 || last - first <= 0) {
        if (!in_view) revealTime(app, trace.events[lit.front()].time);
        return;
    }
    const double room = std::max((last - first) * 0.6, kLeastRoom);
    // (Zoomed only to at most half the view: a view already that tight shows them apart.)
    if (in_view && (last - first >= kCrowded * app.view.span() || last - first + 2 * room > app.view.span() / 2)) return;
    revealRange(app, TimeRange{first, last}, TimeRange{first - room, last + room}, 0.3);
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
    // (Each stop from its checkpoint's window: the stop before may have
    // zoomed in on what it lit.)
    if (!stop.checkpoint.empty()) revealCheckpoint(app, stop.checkpoint);
    // What it names: in view where its checkpoint's story happens (after
    // the mark, or up to it for a story told "Until" it: lesson 6's
    // staircase of wake-ups before `all awake`; not the next story's
    // records at the view's edge), else anywhere in that story, else
    // anywhere.
    const std::optional<TimeRange> story = stop.checkpoint.empty() ? std::nullopt : storySegment(app, stop.checkpoint);
    const double from = story ? std::max(app.view.start, story->t0) : app.view.start;
    const double to = story ? std::min(app.view.end, story->t1) : app.view.end;
    if (from <= to) tour.lit = tour::recordsOf(stop, trace, firstAt(trace, from), firstAt(trace, to + 1), kMostLit);
    else tour.lit.clear();
    if (tour.lit.empty())
        tour.lit = story ? tour::recordsOf(stop, trace, firstAt(trace, story->t0), firstAt(trace, story->t1 + 1), kMostLit)
                         : tour::recordsOf(stop, trace, 0, trace.events.size(), kMostLit);
    if (!tour.lit.empty()) frameLit(app, tour.lit);
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
