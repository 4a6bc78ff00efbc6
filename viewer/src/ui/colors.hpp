// The viewer's palette: one stable colour per fiber (the same fiber gets the
// same colour in every lane, every run), and fixed colours for states and
// event glyphs, chosen to read well on the dark background.
#pragma once

#include <cstdint>

#include "fiberscope/analysis/timeline.hpp"
#include "fiberscope/trace_events.hpp"

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
inline constexpr Color tour_ring = rgba(255, 255, 255);      // the narrated tour's records, ringed
// The lesson panel's code view: the line the fiber is at (its latest mark or zone).
inline constexpr Color code_line = rgba(122, 84, 18);
inline constexpr Color selection = rgba(90, 140, 255, 50);
// The verdict banner: a trace that contradicts itself (ui/verdict_view.cpp).
// A dark red no glyph, arrow or lane uses, under light text; lighter when
// hovered, as it is a button.
inline constexpr Color violation = rgba(128, 24, 34);
inline constexpr Color violation_hovered = rgba(158, 38, 48);
// The cause-and-effect colours (record glyphs and flow arrows): one clear
// hue each, spread in lightness too (colors.cpp says why these).
inline constexpr Color schedule = rgba(100, 160, 210);       // steel blue
inline constexpr Color steal = rgba(255, 150, 0);            // orange
inline constexpr Color wakeup = rgba(255, 230, 0);           // yellow
inline constexpr Color submit = rgba(180, 255, 110);         // lime
inline constexpr Color complete = rgba(20, 240, 255);        // cyan (and the completion arrow)
inline constexpr Color cancel = rgba(255, 55, 35);           // red
inline constexpr Color mark = rgba(205, 70, 255);            // violet
inline constexpr Color spawn = rgba(185, 150, 255);          // lavender
inline constexpr Color await = rgba(235, 240, 210);          // cream
inline constexpr Color canceled = rgba(230, 80, 145);        // rose: a delivered cancel's effect
inline constexpr Color mutex_handoff = rgba(185, 120, 85);   // brown: an unlocker hands its mutex over
inline constexpr Color condition_wake = rgba(0, 200, 135);   // green: a signal or broadcast wakes a waiter
inline constexpr Color search = rgba(160, 165, 175);         // silver: an idle thread searches before it parks (no arrow)
// Counter tracks (the min in each pixel solid, up to the max translucent).
inline constexpr Color counter_ready = rgba(196, 180, 84);    // ready-queue length
inline constexpr Color counter_flight = rgba(84, 190, 200);   // operations in flight
inline constexpr Color counter_alive = rgba(150, 160, 235);   // fibers alive
// The CPU strip under a thread lane (the OS's samples): from grey, the
// thread never waited for a CPU while ready, to red, it waited half the
// interval or more (cpuWaitColor).
inline constexpr Color cpu_ran = rgba(70, 74, 84);
inline constexpr Color cpu_waited = rgba(235, 50, 45);
} // namespace palette

// The CPU strip's colour for a sample interval the thread spent `fraction`
// of waiting, ready, on a kernel runqueue.
constexpr Color cpuWaitColor(double fraction) noexcept {
    const double w = fraction * 2.0 < 0 ? 0.0 : fraction * 2.0 > 1 ? 1.0 : fraction * 2.0; // half the interval: fully red
    const auto channel = [w](int shift) {
        const double a = (palette::cpu_ran >> shift) & 0xFF, b = (palette::cpu_waited >> shift) & 0xFF;
        return static_cast<Color>(a + (b - a) * w) << shift;
    };
    return channel(0) | channel(8) | channel(16) | (Color{255} << 24);
}

// The glyph colour of a record on a thread lane (0: not drawn as a glyph).
constexpr Color recordColor(trace::EventKind kind) noexcept {
    using K = trace::EventKind;
    switch (kind) {
    case K::Schedule: return palette::schedule;
    case K::Steal:
    case K::StealHalf:
    case K::StealOne: return palette::steal;
    case K::WakeupSent:
    case K::WakeupReceived: return palette::wakeup;
    case K::Submit: return palette::submit;
    case K::Complete: return palette::complete;
    case K::CancelRequest:
    case K::CancelDelivered: return palette::cancel;
    case K::Mark: return palette::mark;
    case K::FiberCreate: return palette::spawn;
    case K::MutexContended:
    case K::MutexHandoff:
    case K::RwLockOp: return palette::mutex_handoff;
    case K::ConditionWait:
    case K::ConditionWake:
    case K::SemaphoreOp:
    case K::EventOp: return palette::condition_wake;
    case K::Search: return palette::search;
    default: return 0;
    }
}

// The colour of a flow arrow of `kind`.
constexpr Color flowColor(analysis::FlowKind kind) noexcept {
    using F = analysis::FlowKind;
    switch (kind) {
    case F::Wakeup: return palette::wakeup;
    case F::Steal: return palette::steal;
    case F::Spawn: return palette::spawn;
    case F::Completion: return palette::complete;
    case F::AwaitChain: return palette::await;
    case F::Cancel: return palette::cancel;
    case F::Canceled: return palette::canceled;
    case F::MutexHandoff: return palette::mutex_handoff;
    case F::ConditionWake: return palette::condition_wake;
    }
    return palette::text;
}

} // namespace fiberscope::viewer
