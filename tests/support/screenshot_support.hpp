// For the viewer's headless tests: running `fiberscope` as a command and
// reading the PNG it wrote.
#pragma once

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include <stb/stb_image.h>

#include "ui/colors.hpp"

namespace test {

// A command's exit status (-1 if it did not exit) and its stdout and stderr.
struct CommandRun {
    int status = -1;
    std::string output;
};

inline CommandRun runCommand(const std::string& command) {
    CommandRun result;
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    REQUIRE(pipe);
    char buffer[1024];
    while (std::fgets(buffer, sizeof buffer, pipe)) result.output += buffer;
    const int status = pclose(pipe);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

// An RGBA picture.
struct Image {
    int width = 0, height = 0;
    unsigned char* pixels = nullptr;
    Image() = default;
    Image(const Image&) = delete;
    Image& operator=(const Image&) = delete;
    Image(Image&& other) noexcept : width(other.width), height(other.height), pixels(std::exchange(other.pixels, nullptr)) {}
    ~Image() { stbi_image_free(pixels); }
    bool load(const std::string& png) {
        int channels = 0;
        pixels = stbi_load(png.c_str(), &width, &height, &channels, 4);
        return pixels != nullptr;
    }
    // The pixel at (x, y) is within `tolerance` of the colour in every channel.
    bool is(int x, int y, fiberscope::viewer::Color c, int tolerance = 2) const {
        const unsigned char* p = pixels + (static_cast<long>(y) * width + x) * 4;
        return std::abs(p[0] - static_cast<int>(c & 0xFF)) <= tolerance && std::abs(p[1] - static_cast<int>((c >> 8) & 0xFF)) <= tolerance &&
               std::abs(p[2] - static_cast<int>((c >> 16) & 0xFF)) <= tolerance;
    }
    // Pixels of the colour in the whole picture, or in [x0, x1) x [y0, y1).
    long count(fiberscope::viewer::Color c, int tolerance = 2) const { return count(0, 0, width, height, c, tolerance); }
    long count(int x0, int y0, int x1, int y1, fiberscope::viewer::Color c, int tolerance = 2) const {
        long n = 0;
        for (int y = std::max(0, y0); y < std::min(height, y1); ++y)
            for (int x = std::max(0, x0); x < std::min(width, x1); ++x) n += is(x, y, c, tolerance);
        return n;
    }
};

} // namespace test
