// The lesson panel: pick a lesson and its options, run it (as a child
// process with tracing on) and load its trace ("My run"), or open the golden
// trace shipped with it ("Reference run": recorded on a quiet machine, so a
// loaded lab machine still shows the textbook picture); read its narrative with
// checkpoint links; step through the events of interest one explanation at a
// time; play the trace back slowly while the scheduler-state diagram
// animates; compare two runs with different thread counts or backends.
#include <imgui.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <optional>

#include "lessons/checks.hpp"
#include "model/describe.hpp"
#include "model/explain.hpp"
#include "model/source_location.hpp"
#include "ui/app.hpp"
#include "ui/colors.hpp"

namespace fiberscope::viewer {

// Lines of the step explanation's box (reserved even when empty).
constexpr float kStepBoxLines = 3.2f;

namespace {

std::string tracePathFor(const Lesson& lesson, const LessonArguments& arguments, bool compare) {
    const char* tmp = std::getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/fiberscope-lesson" + lesson.slug;
    if (compare) path += "-threads" + std::to_string(arguments.threads);
    if (!arguments.backend.empty()) path += "-" + arguments.backend;
    if (!arguments.scheduler.empty()) path += "-" + arguments.scheduler;
    return path + ".fstrace";
}

// One of a lesson run's choices: an index into `names`, kept in range.
template <std::size_t N>
void choiceCombo(const char* id, int& choice, const char* const (&names)[N], const char* tooltip) {
    ImGui::SetNextItemWidth(100);
    ImGui::Combo(id, &choice, names, static_cast<int>(N));
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", tooltip);
    choice = std::clamp(choice, 0, static_cast<int>(N) - 1);
}

// The backend a run asks the program for (--backend): automatic, io_uring or epoll.
void backendCombo(const char* id, int& backend) {
    choiceCombo(id, backend, kLessonBackendNames,
                "--backend for the lesson's program; automatic: FIBERSCOPE_BACKEND if set, else io_uring\n"
                "(epoll when the kernel refuses io_uring)");
}

// The scheduler policy a run asks the program for (--scheduler): the lesson's own, seed or scaling.
void schedulerCombo(const char* id, int& scheduler) {
    choiceCombo(id, scheduler, kLessonSchedulerNames,
                "--scheduler for the lesson's program; the lesson's: the seed's, which every lesson\n"
                "teaches (the runtime's own default is scaling: lesson 15 compares them)");
}

// What the panel's choices ask the program for.
LessonArguments argumentsOf(int threads, int backend, int scheduler) {
    return LessonArguments{threads, kLessonBackends[std::clamp(backend, 0, static_cast<int>(IM_ARRAYSIZE(kLessonBackends)) - 1)],
                           kLessonSchedulers[std::clamp(scheduler, 0, static_cast<int>(IM_ARRAYSIZE(kLessonSchedulers)) - 1)]};
}

bool hasCheckpoint(const App& app, const std::string& label) {
    if (!app.trace) return false;
    for (const trace::Event& e : app.trace->events)
        if (e.kind == trace::EventKind::Mark && app.trace->string(e.arg[0]) == label) return true;
    return false;
}

// "Predict, then check" (lessons/NN-*/checks.md): the parsed questions of
// the lesson on screen and each one's input and verdict
// (App::panels.checks), rebuilt when the lesson or its trace changes (a
// new run may give other answers).
using CheckState = LessonCheckState;

void check(App& app, const checks::Question& question, CheckState::Answer& answer, std::int64_t given) {
    const trace::Trace& trace = *app.trace;
    const checks::Verdict verdict = checks::grade(question, trace, given);
    answer.checked = true;
    answer.right = verdict.right;
    answer.verdict = verdict.text;
    if (!verdict.has_event) return;
    // Jump to the moment that shows it, and select it as a step would.
    app.step_event = static_cast<std::uint32_t>(verdict.event);
    const Explanation ex = explain(*app.timeline, trace, app.step_event);
    app.step_text = ex.text + (ex.function.empty() ? "" : "  [" + ex.function + "]");
    revealTime(app, trace.events[verdict.event].time);
}

void drawChecks(App& app, const Lesson& lesson, const Fonts& fonts) {
    if (lesson.checks.empty() || !app.trace || !app.timeline) return;
    CheckState& s = app.panels.checks;
    if (s.lesson != app.lesson_index || s.trace != app.trace->serial || s.events != app.trace->events.size()) {
        s = CheckState{};
        s.lesson = app.lesson_index;
        s.trace = app.trace->serial;
        s.events = app.trace->events.size();
        if (!checks::parseChecks(lesson.checks, lesson.slug + "/checks.md", s.checks, s.parse_error)) s.checks = {};
        for (const checks::Question& q : s.checks.questions) s.texts.push_back(parseMarkdown(q.text));
        if (s.checks.has_exercise)
            s.texts.push_back(parseMarkdown(s.checks.exercise.text + "\n\nExpected: " + s.checks.exercise.says));
        s.answers.resize(s.checks.questions.size());
        for (const trace::ThreadInfo& t : app.trace->threads)
            if (t.worker >= 0) s.workers.push_back(t.worker);
        std::sort(s.workers.begin(), s.workers.end());
        s.workers.erase(std::unique(s.workers.begin(), s.workers.end()), s.workers.end());
    }
    const MarkdownFonts md{fonts.regular, fonts.mono};
    const auto noLink = [](const std::string&) {};
    const auto noCheckpoint = [](const std::string&) { return false; };
    ImGui::Separator();
    ImGui::TextUnformatted("Predict, then check");
    if (!s.parse_error.empty()) {
        ImGui::TextColored(ImVec4(1, 0.5f, 0.4f, 1), "%s", s.parse_error.c_str());
        return;
    }
    for (std::size_t i = 0; i < s.checks.questions.size(); ++i) {
        const checks::Question& q = s.checks.questions[i];
        CheckState::Answer& a = s.answers[i];
        ImGui::PushID(static_cast<int>(i));
        drawMarkdown(s.texts[i], md, noLink, noCheckpoint);
        ImGui::SetNextItemWidth(120);
        if (q.answer.kind == checks::AnswerKind::Worker && !s.workers.empty()) {
            a.input = std::clamp(a.input, 0, static_cast<int>(s.workers.size()) - 1);
            const std::string current = "worker " + std::to_string(s.workers[static_cast<std::size_t>(a.input)]);
            if (ImGui::BeginCombo("##answer", current.c_str())) {
                for (std::size_t w = 0; w < s.workers.size(); ++w)
                    if (ImGui::Selectable(("worker " + std::to_string(s.workers[w])).c_str(), static_cast<int>(w) == a.input))
                        a.input = static_cast<int>(w);
                ImGui::EndCombo();
            }
        } else {
            ImGui::InputInt(q.answer.kind == checks::AnswerKind::Fiber ? "fiber##answer" : "##answer", &a.input);
            a.input = std::max(a.input, 0);
        }
        ImGui::SameLine();
        if (ImGui::Button("Check")) {
            const std::int64_t given = q.answer.kind == checks::AnswerKind::Worker && !s.workers.empty()
                                           ? s.workers[static_cast<std::size_t>(a.input)]
                                           : a.input;
            check(app, q, a, given);
        }
        if (a.checked) {
            ImGui::TextColored(a.right ? ImVec4(0.45f, 0.85f, 0.45f, 1) : ImVec4(1, 0.7f, 0.35f, 1), "%s", a.verdict.c_str());
            ImGui::TextWrapped("%s", q.why.c_str());
        }
        ImGui::Spacing();
        ImGui::PopID();
    }
    if (s.checks.has_exercise) {
        ImGui::Separator();
        ImGui::TextUnformatted("Exercise");
        drawMarkdown(s.texts.back(), md, noLink, noCheckpoint);
    }
}

} // namespace

void startLesson(App& app, int index, const LessonArguments& arguments, bool compare) {
    if (app.job || index < 0 || index >= static_cast<int>(app.lessons.size())) return;
    auto job = std::make_unique<App::LessonJob>();
    job->lesson = index;
    job->arguments = arguments;
    job->compare = compare;
    job->trace_path = tracePathFor(app.lessons[static_cast<std::size_t>(index)], arguments, compare);
    App::LessonJob* raw = job.get();
    const Lesson lesson = app.lessons[static_cast<std::size_t>(index)];
    // The run is shown live while it records (the comparison run is not: it lands in the second slot when done).
    if (!compare) unlink(job->trace_path.c_str());
    job->thread = std::thread([raw, lesson] {
        raw->ok = runLessonShown(lesson, raw->arguments, raw->trace_path, false, raw->run, raw->error);
        // The finished run is read, modelled and judged here, not by the
        // frame that takes it (pollLesson).
        try {
            if (raw->ok) raw->ok = readModelAndJudge(raw->trace_path, raw->loaded, raw->error);
        } catch (const std::bad_alloc&) {
            raw->loaded = {};
            raw->error = "out of memory while loading " + raw->trace_path;
            raw->ok = false;
        }
        raw->done.store(true, std::memory_order_release);
    });
    if (!compare) followFile(app, job->trace_path);
    app.job = std::move(job);
}

void pollLesson(App& app) {
    if (!app.job || !app.job->done.load(std::memory_order_acquire)) return;
    std::unique_ptr<App::LessonJob> job = std::move(app.job);
    job->thread.join();
    if (!job->compare) app.live.reset(); // the live view of the run ends: the finished trace replaces it
    app.last_run_output = job->run.output;
    if (!job->ok) {
        app.error = job->error;
        return;
    }
    if (job->compare) {
        adoptCompared(app, std::move(job->loaded), job->arguments.describe());
        return;
    }
    adopt(app, job->trace_path, std::move(job->loaded));
    app.lesson_index = job->lesson;
    app.browse_index = job->lesson;
    app.run_attempts = job->run.describeAttempts();
    app.run_unmet = !job->run.unmet.empty();
    app.lesson_document = parseMarkdown(app.lessons[static_cast<std::size_t>(job->lesson)].markdown);
    app.compare_trace.reset();
    app.compare_timeline.reset();
    app.compare_verdict = {};
    app.step_event = kNoEvent;
    app.step_text.clear();
    app.open_lesson_view = true;
}

bool showsReference(const App& app, const Lesson& lesson) {
    if (!app.trace || app.path.empty() || lesson.reference.empty()) return false;
    // By the file, not by a flag: `fiberscope view` on the golden trace is the reference run too.
    std::error_code error;
    return app.path == lesson.reference || std::filesystem::equivalent(app.path, lesson.reference, error);
}

bool openLessonReference(App& app, int index) {
    if (index < 0 || index >= static_cast<int>(app.lessons.size())) return false;
    const Lesson& lesson = app.lessons[static_cast<std::size_t>(index)];
    std::error_code error;
    if (lesson.reference.empty() || !std::filesystem::exists(lesson.reference, error)) {
        app.error = "lesson " + std::to_string(lesson.number) + " has no reference run: " +
                    (lesson.reference.empty() ? std::string("no golden trace") : lesson.reference + " is missing") +
                    " (set FIBERSCOPE_ASSETS to the folder holding traces/)";
        return false;
    }
    if (!loadTrace(app, lesson.reference)) return false;
    app.live.reset();
    app.lesson_index = index;
    app.browse_index = index;
    app.run_attempts.clear();
    app.run_unmet = false;
    app.lesson_document = parseMarkdown(lesson.markdown);
    app.compare_trace.reset();
    app.compare_timeline.reset();
    app.compare_verdict = {};
    app.step_event = kNoEvent;
    app.step_text.clear();
    app.open_lesson_view = true; // on its first checkpoint's window, as a run opens
    return true;
}

bool attachLesson(App& app, int number) {
    if (!app.lessons_loaded) {
        app.lessons = loadLessons(app.lessons_error);
        app.lessons_loaded = true;
    }
    for (std::size_t i = 0; i < app.lessons.size(); ++i) {
        if (app.lessons[i].number != number) continue;
        app.lesson_index = app.browse_index = static_cast<int>(i);
        app.lesson_document = parseMarkdown(app.lessons[i].markdown);
        app.panel_request = SidePanel::Lesson;
        app.open_lesson_view = true; // on its first checkpoint's window, once the trace is in
        return true;
    }
    return false;
}

bool recognizeLesson(App& app) {
    if (!app.trace) return false;
    if (!app.lessons_loaded) {
        app.lessons = loadLessons(app.lessons_error);
        app.lessons_loaded = true;
    }
    const int index = lessonOfCommand(app.lessons, app.trace->header.command_line);
    if (index < 0) return false;
    return attachLesson(app, app.lessons[static_cast<std::size_t>(index)].number);
}

namespace {

// The code view: the lesson's main.cpp, with the line the fiber is at
// highlighted, as far as a mark or zone says (format version 4 records each
// one's file and line; sourceLineAt reads them back). Which fiber: at a step,
// the one running on the step's thread; else, or if that one has marked
// nothing in main.cpp yet, the latest mark or zone in main.cpp of any fiber
// at or before the cursor. The file is read once per lesson and the look-up
// redone only when the point in the trace changes.
using CodeState = LessonCodeState; // App::panels.code

void loadCode(CodeState& s, const std::string& path) {
    s = CodeState{};
    s.path = path;
    std::ifstream in(path);
    s.found = static_cast<bool>(in);
    for (std::string line; s.found && std::getline(in, line);) {
        for (std::size_t tab; (tab = line.find('\t')) != std::string::npos;) line.replace(tab, 1, "    ");
        s.lines.push_back(std::move(line));
    }
}

void drawCodeView(App& app, const Lesson& lesson, const Fonts& fonts) {
    CodeState& s = app.panels.code;
    if (s.path != lesson.source) loadCode(s, lesson.source);
    if (!ImGui::CollapsingHeader("main.cpp##code", ImGuiTreeNodeFlags_DefaultOpen)) return;
    if (!s.found) {
        ImGui::TextDisabled("No code to show: %s cannot be read", lesson.source.c_str());
        return;
    }
    // The point in the trace: the step's record while the cursor is on it, else the cursor.
    const trace::Trace& trace = *app.trace;
    std::uint32_t thread = kAnyThread;
    std::int64_t time = stateTime(app);
    if (app.step_event < trace.events.size()) {
        const trace::Event e = trace.events[app.step_event];
        if (app.cursor < 0 || app.cursor == e.time) thread = e.thread, time = e.time;
    }
    if (s.trace != trace.serial || s.events != trace.events.size() || s.thread != thread || s.time != time) {
        s.trace = trace.serial;
        s.events = trace.events.size();
        s.thread = thread;
        s.time = time;
        const std::string suffix = "/" + lesson.slug + "/main.cpp";
        s.where = thread != kAnyThread ? sourceLineAt(trace, *app.timeline, thread, time, suffix) : std::nullopt;
        s.own_fiber = s.where.has_value();
        if (!s.where) s.where = sourceLineAt(trace, *app.timeline, kAnyThread, time, suffix);
    }
    const bool shown = s.where && s.where->line >= 1 && s.where->line <= s.lines.size();
    if (shown) {
        const FiberLane* fl = findFiber(*app.timeline, s.where->fiber);
        const std::string who = s.where->fiber == 0 ? std::string("the idle loop") : fl ? fl->name() : "fiber " + std::to_string(s.where->fiber);
        const trace::Event e = trace.events[s.where->event];
        ImGui::TextWrapped("%s %s line %u (%s '%s')", who.c_str(), s.own_fiber ? "runs past" : "last marked", s.where->line,
                           e.kind == trace::EventKind::Mark ? "mark" : "zone", trace.string(e.arg[0]).c_str());
    } else {
        ImGui::PushTextWrapPos(0);
        ImGui::TextDisabled(trace.header.version < 4 ? "Trace format %u predates source locations: no line to show"
                                                     : "No mark or zone in main.cpp before this point says where a fiber is",
                            trace.header.version);
        ImGui::PopTextWrapPos();
    }
    ImGui::PushStyleColor(ImGuiCol_ChildBg, ImVec4(0.10f, 0.11f, 0.13f, 1));
    ImGui::PushFont(fonts.mono);
    const float line_h = ImGui::GetTextLineHeight();
    const float row = ImGui::GetTextLineHeightWithSpacing();
    ImGui::BeginChild("code", ImVec2(0, row * 9 + ImGui::GetStyle().WindowPadding.y * 2 + ImGui::GetStyle().ScrollbarSize), true,
                      ImGuiWindowFlags_HorizontalScrollbar);
    if (shown && s.scrolled_to != s.where->line) {
        // Centre the line (the child scrolls; the rest of the file is a wheel away).
        const float visible = ImGui::GetWindowHeight() - ImGui::GetStyle().ScrollbarSize;
        ImGui::SetScrollY(std::max(0.0f, (static_cast<float>(s.where->line) - 1.0f) * row - (visible - row) / 2));
        s.scrolled_to = s.where->line;
    }
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(s.lines.size()), row);
    while (clipper.Step()) {
        for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
            const bool here = shown && static_cast<std::uint32_t>(i + 1) == s.where->line;
            if (here) {
                const ImVec2 at = ImGui::GetCursorScreenPos();
                const float right = at.x + std::max(ImGui::GetContentRegionAvail().x, ImGui::GetWindowWidth());
                ImGui::GetWindowDrawList()->AddRectFilled(at, ImVec2(right, at.y + line_h), palette::code_line);
            }
            ImGui::TextColored(here ? ImVec4(1, 1, 1, 1) : ImVec4(0.55f, 0.58f, 0.64f, 1), "%4d", i + 1);
            ImGui::SameLine();
            ImGui::TextUnformatted(s.lines[static_cast<std::size_t>(i)].c_str());
        }
    }
    clipper.End();
    ImGui::EndChild();
    ImGui::PopFont();
    ImGui::PopStyleColor();
}

} // namespace

