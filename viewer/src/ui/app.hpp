// The viewer application: the loaded trace, its model, and the view state
// the panels share (visible range, cursor, selection, filters). Immediate
// mode: the panels read and write this struct; the model stays read-only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fiberscope/trace_reader.hpp"
#include "fiberscope/analysis/timeline.hpp"
#include "model/filter.hpp"
#include "platform/window.hpp"
#include "model/time_view.hpp"
#include "model/verdict.hpp"
#include "ui/markdown.hpp"
#include "lessons/catalog.hpp"
#include "lessons/checks.hpp"
#include "ui/live_view.hpp"
#include "ui/side_panel.hpp"
#include "ui/panel_state.hpp"
#include "ui/timeline_caches.hpp"

#include <atomic>
#include <thread>

namespace fiberscope::viewer {

struct Selection {
    std::int64_t t0 = 0, t1 = 0;
};

// What the pointer is over, for tooltips and cause/effect highlighting.
struct Hover {
    std::uint32_t event = kNoEvent; // a record (glyph) under the pointer
    std::uint64_t fiber = 0;        // a fiber block under the pointer
    std::int32_t thread = -1;
    std::int64_t time = -1;
    std::string text; // the explanation shown in the tooltip and status bar
};

// A trace read, modelled and judged (model/verdict.hpp), ready to be shown.
struct LoadedTrace {
    std::unique_ptr<trace::Trace> trace;
    std::unique_ptr<Timeline> timeline;
    Verdict verdict;
};

// A trace being loaded on a background thread (large files take a while).
struct LoadJob {
    std::string path;
    std::uint64_t total_bytes = 0;
    std::atomic<std::uint64_t> bytes{0};
    std::atomic<int> phase{0}; // 0 reading and building (the build runs beside the read's end), 1 judging, 2 done
    LoadedTrace loaded;
    std::string error;
    std::thread thread;
    ~LoadJob() {
        if (thread.joinable()) thread.join();
    }
};

struct App {
    // The file.
    std::string path;
    std::unique_ptr<trace::Trace> trace;
    std::unique_ptr<Timeline> timeline;
    std::string error;                 // last load error (shown in a banner)
    std::vector<std::string> warnings; // reader warnings of the loaded file
    // The validator's verdict on the trace (model/verdict.hpp), judged where
    // it was loaded; a banner names its first contradiction (ui/verdict_view.cpp).
    Verdict verdict;
    std::unique_ptr<LoadJob> loading;  // a load in progress (interactive viewer)
    std::unique_ptr<LiveFollow> live;  // following a trace while it is written (live_view.hpp)

    // The view.
    TimeView view;
    std::int64_t cursor = -1;          // pinned instant for the scheduler state (-1: follow the pointer)
    std::int64_t pointer_time = -1;    // time under the pointer this frame
    std::optional<Selection> selection;
    Hover hover;
    std::uint64_t focus_fiber = 0;     // highlighted fiber (clicked)
    bool show_fiber_lanes = true;
    bool show_flows = true;
    bool show_counters = true;         // counter tracks under the thread lanes (View > Counter tracks)
    bool show_queues = true;           // each worker's ready queue under its lane (View > Ready queues)
    unsigned flow_kinds = ~0u;         // the flow kinds drawn, bit FlowKind (View > Flow kinds, the legend)
    // The checkpoint whose window was last shown (a checkpoint link, the
    // opening view): while the view shows its stretch (its mark, or a part
    // of [mark, the next checkpoint's mark) a frame past a slow lead-in
    // starts in), the arrows its story is not about (checks.md `focus:`)
    // are drawn dimmed, unless `focus_all`.
    std::string active_checkpoint;
    std::int64_t active_checkpoint_time = 0;              // its mark's
    std::int64_t active_checkpoint_next = INT64_MAX;      // the next checkpoint's mark's
    bool focus_all = false;
    // The current lesson's checks.md parsed once (lessonChecks(), for its
    // `focus:` and `opens:` lines), with the text it was parsed from: a
    // different lesson, or a changed text, parses again.
    bool checks_read = false;
    std::string checks_source;
    checks::LessonChecks checks_parsed;
    bool fit_requested = true;
    // The model whose first frame's freed scratch was handed back to the
    // system (drawApp; platform/heap_trim.hpp says why).
    std::uint64_t heap_trimmed_for = 0; // its Timeline::serial
    ViewHistory history;            // back/forward through the views commands left (ui/navigation.cpp)
    TimelineCaches timeline_caches; // what the timeline keeps between frames (ui/timeline_caches.hpp)
    PanelState panels;              // what the side panels and dialogs keep between frames (ui/panel_state.hpp)
    bool view_placed = false;       // the view has been placed on this trace (the first placement is not history)
    bool open_lesson_view = false;  // open on the lesson's first checkpoint's window once the trace is in

