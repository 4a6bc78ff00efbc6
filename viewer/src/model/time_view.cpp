#include "model/time_view.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fiberscope::viewer {

void TimeView::zoomAt(double anchor, double factor, double min_span) noexcept {
    double new_span = std::max(span() * factor, min_span);
    const double ratio = (anchor - start) / span();
    start = anchor - ratio * new_span;
    end = start + new_span;
}

void TimeView::fit(double t0, double t1) noexcept {
    if (t1 <= t0) t1 = t0 + 1000;
    const double margin = (t1 - t0) * 0.02;
    start = t0 - margin;
    end = t1 + margin;
}

void TimeView::clamp(double lo, double hi) noexcept {
    const double margin = std::max((hi - lo) * 0.05, 1000.0);
    const double max_span = (hi - lo) + 2 * margin;
    if (span() > max_span) {
        start = lo - margin;
        end = hi + margin;
        return;
    }
    if (start < lo - margin) pan(lo - margin - start);
    if (end > hi + margin) pan(hi + margin - end);
}

bool comfortablyInView(const TimeView& view, TimeRange r, double margin) noexcept {
    const double inset = view.span() * margin;
    return r.t0 >= view.start + inset && r.t1 <= view.end - inset;
}

bool hoverShown(const TimeView& view, bool pointer_over_timeline, std::int64_t event_time) noexcept {
    if (!pointer_over_timeline) return false;
    return event_time < 0 || (static_cast<double>(event_time) >= view.start && static_cast<double>(event_time) <= view.end);
}

TimeView revealView(const TimeView& current, TimeRange keep, TimeRange window, double min_fill, double lo, double hi,
                    double min_span) noexcept {
    if (keep.t1 < keep.t0) std::swap(keep.t0, keep.t1);
    if (window.t1 < window.t0) std::swap(window.t0, window.t1);
    if (comfortablyInView(current, keep) && keep.span() >= min_fill * current.span()) return current;
    const double inner = 1.0 - 2 * kRevealMargin;
    const double span = std::max(window.span() / inner, min_span);
    const double middle = (window.t0 + window.t1) / 2;
    TimeView view;
    view.start = middle - span / 2;
    view.end = middle + span / 2;
    // Inside the trace where the trace is wide enough: slide, never shrink.
    // Sliding never takes the window out of view (it is inside the trace
    // and narrower than the view); it may take it near the view's edge when
    // it starts (ends) where the trace does: a view that starts before the
    // trace shows nothing there. It keeps kTraceEdge of the view past the
    // trace's ends: room for the glyph of a record at the very start.
    const double edge = kTraceEdge * span;
    if (hi > lo && span < hi - lo) {
        if (view.start < lo - edge) view.pan(lo - edge - view.start);
        if (view.end > hi + edge) view.pan(hi + edge - view.end);
    } else if (hi > lo && window.t0 >= lo && window.t1 <= hi) {
        // The window wants a view wider than the trace: the whole trace
        // holds it, and shows nothing that is not there.
        const double whole = (hi - lo) / (1 - 2 * kTraceEdge);
        view.start = lo - kTraceEdge * whole;
        view.end = hi + kTraceEdge * whole;
    }
    return view;
}

TimeRange contextAround(std::size_t count, const std::function<std::int64_t(std::size_t)>& time_at, double t, std::size_t k,
                        double min_span) {
    TimeRange r{t, t};
    if (count > 0) {
        // The first event at or after t.
        std::size_t first = 0, last = count;
        while (first < last) {
            const std::size_t mid = first + (last - first) / 2;
            if (static_cast<double>(time_at(mid)) < t) first = mid + 1;
            else last = mid;
        }
        const std::size_t before = first >= k ? first - k : 0;
        const std::size_t after = std::min(count - 1, first + (k > 0 ? k - 1 : 0));
        r.t0 = std::min(t, static_cast<double>(time_at(before)));
        r.t1 = std::max(t, static_cast<double>(time_at(after)));
    }
    // Centred on t: the reader's eye goes to the middle.
    const double half = std::max({t - r.t0, r.t1 - t, min_span / 2});
    return TimeRange{t - half, t + half};
}

