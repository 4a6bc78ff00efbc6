// The viewer's main loop, and the headless screenshot renderer.
#include "ui/viewer_main.hpp"

#include <imgui.h>

#include <cstdio>

#include "platform/virtual_display.hpp"
#include "platform/window.hpp"
#include "ui/app.hpp"

namespace fiberscope::viewer {

int runViewer(const std::string& path, int lesson) {
    App app;
    if (!path.empty() && loadTrace(app, path) && lesson > 0) attachLesson(app, lesson);
    if (!path.empty() && !app.trace) {
        std::fprintf(stderr, "fiberscope: %s\n", app.error.c_str());
        return 1;
    }
    Window window;
    std::string error;
    if (!window.open({}, error)) {
        std::fprintf(stderr, "fiberscope: %s; for a picture without a display use 'fiberscope screenshot FILE -o out.png'\n",
                     error.c_str());
        return 1;
    }
    while (!window.shouldClose()) {
        for (const std::string& dropped : window.takeDroppedFiles()) loadTrace(app, dropped);
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
