// The application frame: menu, toolbar, the timeline beside the side panels,
// the status bar, the open-file prompt and the error banner; loading a trace
// (read, modelled and judged off the frame's thread) and showing it.
#include "ui/app.hpp"

#include <imgui.h>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <new>
#include <stdexcept>

#include "fiberscope/analysis/load.hpp"
#include "model/describe.hpp"
#include "platform/heap_trim.hpp"
#include "ui/colors.hpp"

namespace fiberscope::viewer {

// Dear ImGui 1.86 (Debian 12) indexes letter keys by the backend's key codes:
// GLFW's are their ASCII capitals.
constexpr int kKeyF = 'F';
constexpr int kKeyO = 'O';

std::vector<std::string> traceWarnings(const trace::Trace& trace, const Timeline& timeline) {
    std::vector<std::string> warnings = trace.warnings;
    // More workers than CPUs: a "running" fiber holds its thread, but the
    // kernel may have preempted that thread, so running time there includes
    // time spent waiting for a CPU.
    std::size_t workers = 0;
    for (const ThreadLane& lane : timeline.threads) workers += lane.worker >= 0 && !lane.lane.intervals.empty();
    if (trace.header.cpu_count > 0 && workers > trace.header.cpu_count)
        warnings.push_back(std::to_string(workers) + " worker threads ran on " + std::to_string(trace.header.cpu_count) +
                           " CPUs: the kernel took turns between them, so a fiber shown running may have been waiting for a CPU");
    return warnings;
}

void adopt(App& app, const std::string& path, LoadedTrace loaded) {
    app.path = path;
    app.warnings = traceWarnings(*loaded.trace, *loaded.timeline);
    app.trace = std::move(loaded.trace);
    app.timeline = std::move(loaded.timeline);
    app.verdict = std::move(loaded.verdict);
    app.error.clear();
    app.cursor = -1;
    app.selection.reset();
    app.focus_fiber = 0;
    app.table_dirty = true;
    app.selected_event = kNoEvent;
    app.fit_requested = true;
    // Opened with no lesson chosen: the lesson it was recorded from, if any;
    // no lesson's trace opens on the scheduler state, not on the browser.
    if (app.lesson_index < 0 && !recognizeLesson(app)) app.panel_request = SidePanel::State;
    app.history.clear(); // views of another trace mean nothing here
    app.active_checkpoint.clear();
    app.view_placed = false;
    app.timeline_caches = TimelineCaches(); // another trace: its fiber list from the top, no drag carried over
    app.panels.events = EventTableState();  // its table measured afresh, following no old cursor
    app.panels.tour = LessonTourState();    // the tour starts again on the new run
    app.panels.motion = ChipMotion();       // no chip slides in from the last trace's layout
    app.panels.objects.reset();             // the last trace's object index is not kept beside the new one
}

void adoptCompared(App& app, LoadedTrace loaded, std::string label) {
    app.compare_trace = std::move(loaded.trace);
    app.compare_timeline = std::move(loaded.timeline);
    app.compare_verdict = std::move(loaded.verdict);
    app.compare_label = std::move(label);
}

bool readModelAndJudge(const std::string& path, LoadedTrace& out, std::string& error, trace::ReadOptions options,
                       std::atomic<int>* phase) {
    auto trace = std::make_unique<trace::Trace>();
    auto timeline = std::make_unique<Timeline>();
    trace::ReadError read_error;
    if (!analysis::readTraceAndModel(path, *trace, *timeline, read_error, options)) { // (the build runs beside the read: analysis/load.hpp)
        error = read_error.text();
        return false;
    }
    // Judged here, before the trace is shown, so that a picture that cannot
    // be trusted is never on screen without saying so; on this thread, not
    // a frame's (the validator reads every record once more).
    if (phase) phase->store(1, std::memory_order_relaxed);
    out.verdict = judgeTrace(*trace, *timeline);
    out.trace = std::move(trace);
    out.timeline = std::move(timeline);
    return true;
}

bool loadTrace(App& app, const std::string& path) {
    LoadedTrace loaded;
    if (!readModelAndJudge(path, loaded, app.error)) return false;
    adopt(app, path, std::move(loaded));
    return true;
}

void loadTraceAsync(App& app, const std::string& path) {
    if (app.loading) return;
    auto job = std::make_unique<LoadJob>();
    job->path = path;
    struct stat st {};
    if (stat(path.c_str(), &st) == 0) job->total_bytes = static_cast<std::uint64_t>(st.st_size);
    LoadJob* raw = job.get();
    job->thread = std::thread([raw] {
        // An exception must not leave this thread (std::terminate): running
        // out of memory on a large trace becomes the window's error line, and
        // the viewer stays open with what it had.
        try {
            trace::ReadOptions options;
            options.progress = &raw->bytes;
            readModelAndJudge(raw->path, raw->loaded, raw->error, options, &raw->phase);
        } catch (const std::bad_alloc&) {
            raw->loaded = {};
            raw->error = "out of memory while loading " + raw->path + " (free some memory or raise 'ulimit -v')";
        } catch (const std::exception& e) {
            raw->loaded = {};
            raw->error = "cannot load " + raw->path + ": " + e.what();
        }
        raw->phase.store(2, std::memory_order_release);
    });
    app.loading = std::move(job);
}

// Shows the progress of a background load; adopts the result when done.
static bool drawLoading(App& app) {
    if (!app.loading) return false;
    LoadJob& job = *app.loading;
    if (job.phase.load(std::memory_order_acquire) == 2) {
        job.thread.join();
        if (job.error.empty()) adopt(app, job.path, std::move(job.loaded));
        else app.error = job.error;
        app.loading.reset();
        return false;
    }
    ImGui::Dummy(ImVec2(0, 120));
    ImGui::Indent(80);
    ImGui::Text("Loading %s", job.path.c_str());
    const double fraction = job.total_bytes ? static_cast<double>(job.bytes.load()) / static_cast<double>(job.total_bytes) : 0.0;
    // Once every chunk is parsed, the merge and the model's build are what
    // is left, then the check against the scheduler's rules.
    const bool judging = job.phase.load(std::memory_order_relaxed) == 1;
    const bool building = job.total_bytes && job.bytes.load() >= job.total_bytes;
    ImGui::ProgressBar(building || judging ? 1.0f : static_cast<float>(fraction), ImVec2(520, 0),
                       judging ? "checking the trace against the scheduler's rules..." : building ? "building the timeline..." : nullptr);
    ImGui::Unindent(80);
    return true;
}

std::int64_t stateTime(const App& app) {
    if (app.cursor >= 0) return app.cursor;
    if (app.pointer_time >= 0) return app.pointer_time;
    return static_cast<std::int64_t>((app.view.start + app.view.end) / 2);
}

static void drawMenu(App& app) {
    if (!ImGui::BeginMenuBar()) return;
    if (ImGui::BeginMenu("File")) {
        if (ImGui::MenuItem("Open trace...", "Ctrl+O")) app.open_prompt = true;
        ImGui::EndMenu();
    }
    if (ImGui::BeginMenu("View")) {
        if (ImGui::MenuItem("Fit whole trace", "F")) app.fit_requested = true;
        if (ImGui::MenuItem("Zoom to selection", "Z", false, app.selection.has_value())) zoomToSelection(app);
        if (ImGui::MenuItem("Back (previous view)", "Backspace / Alt+Left", false, app.history.canBack())) viewBack(app);
        if (ImGui::MenuItem("Forward", "Shift+Backspace / Alt+Right", false, app.history.canForward())) viewForward(app);
        ImGui::MenuItem("Fiber lanes", nullptr, &app.show_fiber_lanes);
        ImGui::MenuItem("Flow arrows", nullptr, &app.show_flows);
        ImGui::MenuItem("Counter tracks", nullptr, &app.show_counters);
        ImGui::MenuItem("Ready queues", nullptr, &app.show_queues);
        if (ImGui::BeginMenu("Flow kinds", app.show_flows)) {
            for (int k = 0; k < kFlowKindCount; ++k) {
                const unsigned bit = 1u << k;
                if (ImGui::MenuItem(flowKindName(static_cast<FlowKind>(k)), nullptr, (app.flow_kinds & bit) != 0)) app.flow_kinds ^= bit;
            }
            ImGui::EndMenu();
        }
        if (ImGui::MenuItem("Clear selection", "Esc")) app.selection.reset();
        ImGui::EndMenu();
    }
    ImGui::EndMenuBar();
}

// The entries of `dir`: subdirectories first, then .fstrace files, by name.
static std::vector<std::pair<std::string, bool>> listDirectory(const std::string& dir) {
    std::vector<std::pair<std::string, bool>> entries; // (name, is directory)
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            const std::string name = e->d_name;
            if (name == "." || (name.size() > 1 && name[0] == '.' && name != "..")) continue;
            struct stat st {};
            const bool is_dir = stat((dir + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
            if (is_dir || (name.size() > 8 && name.ends_with(".fstrace"))) entries.emplace_back(name, is_dir);
        }
        closedir(d);
    }
    std::sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
        return a.second != b.second ? a.second : a.first < b.first;
    });
    return entries;
}

