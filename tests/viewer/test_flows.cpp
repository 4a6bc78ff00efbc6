// Flows and their colours (issue 14, "Causes connected"), without a window:
//   - the cause-and-effect palette: every two record glyph colours, and every
//     two flow arrow colours, are far apart in CIELAB (CIE76 delta-E), for
//     normal vision and for simulated protanopia, deuteranopia and
//     tritanopia (so they differ in lightness too, not in hue alone);
//   - the model's flowsInRange returns a flow that starts before the range
//     and ends in it, and one that starts in it and ends after it;
//   - the viewer's choice of arrows (model/flow_select.hpp) keeps every flow
//     with an end in view, prefers them to flows passing over the view, and
//     thins evenly when there are too many.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <set>
#include <vector>

#include "../support/decoded_trace.hpp"
#include "model/flow_select.hpp"
#include "fiberscope/analysis/timeline.hpp"
#include "ui/colors.hpp"

using namespace fiberscope;
using namespace fiberscope::viewer;
using trace::EventKind;

namespace {

struct Lab {
    double L, a, b;
};

double linear(unsigned channel) {
    const double c = channel / 255.0;
    return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

// Colour-vision deficiency simulation on linear RGB (Machado, Oliveira and
// Fernandes 2009, severity 1.0).
using Matrix = std::array<std::array<double, 3>, 3>;
constexpr Matrix kProtanopia{{{0.152286, 1.052583, -0.204868}, {0.114503, 0.786281, 0.099216}, {-0.003882, -0.048116, 1.051998}}};
constexpr Matrix kDeuteranopia{{{0.367322, 0.860646, -0.227968}, {0.280085, 0.672501, 0.047413}, {-0.011820, 0.042940, 0.968881}}};
constexpr Matrix kTritanopia{{{1.255528, -0.076749, -0.178779}, {-0.078411, 0.930809, 0.147602}, {0.004733, 0.691367, 0.303900}}};

// sRGB (D65) to CIELAB, optionally as seen with a deficiency.
Lab lab(Color c, const Matrix* deficiency = nullptr) {
    double rgb[3] = {linear(c & 0xFF), linear((c >> 8) & 0xFF), linear((c >> 16) & 0xFF)};
    if (deficiency) {
        double seen[3];
        for (int i = 0; i < 3; ++i)
            seen[i] = std::clamp((*deficiency)[i][0] * rgb[0] + (*deficiency)[i][1] * rgb[1] + (*deficiency)[i][2] * rgb[2], 0.0, 1.0);
        std::copy(seen, seen + 3, rgb);
    }
    const double x = (0.4124 * rgb[0] + 0.3576 * rgb[1] + 0.1805 * rgb[2]) / 0.95047;
    const double y = 0.2126 * rgb[0] + 0.7152 * rgb[1] + 0.0722 * rgb[2];
    const double z = (0.0193 * rgb[0] + 0.1192 * rgb[1] + 0.9505 * rgb[2]) / 1.08883;
    const auto f = [](double t) { return t > 216.0 / 24389 ? std::cbrt(t) : (24389.0 / 27 * t + 16) / 116; };
    return {116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))};
}

double deltaE76(const Lab& p, const Lab& q) { return std::sqrt(std::pow(p.L - q.L, 2) + std::pow(p.a - q.a, 2) + std::pow(p.b - q.b, 2)); }

// Every two colours of `colors` at least `normal` apart, and `deficient` apart as each deficiency sees them.
void checkApart(const std::vector<std::pair<Color, const char*>>& colors, double normal, double deficient) {
    for (std::size_t i = 0; i < colors.size(); ++i)
        for (std::size_t j = i + 1; j < colors.size(); ++j) {
            INFO(colors[i].second << " vs " << colors[j].second);
            CHECK(deltaE76(lab(colors[i].first), lab(colors[j].first)) >= normal);
            for (const Matrix* m : {&kProtanopia, &kDeuteranopia, &kTritanopia}) {
                INFO((m == &kProtanopia ? "protanopia" : m == &kDeuteranopia ? "deuteranopia" : "tritanopia"));
                CHECK(deltaE76(lab(colors[i].first, m), lab(colors[j].first, m)) >= deficient);
            }
        }
}

