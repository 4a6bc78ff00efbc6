// The viewer's main loop, and the headless screenshot renderer.
#include "ui/viewer_main.hpp"

#include <imgui.h>

#include <cerrno>
#include <cstdio>
#include <chrono>
#include <cstring>
#include <thread>
#include <functional>
#include <mutex>

#include "platform/virtual_display.hpp"
#include "platform/window.hpp"
#include "ui/app.hpp"

namespace fiberscope::viewer {

// A quick check before opening a window: the file opens and starts like a
// trace (the full validation runs in the background load).
static bool looksLikeTrace(const std::string& path, std::string& error) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file) {
        error = path + ": offset 0: cannot open: " + std::strerror(errno);
        return false;
    }
    char magic[8] = {};
    const std::size_t n = std::fread(magic, 1, sizeof magic, file);
    std::fclose(file);
    if (n != sizeof magic || std::memcmp(magic, "FSTRACE", 8) != 0) {
        error = path + ": offset 0: not a Fiberscope trace (bad magic; expected \"FSTRACE\")";
        return false;
    }
    return true;
}

// Opens the window, then runs `start` (if any: false ends with exit code
// 127), then draws frames until the window is closed.
static int runWindow(App& app, const std::function<bool()>& start = {});

// Reads `path` into the compare slot, as the lesson panel's Compare fills it.
// (Before the window opens: no frame waits for it.)
static bool loadCompareTrace(App& app, const std::string& path) {
    LoadedTrace other;
    std::string error;
    if (!readModelAndJudge(path, other, error)) {
        std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
        return false;
    }
    const std::size_t slash = path.rfind('/');
    adoptCompared(app, std::move(other), "the run in " + path.substr(slash == std::string::npos ? 0 : slash + 1));
    return true;
}

int runViewer(const std::string& path, int lesson, const std::string& compare) {
    App app;
    if (!compare.empty() && !loadCompareTrace(app, compare)) return 1;
    if (!path.empty()) {
        std::string error;
        if (!looksLikeTrace(path, error)) {
            std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
            return 1;
        }
        // A file whose recording is still going on is followed as it grows.
        if (stillRecording(path))
            followFile(app, path);
        else
            loadTraceAsync(app, path);
        if (lesson > 0) attachLesson(app, lesson);
    }
    return runWindow(app);
}

int runLiveViewer(const std::vector<std::string>& program, const std::string& trace_path) {
    App app;
    // The window first: with no display, the program is not started at all.
    const int code = runWindow(app, [&] {
        if (startLive(app, program, trace_path)) return true;
        std::fprintf(stderr, "fiberscope: %s\n", app.error.c_str());
        return false;
    });
    if (code != 0 || !app.live) return code;
    // The program's exit status is the command's, as for `record`.
    std::lock_guard lock(app.live->mutex);
    if (!app.live->program_done)
        std::fprintf(stderr, "fiberscope: the viewer was closed: stopping %s; its trace so far is in %s\n", program[0].c_str(),
                     trace_path.c_str());
    return app.live->program_done ? app.live->program_exit_code : 0;
}

static int runWindow(App& app, const std::function<bool()>& start) {
    Window window;
    std::string error;
    if (!window.open({}, error)) {
        std::fprintf(stderr, "fiberscope: %s; for a picture without a display use 'fiberscope screenshot FILE -o out.png'\n",
                     error.c_str());
        return 1;
    }
    if (start && !start()) return 127;
    while (!window.shouldClose()) {
        for (const std::string& dropped : window.takeDroppedFiles()) loadTraceAsync(app, dropped);
        window.frame([&] { drawApp(app, window.fonts()); });
        window.present();
    }
    return 0;
}

// Draws frames of a live run until `after_ns` into it (and until something
// was recorded, within a bound), so the picture shows the program running.
static bool runLiveFrames(App& app, Window& window, std::int64_t after_ns, std::string& error) {
    const auto start = std::chrono::steady_clock::now();
    const auto elapsed_ns = [&] {
        return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
    };
    // Up to 30 s more for a first record (a slow start under a sanitizer).
    while (elapsed_ns() < after_ns || (!app.trace && elapsed_ns() < after_ns + 30'000'000'000)) {
        window.frame([&] { drawApp(app, window.fonts()); });
        window.present();
        std::this_thread::sleep_for(std::chrono::milliseconds(16));
    }
    if (app.trace) return true;
    std::lock_guard lock(app.live->mutex);
    error = !app.live->error.empty() ? app.live->error : "nothing was recorded into " + app.live->path + " within 30 s";
    return false;
}

int runScreenshot(const ScreenshotOptions& options) {
    App app;
    app.headless = true;
    const bool live = !options.live_program.empty();
    if (!live && !loadTrace(app, options.trace)) {
        std::fprintf(stderr, "fiberscope: %s\n", app.error.c_str());
        return 1;
    }
    if (options.lesson > 0) attachLesson(app, options.lesson);
    if (!options.compare_trace.empty() && !loadCompareTrace(app, options.compare_trace)) return 1;
    app.motion_fraction = options.motion_fraction;
    for (int i = 0; i < options.steps; ++i) stepDecision(app, +1);
    if (options.tour > 0) {
        applyViewRequests(app); // the lesson's opening view first, as the window shows it
        for (int i = 0; i < options.tour; ++i) tourStep(app, +1);
    }
    VirtualDisplay display;
    std::string error;
    if (!display.ensure(error)) {
        std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
        return 1;
    }
    Window window;
    WindowOptions window_options;
    window_options.width = options.width;
    window_options.height = options.height;
    window_options.visible = false;
    if (!window.open(window_options, error)) {
        std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
        return 1;
    }
    if (live) {
        if (!startLive(app, options.live_program, options.live_trace)) {
            std::fprintf(stderr, "fiberscope: %s\n", app.error.c_str());
            return 127;
        }
        if (!runLiveFrames(app, window, options.live_after_ns, error)) {
            std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
            return 1;
        }
    }
    // A few frames: ImGui sizes windows and tables from the previous frame.
    for (int i = 0; i < 4; ++i) {
        window.frame([&] {
            if (options.has_range) {
                app.fit_requested = false;
                app.open_lesson_view = false; // the range asked for wins over the lesson's opening view
                app.view.start = options.range_start_ns;
                app.view.end = options.range_end_ns;
            }
            app.cursor = options.cursor_ns;
            if (i == 0) app.panel_request = options.panel;
            if (i == 0) app.open_prompt = options.open_dialog;
            drawApp(app, window.fonts());
        });
        if (i + 1 < 4) window.present();
    }
    if (!window.writePng(options.output, error)) {
        std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
        return 1;
    }
    return 0;
}

} // namespace fiberscope::viewer