static void drawOpenPrompt(App& app) {
    std::string& directory = app.panels.open_dialog.directory;
    std::vector<std::pair<std::string, bool>>& entries = app.panels.open_dialog.entries;
    if (app.open_prompt) {
        ImGui::OpenPopup("Open trace");
        app.open_prompt = false;
        if (directory.empty()) {
            char cwd[4096];
            directory = getcwd(cwd, sizeof cwd) ? cwd : "/";
        }
        entries = listDirectory(directory);
    }
    ImGui::SetNextWindowSize(ImVec2(640, 480), ImGuiCond_Appearing);
    if (!ImGui::BeginPopupModal("Open trace", nullptr)) return;
    ImGui::TextDisabled("%s", directory.c_str());
    ImGui::BeginChild("files", ImVec2(0, -ImGui::GetFrameHeightWithSpacing() * 3), true);
    for (const auto& [name, is_dir] : entries) {
        const std::string label = is_dir ? "[dir]  " + name : name;
        if (ImGui::Selectable(label.c_str(), false, ImGuiSelectableFlags_AllowDoubleClick)) {
            const std::string path = name == ".." ? directory.substr(0, std::max<std::size_t>(1, directory.rfind('/')))
                                                  : (directory == "/" ? "" : directory) + "/" + name;
            if (is_dir) {
                directory = path.empty() ? "/" : path;
                entries = listDirectory(directory);
                break;
            }
            std::snprintf(app.open_path, sizeof app.open_path, "%s", path.c_str());
            if (ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left)) {
                loadTraceAsync(app, app.open_path);
                ImGui::CloseCurrentPopup();
            }
        }
    }
    if (entries.empty()) ImGui::TextDisabled("no .fstrace files or folders here");
    ImGui::EndChild();
    ImGui::SetNextItemWidth(-1);
    const bool enter = ImGui::InputTextWithHint("##path", "path of a .fstrace file (or drop one on the window)",
                                                app.open_path, sizeof app.open_path, ImGuiInputTextFlags_EnterReturnsTrue);
    if (enter || ImGui::Button("Open")) {
        loadTraceAsync(app, app.open_path);
        ImGui::CloseCurrentPopup();
    }
    ImGui::SameLine();
    if (ImGui::Button("Cancel")) ImGui::CloseCurrentPopup();
    ImGui::EndPopup();
}

