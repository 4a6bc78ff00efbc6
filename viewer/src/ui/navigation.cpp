// Moving the view to what the reader asked for: a checkpoint link, a step,
// the toolbar's previous/next of a kind, a row of the event table, the
// verdict banner's contradiction, "zoom to selection", back/forward. Every such command goes through setView, so it
// is recorded in the zoom history; the arithmetic (when to keep the view,
// what window to show) is model/time_view's, tested without a GUI.
//
// One rule for every jump: a target comfortably in view (not in the outer
// 10% at either edge) keeps the view, else the view moves to a window around
// it: the events near it, or for a checkpoint the burst of activity it marks.
// Moving only the cursor would leave it at the edge of a 21 ms view where a
// 3 us story is one pixel wide.
#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <map>
#include <optional>

#include "fiberscope/trace_vocabulary.hpp"
#include "lessons/checks.hpp"
#include "ui/app.hpp"

namespace fiberscope::viewer {

namespace {

double traceStart(const App& app) { return app.timeline ? shownSpan(app).t0 : app.view.start; }
double traceEnd(const App& app) { return app.timeline ? shownSpan(app).t1 : app.view.end; }

std::int64_t eventTime(const trace::Trace& trace, std::size_t i) { return trace.events[i].time; }

// The words before "`checkpoint: X`" in lesson.md, lower case, up to 12
// characters of its line ("**up to ", "right after ").
bool toldWith(const App& app, const std::string& label, std::initializer_list<const char*> words) {
    if (app.lesson_index < 0 || app.lesson_index >= static_cast<int>(app.lessons.size())) return false;
    const std::string& text = app.lessons[static_cast<std::size_t>(app.lesson_index)].markdown;
    const std::string quoted = "`" + label + "`";
    for (std::size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 1)) {
        std::string before;
        for (std::size_t i = at; i > 0 && before.size() < 12; --i) {
            const char c = text[i - 1];
            if (c == '\n') break;
            if (c != '*') before.insert(before.begin(), static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
        }
        for (const char* word : words) {
            const std::size_t n = std::strlen(word);
            if (before.size() >= n && before.compare(before.size() - n, n, word) == 0 &&
                (before.size() == n || before[before.size() - n - 1] == ' ' || before[before.size() - n - 1] == '('))
                return true;
        }
    }
    return false;
}

// True when the lesson tells the story of checkpoint `label` as what leads
// up to it: "Up to `checkpoint: X`", "Until ...", "Before ..." (lesson.md).
bool toldAsLeadingUpTo(const App& app, const std::string& label) {
    return toldWith(app, label, {"up to ", "until ", "before "});
}

// True when the lesson tells it as what comes after it, and never as what
// leads up to it: "After `checkpoint: X`", "From ... to ...", "Between ...".
// Then what happened before the mark (main's start-up, starting workers) is
// not its story.
bool toldAsFollowing(const App& app, const std::string& label) {
    return toldWith(app, label, {"after ", "from ", "between "}) && !toldAsLeadingUpTo(app, label);
}

// "From `checkpoint: A` to `checkpoint: B`": B's label, when the lesson
// tells A's story as running on past the checkpoints between them (lesson
// 2: from the ping-pong's start, past its first yield, to its end); else "".
std::string toldUpToLater(const App& app, const std::string& label) {
    if (app.lesson_index < 0 || app.lesson_index >= static_cast<int>(app.lessons.size())) return "";
    if (!toldWith(app, label, {"from "})) return "";
    const std::string& text = app.lessons[static_cast<std::size_t>(app.lesson_index)].markdown;
    const std::string opening = "`" + label + "` to `";
    const std::size_t at = text.find(opening);
    if (at == std::string::npos) return "";
    const std::size_t start = at + opening.size(), end = text.find('`', start);
    return end == std::string::npos ? "" : text.substr(start, end - start);
}

// The checkpoints' times and labels as the window of checkpoint `index`
// sees them: without those its story runs past (toldUpToLater).
void skipToldPast(const App& app, std::size_t index, std::vector<std::int64_t>& times, std::vector<std::string>& labels) {
    const std::string until = toldUpToLater(app, labels[index]);
    if (until.empty()) return;
    const auto end = std::find(labels.begin() + static_cast<std::ptrdiff_t>(index) + 1, labels.end(), until);
    if (end == labels.end()) return;
    const auto first = static_cast<std::ptrdiff_t>(index) + 1, last = end - labels.begin();
    times.erase(times.begin() + first, times.begin() + last);
    labels.erase(labels.begin() + first, labels.begin() + last);
}

// Cause -> effect links with an end in [lo, far]: every flow (submit ->
// resume, wake-up sent -> received, spawn -> first run, ...), and a wait's
// start -> the hand-off or wake-up that ends it (a lock found taken -> the
// new owner's resume, a condition wait -> its wake). `io`, if given, also
// gets the links that are an operation's submit -> resume whose wait the
// kernel's work set (not a timer's: its length is the program's choice);
// `timers` the timers' (with the fiber that waited).
std::vector<TimeRange> causeEffectLinks(const App& app, std::int64_t lo, std::int64_t far,
                                        std::vector<TimeRange>* io = nullptr,
                                        std::vector<std::pair<TimeRange, std::uint64_t>>* timers = nullptr) {
    std::vector<TimeRange> links;
    if (!app.timeline || !app.trace) return links;
    const trace::Trace& trace = *app.trace;
    std::map<std::uint64_t, std::vector<std::int64_t>> contended, waiting; // fiber -> times, sorted
    const std::size_t from = analysis::firstEventAt(trace, lo);
    std::map<std::uint64_t, std::int64_t> yielded; // fiber -> when it last yielded, until it runs again
    for (std::size_t i = from; i < trace.events.size(); ++i) {
        const trace::Event e = trace.events[i];
        if (e.time > far) break;
        if (e.kind == trace::EventKind::MutexContended) contended[e.arg[0]].push_back(e.time);
        else if (e.kind == trace::EventKind::ConditionWait) waiting[e.arg[0]].push_back(e.time);
        else if (e.kind == trace::EventKind::Switch) {
            // A yield puts the fiber back in a queue; the switch that runs
            // it again is its effect (lesson 2's ping-pong, which no flow draws).
            if (const auto it = yielded.find(e.arg[1]); it != yielded.end()) {
                links.push_back({static_cast<double>(it->second), static_cast<double>(e.time)});
                yielded.erase(it);
            }
            if (e.small == static_cast<std::uint8_t>(trace::SwitchReason::Yield) && e.arg[0] != 0) yielded[e.arg[0]] = e.time;
        }
    }
    const auto waitStart = [](const std::map<std::uint64_t, std::vector<std::int64_t>>& starts, std::uint64_t fiber,
                              std::int64_t before) -> std::optional<std::int64_t> {
        const auto it = starts.find(fiber);
        if (it == starts.end()) return std::nullopt;
        const auto up = std::upper_bound(it->second.begin(), it->second.end(), before);
        if (up == it->second.begin()) return std::nullopt;
        return *(up - 1);
    };
    for (const Flow& f : flowsOf(*app.timeline)) {
        const std::int64_t t0 = std::min(f.from.time, f.to.time), t1 = std::max(f.from.time, f.to.time);
        if (t1 < lo || t0 > far) continue;
        links.push_back({static_cast<double>(f.from.time), static_cast<double>(f.to.time)});
        if ((io || timers) && f.kind == FlowKind::Completion && f.from.event < trace.events.size()) {
            const trace::Event& submit = trace.events[f.from.event];
            const bool timer = trace::opcodeHas(submit.small, trace::kOpNoteTimer); // small: the opcode
            if (submit.kind == trace::EventKind::Submit && timer && timers) timers->push_back({links.back(), f.to.fiber});
            if (submit.kind == trace::EventKind::Submit && !timer && io) io->push_back(links.back());
        }
        std::optional<std::int64_t> start;
        if (f.kind == FlowKind::MutexHandoff) start = waitStart(contended, f.to.fiber, f.from.time);
        else if (f.kind == FlowKind::ConditionWake) start = waitStart(waiting, f.to.fiber, f.from.time);
        if (start) links.push_back({static_cast<double>(*start), static_cast<double>(f.to.time)});
    }
    return links;
}

// The lesson's checks.md `opens:` line: its checkpoint ("" if none, or not
// in this trace), how many of its links the opening view shows (0: all),
// and whether less a cold start (`warm`).
struct Opening {
    std::string checkpoint;
    std::size_t links = 0;
    bool warm = false;
};
Opening openingOf(App& app, const std::vector<std::string>& labels) {
    const checks::LessonChecks& parsed = lessonChecks(app);
    if (parsed.opens.empty() || std::find(labels.begin(), labels.end(), parsed.opens) == labels.end()) return {};
    return {parsed.opens, parsed.opens_links, parsed.opens_warm};
}

} // namespace

TimeRange shownSpan(const App& app) {
    if (!app.timeline) return {app.view.start, app.view.end};
    TimeRange span{static_cast<double>(app.timeline->start_time), static_cast<double>(app.timeline->end_time)};
    if (app.compare_timeline) { // the compared run shares the time axis and may be the longer one
        span.t0 = std::min(span.t0, static_cast<double>(app.compare_timeline->start_time));
        span.t1 = std::max(span.t1, static_cast<double>(app.compare_timeline->end_time));
    }
    return span;
}

void setView(App& app, const TimeView& view) {
    if (view.start == app.view.start && view.end == app.view.end) return;
    if (app.view_placed) app.history.command(app.view);
    app.view = view;
    app.view_placed = true;
}

void revealRange(App& app, TimeRange keep, TimeRange window, double min_fill) {
    setView(app, revealView(app.view, keep, window, min_fill, traceStart(app), traceEnd(app)));
}

void revealTime(App& app, std::int64_t t) {
    app.cursor = t;
    if (!app.trace) return;
    const trace::Trace& trace = *app.trace;
    const TimeRange context = contextAround(
        trace.events.size(), [&](std::size_t i) { return eventTime(trace, i); }, static_cast<double>(t));
    const double at = static_cast<double>(t);
    revealRange(app, TimeRange{at, at}, context, 0.0);
}

std::vector<std::int64_t> checkpointTimes(const trace::Trace& trace, std::vector<std::string>* labels) {
    std::vector<std::int64_t> times;
    const std::size_t prefix = std::strlen(kCheckpointPrefix);
    for (const trace::Event& e : trace.events) {
        if (e.kind != trace::EventKind::Mark) continue;
        const std::string& label = trace.string(e.arg[0]);
        if (label.compare(0, prefix, kCheckpointPrefix) != 0) continue;
        times.push_back(e.time);
        if (labels) labels->push_back(label);
    }
    // Events are in time order; a mark read out of order must not break the search.
    if (!std::is_sorted(times.begin(), times.end())) {
        std::vector<std::size_t> order(times.size());
        for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return times[a] < times[b]; });
        std::vector<std::int64_t> sorted_times;
        std::vector<std::string> sorted_labels;
        for (std::size_t i : order) {
            sorted_times.push_back(times[i]);
            if (labels) sorted_labels.push_back((*labels)[i]);
        }
        times = std::move(sorted_times);
        if (labels) *labels = std::move(sorted_labels);
    }
    return times;
}

