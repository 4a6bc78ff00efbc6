// TraceFollower: a file read while it grows ends up exactly as readTrace
// reads the finished file, wherever the writes were cut; and bad bytes get
// the same error as the one-shot reader.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>
#include <fiberscope/trace_follower.hpp>
#include <fiberscope/trace_reader.hpp>

#include "../support/growing_trace.hpp"
#include "../support/trace_builder.hpp"

using namespace fiberscope;
using namespace fiberscope::trace;
using test::GrowingFile;
using test::unfinishedHeader;
using Bytes = std::vector<std::uint8_t>;

namespace {

std::string tempPath(const char* what) {
    return "/tmp/fiberscope-follow-" + std::to_string(getpid()) + "-" + what + ".fstrace";
}

Bytes readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A trace recorded by the runtime with small chunks (many boundaries), two threads.
const Bytes& recordedTrace() {
    static const Bytes bytes = [] {
        const std::string path = tempPath("recorded");
        {
            Recorder recorder(path, {.buffer_bytes = 4096});
            auto loop = EventLoop::create({.threads = 2}).value();
            std::vector<Future<int>> all;
            for (int i = 0; i < 400; ++i)
                all.push_back(loop->async([&loop, i] {
                    mark(i % 2 ? "odd" : "even");
                    loop->yield();
                    return i;
                }));
            for (auto& f : all) (void)f.await();
        }
        Bytes data = readFile(path);
        unlink(path.c_str());
        return data;
    }();
    return bytes;
}

void requireSame(const Trace& followed, const Trace& whole) {
    REQUIRE(followed.events.size() == whole.events.size());
    for (std::size_t i = 0; i < whole.events.size(); ++i) {
        const trace::Event& a = followed.events[i];
        const trace::Event& b = whole.events[i];
        INFO("event " << i);
        REQUIRE(a.time == b.time);
        REQUIRE(a.thread == b.thread);
        REQUIRE(a.kind == b.kind);
        REQUIRE(a.small == b.small);
        REQUIRE(a.arg[0] == b.arg[0]);
        REQUIRE(a.arg[1] == b.arg[1]);
        REQUIRE(a.arg[2] == b.arg[2]);
    }
    REQUIRE(followed.threads.size() == whole.threads.size());
    for (std::size_t t = 0; t < whole.threads.size(); ++t) {
        REQUIRE(followed.threads[t].number == whole.threads[t].number);
        REQUIRE(followed.threads[t].worker == whole.threads[t].worker);
        REQUIRE(followed.threads[t].name == whole.threads[t].name);
    }
    REQUIRE(followed.strings == whole.strings);
    REQUIRE(followed.header.complete == whole.header.complete);
    REQUIRE(followed.header.duration_ns == whole.header.duration_ns);
    REQUIRE(followed.header.backend == whole.header.backend);
    REQUIRE(followed.header.command_line == whole.header.command_line);
    REQUIRE(followed.lost_events == whole.lost_events);
    REQUIRE(followed.chunks == whole.chunks);
    REQUIRE(followed.file_bytes == whole.file_bytes);
    REQUIRE(followed.warnings == whole.warnings);
}

// Writes `file` (a finished trace) the way a recorder does, cut at `cuts`
// (byte offsets, sorted): first its header marked unfinished, then the rest
// piece by piece, then the finished header; polls after every write.
void followInPieces(const Bytes& file, std::vector<std::size_t> cuts, Trace& followed, bool& stayed_ordered) {
    GrowingFile out(tempPath("pieces"));
    TraceFollower follower(out.path());
    ReadError error;
    REQUIRE(follower.poll(followed, error)); // no file yet: nothing, no error
    REQUIRE_FALSE(follower.started());
    stayed_ordered = true;
    test::writeInPieces(out, file, std::move(cuts), [&](std::size_t written, bool finished) {
        PollResult result;
        INFO("after writing " << written << " of " << file.size() << " bytes" << (finished ? ", then the finished header" : ""));
        REQUIRE(follower.poll(followed, error, &result));
        REQUIRE(follower.finished() == finished);
        if (finished) return;
        stayed_ordered = stayed_ordered && !result.reordered;
        for (std::size_t i = 1; i < followed.events.size(); ++i) {
            const trace::Event& a = followed.events[i - 1];
            const trace::Event& b = followed.events[i];
            REQUIRE((a.time < b.time || (a.time == b.time && a.thread <= b.thread)));
        }
    });
}

} // namespace

TEST_CASE("a followed trace equals the finished file, cut anywhere", "[follower]") {
    std::vector<Bytes> files{recordedTrace()};
#ifdef FIBERSCOPE_ASSETS_DIR
    files.push_back(readFile(std::string(FIBERSCOPE_ASSETS_DIR) + "/../tests/data/sample-lesson01-v3.fstrace"));
#endif
    std::mt19937_64 rng(12345);
    for (std::size_t f = 0; f < files.size(); ++f) {
        const Bytes& file = files[f];
        REQUIRE(file.size() > 500);
        Trace whole;
        ReadError error;
        REQUIRE(parseTrace({file.data(), file.size()}, whole, error));
        REQUIRE(whole.header.complete);
        for (int round = 0; round < 12; ++round) {
            INFO("file " << f << ", round " << round);
            // 1 to 40 cuts at random bytes: inside the header, chunk headers and payloads.
            std::vector<std::size_t> cuts(1 + rng() % 40);
            for (auto& c : cuts) c = rng() % file.size();
            if (round == 0) cuts = {20, 100}; // the header itself arrives in pieces
            std::sort(cuts.begin(), cuts.end());
            Trace followed;
            bool ordered = true;
            followInPieces(file, cuts, followed, ordered);
            requireSame(followed, whole);
        }
    }
}

