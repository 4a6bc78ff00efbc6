// The viewer end to end, headless: `fiberscope screenshot` renders a known
// trace under Xvfb + Mesa, and the pixels show lanes and the fibers' colours.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include <stb/stb_image.h>

#include "ui/colors.hpp"

namespace {

struct Run {
    int status = -1;
    std::string output;
};

Run run(const std::string& command) {
    Run result;
    FILE* pipe = popen((command + " 2>&1").c_str(), "r");
    REQUIRE(pipe);
    char buffer[1024];
    while (std::fgets(buffer, sizeof buffer, pipe)) result.output += buffer;
    const int status = pclose(pipe);
    result.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return result;
}

struct Image {
    int width = 0, height = 0;
    unsigned char* pixels = nullptr;
    ~Image() { stbi_image_free(pixels); }
    // Pixels within `tolerance` of the colour in every channel.
    long count(fiberscope::viewer::Color c, int tolerance = 2) const {
        const int r = c & 0xFF, g = (c >> 8) & 0xFF, b = (c >> 16) & 0xFF;
        long n = 0;
        for (long i = 0; i < static_cast<long>(width) * height; ++i) {
            const unsigned char* p = pixels + i * 4;
            if (std::abs(p[0] - r) <= tolerance && std::abs(p[1] - g) <= tolerance && std::abs(p[2] - b) <= tolerance) ++n;
        }
        return n;
    }
};

const std::string kTool = FIBERSCOPE_TOOL;
const std::string kTrace = FIBERSCOPE_SAMPLE_TRACE;

} // namespace

TEST_CASE("a screenshot of a known trace shows thread lanes and the fibers that ran", "[viewer][screenshot]") {
    const std::string png = "/tmp/fiberscope-shot-" + std::to_string(getpid()) + ".png";
    const Run shot = run(kTool + " screenshot " + kTrace + " -o " + png + " --size 1280x720");
    INFO(shot.output);
    REQUIRE(shot.status == 0);
    Image image;
    int channels = 0;
    image.pixels = stbi_load(png.c_str(), &image.width, &image.height, &channels, 4);
    REQUIRE(image.pixels);
    REQUIRE(image.width == 1280);
    REQUIRE(image.height == 720);
    using namespace fiberscope::viewer;
    // Lane backgrounds: the thread lanes and the fiber lanes are drawn.
    CHECK(image.count(palette::lane) + image.count(palette::lane_alt) > 20000);
    // Parked time (the sample's workers mostly sleep in the kernel).
    CHECK(image.count(palette::parked) > 500);
    // The main fiber ran, and at least one spawned fiber shows in its colour.
    CHECK(image.count(fiberColor(1)) > 50);
    long spawned = 0;
    for (std::uint64_t fiber = 2; fiber < 12; ++fiber) spawned += image.count(fiberColor(fiber));
    CHECK(spawned > 100);
    // Not a blank or garbage frame: the background dominates but is not all.
    const long background = image.count(rgba(26, 27, 31), 6);
    CHECK(background < static_cast<long>(image.width) * image.height);
    unlink(png.c_str());
}

TEST_CASE("screenshot refuses bad input with a one-line error", "[viewer][screenshot]") {
    const Run missing = run(kTool + " screenshot /nonexistent/trace.fstrace -o /tmp/x.png");
    REQUIRE(missing.status == 1);
    REQUIRE(missing.output.find("/nonexistent/trace.fstrace") != std::string::npos);
    REQUIRE(std::count(missing.output.begin(), missing.output.end(), '\n') == 1);
    const Run no_output = run(kTool + " screenshot " + kTrace);
    REQUIRE(no_output.status == 2);
    const Run bad_size = run(kTool + " screenshot " + kTrace + " -o /tmp/x.png --size huge");
    REQUIRE(bad_size.status == 2);
    REQUIRE(bad_size.output.find("--size") != std::string::npos);
}