std::vector<std::pair<Color, const char*>> recordGlyphColors() {
    // One colour per family of records (a wake-up's sent and received, a
    // cancel's request and delivery... share theirs, and their glyph shape).
    std::vector<std::pair<Color, const char*>> colors;
    std::set<Color> seen;
    for (unsigned k = 1; k <= trace::kMaxEventKind; ++k) {
        const auto kind = static_cast<EventKind>(k);
        const Color c = recordColor(kind);
        if (c && seen.insert(c).second) colors.push_back({c, trace::eventKindName(kind)});
    }
    return colors;
}

std::vector<std::pair<Color, const char*>> flowColors() {
    std::vector<std::pair<Color, const char*>> colors;
    for (int k = 0; k < kFlowKindCount; ++k) colors.push_back({flowColor(static_cast<FlowKind>(k)), flowKindName(static_cast<FlowKind>(k))});
    return colors;
}

constexpr double kApart = 20;          // CIE76: clearly different colours
constexpr double kApartDeficient = 10; // as a dichromat sees them: still told apart

} // namespace

TEST_CASE("the record glyph colours are told apart, also with a colour-vision deficiency", "[viewer][flows][colors]") {
    const auto colors = recordGlyphColors();
    // schedule, steal, wake-up, submit, complete, cancel, spawn, mutex, condition, mark, search
    CHECK(colors.size() == 11);
    checkApart(colors, kApart, kApartDeficient);
    // The pairs the old palette confused.
    CHECK(deltaE76(lab(palette::submit), lab(palette::complete)) >= 40);
    CHECK(deltaE76(lab(palette::steal), lab(palette::cancel)) >= 40);
}

TEST_CASE("every flow kind has its own colour, told apart, also with a colour-vision deficiency", "[viewer][flows][colors]") {
    const auto colors = flowColors();
    std::set<Color> distinct;
    for (const auto& c : colors) distinct.insert(c.first);
    CHECK(distinct.size() == static_cast<std::size_t>(kFlowKindCount));
    checkApart(colors, kApart, kApartDeficient);
    CHECK(deltaE76(lab(palette::wakeup), lab(palette::await)) >= 40);
    // Arrows end on glyphs: every colour of either set against every other, too.
    auto all = recordGlyphColors();
    for (const auto& c : colors)
        if (std::none_of(all.begin(), all.end(), [&](const auto& d) { return d.first == c.first; })) all.push_back(c);
    checkApart(all, kApart, kApartDeficient);
    // Each is visible on the timeline's dark background.
    for (const auto& c : all) {
        INFO(c.second);
        CHECK(deltaE76(lab(c.first), lab(palette::background)) >= 50);
    }
}

namespace {

using test::ev;
using test::makeTrace;
std::uint8_t sw(trace::SwitchReason r) { return static_cast<std::uint8_t>(r); }
std::uint8_t how(trace::ScheduleHow h) { return static_cast<std::uint8_t>(h); }

// Worker 0 queues fiber 4 at 12; worker 1 steals it at 21 (the steal flow:
// 12 on worker 0 -> 21 on worker 1); worker 0 wakes worker 2 at 30 (-> 35).
trace::Trace stealTrace() {
    using trace::ScheduleHow;
    using trace::SwitchReason;
    return makeTrace(3, {
                            ev(0, 0, EventKind::ThreadStart, 0, 0),
                            ev(0, 1, EventKind::ThreadStart, 1, 0),
                            ev(0, 2, EventKind::ThreadStart, 2, 0),
                            ev(1, 1, EventKind::Park),
                            ev(1, 2, EventKind::Park),
                            ev(12, 0, EventKind::FiberCreate, 4, 1, 0),
                            ev(12, 0, EventKind::Schedule, 4, 1, 0, how(ScheduleHow::OwnQueue)),
                            ev(20, 1, EventKind::Unpark, 0),
                            ev(21, 1, EventKind::Steal, 4, 0),
                            ev(21, 1, EventKind::Switch, 0, 4, 0, sw(SwitchReason::Idle)),
                            ev(30, 0, EventKind::FiberCreate, 5, 1, 0),
                            ev(30, 0, EventKind::Schedule, 5, 1, 2, how(ScheduleHow::IdleHandoff)),
                            ev(30, 0, EventKind::WakeupSent, 2),
                            ev(35, 2, EventKind::WakeupReceived, 0),
                            ev(35, 2, EventKind::Unpark, 1),
                            ev(36, 2, EventKind::Switch, 0, 5, 0, sw(SwitchReason::Idle)),
                            ev(50, 0, EventKind::Mark, 0),
                        });
}

bool holdsKind(const Timeline& tl, const std::vector<std::uint32_t>& flows, FlowKind kind) {
    return std::any_of(flows.begin(), flows.end(), [&](std::uint32_t i) { return analysis::flowAt(tl, i).kind == kind; });
}

} // namespace

