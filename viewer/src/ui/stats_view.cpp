// Statistics of the selected range (or the whole view): event counts,
// per-thread utilisation bars and the schedule-to-run latency histogram.
#include <imgui.h>

#include <algorithm>
#include <cstdio>

#include "model/describe.hpp"
#include "model/range_stats.hpp"
#include "ui/app.hpp"
#include "ui/colors.hpp"

namespace fiberscope::viewer {

void drawSelectionStats(App& app) {
    const std::int64_t t0 = app.selection ? app.selection->t0 : static_cast<std::int64_t>(app.view.start);
    const std::int64_t t1 = app.selection ? app.selection->t1 : static_cast<std::int64_t>(app.view.end);
    const RangeStats stats = rangeStats(*app.timeline, *app.trace, t0, t1);
    ImGui::Text("%s: %s .. %s (%s)", app.selection ? "Selection" : "Visible range", formatTime(t0).c_str(),
                formatTime(t1).c_str(), formatDuration(t1 - t0).c_str());
    if (!app.selection) ImGui::TextDisabled("Shift+drag on the timeline to select a range.");
    ImGui::Separator();
    if (ImGui::BeginTable("counts", 2, ImGuiTableFlags_SizingStretchProp)) {
        auto row = [](const char* name, std::uint64_t value) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(name);
            ImGui::TableNextColumn();
            ImGui::Text("%llu", static_cast<unsigned long long>(value));
        };
        row("events", stats.events);
        row("context switches", stats.switches);
        row("steals", stats.steals);
        const trace::BackendWords& words = backendWords(*app.trace);
        row(("wake-ups (" + std::string(words.wake) + ")").c_str(), stats.wakeups);
        row(words.completions, stats.completions);
        ImGui::EndTable();
    }
    ImGui::Spacing();
    ImGui::TextUnformatted("Thread utilisation");
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float width = ImGui::GetContentRegionAvail().x;
    // The names' column: as wide as the longest ("blocking pool thread 0").
    float names = 90;
    for (const ThreadUtilisation& u : stats.threads) names = std::max(names, ImGui::CalcTextSize(workerLabel(u.worker).c_str()).x + 12);
    for (const ThreadUtilisation& u : stats.threads) {
        ImGui::TextDisabled("%s", workerLabel(u.worker).c_str());
        ImGui::SameLine(names);
        const ImVec2 at = ImGui::GetCursorScreenPos();
        const float bar = std::max(40.0f, width - names - 110);
        float x = at.x;
        const float h = ImGui::GetTextLineHeight();
        for (auto [fraction, color] : {std::pair{u.running, palette::schedule}, std::pair{u.idle, palette::idle},
                                       std::pair{u.parked, palette::parked}}) {
            const float w = static_cast<float>(fraction) * bar;
            dl->AddRectFilled(ImVec2(x, at.y + 2), ImVec2(x + w, at.y + h), color);
            x += w;
        }
        dl->AddRect(ImVec2(at.x, at.y + 2), ImVec2(at.x + bar, at.y + h), palette::grid);
        ImGui::Dummy(ImVec2(bar, h));
        ImGui::SameLine();
        ImGui::Text("%3.0f%% busy", 100 * u.running);
    }
    ImGui::TextDisabled("blue: running a fiber, grey: idle loop, dark: parked");
    ImGui::Spacing();
    ImGui::Text("Schedule-to-run latency (%llu ready episodes)", static_cast<unsigned long long>(stats.latency_samples));
    if (stats.latency_samples) {
        ImGui::Text("p50 %s   p90 %s   p99 %s   max %s", formatDuration(stats.latency_p50).c_str(),
                    formatDuration(stats.latency_p90).c_str(), formatDuration(stats.latency_p99).c_str(),
                    formatDuration(stats.latency_max).c_str());
        std::vector<float> counts;
        for (const auto& b : stats.latency_histogram) counts.push_back(static_cast<float>(b.count));
        ImGui::PlotHistogram("##latency", counts.data(), static_cast<int>(counts.size()), 0, nullptr, 0.0f, FLT_MAX,
                             ImVec2(width, 90));
        if (!stats.latency_histogram.empty())
            ImGui::TextDisabled("%s .. %s, doubling per bar", formatDuration(stats.latency_histogram.front().lo).c_str(),
                                formatDuration(stats.latency_histogram.back().hi).c_str());
    }
}

} // namespace fiberscope::viewer