std::optional<TimeRange> checkpointRange(const App& app, const std::string& label) {
    if (!app.trace) return std::nullopt;
    std::vector<std::string> labels;
    std::vector<std::int64_t> times = checkpointTimes(*app.trace, &labels);
    // A label that is not a checkpoint's (any mark): its own position only.
    std::size_t index = times.size();
    for (std::size_t i = 0; i < labels.size(); ++i)
        if (labels[i] == label) {
            index = i;
            break;
        }
    if (index == times.size()) return std::nullopt;
    // Told "From `A` to `B`": the story is that stretch, as the lesson says,
    // and the effects just past B of its causes (within the stretch's own
    // width, before the checkpoint after B): lesson 1's spawned greeters'
    // first runs, lesson 15's last pair's wake-up.
    if (const std::string until = toldUpToLater(app, labels[index]); !until.empty())
        for (std::size_t j = index + 1; j < labels.size(); ++j) {
            if (labels[j] != until) continue;
            const double a = static_cast<double>(times[index]), b = static_cast<double>(times[j]);
            const double reach = std::min(b + (b - a), j + 1 < times.size() ? static_cast<double>(times[j + 1]) : traceEnd(app));
            const std::vector<TimeRange> links = causeEffectLinks(app, times[index], static_cast<std::int64_t>(reach));
            double end = b;
            for (const TimeRange& link : links) {
                const double cause = std::min(link.t0, link.t1), effect = std::max(link.t0, link.t1);
                if (cause >= a && cause <= b && effect > end && effect <= reach) end = effect;
            }
            // (Less a pause before B: lesson 2's main, preempted 60 us
            // between the game's end and its mark.)
            return trimToStory(TimeRange{a, end}, links, a);
        }
    const trace::Trace& trace = *app.trace;
    // When a fiber ran on some thread: pauses are measured in the rest.
    // Only between the neighbouring checkpoints, where the window can be
    // (a large trace's millions of intervals need not be copied).
    const std::int64_t lo = index > 0 ? times[index - 1] : INT64_MIN;
    const std::int64_t hi = index + 1 < times.size() ? times[index + 1] : INT64_MAX;
    std::vector<TimeRange> busy;
    if (app.timeline)
        for (const ThreadLane& lane : app.timeline->threads)
            for (const Interval& iv : lane.lane.intervals)
                if (iv.state == State::Running && iv.fiber != 0 && iv.end >= lo && iv.start <= hi)
                    busy.push_back({static_cast<double>(iv.start), static_cast<double>(iv.end)});
    // Cause -> effect links with an end there (up to the checkpoint after
    // the next: a window may reach just past its neighbour).
    const std::int64_t far = index + 2 < times.size() ? times[index + 2] : INT64_MAX;
    std::vector<TimeRange> io;
    std::vector<std::pair<TimeRange, std::uint64_t>> timers; // with the fiber that waited
    const std::vector<TimeRange> links = causeEffectLinks(app, lo, far, &io, &timers);
    // Records the tracer writes on its own clock (the CPU samples) are no
    // activity of the program's: they must not bridge its pauses.
    const auto story = [&](std::size_t i) {
        const trace::EventKind k = trace.events[i].kind;
        return k != trace::EventKind::CpuSample && k != trace::EventKind::StringDef && k != trace::EventKind::LostEvents;
    };
    // The stretch before the next checkpoint is that one's story when the
    // lesson tells it "Up to" it: then the effects of this one's causes
    // there (the waits it starts) are not this window's.
    const bool effects = !(index + 1 < labels.size() && toldAsLeadingUpTo(app, labels[index + 1]));
    // The waits of the fiber that writes checkpoint k's mark: timers it
    // submitted (another fiber's periodic sleep is no wait for it).
    const auto waitsOfMarker = [&](std::size_t k) {
        std::uint64_t marker = 0;
        for (std::size_t i = analysis::firstEventAt(trace, times[k]);
             app.timeline && i < trace.events.size() && trace.events[i].time == times[k]; ++i)
            if (trace.events[i].kind == trace::EventKind::Mark && trace.string(trace.events[i].arg[0]) == labels[k])
                marker = runningFiber(*app.timeline, trace.events[i].thread, times[k]);
        std::vector<TimeRange> own;
        for (const auto& [wait, fiber] : timers)
            if (marker != 0 && fiber == marker) own.push_back(wait);
        return own;
    };
    // Told only as what leads up to it, when its writer slept just before
    // writing it ("Up to `checkpoint: workers parked`", lesson 3: the
    // workers park, then the spawner sleeps 30 ms and marks): the story is
    // what led into that sleep, so the window is the burst around the
    // sleep's start, not around the mark (that is where the next story
    // begins: lesson 3's second burst).
    // (The sleep itself is not its story: its link would carry the window
    // to the mark.)
    std::vector<std::int64_t> anchors = times;
    std::vector<TimeRange> story_links = links;
    if (toldAsLeadingUpTo(app, labels[index]) && !toldWith(app, labels[index], {"after ", "from ", "between ", "at "}))
        if (const std::optional<TimeRange> sleep = waitLeadingTo(waitsOfMarker(index), static_cast<double>(lo),
                                                                 static_cast<double>(times[index]))) {
            anchors[index] = static_cast<std::int64_t>(sleep->t0);
            std::erase_if(story_links, [&](const TimeRange& link) {
                return std::min(link.t0, link.t1) == sleep->t0 && std::max(link.t0, link.t1) == sleep->t1;
            });
        }
    const TimeRange window = checkpointWindow(
        trace.events.size(), [&](std::size_t i) { return eventTime(trace, i); }, anchors, index, traceStart(app), traceEnd(app),
        mergeRanges(std::move(busy)), 0.005, story_links, effects, story, !toldAsFollowing(app, labels[index]), io);
    // (And the program's own wait that leads up to that checkpoint is not
    // this window's either, however slowly a loaded machine ran it: lesson
    // 3's first burst, as long as its 30 ms pause.)
    if (effects) return window;
    return endBeforeWaitUpTo(window, waitsOfMarker(index + 1), static_cast<double>(hi));
}