std::vector<TimeRange> mergeRanges(std::vector<TimeRange> ranges) {
    std::sort(ranges.begin(), ranges.end(), [](const TimeRange& a, const TimeRange& b) { return a.t0 < b.t0; });
    std::vector<TimeRange> merged;
    for (const TimeRange& r : ranges) {
        if (r.t1 < r.t0) continue;
        if (!merged.empty() && r.t0 <= merged.back().t1) merged.back().t1 = std::max(merged.back().t1, r.t1);
        else merged.push_back(r);
    }
    return merged;
}

namespace {

// Busy time (covered by `busy`, merged and sorted) before `t`, with its prefix sums.
struct BusyClock {
    const std::vector<TimeRange>& busy;
    std::vector<double> before; // busy time before busy[i].t0
    explicit BusyClock(const std::vector<TimeRange>& b) : busy(b), before(b.size()) {
        double sum = 0;
        for (std::size_t i = 0; i < busy.size(); ++i) {
            before[i] = sum;
            sum += busy[i].span();
        }
    }
    double at(double t) const {
        auto it = std::upper_bound(busy.begin(), busy.end(), t, [](double v, const TimeRange& r) { return v < r.t0; });
        if (it == busy.begin()) return 0;
        const std::size_t i = static_cast<std::size_t>(it - busy.begin()) - 1;
        return before[i] + std::min(t, busy[i].t1) - busy[i].t0;
    }
    // The idle time between x and y (x <= y).
    double idle(double x, double y) const { return (y - x) - (at(y) - at(x)); }
};

} // namespace

