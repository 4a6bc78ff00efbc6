// The timeline: a time ruler, one lane per worker thread (which fiber ran
// when, idle, parked, with glyphs for scheduling events), one lane per fiber
// (its states), and flow arrows between them. Everything inside a pixel is
// merged into one block (model/lod.hpp), so a frame costs about the same at
// 10 thousand or 10 million events.
#include <imgui.h>

#include <algorithm>
#include <cstring>
#include <array>
#include <cmath>
#include <cstdio>

#include "fiberscope/analysis/lod.hpp"
#include "model/counters.hpp"
#include "model/cpu_samples.hpp"
#include "model/describe.hpp"
#include "model/fibers_in_view.hpp"
#include "model/flow_select.hpp"
#include "model/explain.hpp"
#include "model/queue_rows.hpp"
#include "ui/app.hpp"
#include "ui/colors.hpp"
#include "ui/glyphs.hpp"

namespace fiberscope::viewer {

namespace {

constexpr float kLabelWidth = 132.0f;
constexpr float kRulerHeight = 26.0f;
constexpr float kThreadLaneHeight = 30.0f;
constexpr float kGlyphStrip = 8.0f;
constexpr float kFiberLaneHeight = 17.0f;
constexpr float kSectionGap = 22.0f;

struct Geometry {
    float left = 0;  // x of the lane area's left edge
    float width = 0; // lane area width
    ImVec2 origin;
};

Color stateColor(const Block& block) {
    switch (block.state) {
    case State::Running: return fiberColor(block.fiber);
    case State::Idle: return palette::idle;
    case State::Parked: return palette::parked;
    case State::Ready: return palette::ready;
    case State::Waiting: return palette::waiting;
    case State::Finished: return 0;
    }
    return palette::idle;
}

// Record and flow colours: colors.hpp (recordColor, flowColor).
Color glyphColor(trace::EventKind kind) { return recordColor(kind); }

// Draws a glyph of `kind` centred at (x, y).
void drawGlyph(ImDrawList* dl, trace::EventKind kind, float x, float y, Color c) {
    using K = trace::EventKind;
    switch (kind) {
    case K::Steal:
    case K::StealHalf:
    case K::StealOne:
        dl->AddQuadFilled(ImVec2(x, y - 4), ImVec2(x + 4, y), ImVec2(x, y + 4), ImVec2(x - 4, y), c);
        break;
    case K::WakeupSent:
    case K::WakeupReceived: dl->AddCircleFilled(ImVec2(x, y), 3.0f, c); break;
    case K::Search: dl->AddCircle(ImVec2(x, y), 3.5f, c, 0, 1.5f); break; // a ring: looking around
    case K::CancelRequest:
    case K::CancelDelivered:
        dl->AddLine(ImVec2(x - 3, y - 3), ImVec2(x + 3, y + 3), c, 2.0f);
        dl->AddLine(ImVec2(x - 3, y + 3), ImVec2(x + 3, y - 3), c, 2.0f);
        break;
    case K::Mark:
        dl->AddLine(ImVec2(x, y - 12), ImVec2(x, y + 4), c, 1.5f);
        dl->AddTriangleFilled(ImVec2(x, y - 12), ImVec2(x + 7, y - 9), ImVec2(x, y - 6), c);
        break;
    case K::Submit: dl->AddTriangleFilled(ImVec2(x - 3, y + 3), ImVec2(x + 3, y + 3), ImVec2(x, y - 3), c); break;
    case K::Complete: dl->AddTriangleFilled(ImVec2(x - 3, y - 3), ImVec2(x + 3, y - 3), ImVec2(x, y + 3), c); break;
    // Shapes of their own, so that no two glyph kinds share shape and colour both.
    case K::FiberCreate: // a plus: a fiber born
        dl->AddLine(ImVec2(x - 3, y), ImVec2(x + 3, y), c, 1.5f);
        dl->AddLine(ImVec2(x, y - 3), ImVec2(x, y + 3), c, 1.5f);
        break;
    case K::MutexContended:
    case K::MutexHandoff: dl->AddRectFilled(ImVec2(x - 2.5f, y - 2.5f), ImVec2(x + 2.5f, y + 2.5f), c); break; // a square: a lock
    case K::ConditionWait:
    case K::ConditionWake: dl->AddCircle(ImVec2(x, y), 2.8f, c, 10, 1.5f); break; // a ring: a wait
    default: dl->AddRectFilled(ImVec2(x - 1, y - 3), ImVec2(x + 1, y + 3), c); break;
    }
}

bool drawnKind(trace::EventKind kind) { return glyphColor(kind) != 0; }

std::string describeHit(const Timeline& tl, const trace::Trace& trace, const Hit& hit, bool fiber_lane) {
    const Explanation ex = explain(tl, trace, hit, fiber_lane);
    std::string text = ex.text;
    if (!ex.function.empty()) text += "  [" + ex.function + (ex.file.empty() ? "" : " in " + ex.file) + "]";
    return text;
}

void drawRuler(App& app, ImDrawList* dl, const Geometry& g, float y, const Fonts& fonts) {
    const double step = rulerStep(app.view.nsPerPixel(g.width), 90.0f);
    dl->AddRectFilled(ImVec2(g.origin.x, y), ImVec2(g.left + g.width, y + kRulerHeight), palette::lane_alt);
    const double first = std::ceil(app.view.start / step) * step;
    ImGui::PushFont(fonts.small);
    // Ticks by count, not by `t += step`: far from zero a step below the
    // precision of `t` would never advance it. At most one tick per 45 pixels.
    const double span_steps = (app.view.end - first) / step;
    const long ticks = std::isfinite(span_steps) && span_steps >= 0
                           ? static_cast<long>(std::min<double>(span_steps, g.width / 45.0 + 2)) + 1
                           : 0;
    for (long k = 0; k < ticks; ++k) {
        const double t = first + static_cast<double>(k) * step;
        const float x = app.view.x(t, g.left, g.width);
        dl->AddLine(ImVec2(x, y + kRulerHeight - 8), ImVec2(x, y + kRulerHeight), palette::text_dim);
        const std::string label = formatTick(t, step);
        dl->AddText(ImVec2(x + 3, y + 4), palette::text_dim, label.c_str());
    }
    ImGui::PopFont();
}

// Blocks of one lane between x0..x1 (in pixels), with labels when they fit.
void drawLaneBlocks(App& app, ImDrawList* dl, const Geometry& g, const Lane& lane, float y, float h, bool fiber_lane,
                    std::vector<Block>& scratch, const Timeline* names = nullptr) {
    if (!names) names = app.timeline.get();
    const double npp = app.view.nsPerPixel(g.width);
    visibleBlocks(lane, static_cast<std::int64_t>(app.view.start), static_cast<std::int64_t>(app.view.end), npp, scratch);
    for (const Block& b : scratch) {
        Color c = stateColor(b);
        if (!c) continue;
        float x0 = std::max(app.view.x(static_cast<double>(b.start), g.left, g.width), g.left);
        float x1 = std::min(app.view.x(static_cast<double>(b.end), g.left, g.width), g.left + g.width);
        if (x1 - x0 < 1.0f) x1 = x0 + 1.0f;
        float top = y, bottom = y + h;
        if (b.state == State::Parked) top = y + h * 0.55f;
        if (b.state == State::Idle) top = y + h * 0.35f;
        if (fiber_lane && b.state != State::Running) top = y + h * 0.3f, bottom = y + h * 0.7f;
        const bool dim = app.focus_fiber && b.state == State::Running && b.fiber != app.focus_fiber;
        if (dim) c = darker(c, 0.45f);
        // A merged block (many intervals in one pixel) is drawn a little darker.
        if (b.count > 1 && b.state == State::Running) c = darker(c, 0.85f);
        dl->AddRectFilled(ImVec2(x0, top), ImVec2(x1, bottom), c);
        if (b.state == State::Running && x1 - x0 > 28 && b.count == 1) {
            const FiberLane* f = findFiber(*names, b.fiber);
            const std::string label = f ? f->name() : std::string();
            const char* name = label.c_str();
            const ImVec2 size = ImGui::CalcTextSize(name);
            if (size.x < x1 - x0 - 6) {
                dl->PushClipRect(ImVec2(x0, top), ImVec2(x1, bottom), true);
                dl->AddText(ImVec2(x0 + 4, top + (bottom - top - size.y) / 2), textOn(c), name);
                dl->PopClipRect();
            }
        } else if (b.count > 1 && x1 - x0 > 28 && b.state == State::Running) {
            // Merged runs keep the name of the fiber that ran most of them:
            // "4 runs of dispatcher" (all its), "4 runs, mostly main", or,
            // where that does not fit, the name alone, then "4 runs".
            const FiberLane* f = findFiber(*names, b.fiber);
            const std::string name = f ? f->name() : std::string();
            const std::string runs = std::to_string(b.count) + " runs";
            const bool all_its = b.dominant_ns >= b.busy;
            const std::string texts[] = {name.empty() ? runs : runs + (all_its ? " of " : ", mostly ") + name, name, runs};
            for (const std::string& text : texts) {
                if (text.empty()) continue;
                const ImVec2 size = ImGui::CalcTextSize(text.c_str());
                if (size.x >= x1 - x0 - 6) continue;
                dl->AddText(ImVec2(x0 + 4, top + (bottom - top - size.y) / 2), textOn(c), text.c_str());
                break;
            }
        }
    }
}

// Glyphs of a thread's instants in view, one per kind per pixel.
void drawInstants(App& app, const trace::Trace& trace, ImDrawList* dl, const Geometry& g, const ThreadLane& lane, float y) {
    const auto& instants = lane.instants;
    const auto earlier = [&](const Instant& i, std::int64_t t) { return instantTime(trace, i) < t; };
    auto first = std::lower_bound(instants.begin(), instants.end(), static_cast<std::int64_t>(app.view.start), earlier);
    float last_x[trace::kMaxEventKind + 1];
    std::fill(std::begin(last_x), std::end(last_x), -1e9f);
    // One glyph per kind per 3 pixels: after drawing at x, jump (binary
    // search) to the first instant 3 pixels later, so a frame costs
    // O(pixels x log n) however many instants are in view.
    const double skip_ns = 3.0 * app.view.nsPerPixel(g.width);
    const double per_kind_skip = skip_ns / 8;
    for (auto it = first; it != instants.end();) {
        const std::int64_t time = instantTime(trace, *it);
        if (time > app.view.end) break;
        const trace::EventKind kind = instantKind(trace, *it);
        if (!drawnKind(kind) || kind == trace::EventKind::Mark) { // marks: drawMarks, never merged away
            ++it;
            continue;
        }
        const float x = app.view.x(static_cast<double>(time), g.left, g.width);
        float& previous = last_x[static_cast<int>(kind)];
        if (x - previous >= 3.0f) {
            previous = x;
            drawGlyph(dl, kind, x, y, glyphColor(kind));
        }
        // Dense stretch: leap ahead by a fraction of the skip, so every kind
        // still gets its chance in each 3-pixel step.
        auto next = it + 1;
        if (next != instants.end() && static_cast<double>(instantTime(trace, *next) - time) < per_kind_skip) {
            const std::int64_t target = time + static_cast<std::int64_t>(per_kind_skip);
            auto leap = std::lower_bound(next, std::min(next + 4096, instants.end()), target, earlier);
            if (leap == std::min(next + 4096, instants.end()) && leap != instants.end())
                leap = std::lower_bound(leap, instants.end(), target, earlier);
            next = std::max(next, leap);
        }
        it = next;
    }
}

// The marks of each thread lane (indices into its instants). Marks are few
// and each is a story (a lesson's checkpoint), so they are drawn one by one,
// never merged into a pixel with the thousands of switches around them.
const std::vector<std::vector<std::uint32_t>>& marksOfLanes(TimelineCaches& c, const Timeline& tl, const trace::Trace& trace) {
    auto& marks = c.marks;
    if (c.marks_for != tl.serial || c.marks_lanes != tl.threads.size() || c.marks_flows != tl.flows.size()) {
        marks.assign(tl.threads.size(), {});
        for (std::size_t lane = 0; lane < tl.threads.size(); ++lane) {
            const auto& instants = tl.threads[lane].instants;
            for (std::uint32_t i = 0; i < instants.size(); ++i)
                if (instantKind(trace, instants[i]) == trace::EventKind::Mark) marks[lane].push_back(i);
        }
        c.marks_for = tl.serial;
        c.marks_lanes = tl.threads.size();
        c.marks_flows = tl.flows.size();
    }
    return marks;
}

// A mark label in view, laid out in the label strip under the ruler.
struct MarkLabel {
    float mark_x = 0; // the mark's x
    std::uint32_t lane = 0;
    const std::string* text = nullptr;
    std::int64_t time = 0;
    bool before_view = false; // the last mark left of the view, named at its edge
};

constexpr int kLabelRows = 3;
constexpr float kLabelRowHeight = 14.0f;
constexpr float kLabelGap = 8.0f;

// Every mark label in view, by x; first, the last mark before the view,
// at its left edge, so that a view framed past its checkpoint's mark (or
// panned along a phase) still says which phase it is in.
std::vector<MarkLabel> marksInView(App& app, const Geometry& g) {
    const Timeline& tl = *app.timeline;
    const auto& marks = marksOfLanes(app.timeline_caches, tl, *app.trace);
    std::vector<MarkLabel> labels;
    MarkLabel before{g.left, 0, nullptr, INT64_MIN, true};
    for (std::uint32_t lane = 0; lane < marks.size(); ++lane) {
        const auto& instants = tl.threads[lane].instants;
        for (std::uint32_t index : marks[lane]) {
            const Instant& mark = instants[index];
            const std::int64_t mark_time = instantTime(*app.trace, mark);
            const double at = static_cast<double>(mark_time);
            const std::uint64_t label = instantLabel(*app.trace, mark);
            if (!label || at > app.view.end) continue;
            if (at < app.view.start) {
                if (mark_time >= before.time) {
                    before.lane = lane;
                    before.text = &app.trace->string(label);
                    before.time = mark_time;
                }
                continue;
            }
            labels.push_back({app.view.x(at, g.left, g.width), lane, &app.trace->string(label),
                              mark_time});
        }
    }
    std::stable_sort(labels.begin(), labels.end(), [](const MarkLabel& a, const MarkLabel& b) { return a.mark_x < b.mark_x; });
    if (before.text) labels.insert(labels.begin(), before);
    return labels;
}

// The label strip: every mark's label, in up to kLabelRows rows so that none
// prints over another (layoutLabels); a label with no room is counted on a
// "+N" badge, and hovering the badge lists them. Returns the strip's height.
float drawMarkLabels(App& app, ImDrawList* dl, const Geometry& g, float y, const Fonts& fonts, const std::vector<MarkLabel>& marks) {
    // A trace with marks keeps a row for them even where none is in view, so
    // the lanes do not jump as the view moves; one without has no strip.
    bool any = false;
    for (const auto& lane : marksOfLanes(app.timeline_caches, *app.timeline, *app.trace)) any = any || !lane.empty();
    if (!any) return 0;
    ImGui::PushFont(fonts.small);
    const float badge_width = ImGui::CalcTextSize(" +999").x;
    std::vector<LabelBox> boxes;
    boxes.reserve(marks.size());
    // A label starts just right of its mark, or ends at the strip's right
    // edge where it would run past it (the layout needs no x order for that:
    // a label left of a row's end never goes in that row).
    std::vector<std::string> texts;
    texts.reserve(marks.size());
    for (const MarkLabel& m : marks) {
        texts.push_back(m.before_view ? "< " + *m.text : *m.text);
        const float width = ImGui::CalcTextSize(texts.back().c_str()).x;
        boxes.push_back({std::max(g.left, std::min(m.mark_x + 3, g.left + g.width - width - 2)), width});
    }
    const std::vector<LabelSlot> slots = layoutLabels(boxes, kLabelRows, kLabelGap, badge_width);
    int rows = 1;
    for (const LabelSlot& slot : slots) rows = std::max(rows, slot.row + 1);
    const float height = rows * kLabelRowHeight + 4;
    dl->AddText(ImVec2(g.origin.x, y + 1), palette::text_dim, "MARKS");
    dl->PushClipRect(ImVec2(g.left - 2, y), ImVec2(g.left + g.width, y + height), true);
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    // Every mark gets its tick in the strip, from its label's row down (an
    // elided one: a short tick at the bottom); the labels go over the ticks
    // on a backing of the strip's colour, so a tick never strikes a label.
    for (std::size_t i = 0; i < marks.size(); ++i) {
        if (marks[i].before_view) continue; // its mark is not in view
        const float top = slots[i].row < 0 ? y + height - 4 : y + slots[i].row * kLabelRowHeight;
        dl->AddLine(ImVec2(marks[i].mark_x, top), ImVec2(marks[i].mark_x, y + height), palette::mark, 1.0f);
    }
    const ImU32 backing = ImGui::GetColorU32(ImGuiCol_ChildBg) | IM_COL32_A_MASK;
    for (std::size_t i = 0; i < marks.size(); ++i) {
        const LabelSlot& slot = slots[i];
        if (slot.row < 0) continue;
        const float ty = y + slot.row * kLabelRowHeight;
        dl->AddRectFilled(ImVec2(boxes[i].x - 1, ty), ImVec2(boxes[i].x + slot.width + 1, ty + kLabelRowHeight - 1), backing);
        dl->AddText(ImVec2(boxes[i].x, ty), marks[i].before_view ? palette::text_dim : palette::mark, texts[i].c_str());
        std::string tip = marks[i].before_view ? "(before the view) " + *marks[i].text : *marks[i].text;
        if (slot.hidden > 0) {
            char badge[16];
            std::snprintf(badge, sizeof badge, " +%d", slot.hidden);
            dl->AddText(ImVec2(boxes[i].x + boxes[i].width, ty), palette::text_dim, badge);
            for (std::size_t j = 0; j < marks.size(); ++j)
                if (slots[j].elided_into == static_cast<int>(i)) tip += "\n" + *marks[j].text;
        }
        if (mouse.x >= boxes[i].x && mouse.x < boxes[i].x + slot.width && mouse.y >= ty && mouse.y < ty + kLabelRowHeight) {
            app.hover.event = kNoEvent;
            app.hover.time = marks[i].time;
            app.hover.text = (slot.hidden > 0 ? "marks here:\n" : "mark: ") + tip;
        }
    }
    dl->PopClipRect();
    ImGui::PopFont();
    return height;
}

// The mark glyphs of one thread lane, every one in view.
void drawMarks(ImDrawList* dl, const std::vector<MarkLabel>& marks, std::uint32_t lane, float y) {
    for (const MarkLabel& m : marks)
        if (m.lane == lane && !m.before_view) drawGlyph(dl, trace::EventKind::Mark, m.mark_x, y, glyphColor(trace::EventKind::Mark));
}

// --- CPU samples: what the OS did (model/cpu_samples.hpp) ----------------
constexpr float kCpuStrip = 4.0f;

// The trace's sample lists, built once per trace (and again as a live
// trace grows).
const CpuSamples& cpuSamplesOf(TimelineCaches& c, const trace::Trace& trace) {
    if (c.samples_for != trace.serial || c.samples_events != trace.events.size()) {
        c.samples = buildCpuSamples(trace);
        c.samples_for = trace.serial;
        c.samples_events = trace.events.size();
    }
    return c.samples;
}

// A thin strip under a thread lane: each sample interval coloured by the
// part of it the thread waited, ready, for a CPU (grey: none, red: all of
// it); where several samples share a pixel, the worst is drawn. Hover says
// what the kernel did there in one sentence.
void drawCpuStrip(App& app, ImDrawList* dl, const Geometry& g, const std::vector<CpuSampleSpan>& spans, float y) {
    const auto visible = std::lower_bound(spans.begin(), spans.end(), static_cast<std::int64_t>(app.view.start),
                                          [](const CpuSampleSpan& s, std::int64_t t) { return s.end < t; });
    const auto color = [](double f) { return cpuWaitColor(f); };
    float run_x0 = 0, run_x1 = -1;
    double run_f = 0;
    for (auto it = visible; it != spans.end() && static_cast<double>(it->start) <= app.view.end; ++it) {
        const float x0 = std::max(app.view.x(static_cast<double>(it->start), g.left, g.width), g.left);
        const float x1 = std::min(app.view.x(static_cast<double>(it->end), g.left, g.width), g.left + g.width);
        if (x1 < run_x1 + 1.0f && run_x1 >= 0) { // shares the pixel run so far
            run_x1 = std::max(run_x1, x1);
            run_f = std::max(run_f, it->waitFraction());
            continue;
        }
        if (run_x1 >= 0) dl->AddRectFilled(ImVec2(run_x0, y), ImVec2(std::max(run_x1, run_x0 + 1.0f), y + kCpuStrip - 1), color(run_f));
        run_x0 = x0, run_x1 = x1, run_f = it->waitFraction();
    }
    if (run_x1 >= 0) dl->AddRectFilled(ImVec2(run_x0, y), ImVec2(std::max(run_x1, run_x0 + 1.0f), y + kCpuStrip - 1), color(run_f));
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    if (mouse.y >= y - 1 && mouse.y < y + kCpuStrip + 1 && mouse.x >= g.left && mouse.x < g.left + g.width) {
        const double t = app.view.time(mouse.x, g.left, g.width);
        if (const CpuSampleSpan* s = cpuSampleAt(spans, static_cast<std::int64_t>(t))) {
            app.hover.time = static_cast<std::int64_t>(t);
            app.hover.event = s->event;
            app.hover.text = describeCpuSample(*s);
        }
    }
}

float laneCenter(const std::vector<float>& lane_y, std::uint32_t lane_index) {
    return lane_index < lane_y.size() ? lane_y[lane_index] + kThreadLaneHeight / 2 : -1;
}

// How each flow kind's arrow is stroked (the legend draws the same).
enum class Stroke { Solid, Dashed, Dotted };
Stroke flowStroke(FlowKind kind) {
    switch (kind) {
    case FlowKind::Cancel:
    case FlowKind::Canceled: return Stroke::Dashed; // a cancellation's chain
    case FlowKind::Completion: return Stroke::Dotted; // an operation in flight
    default: return Stroke::Solid;
    }
}

// Kinds drawn at any zoom: few, and each one a story. The others (one per
// spawn, operation, await, hand-off) are many and short: only zoomed in.
bool flowAtAnyZoom(FlowKind kind) {
    return kind == FlowKind::Wakeup || kind == FlowKind::Steal || kind == FlowKind::Cancel || kind == FlowKind::Canceled;
}
constexpr double kFlowDetailNsPerPixel = 2000;
// Arrows per kind per frame: one per 4 pixels of width. More are not
// more legible (side by side they read as one band of colour), and each
// costs ~40 vertices to stroke: at 750 a kind, a dense view spent half its
// frame on arrows (issue 13, `fiberscope benchmark`).
std::size_t flowBudget(float width) { return std::max<std::size_t>(64, static_cast<std::size_t>(width / 4)); }

// One arrow from `a` to `b` (lane centres): a cubic that leaves and arrives
// horizontally, in `stroke`, with a head at `b` unless `b` is a clipped end.
// A clipped end (the flow goes on beyond the view's edge) gets a small ring.
void drawArrow(ImDrawList* dl, ImVec2 a, ImVec2 b, Color line, Color head, float thickness, Stroke stroke, bool clipped_a,
               bool clipped_b) {
    const float bend = std::min(40.0f, std::fabs(b.x - a.x) * 0.5f + 10.0f);
    const ImVec2 p1(a.x + bend, a.y), p2(b.x - bend, b.y);
    if (stroke == Stroke::Solid) {
        dl->AddBezierCubic(a, p1, p2, b, line, thickness);
    } else {
        // Dashes along the curve by arc length (sampled; the curve is on screen).
        const float on = stroke == Stroke::Dashed ? 6.0f : 2.0f, off = stroke == Stroke::Dashed ? 4.0f : 3.0f;
        const float chord = std::hypot(b.x - a.x, b.y - a.y) + 2 * bend;
        const int steps = std::clamp(static_cast<int>(chord / 2.0f), 8, 2000);
        auto at = [&](float t) {
            const float u = 1 - t, w0 = u * u * u, w1 = 3 * u * u * t, w2 = 3 * u * t * t, w3 = t * t * t;
            return ImVec2(w0 * a.x + w1 * p1.x + w2 * p2.x + w3 * b.x, w0 * a.y + w1 * p1.y + w2 * p2.y + w3 * b.y);
        };
        ImVec2 prev = a;
        float phase = 0; // distance into the current on+off period
        for (int k = 1; k <= steps; ++k) {
            const ImVec2 p = at(static_cast<float>(k) / steps);
            const float len = std::hypot(p.x - prev.x, p.y - prev.y);
            if (phase < on) dl->AddLine(prev, p, line, thickness);
            phase = std::fmod(phase + len, on + off);
            prev = p;
        }
    }
    if (clipped_a) dl->AddCircle(a, 3.0f, line, 10, 1.2f);
    if (clipped_b) dl->AddCircle(b, 3.0f, head, 10, 1.2f);
    else dl->AddTriangleFilled(b, ImVec2(b.x - 8, b.y - 4.5f), ImVec2(b.x - 8, b.y + 4.5f), head);
}

// The flows of `tl` (the trace's model, or a compared run's, each with its
// own index) between its lanes at `lane_y`; `hovered`: the record under the
// pointer in that run (kNoEvent: none), whose flows are drawn strong.
void drawFlows(App& app, const Timeline& tl, FlowIndex& index, std::uint32_t hovered, ImDrawList* dl, const Geometry& g,
               const std::vector<float>& lane_y, std::uint32_t focused = 0) {
    ensureFlowIndex(tl, index);
    std::vector<std::uint32_t>& flows = app.timeline_caches.flows;
    flows.clear();
    // Every flow with an end in view (model/flow_select.hpp), per kind the
    // user has on, and the many short kinds only when zoomed in.
    const double npp = app.view.nsPerPixel(g.width);
    const std::int64_t t0 = static_cast<std::int64_t>(std::floor(app.view.start));
    const std::int64_t t1 = static_cast<std::int64_t>(std::ceil(app.view.end));
    for (int k = 0; k < kFlowKindCount; ++k) {
        const FlowKind kind = static_cast<FlowKind>(k);
        if (!(app.flow_kinds & flowBit(kind))) continue;
        if (!flowAtAnyZoom(kind) && npp >= kFlowDetailNsPerPixel) continue;
        selectFlows(tl, index, kind, t0, t1, flowBudget(g.width), flows);
    }
    // An end beyond the view is drawn at the view's edge, in its own lane.
    const float left = g.left, right = g.left + g.width;
    dl->PushClipRect(ImVec2(left - 1, g.origin.y), ImVec2(right + 1, g.origin.y + 1e6f), true);
    struct Drawn {
        ImVec2 from, to;
        Color line, head;
        float width;
        bool clipped0, clipped1;
        FlowKind kind;
    };
    std::vector<Drawn> drawn, faint; // faint: dimmed out of focus, bundled (flow_select.hpp)
    std::vector<BundleArrow> bundle;
    for (std::uint32_t index_of : flows) {
        const Flow f = flowAt(tl, index_of);
        if (f.from.thread >= tl.lane_of_thread.size() || f.to.thread >= tl.lane_of_thread.size()) continue;
        const float y0 = laneCenter(lane_y, tl.lane_of_thread[f.from.thread]);
        const float y1 = laneCenter(lane_y, tl.lane_of_thread[f.to.thread]);
        if (y0 < 0 || y1 < 0) continue;
        const double fx0 = app.view.x(static_cast<double>(f.from.time), g.left, g.width);
        const double fx1 = app.view.x(static_cast<double>(f.to.time), g.left, g.width);
        const bool clipped0 = fx0 < left || fx0 > right, clipped1 = fx1 < left || fx1 > right;
        const float x0 = static_cast<float>(std::clamp<double>(fx0, left, right));
        const float x1 = static_cast<float>(std::clamp<double>(fx1, left, right));
        if (std::fabs(y1 - y0) < 1 && std::fabs(x1 - x0) < 2) continue;
        const bool related = hovered != kNoEvent && (f.from.event == hovered || f.to.event == hovered);
        const Color c = flowColor(f.kind);
        Color line = c, head = c;
        // One passing over the whole view (both ends beyond it) is faint: it says only "something crosses here".
        const bool passing = clipped0 && clipped1;
        // Not what the active checkpoint's story is about: dimmed, not hidden.
        const bool unfocused = focused != 0 && !(focused & flowBit(f.kind));
        if (!related) {
            const bool other_hovered = hovered != kNoEvent;
            line = (c & 0x00FFFFFF) | (Color(other_hovered || unfocused ? 50 : passing ? 90 : 190) << 24);
            head = (c & 0x00FFFFFF) | (Color(other_hovered || unfocused ? 60 : passing ? 90 : 255) << 24);
        }
        const Drawn d{ImVec2(x0, y0), ImVec2(x1, y1), line, head, related ? 2.5f : passing ? 1.0f : 1.5f, clipped0, clipped1, f.kind};
        if (unfocused && !related && !clipped1) { // (a head beyond the view: its own, at the edge)
            faint.push_back(d);
            bundle.push_back({static_cast<int>(f.kind), tl.lane_of_thread[f.to.thread], x0, x1});
        } else {
            drawn.push_back(d);
        }
    }
    std::vector<BundleChoice>& choices = app.timeline_caches.bundle_choices;
    bundleArrows(bundle, choices);
    for (std::size_t i = 0; i < faint.size(); ++i) {
        const Drawn& d = faint[i];
        if (!choices[i].drawn) continue;
        drawArrow(dl, d.from, d.to, d.line, d.head, d.width, flowStroke(d.kind), d.clipped0, d.clipped1);
        if (choices[i].count > 0) { // the bundle's size, by its heads
            const std::string n = "x" + std::to_string(choices[i].count);
            dl->AddText(ImVec2(d.to.x + 4, d.to.y - 14), (d.head & 0x00FFFFFF) | (Color(200) << 24), n.c_str());
        }
    }
    // The story's arrows (and the hovered record's) over the faint ones.
    for (const Drawn& d : drawn) drawArrow(dl, d.from, d.to, d.line, d.head, d.width, flowStroke(d.kind), d.clipped0, d.clipped1);
    dl->PopClipRect();
}

// Mouse: wheel zooms at the pointer, drag pans, shift+drag selects, click pins.
void handleInput(App& app, const Geometry& g, ImVec2 area_min, ImVec2 area_max) {
    ImGuiIO& io = ImGui::GetIO();
    const bool inside = ImGui::IsMouseHoveringRect(area_min, area_max) && ImGui::IsWindowHovered(ImGuiHoveredFlags_ChildWindows);
    bool& selecting = app.timeline_caches.selecting;
    bool& panning = app.timeline_caches.panning;
    bool& dragged = app.timeline_caches.dragged;
    double& select_anchor = app.timeline_caches.select_anchor;
    const double t = app.view.time(io.MousePos.x, g.left, g.width);
    app.pointer_time = inside && io.MousePos.x >= g.left ? static_cast<std::int64_t>(t) : -1;
    // Wheel ticks, drags and arrow keys: one history entry per burst (ViewHistory::interactive).
    const double now = ImGui::GetTime();
    if (inside && io.MouseWheel != 0) {
        app.history.interactive(app.view, now);
        app.view.zoomAt(t, std::pow(0.8, io.MouseWheel));
    }
    if (inside && ImGui::IsMouseClicked(ImGuiMouseButton_Left)) {
        if (io.KeyShift) selecting = true, select_anchor = t;
        else panning = true;
        dragged = false;
    }
    if (ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f)) dragged = true;
    if (panning && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f) && io.MouseDelta.x != 0) {
        app.history.interactive(app.view, now);
        app.view.pan(-static_cast<double>(io.MouseDelta.x) * app.view.nsPerPixel(g.width));
    }
    if (selecting && ImGui::IsMouseDragging(ImGuiMouseButton_Left, 2.0f))
        app.selection = Selection{static_cast<std::int64_t>(std::min(select_anchor, t)),
                                  static_cast<std::int64_t>(std::max(select_anchor, t))};
    if (ImGui::IsMouseReleased(ImGuiMouseButton_Left)) {
        if (panning && !dragged && inside) {
            app.cursor = static_cast<std::int64_t>(t);
            app.focus_fiber = app.hover.fiber;
        }
        panning = selecting = false;
    }
    // (Dear ImGui 1.86: named keys through the backend's key map; Alt+arrows are Back/Forward.)
    if (inside && !io.KeyAlt && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) {
        app.history.interactive(app.view, now);
        app.view.pan(-app.view.span() * 0.1);
    }
    if (inside && !io.KeyAlt && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) {
        app.history.interactive(app.view, now);
        app.view.pan(app.view.span() * 0.1);
    }
    if (app.timeline) app.view.clamp(shownSpan(app).t0, shownSpan(app).t1);
}

