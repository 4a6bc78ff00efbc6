#include "ui/colors.hpp"

#include <cmath>

// The cause-and-effect palette (colors.hpp: record glyphs and flow arrows).
// Twelve colours that sit side by side on the timeline, so each pair must be
// told apart at a glance, on the dark background, by everyone:
//   schedule steel blue (100,160,210)  steal orange (255,150,0)
//   wake-up yellow (255,230,0)         submit lime (180,255,110)
//   complete cyan (20,240,255)         cancel red (255,55,35)
//   canceled rose (230,80,145)         spawn lavender (185,150,255)
//   await cream (235,240,210)          mutex brown (185,120,85)
//   condition green (0,200,135)        mark violet (205,70,255)
// The old palette had submit and complete as two greens (CIE76 delta-E 15),
// steal and cancel as two reds (18) and wake-up and await as two yellows.
// These were picked by a search over hue windows that keep each meaning
// (cancel red, wake-up yellow, ...) for the largest smallest distance: every
// pair is at least 43 apart in CIELAB (CIE76), and still at least 15 apart
// after simulating protanopia, deuteranopia and tritanopia (Machado et al.
// 2009, full severity), because the hues that such vision merges differ in
// lightness (cancel L 56 vs steal 72, wake-up 91 vs mutex 56, submit 93 vs
// condition 72). Every colour is at least 60 from the background (L 8), so
// thin arrows stay visible. Shape carries meaning as well (each record kind
// has its own glyph, the legend shows them), so colour is never the only cue.
// tests/viewer/test_flows.cpp holds the palette to this.

namespace fiberscope::viewer {

static Color hsv(float h, float s, float v) {
    h = h - std::floor(h);
    const float i = std::floor(h * 6.0f), f = h * 6.0f - i;
    const float p = v * (1 - s), q = v * (1 - f * s), t = v * (1 - (1 - f) * s);
    float r, g, b;
    switch (static_cast<int>(i) % 6) {
    case 0: r = v, g = t, b = p; break;
    case 1: r = q, g = v, b = p; break;
    case 2: r = p, g = v, b = t; break;
    case 3: r = p, g = q, b = v; break;
    case 4: r = t, g = p, b = v; break;
    default: r = v, g = p, b = q; break;
    }
    return rgba(static_cast<unsigned>(r * 255), static_cast<unsigned>(g * 255), static_cast<unsigned>(b * 255));
}

Color fiberColor(std::uint64_t fiber) noexcept {
    if (fiber == 1) return rgba(200, 205, 215); // the main fiber: neutral
    const float hue = static_cast<float>(std::fmod(static_cast<double>(fiber) * 0.6180339887, 1.0));
    // Alternate saturation/value a little so neighbours in hue still differ.
    const float s = (fiber % 3 == 0) ? 0.55f : 0.68f;
    const float v = (fiber % 2 == 0) ? 0.86f : 0.74f;
    return hsv(hue, s, v);
}

Color darker(Color c, float factor) noexcept {
    auto channel = [&](int shift) { return static_cast<unsigned>(((c >> shift) & 0xFF) * factor); };
    return rgba(channel(0), channel(8), channel(16), (c >> 24) & 0xFF);
}

Color textOn(Color background) noexcept {
    const float r = (background & 0xFF) / 255.0f, g = ((background >> 8) & 0xFF) / 255.0f,
                b = ((background >> 16) & 0xFF) / 255.0f;
    return 0.299f * r + 0.587f * g + 0.114f * b > 0.55f ? rgba(15, 16, 20) : rgba(245, 246, 250);
}

} // namespace fiberscope::viewer
