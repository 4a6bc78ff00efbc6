// The event table: every record, filtered by kind, thread and fiber (by name
// search), with each row explained; double-click a row to jump there.
#include <imgui.h>

#include <cstdio>

#include "model/describe.hpp"
#include "model/hit.hpp"
#include "ui/app.hpp"

namespace fiberscope::viewer {

void drawEventTable(App& app) {
    const Timeline& tl = *app.timeline;
    const trace::Trace& trace = *app.trace;
    bool changed = false;
    if (ImGui::BeginCombo("kinds", "choose kinds")) {
        for (unsigned k = 1; k <= trace::kMaxEventKind; ++k) {
            const trace::RecordKindInfo& info = trace::kRecordKinds[k];
            if (info.special) continue; // string definitions are not events
            bool on = app.filter.kinds & kindBit(info.kind);
            if (ImGui::Checkbox(info.name, &on)) {
                app.filter.kinds ^= kindBit(info.kind);
                changed = true;
            }
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", info.explanation);
        }
        if (ImGui::Button("all")) app.filter.kinds = kAllKinds, changed = true;
        ImGui::SameLine();
        if (ImGui::Button("none")) app.filter.kinds = 0, changed = true;
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
    static std::int64_t last_t0 = 0, last_t1 = 0;
    if (changed || app.table_dirty || last_t0 != app.filter.t0 || last_t1 != app.filter.t1) {
        filterEvents(tl, trace, app.filter, app.table_rows, 200000);
        app.table_dirty = false;
        last_t0 = app.filter.t0;
        last_t1 = app.filter.t1;
    }
    ImGui::TextDisabled("%zu events%s", app.table_rows.size(), app.table_rows.size() == 200000 ? " (first 200000)" : "");
    if (!ImGui::BeginTable("events", 4, ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_Resizable |
                                            ImGuiTableFlags_BordersInnerV))
        return;
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("time", ImGuiTableColumnFlags_WidthFixed, 95);
    ImGui::TableSetupColumn("thread", ImGuiTableColumnFlags_WidthFixed, 70);
    ImGui::TableSetupColumn("kind", ImGuiTableColumnFlags_WidthFixed, 110);
    ImGui::TableSetupColumn("what happened");
    ImGui::TableHeadersRow();
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(app.table_rows.size()));
    while (clipper.Step()) {
        for (int row = clipper.DisplayStart; row < clipper.DisplayEnd; ++row) {
            const std::uint32_t index = app.table_rows[static_cast<std::size_t>(row)];
            const trace::Event& e = trace.events[index];
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::PushID(row);
            if (ImGui::Selectable(formatTime(e.time).c_str(), app.hover.event == index,
                                  ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowDoubleClick) &&
                ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
                revealTime(app, e.time);
            }
            ImGui::PopID();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(workerLabel(workerOf(tl, e.thread)).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(trace::eventKindName(e.kind));
            // What the kind records, from the record table.
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", trace::recordKind(e.kind).explanation);
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(explain(tl, trace, index).text.c_str());
        }
    }
    ImGui::EndTable();
}

} // namespace fiberscope::viewer