std::optional<TimeRange> storySegment(const App& app, const std::string& label) {
    if (!app.trace) return std::nullopt;
    std::vector<std::string> labels;
    std::vector<std::int64_t> times = checkpointTimes(*app.trace, &labels);
    const auto it = std::find(labels.begin(), labels.end(), label);
    if (it == labels.end()) return std::nullopt;
    const std::size_t index = static_cast<std::size_t>(it - labels.begin());
    skipToldPast(app, index, times, labels);
    const double mark = static_cast<double>(times[index]);
    const double before = index > 0 ? static_cast<double>(times[index - 1]) : traceStart(app);
    const double after = index + 1 < times.size() ? static_cast<double>(times[index + 1]) : traceEnd(app);
    // (Told both ways, "Before" and "After" it, or "At" it: both sides.)
    const bool leading = toldAsLeadingUpTo(app, label), following = toldWith(app, label, {"after ", "from ", "between "});
    const bool at = toldWith(app, label, {"at "});
    if (following && !leading && !at) return TimeRange{mark, after};
    if (leading && !following && !at) return TimeRange{before, mark};
    return TimeRange{before, after};
}

double storyFraction(const App& app, const std::string& label, const TimeView& view) {
    const std::optional<TimeRange> segment = storySegment(app, label);
    if (!segment || view.span() <= 0) return 0;
    // The story's extent: from its first cause to its last effect, of the
    // links with an end in the segment (a spawn before the mark and the
    // first run it leads to after), clipped to the segment and the view.
    // An extent, not a sum: a thread running the story's own code between
    // two records (main allocating a stack, printing) is the story too.
    double first = 1e300, last = -1e300;
    for (const TimeRange& link :
         causeEffectLinks(app, static_cast<std::int64_t>(segment->t0), static_cast<std::int64_t>(segment->t1))) {
        const double t0 = std::min(link.t0, link.t1), t1 = std::max(link.t0, link.t1);
        const bool cause_in = t0 >= segment->t0 && t0 <= segment->t1, effect_in = t1 >= segment->t0 && t1 <= segment->t1;
        if (!cause_in && !effect_in) continue;
        // (A link begun before the segment starts in it where it ends, as
        // in trimToStory: a fiber spawned before the mark waits until it runs.)
        first = std::min(first, cause_in ? t0 : t1);
        last = std::max(last, std::min(t1, segment->t1));
    }
    // Told "From A to B", the lesson says where its story begins: at A;
    // unless the pause after A is longer than the story (lesson 2's main,
    // preempted 140 us before it awaits: the view starts at the game then).
    if (last > first && !toldUpToLater(app, label).empty() && first - segment->t0 <= last - first) first = segment->t0;
    const double a = std::max(first, view.start), b = std::min(last, view.end);
    return b > a ? (b - a) / view.span() : 0;
}

