// The scheduler-state panel's chip motion (model/state_motion.hpp): a chip
// in both layouts slides monotonically from its old place to exactly its new
// one, one that appears fades and grows in, one that leaves fades out, and
// only a move by one decision animates.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "model/state_motion.hpp"

using namespace fiberscope::viewer;
namespace trace = fiberscope::trace;

namespace {

const ChipFrame* chipOf(const std::vector<ChipFrame>& frames, std::uint64_t fiber, bool leaving = false) {
    for (const ChipFrame& f : frames)
        if (f.fiber == fiber && f.leaving == leaving) return &f;
    return nullptr;
}

} // namespace

TEST_CASE("a chip in both layouts slides monotonically and ends exactly at its new place", "[viewer][motion]") {
    // A steal: fiber 5 leaves the victim's queue (row 1) for the thief's running slot (row 3);
    // fiber 7 stays where it is; fiber 9 appears (scheduled), fiber 4 leaves (it ran and finished).
    const std::vector<ChipPlace> before = {{5, 200, 40, 60}, {7, 90, 10, 50}, {4, 300, 40, 40}};
    const std::vector<ChipPlace> after = {{7, 90, 10, 50}, {5, 90, 160, 80}, {9, 150, 190, 55}};
    float last_x = 1e9f, last_y = -1e9f, last_alpha_in = -1, last_scale_in = -1, last_alpha_out = 2;
    for (int k = 0; k <= 20; ++k) {
        const float t = static_cast<float>(k) / 20;
        const std::vector<ChipFrame> frames = interpolateChips(before, after, t);
        const ChipFrame* moving = chipOf(frames, 5);
        REQUIRE(moving);
        // From (200, 40) to (90, 160): x never grows, y never shrinks, both stay between the ends.
        CHECK(moving->x <= last_x);
        CHECK(moving->y >= last_y);
        CHECK(moving->x >= 90 - 1e-3f);
        CHECK(moving->x <= 200 + 1e-3f);
        CHECK(moving->alpha == 1.0f);
        last_x = moving->x;
        last_y = moving->y;
        const ChipFrame* still = chipOf(frames, 7);
        REQUIRE(still);
        CHECK(still->x == 90);
        CHECK(still->y == 10);
        // Appearing: at its new place, fading and growing in.
        const ChipFrame* in = chipOf(frames, 9);
        REQUIRE(in);
        CHECK(in->x == 150);
        CHECK(in->y == 190);
        CHECK(in->alpha >= last_alpha_in);
        CHECK(in->scale >= last_scale_in);
        last_alpha_in = in->alpha;
        last_scale_in = in->scale;
        // Leaving: at its old place, fading out, gone at the end.
        const ChipFrame* out = chipOf(frames, 4, true);
        if (k < 20) {
            REQUIRE(out);
            CHECK(out->x == 300);
            CHECK(out->alpha <= last_alpha_out);
            last_alpha_out = out->alpha;
        } else {
            CHECK_FALSE(out);
        }
    }
    // The start is the old layout, the end exactly the new one.
    const std::vector<ChipFrame> start = interpolateChips(before, after, 0.0f);
    CHECK(chipOf(start, 5)->x == 200);
    CHECK(chipOf(start, 5)->y == 40);
    CHECK(chipOf(start, 9)->alpha == 0.0f);
    CHECK(chipOf(start, 4, true)->alpha == 1.0f);
    const std::vector<ChipFrame> end = interpolateChips(before, after, 1.0f);
    REQUIRE(end.size() == after.size());
    for (std::size_t i = 0; i < after.size(); ++i) {
        CHECK(end[i].fiber == after[i].fiber);
        CHECK(end[i].x == after[i].x);
        CHECK(end[i].y == after[i].y);
        CHECK(end[i].width == after[i].width);
        CHECK(end[i].alpha == 1.0f);
        CHECK(end[i].scale == 1.0f);
        CHECK_FALSE(end[i].leaving);
    }
    // Past the end it stays there.
    const std::vector<ChipFrame> past = interpolateChips(before, after, 3.0f);
    CHECK(chipOf(past, 5)->x == 90);
    // Eased out: more than half the way at half the time.
    const std::vector<ChipFrame> halfway = interpolateChips(before, after, 0.5f);
    const ChipFrame* half = chipOf(halfway, 5);
    REQUIRE(half);
    CHECK(half->x < 145);
    CHECK(easeOut(0.0f) == 0.0f);
    CHECK(easeOut(1.0f) == 1.0f);
}

TEST_CASE("a fiber shown twice is matched occurrence by occurrence", "[viewer][motion]") {
    // A completion: the fiber's chip in flight (the second) merges into the one that stays.
    const std::vector<ChipPlace> before = {{3, 0, 0, 40}, {3, 100, 0, 40}};
    const std::vector<ChipPlace> after = {{3, 0, 50, 40}};
    const std::vector<ChipFrame> frames = interpolateChips(before, after, 0.5f);
    REQUIRE(frames.size() == 2);
    CHECK(frames[0].x == 0); // the first with the first
    CHECK(frames[0].y > 0);
    CHECK(frames[0].y < 50);
    CHECK(frames[1].leaving);
    CHECK(frames[1].x > 0); // on its way into the other
    CHECK(frames[1].x < 100);
    CHECK(frames[1].alpha < 1.0f);
    // A submit: the running fiber's operation goes in flight, a second chip sliding out of the first.
    const std::vector<ChipPlace> running = {{5, 90, 30, 60}};
    const std::vector<ChipPlace> submitted = {{5, 90, 30, 60}, {5, 102, 90, 60}};
    float last_y = -1;
    for (int k = 0; k <= 10; ++k) {
        const std::vector<ChipFrame> f = interpolateChips(running, submitted, static_cast<float>(k) / 10);
        REQUIRE(f.size() == 2);
        CHECK(f[0].y == 30);
        CHECK(f[1].alpha == 1.0f);
        CHECK(f[1].y >= last_y);
        last_y = f[1].y;
        if (k == 0) CHECK(f[1].y == 30);
        if (k == 10) CHECK(f[1].y == 90);
    }
}

