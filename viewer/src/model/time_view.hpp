// The visible time range of the timeline and the arithmetic around it:
// time <-> pixel, zoom anchored at a time, pan, fit, and readable units.
#pragma once

#include <cstdint>
#include <string>

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

// A ruler step (1, 2, 5 x 10^k ns) so labels are at least `min_pixels` apart.
double rulerStep(double ns_per_pixel, float min_pixels);
// A label for a ruler tick at `t` with step `step`.
std::string formatTick(double t, double step);

} // namespace fiberscope::viewer