TEST_CASE("flowsInRange returns flows with only one end in the range", "[viewer][flows]") {
    const trace::Trace trace = stealTrace();
    const Timeline tl = buildTimeline(trace);
    const auto flows = analysis::flowsOf(tl);
    const auto steal = std::find_if(flows.begin(), flows.end(), [](const Flow& f) { return f.kind == FlowKind::Steal; });
    REQUIRE(steal != flows.end());
    REQUIRE(steal->from.time == 12);
    REQUIRE(steal->to.time == 21);
    const unsigned steals = flowBit(FlowKind::Steal);
    std::vector<std::uint32_t> out;
    flowsInRange(tl, 20, 25, out, steals); // from before the range, to inside it
    CHECK(out.size() == 1);
    CHECK(holdsKind(tl, out, FlowKind::Steal));
    flowsInRange(tl, 10, 13, out, steals); // from inside, to after
    CHECK(out.size() == 1);
    flowsInRange(tl, 14, 19, out, steals); // over the whole range: it overlaps too
    CHECK(out.size() == 1);
    flowsInRange(tl, 22, 40, out, steals); // after it
    CHECK(out.empty());
    flowsInRange(tl, 0, 11, out, steals); // before it
    CHECK(out.empty());
    // With every kind: the wake-up (30 -> 35) ends in [33, 40], the steal does not.
    flowsInRange(tl, 33, 40, out);
    CHECK(holdsKind(tl, out, FlowKind::Wakeup));
    CHECK(!holdsKind(tl, out, FlowKind::Steal));
}