TimeRange checkpointWindow(std::size_t count, const std::function<std::int64_t(std::size_t)>& time_at,
                           const std::vector<std::int64_t>& checkpoints, std::size_t index, double trace_start,
                           double trace_end, const std::vector<TimeRange>& busy, double min_fraction,
                           const std::vector<TimeRange>& links, bool effects, const std::function<bool(std::size_t)>& counts,
                           bool before, const std::vector<TimeRange>& io) {
    if (index >= checkpoints.size()) return TimeRange{trace_start, trace_end};
    const double mark = static_cast<double>(checkpoints[index]);
    const double previous = index > 0 ? static_cast<double>(checkpoints[index - 1]) : std::min(trace_start, mark);
    // Where the burst may grow to the left (causes may reach `previous`).
    const double lo = before ? previous : mark;
    const double hi = index + 1 < checkpoints.size() ? static_cast<double>(checkpoints[index + 1]) : std::max(trace_end, mark);
    const double min_span = std::max((trace_end - trace_start) * min_fraction, 1000.0);
    const BusyClock clock(busy);
    const auto at = [&](std::size_t i) { return static_cast<double>(time_at(i)); };
    const auto counted = [&](std::size_t i) { return !counts || counts(i); };
    // The first event at or after `t` (`after`: the first after it).
    const auto indexOf = [&](double t, bool after) {
        std::size_t first = 0, last = count;
        while (first < last) {
            const std::size_t mid = first + (last - first) / 2;
            if (after ? at(mid) <= t : at(mid) < t) first = mid + 1;
            else last = mid;
        }
        return first;
    };
    double a = mark, b = mark;
    // The next event to take on the left is left - 1, on the right `right`.
    std::size_t left = indexOf(mark, false), right = left;
    const auto grow = [&] {
        for (;;) {
            while (left > 0 && at(left - 1) >= lo && !counted(left - 1)) --left;
            while (right < count && at(right) <= hi && !counted(right)) ++right;
            const bool can_left = left > 0 && at(left - 1) >= lo;
            const bool can_right = right < count && at(right) <= hi;
            if (!can_left && !can_right) break;
            // A gap is the time in it that no thread ran a fiber: a blocking
            // syscall or an 8 ms busy loop (lesson 10) is the story, not a pause.
            const double gap_left = can_left ? clock.idle(at(left - 1), a) : 1e300;
            const double gap_right = can_right ? clock.idle(b, at(right)) : 1e300;
            // The nearer neighbour joins if the pause before it is no longer
            // than the burst is wide (or than the smallest window): scale-free,
            // so a 10 us burst ends at a 100 us pause, a 50 ms phase at none.
            const double gap = std::min(gap_left, gap_right);
            if (gap > std::max(min_span, b - a)) break;
            if (gap_left <= gap_right) a = at(--left);
            else b = at(right++);
        }
    };
    grow();
    // The other ends of the links with one end in the window, then the burst
    // around them; again, while that brings in more (bounded: each round
    // widens). A cause always joins its effect (why the window's story
    // happened), back to the previous checkpoint; an effect its cause only
    // when the stretch up to the next checkpoint is this one's (`effects`).
    const auto before_in_order = [](const TimeRange& x, const TimeRange& y) { return x.t0 < y.t0 || (x.t0 == y.t0 && x.t1 < y.t1); };
    std::vector<TimeRange> io_sorted = io;
    std::sort(io_sorted.begin(), io_sorted.end(), before_in_order);
    const auto isIo = [&](const TimeRange& link) { return std::binary_search(io_sorted.begin(), io_sorted.end(), link, before_in_order); };
    for (int round = 0; round < 32 && !links.empty(); ++round) {
        bool widened = false;
        for (const TimeRange& link : links) {
            const double cause = std::min(link.t0, link.t1), effect = std::max(link.t0, link.t1);
            const bool cause_in = cause >= a && cause <= b, effect_in = effect >= a && effect <= b;
            // Near enough to keep the burst readable: lesson 7's 20 us of
            // select and cancel is not drowned in the 20 ms race before it.
            const double reach = kLinkReach * std::max(b - a, min_span);
            if (effect_in && cause < a && cause >= previous && a - cause <= reach) {
                a = cause;
                widened = true;
            }
            if (cause_in && effect > b && effect <= hi && effect - b <= reach && (effects || isIo(link))) {
                b = effect;
                widened = true;
            }
        }
        if (!widened) break;
        left = indexOf(a, false);
        right = indexOf(b, true);
        grow();
    }
    // Run into the next checkpoint: the effects just past it of causes in it.
    if (effects && index + 1 < checkpoints.size() && b >= hi) {
        const double after = index + 2 < checkpoints.size() ? static_cast<double>(checkpoints[index + 2]) : std::max(trace_end, hi);
        const double reach = std::min(hi + std::min(min_span, b - a), after);
        double end = b;
        for (const TimeRange& link : links) {
            const double cause = std::min(link.t0, link.t1), effect = std::max(link.t0, link.t1);
            if (cause >= a && cause <= b && effect > b && effect <= reach) end = std::max(end, effect);
        }
        b = end;
    }
    const TimeRange story = trimToStory({a, b}, links, mark);
    a = story.t0;
    b = story.t1;
    if (b - a < min_span) {
        const double middle = (a + b) / 2;
        a = middle - min_span / 2;
        b = middle + min_span / 2;
    }
    return TimeRange{a, b};
}