// Counter tracks (issue 14): under the thread lanes, one small area chart per
// metric (model/counters.hpp), computed once per model. Each pixel shows its
// min solid and its max translucent above it (decimateCounter: the true
// extremes, however many changes fall in the pixel), scaled to the largest
// value in view, which is labelled.
constexpr float kCounterHeight = 18.0f;
constexpr float kCounterGap = 2.0f;

const Counters& countersOf(TimelineCaches& c, const Timeline& tl) {
    if (c.counters_for != tl.serial || c.counters_items != tl.replay.items.size() || c.counters_fibers != tl.fibers.size() ||
        c.counters_end != tl.end_time || c.counters_threads != tl.threads.size()) {
        c.counters = Counters(); // (freed first: both would be held at once)
        c.counters = computeCounters(tl, drawnCounters(tl)); // only the series the tracks draw
        c.counters_threads = tl.threads.size();
        c.counters_for = tl.serial;
        c.counters_items = tl.replay.items.size();
        c.counters_fibers = tl.fibers.size();
        c.counters_end = tl.end_time;
    }
    return c.counters;
}

// The narrated tour's records (App::panels.tour.lit): a ring around each
// one's place on its thread's glyph strip, in white, over the glyphs and
// arrows.
void drawTourRings(App& app, ImDrawList* dl, const Geometry& g, const std::vector<float>& lane_y) {
    const Timeline& tl = *app.timeline;
    const trace::Trace& trace = *app.trace;
    for (const std::uint32_t i : app.panels.tour.lit) {
        if (i >= trace.events.size()) continue;
        const trace::Event e = trace.events[i];
        if (static_cast<double>(e.time) < app.view.start || static_cast<double>(e.time) > app.view.end) continue;
        if (e.thread >= tl.lane_of_thread.size()) continue;
        const std::uint32_t lane = tl.lane_of_thread[e.thread];
        if (lane >= lane_y.size() || lane_y[lane] < 0) continue;
        const float x = app.view.x(static_cast<double>(e.time), g.left, g.width);
        dl->AddCircle(ImVec2(x, lane_y[lane] + kThreadLaneHeight + kGlyphStrip / 2), 7.0f, palette::tour_ring, 16, 2.0f);
    }
}