TEST_CASE("the viewer draws every flow with an end in view, before any that only pass over it", "[viewer][flows]") {
    const trace::Trace trace = stealTrace();
    const Timeline built = buildTimeline(trace);
    FlowIndex index;
    buildFlowIndex(built, index);
    std::vector<std::uint32_t> out;
    // Zoomed onto the thief's end of the steal (its cause at 12 is far left).
    selectFlows(built, index, FlowKind::Steal, 20, 22, 750, out);
    CHECK(out.size() == 1);
    out.clear();
    selectFlows(built, index, FlowKind::Steal, 11, 13, 750, out); // onto the victim's end
    CHECK(out.size() == 1);
    out.clear();
    selectFlows(built, index, FlowKind::Steal, 15, 18, 750, out); // between its ends: it passes over
    CHECK(out.size() == 1);
    out.clear();
    selectFlows(built, index, FlowKind::Steal, 25, 40, 750, out);
    CHECK(out.empty());

    // A made-up model: 200 steals passing over [400, 500], and three with an end in it.
    Timeline tl;
    std::vector<Flow> made;
    for (int i = 0; i < 200; ++i) made.push_back(Flow{FlowKind::Steal, FlowEnd{i, 0, 0}, FlowEnd{1000 + i, 0, 1}});
    made.push_back(Flow{FlowKind::Steal, FlowEnd{300, 0, 0}, FlowEnd{450, 0, 1}}); // cause before, effect in view
    made.push_back(Flow{FlowKind::Steal, FlowEnd{450, 0, 0}, FlowEnd{460, 0, 1}}); // both in view
    made.push_back(Flow{FlowKind::Steal, FlowEnd{480, 0, 0}, FlowEnd{5000, 0, 1}}); // effect after
    made.push_back(Flow{FlowKind::Wakeup, FlowEnd{455, 0, 0}, FlowEnd{456, 0, 1}}); // another kind
    std::stable_sort(made.begin(), made.end(), [](const Flow& a, const Flow& b) { return a.from.time < b.from.time; });
    for (const Flow& f : made) tl.flows.push_back(f); // the model keeps them by from.time
    buildFlowIndex(tl, index);
    const auto endInView = [&](std::uint32_t i) {
        const Flow f = analysis::flowAt(tl, i);
        return (f.from.time >= 400 && f.from.time <= 500) || (f.to.time >= 400 && f.to.time <= 500);
    };
    // A budget of 5: the three with an end in view, then two passing over.
    selectFlows(tl, index, FlowKind::Steal, 400, 500, 5, out);
    REQUIRE(out.size() == 5);
    CHECK(std::count_if(out.begin(), out.end(), endInView) == 3);
    CHECK(std::all_of(out.begin(), out.end(), [&](std::uint32_t i) { return analysis::flowAt(tl, i).kind == FlowKind::Steal; }));
    CHECK(std::set<std::uint32_t>(out.begin(), out.end()).size() == out.size());
    // Enough budget: the three, and kMaxPassingOver of those passing over, each once.
    out.clear();
    selectFlows(tl, index, FlowKind::Steal, 400, 500, 750, out);
    CHECK(out.size() == 3 + kMaxPassingOver);
    CHECK(std::count_if(out.begin(), out.end(), endInView) == 3);
    CHECK(std::set<std::uint32_t>(out.begin(), out.end()).size() == out.size());
    // A budget of 2: still only flows with an end in view (thinned), none passing over.
    out.clear();
    selectFlows(tl, index, FlowKind::Steal, 400, 500, 2, out);
    CHECK(!out.empty());
    CHECK(out.size() <= 2);
    CHECK(std::all_of(out.begin(), out.end(), endInView));

    // Many in view, a small budget: thinned evenly over the view, not the first ones only.
    Timeline dense;
    for (int i = 0; i < 10000; ++i) dense.flows.push_back(Flow{FlowKind::Spawn, FlowEnd{i, 0, 0}, FlowEnd{i + 5, 0, 1}});
    buildFlowIndex(dense, index);
    out.clear();
    selectFlows(dense, index, FlowKind::Spawn, 0, 10010, 100, out);
    CHECK(out.size() <= 100);
    CHECK(out.size() >= 50);
    std::int64_t latest = 0;
    for (std::uint32_t i : out) latest = std::max(latest, analysis::flowAt(dense, i).from.time);
    CHECK(latest > 9000);
}

// Faint arrows into one point are bundled (flow_select.hpp): lesson 8's
// 199 wake-ups read at once draw four arrows, spread over their tails, and
// a count; a few, or ones landing apart, are each drawn.
TEST_CASE("faint arrows into one point are drawn as a bundle with its size", "[viewer][flows]") {
    using namespace fiberscope::viewer;
    std::vector<BundleArrow> arrows;
    for (int i = 0; i < 199; ++i) arrows.push_back({0, 1, 100.0f + static_cast<float>(i), 500.0f + static_cast<float>(i % 3)});
    arrows.push_back({0, 1, 50.0f, 520.0f}); // apart: its own
    arrows.push_back({1, 1, 60.0f, 500.0f}); // another kind
    for (int i = 0; i < 3; ++i) arrows.push_back({0, 0, 10.0f * i, 300.0f}); // three into one point of lane 0: few
    std::vector<BundleChoice> choices;
    bundleArrows(arrows, choices);
    REQUIRE(choices.size() == arrows.size());
    std::size_t drawn = 0, counted = 0;
    float lo = 1e9f, hi = -1e9f;
    for (std::size_t i = 0; i < 199; ++i) {
        if (!choices[i].drawn) continue;
        ++drawn;
        lo = std::min(lo, arrows[i].x0);
        hi = std::max(hi, arrows[i].x0);
        if (choices[i].count) {
            CHECK(choices[i].count == 199);
            ++counted;
        }
    }
    CHECK(drawn == kBundleDrawn);
    CHECK(counted == 1);
    CHECK(lo == 100.0f); // the fan keeps its extent
    CHECK(hi == 298.0f);
    for (std::size_t i = 199; i < arrows.size(); ++i) {
        CHECK(choices[i].drawn);
        CHECK(choices[i].count == 0);
    }
}
