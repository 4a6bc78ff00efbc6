// What the side panels and dialogs keep between frames (App::panels): the
// event table's measured rows and its scroll-follow, the lesson panel's
// questions and code view, the scheduler state's object index and chip
// motion, the whole-run statistics, the Open dialog's directory. Here rather
// than in function statics: a new trace starts from a clean slate where it
// must (adopt() resets the table and the motion), and a reader finds every
// panel's state in one place. Caches are keyed by the serials of the trace
// and model they were built from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "fiberscope/analysis/object_state.hpp"
#include "lessons/checks.hpp"
#include "lessons/tour.hpp"
#include "model/range_stats.hpp"
#include "model/source_location.hpp"
#include "model/state_motion.hpp"
#include "ui/markdown.hpp"

namespace fiberscope::viewer {

// The event table (ui/event_table.cpp): its rows' measured heights and tops
// for the filter shown, and how it follows the cursor.
struct EventTableState {
    std::int64_t last_t0 = 0, last_t1 = 0; // the filter's range the rows were measured for
    std::vector<float> heights, tops;      // row heights (0: not measured yet) and tops
    float wrap_width = 0;
    bool tops_dirty = true;
    std::int64_t last_cursor = -1;
    int follow_frames = 0;
    double user_scrolled_at = -1e9;
    float last_scroll = 0, requested_scroll = -1;
};

// The lesson panel's questions (ui/lesson_view.cpp): parsed once per lesson
// and trace, with the student's answers.
struct LessonCheckState {
    int lesson = -1;
    std::uint64_t trace = 0; // its Trace::serial
    std::size_t events = 0;
    checks::LessonChecks checks;
    std::string parse_error;
    std::vector<Document> texts; // each question's text, then the exercise's
    struct Answer {
        int input = 0;
        bool checked = false, right = false;
        std::string verdict;
    };
    std::vector<Answer> answers;
    std::vector<std::int64_t> workers; // the trace's workers, for a worker-of answer
};

// The lesson panel's code view: the lesson's main.cpp, and the line the
// fiber is at (redone only when the point in the trace changes).
struct LessonCodeState {
    std::string path; // the file read into `lines`
    bool found = false;
    std::vector<std::string> lines;
    std::uint64_t trace = 0;           // the look-up below was made for this trace (its serial)...
    std::size_t events = 0;
    std::uint32_t thread = kAnyThread; // ...thread and time
    std::int64_t time = -1;
    std::optional<SourceLine> where;
    bool own_fiber = false; // `where` is the running fiber's (else any fiber's)
    std::uint32_t scrolled_to = 0;
};

// The scheduler-state panel's object index (built once per trace and model).
struct ObjectIndexCache {
    std::uint64_t trace = 0, timeline = 0; // their serials
    std::size_t events = 0;
    std::int64_t end = 0;
    analysis::ObjectIndex index;
};

// The narrated tour (lessons/tour.hpp, ui/tour.cpp): the shown lesson's
// stops, the one shown (-1: none yet), and the records it lights on the
// timeline (indices into the trace's events, in time order).
struct LessonTourState {
    int lesson = -1;
    std::uint64_t trace = 0; // the trace's serial its stops were chosen for (a backend's sections)
    std::vector<tour::Stop> stops;
    int index = -1;
    std::vector<std::uint32_t> lit;
    // When many lit records spread over the view, the first instance of
    // what the sentence names, framed up close (ui/tour.cpp); else empty.
    std::vector<std::uint32_t> example;
};

// The statistics of a whole run, this one's and the compared one's.
struct WholeRunStats {
    std::uint64_t timeline = 0; // its Timeline::serial
    std::size_t events = 0;
    std::int64_t end = 0;
    RangeStats stats;
};

// The Open dialog: the directory it lists, kept from one opening to the next.
struct OpenDialogState {
    std::string directory;
    std::vector<std::pair<std::string, bool>> entries; // name, is a directory
};

struct PanelState {
    EventTableState events;
    LessonCheckState checks;
    LessonCodeState code;
    LessonTourState tour;
    std::unique_ptr<ObjectIndexCache> objects;
    ChipMotion motion; // the state panel's chips between frames: the layout shown, and a move under way
    WholeRunStats whole_run[2];
    OpenDialogState open_dialog;
};

} // namespace fiberscope::viewer