static void drawToolbar(App& app) {
    const trace::Trace& trace = *app.trace;
    const Timeline& tl = *app.timeline;
    ImGui::TextColored(ImVec4(0.6f, 0.8f, 1.0f, 1.0f), "%s", app.path.c_str());
    ImGui::SameLine();
    ImGui::TextDisabled("| %zu events, %zu threads, %zu fibers, %s | view %s", trace.events.size(), tl.threads.size(),
                        tl.fibers.size(), formatDuration(tl.end_time - tl.start_time).c_str(),
                        formatDuration(static_cast<std::int64_t>(app.view.span())).c_str());
    ImGui::SameLine(ImGui::GetWindowWidth() - 640);
    ImGui::BeginDisabled(!app.history.canBack());
    if (ImGui::Button("<##back")) viewBack(app);
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("Back to the previous view (Backspace, Alt+Left)");
    ImGui::SameLine();
    ImGui::BeginDisabled(!app.history.canForward());
    if (ImGui::Button(">##forward")) viewForward(app);
    ImGui::EndDisabled();
    if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled)) ImGui::SetTooltip("Forward again (Shift+Backspace, Alt+Right)");
    ImGui::SameLine();
    if (ImGui::Button("Fit")) app.fit_requested = true;
    ImGui::SameLine();
    ImGui::BeginDisabled(!app.selection.has_value());
    if (ImGui::Button("Zoom to selection")) zoomToSelection(app);
    ImGui::EndDisabled();
    ImGui::SameLine();

    static const trace::EventKind kSteppable[] = {
        trace::EventKind::Steal, trace::EventKind::StealHalf, trace::EventKind::StealOne, trace::EventKind::Schedule, trace::EventKind::WakeupSent, trace::EventKind::Search, trace::EventKind::Switch,
        trace::EventKind::Submit, trace::EventKind::Complete, trace::EventKind::CancelRequest, trace::EventKind::MutexHandoff,
        trace::EventKind::Mark};
    ImGui::SetNextItemWidth(150);
    if (ImGui::BeginCombo("##step", trace::eventKindName(app.step_kind))) {
        for (auto kind : kSteppable)
            if (ImGui::Selectable(trace::eventKindName(kind), kind == app.step_kind)) app.step_kind = kind;
        ImGui::EndCombo();
    }
    auto jump = [&](std::uint32_t index) {
        if (index != kNoEvent) revealTime(app, trace.events[index].time);
    };
    const std::int64_t from = app.cursor >= 0 ? app.cursor : static_cast<std::int64_t>(app.view.start);
    ImGui::SameLine();
    if (ImGui::ArrowButton("##prev", ImGuiDir_Left)) jump(previousEvent(tl, trace, app.step_kind, from));
    ImGui::SameLine();
    if (ImGui::ArrowButton("##next", ImGuiDir_Right)) jump(nextEvent(tl, trace, app.step_kind, from));
    ImGui::SameLine();
    ImGui::TextDisabled("cursor %s", app.cursor >= 0 ? formatTime(app.cursor).c_str() : "(pointer)");
}

