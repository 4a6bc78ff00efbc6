// The viewer's palette: one stable colour per fiber (the same fiber gets the
// same colour in every lane, every run), and fixed colours for states and
// event glyphs, chosen to read well on the dark background.
#pragma once

#include <cstdint>

namespace fiberscope::viewer {

using Color = std::uint32_t; // ImGui's packed ABGR (IM_COL32)

constexpr Color rgba(unsigned r, unsigned g, unsigned b, unsigned a = 255) {
    return (Color(a) << 24) | (Color(b) << 16) | (Color(g) << 8) | Color(r);
}

// A stable, well-spread colour for a fiber id (golden-ratio hue walk).
Color fiberColor(std::uint64_t fiber) noexcept;
// The same colour darkened for text on top of it, or dimmed for "waiting".
Color darker(Color c, float factor) noexcept;
// Black or white, whichever reads better on `background`.
Color textOn(Color background) noexcept;

namespace palette {
inline constexpr Color background = rgba(20, 22, 26);
inline constexpr Color lane = rgba(30, 33, 40);
inline constexpr Color lane_alt = rgba(34, 37, 45);
inline constexpr Color grid = rgba(60, 64, 74);
inline constexpr Color text = rgba(220, 224, 232);
inline constexpr Color text_dim = rgba(140, 146, 158);
inline constexpr Color idle = rgba(70, 74, 84);        // in the idle loop, searching
inline constexpr Color parked = rgba(44, 48, 58);      // waiting in io_uring_enter
inline constexpr Color ready = rgba(120, 120, 60);     // a fiber waiting in a ready queue
inline constexpr Color waiting = rgba(58, 62, 72);     // a fiber blocked
inline constexpr Color cursor = rgba(255, 210, 80);
inline constexpr Color selection = rgba(90, 140, 255, 50);
inline constexpr Color schedule = rgba(120, 200, 255);
inline constexpr Color steal = rgba(255, 120, 90);
inline constexpr Color wakeup = rgba(255, 220, 90);
inline constexpr Color submit = rgba(150, 230, 150);
inline constexpr Color complete = rgba(90, 200, 120);
inline constexpr Color cancel = rgba(255, 80, 80);
inline constexpr Color mark = rgba(230, 130, 255);
inline constexpr Color spawn = rgba(160, 160, 255);
inline constexpr Color await = rgba(200, 170, 120);
inline constexpr Color canceled = rgba(255, 150, 150);      // a delivered cancel's effect
inline constexpr Color mutex_handoff = rgba(240, 160, 60);  // an unlocker hands its mutex over
inline constexpr Color condition_wake = rgba(110, 210, 200); // a signal or broadcast wakes a waiter
} // namespace palette

} // namespace fiberscope::viewer