// The queue strip under each worker's lane: the fibers waiting in its
// ready queue, one chip per stay (analysis::queueStaysIn), in the fiber's
// colour, from its schedule to the switch that ran it or the steal that
// moved its whole queue to another worker (the chip goes on under the
// thief's lane, with an orange end at the move). A stay takes the lowest
// row free when it was queued, laid out from where its lane's queue was
// empty, so it keeps its row as the view pans (model/queue_rows.hpp). At most kQueueRows rows: a
// deeper queue draws its later fibers in the last row. A view holding more
// than kQueueStayLimit stays draws a note instead (the counter tracks keep
// the queue's length at any zoom).
constexpr float kQueueRow = 9.0f;
constexpr std::int32_t kQueueRows = 4;
constexpr std::size_t kQueueStayLimit = 4000;

// The strip's rows for a lane (0: no strip): its deepest queue, at most
// kQueueRows; threads that never queue a fiber have none.
std::int32_t queueRowsOf(App& app, const Timeline& tl, std::size_t lane) {
    if (!app.show_queues || tl.threads.size() > kMaxReadyTracks) return 0; // (countersOf: per-lane lengths up to kMaxReadyTracks)
    const Counters& counters = countersOf(app.timeline_caches, tl);
    if (lane >= counters.ready.size()) return 0;
    return std::min(kQueueRows, counters.ready[lane].peak);
}

