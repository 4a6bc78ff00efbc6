// The live view end to end (Xvfb + Mesa): the viewer runs a program that
// never ends, its timeline grows frame by frame while it runs, the view
// follows "now" until the user moves it, and closing the viewer stops the
// program. Also `fiberscope screenshot --live`, the headless form.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <string>
#include <thread>

#include "platform/virtual_display.hpp"
#include "platform/window.hpp"
#include "ui/app.hpp"
#include "ui/live_view.hpp"

using namespace std::chrono_literals;
using namespace fiberscope::viewer;

namespace {

const std::string kBusy = FIBERSCOPE_BUSY_TRACED;

std::string tracePath(const char* what) { return "/tmp/fiberscope-live-view-" + std::to_string(getpid()) + "-" + what + ".fstrace"; }

// Draws frames until `done` or the bound; false on the bound.
template <class F>
bool framesUntil(App& app, Window& window, F&& done, std::chrono::seconds bound = 20s) {
    const auto deadline = std::chrono::steady_clock::now() + bound;
    while (std::chrono::steady_clock::now() < deadline) {
        window.frame([&] { drawApp(app, window.fonts()); });
        window.present();
        if (done()) return true;
        std::this_thread::sleep_for(10ms);
    }
    return false;
}

} // namespace

TEST_CASE("the live view shows a running program's timeline growing and follows now", "[live][xvfb]") {
    VirtualDisplay display;
    std::string error;
    REQUIRE(display.ensure(error));
    Window window;
    REQUIRE(window.open({.width = 1200, .height = 700, .visible = false, .title = "live"}, error));
    const std::string path = tracePath("follow");
    pid_t child = -1;
    {
        App app;
        app.headless = true;
        REQUIRE(startLive(app, {kBusy, "busy"}, path));
        child = app.live->child;
        REQUIRE(child > 0);
        // Three snapshots adopted, each longer than the one before, while the program runs.
        std::int64_t last_end = -1;
        int grew = 0;
        const bool grown = framesUntil(app, window, [&] {
            if (!app.timeline || app.timeline->end_time <= last_end) return false;
            last_end = app.timeline->end_time;
            return ++grew >= 3;
        });
        INFO("snapshots that grew: " << grew << "; follower: " << app.live->error);
        REQUIRE(grown);
        REQUIRE(kill(child, 0) == 0); // still running
        REQUIRE(app.trace->events.size() > 10);
        REQUIRE_FALSE(app.trace->header.complete);
        // Following now: the newest records are in view.
        REQUIRE(app.live->follow_now);
        framesUntil(app, window, [&] { return app.timeline->end_time > last_end; });
        REQUIRE(app.view.end >= static_cast<double>(app.timeline->end_time));
        REQUIRE(app.view.start <= static_cast<double>(app.timeline->end_time));
        // The user moves the view: following stops, and the view stays put as the trace grows.
        const double moved_start = static_cast<double>(app.timeline->start_time);
        app.view.start = moved_start;
        app.view.end = moved_start + 1'000'000;
        last_end = app.timeline->end_time;
        REQUIRE(framesUntil(app, window, [&] { return app.timeline->end_time > last_end + 100'000'000; }));
        REQUIRE_FALSE(app.live->follow_now);
        REQUIRE(app.view.start == moved_start);
        REQUIRE(app.view.end == moved_start + 1'000'000);
    }
    // Closing the viewer stopped and reaped the program.
    errno = 0;
    REQUIRE(kill(child, 0) == -1);
    REQUIRE(errno == ESRCH);
    unlink(path.c_str());
}

TEST_CASE("the live view names a program that cannot start, or never records", "[live]") {
    App app;
    app.headless = true;
    REQUIRE_FALSE(startLive(app, {"/nonexistent/fiberscope-no-such-program"}, tracePath("missing")));
    REQUIRE(app.error.find("cannot run '/nonexistent/fiberscope-no-such-program'") != std::string::npos);
    REQUIRE_FALSE(app.live);

    // /bin/true runs, exits 0, and writes no trace.
    REQUIRE(startLive(app, {"/bin/true"}, tracePath("none")));
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    std::string reason;
    for (;;) {
        pollLive(app);
        {
            std::lock_guard lock(app.live->mutex);
            reason = app.live->error;
        }
        if (!reason.empty() || std::chrono::steady_clock::now() > deadline) break;
        std::this_thread::sleep_for(20ms);
    }
    INFO(reason);
    REQUIRE(reason.find("without writing a trace") != std::string::npos);
    std::lock_guard lock(app.live->mutex);
    REQUIRE(app.live->program_done);
    REQUIRE(app.live->program_exit_code == 0);
}

TEST_CASE("fiberscope screenshot --live pictures a program while it runs", "[live][xvfb]") {
    const std::string trace_path = tracePath("shot");
    const std::string png = "/tmp/fiberscope-live-view-" + std::to_string(getpid()) + ".png";
    unlink(png.c_str());
    const std::string command = std::string(FIBERSCOPE_TOOL) + " screenshot --live --after 700ms --trace " + trace_path + " -o " +
                                png + " -- " + kBusy + " busy 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE(pipe);
    std::string output;
    char buffer[512];
    while (std::fgets(buffer, sizeof buffer, pipe)) output += buffer;
    const int status = pclose(pipe);
    INFO(output);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    REQUIRE(access(png.c_str(), R_OK) == 0);
    // The program was stopped after the picture: its trace never completed, and holds what was drawn.
    fiberscope::trace::Trace trace;
    fiberscope::trace::ReadError error;
    REQUIRE(fiberscope::trace::readTrace(trace_path, trace, error));
    REQUIRE_FALSE(trace.header.complete);
    REQUIRE(trace.events.size() > 10);
    unlink(png.c_str());
    unlink(trace_path.c_str());
}