TEST_CASE("only a move by one decision animates", "[viewer][motion]") {
    trace::Trace t;
    for (trace::EventKind k : {trace::EventKind::Steal, trace::EventKind::Switch, trace::EventKind::Switch, trace::EventKind::Schedule,
                               trace::EventKind::Switch, trace::EventKind::Submit, trace::EventKind::Complete}) {
        trace::Event e;
        e.kind = k;
        e.time = static_cast<std::int64_t>(t.events.size()) * 100;
        t.events.push_back(e);
    }
    REQUIRE(trace::recordKind(trace::EventKind::Steal).step);
    REQUIRE_FALSE(trace::recordKind(trace::EventKind::Switch).step);
    CHECK(decisionsBetween(t, 0, 3) == 1); // the steal, then the next decision: switches are not decisions
    CHECK(decisionsBetween(t, 3, 0) == 1); // stepping back
    CHECK(decisionsBetween(t, 3, 3) == 0);
    CHECK(decisionsBetween(t, 0, 6) == 2); // counted up to the limit + 1
    CHECK(decisionsBetween(t, 0, 6, 10) == 3);
    CHECK(moveAnimates(true, 1));
    CHECK(moveAnimates(true, 0));
    CHECK_FALSE(moveAnimates(true, 2));  // a jump over several decisions
    CHECK_FALSE(moveAnimates(false, 1)); // the pointer, a click or a drag
}

TEST_CASE("the panel's motion starts on a one-decision step and nowhere else", "[viewer][motion]") {
    // Decisions at events 0, 2 and 4 (a steal, a schedule, a submit), switches between.
    trace::Trace t;
    for (trace::EventKind k : {trace::EventKind::Steal, trace::EventKind::Switch, trace::EventKind::Schedule, trace::EventKind::Switch,
                               trace::EventKind::Submit}) {
        trace::Event e;
        e.kind = k;
        e.time = 1000 + static_cast<std::int64_t>(t.events.size()) * 100;
        t.events.push_back(e);
    }
    const int model = 0;
    const std::vector<ChipPlace> at0 = {{5, 200, 40, 60}};  // in the victim's queue
    const std::vector<ChipPlace> at2 = {{5, 90, 160, 60}};  // on the thief's
    const std::vector<ChipPlace> at4 = {{5, 120, 300, 60}};
    ChipMotion motion;
    // The first picture: shown as it is.
    std::vector<ChipFrame> f = motion.frame(&model, t, 1000, 0, at0, 10.0);
    REQUIRE(f.size() == 1);
    CHECK(f[0].x == 200);
    CHECK_FALSE(motion.moving());
    // One decision on: it starts where it was, slides, and ends exactly at the new place.
    f = motion.frame(&model, t, 1200, 2, at2, 20.0);
    CHECK(motion.moving());
    CHECK(f[0].x == 200);
    CHECK(f[0].y == 40);
    f = motion.frame(&model, t, 1200, 2, at2, 20.0 + kChipMotionSeconds / 2);
    CHECK(f[0].x < 200);
    CHECK(f[0].x > 90);
    f = motion.frame(&model, t, 1200, 2, at2, 20.0 + kChipMotionSeconds);
    CHECK(f[0].x == 90);
    CHECK(f[0].y == 160);
    CHECK_FALSE(motion.moving());
    // Stepping on mid-slide picks the chip up where it is.
    motion.frame(&model, t, 1400, 4, at4, 30.0);
    f = motion.frame(&model, t, 1400, 4, at4, 30.0 + kChipMotionSeconds / 4);
    const float mid_y = f[0].y;
    CHECK(mid_y > 160);
    CHECK(mid_y < 300);
    f = motion.frame(&model, t, 1200, 2, at2, 30.0 + kChipMotionSeconds / 4); // back one decision
    CHECK(motion.moving());
    CHECK(f[0].y == Approx(mid_y));
    f = motion.frame(&model, t, 1200, 2, at2, 31.0);
    CHECK(f[0].y == 160);
    // A jump over two decisions, a click elsewhere (no step), another model: at once.
    motion.frame(&model, t, 1400, 4, at4, 32.0);
    motion.frame(&model, t, 1400, 4, at4, 33.0);
    f = motion.frame(&model, t, 1000, 0, at0, 40.0); // 4 -> 0 crosses two decisions
    CHECK_FALSE(motion.moving());
    CHECK(f[0].x == 200);
    f = motion.frame(&model, t, 1250, fiberscope::analysis::kNoEvent, at2, 41.0); // the pointer, or a click
    CHECK_FALSE(motion.moving());
    CHECK(f[0].x == 90);
    const int other = 0;
    motion.frame(&model, t, 1200, 2, at2, 42.0);
    f = motion.frame(&other, t, 1400, 4, at4, 43.0);
    CHECK_FALSE(motion.moving());
    CHECK(f[0].y == 300);
}
