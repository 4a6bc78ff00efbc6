// The live view: the follower thread, adopting its snapshots, following
// "now", and the live status line. See live_view.hpp for the design.
#include "ui/live_view.hpp"

#include <imgui.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <new>

#include "fiberscope/trace_follower.hpp"
#include "fiberscope/trace_vocabulary.hpp"
#include "platform/child_process.hpp"
#include "ui/app.hpp"

namespace fiberscope::viewer {

namespace {

using namespace std::chrono_literals;

// How often the follower looks at the file. The writer makes records durable
// within about 100 ms, so a record is on screen within about 100 ms + this +
// one build + one frame.
constexpr auto kPollInterval = 50ms;
// A program that exits without creating its trace file: how long to wait for
// the file before saying so.
constexpr auto kNoTraceGrace = 2s;

std::int64_t realtimeNs() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Reaps the program if it ended (without blocking).
void checkProgram(LiveFollow& live) {
    if (live.child <= 0) return;
    {
        std::lock_guard lock(live.mutex);
        if (live.program_done) return;
    }
    int status = 0;
    const pid_t got = waitpid(live.child, &status, WNOHANG);
    if (got != live.child) return;
    std::lock_guard lock(live.mutex);
    live.program_done = true;
    live.program_exit_code = exitCode(status);
    live.program_status = describeExit(status);
}

void followerMain(LiveFollow* live) {
    trace::Trace trace;
    trace::TraceFollower follower(live->path);
    // The model grows with the trace: each poll's records are appended, not
    // the whole trace modelled again (a poll that moved records starts over).
    analysis::TimelineBuilder builder;
    bool judged = false; // the complete recording's snapshot was judged and published
    std::chrono::steady_clock::time_point program_ended{};
    auto wait = std::chrono::steady_clock::duration(kPollInterval);
    try {
        for (;;) {
            {
                std::unique_lock lock(live->mutex);
                live->wake.wait_for(lock, wait, [&] { return live->stop; });
                if (live->stop) return;
            }
            checkProgram(*live);
            bool program_done;
            {
                std::lock_guard lock(live->mutex);
                program_done = live->program_done || live->child <= 0;
            }
            trace::PollResult result;
            trace::ReadError error;
            const auto started = std::chrono::steady_clock::now();
            if (!follower.poll(trace, error, &result)) {
                std::lock_guard lock(live->mutex);
                live->error = error.text();
                return;
            }
            wait = kPollInterval;
            // The complete recording is published once more if it did not
            // grow in the poll that found it complete: that snapshot is the
            // one judged.
            const bool complete = follower.finished();
            if (result.grew || (complete && !judged)) {
                if (result.grew) {
                    if (result.reordered) builder.reset();
                    builder.append(trace);
                }
                auto snapshot = std::make_unique<trace::Trace>(trace);
                auto timeline = std::make_unique<analysis::Timeline>(builder.snapshot(*snapshot));
                Verdict verdict;
                if (complete) {
                    verdict = judgeTrace(*snapshot, *timeline);
                    judged = true;
                }
                const auto built = std::chrono::steady_clock::now() - started;
                std::lock_guard lock(live->mutex);
                live->ready.trace = std::move(snapshot);
                live->ready.timeline = std::move(timeline);
                live->ready.verdict = std::move(verdict);
                live->ready.published_realtime_ns = realtimeNs();
                live->ready_reordered = live->ready_reordered || result.reordered;
                live->last_build_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(built).count();
                live->finished = follower.finished();
                // Refresh a big model less often rather than starve the window.
                wait = std::max<std::chrono::steady_clock::duration>(kPollInterval, built);
            }
            if (follower.finished()) {
                std::lock_guard lock(live->mutex);
                live->finished = true;
                if (live->child <= 0 || live->program_done) return;
                continue; // wait for the program to be reaped
            }
            if (program_done && live->child > 0) {
                // The program ended but its trace did not: it crashed (the
                // trace ends at its last whole chunk), or never recorded.
                if (program_ended == std::chrono::steady_clock::time_point{}) program_ended = std::chrono::steady_clock::now();
                if (!result.grew && std::chrono::steady_clock::now() - program_ended > kNoTraceGrace) {
                    std::lock_guard lock(live->mutex);
                    live->error = follower.started()
                                      ? "the program " + live->program_status + " before its recording stopped: the trace ends at its last complete chunk"
                                      : live->path + ": the program " + live->program_status +
                                            " without writing a trace (is it built on the fiberscope runtime?)";
                    return;
                }
            }
        }
    } catch (const std::bad_alloc&) {
        std::lock_guard lock(live->mutex);
        live->error = "out of memory while following " + live->path + " (the view keeps the last snapshot)";
    }
}

void startFollower(App& app, std::unique_ptr<LiveFollow> live) {
    LiveFollow* raw = live.get();
    app.live = std::move(live);
    raw->thread = std::thread(followerMain, raw);
}

} // namespace

LiveFollow::~LiveFollow() {
    {
        std::lock_guard lock(mutex);
        stop = true;
    }
    wake.notify_all();
    if (thread.joinable()) thread.join();
    if (child > 0 && !program_done) {
        // The viewer closed while the program runs: stop it (it is ours).
        kill(child, SIGTERM);
        int status = 0;
        for (int i = 0; i < 200; ++i) { // up to 2 s to exit cleanly
            if (waitpid(child, &status, WNOHANG) == child) return;
            usleep(10'000);
        }
        kill(child, SIGKILL);
        while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    }
}

bool startLive(App& app, const std::vector<std::string>& program, const std::string& trace_path) {
    // An old file of that name must not be shown as this run's.
    unlink(trace_path.c_str());
    std::string error;
    const pid_t pid = spawnTraced(program, trace_path, error);
    if (pid < 0) {
        app.error = error;
        return false;
    }
    auto live = std::make_unique<LiveFollow>();
    live->path = trace_path;
    live->program = program;
    live->child = pid;
    live->program_status = "running";
    startFollower(app, std::move(live));
    return true;
}

void followFile(App& app, const std::string& path) {
    auto live = std::make_unique<LiveFollow>();
    live->path = path;
    startFollower(app, std::move(live));
}

bool stillRecording(const std::string& path) {
    trace::TraceHeader header;
    trace::ReadError error;
    return trace::readTraceHeader(path, header, error) && !header.complete;
}

void pollLive(App& app) {
    if (!app.live) return;
    LiveFollow& live = *app.live;
    LiveSnapshot snapshot;
    bool reordered = false;
    {
        std::lock_guard lock(live.mutex);
        snapshot = std::move(live.ready);
        live.ready = {};
        reordered = live.ready_reordered;
        live.ready_reordered = false;
    }
    if (snapshot.trace) {
        if (live.adopted == 0) {
            adopt(app, live.path, LoadedTrace{std::move(snapshot.trace), std::move(snapshot.timeline), std::move(snapshot.verdict)});
            live.placed = false;
        } else {
            app.warnings = traceWarnings(*snapshot.trace, *snapshot.timeline);
            app.trace = std::move(snapshot.trace);
            app.timeline = std::move(snapshot.timeline);
            app.verdict = std::move(snapshot.verdict);
            app.table_dirty = true;
            if (reordered) { // indices into the events moved
                app.step_event = kNoEvent;
                app.selected_event = kNoEvent;
                app.hover = Hover{};
            }
        }
        ++live.adopted;
    }
    if (!app.timeline || app.fit_requested) return; // the first fit comes first
    if (live.follow_now) {
        // A view that differs from the one we placed was moved by the user: stop following.
        if (live.placed && (app.view.start != live.placed_view.start || app.view.end != live.placed_view.end)) {
            live.follow_now = false;
        } else {
            const double t0 = static_cast<double>(app.timeline->start_time);
            const double t1 = static_cast<double>(app.timeline->end_time);
            TimeView view = app.view;
            const bool whole = view.start <= t0 + 1; // showing it from its start: keep showing all of it
            if (whole) {
                view.fit(t0, t1);
            } else {
                const double span = view.span();
                view.end = t1 + span * 0.02;
                view.start = view.end - span;
            }
            app.view = view;
            live.placed_view = view;
            live.placed = true;
        }
    }
    if (live.state_at_now) app.cursor = app.timeline->end_time;
}

void drawLiveStatus(App& app) {
    if (!app.live) return;
    LiveFollow& live = *app.live;
    std::string error, status;
    bool finished, program_done;
    {
        std::lock_guard lock(live.mutex);
        error = live.error;
        status = live.program_status;
        finished = live.finished;
        program_done = live.program_done;
    }
    const bool running = !finished && error.empty() && !(program_done && live.child > 0);
    ImGui::TextColored(running ? ImVec4(1, 0.3f, 0.3f, 1) : ImVec4(0.6f, 0.6f, 0.6f, 1), running ? "LIVE" : "ENDED");
    ImGui::SameLine();
    std::string line;
    if (!live.program.empty()) {
        const std::string& program = live.program[0];
        line = program.substr(program.rfind('/') == std::string::npos ? 0 : program.rfind('/') + 1) + " " + status + "; ";
    }
    if (!app.trace) {
        line += "waiting for " + live.path + " ...";
    } else {
        line += trace::formatCount(app.trace->events.size()) + " events, " + trace::formatDuration(app.timeline->end_time) +
                (finished ? " (recording complete)" : " recorded so far");
        // Said, so that the lack of a verdict banner is not read as "consistent"
        // (live_view.hpp says why only a complete recording is judged).
        if (!app.verdict.checked) line += "; checked against the scheduler's rules once complete";
    }
    ImGui::TextUnformatted(line.c_str());
    if (app.trace) {
        ImGui::SameLine();
        if (ImGui::Checkbox("Follow now", &live.follow_now)) live.placed = false;
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("Keep the newest records in view (moving the view turns this off)");
        ImGui::SameLine();
        if (ImGui::Checkbox("State at now", &live.state_at_now) && !live.state_at_now) app.cursor = -1;
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("The scheduler-state panel shows the present instant");
    }
    if (live.child > 0 && !program_done) {
        ImGui::SameLine();
        if (ImGui::SmallButton("Stop program")) kill(live.child, SIGTERM);
    }
    if (!error.empty()) ImGui::TextColored(ImVec4(1, 0.45f, 0.4f, 1), "%s", error.c_str());
}

} // namespace fiberscope::viewer
