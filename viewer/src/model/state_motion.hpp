// The scheduler-state panel's motion (issue 14, "Play, step and compare"):
// when the cursor moves by one decision (a step, or playback), each fiber
// chip that changes place (a steal: victim's queue -> thief; a submit:
// running -> in flight; a completion: in flight -> a ready queue; a switch:
// queue -> running) slides from where it was to where it now is, a chip
// that appears fades and grows in, one that leaves fades out.
//
// Design: the panel lays its chips out twice as data (fiber, where), before
// and after the move, and this file interpolates between the two layouts by
// fiber; the panel only draws what it returns. Pure and without ImGui, so a
// model test checks the motion (monotone, ends exactly at the new place,
// fades) and which moves animate at all: a big jump (many decisions, a
// drag, a click elsewhere) must not, or the picture would swim.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::viewer {

// How long a move takes (seconds), eased out.
inline constexpr double kChipMotionSeconds = 0.32;

// One chip of a layout: a fiber at (x, y) (the chip's top left, in the
// panel's content coordinates) drawn at most `width` wide.
struct ChipPlace {
    std::uint64_t fiber = 0;
    float x = 0, y = 0;
    float width = 0;
};

// One chip of a frame of the motion.
struct ChipFrame {
    std::uint64_t fiber = 0;
    float x = 0, y = 0;
    float width = 0;
    float alpha = 1; // 0..1: fading in (appearing) or out (leaving)
    float scale = 1; // 0..1: growing in or shrinking out (about the chip's centre)
    bool leaving = false; // in the old layout only: drawn fading at its old place
};

// Ease-out (cubic): fast at first, settling at the end; 0 -> 0, 1 -> 1, monotone.
float easeOut(float t) noexcept;

// The chips at `fraction` (0: the old layout, 1: the new one exactly) of the
// move from `from` to `to`. Chips are matched by fiber (the k-th chip of a
// fiber in `from` with the k-th in `to`, should a layout show one twice).
// A matched chip moves along the straight line, eased; one only in `to`
// fades and grows in at its place, unless its fiber was shown already (a
// submit: running, now in flight too), then it slides out of that chip; one
// only in `from` fades out at its place (leaving: true), or slides into its
// fiber's chip that stays. At fraction >= 1 the result is `to`, all opaque.
std::vector<ChipFrame> interpolateChips(const std::vector<ChipPlace>& from, const std::vector<ChipPlace>& to, float fraction);

// The decisions (records whose kind is a step, as stepDecision walks them)
// among trace events (min(a, b), max(a, b)], counting at most `limit` + 1.
std::size_t decisionsBetween(const trace::Trace& trace, std::uint32_t a, std::uint32_t b, std::size_t limit = 1);

// Whether a cursor move animates: only a move by one decision (or none: the
// same instant redrawn). A jump over several, or one that is not a step at
// all (the pointer, a click, a drag), is shown at once.
bool moveAnimates(bool stepped, std::size_t decisions) noexcept;

// The panel's motion between frames: give it each frame's layout and what
// the cursor is; it says where to draw the chips. A move starts when the
// state shown changes by one decision (the step cursor moved from one
// decision to the next, or back, and the shown instant is that decision's);
// any other change is shown at once. A move that starts while one is under
// way starts from where the chips are (picked up mid-slide).
class ChipMotion {
public:
    // `model`: what the layout is of (another model is a new picture);
    // `time`: the instant shown; `step_event`: the step cursor (kNoEvent:
    // none); `now`: seconds on any steady clock.
    std::vector<ChipFrame> frame(const void* model, const trace::Trace& trace, std::int64_t time, std::uint32_t step_event,
                                 const std::vector<ChipPlace>& layout, double now);
    bool moving() const noexcept { return start_ >= 0; }

private:
    const void* model_ = nullptr;
    std::int64_t time_ = INT64_MIN;
    std::uint32_t step_event_ = analysis::kNoEvent;
    std::vector<ChipPlace> shown_; // the layout of the state shown
    std::vector<ChipPlace> from_;  // where the move under way started
    double start_ = -1;            // when it started; -1: none
};

} // namespace fiberscope::viewer
