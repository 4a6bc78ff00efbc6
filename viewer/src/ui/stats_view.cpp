// Statistics of the selected range (or the whole view): event counts,
// per-thread utilisation bars and the schedule-to-run latency histogram.
// With a compared run loaded (the lesson panel's Compare), first the two
// whole runs' totals side by side: the same range statistics over each run's
// whole time (model/range_stats.hpp, the model's lanes and per-kind counts),
// computed once per loaded run.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "model/describe.hpp"
#include "model/range_stats.hpp"
#include "ui/app.hpp"
#include "ui/colors.hpp"

namespace fiberscope::viewer {

namespace {

// A run's statistics over its whole time, kept while that model is shown
// (slot 0: the trace, 1: the compared run).
const RangeStats& wholeRun(App& app, const Timeline& tl, const trace::Trace& trace, int slot) {
    WholeRunStats& c = app.panels.whole_run[slot];
    if (c.timeline != tl.serial || c.events != trace.events.size() || c.end != tl.end_time) {
        c.stats = rangeStats(tl, trace, tl.start_time, tl.end_time);
        c.timeline = tl.serial;
        c.events = trace.events.size();
        c.end = tl.end_time;
    }
    return c.stats;
}

// A busy fraction as a small bar (running: the lanes' blue) and its percent.
void busyCell(const ThreadUtilisation* u) {
    if (!u) {
        ImGui::TextDisabled("-");
        return;
    }
    const ImVec2 at = ImGui::GetCursorScreenPos();
    const float h = ImGui::GetTextLineHeight(), bar = 44;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(ImVec2(at.x, at.y + 3), ImVec2(at.x + bar * static_cast<float>(u->running), at.y + h - 1), palette::schedule);
    dl->AddRect(ImVec2(at.x, at.y + 3), ImVec2(at.x + bar, at.y + h - 1), palette::grid);
    ImGui::Dummy(ImVec2(bar, h));
    ImGui::SameLine();
    ImGui::Text("%.0f%%", 100 * u->running);
}

// Two runs' statistics side by side: duration, counts, busy per thread, latency.
void drawCompareTable(const App& app, const char* id, const RangeStats& a, const RangeStats& b) {
    const trace::BackendWords& wa = backendWords(*app.trace);
    const trace::BackendWords& wb = backendWords(*app.compare_trace);
    if (!ImGui::BeginTable(id, 3, ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV))
        return;
    ImGui::TableSetupColumn("");
    ImGui::TableSetupColumn("this run");
    ImGui::TableSetupColumn("compared run");
    ImGui::TableHeadersRow();
    const auto row = [](const std::string& name, const std::string& x, const std::string& y) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(name.c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(x.c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(y.c_str());
    };
    const auto count = [](std::uint64_t n) { return std::to_string(n); };
    const auto kind = [](const RangeStats& s, trace::EventKind k) { return s.events_by_kind[static_cast<std::size_t>(k)]; };
    row("duration", formatDuration(a.t1 - a.t0), formatDuration(b.t1 - b.t0));
    row("events", count(a.events), count(b.events));
    row("context switches", count(a.switches), count(b.switches));
    row("steals", count(a.steals), count(b.steals));
    row(std::string("wake-ups sent (") + wa.wake + (std::string(wa.wake) == wb.wake ? "" : std::string(" / ") + wb.wake) + ")",
        count(a.wakeups), count(b.wakeups));
    row("parks", count(kind(a, trace::EventKind::Park)), count(kind(b, trace::EventKind::Park)));
    row("search records (begin, end)", count(kind(a, trace::EventKind::Search)), count(kind(b, trace::EventKind::Search)));
    row("completions", count(a.completions), count(b.completions));
    const auto latency = [](const RangeStats& s, std::int64_t v) { return s.latency_samples ? formatDuration(v) : std::string("-"); };
    row("ready -> run median", latency(a, a.latency_p50), latency(b, b.latency_p50));
    row("ready -> run p99", latency(a, a.latency_p99), latency(b, b.latency_p99));
    // Busy per thread, the n-th worker of one run beside the other's n-th.
    const auto workers = [](const RangeStats& s) {
        std::vector<const ThreadUtilisation*> out;
        for (const ThreadUtilisation& u : s.threads)
            if (u.covered_ns > 0 && !trace::isBlockingPoolWorker(u.worker)) out.push_back(&u);
        return out;
    };
    const auto wa_threads = workers(a), wb_threads = workers(b);
    for (std::size_t i = 0; i < std::max(wa_threads.size(), wb_threads.size()); ++i) {
        const ThreadUtilisation* x = i < wa_threads.size() ? wa_threads[i] : nullptr;
        const ThreadUtilisation* y = i < wb_threads.size() ? wb_threads[i] : nullptr;
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::Text("busy, %s", workerLabel((x ? x : y)->worker).c_str());
        ImGui::TableNextColumn();
        busyCell(x);
        ImGui::TableNextColumn();
        busyCell(y);
    }
    ImGui::EndTable();
}

// The compared runs: first in the active checkpoint's window (the stretch
// the lesson is about, each run's own, lined up on the mark), then whole.
void drawCompareTotals(App& app) {
    const std::optional<std::int64_t> shift = compareShift(app);
    if (shift) {
        if (const std::optional<TimeRange> window = checkpointRange(app, app.active_checkpoint)) {
            const auto t0 = static_cast<std::int64_t>(window->t0), t1 = static_cast<std::int64_t>(window->t1);
            const RangeStats a = rangeStats(*app.timeline, *app.trace, t0, t1);
            const RangeStats b = rangeStats(*app.compare_timeline, *app.compare_trace, t0 - *shift, t1 - *shift);
            ImGui::TextWrapped("In the window of %s, side by side", app.active_checkpoint.c_str());
            ImGui::SameLine();
            ImGui::TextDisabled("(compared: %s)", app.compare_label.c_str());
            drawCompareTable(app, "compare_window", a, b);
            ImGui::Spacing();
        }
    }
    ImGui::TextUnformatted("Whole runs, side by side");
    ImGui::SameLine();
    ImGui::TextDisabled("(compared: %s)", app.compare_label.c_str());
    drawCompareTable(app, "compare_totals", wholeRun(app, *app.timeline, *app.trace, 0),
                     wholeRun(app, *app.compare_timeline, *app.compare_trace, 1));
    ImGui::Separator();
}

} // namespace

void drawSelectionStats(App& app) {
    if (app.compare_timeline && app.compare_trace) drawCompareTotals(app);
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