void drawLessonPanel(App& app, const Fonts& fonts) {
    if (!app.lessons_loaded) {
        app.lessons = loadLessons(app.lessons_error);
        app.lessons_loaded = true;
        if (app.lesson_index >= 0) app.browse_index = app.lesson_index;
    }
    if (app.lessons.empty()) {
        ImGui::TextWrapped("No lessons found: %s", app.lessons_error.c_str());
        return;
    }
    // Browser.
    app.browse_index = std::clamp(app.browse_index, 0, static_cast<int>(app.lessons.size()) - 1);
    const Lesson& browsed = app.lessons[static_cast<std::size_t>(app.browse_index)];
    char current[160];
    std::snprintf(current, sizeof current, "%d. %s", browsed.number, browsed.title.c_str());
    ImGui::SetNextItemWidth(-1);
    if (ImGui::BeginCombo("##lesson", current)) {
        for (std::size_t i = 0; i < app.lessons.size(); ++i) {
            char item[160];
            std::snprintf(item, sizeof item, "%d. %s", app.lessons[i].number, app.lessons[i].title.c_str());
            if (ImGui::Selectable(item, static_cast<int>(i) == app.browse_index)) app.browse_index = static_cast<int>(i);
        }
        ImGui::EndCombo();
    }
    ImGui::SetNextItemWidth(110);
    ImGui::InputInt("threads (0: lesson's default)", &app.lesson_threads);
    app.lesson_threads = std::clamp(app.lesson_threads, 0, 64);
    backendCombo("backend", app.lesson_backend);
    ImGui::SameLine();
    schedulerCombo("scheduler", app.lesson_scheduler);
    const bool running = app.job != nullptr;
    if (running) {
        const char spinner[] = "|/-\\";
        ImGui::Text("%c running lesson %d with tracing on...", spinner[static_cast<int>(ImGui::GetTime() * 8) % 4],
                    app.lessons[static_cast<std::size_t>(app.job->lesson)].number);
    } else {
        if (ImGui::Button("My run")) startLesson(app, app.browse_index, argumentsOf(app.lesson_threads, app.lesson_backend, app.lesson_scheduler), false);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("Run the lesson's program here, with tracing on, and show its trace");
        ImGui::SameLine();
        if (ImGui::Button("Reference run")) openLessonReference(app, app.browse_index);
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("Show the lesson's golden trace, recorded on a quiet machine:\n%s",
                              browsed.reference.c_str());
    }
    // The picker and the narrative name the same lesson: another lesson
    // picked while one's trace is shown offers that lesson's runs, not the
    // shown one's narrative under the new name.
    if (app.lesson_index >= 0 && app.trace && app.browse_index != app.lesson_index)
        ImGui::TextDisabled("(the timeline still shows lesson %d's trace)",
                            app.lessons[static_cast<std::size_t>(app.lesson_index)].number);
    if (app.lesson_index < 0 || !app.trace || app.browse_index != app.lesson_index) {
        ImGui::TextWrapped("Press My run: the lesson's program runs as a child process with FIBERSCOPE_TRACE set, and "
                           "its trace opens here with the narrative. Reference run shows the trace shipped with the "
                           "lesson instead.");
        // The summary is Markdown too: rendered, never shown raw.
        if (app.browse_summary_of != app.browse_index) {
            app.browse_summary = parseMarkdown(browsed.summary);
            app.browse_summary_of = app.browse_index;
        }
        if (!browsed.summary.empty())
            drawMarkdown(app.browse_summary, MarkdownFonts{fonts.regular, fonts.mono}, [](const std::string&) {},
                         [](const std::string&) { return false; });
        return;
    }
    const Lesson& lesson = app.lessons[static_cast<std::size_t>(app.lesson_index)];
    // Which run is on screen: the shipped reference, or the student's own.
    if (showsReference(app, lesson)) {
        ImGui::TextColored(ImVec4(0.55f, 0.8f, 1.0f, 1), "Showing: the reference run");
        ImGui::SameLine();
        ImGui::TextDisabled("(golden trace)");
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("Shipped with the course, recorded on a quiet machine:\n%s", app.path.c_str());
    } else {
        ImGui::TextColored(ImVec4(0.55f, 0.9f, 0.5f, 1), "Showing: my run");
        ImGui::SameLine();
        ImGui::TextDisabled("(%s)", app.path.c_str());
        if (!app.run_attempts.empty()) {
            if (app.run_unmet) ImGui::PushStyleColor(ImGuiCol_Text, ImVec4(1, 0.7f, 0.35f, 1));
            else ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
            ImGui::TextWrapped("%s", app.run_attempts.c_str());
            ImGui::PopStyleColor();
        }
    }
    ImGui::Separator();
    // Step mode and playback.
    if (ImGui::Button("< step")) stepDecision(app, -1);
    ImGui::SameLine();
    if (ImGui::Button("step >")) stepDecision(app, +1);
    ImGui::SameLine();
    if (ImGui::Button(app.playing ? "pause" : "play")) {
        if (app.playing) app.playing = false;
        else startPlayback(app);
    }
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Play the decisions one by one; pauses at each checkpoint");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    ImGui::SliderFloat("##speed", &app.playback_rate, 0.5f, 60.0f, "%.1f decisions/s", ImGuiSliderFlags_Logarithmic);
    // The narrated tour: the text's sentences that name checkpoints or records.
    if (ImGui::Button("< tour")) tourStep(app, -1);
    ImGui::SameLine();
    if (ImGui::Button("tour >")) tourStep(app, +1);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Walk the lesson's text: each sentence that names a checkpoint or a record shows that window\n"
                          "and rings the records it names, with the scheduler state and the code at the first");
    ImGui::SameLine();
    if (app.panels.tour.index >= 0 && app.panels.tour.lesson == app.lesson_index)
        ImGui::TextDisabled("sentence %d of %zu", app.panels.tour.index + 1, app.panels.tour.stops.size());
    else
        ImGui::TextDisabled("the lesson's text, sentence by sentence");
    // The step's explanation has its place whether or not there is one, so
    // that the controls below never move under the pointer (a step used to
    // push them down ~60 px, and the next click landed on Compare).
    ImGui::PushStyleColor(ImGuiCol_ChildBg, app.step_text.empty() ? ImVec4(0.12f, 0.13f, 0.16f, 1) : ImVec4(0.16f, 0.18f, 0.24f, 1));
    ImGui::BeginChild("step", ImVec2(0, ImGui::GetTextLineHeightWithSpacing() * kStepBoxLines), true);
    if (app.step_text.empty()) ImGui::TextDisabled("step or play: each scheduling decision is explained here");
    else ImGui::TextWrapped("%s", app.step_text.c_str());
    ImGui::EndChild();
    ImGui::PopStyleColor();
    // The active checkpoint's arrows strong, the others dimmed (checks.md
    // `focus:`), or every arrow alike. Always drawn, so nothing below moves.
    ImGui::Checkbox("every arrow alike", &app.focus_all);
    if (ImGui::IsItemHovered())
        ImGui::SetTooltip("Off: while a checkpoint's window is shown, the arrows its story is not about are drawn dimmed");
    if (const std::uint32_t focused = focusedFlows(app); focused != 0) {
        std::string kinds;
        for (int k = 0; k < kFlowKindCount; ++k)
            if (focused & (1u << k)) kinds += (kinds.empty() ? "" : ", ") + std::string(flowKindName(static_cast<FlowKind>(k)));
        ImGui::SameLine();
        ImGui::TextDisabled("(the story's: %s)", kinds.c_str());
    }
    drawCodeView(app, lesson, fonts);
    // Compare.
    if (!running) {
        ImGui::SetNextItemWidth(90);
        ImGui::InputInt("##cmpthreads", &app.compare_threads);
        app.compare_threads = std::clamp(app.compare_threads, 1, 64);
        ImGui::SameLine();
        backendCombo("##cmpbackend", app.compare_backend);
        ImGui::SameLine();
        schedulerCombo("##cmpscheduler", app.compare_scheduler);
        if (ImGui::Button("Compare with a run like this"))
            startLesson(app, app.lesson_index, argumentsOf(app.compare_threads, app.compare_backend, app.compare_scheduler),
                        true);
        if (app.compare_timeline) {
            ImGui::SameLine();
            if (ImGui::SmallButton("close")) app.compare_timeline.reset(), app.compare_trace.reset(), app.compare_verdict = {};
        }
    }
    ImGui::Separator();
    // Narrative.
    ImGui::BeginChild("narrative", ImVec2(0, 0), false);
    (void)lesson;
    drawMarkdown(
        app.lesson_document, MarkdownFonts{fonts.regular, fonts.mono},
        [&](const std::string& label) {
            if (revealCheckpoint(app, label)) app.step_event = kNoEvent;
        },
        [&](const std::string& label) { return hasCheckpoint(app, label); });
    drawChecks(app, lesson, fonts);
    ImGui::EndChild();
}

} // namespace fiberscope::viewer
