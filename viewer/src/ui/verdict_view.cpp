// The verdict banner: under the toolbar, a trace that contradicts itself
// (model/verdict.hpp) is said to, in a dark red band across the window,
// before anything else is read off its picture: how many contradictions,
// and the first (its time, thread, rule and what it says). A click on the
// band goes there (revealViolation: the cursor, the view and the record's
// row in the event table). A compared run gets a band of its own.
//
// Why a band and not a line of text like the warnings under it: it is the
// one message that says the picture itself may be wrong, and it is a
// button; a band of its own colour is both seen and clickable as one.
#include <imgui.h>

#include <algorithm>
#include <string>

#include "ui/app.hpp"
#include "ui/colors.hpp"

namespace fiberscope::viewer {

namespace {

// One band: `text` wrapped to the window's width; true when clicked.
bool drawBand(const char* id, const std::string& text, const char* tooltip) {
    const float width = std::max(1.0f, ImGui::GetContentRegionAvail().x); // (an InvisibleButton must have a size)
    const ImVec2 pad(8, 3);
    const ImVec2 at = ImGui::GetCursorScreenPos();
    const float wrap = width - 2 * pad.x;
    const ImVec2 size(width, ImGui::CalcTextSize(text.c_str(), nullptr, false, wrap).y + 2 * pad.y);
    const bool clicked = ImGui::InvisibleButton(id, size);
    const bool hovered = ImGui::IsItemHovered();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(at, ImVec2(at.x + size.x, at.y + size.y), hovered ? palette::violation_hovered : palette::violation, 3.0f);
    dl->AddText(ImGui::GetFont(), ImGui::GetFontSize(), ImVec2(at.x + pad.x, at.y + pad.y), palette::text, text.c_str(), nullptr, wrap);
    if (hovered) {
        ImGui::SetMouseCursor(ImGuiMouseCursor_Hand);
        ImGui::SetTooltip("%s", tooltip);
    }
    return clicked;
}

} // namespace

void drawVerdict(App& app) {
    // verdict.line is escaped already (trace::verificationWarning: terminalSafe).
    if (app.verdict.violations > 0 &&
        drawBand("##verdict", "The picture may be wrong: " + app.verdict.line + ". Click to go to the first.",
                 "Go to the first contradiction: the cursor moves to its time and the Events panel selects its record. "
                 "The records before it may be missing or out of order; 'fiberscope verify FILE' lists every one."))
        revealViolation(app);
    if (app.compare_trace && app.compare_verdict.violations > 0 &&
        drawBand("##compare-verdict",
                 "The compared run (" + app.compare_label + ") may be drawn wrong: " + app.compare_verdict.line +
                     ". Click to go to the first.",
                 "Move the cursor to the compared run's first contradiction ('fiberscope verify FILE' lists every one)."))
        revealComparedViolation(app);
}

} // namespace fiberscope::viewer
