// The visible time range of the timeline and the arithmetic around it:
// time <-> pixel, zoom anchored at a time, pan, fit, and readable units.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <optional>
#include <vector>

namespace fiberscope::viewer {

struct TimeView {
    double start = 0; // ns, left edge
    double end = 1;   // ns, right edge

    double span() const noexcept { return end - start; }
    double nsPerPixel(float width) const noexcept { return width > 0 ? span() / width : 1.0; }
    float x(double t, float left, float width) const noexcept {
        return left + static_cast<float>((t - start) / span() * width);
    }
    double time(float px, float left, float width) const noexcept {
        return start + (px - left) / width * span();
    }
    // factor < 1 zooms in; `anchor` stays at the same pixel.
    void zoomAt(double anchor, double factor, double min_span = 50.0) noexcept;
    void pan(double ns) noexcept {
        start += ns;
        end += ns;
    }
    void fit(double t0, double t1) noexcept;
    // Keeps the view inside [lo - margin, hi + margin].
    void clamp(double lo, double hi) noexcept;
};

// A closed time range in ns.
struct TimeRange {
    double t0 = 0, t1 = 0;
    double span() const noexcept { return t1 - t0; }
};

// The fraction of the view at each edge that does not count as "comfortably
// in view": a target there is half off the reader's attention, so navigating
// to it re-frames the view.
inline constexpr double kRevealMargin = 0.1;

// Whether the timeline may explain what is under the pointer: only while
// the pointer is over the timeline itself (not over the side panel beside
// it, though a lane's band runs on under it), and never a record outside
// the view (a glyph just past its edge is within the hit tolerance).
// `event_time` < 0: no record is hovered (a block, a mark, a label).
bool hoverShown(const TimeView& view, bool pointer_over_timeline, std::int64_t event_time) noexcept;

// How far a view framed by revealView may reach past the trace's ends, as a
// fraction of its width: room for a glyph at the very start, no more (a view
// that starts before the trace shows nothing there).
inline constexpr double kTraceEdge = 0.02;

// True when all of `r` lies inside the view's inner part (the view minus
// `margin` of its span at each edge).
bool comfortablyInView(const TimeView& view, TimeRange r, double margin = kRevealMargin) noexcept;

// The view a navigation command leaves: `current` when `keep` is comfortably
// in view and fills at least `min_fill` of it (a checkpoint's window of 0.5%
// of the view "is in view" but shows nothing); else a view around `window`,
// which then fills the view's inner 1 - 2 * kRevealMargin, at least
// `min_span` wide. `lo`..`hi` (the trace) bound the result where they can
// without cutting `window`.
TimeView revealView(const TimeView& current, TimeRange keep, TimeRange window, double min_fill, double lo, double hi,
                    double min_span = 200.0) noexcept;

// The neighbourhood of instant `t` worth showing with it: from the `k`-th
// event before it to the `k`-th after (times: `count` sorted event times,
// `time_at(i)` the i-th), at least `min_span` wide, centred on `t`.
TimeRange contextAround(std::size_t count, const std::function<std::int64_t(std::size_t)>& time_at, double t,
                        std::size_t k = 8, double min_span = 2000.0);

// Sorts `ranges` and merges those that overlap or touch.
std::vector<TimeRange> mergeRanges(std::vector<TimeRange> ranges);

// How far outside a checkpoint's window the other end of a cause -> effect
// link may lie and still join it, in widths of the window (checkpointWindow).
inline constexpr double kLinkReach = 64.0;

// A lesson checkpoint's window: the burst of activity around checkpoint
// `index`'s mark. Lessons tell a checkpoint's story as what happens just
// before it ("Before `checkpoint: file created`", "Up to ...") or from it on
// ("After ...", "From ... to the next"), so the window grows from the mark
// in both directions, nearest event first, taking the next event while the
// pause before it (the time in it that no thread was `busy`: running a
// fiber) is no longer than the window so far. That is scale-free: lesson 1's
// spawning stops at its 5 ms timers, lesson 7's select at the 20 ms race
// before it, and a 50 ms phase of lesson 10 whose thread is blocked 8 ms at
// a time is one burst. Never past the neighbouring checkpoints (the trace's
// ends for the first and last); at least `min_fraction` of the trace and
// 1 us wide. `checkpoints`: the marks' times, sorted; `time_at`: sorted
// event times; `busy`: merged and sorted (mergeRanges).
//
// A burst shows an effect whose cause is outside it, or a cause whose effect
// is (lesson 5's open completes 140 us after its submit, lesson 13's sleeps
// 1-3 ms after theirs): so the window then takes in the other end of every
// cause -> effect link (`links`: t0 the cause, t1 the effect, e.g. a submit
// and its resume, a lock found taken and the hand-off that ends the wait)
// with an end in it, a cause back to the previous checkpoint, an effect up
// to the next, if it lies no further out than `kLinkReach` times the
// window's width (or the smallest window's), and grows again as a burst
// from there, until nothing more joins. Effects join only if `effects`: false when the stretch leading up
// to the next checkpoint is that one's story (the lesson tells it "Up to",
// "Until" or "Before" it: lesson 3's 30 ms sleep before `workers parked`,
// lesson 1's 5 ms timers before `all awaited`), which keeps a burst readable
// instead of drowning it in the waits it starts. A window that runs into
// the next checkpoint (the story goes on to it: lesson 8's waiters queue up
// until main unlocks) also takes, if `effects`, the effects of its causes
// that land just past it, within its own width (at most the smallest
// window's) and before the checkpoint after: the hand-off that ends the
// queueing, not a wake-up its thread took 80 us to read (lesson 11).
// Last, trimToStory: a pause at an edge goes, even where a thread was busy.
// `counts(i)`, if given, says whether the i-th event is part of the story:
// records the tracer writes on a clock of its own (CPU samples every 20 ms)
// are not, and must not bridge a 30 ms pause (lesson 3).
// `before`: false when the story starts at the mark (the lesson tells it
// "After" or "From" it): the burst then grows only after the mark, so that
// what led up to it (main's start-up, starting workers) does not take the
// view; a cause before the mark of an effect in the window still joins.
// `io`: the links (also in `links`) that are an operation's submit and its
// resume, whose wait the kernel's work set, not the program (any operation
// but a timer): their effects join even when `effects` is false. A story's
// own I/O is its story, however long a loaded machine makes it (lesson
// 12's connects, completed 170 us late while both threads waited); the
// waits `effects` keeps out are the ones a program chooses (lesson 3's
// 30 ms sleep).
TimeRange checkpointWindow(std::size_t count, const std::function<std::int64_t(std::size_t)>& time_at,
                           const std::vector<std::int64_t>& checkpoints, std::size_t index, double trace_start,
                           double trace_end, const std::vector<TimeRange>& busy, double min_fraction = 0.005,
                           const std::vector<TimeRange>& links = {}, bool effects = true,
                           const std::function<bool(std::size_t)>& counts = {}, bool before = true,
                           const std::vector<TimeRange>& io = {});

// `window` without a stretch at either edge that no cause -> effect link
// touches (`links`: t0 the cause, t1 the effect; a link crossing an edge
// touches it) and that is longer than the stretch the links do touch: a
// pause, even where a thread ran a fiber, for it was preempted (lesson 2's
// main held its thread 60 us between the game's end and its mark, lesson
// 5's 180 us between two awaits). A window no link touches, or whose
// links touch it at one instant only, is kept; the trimmed window still
// holds `keep` (the checkpoint's mark), unless `may_drop_mark` and the
// pause between the mark and the story after it is longer than the story
// (lesson 5's main, preempted 160 us after its mark before a 110 us
// story). A story told "From A to B" keeps A: the lesson says it begins there.
TimeRange trimToStory(TimeRange window, const std::vector<TimeRange>& links, double keep, bool may_drop_mark = true);

// `window` ended before the program's own wait that leads up to the next
// checkpoint's mark (`next`), when that checkpoint's story is the stretch
// before it (told "Up to" it): a timer (`timers`: submit -> resume) begun
// in the window whose resume comes at `next` or shortly before it (within a
// quarter of its wait). Lesson 3's first burst ends at its 30 ms sleep,
// which leads up to `workers parked`, even on a machine that slowed the
// burst to as long as the sleep (a window grows across a pause no longer
// than itself). The window keeps the timer's submit; unchanged when no
// such timer began in it.
TimeRange endBeforeWaitUpTo(TimeRange window, const std::vector<TimeRange>& timers, double next);
// The wait among `timers` (submit to resume) that leads up to `mark` (it
// resumes at or before the mark, which follows within a quarter of the
// wait's length), begun at or after `from`; the latest, or none. A story
// told only as leading up to a mark its writer wrote on waking from such a
// wait happened before the wait: its window is framed at the wait's start.
std::optional<TimeRange> waitLeadingTo(const std::vector<TimeRange>& timers, double from, double mark);

// `window` cut after the causes of its first `n` cause -> effect links
// (`links`, by their cause's time, the causes in the window): it ends at
// the n+1-th's cause. Their effects past that end are drawn as arrows to
// the view's edge (a wake-up read long after, in a batch, does not widen
// it). Unchanged when it holds no more than n causes. (checks.md `opens:
// ... first N links`: lesson 8 opens on its first hand-offs, not all 100.)
// `warm`: a cold start is left out: when one of the first few rounds is
// followed by a pause over 8 times the usual spacing of the causes, the
// window starts at the cause after it (lesson 15's first pair, its woken
// worker not yet running; `first N warm links`).
TimeRange firstLinks(TimeRange window, const std::vector<TimeRange>& links, std::size_t n, bool warm = false);

// Back / forward through the views navigation left (like a browser's).
// Every command that moves the view records the view it leaves
// (`command`); wheel ticks and drags record only the view before a burst of
// them (`interactive`: a tick more than `kBurstGap` seconds after the last
// one starts a new burst), so one Back undoes a whole zoom gesture.
class ViewHistory {
public:
    static constexpr double kBurstGap = 0.6;
    static constexpr std::size_t kLimit = 200;
    void command(const TimeView& before);
    void interactive(const TimeView& before, double now_seconds);
    // Moves `view` one step back (forward); false if there is none.
    bool back(TimeView& view);
    bool forward(TimeView& view);
    bool canBack() const noexcept { return !back_.empty(); }
    bool canForward() const noexcept { return !forward_.empty(); }
    void clear();
    std::size_t size() const noexcept { return back_.size(); }

private:
    void record(const TimeView& before);
    std::vector<TimeView> back_, forward_;
    double last_interactive_ = -1e300;
};

// Lays labels out in rows so that none overlaps another: labels (sorted by
// `x`, each `width` wide, wanting its left edge at `x`) go to the first of
// `rows` rows where it starts `gap` after the previous label's end. A label
// that fits in no row is elided: counted on the last label placed in the
// last row, whose width grows by `badge_width` for the "+N" badge, so the
// badge never overlaps either.
struct LabelBox {
    float x = 0, width = 0;
};
struct LabelSlot {
    int row = -1;            // -1: elided
    int hidden = 0;          // labels elided into this one's badge
    int elided_into = -1;    // for an elided label: the label showing its count
    float width = 0;         // with the badge
};
std::vector<LabelSlot> layoutLabels(const std::vector<LabelBox>& labels, int rows, float gap, float badge_width);

// A ruler step (1, 2, 5 x 10^k ns) so labels are at least `min_pixels` apart.
double rulerStep(double ns_per_pixel, float min_pixels);
// A label for a ruler tick at `t` with step `step`.
std::string formatTick(double t, double step);

} // namespace fiberscope::viewer