static void drawWelcome(App& app) {
    ImGui::Dummy(ImVec2(0, 80));
    ImGui::Indent(60);
    ImGui::TextUnformatted("Fiberscope");
    ImGui::Spacing();
    ImGui::TextWrapped("Open a trace (File > Open, or drop a .fstrace file on this window). Record one with "
                       "FIBERSCOPE_TRACE=out.fstrace ./your_program, or fiberscope record -o out.fstrace -- ./your_program.");
    if (!app.error.empty()) {
        ImGui::Spacing();
        ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", app.error.c_str());
    }
    ImGui::Unindent(60);
}

void drawApp(App& app, const Fonts& fonts) {
    const ImGuiViewport* viewport = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(viewport->Pos);
    ImGui::SetNextWindowSize(viewport->Size);
    ImGui::PushStyleVar(ImGuiStyleVar_WindowRounding, 0);
    ImGui::Begin("Fiberscope", nullptr,
                 ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_MenuBar | ImGuiWindowFlags_NoMove |
                     ImGuiWindowFlags_NoBringToFrontOnFocus | ImGuiWindowFlags_NoScrollWithMouse);
    ImGui::PopStyleVar();
    drawMenu(app);
    drawOpenPrompt(app);
    if (!ImGui::GetIO().WantTextInput) {
        if (ImGui::IsKeyPressed(kKeyO) && ImGui::GetIO().KeyCtrl) app.open_prompt = true;
        if (ImGui::IsKeyPressed(kKeyF)) app.fit_requested = true;
        if (ImGui::IsKeyPressed(ImGuiKey_Escape)) app.selection.reset(), app.cursor = -1;
        // Dear ImGui 1.86: named keys through the backend's key map.
        const ImGuiIO& io = ImGui::GetIO();
        if (ImGui::IsKeyPressed('Z') && !io.KeyCtrl) zoomToSelection(app);
        const bool back_key = ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Backspace));
        if ((back_key && !io.KeyShift) || (io.KeyAlt && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow)))) viewBack(app);
        if ((back_key && io.KeyShift) || (io.KeyAlt && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow)))) viewForward(app);
    }
    pollLesson(app);
    pollLive(app);
    drawLiveStatus(app);
    advancePlayback(app, ImGui::GetIO().DeltaTime);
    if (drawLoading(app)) {
        ImGui::End();
        return;
    }
    if (!app.trace) {
        drawWelcome(app);
        ImGui::BeginChild("lessons", ImVec2(560, 0), true);
        drawLessonPanel(app, fonts);
        ImGui::EndChild();
        ImGui::End();
        return;
    }
    applyViewRequests(app); // Fit, and a lesson's opening view
    drawToolbar(app);
    if (!app.error.empty()) ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", app.error.c_str());
    drawVerdict(app);
    for (const auto& warning : app.warnings) ImGui::TextColored(ImVec4(1, 0.8f, 0.3f, 1), "warning: %s", warning.c_str());

    const float side = std::min(460.0f, ImGui::GetContentRegionAvail().x * 0.36f);
    const float status_height = ImGui::GetTextLineHeightWithSpacing() + 6;
    const float body_height = ImGui::GetContentRegionAvail().y - status_height;
    const float timeline_width = ImGui::GetContentRegionAvail().x - side - 8;
    drawTimeline(app, fonts, timeline_width, body_height);
    ImGui::SameLine();
    ImGui::BeginChild("side", ImVec2(side, body_height), true);
    if (ImGui::BeginTabBar("panels")) {
        for (const SidePanelInfo& tab : kSidePanels) {
            if (!ImGui::BeginTabItem(tab.title, nullptr, app.panel_request == tab.panel ? ImGuiTabItemFlags_SetSelected : 0))
                continue;
            switch (tab.panel) {
            case SidePanel::Lesson: drawLessonPanel(app, fonts); break;
            case SidePanel::State: drawSchedulerState(app, fonts); break;
            case SidePanel::Selection: drawSelectionStats(app); break;
            case SidePanel::Events: drawEventTable(app); break;
            case SidePanel::Legend: drawLegend(app); break;
            }
            ImGui::EndTabItem();
        }
        ImGui::EndTabBar();
    }
    app.panel_request.reset();
    ImGui::EndChild();
    // Status bar: what the pointer is over.
    ImGui::Separator();
    if (!app.hover.text.empty()) ImGui::TextUnformatted(app.hover.text.c_str());
    else ImGui::TextDisabled("Wheel: zoom at the pointer. Drag: pan. Shift+drag: select a range. Click: pin the "
                             "scheduler state there. F: fit. Z: zoom to selection. Backspace: back. Hover anything for an explanation.");
    ImGui::End();
    // A model's first frame built what the viewer builds lazily (the counter
    // tracks, the flow index, the event table's rows) and freed the scratch.
    // Not while a live trace is open (app.live), whose model is replaced at
    // every snapshot: a trim per snapshot would cost the frames.
    if (!app.live && app.timeline && app.heap_trimmed_for != app.timeline->serial) {
        app.heap_trimmed_for = app.timeline->serial;
        trimHeapAfterBuild(app.trace->events.memoryBytes());
    }
}

} // namespace fiberscope::viewer
