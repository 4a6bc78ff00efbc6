// Hostile traces through every consumer: the committed regression corpus
// (tests/fuzz/corpus: inputs the fuzzer once crashed on, and crafted files),
// the hostile patterns at sizes around their limits, and damaged copies of
// each. Each must read cleanly or fail with an error naming an offset; what
// reads must then survive stats, timeline, export and the viewer's model.
#include <catch2/catch.hpp>

#include <dirent.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>
#include <string>

#include "consume_trace.hpp"
#include "hostile_traces.hpp"

using namespace fiberscope;

namespace {

// Reads and consumes; returns false if the reader refused the bytes.
bool readAndConsume(const std::vector<std::uint8_t>& bytes) {
    trace::Trace trace;
    trace::ReadError error;
    if (!trace::parseTrace(bytes, trace, error)) {
        REQUIRE_FALSE(error.message.empty());
        REQUIRE(error.offset <= bytes.size());
        return false;
    }
    (void)testing::consumeTrace(trace);
    return true;
}

std::vector<std::string> corpusFiles() {
    std::vector<std::string> files;
    if (DIR* dir = opendir(FIBERSCOPE_CORPUS_DIR)) {
        while (dirent* entry = readdir(dir))
            if (entry->d_name[0] != '.') files.push_back(std::string(FIBERSCOPE_CORPUS_DIR "/") + entry->d_name);
        closedir(dir);
    }
    std::sort(files.begin(), files.end());
    return files;
}

} // namespace

TEST_CASE("the regression corpus reads or fails cleanly, and what reads is drawable", "[hostile][corpus]") {
    const auto files = corpusFiles();
    REQUIRE(files.size() >= 1);
    for (const std::string& path : files) {
        std::ifstream in(path, std::ios::binary);
        const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        INFO(path);
        (void)readAndConsume(bytes);
    }
}

TEST_CASE("hostile patterns, whole and damaged, never take a consumer down", "[hostile][corpus]") {
    std::mt19937_64 random(2026);
    for (const auto& pattern : testing::hostilePatterns()) {
        INFO(pattern.name);
        for (std::size_t n : {0u, 1u, 2u, 300u}) {
            const auto bytes = pattern.make(n);
            REQUIRE(readAndConsume(bytes));
            // Cut anywhere, and with bytes changed (checksums then mostly
            // refuse them; the ones that pass must still be drawable).
            for (int round = 0; round < 20; ++round) {
                auto damaged = bytes;
                damaged.resize(random() % (damaged.size() + 1));
                if (!damaged.empty() && round % 2) damaged[random() % damaged.size()] ^= static_cast<std::uint8_t>(1 + random() % 255);
                (void)readAndConsume(damaged);
            }
        }
    }
}

TEST_CASE("times at the edges of the range a trace can hold are drawable", "[hostile][corpus]") {
    using K = trace::EventKind;
    using B = testing::TraceBuilder;
    for (const std::uint64_t tps : {std::uint64_t{1}, std::uint64_t{1000}, std::uint64_t{1000000000}, ~std::uint64_t{0}}) {
        // Ticks from the start to just inside 2^53 ns, at most 4e18 (so that
        // twice it still fits the 64-bit tick count).
        const double max_ticks = static_cast<double>(std::int64_t{1} << 53) / (1e9 / static_cast<double>(tps));
        const auto reach = static_cast<std::uint64_t>(std::min(max_ticks * 0.999, 4.0e18));
        B b;
        b.ticks_per_second = tps;
        b.start_ticks = std::uint64_t{1} << 63;
        b.chunk(0, b.start_ticks - reach); // the first record: the earliest time
        b.record(K::ThreadStart, 0, {0, 0});
        b.record(K::Switch, 1, {B::zigzag(0), B::zigzag(1), 9});
        b.record(K::Switch, 2 * reach - 2, {B::zigzag(0), B::zigzag(-1), 7}); // the latest
        INFO("ticks per second " << tps);
        REQUIRE(readAndConsume(b.bytes()));
    }
}