void drawQueueStrip(App& app, const Timeline& tl, ImDrawList* dl, const Geometry& g, std::size_t lane, float y,
                    std::int32_t rows, bool stays_fit, ImVec2 mouse) {
    const float height = static_cast<float>(rows) * kQueueRow;
    dl->AddText(ImVec2(g.origin.x + 14, y + height / 2 - 7), palette::text_dim, "ready queue");
    const std::vector<analysis::QueueStay>& stays = app.timeline_caches.queue_stays;
    if (!stays_fit) {
        dl->AddText(ImVec2(g.left + 4, y + height / 2 - 7), palette::text_dim, "(zoom in to see each fiber in the queue)");
        return;
    }
    const auto first = std::lower_bound(stays.begin(), stays.end(), lane,
                                        [](const analysis::QueueStay& s, std::size_t l) { return s.lane < l; });
    const auto last = std::upper_bound(first, stays.end(), lane,
                                       [](std::size_t l, const analysis::QueueStay& s) { return l < s.lane; });
    // (The stays start where the queues were empty, before the view: each
    // keeps its row as the view pans, queue_rows.hpp.)
    std::vector<std::int32_t>& row_of = app.timeline_caches.queue_rows;
    assignQueueRows(std::span<const analysis::QueueStay>(stays.data() + (first - stays.begin()), static_cast<std::size_t>(last - first)), rows,
                    row_of);
    dl->PushClipRect(ImVec2(g.left, y), ImVec2(g.left + g.width, y + height), true);
    const analysis::QueueStay* hovered = nullptr;
    for (auto it = first; it != last; ++it) {
        const analysis::QueueStay& s = *it;
        if (s.end != analysis::kOpenEnd && static_cast<double>(s.end) < app.view.start) continue; // laid out, not in view
        const std::size_t row = static_cast<std::size_t>(row_of[static_cast<std::size_t>(it - first)]);
        const float x0 = app.view.x(static_cast<double>(std::max<std::int64_t>(s.start, static_cast<std::int64_t>(app.view.start))), g.left, g.width);
        const double end = s.end == analysis::kOpenEnd ? app.view.end : std::min(static_cast<double>(s.end), app.view.end);
        const float x1 = std::max(x0 + 2.0f, app.view.x(end, g.left, g.width));
        const float top = y + static_cast<float>(row) * kQueueRow + 1, bottom = top + kQueueRow - 2;
        const Color c = fiberColor(s.fiber);
        const bool focused = app.focus_fiber == s.fiber || app.hover.fiber == s.fiber;
        dl->AddRectFilled(ImVec2(x0, top), ImVec2(x1, bottom), focused ? c : darker(c, 0.8f), 2.0f);
        // (A darker orange than the steal's glyph and arrow: the strip is not a record.)
        if (s.moved_in) dl->AddRectFilled(ImVec2(x0, top), ImVec2(std::min(x1, x0 + 3), bottom), darker(palette::steal, 0.8f));
        if (s.moved_out) dl->AddRectFilled(ImVec2(std::max(x0, x1 - 3), top), ImVec2(x1, bottom), darker(palette::steal, 0.8f));
        if (x1 - x0 > 40) {
            const FiberLane* f = findFiber(tl, s.fiber);
            const std::string name = f && f->named() ? f->name() : "#" + std::to_string(s.fiber);
            dl->PushClipRect(ImVec2(x0 + 3, top), ImVec2(x1 - 3, bottom), true);
            dl->AddText(nullptr, kQueueRow + 1, ImVec2(x0 + 4, top - 1.5f), textOn(c), name.c_str());
            dl->PopClipRect();
        }
        if (mouse.y >= top && mouse.y < bottom + 2 && mouse.x >= x0 && mouse.x < x1) hovered = &s;
    }
    dl->PopClipRect();
    if (!hovered) return;
    const analysis::QueueStay& s = *hovered;
    const std::string worker = tl.threads[lane].name;
    std::string text = fiberLabel(tl, s.fiber) + " waits in " + worker + "'s ready queue";
    text += s.moved_in ? ", moved here by a steal of the queue it was in at " : ", queued at ";
    text += formatTime(s.start);
    if (s.end == analysis::kOpenEnd) text += ", still there when the recording ends";
    else
        text += (s.moved_out ? ", until a steal moves this queue at " : ", until it is taken to run at ") + formatTime(s.end) + " (" +
                formatDuration(static_cast<double>(s.end - s.start)) + ")";
    app.hover.text = text;
    app.hover.fiber = s.fiber;
    app.hover.event = s.event;
    app.hover.time = static_cast<std::int64_t>(app.view.time(mouse.x, g.left, g.width));
}

