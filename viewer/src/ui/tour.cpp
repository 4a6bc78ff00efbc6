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
constexpr std::size_t kManyLit = 6;   // more lit than this, spread over the view: one example is shown up close
constexpr std::size_t kMostExample = 8;
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
    if (lit.size() < 2) {
        if (!in_view) revealTime(app, trace.events[lit.front()].time);
        return;
    }
    // Several at one instant (lesson 14's batch: five condition-wakes of
    // one unlock) are one pixel at any zoom: shown with what they lead to
    // around them, unless the view is that close already.
    if (last - first <= 0) {
        if (!in_view || app.view.span() > 4 * kLeastRoom)
            revealRange(app, TimeRange{first, last}, TimeRange{first - kLeastRoom, last + kLeastRoom}, 0.3);
        return;
    }
    const double room = std::max((last - first) * 0.6, kLeastRoom);
    // (Zoomed only to at most half the view: a view already that tight shows them apart.)
    if (in_view && (last - first >= kCrowded * app.view.span() || last - first + 2 * room > app.view.span() / 2)) return;
    revealRange(app, TimeRange{first, last}, TimeRange{first - room, last + room}, 0.3);
}

// The first instance of what `stop` names among `lit` (by time): from the
// first lit record on, until each record the sentence names has appeared
// once (lesson 2's switch and the schedule after it; lesson 4's steal), at
// most kMostExample records and within a tenth of the view.
std::vector<std::uint32_t> exampleOf(const tour::Stop& stop, const trace::Trace& trace, const std::vector<std::uint32_t>& lit,
                                     double within) {
    std::vector<std::uint32_t> example;
    std::vector<bool> seen(stop.records.size(), false);
    const double start = static_cast<double>(trace.events[lit.front()].time);
    for (std::uint32_t i : lit) {
        if (example.size() == kMostExample || static_cast<double>(trace.events[i].time) - start > within) break;
        bool adds = example.empty();
        for (std::size_t r = 0; r < stop.records.size(); ++r)
            if (!seen[r] && tour::matches(stop.records[r], trace.events[i])) seen[r] = adds = true;
        if (adds) example.push_back(i);
        if (std::all_of(seen.begin(), seen.end(), [](bool b) { return b; })) break;
    }
    return example;
}

// Frames `example` up close: its records, the arrows that start or end at
// them (to at most a few times its own width away: a wake-up read
// milliseconds later is drawn to the view's edge), and the records around
// it on either side.
void frameExample(App& app, const std::vector<std::uint32_t>& example) {
    const trace::Trace& trace = *app.trace;
    double t0 = static_cast<double>(trace.events[example.front()].time);
    double t1 = static_cast<double>(trace.events[example.back()].time);
    const double reach = std::max(4 * (t1 - t0), 500.0);
    std::vector<std::uint32_t> flows;
    analysis::flowsInRange(*app.timeline, static_cast<std::int64_t>(t0), static_cast<std::int64_t>(t1), flows, ~0u, 10000);
    double lo = t0, hi = t1;
    for (std::uint32_t k : flows) {
        const analysis::Flow f = analysis::flowAt(*app.timeline, k);
        const bool ours = std::find(example.begin(), example.end(), f.from.event) != example.end() ||
                          std::find(example.begin(), example.end(), f.to.event) != example.end();
        if (!ours) continue;
        lo = std::min(lo, std::max(static_cast<double>(f.from.time), t0 - reach));
        hi = std::max(hi, std::min(static_cast<double>(f.to.time), t1 + reach));
    }
    const TimeRange around = contextAround(
        trace.events.size(), [&](std::size_t i) { return trace.events[i].time; }, (t0 + t1) / 2, 2, 200.0);
    revealRange(app, TimeRange{t0, t1},
                TimeRange{std::max(std::min(lo, around.t0), t0 - reach), std::min(std::max(hi, around.t1), t1 + reach)}, 1.0);
}

} // namespace

bool tourStep(App& app, int direction) {
    if (!app.trace || !app.timeline || app.lesson_index < 0 ||
        app.lesson_index >= static_cast<int>(app.lessons.size()))
        return false;
    LessonTourState& tour = app.panels.tour;
    if (tour.lesson != app.lesson_index || tour.trace != app.trace->serial) {
        tour = LessonTourState();
        tour.lesson = app.lesson_index;
        tour.trace = app.trace->serial;
        tour.stops = tour::parseTour(app.lessons[static_cast<std::size_t>(app.lesson_index)].markdown);
        // A section about the other backend is not about this trace (lesson 13).
        std::erase_if(tour.stops, [&](const tour::Stop& s) { return !s.backend.empty() && s.backend != app.trace->header.backend; });
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
    // Many, spread over the view: one example up close, where the order
    // the sentence tells can be seen (lesson 2's switch, then schedule, 50
    // ns apart; lesson 4's steal and the switch after it); Backspace goes
    // back to all of them.
    tour.example.clear();
    if (tour.lit.size() > kManyLit) {
        const double first = static_cast<double>(trace.events[tour.lit.front()].time);
        const double last = static_cast<double>(trace.events[tour.lit.back()].time);
        const bool in_view = first >= app.view.start && last <= app.view.end;
        if (in_view && last - first >= kCrowded * app.view.span())
            tour.example = exampleOf(stop, trace, tour.lit, app.view.span() / 10);
    }
    if (!tour.example.empty()) frameExample(app, tour.example);
    else if (!tour.lit.empty()) frameLit(app, tour.lit);
    std::string text = "[" + std::to_string(next + 1) + "/" + std::to_string(tour.stops.size()) + "] " + stop.sentence;
    if (!stop.records.empty()) {
        if (tour.lit.empty()) text += "  (this run has none of these records here)";
        else if (!tour.example.empty())
            text += "  (" + std::to_string(tour.lit.size()) + (tour.lit.size() == kMostLit ? "+" : "") +
                    " lit, ringed; the first shown up close: Backspace shows them all)";
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
