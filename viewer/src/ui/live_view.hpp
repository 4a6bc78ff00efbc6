// Watching a trace grow while its program runs (`fiberscope view --live --
// PROG`, `record --view`, `view FILE` on an unfinished file, a lesson run
// from the lesson panel).
//
// Design: a follower thread owns the growing Trace (trace::TraceFollower
// reads what the file gained every kPollInterval) and, whenever it grew,
// publishes a snapshot: a copy of the trace and the model built from it. The
// window thread adopts the newest snapshot at the start of a frame, so a
// frame never waits for a read or a build, and the model the panels draw is
// always one whole, consistent model (never half-appended). The model is
// appended to (analysis::TimelineBuilder: only the poll's new records are
// modelled), but a snapshot still copies the trace and the model, O(events);
// the thread waits at least as long as its last snapshot took before the
// next one, so a large live trace is refreshed less often instead of
// starving the window. The trace is judged (model/verdict.hpp) once, on the
// follower's thread, when its recording is complete: a growing trace is not,
// because its newest records may lack causes (a wake-up's send, a schedule)
// that still sit unwritten in another thread's buffer.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fiberscope/trace_reader.hpp"
#include "fiberscope/analysis/timeline.hpp"
#include "model/time_view.hpp"
#include "model/verdict.hpp"

namespace fiberscope::viewer {

struct App;

struct LiveSnapshot {
    std::unique_ptr<trace::Trace> trace;
    std::unique_ptr<analysis::Timeline> timeline;
    Verdict verdict; // judged only in the snapshot of the complete recording
    std::int64_t published_realtime_ns = 0; // CLOCK_REALTIME when it was ready
};

struct LiveFollow {
    std::string path;
    std::vector<std::string> program; // empty: following a file someone else writes
    pid_t child = -1;

    // The window thread's state.
    bool follow_now = true;    // the view's right edge tracks the newest record
    bool state_at_now = false; // the scheduler-state panel shows the present instant
    bool placed = false;       // `placed_view` is the view we set last frame
    TimeView placed_view;
    std::uint64_t adopted = 0; // snapshots adopted

    // Shared with the follower thread, under `mutex`.
    std::mutex mutex;
    std::condition_variable wake;
    LiveSnapshot ready;            // the newest snapshot not yet adopted
    bool ready_reordered = false;  // events moved since the last adopted snapshot
    std::string error;             // the follower stopped: why
    std::string program_status;    // "running", "exited with status 0", ...
    bool program_done = false;
    int program_exit_code = 0;
    bool finished = false;         // the recording is complete and read
    std::int64_t last_build_ns = 0;
    bool stop = false;

    std::thread thread;
    ~LiveFollow(); // stops the follower; stops the program if it still runs (SIGTERM, then SIGKILL)
};

// Starts `program` recording into `trace_path` and follows it. False (with a
// one-line reason in app.error) if it cannot be started.
bool startLive(App& app, const std::vector<std::string>& program, const std::string& trace_path);
// Follows a file another process is writing.
void followFile(App& app, const std::string& path);
// Whether `path`'s header says its recording is still going on (false when
// it is complete, or unreadable: then the one-shot reader reports why).
bool stillRecording(const std::string& path);

// Once per frame, before drawing: adopts the newest snapshot and moves the
// view with "now" while following.
void pollLive(App& app);
// The live line (program state, events so far, Follow / State at now toggles).
void drawLiveStatus(App& app);

} // namespace fiberscope::viewer
