// The reader on bad input: truncated, corrupt and foreign files give an
// error naming the offset (or, for a truncated tail, a warning), never a
// crash or a hang. Run under ASan in CI, which also checks every read
// stays inside the buffer.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>
#include <fiberscope/trace_reader.hpp>

using namespace fiberscope;
using namespace fiberscope::trace;

namespace {

// A small but varied trace, recorded once, as bytes.
const std::vector<std::uint8_t>& sampleTrace() {
    static const std::vector<std::uint8_t> bytes = [] {
        const std::string path = "/tmp/fiberscope-reader-" + std::to_string(getpid()) + ".fstrace";
        {
            // Small chunks, so the file has many chunk boundaries.
            Recorder recorder(path, {.buffer_bytes = 4096});
            auto loop = EventLoop::create({.threads = 2}).value();
            std::vector<Future<int>> all;
            for (int i = 0; i < 1000; ++i)
                all.push_back(loop->async([&loop, i] {
                    mark("step");
                    loop->yield();
                    return i;
                }));
            for (auto& f : all) (void)f.await();
        }
        std::ifstream in(path, std::ios::binary);
        std::vector<std::uint8_t> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        unlink(path.c_str());
        return data;
    }();
    return bytes;
}

} // namespace

TEST_CASE("the sample trace reads cleanly", "[reader]") {
    Trace trace;
    ReadError error;
    REQUIRE(parseTrace(sampleTrace(), trace, error, {.strict = true}));
    REQUIRE(trace.chunks > 3);
    REQUIRE(trace.events.size() > 1000);
}

TEST_CASE("a truncated trace loads up to its last whole chunk, or fails naming the offset", "[reader]") {
    const auto& full = sampleTrace();
    Trace whole;
    ReadError error;
    REQUIRE(parseTrace(full, whole, error));
    std::size_t previous_events = 0;
    for (std::size_t cut = 0; cut < full.size(); cut += 1 + cut / 50) {
        std::span<const std::uint8_t> part(full.data(), cut);
        Trace trace;
        ReadError e;
        const bool ok = parseTrace(part, trace, e);
        if (!ok) {
            REQUIRE(e.offset <= cut);
            REQUIRE_FALSE(e.message.empty());
            continue;
        }
        // A cut inside the chunks is a warning; events only grow with the cut.
        REQUIRE(trace.events.size() >= previous_events);
        REQUIRE(trace.events.size() <= whole.events.size());
        previous_events = trace.events.size();
        Trace strict;
        ReadError strict_error;
        if (!parseTrace(part, strict, strict_error, {.strict = true}))
            REQUIRE(strict_error.message.find("truncated") != std::string::npos);
    }
}

TEST_CASE("corrupt bytes are an error naming the offset, never a crash", "[reader]") {
    const auto& full = sampleTrace();
    std::mt19937_64 random(12345);
    int errors = 0;
    for (int round = 0; round < 3000; ++round) {
        std::vector<std::uint8_t> bytes = full;
        const int flips = 1 + static_cast<int>(random() % 4);
        for (int f = 0; f < flips; ++f) bytes[random() % bytes.size()] ^= static_cast<std::uint8_t>(1 + random() % 255);
        Trace trace;
        ReadError error;
        if (!parseTrace(bytes, trace, error)) {
            ++errors;
            REQUIRE(error.offset < bytes.size());
            REQUIRE_FALSE(error.message.empty());
        }
    }
    // Checksums catch corrupted payloads: most flips must be detected.
    REQUIRE(errors > 2500);
}

TEST_CASE("foreign files are refused with a clear message", "[reader]") {
    auto refuse = [](std::vector<std::uint8_t> bytes, const char* expect) {
        Trace trace;
        ReadError error;
        REQUIRE_FALSE(parseTrace(bytes, trace, error));
        INFO(error.message);
        REQUIRE(error.message.find(expect) != std::string::npos);
    };
    refuse({}, "too short");
    refuse({0x89, 'P', 'N', 'G', 13, 10, 26, 10, 0, 0, 0, 13, 'I', 'H', 'D', 'R', 0, 0}, "not a Fiberscope trace");
    refuse({0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0}, "not a Fiberscope trace");
    std::vector<std::uint8_t> newer = sampleTrace();
    newer[8] = 99;
    refuse(newer, "version 99");

    ReadError error;
    Trace trace;
    REQUIRE_FALSE(readTrace("/nonexistent/trace.fstrace", trace, error));
    REQUIRE(error.text().find("/nonexistent/trace.fstrace") != std::string::npos);
    REQUIRE(error.text().find("cannot open") != std::string::npos);
    REQUIRE_FALSE(readTrace("/tmp", trace, error));
    REQUIRE(error.message == "not a regular file");
}
