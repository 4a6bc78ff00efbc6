// The event table: every record, filtered by kind, thread and fiber (by name
// search), with each row explained; double-click a row to jump there.
//
// The explanation wraps (no sentence is cut off), so rows differ in height
// and ImGuiListClipper (one height for all) cannot place them: the table
// keeps each row's height as measured when it was last drawn (rows never
// drawn count as about 150 characters), places rows by the sums
// of those heights, and draws only the ones in view, so 200000 rows stay
// cheap. Records of two fibers or threads show them as from -> to. The table
// follows the cursor: when it moves, the row at its time is highlighted and
// scrolled into view, unless the user scrolled the table in the last second.
// That row is the last record at the cursor's time, or the one a jump
// selected there (App::selected_event: the verdict banner's contradiction,
// which may share its instant with records of other threads).
#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>

#include "model/describe.hpp"
#include "model/explain.hpp"
#include "ui/app.hpp"
#include "ui/colors.hpp"

namespace fiberscope::viewer {

namespace {

// The two ends of a record that names two fibers or threads (empty: none).
std::pair<std::string, std::string> fromTo(const Timeline& tl, const trace::Event& e) {
    using K = trace::EventKind;
    const std::string here = workerLabel(workerOf(tl, e.thread));
    switch (e.kind) {
    case K::Switch:
    case K::MutexHandoff: return {fiberLabel(tl, e.arg[0]), fiberLabel(tl, e.arg[1])};
    case K::FiberCreate: return {fiberLabel(tl, e.arg[1]), fiberLabel(tl, e.arg[0])}; // parent -> child
    case K::Await: return {fiberLabel(tl, e.arg[0]), fiberLabel(tl, e.arg[1])};      // waiter -> awaited
    case K::Steal:
    case K::StealHalf:
    case K::StealOne: return {workerLabel(static_cast<std::int64_t>(e.arg[1])), here}; // victim -> thief
    case K::WakeupSent: return {here, workerLabel(static_cast<std::int64_t>(e.arg[0]))};
    case K::WakeupReceived: return {workerLabel(static_cast<std::int64_t>(e.arg[0])), here};
    case K::Schedule:
        if (e.small != static_cast<std::uint8_t>(trace::ScheduleHow::OwnQueue) &&
            e.small != static_cast<std::uint8_t>(trace::ScheduleHow::RunNext)) // a hand-off to another worker
            return {here, workerLabel(static_cast<std::int64_t>(e.arg[2]))};
        return {};
    default: return {};
    }
}

} // namespace

void drawEventTable(App& app) {
    const Timeline& tl = *app.timeline;
    const trace::Trace& trace = *app.trace;
    bool changed = false;
    if (ImGui::BeginCombo("kinds", "choose kinds")) {
        // First, so that they are reached without scrolling past 40 kinds.
        if (ImGui::Button("all")) app.filter.kinds = kAllKinds, changed = true;
        ImGui::SameLine();
        if (ImGui::Button("none")) app.filter.kinds = 0, changed = true;
        ImGui::Separator();
        for (unsigned k = 1; k <= trace::kMaxEventKind; ++k) {
            const trace::RecordKindInfo& info = trace::kRecordKinds[k];
            // String definitions are not events, nor is a mark's source
            // location (a property of the mark before it, not listed).
            if (info.special || info.kind == trace::EventKind::SourceLocation) continue;
            bool on = app.filter.kinds & kindBit(info.kind);
            if (ImGui::Checkbox(info.name, &on)) {
                app.filter.kinds ^= kindBit(info.kind);
                changed = true;
            }
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", info.explanation);
        }
        ImGui::EndCombo();
    }
    const std::string thread_label = app.filter.thread < 0 ? "any thread" : threadLabel(tl, static_cast<std::uint32_t>(app.filter.thread));
    if (ImGui::BeginCombo("thread", thread_label.c_str())) {
        if (ImGui::Selectable("any thread", app.filter.thread < 0)) app.filter.thread = -1, changed = true;
        for (const ThreadLane& lane : tl.threads)
            if (ImGui::Selectable(lane.name.c_str(), app.filter.thread == lane.thread)) app.filter.thread = lane.thread, changed = true;
        ImGui::EndCombo();
    }
    if (ImGui::InputTextWithHint("fiber", "search fiber names", app.fiber_search, sizeof app.fiber_search)) {
        const auto found = findFibers(tl, app.fiber_search);
        app.filter.any_fiber = app.fiber_search[0] == 0 || found.empty();
        app.filter.fiber = found.empty() ? 0 : found.front();
        changed = true;
    }
    if (!app.filter.any_fiber) ImGui::TextDisabled("showing %s", fiberLabel(tl, app.filter.fiber).c_str());
    if (app.selection) {
        app.filter.t0 = app.selection->t0;
        app.filter.t1 = app.selection->t1;
    } else {
        app.filter.t0 = INT64_MIN;
        app.filter.t1 = INT64_MAX;
    }
    // Row heights (0: not measured yet) and the rows' tops (see the top),
    // kept in App::panels.events.
    EventTableState& table = app.panels.events;
    std::int64_t& last_t0 = table.last_t0;
    std::int64_t& last_t1 = table.last_t1;
    std::vector<float>& heights = table.heights;
    std::vector<float>& tops = table.tops;
    float& wrap_width = table.wrap_width;
    bool& tops_dirty = table.tops_dirty;
    const auto forgetHeights = [&] {
        heights.assign(app.table_rows.size(), 0.0f);
        tops_dirty = true;
    };
    if (changed || app.table_dirty || last_t0 != app.filter.t0 || last_t1 != app.filter.t1) {
        filterEvents(tl, trace, listedEvents(app.filter), app.table_rows, 200000);
        app.table_dirty = false;
        last_t0 = app.filter.t0;
        last_t1 = app.filter.t1;
        forgetHeights();
    }
    if (heights.size() != app.table_rows.size()) forgetHeights();
    ImGui::TextDisabled("%zu events%s", app.table_rows.size(), app.table_rows.size() == 200000 ? " (first 200000)" : "");
    // Time, thread and kind share a narrow cell (three lines), and from -> to
    // opens the explanation, so that it keeps most of the panel's width: a
    // row of a 420 px panel wraps to about three lines, not ten (with four
    // columns it had 100 px, and four rows fit). It gets at least 160 px; a
    // narrower panel scrolls sideways.
    constexpr float kFixed = 112, kWhatMin = 160;
    const ImGuiStyle& style = ImGui::GetStyle();
    const float outer = ImGui::GetContentRegionAvail().x;
    const bool sideways = outer < kFixed + kWhatMin + style.ScrollbarSize + 8;
    // The explanation's wrap width: the column's, as far as it is known before
    // the column is drawn (a scrollbar counted in, so one appearing changes
    // nothing); the cell corrects it when the user resizes a column. Text is
    // wrapped at exactly this width, so the heights measured are the heights drawn.
    if (wrap_width <= 0)
        wrap_width = std::max(60.0f, (sideways ? kFixed + kWhatMin : outer) - kFixed - 8 * style.CellPadding.x - style.ScrollbarSize - 6);
    if (!ImGui::BeginTable("events", 2,
                           ImGuiTableFlags_ScrollY | (sideways ? ImGuiTableFlags_ScrollX : 0) | ImGuiTableFlags_RowBg |
                               ImGuiTableFlags_Resizable | ImGuiTableFlags_BordersInnerV,
                           ImVec2(0, 0), sideways ? kFixed + kWhatMin : 0.0f))
        return;
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("time, thread, kind", ImGuiTableColumnFlags_WidthFixed, kFixed);
    ImGui::TableSetupColumn("what happened", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableHeadersRow();
    const std::size_t n = app.table_rows.size();
    const float pad = ImGui::GetStyle().CellPadding.y;
    const float one_line = ImGui::GetTextLineHeight() + 2 * pad;
    const float min_h = 3 * ImGui::GetTextLineHeight() + 2 * pad; // time, thread and kind: three lines
    // A row's height from its explanation wrapped at the column's width (kept).
    const auto measure = [&](std::size_t r, const std::string& what) {
        const float text_h = ImGui::CalcTextSize(what.c_str(), nullptr, false, wrap_width).y;
        const float h = std::max(min_h, text_h + 2 * pad);
        if (heights[r] != h) {
            heights[r] = h;
            tops_dirty = true;
        }
        return h;
    };
    // Row tops from the heights.
    const auto placeRows = [&] {
        if (!tops_dirty && tops.size() == n + 1) return;
        // Rows not measured yet: about 150 characters of explanation each
        // (not the average of those measured, which would move the rows
        // around the cursor's as more are measured).
        const float lines = std::max(2.0f, std::round(150 * ImGui::CalcTextSize("x").x / wrap_width));
        const float guess = std::max(min_h, lines * ImGui::GetTextLineHeight() + 2 * pad);
        tops.resize(n + 1);
        tops[0] = 0;
        for (std::size_t r = 0; r < n; ++r) tops[r + 1] = tops[r] + (heights[r] > 0 ? heights[r] : guess);
        tops_dirty = false;
    };
    placeRows();
    // The row at the cursor: the selected record's while the cursor is at
    // its time, else the last one at or before its time.
    std::int64_t& last_cursor = table.last_cursor;
    int& follow_frames = table.follow_frames;
    double& user_scrolled_at = table.user_scrolled_at;
    float& last_scroll = table.last_scroll;
    float& requested_scroll = table.requested_scroll;
    std::size_t cursor_row = SIZE_MAX;
    if (app.cursor >= 0 && n > 0) {
        const auto it = std::upper_bound(app.table_rows.begin(), app.table_rows.end(), app.cursor,
                                         [&](std::int64_t t, std::uint32_t index) { return t < trace.events[index].time; });
        cursor_row = it == app.table_rows.begin() ? 0 : static_cast<std::size_t>(it - app.table_rows.begin()) - 1;
        if (app.selected_event < trace.events.size() && trace.events[app.selected_event].time == app.cursor)
            for (std::size_t r = cursor_row + 1; r-- > 0 && trace.events[app.table_rows[r]].time == app.cursor;)
                if (app.table_rows[r] == app.selected_event) {
                    cursor_row = r;
                    break;
                }
    }
    app.table_cursor_event = cursor_row != SIZE_MAX ? app.table_rows[cursor_row] : kNoEvent;
    const double now = ImGui::GetTime();
    const float scroll = ImGui::GetScrollY();
    // The user scrolls: the wheel over the table, or the scroll moved without our asking.
    if ((ImGui::IsWindowHovered() && ImGui::GetIO().MouseWheel != 0) || (scroll != last_scroll && scroll != requested_scroll))
        user_scrolled_at = now;
    requested_scroll = -1;
    if (app.cursor != last_cursor) {
        last_cursor = app.cursor;
        follow_frames = now - user_scrolled_at > 1.0 ? 3 : 0; // a few frames: heights settle as rows are measured
    }
    const float header = one_line;
    const float view_h = std::max(one_line, ImGui::GetWindowHeight() - header);
    if (follow_frames > 0 && cursor_row != SIZE_MAX) {
        --follow_frames;
        // Measure the rows around it first, so that it lands where it is drawn.
        for (std::size_t r = cursor_row > 40 ? cursor_row - 40 : 0; r < std::min(n, cursor_row + 40); ++r)
            measure(r, explain(tl, trace, app.table_rows[r]).text);
        placeRows();
        const float top = tops[cursor_row], bottom = tops[cursor_row + 1];
        if (top < scroll || bottom > scroll + view_h) {
            requested_scroll = std::max(0.0f, top - (view_h - (bottom - top)) / 2);
            ImGui::SetScrollY(requested_scroll);
        }
    }
    last_scroll = scroll;
    // The rows in view, with spacers for those above and below.
    const std::size_t first = static_cast<std::size_t>(std::upper_bound(tops.begin(), tops.end(), scroll) - tops.begin());
    std::size_t row = first > 0 ? first - 1 : 0;
    if (row > 0) ImGui::TableNextRow(ImGuiTableRowFlags_None, tops[row]);
    float drawn_to = tops[row];
    for (; row < n && tops[row] < scroll + view_h + one_line; ++row) {
        const std::uint32_t index = app.table_rows[row];
        const trace::Event& e = trace.events[index];
        const auto [from, to] = fromTo(tl, e);
        const std::string what = (from.empty() ? std::string() : from + " -> " + to + "\n") + explain(tl, trace, index).text;
        const float h = measure(row, what);
        ImGui::TableNextRow(ImGuiTableRowFlags_None, h);
        if (row == cursor_row) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, (palette::cursor & 0x00FFFFFF) | (Color(70) << 24));
        ImGui::TableNextColumn();
        ImGui::PushID(static_cast<int>(row));
        const std::string when =
            formatTime(e.time) + "\n" + workerLabel(workerOf(tl, e.thread)) + "\n" + trace::eventKindName(e.kind);
        if (ImGui::Selectable(when.c_str(), app.hover.event == index, ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowDoubleClick,
                              ImVec2(0, h - 2 * pad)) &&
            ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
            revealTime(app, e.time);
            last_cursor = app.cursor; // it is in view already: no scrolling to it
        }
        // What the kind records, from the record table.
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", trace::recordKind(e.kind).explanation);
        ImGui::PopID();
        ImGui::TableNextColumn();
        const float avail = ImGui::GetContentRegionAvail().x;
        if (avail > 40 && (avail < wrap_width - 0.5f || avail > wrap_width + 40)) {
            wrap_width = avail; // a column was resized: measure every row anew
            forgetHeights();
        }
        ImGui::PushTextWrapPos(ImGui::GetCursorPosX() + wrap_width);
        ImGui::TextUnformatted(what.c_str());
        ImGui::PopTextWrapPos();
        drawn_to = tops[row + 1];
    }
    if (row < n) ImGui::TableNextRow(ImGuiTableRowFlags_None, tops[n] - drawn_to);
    ImGui::EndTable();
}

} // namespace fiberscope::viewer