TEST_CASE("a quiet thread's late chunk with older records is merged into time order", "[follower]") {
    using testing::TraceBuilder;
    TraceBuilder b;
    b.complete = true;
    b.end_ticks = 1000;
    // Thread 1 records first in the file (times 100..500); thread 0's chunk,
    // older (times 50..450), reaches the file later.
    b.chunk(1, 0, 0).record(EventKind::ThreadStart, 100, {1, 0});
    for (int i = 0; i < 4; ++i) b.record(EventKind::Park, 100);
    b.chunk(0, 0, 0).record(EventKind::ThreadStart, 50, {0, 0});
    for (int i = 0; i < 4; ++i) b.record(EventKind::Park, 100);
    const Bytes file = b.bytes();
    Trace whole;
    ReadError error;
    REQUIRE(parseTrace({file.data(), file.size()}, whole, error));
    // Cut between the two chunks.
    std::uint32_t header_size;
    std::memcpy(&header_size, file.data() + 12, 4);
    std::uint32_t first_chunk;
    std::memcpy(&first_chunk, file.data() + 16 + header_size + 4, 4);
    const std::size_t between = 16 + header_size + sizeof(format::ChunkHeader) + first_chunk;
    Trace followed;
    bool ordered = true;
    followInPieces(file, {between}, followed, ordered);
    REQUIRE_FALSE(ordered); // thread 0 (number 0) arrived second: renumbered and merged
    requireSame(followed, whole);
    REQUIRE(followed.threads[0].number == 0);
    REQUIRE(followed.events.front().thread == 0);
}

TEST_CASE("a followed file that turns corrupt, or shrinks, gives the reader's error", "[follower]") {
    const Bytes& file = recordedTrace();
    std::uint32_t header_size;
    std::memcpy(&header_size, file.data() + 12, 4);
    const std::size_t first = 16 + header_size;
    std::uint32_t chunk_size;
    std::memcpy(&chunk_size, file.data() + first + 4, 4);
    const std::size_t second = first + sizeof(format::ChunkHeader) + chunk_size;

    // Written as a recorder does: the header says the recording goes on.
    Bytes live = file;
    const Bytes header = unfinishedHeader(file);
    std::copy(header.begin(), header.end(), live.begin());
    SECTION("a flipped payload byte") {
        Bytes bad = live;
        bad[second + sizeof(format::ChunkHeader) + 3] ^= 0x40;
        Trace whole;
        ReadError whole_error;
        REQUIRE_FALSE(parseTrace({bad.data(), bad.size()}, whole, whole_error));
        GrowingFile out(tempPath("corrupt"));
        TraceFollower follower(out.path());
        Trace followed;
        ReadError error;
        out.append(bad.data(), second);
        REQUIRE(follower.poll(followed, error));
        const std::size_t events_before = followed.events.size();
        REQUIRE(events_before > 0);
        out.append(bad.data() + second, bad.size() - second);
        REQUIRE_FALSE(follower.poll(followed, error));
        REQUIRE(error.message == whole_error.message);
        REQUIRE(error.offset == whole_error.offset);
        REQUIRE(followed.events.size() == events_before); // what was read stays
    }
    SECTION("the file is cut shorter than what was read") {
        GrowingFile out(tempPath("shrink"));
        TraceFollower follower(out.path());
        Trace followed;
        ReadError error;
        out.append(live.data(), second);
        REQUIRE(follower.poll(followed, error));
        REQUIRE(followed.events.size() > 0);
        out.truncate(first);
        REQUIRE_FALSE(follower.poll(followed, error));
        REQUIRE(error.message.find("shrank") != std::string::npos);
    }
    SECTION("not a trace") {
        GrowingFile out(tempPath("foreign"));
        const std::string text = "hello, this is not a trace at all";
        out.append(reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
        TraceFollower follower(out.path());
        Trace followed;
        ReadError error;
        REQUIRE_FALSE(follower.poll(followed, error));
        REQUIRE(error.message.find("not a Fiberscope trace") != std::string::npos);
    }
}

TEST_CASE("a crash-cut file is followed up to its last whole chunk and waits for more", "[follower]") {
    const Bytes& file = recordedTrace();
    const Bytes header = unfinishedHeader(file);
    Bytes cut(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(file.size() * 2 / 3));
    std::copy(header.begin(), header.end(), cut.begin());
    Trace whole;
    ReadError error;
    REQUIRE(parseTrace({cut.data(), cut.size()}, whole, error));
    GrowingFile out(tempPath("crash"));
    out.append(cut.data(), cut.size());
    TraceFollower follower(out.path());
    Trace followed;
    REQUIRE(follower.poll(followed, error));
    REQUIRE_FALSE(follower.finished()); // the program may still be writing
    REQUIRE(followed.events.size() == whole.events.size());
    REQUIRE(followed.events.back().time == whole.events.back().time);
    REQUIRE_FALSE(followed.header.complete);
}