bool revealCheckpoint(App& app, const std::string& label, double min_fill) {
    std::optional<TimeRange> window = checkpointRange(app, label);
    if (!window) return false;
    std::vector<std::string> labels;
    const std::vector<std::int64_t> times = checkpointTimes(*app.trace, &labels);
    const std::size_t index = static_cast<std::size_t>(std::find(labels.begin(), labels.end(), label) - labels.begin());
    if (index >= times.size()) return false;
    // A repeating story's first rounds (`opens: ... first N links`), here as
    // in the opening view: a tour stop or a checkpoint link shows them too.
    // (Less a lead-in longer than those rounds: lesson 15's main, slow
    // to its first spawn on a loaded machine.)
    if (const Opening opens = openingOf(app, labels); opens.links > 0 && opens.checkpoint == label) {
        const std::vector<TimeRange> causes =
            causeEffectLinks(app, static_cast<std::int64_t>(window->t0), static_cast<std::int64_t>(window->t1));
        const TimeRange first = firstLinks(*window, causes, opens.links, opens.warm);
        if (first.t1 < window->t1) window = trimToStory(first, causes, static_cast<double>(times[index]));
    }
    app.cursor = times[index];
    app.active_checkpoint_time = times[index];
    app.active_checkpoint_next = index + 1 < times.size() ? times[index + 1] : INT64_MAX;
    // A window filling `min_fill` of the view or more (a quarter, when a
    // reader steps through checkpoints), comfortably in it, is already
    // shown; a smaller one is zoomed to.
    revealRange(app, *window, *window, min_fill);
    app.active_checkpoint = label;
    return true;
}

