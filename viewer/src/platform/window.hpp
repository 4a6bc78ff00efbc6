// The viewer's window: GLFW + OpenGL 3.3 + Dear ImGui, with the shipped
// font, and a screenshot of the last rendered frame to PNG.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

struct GLFWwindow;
struct ImFont;

namespace fiberscope::viewer {

struct WindowOptions {
    int width = 1600;
    int height = 900;
    bool visible = true;
    std::string title = "Fiberscope";
};

struct Fonts {
    ImFont* regular = nullptr;
    ImFont* mono = nullptr;
    ImFont* small = nullptr;
};

class Window {
public:
    Window() = default;
    ~Window();
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;

    // Opens the window; false with a one-line `error` when GLFW or GL fails.
    bool open(const WindowOptions& options, std::string& error);
    bool shouldClose() const;
    // One frame: poll events, start an ImGui frame, call `draw`, render.
    // The rendered image stays readable by readPixels() until the next frame.
    void frame(const std::function<void()>& draw);
    void present();
    // RGBA8 pixels of the back buffer, top row first.
    std::vector<unsigned char> readPixels(int& width, int& height) const;
    bool writePng(const std::string& path, std::string& error) const;
    const Fonts& fonts() const noexcept { return fonts_; }
    GLFWwindow* handle() const noexcept { return window_; }
    // Paths dropped on the window since the last call.
    std::vector<std::string> takeDroppedFiles();

    // Test hook: the pointer ImGui sees from the next frame on, in place of
    // the window system's (nullopt: the window system's again). Tests click
    // with it: an invisible window under Xvfb has no pointer of its own.
    struct Pointer {
        float x = 0, y = 0;
        bool left_down = false;
    };
    void setPointer(std::optional<Pointer> pointer) { pointer_ = pointer; }

private:
    GLFWwindow* window_ = nullptr;
    bool imgui_ = false;
    Fonts fonts_;
    std::optional<Pointer> pointer_;
};

// Where the shipped assets (fonts) are: $FIBERSCOPE_ASSETS, the install
// location, or the source tree this binary was built from.
std::string assetPath(const std::string& relative);

} // namespace fiberscope::viewer