TimeRange trimToStory(TimeRange window, const std::vector<TimeRange>& links, double keep, bool may_drop_mark) {
    double first = 1e300, last = -1e300;
    for (const TimeRange& link : links) {
        const double cause = std::min(link.t0, link.t1), effect = std::max(link.t0, link.t1);
        if (effect < window.t0 || cause > window.t1) continue;
        // (A link begun before the window starts in it where it ends: a
        // fiber spawned before the mark waits in a queue until it runs;
        // lesson 2's main, preempted 140 us between its mark and its
        // await, while its players waited.)
        first = std::min(first, cause >= window.t0 ? cause : std::min(effect, window.t1));
        last = std::max(last, std::min(effect, window.t1));
    }
    if (first >= last) return window;
    const double story = last - first;
    // The mark stays, unless (`may_drop_mark`) the pause between it and the
    // story after it is itself longer than the story (lesson 5's main,
    // preempted 160 us between its `writing` mark and the first spawn of a
    // 110 us story): the label strip then names the mark at the view's
    // left edge. A mark after the story always stays (no strip names it).
    const bool drop = may_drop_mark && keep <= first && first - keep > story;
    const double from = drop ? first : std::min(first, std::max(keep, window.t0));
    const double to = std::max(last, std::min(keep, window.t1));
    if (first - window.t0 > story) window.t0 = from;
    if (window.t1 - last > story) window.t1 = to;
    return window;
}

// A wait leads up to `mark` when it resumes at or before it, and the mark
// follows the resume within a quarter of the wait's own length.
static bool leadsUpTo(double submit, double resume, double mark) { return resume <= mark && mark - resume <= (resume - submit) / 4; }

TimeRange endBeforeWaitUpTo(TimeRange window, const std::vector<TimeRange>& timers, double next) {
    double end = window.t1;
    for (const TimeRange& t : timers) {
        const double submit = std::min(t.t0, t.t1), resume = std::max(t.t0, t.t1);
        if (submit < window.t0 || submit > window.t1) continue;
        if (leadsUpTo(submit, resume, next)) end = std::min(end, submit);
    }
    window.t1 = std::max(end, window.t0);
    return window;
}

std::optional<TimeRange> waitLeadingTo(const std::vector<TimeRange>& timers, double from, double mark) {
    std::optional<TimeRange> wait;
    for (const TimeRange& t : timers) {
        const double submit = std::min(t.t0, t.t1), resume = std::max(t.t0, t.t1);
        if (submit >= from && leadsUpTo(submit, resume, mark) && (!wait || submit > wait->t0)) wait = TimeRange{submit, resume};
    }
    return wait;
}

TimeRange firstLinks(TimeRange window, const std::vector<TimeRange>& links, std::size_t n, bool warm) {
    std::vector<TimeRange> in;
    for (const TimeRange& link : links) {
        const double cause = std::min(link.t0, link.t1), effect = std::max(link.t0, link.t1);
        if (cause >= window.t0 && cause <= window.t1) in.push_back({cause, effect});
    }
    if (n == 0 || in.size() <= n) return window;
    std::vector<double> causes;
    causes.reserve(in.size());
    for (const TimeRange& link : in) causes.push_back(link.t0);
    std::sort(causes.begin(), causes.end());
    // (`warm`) A cold start: a pause after one of the first few rounds longer than
    // kCold times the rounds' usual spacing (a first system call, a worker
    // not yet on a CPU: lesson 15's first pair, 20 us of a 45 us view,
    // where the others take half a microsecond) is not the rhythm the
    // story repeats: the rounds shown begin after it.
    constexpr double kCold = 8;
    constexpr std::size_t kColdRounds = 4;
    std::vector<double> gaps;
    for (std::size_t i = 0; i < n; ++i) gaps.push_back(causes[i + 1] - causes[i]);
    std::vector<double> sorted = gaps;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(n / 2), sorted.end());
    const double usual = sorted[n / 2];
    std::size_t from = 0;
    for (std::size_t i = 0; warm && i < std::min(kColdRounds, n / 2); ++i)
        if (usual > 0 && gaps[i] > kCold * usual) from = i + 1;
    if (from > 0 && from + n < causes.size()) window.t0 = std::max(window.t0, causes[from]);
    else from = 0;
    window.t1 = std::min(window.t1, causes[from + n]);
    return window;
}

void ViewHistory::record(const TimeView& before) {
    if (!back_.empty()) {
        const TimeView& top = back_.back();
        const double tolerance = std::max(before.span(), 1.0) * 1e-6;
        if (std::fabs(top.start - before.start) <= tolerance && std::fabs(top.end - before.end) <= tolerance) {
            forward_.clear();
            return;
        }
    }
    back_.push_back(before);
    if (back_.size() > kLimit) back_.erase(back_.begin());
    forward_.clear();
}