std::optional<std::int64_t> compareShift(App& app) {
    if (!app.trace || !app.compare_trace || app.active_checkpoint.empty()) return std::nullopt;
    if (app.compare_shift_of != app.active_checkpoint || app.compare_shift_trace != app.compare_trace.get()) {
        app.compare_shift_of = app.active_checkpoint;
        app.compare_shift_trace = app.compare_trace.get();
        app.compare_shift.reset();
        const auto markTime = [&](const trace::Trace& t) -> std::optional<std::int64_t> {
            for (const trace::Event& e : t.events)
                if (e.kind == trace::EventKind::Mark && t.string(e.arg[0]) == app.active_checkpoint) return e.time;
            return std::nullopt;
        };
        const auto here = markTime(*app.trace), there = markTime(*app.compare_trace);
        if (here && there) app.compare_shift = *here - *there;
    }
    return app.compare_shift;
}

const checks::LessonChecks& lessonChecks(App& app) {
    const bool in_lesson = app.lesson_index >= 0 && app.lesson_index < static_cast<int>(app.lessons.size());
    const Lesson* lesson = in_lesson ? &app.lessons[static_cast<std::size_t>(app.lesson_index)] : nullptr;
    const bool same = app.checks_read && (lesson ? app.checks_source == lesson->checks : app.checks_source.empty());
    if (!same) {
        app.checks_read = true;
        app.checks_source = lesson ? lesson->checks : std::string();
        app.checks_parsed = {};
        std::string error;
        if (lesson && !lesson->checks.empty() &&
            !checks::parseChecks(lesson->checks, lesson->slug + "/checks.md", app.checks_parsed, error))
            app.checks_parsed = {};
    }
    return app.checks_parsed;
}

