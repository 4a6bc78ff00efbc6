// The visible time range of the timeline and the arithmetic around it:
// time <-> pixel, zoom anchored at a time, pan, fit, and readable units.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
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
TimeRange checkpointWindow(std::size_t count, const std::function<std::int64_t(std::size_t)>& time_at,
                           const std::vector<std::int64_t>& checkpoints, std::size_t index, double trace_start,
                           double trace_end, const std::vector<TimeRange>& busy, double min_fraction = 0.005);

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