// Draws the tracks from `y`; returns the height they took.
float drawCounters(App& app, ImDrawList* dl, const Geometry& g, float y, const Fonts& fonts, ImVec2 mouse) {
    const Timeline& tl = *app.timeline;
    const Counters& counters = countersOf(app.timeline_caches, tl);
    struct Track {
        std::string label;
        const CounterSeries* series;
        Color color;
    };
    std::vector<Track> tracks;
    if (tl.threads.size() <= kMaxReadyTracks) {
        for (std::size_t i = 0; i < tl.threads.size(); ++i)
            // Only threads that run fibers have a ready queue (not the trace writer's samples, not a blocking pool).
            if (!tl.threads[i].lane.intervals.empty() && !isCpuSamplerLane(tl.threads[i]))
                tracks.push_back({"ready " + tl.threads[i].name, &counters.ready[i], palette::counter_ready});
    } else {
        tracks.push_back({"ready (all queues)", &counters.ready_total, palette::counter_ready});
    }
    tracks.push_back({"ops in flight", &counters.in_flight_total, palette::counter_flight});
    tracks.push_back({"fibers alive", &counters.fibers_alive, palette::counter_alive});

    const int pixels = std::max(1, static_cast<int>(g.width));
    const double npp = (app.view.end - app.view.start) / pixels;
    std::vector<CounterRange>& ranges = app.timeline_caches.ranges;
    ImGui::PushFont(fonts.small);
    const float top0 = y;
    for (std::size_t k = 0; k < tracks.size(); ++k) {
        const Track& track = tracks[k];
        decimateCounter(*track.series, app.view.start, npp, pixels, ranges);
        std::int32_t view_max = 0;
        for (const CounterRange& r : ranges) view_max = std::max(view_max, r.max);
        const std::int32_t scale = std::max(1, view_max);
        dl->AddRectFilled(ImVec2(g.left, y), ImVec2(g.left + g.width, y + kCounterHeight), k % 2 ? palette::lane_alt : palette::lane);
        dl->PushClipRect(ImVec2(g.origin.x, y), ImVec2(g.left - 4, y + kCounterHeight), true);
        dl->AddText(ImVec2(g.origin.x + 4, y + 2), palette::text_dim, track.label.c_str());
        dl->PopClipRect();
        const float base = y + kCounterHeight - 1, room = kCounterHeight - 3;
        const auto height = [&](std::int32_t v) { return room * static_cast<float>(std::max(v, 0)) / static_cast<float>(scale); };
        const Color envelope = (track.color & 0x00FFFFFF) | (Color(110) << 24);
        // Runs of pixels with one (min, max) are one rectangle each.
        for (int p = 0; p < pixels;) {
            int q = p + 1;
            while (q < pixels && ranges[static_cast<std::size_t>(q)].min == ranges[static_cast<std::size_t>(p)].min &&
                   ranges[static_cast<std::size_t>(q)].max == ranges[static_cast<std::size_t>(p)].max)
                ++q;
            const CounterRange& r = ranges[static_cast<std::size_t>(p)];
            const float x0 = g.left + static_cast<float>(p), x1 = g.left + static_cast<float>(q);
            if (r.max > 0) {
                const float hmax = std::max(1.0f, height(r.max)), hmin = r.min > 0 ? std::max(1.0f, height(r.min)) : 0.0f;
                if (hmax > hmin) dl->AddRectFilled(ImVec2(x0, base - hmax), ImVec2(x1, base - hmin), envelope);
                if (hmin > 0) dl->AddRectFilled(ImVec2(x0, base - hmin), ImVec2(x1, base), track.color);
            }
            p = q;
        }
        char peak[32];
        std::snprintf(peak, sizeof peak, "max %d", view_max);
        const ImVec2 size = ImGui::CalcTextSize(peak);
        const ImVec2 at(g.left + g.width - size.x - 4, y + (kCounterHeight - size.y) / 2);
        dl->AddRectFilled(ImVec2(at.x - 3, y + 2), ImVec2(g.left + g.width, y + kCounterHeight - 2), palette::lane_alt); // readable over the chart
        dl->AddText(at, palette::text_dim, peak);
        // Hover: the value under the pointer, and the pixel's extremes if it holds changes.
        if (mouse.y >= y && mouse.y < y + kCounterHeight && mouse.x >= g.left && mouse.x < g.left + g.width) {
            const std::size_t p = std::min(ranges.size() - 1, static_cast<std::size_t>(mouse.x - g.left));
            const double t = app.view.time(mouse.x, g.left, g.width);
            char text[160];
            const CounterRange& r = ranges[p];
            if (r.min == r.max)
                std::snprintf(text, sizeof text, "%s: %d at %s (max in view %d, in the trace %d)", track.label.c_str(), r.max,
                              formatTime(static_cast<std::int64_t>(t)).c_str(), view_max, track.series->peak);
            else
                std::snprintf(text, sizeof text, "%s: %d to %d in this pixel at %s (max in view %d, in the trace %d)", track.label.c_str(),
                              r.min, r.max, formatTime(static_cast<std::int64_t>(t)).c_str(), view_max, track.series->peak);
            app.hover.text = text;
            app.hover.time = static_cast<std::int64_t>(t);
        }
        y += kCounterHeight + kCounterGap;
    }
    ImGui::PopFont();
    return y - top0;
}

} // namespace