std::uint32_t focusedFlows(App& app) {
    if (app.focus_all || app.active_checkpoint.empty() || !app.trace) return 0;
    // Only while the view shows its stretch: its mark, or a part of
    // [mark, next mark) (a frame past a slow lead-in: lesson 5's writes);
    // elsewhere the story is another's.
    const double mark = static_cast<double>(app.active_checkpoint_time);
    const double next = static_cast<double>(app.active_checkpoint_next);
    if (mark > app.view.end || next <= app.view.start) return 0;
    for (const checks::Focus& f : lessonChecks(app).focus)
        if (f.checkpoint == app.active_checkpoint) return f.flow_kinds;
    return 0;
}


std::string openingCheckpoint(App& app) {
    if (!app.trace) return "";
    std::vector<std::string> labels;
    checkpointTimes(*app.trace, &labels);
    if (labels.empty()) return "";
    const std::string opens = openingOf(app, labels).checkpoint;
    return opens.empty() ? labels.front() : opens;
}

bool openOnOpeningCheckpoint(App& app) {
    const std::string label = openingCheckpoint(app);
    if (label.empty()) return false;
    const std::int64_t cursor = app.cursor;
    const bool ok = revealCheckpoint(app, label, 1.0);
    app.cursor = cursor; // the opening view is a frame, not a pin: the state follows the pointer
    return ok;
}

