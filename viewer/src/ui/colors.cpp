#include "ui/colors.hpp"

#include <cmath>

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
