// The viewer's main loop, and the headless screenshot renderer.
#include "ui/viewer_main.hpp"

#include <imgui.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

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

int runViewer(const std::string& path, int lesson) {
    App app;
    if (!path.empty()) {
        std::string error;
        if (!looksLikeTrace(path, error)) {
            std::fprintf(stderr, "fiberscope: %s\n", error.c_str());
            return 1;
        }
        loadTraceAsync(app, path);
        if (lesson > 0) attachLesson(app, lesson);
    }
    Window window;
    std::string error;
    if (!window.open({}, error)) {
        std::fprintf(stderr, "fiberscope: %s; for a picture without a display use 'fiberscope screenshot FILE -o out.png'\n",
                     error.c_str());
        return 1;
    }
    while (!window.shouldClose()) {
        for (const std::string& dropped : window.takeDroppedFiles()) loadTraceAsync(app, dropped);
        window.frame([&] { drawApp(app, window.fonts()); });
        window.present();
    }
    return 0;
}

int runScreenshot(const ScreenshotOptions& options) {
    App app;
    app.headless = true;
    if (!loadTrace(app, options.trace)) {
        std::fprintf(stderr, "fiberscope: %s\n", app.error.c_str());
        return 1;
    }
    if (options.lesson > 0) attachLesson(app, options.lesson);
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
    // A few frames: ImGui sizes windows and tables from the previous frame.
    for (int i = 0; i < 4; ++i) {
        window.frame([&] {
            if (options.has_range) {
                app.fit_requested = false;
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