void ViewHistory::command(const TimeView& before) {
    record(before);
    last_interactive_ = -1e300; // the next wheel tick starts its own burst
}

void ViewHistory::interactive(const TimeView& before, double now_seconds) {
    if (now_seconds - last_interactive_ > kBurstGap) record(before);
    last_interactive_ = now_seconds;
}

bool ViewHistory::back(TimeView& view) {
    if (back_.empty()) return false;
    forward_.push_back(view);
    view = back_.back();
    back_.pop_back();
    last_interactive_ = -1e300;
    return true;
}

bool ViewHistory::forward(TimeView& view) {
    if (forward_.empty()) return false;
    back_.push_back(view);
    view = forward_.back();
    forward_.pop_back();
    last_interactive_ = -1e300;
    return true;
}

void ViewHistory::clear() {
    back_.clear();
    forward_.clear();
    last_interactive_ = -1e300;
}

std::vector<LabelSlot> layoutLabels(const std::vector<LabelBox>& labels, int rows, float gap, float badge_width) {
    std::vector<LabelSlot> slots(labels.size());
    rows = std::max(rows, 1);
    std::vector<float> row_end(static_cast<std::size_t>(rows), -1e30f);
    std::vector<int> row_last(static_cast<std::size_t>(rows), -1);
    for (std::size_t i = 0; i < labels.size(); ++i) {
        LabelSlot& slot = slots[i];
        slot.width = labels[i].width;
        for (int r = 0; r < rows; ++r) {
            if (labels[i].x >= row_end[static_cast<std::size_t>(r)] + gap) {
                slot.row = r;
                row_end[static_cast<std::size_t>(r)] = labels[i].x + slot.width;
                row_last[static_cast<std::size_t>(r)] = static_cast<int>(i);
                break;
            }
        }
        if (slot.row >= 0) continue;
        // No room: counted on the last label of the last row (there is one:
        // an empty row always has room).
        const int owner = row_last[static_cast<std::size_t>(rows - 1)];
        slot.elided_into = owner;
        if (owner >= 0) {
            LabelSlot& shown = slots[static_cast<std::size_t>(owner)];
            if (shown.hidden++ == 0) {
                shown.width += badge_width;
                row_end[static_cast<std::size_t>(rows - 1)] += badge_width;
            }
        }
    }
    return slots;
}

double rulerStep(double ns_per_pixel, float min_pixels) {
    const double raw = ns_per_pixel * min_pixels;
    if (!std::isfinite(raw) || raw <= 1) return 1; // a broken view gets a step, not a hang
    double step = 1;
    while (step * 10 <= raw) step *= 10;
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (step * m >= raw) return step * m;
    return step * 10;
}

std::string formatTick(double t, double step) {
    char text[48];
    if (std::fabs(t) < step * 1e-6) t = 0; // no "-0 ms"
    if (step >= 1e9) std::snprintf(text, sizeof text, "%.0f s", t / 1e9);
    else if (step >= 1e8) std::snprintf(text, sizeof text, "%.1f s", t / 1e9);
    else if (step >= 1e6) std::snprintf(text, sizeof text, "%.0f ms", t / 1e6);
    else if (step >= 1e5) std::snprintf(text, sizeof text, "%.1f ms", t / 1e6);
    else if (step >= 1e4) std::snprintf(text, sizeof text, "%.2f ms", t / 1e6);
    else if (step >= 1e3) std::snprintf(text, sizeof text, "%.0f \xC2\xB5s", t / 1e3);
    else if (step >= 1e2) std::snprintf(text, sizeof text, "%.1f \xC2\xB5s", t / 1e3);
    else std::snprintf(text, sizeof text, "%.0f ns", t);
    return text;
}

} // namespace fiberscope::viewer