    // Event table.
    EventFilter filter;
    char fiber_search[64] = {};
    std::vector<std::uint32_t> table_rows;
    bool table_dirty = true;
    // A record selected in the table (the verdict banner's jump): its row is
    // the cursor's while the cursor stays at its time, even among records of
    // that same instant; kNoEvent: the cursor's row is the last at its time.
    std::uint32_t selected_event = kNoEvent;
    std::uint32_t table_cursor_event = kNoEvent; // the record whose row the table last highlighted as the cursor's
    trace::EventKind step_kind = trace::EventKind::Steal;

    // Open-file prompt.
    bool open_prompt = false;
    char open_path[512] = {};

    // Lessons: the browser, the narrative, running a lesson in the background.
    struct LessonJob {
        int lesson = 0;
        LessonArguments arguments; // the program's --threads, --backend and --scheduler
        bool compare = false; // load into the comparison slot
        std::string trace_path;
        LessonRun run;
        LoadedTrace loaded; // the finished run, read and judged on the job's thread
        std::string error;
        bool ok = false;
        std::atomic<bool> done{false};
        std::thread thread;
        ~LessonJob() {
            if (thread.joinable()) thread.join();
        }
    };
    std::vector<Lesson> lessons;
    std::string lessons_error;
    bool lessons_loaded = false;
    int lesson_index = -1;         // into `lessons`: the lesson whose trace is shown
    int browse_index = 0;          // selected in the browser
    int lesson_threads = 0;        // 0: the lesson's default
    int lesson_backend = 0;        // into kLessonBackends: 0 automatic, 1 io_uring, 2 epoll
    int lesson_scheduler = 0;      // into kLessonSchedulers: 0 the lesson's, 1 seed, 2 scaling
    int compare_threads = 1;
    int compare_backend = 0;
    int compare_scheduler = 0;
    Document lesson_document;
    Document browse_summary;       // the browsed lesson's summary, rendered (never raw Markdown)
    int browse_summary_of = -1;    // which lesson browse_summary is
    std::unique_ptr<LessonJob> job;
    std::string last_run_output;
    // Which of the lesson's runs is shown, when not simply the first
    // (LessonRun::describeAttempts: runs that missed a precondition), and
    // whether even it misses one (shown as a warning).
    std::string run_attempts;
    bool run_unmet = false;

    // A second run of the same lesson, stacked under the first (Compare).
    std::unique_ptr<trace::Trace> compare_trace;
    std::unique_ptr<Timeline> compare_timeline;
    std::string compare_label;
    Verdict compare_verdict; // its own banner (its jump moves the cursor: the event table lists the first run)
    // Compare lines up on the active checkpoint (the opening one, or the one
    // a link last showed): its mark in the compared run is drawn under its
    // mark in this run (compareShift). Kept for the pair it was computed for.
    std::string compare_shift_of;           // the checkpoint (empty: not computed)
    const trace::Trace* compare_shift_trace = nullptr;
    std::optional<std::int64_t> compare_shift; // ns added to the compared run's times; none: not aligned