// The legend draws with the timeline's own shapes (ui/glyphs.hpp).
void drawRecordGlyph(ImDrawList* dl, trace::EventKind kind, float x, float y) { drawGlyph(dl, kind, x, y, glyphColor(kind)); }

void drawFlowSample(ImDrawList* dl, FlowKind kind, ImVec2 from, ImVec2 to, bool enabled) {
    Color c = flowColor(kind);
    if (!enabled) c = (c & 0x00FFFFFF) | (Color(60) << 24);
    drawArrow(dl, from, to, c, c, 1.5f, flowStroke(kind), false, false);
}

void drawTimeline(App& app, const Fonts& fonts, float width, float height) {
    const Timeline& tl = *app.timeline;
    ImGui::BeginChild("timeline", ImVec2(width, height), true, ImGuiWindowFlags_NoScrollWithMouse);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 win_min = ImGui::GetWindowPos();
    const ImVec2 win_size = ImGui::GetWindowSize();
    Geometry g;
    g.origin = ImGui::GetCursorScreenPos();
    g.left = g.origin.x + kLabelWidth;
    g.width = std::max(50.0f, win_min.x + win_size.x - g.left - 12.0f);
    app.hover = Hover{};
    const ImVec2 mouse = ImGui::GetIO().MousePos;

    // Fixed part: ruler and thread lanes.
    float y = g.origin.y;
    drawRuler(app, dl, g, y, fonts);
    y += kRulerHeight + 4;
    const std::vector<MarkLabel> marks = marksInView(app, g);
    y += drawMarkLabels(app, dl, g, y, fonts, marks);
    ImGui::PushFont(fonts.small);
    dl->AddText(ImVec2(g.origin.x, y), palette::text_dim, "THREADS");
    ImGui::PopFont();
    y += 16;
    std::vector<float> lane_y(tl.threads.size(), -1);
    std::vector<Block>& scratch = app.timeline_caches.blocks;
    const CpuSamples& cpu_samples = cpuSamplesOf(app.timeline_caches, *app.trace);
    // (Laid out from where the queues were empty, queue_rows.hpp; from the
    // view's start if that history alone is more than the limit: one lane
    // busy for long must not hide every strip at every zoom.)
    const std::int64_t view_from = static_cast<std::int64_t>(std::floor(app.view.start));
    const std::int64_t view_to = static_cast<std::int64_t>(std::ceil(app.view.end)) + 1;
    const bool stays_fit =
        app.show_queues && tl.threads.size() <= kMaxReadyTracks &&
        (analysis::queueStaysIn(tl, queueLayoutStart(countersOf(app.timeline_caches, tl).ready, view_from, kQueueStayLimit),
                                view_to, kQueueStayLimit, app.timeline_caches.queue_stays) ||
         analysis::queueStaysIn(tl, view_from, view_to, kQueueStayLimit, app.timeline_caches.queue_stays));
    for (std::size_t i = 0; i < tl.threads.size(); ++i) {
        const ThreadLane& lane = tl.threads[i];
        if (isCpuSamplerLane(lane)) continue; // the trace writer's samples: drawn under the lanes they describe
        lane_y[i] = y;
        dl->AddRectFilled(ImVec2(g.left, y), ImVec2(g.left + g.width, y + kThreadLaneHeight + kGlyphStrip),
                          i % 2 ? palette::lane_alt : palette::lane);
        dl->AddText(ImVec2(g.origin.x + 4, y + 7), palette::text, lane.name.c_str());
        drawLaneBlocks(app, dl, g, lane.lane, y, kThreadLaneHeight, false, scratch);
        drawInstants(app, *app.trace, dl, g, lane, y + kThreadLaneHeight + kGlyphStrip / 2);
        drawMarks(dl, marks, static_cast<std::uint32_t>(i), y + kThreadLaneHeight + kGlyphStrip / 2);
        // Hover: a glyph first, else the block.
        if (mouse.y >= y && mouse.y < y + kThreadLaneHeight + kGlyphStrip && mouse.x >= g.left) {
            const double npp = app.view.nsPerPixel(g.width);
            const double t = app.view.time(mouse.x, g.left, g.width);
            const Hit hit = hitThreadLane(tl, *app.trace, i, static_cast<std::int64_t>(t), npp);
            app.hover.thread = static_cast<std::int32_t>(lane.thread);
            app.hover.time = static_cast<std::int64_t>(t);
            app.hover.event = hit.event;
            if (hit.kind == HitKind::Interval) app.hover.fiber = lane.lane.intervals[hit.index].fiber;
            else if (hit.kind == HitKind::Instant) app.hover.fiber = instantFiber(*app.trace, lane, hit.index);
            if (hit.kind != HitKind::None) app.hover.text = describeHit(tl, *app.trace, hit, false);
        }
        if (const std::vector<CpuSampleSpan>* spans = cpu_samples.of(lane.thread)) {
            drawCpuStrip(app, dl, g, *spans, y + kThreadLaneHeight + kGlyphStrip);
            y += kCpuStrip;
        }
        if (const std::int32_t rows = queueRowsOf(app, tl, i); rows > 0) {
            drawQueueStrip(app, tl, dl, g, i, y + kThreadLaneHeight + kGlyphStrip + 1, rows, stays_fit, mouse);
            y += static_cast<float>(rows) * kQueueRow + 1;
        }
        y += kThreadLaneHeight + kGlyphStrip + 3;
    }
    FlowIndex& flow_index = app.timeline_caches.flow_index; // one per run shown
    FlowIndex& compare_flow_index = app.timeline_caches.compare_flow_index;
    if (app.show_flows) drawFlows(app, tl, flow_index, app.hover.event, dl, g, lane_y, focusedFlows(app));
    drawTourRings(app, dl, g, lane_y);
    if (app.show_counters && app.timeline) y += 2 + drawCounters(app, dl, g, y + 2, fonts, mouse);
    // A second run of the same lesson, on the same time axis (Compare).
    if (app.compare_timeline) {
        y += 6;
        // Lined up on the active checkpoint: the compared run is drawn (and
        // hit-tested) through a view moved by the shift, so its mark falls
        // under this run's; the view is put back below.
        const std::optional<std::int64_t> shift = compareShift(app);
        const TimeView own_view = app.view;
        if (shift) app.view.pan(-static_cast<double>(*shift));
        ImGui::PushFont(fonts.small);
        std::string title = "COMPARE: the same lesson with " + app.compare_label;
        if (shift)
            title += ", lined up on " + app.active_checkpoint + " (" + (*shift >= 0 ? "+" : "-") +
                     formatDuration(static_cast<double>(*shift >= 0 ? *shift : -*shift)) + ")";
        dl->AddText(ImVec2(g.origin.x, y), palette::cursor, title.c_str());
        ImGui::PopFont();
        y += 16;
        const float compare_top = y;
        const Timeline& other = *app.compare_timeline;
        std::vector<float> other_lane_y(other.threads.size(), -1);
        std::uint32_t other_hovered = kNoEvent; // a compared record under the pointer: its arrows are drawn strong
        for (std::size_t i = 0; i < other.threads.size(); ++i) {
            const ThreadLane& lane = other.threads[i];
            if (isCpuSamplerLane(lane)) continue; // as in the first run: no lane for the trace writer's samples
            other_lane_y[i] = y;
            dl->AddRectFilled(ImVec2(g.left, y), ImVec2(g.left + g.width, y + kThreadLaneHeight + kGlyphStrip),
                              i % 2 ? palette::lane_alt : palette::lane);
            dl->AddText(ImVec2(g.origin.x + 4, y + 7), palette::text_dim, lane.name.c_str());
            drawLaneBlocks(app, dl, g, lane.lane, y, kThreadLaneHeight, false, scratch, &other);
            drawInstants(app, *app.compare_trace, dl, g, lane, y + kThreadLaneHeight + kGlyphStrip / 2);
            // Hover explains the compared run's records and blocks as the first run's.
            if (app.compare_trace && mouse.y >= y && mouse.y < y + kThreadLaneHeight + kGlyphStrip && mouse.x >= g.left) {
                const double npp = app.view.nsPerPixel(g.width);
                const double t = app.view.time(mouse.x, g.left, g.width);
                const Hit hit = hitThreadLane(other, *app.compare_trace, i, static_cast<std::int64_t>(t), npp);
                if (hit.kind != HitKind::None) app.hover.text = "(compared run) " + describeHit(other, *app.compare_trace, hit, false);
                other_hovered = hit.event;
            }
            y += kThreadLaneHeight + kGlyphStrip + 3;
        }
        // Its flows, with the same kinds on (View > Flow kinds, the legend) as the first run's.
        if (app.show_flows) drawFlows(app, other, compare_flow_index, other_hovered, dl, g, other_lane_y, focusedFlows(app));
        // Its checkpoints: a line across its lanes, labelled, as the first run's marks are.
        ImGui::PushFont(fonts.small);
        const trace::Trace& ct = *app.compare_trace;
        std::size_t lo = 0, hi = ct.events.size(); // the first record in view
        while (lo < hi) {
            const std::size_t mid = lo + (hi - lo) / 2;
            if (static_cast<double>(ct.events[mid].time) < app.view.start) lo = mid + 1;
            else hi = mid;
        }
        for (std::size_t i = lo; i < ct.events.size(); ++i) {
            const trace::Event e = ct.events[i];
            if (static_cast<double>(e.time) > app.view.end) break;
            if (e.kind != trace::EventKind::Mark) continue;
            const std::string& label = ct.string(e.arg[0]);
            if (label.rfind(kCheckpointPrefix, 0) != 0) continue;
            const float x = app.view.x(static_cast<double>(e.time), g.left, g.width);
            dl->AddLine(ImVec2(x, compare_top), ImVec2(x, y), palette::mark & 0xB0FFFFFF, 1.0f);
            dl->AddText(ImVec2(x + 3, compare_top), palette::mark, label.c_str() + std::strlen(kCheckpointPrefix));
        }
        ImGui::PopFont();
        app.view = own_view;
    }
    const float threads_bottom = y;

    // Fiber lanes: scrolled, only those alive in the view.
    y += kSectionGap - 8;
    ImGui::PushFont(fonts.small);
    // The fibers alive in the view (model/fibers_in_view.hpp): how many, and
    // the ones in the rows the scroll shows, without a pass over every fiber.
    FibersInViewIndex& fibers_index = app.timeline_caches.fibers_index;
    std::vector<std::uint32_t>& shown = app.timeline_caches.fiber_rows; // tl.fibers indices of rows first_row, first_row + 1, ...
    float& scroll = app.timeline_caches.fiber_scroll;
    const float fibers_top = y + 16;
    const float fibers_bottom = win_min.y + win_size.y - 8;
    const bool lanes_shown = app.show_fiber_lanes && fibers_bottom > fibers_top + 10;
    const std::size_t rows_fit = lanes_shown ? static_cast<std::size_t>((fibers_bottom - fibers_top) / kFiberLaneHeight) + 2 : 0;
    std::size_t first_row = static_cast<std::size_t>(scroll / kFiberLaneHeight);
    const std::size_t alive = fibersInView(tl, fibers_index, app.view.start, app.view.end, first_row, rows_fit, shown);
    char title[64];
    std::snprintf(title, sizeof title, "FIBERS (%zu in view of %zu)", alive, tl.fibers.size());
    dl->AddText(ImVec2(g.origin.x, y), palette::text_dim, title);
    ImGui::PopFont();
    y += 16;
    if (lanes_shown) {
        const float total = alive * kFiberLaneHeight;
        const float visible = fibers_bottom - fibers_top;
        if (ImGui::IsMouseHoveringRect(ImVec2(g.origin.x, fibers_top), ImVec2(g.origin.x + kLabelWidth, fibers_bottom)))
            scroll -= ImGui::GetIO().MouseWheel * kFiberLaneHeight * 3;
        scroll = std::clamp(scroll, 0.0f, std::max(0.0f, total - visible));
        if (static_cast<std::size_t>(scroll / kFiberLaneHeight) != first_row) {
            first_row = static_cast<std::size_t>(scroll / kFiberLaneHeight);
            fibersInView(tl, fibers_index, app.view.start, app.view.end, first_row, rows_fit, shown);
        }
        dl->PushClipRect(ImVec2(g.origin.x, fibers_top), ImVec2(g.left + g.width, fibers_bottom), true);
        for (std::size_t k = 0; k < shown.size(); ++k) {
            const std::size_t row = first_row + k;
            const float ly = fibers_top + row * kFiberLaneHeight - scroll;
            if (ly > fibers_bottom) break;
            const std::uint32_t lane_index = shown[k];
            const FiberLane& f = tl.fibers[lane_index];
            if (row % 2) dl->AddRectFilled(ImVec2(g.left, ly), ImVec2(g.left + g.width, ly + kFiberLaneHeight), palette::lane);
            const Color swatch = fiberColor(f.fiber());
            dl->AddRectFilled(ImVec2(g.origin.x + 2, ly + 4), ImVec2(g.origin.x + 10, ly + kFiberLaneHeight - 4), swatch);
            dl->PushClipRect(ImVec2(g.origin.x, ly), ImVec2(g.left - 4, ly + kFiberLaneHeight), true);
            dl->AddText(fonts.small, fonts.small->FontSize, ImVec2(g.origin.x + 14, ly + 2),
                        f.fiber() == app.focus_fiber ? palette::cursor : palette::text, f.name().c_str());
            dl->PopClipRect();
            drawLaneBlocks(app, dl, g, f.lane, ly + 1, kFiberLaneHeight - 2, true, scratch);
            if (mouse.y >= ly && mouse.y < ly + kFiberLaneHeight && mouse.x >= g.left && mouse.y < fibers_bottom) {
                const double t = app.view.time(mouse.x, g.left, g.width);
                const Hit hit = hitFiberLane(tl, lane_index, static_cast<std::int64_t>(t), app.view.nsPerPixel(g.width), true);
                app.hover.fiber = f.fiber();
                app.hover.time = static_cast<std::int64_t>(t);
                app.hover.event = hit.event;
                if (hit.kind != HitKind::None) app.hover.text = describeHit(tl, *app.trace, hit, true);
            }
        }
        dl->PopClipRect();
    }

    // Selection, cursor, pointer line over everything.
    const float top = g.origin.y, bottom = win_min.y + win_size.y;
    if (app.selection) {
        const float x0 = app.view.x(static_cast<double>(app.selection->t0), g.left, g.width);
        const float x1 = app.view.x(static_cast<double>(app.selection->t1), g.left, g.width);
        dl->AddRectFilled(ImVec2(x0, top), ImVec2(x1, bottom), palette::selection);
    }
    if (app.cursor >= 0) {
        const float x = app.view.x(static_cast<double>(app.cursor), g.left, g.width);
        dl->AddLine(ImVec2(x, top), ImVec2(x, bottom), palette::cursor, 1.5f);
    }
    if (app.pointer_time >= 0 && mouse.y < threads_bottom)
        dl->AddLine(ImVec2(mouse.x, top), ImVec2(mouse.x, bottom), palette::text_dim & 0x80FFFFFF);
    handleInput(app, g, ImVec2(g.origin.x, g.origin.y), ImVec2(win_min.x + win_size.x, win_min.y + win_size.y));
    {
        const bool over = ImGui::IsWindowHovered(ImGuiHoveredFlags_ChildWindows) && mouse.x >= win_min.x &&
                          mouse.x < win_min.x + win_size.x && mouse.y >= win_min.y && mouse.y < win_min.y + win_size.y;
        const std::int64_t event_time =
            app.hover.event != kNoEvent && app.hover.event < app.trace->events.size() ? app.trace->events[app.hover.event].time : -1;
        if (!hoverShown(app.view, over || app.headless, event_time)) app.hover = Hover{};
    }
    if (!app.hover.text.empty() && !app.headless) {
        // Placed so that it stays inside the timeline's area (never over the
        // side panel): right of and below the pointer where it fits, else
        // left of or above it, and clamped to the area; wrapped narrower
        // than 420 px when the area is narrow.
        const ImVec2 pad = ImGui::GetStyle().WindowPadding;
        const ImVec2 area_min = win_min, area_max(win_min.x + win_size.x, win_min.y + win_size.y);
        const float wrap = std::max(80.0f, std::min(420.0f, area_max.x - area_min.x - 2 * pad.x - 4));
        const ImVec2 text_size = ImGui::CalcTextSize(app.hover.text.c_str(), nullptr, false, wrap - pad.x);
        const ImVec2 tip(text_size.x + 2 * pad.x + 2, text_size.y + 2 * pad.y + 2);
        float tx = mouse.x + 16, ty = mouse.y + 20;
        if (tx + tip.x > area_max.x) tx = mouse.x - 8 - tip.x;
        if (ty + tip.y > area_max.y) ty = mouse.y - 8 - tip.y;
        tx = std::max(area_min.x, std::min(tx, area_max.x - tip.x));
        ty = std::max(area_min.y, std::min(ty, area_max.y - tip.y));
        ImGui::SetNextWindowPos(ImVec2(tx, ty));
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(wrap);
        ImGui::TextUnformatted(app.hover.text.c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
    ImGui::EndChild();
}

} // namespace fiberscope::viewer
