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
#include "model/filter.hpp"
#include "model/timeline.hpp"
#include "platform/window.hpp"
#include "ui/time_view.hpp"

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

struct App {
    // The file.
    std::string path;
    std::unique_ptr<trace::Trace> trace;
    std::unique_ptr<Timeline> timeline;
    std::string error;                 // last load error (shown in a banner)
    std::vector<std::string> warnings; // reader warnings of the loaded file

    // The view.
    TimeView view;
    std::int64_t cursor = -1;          // pinned instant for the scheduler state (-1: follow the pointer)
    std::int64_t pointer_time = -1;    // time under the pointer this frame
    std::optional<Selection> selection;
    Hover hover;
    std::uint64_t focus_fiber = 0;     // highlighted fiber (clicked)
    bool show_fiber_lanes = true;
    bool show_flows = true;
    bool fit_requested = true;

    // Event table.
    EventFilter filter;
    char fiber_search[64] = {};
    std::vector<std::uint32_t> table_rows;
    bool table_dirty = true;
    trace::EventKind step_kind = trace::EventKind::Steal;

    // Open-file prompt.
    bool open_prompt = false;
    char open_path[512] = {};

    // Screenshot mode: no interaction, fixed layout.
    bool headless = false;
    int panel_request = -1; // select a side tab next frame (0 state, 1 selection, 2 events, 3 legend)
};

// Loads `path` into `app` (replacing what was there only on success).
bool loadTrace(App& app, const std::string& path);
// Draws one frame of the whole application.
void drawApp(App& app, const Fonts& fonts);

// Panels (each in its own file).
void drawTimeline(App& app, const Fonts& fonts, float width, float height);
void drawSchedulerState(App& app, const Fonts& fonts);
void drawSelectionStats(App& app);
void drawEventTable(App& app);
void drawLegend(App& app);

// The instant the scheduler-state panel shows: the pinned cursor, else the
// pointer, else the middle of the view.
std::int64_t stateTime(const App& app);

} // namespace fiberscope::viewer
