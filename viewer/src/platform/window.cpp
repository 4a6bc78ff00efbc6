#include "platform/window.hpp"

#define GLFW_INCLUDE_NONE
#include <GLFW/glfw3.h>
#include <GL/gl.h>
#include <imgui.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_opengl3.h>
#include <stb/stb_image_write.h>

#include <sys/stat.h>

#include <cstdlib>
#include <mutex>
#include <utility>

namespace fiberscope::viewer {

namespace {
std::vector<std::string> g_dropped;
std::mutex g_dropped_mutex;
std::string g_glfw_error;

void onGlfwError(int, const char* description) { g_glfw_error = description ? description : "unknown GLFW error"; }

void onDrop(GLFWwindow*, int count, const char** paths) {
    std::lock_guard lock(g_dropped_mutex);
    for (int i = 0; i < count; ++i) g_dropped.emplace_back(paths[i]);
}

bool exists(const std::string& path) {
    struct stat st {};
    return stat(path.c_str(), &st) == 0;
}

void applyStyle() {
    ImGui::StyleColorsDark();
    ImGuiStyle& style = ImGui::GetStyle();
    style.WindowRounding = 4.0f;
    style.FrameRounding = 3.0f;
    style.GrabRounding = 3.0f;
    style.WindowBorderSize = 1.0f;
    style.ItemSpacing = ImVec2(8, 5);
    ImVec4* c = style.Colors;
    c[ImGuiCol_WindowBg] = ImVec4(0.105f, 0.11f, 0.125f, 1.0f);
    c[ImGuiCol_ChildBg] = ImVec4(0.09f, 0.095f, 0.11f, 1.0f);
    c[ImGuiCol_TitleBgActive] = ImVec4(0.16f, 0.20f, 0.28f, 1.0f);
    c[ImGuiCol_Header] = ImVec4(0.20f, 0.26f, 0.36f, 1.0f);
    c[ImGuiCol_HeaderHovered] = ImVec4(0.26f, 0.34f, 0.48f, 1.0f);
    c[ImGuiCol_Button] = ImVec4(0.20f, 0.26f, 0.36f, 1.0f);
    c[ImGuiCol_ButtonHovered] = ImVec4(0.28f, 0.38f, 0.52f, 1.0f);
    c[ImGuiCol_Tab] = ImVec4(0.15f, 0.18f, 0.24f, 1.0f);
    c[ImGuiCol_TabActive] = ImVec4(0.24f, 0.32f, 0.46f, 1.0f);
}
} // namespace

std::string assetPath(const std::string& relative) {
    if (const char* dir = std::getenv("FIBERSCOPE_ASSETS"); dir && *dir) return std::string(dir) + "/" + relative;
#ifdef FIBERSCOPE_INSTALL_ASSETS
    if (exists(std::string(FIBERSCOPE_INSTALL_ASSETS) + "/" + relative))
        return std::string(FIBERSCOPE_INSTALL_ASSETS) + "/" + relative;
#endif
#ifdef FIBERSCOPE_SOURCE_ASSETS
    return std::string(FIBERSCOPE_SOURCE_ASSETS) + "/" + relative;
#else
    return relative;
#endif
}

bool Window::open(const WindowOptions& options, std::string& error) {
    glfwSetErrorCallback(onGlfwError);
    if (!glfwInit()) {
        error = "cannot initialise GLFW: " + g_glfw_error;
        return false;
    }
    glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
    glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
    glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
    glfwWindowHint(GLFW_VISIBLE, options.visible ? GLFW_TRUE : GLFW_FALSE);
    glfwWindowHint(GLFW_SAMPLES, 0);
    window_ = glfwCreateWindow(options.width, options.height, options.title.c_str(), nullptr, nullptr);
    if (!window_) {
        error = "cannot open an OpenGL 3.3 window: " + g_glfw_error;
        return false;
    }
    glfwMakeContextCurrent(window_);
    glfwSwapInterval(1);
    glfwSetDropCallback(window_, onDrop);

    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.IniFilename = nullptr; // no imgui.ini littering the working directory
    applyStyle();
    // Latin-1 plus punctuation (dashes, quotes, ellipsis), arrows, maths and
    // box drawing: what lesson texts and explanations use.
    static ImVector<ImWchar> ranges;
    if (ranges.empty()) {
        ImFontGlyphRangesBuilder builder;
        builder.AddRanges(io.Fonts->GetGlyphRangesDefault());
        static const ImWchar extra[] = {0x2000, 0x206F, 0x2190, 0x21FF, 0x2200, 0x22FF, 0x2500, 0x257F, 0x25A0, 0x25FF, 0};
        builder.AddRanges(extra);
        builder.BuildRanges(&ranges);
    }
    const std::string sans = assetPath("fonts/DejaVuSans.ttf");
    const std::string mono = assetPath("fonts/DejaVuSansMono.ttf");
    if (exists(sans)) {
        fonts_.regular = io.Fonts->AddFontFromFileTTF(sans.c_str(), 15.0f, nullptr, ranges.Data);
        fonts_.small = io.Fonts->AddFontFromFileTTF(sans.c_str(), 12.5f, nullptr, ranges.Data);
    }
    if (exists(mono)) fonts_.mono = io.Fonts->AddFontFromFileTTF(mono.c_str(), 14.0f, nullptr, ranges.Data);
    if (!fonts_.regular) fonts_.regular = io.Fonts->AddFontDefault();
    if (!fonts_.small) fonts_.small = fonts_.regular;
    if (!fonts_.mono) fonts_.mono = fonts_.regular;
    ImGui_ImplGlfw_InitForOpenGL(window_, true);
    ImGui_ImplOpenGL3_Init("#version 330 core");
    imgui_ = true;
    return true;
}

Window::~Window() {
    if (imgui_) {
        ImGui_ImplOpenGL3_Shutdown();
        ImGui_ImplGlfw_Shutdown();
        ImGui::DestroyContext();
    }
    if (window_) glfwDestroyWindow(window_);
    glfwTerminate();
}

bool Window::shouldClose() const { return glfwWindowShouldClose(window_); }

void Window::frame(const std::function<void()>& draw) {
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    if (pointer_) { // (after the backend wrote the window system's pointer, before ImGui reads it)
        ImGuiIO& io = ImGui::GetIO();
        io.MousePos = ImVec2(pointer_->x, pointer_->y);
        for (bool& down : io.MouseDown) down = false;
        io.MouseDown[0] = pointer_->left_down;
    }
    ImGui::NewFrame();
    draw();
    ImGui::Render();
    int width = 0, height = 0;
    glfwGetFramebufferSize(window_, &width, &height);
    glViewport(0, 0, width, height);
    glClearColor(0.08f, 0.085f, 0.1f, 1.0f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    glFinish();
}

void Window::present() { glfwSwapBuffers(window_); }

std::vector<unsigned char> Window::readPixels(int& width, int& height) const {
    glfwGetFramebufferSize(window_, &width, &height);
    std::vector<unsigned char> pixels(static_cast<std::size_t>(width) * height * 4);
    glReadBuffer(GL_BACK);
    glPixelStorei(GL_PACK_ALIGNMENT, 1);
    glReadPixels(0, 0, width, height, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
    // GL's rows run bottom-up.
    const std::size_t row = static_cast<std::size_t>(width) * 4;
    std::vector<unsigned char> flipped(pixels.size());
    for (int y = 0; y < height; ++y)
        std::copy_n(pixels.data() + static_cast<std::size_t>(height - 1 - y) * row, row, flipped.data() + y * row);
    return flipped;
}

bool Window::writePng(const std::string& path, std::string& error) const {
    int width = 0, height = 0;
    auto pixels = readPixels(width, height);
    if (!stbi_write_png(path.c_str(), width, height, 4, pixels.data(), width * 4)) {
        error = "cannot write PNG '" + path + "'";
        return false;
    }
    return true;
}

std::vector<std::string> Window::takeDroppedFiles() {
    std::lock_guard lock(g_dropped_mutex);
    return std::exchange(g_dropped, {});
}

} // namespace fiberscope::viewer