void applyViewRequests(App& app) {
    if (!app.timeline) return;
    if (app.fit_requested) {
        TimeView whole;
        whole.fit(traceStart(app), traceEnd(app));
        setView(app, whole);
        app.fit_requested = false;
    }
    if (app.open_lesson_view) {
        if (app.lesson_index >= 0) openOnOpeningCheckpoint(app);
        app.open_lesson_view = false;
    }
}

bool revealViolation(App& app) {
    if (!app.trace || !app.timeline || app.verdict.violations == 0) return false;
    const std::uint32_t index = app.verdict.first.event;
    if (index >= app.trace->events.size()) return false;
    const trace::Event e = app.trace->events[index];
    app.playing = false; // playback would move the cursor on at the next frame
    revealTime(app, e.time);
    // The record must be a row of the table: a filter that hides it (by
    // kind, thread or fiber) or a selected range without its time goes.
    EventFilter unbounded = app.filter;
    unbounded.t0 = INT64_MIN;
    unbounded.t1 = INT64_MAX;
    if (!matches(*app.timeline, e, unbounded)) {
        app.filter = EventFilter{};
        app.fiber_search[0] = 0;
    }
    if (app.selection && (e.time < app.selection->t0 || e.time > app.selection->t1)) app.selection.reset();
    app.selected_event = index;
    app.table_dirty = true;
    app.panel_request = SidePanel::Events;
    return true;
}

bool revealComparedViolation(App& app) {
    if (!app.compare_trace || app.compare_verdict.violations == 0) return false;
    const trace::Trace& other = *app.compare_trace;
    const std::uint32_t index = app.compare_verdict.first.event;
    if (index >= other.events.size()) return false;
    app.playing = false;
    const std::int64_t t = other.events[index].time;
    app.cursor = t;
    // The window around it is of the compared run's records (revealTime's
    // would be the first run's).
    const TimeRange context = contextAround(
        other.events.size(), [&](std::size_t i) { return eventTime(other, i); }, static_cast<double>(t));
    revealRange(app, TimeRange{static_cast<double>(t), static_cast<double>(t)}, context, 0.0);
    return true;
}

void zoomToSelection(App& app) {
    if (!app.selection || app.selection->t1 <= app.selection->t0) return;
    const TimeRange r{static_cast<double>(app.selection->t0), static_cast<double>(app.selection->t1)};
    TimeView view;
    view.start = r.t0 - r.span() * 0.02;
    view.end = r.t1 + r.span() * 0.02;
    if (view.span() < 50) view.zoomAt((r.t0 + r.t1) / 2, 50 / view.span(), 50);
    setView(app, view);
}

void viewBack(App& app) {
    app.history.back(app.view);
}

void viewForward(App& app) {
    app.history.forward(app.view);
}

} // namespace fiberscope::viewer
