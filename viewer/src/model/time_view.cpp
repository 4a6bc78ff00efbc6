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