    // Step mode and playback.
    std::uint32_t step_event = kNoEvent;
    std::string step_text;
    bool playing = false;
    float playback_rate = 4.0f;    // decisions per second (ui/playback.cpp)
    double playback_credit = 0;    // decisions due but not yet taken
    // Test hook (screenshot --motion F): the state panel shows the move into
    // the cursor's state from the instant before it, frozen at fraction F of
    // its motion (ui/state_view.cpp); -1: moves animate in real time.
    float motion_fraction = -1;

    // Screenshot mode: no interaction, fixed layout.
    bool headless = false;
    std::optional<SidePanel> panel_request; // the side tab to select next frame
};

// Reads `path`, builds its model and judges it, on the calling thread (a
// loader's, a lesson run's, or a headless screenshot's). False with `error`
// set when it cannot be read; throws std::bad_alloc. `phase`, if given, is
// set to 1 while the trace is judged (LoadJob::phase).
bool readModelAndJudge(const std::string& path, LoadedTrace& out, std::string& error, trace::ReadOptions options = {},
                       std::atomic<int>* phase = nullptr);
// Loads `path` into `app` (replacing what was there only on success), judged.
bool loadTrace(App& app, const std::string& path);
// The warnings shown above the timeline: the reader's, and what the trace
// says about itself (more worker threads than CPUs).
std::vector<std::string> traceWarnings(const trace::Trace& trace, const Timeline& timeline);
// Shows a loaded trace, its model and its verdict (replacing what was
// shown), as a newly opened file.
void adopt(App& app, const std::string& path, LoadedTrace loaded);
// Shows a compared run (the lesson panel's Compare) in the second slot.
void adoptCompared(App& app, LoadedTrace loaded, std::string label);
// The same on a background thread; drawApp shows a progress bar and swaps
// the trace in when it is ready.
void loadTraceAsync(App& app, const std::string& path);
// Draws one frame of the whole application.
void drawApp(App& app, const Fonts& fonts);

// Panels (each in its own file).
void drawTimeline(App& app, const Fonts& fonts, float width, float height);
void drawSchedulerState(App& app, const Fonts& fonts);
void drawSelectionStats(App& app);
void drawEventTable(App& app);
void drawLegend(App& app);
// The banner naming a trace's first contradiction, for the trace and a
// compared run (nothing when they are consistent); a click jumps there.
void drawVerdict(App& app);
void drawLessonPanel(App& app, const Fonts& fonts);
// Shows lesson `index`'s golden trace (its Reference run, Lesson::reference)
// with its narrative, on its first checkpoint's window; false (app.error) if missing.
bool openLessonReference(App& app, int index);
// Whether the trace shown is lesson `lesson`'s golden trace rather than a run of the student's.
bool showsReference(const App& app, const Lesson& lesson);
// Starts running lesson `index` in the background (compare: into the second slot).
void startLesson(App& app, int index, const LessonArguments& arguments, bool compare);
// Finishes a background lesson run if it is done (call once per frame).
void pollLesson(App& app);
// Shows lesson `number`'s narrative beside the loaded trace (false if unknown).
bool attachLesson(App& app, int number);
// Shows the narrative of the lesson the loaded trace was recorded from (its
// header's command line names the lesson's program); false if it is no
// lesson's. A trace opened without --lesson (fiberscope view FILE) gets its
// own lesson's panel, not the first lesson's.
bool recognizeLesson(App& app);
// Step mode and playback (ui/playback.cpp): the next (+1) or previous (-1)
// decision from the step cursor, explained and revealed (false: none left);
// playing takes `playback_rate` decisions a second and pauses at checkpoints.
bool stepDecision(App& app, int direction);
// The narrated tour (ui/tour.cpp): the next (+1) or previous (-1) sentence
// of the lesson's text that names a checkpoint or records: shows that
// checkpoint's window, lights the records (App::panels.tour.lit), puts the
// cursor and the code view at the first, and the sentence in the step box.
// False at either end, or without a lesson.
bool tourStep(App& app, int direction);
void startPlayback(App& app);
void advancePlayback(App& app, double seconds);

// Navigation (ui/navigation.cpp). Every command that moves the view goes
// through setView (recorded in the zoom history). revealTime pins the cursor
// at `t` and, unless `t` is comfortably in view (not in the outer 10%),
// zooms to the events around it; revealRange does that for a range, keeping
// the view only if `keep` is comfortably in it and fills `min_fill` of it.
void setView(App& app, const TimeView& view);
// The times the timeline can show: the trace's, and a compared run's too
// (the two share the time axis and either may be the longer).
TimeRange shownSpan(const App& app);
void revealTime(App& app, std::int64_t t);
void revealRange(App& app, TimeRange keep, TimeRange window, double min_fill);
// The times of the trace's checkpoint marks, sorted (and their labels).
std::vector<std::int64_t> checkpointTimes(const trace::Trace& trace, std::vector<std::string>* labels = nullptr);
// The window of the checkpoint labelled `label` (model/time_view's checkpointWindow).
std::optional<TimeRange> checkpointRange(const App& app, const std::string& label);
// Where checkpoint `label`'s story happens, by how lesson.md tells it: from
// the mark to the next checkpoint ("After", "From", "Between" it), from the
// previous one to the mark ("Up to", "Until", "Before"), else both.
std::optional<TimeRange> storySegment(const App& app, const std::string& label);
// How much of `view`'s width the checkpoint's story spans: from the first
// cause to the last effect of the cause -> effect links (flows, and waits
// to what ends them) with an end in its segment, clipped to it and to the
// view, over the view's span. A lesson's opening view is held to >= 0.4
// (tests/viewer/test_screenshot.cpp).
double storyFraction(const App& app, const std::string& label, const TimeView& view);
// Pins the cursor on the checkpoint and zooms to its window (false: no such
// mark). A window already comfortably in view and filling `min_fill` of it
// or more is left as it is; the opening view passes 1 (always framed: a
// window of 38% of the whole trace is no opening view).
bool revealCheckpoint(App& app, const std::string& label, double min_fill = 0.25);
// The current lesson's checks.md, parsed (empty if there is none, or it does not parse).
const checks::LessonChecks& lessonChecks(App& app);
// The checkpoint a lesson opens on: its checks.md `opens:`, else the trace's first ("": none).
std::string openingCheckpoint(App& app);
// How far the compared run is moved to line up on the active checkpoint
// (this run's mark minus the compared run's), or none when either run lacks
// it (then the two share the time axis as recorded).
std::optional<std::int64_t> compareShift(App& app);
// The arrow kinds the active checkpoint's story is about (bit FlowKind), or
// 0: draw every kind alike (no focus, `focus_all`, or its mark out of view).
std::uint32_t focusedFlows(App& app);
// Frames the opening checkpoint's window (a lesson's opening view); false if the trace has none.
bool openOnOpeningCheckpoint(App& app);
void zoomToSelection(App& app);
// Carries out fit_requested and open_lesson_view (drawApp, once a frame):
// a lesson opens on its first checkpoint's window, Back from there is the
// whole trace.
void applyViewRequests(App& app);
void viewBack(App& app);
void viewForward(App& app);
// Jumps to the trace's first contradiction (the verdict banner's click):
// pins the cursor at its record's time, zooms there (revealTime), selects
// the record in the event table and shows that table, clearing a filter or
// a selected range that would hide it. False when the trace has none.
bool revealViolation(App& app);
// The compared run's first contradiction: the cursor and the view only
// (the event table lists the first run's records).
bool revealComparedViolation(App& app);

// The instant the scheduler-state panel shows: the pinned cursor, else the
// pointer, else the middle of the view.
std::int64_t stateTime(const App& app);

} // namespace fiberscope::viewer
