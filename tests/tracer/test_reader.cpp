// The reader on bad input: truncated, corrupt and foreign files give an
// error naming the offset (or, for a truncated tail, a warning), never a
// crash or a hang. Run under ASan in CI, which also checks every read
// stays inside the buffer.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>
#include <fiberscope/trace_reader.hpp>

#include "../support/trace_builder.hpp"

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

// --- Hostile files: each names a class of damage the reader must absorb ---

namespace {

using testing::TraceBuilder;

Trace parseOk(const std::vector<std::uint8_t>& bytes, ReadOptions options = {}) {
    Trace trace;
    ReadError error;
    INFO("error: " << error.message);
    const bool ok = parseTrace(bytes, trace, error, options);
    INFO("error: " << error.message);
    REQUIRE(ok);
    return trace;
}

std::string parseError(const std::vector<std::uint8_t>& bytes) {
    Trace trace;
    ReadError error;
    REQUIRE_FALSE(parseTrace(bytes, trace, error));
    REQUIRE(error.offset <= bytes.size());
    return error.message;
}

} // namespace

TEST_CASE("every bit of the header is covered by its checksum", "[reader][hostile]") {
    const std::vector<std::uint8_t>& full = sampleTrace();
    const std::uint32_t header_size = full[12] | full[13] << 8 | full[14] << 16 | static_cast<std::uint32_t>(full[15]) << 24;
    for (std::size_t at = 0; at < 16 + header_size; ++at) {
        std::vector<std::uint8_t> bytes = full;
        bytes[at] ^= 0x10;
        Trace trace;
        ReadError error;
        INFO("flipped a bit at offset " << at);
        REQUIRE_FALSE(parseTrace(bytes, trace, error));
    }
    // The message for a flipped clock rate names the header.
    std::vector<std::uint8_t> bytes = full;
    bytes[20] ^= 1;
    REQUIRE(parseError(bytes).find("header checksum") != std::string::npos);
}

TEST_CASE("a version 1 file (no header checksum) still reads, with a warning", "[reader][hostile]") {
    TraceBuilder b;
    b.version = 1;
    b.chunk(0).record(EventKind::ThreadStart, 5, {0, 0}).record(EventKind::Park, 10);
    const Trace trace = parseOk(b.bytes(), {.strict = true});
    REQUIRE(trace.events.size() == 2);
    REQUIRE(trace.events[1].time == 15);
    bool warned = false;
    for (const auto& w : trace.warnings) warned = warned || w.find("version 1") != std::string::npos;
    REQUIRE(warned);
}

TEST_CASE("version 3 files (before source locations) still read: the shipped golden traces", "[reader][versions]") {
    // assets/traces holds lesson traces recorded by later versions, and
    // tests/data the tests' sample, lesson 1's first, in version 3: every
    // one reads; the older have no locations.
    std::size_t old_files = 0;
    std::vector<std::filesystem::directory_entry> entries;
    for (const char* dir : {"/traces", "/../tests/data"})
        for (const auto& entry : std::filesystem::directory_iterator(std::string(FIBERSCOPE_ASSETS_DIR) + dir))
            entries.push_back(entry);
    for (const auto& entry : entries) {
        if (entry.path().extension() != ".fstrace") continue;
        INFO(entry.path());
        Trace trace;
        ReadError error;
        const bool read = readTrace(entry.path().string(), trace, error, {.strict = true});
        INFO(error.text());
        REQUIRE(read);
        std::size_t marks = 0, locations = 0;
        for (const trace::Event& e : trace.events) {
            marks += e.kind == EventKind::Mark;
            locations += e.kind == EventKind::SourceLocation;
        }
        CHECK(marks > 0);
        if (trace.header.version < 4) {
            CHECK(locations == 0);
            ++old_files;
        }
    }
    CHECK(old_files > 0);
    // And a version-3 file built here (the current writer writes version 5).
    TraceBuilder b;
    b.version = 3;
    b.chunk(0).string(1, "m").record(EventKind::Mark, 5, {1}).record(EventKind::CpuSample, 6, {0, 1, 2});
    const Trace trace = parseOk(b.bytes(), {.strict = true});
    CHECK(trace.header.version == 3);
    CHECK(trace.events.size() == 2);
}

TEST_CASE("a version 4 file: a source-location follows its mark", "[reader][versions]") {
    TraceBuilder b;
    b.version = 4;
    b.chunk(0).string(1, "m").string(2, "lessons/01-hello-fibers/main.cpp");
    b.record(EventKind::Mark, 5, {1}).record(EventKind::SourceLocation, 0, {2, 62});
    const Trace trace = parseOk(b.bytes(), {.strict = true});
    REQUIRE(trace.events.size() == 2);
    const trace::Event e = trace.events[1];
    CHECK(e.kind == EventKind::SourceLocation);
    CHECK(e.time == 5);
    CHECK(trace.string(e.arg[0]) == "lessons/01-hello-fibers/main.cpp");
    CHECK(e.arg[1] == 62);
}

TEST_CASE("a version 5 file: steal-half records, one per fiber of a steal", "[reader][versions]") {
    TraceBuilder b;
    b.version = 5;
    // Fibers are deltas from the previous fiber field (zigzag), from the chunk's base 0.
    b.chunk(0).record(EventKind::StealHalf, 5, {TraceBuilder::zigzag(7), 1}).record(EventKind::StealHalf, 0, {TraceBuilder::zigzag(1), 1});
    const Trace trace = parseOk(b.bytes(), {.strict = true});
    REQUIRE(trace.events.size() == 2);
    CHECK(trace.events[0].kind == EventKind::StealHalf);
    CHECK(trace.events[0].arg[0] == 7);
    CHECK(trace.events[0].arg[1] == 1);
    CHECK(trace.events[1].arg[0] == 8);
    CHECK(trace.events[1].time == 5);
}

TEST_CASE("a version 6 file: search records, a begin and its end on one thread", "[reader][versions]") {
    TraceBuilder b;
    b.version = 6;
    // op (an enumerated value), then searchers (a count).
    b.chunk(0).record(EventKind::Search, 5, {0, 1}).record(EventKind::Search, 40, {2, 0});
    const Trace trace = parseOk(b.bytes(), {.strict = true});
    REQUIRE(trace.events.size() == 2);
    CHECK(trace.events[0].kind == EventKind::Search);
    CHECK(trace.events[0].small == static_cast<std::uint8_t>(SearchOp::Begin));
    CHECK(trace.events[0].arg[0] == 1);
    CHECK(trace.events[1].small == static_cast<std::uint8_t>(SearchOp::GaveUp));
    CHECK(trace.events[1].arg[0] == 0);
    CHECK(trace.events[1].time == 45);
    // An op past completions is no search record: the reader says which field.
    TraceBuilder bad;
    bad.chunk(0).record(EventKind::Search, 5, {4, 1});
    const std::string error = parseError(bad.bytes());
    INFO(error);
    CHECK(error.find("op") != std::string::npos);
}

TEST_CASE("a version 9 file: an object's name", "[reader][versions]") {
    TraceBuilder b;
    REQUIRE(b.version == 9);
    b.chunk(0).string(1, "table.readers").record(EventKind::ObjectName, 5, {0x3008, 1});
    const Trace trace = parseOk(b.bytes(), {.strict = true});
    REQUIRE(trace.events.size() == 1);
    CHECK(trace.events[0].kind == EventKind::ObjectName);
    CHECK(trace.events[0].arg[0] == 0x3008);
    CHECK(trace.string(trace.events[0].arg[1]) == "table.readers");
}

TEST_CASE("a version 8 file: a semaphore's, an rwlock's and an event's own records", "[reader][versions]") {
    TraceBuilder b;
    b.version = 8;
    b.chunk(0)
        .record(EventKind::SemaphoreOp, 5, {3, 0x2000, TraceBuilder::zigzag(9), 4}) // post 4 permits, fiber 9
        .record(EventKind::SemaphoreOp, 1, {1, 0x2000, TraceBuilder::zigzag(1), 0}) // fiber 10 blocked
        .record(EventKind::RwLockOp, 1, {3, 0x3000, TraceBuilder::zigzag(-3)})      // fiber 7 write-blocked
        .record(EventKind::EventOp, 1, {3, 0x4000, TraceBuilder::zigzag(0)});       // fiber 7 returned
    const Trace trace = parseOk(b.bytes(), {.strict = true});
    REQUIRE(trace.events.size() == 4);
    CHECK(trace.events[3].kind == EventKind::EventOp);
    CHECK(trace.events[3].small == static_cast<std::uint8_t>(fiberscope::trace::EventOp::Returned));
    CHECK(trace.events[3].arg[1] == 7);
    CHECK(trace.events[0].kind == EventKind::SemaphoreOp);
    CHECK(trace.events[0].small == static_cast<std::uint8_t>(fiberscope::trace::SemaphoreOp::Post));
    CHECK(trace.events[0].arg[0] == 0x2000);
    CHECK(trace.events[0].arg[1] == 9);
    CHECK(trace.events[0].arg[2] == 4);
    CHECK(trace.events[1].small == static_cast<std::uint8_t>(fiberscope::trace::SemaphoreOp::Blocked));
    CHECK(trace.events[1].arg[1] == 10);
    CHECK(trace.events[2].kind == EventKind::RwLockOp);
    CHECK(trace.events[2].small == static_cast<std::uint8_t>(fiberscope::trace::RwLockOp::WriteBlocked));
    CHECK(trace.events[2].arg[0] == 0x3000);
    CHECK(trace.events[2].arg[1] == 7);
    // An op out of range is an error naming it.
    TraceBuilder bad;
    bad.chunk(0).record(EventKind::RwLockOp, 5, {7, 0x3000, TraceBuilder::zigzag(1)});
    CHECK(parseError(bad.bytes()).find("rwlock") != std::string::npos);
}

TEST_CASE("a version 7 file: its new kinds, and a chunk header that fails its own CRC names the chunk", "[reader][versions]") {
    TraceBuilder b;
    b.version = 7;
    // Fibers are deltas from the previous fiber field (zigzag), from the chunk's base 0.
    b.chunk(0)
        .record(EventKind::StealOne, 5, {TraceBuilder::zigzag(7), 1, 1}) // fiber 7, victim 1, from run-next
        .record(EventKind::WakeupBounced, 1, {1, TraceBuilder::zigzag(-77)})
        .record(EventKind::MutexTaken, 1, {TraceBuilder::zigzag(0), 0x1000})
        .record(EventKind::Overflow, 1, {0, TraceBuilder::zigzag(0)}) // put fiber 7
        .record(EventKind::Truth, 1, {1, TraceBuilder::zigzag(-7), 0}); // empty
    const Trace trace = parseOk(b.bytes(), {.strict = true});
    REQUIRE(trace.events.size() == 5);
    CHECK(trace.events[0].kind == EventKind::StealOne);
    CHECK(trace.events[0].arg[0] == 7);
    CHECK(trace.events[0].small == static_cast<std::uint8_t>(StealOneFrom::RunNext));
    CHECK(trace.events[1].signedArg(1) == -77);
    CHECK(trace.events[2].arg[0] == 7);
    CHECK(trace.events[3].arg[0] == 7);
    CHECK(trace.events[4].small == static_cast<std::uint8_t>(TruthOp::Empty));
    // One flipped bit in the second chunk header's base time: its payload's
    // CRC still matches, its header's own does not, and the error says which
    // chunk (a version 6 reader would have read every record of it 17 000 s late).
    TraceBuilder two;
    two.chunk(0).record(EventKind::Mark, 5, {0});
    two.chunk(0).record(EventKind::Mark, 5, {0});
    std::vector<std::uint8_t> bytes = two.bytes();
    const std::size_t second = bytes.size() - 40 - 3; // its payload is 3 bytes: kind, delta, label
    REQUIRE(bytes[second] == 'F');
    REQUIRE(bytes[second + 3] == 'K');
    bytes[second + 16 + 5] ^= 0x10; // base_ticks, bit 44
    const std::string error = parseError(bytes);
    INFO(error);
    CHECK(error.find("chunk 1 ") != std::string::npos);
    CHECK(error.find("header checksum mismatch") != std::string::npos);
}

TEST_CASE("a tail of zero bytes loads up to the last good chunk", "[reader][hostile]") {
    const Trace whole = parseOk(sampleTrace());
    for (std::size_t zeros : {1u, 39u, 40u, 4096u, 1u << 20}) {
        std::vector<std::uint8_t> bytes = sampleTrace();
        bytes.resize(bytes.size() + zeros, 0);
        INFO(zeros << " zero bytes");
        const Trace trace = parseOk(bytes);
        REQUIRE(trace.events.size() == whole.events.size());
        bool warned = false;
        for (const auto& w : trace.warnings) warned = warned || w.find("zeros") != std::string::npos || w.find("truncated") != std::string::npos;
        REQUIRE(warned);
        Trace strict;
        ReadError error;
        REQUIRE_FALSE(parseTrace(bytes, strict, error, {.strict = true}));
    }
    // Zeros followed by anything else are corruption, not a preallocated tail.
    std::vector<std::uint8_t> bytes = sampleTrace();
    bytes.resize(bytes.size() + 100, 0);
    bytes.push_back(1);
    REQUIRE(parseError(bytes).find("chunk magic") != std::string::npos);
}

TEST_CASE("times the reader cannot represent are rejected, at any clock rate", "[reader][hostile]") {
    // A delta that lands past 2^53 ns from the start.
    TraceBuilder far;
    far.chunk(0).record(EventKind::Park, std::uint64_t{1} << 54);
    REQUIRE(parseError(far.bytes()).find("104 days") != std::string::npos);
    // Ticks that wrap the 64-bit clock.
    TraceBuilder wrap;
    wrap.chunk(0, UINT64_MAX - 5).record(EventKind::Park, 10);
    REQUIRE(parseError(wrap.bytes()).find("overflows") != std::string::npos);
    // Far before the start (a chunk base near zero, the start near the top).
    TraceBuilder before;
    before.start_ticks = UINT64_MAX;
    before.chunk(0, 0).record(EventKind::Park, 0);
    REQUIRE(parseError(before.bytes()).find("104 days") != std::string::npos);
    // One tick per second: whole seconds, in range.
    TraceBuilder slow;
    slow.ticks_per_second = 1;
    slow.chunk(0).record(EventKind::Park, 3).record(EventKind::Unpark, 2, {0});
    const Trace trace = parseOk(slow.bytes());
    REQUIRE(trace.events[1].time == 5'000'000'000);
    // ... but an end a billion seconds away is not.
    slow.complete = true;
    slow.end_ticks = 1'000'000'000;
    REQUIRE(parseError(slow.bytes()).find("end") != std::string::npos);
}

TEST_CASE("ids and counts a file claims cost only what it contains", "[reader][hostile]") {
    // One string with the largest id allowed: the table stays small.
    TraceBuilder b;
    b.chunk(0).string(std::uint64_t{1} << 26, "far away").record(EventKind::Mark, 1, {std::uint64_t{1} << 26});
    Trace trace = parseOk(b.bytes());
    REQUIRE(trace.strings.size() <= 2);
    REQUIRE(trace.string(trace.events[0].arg[0]) == "far away");
    // A lone thread numbered 65535: one entry, keeping its number.
    TraceBuilder t;
    t.chunk(65535).record(EventKind::ThreadStart, 1, {3, 0});
    trace = parseOk(t.bytes());
    REQUIRE(trace.threads.size() == 1);
    REQUIRE(trace.threads[0].number == 65535);
    REQUIRE(trace.threads[0].worker == 3);
    REQUIRE(trace.events[0].thread == 0);
    // Threads whose chunks arrive out of order are still listed by number.
    TraceBuilder order;
    order.chunk(7).record(EventKind::Park, 2).chunk(2).record(EventKind::Park, 1);
    trace = parseOk(order.bytes());
    REQUIRE(trace.threads.size() == 2);
    REQUIRE(trace.threads[0].number == 2);
    REQUIRE(trace.threads[1].number == 7);
    REQUIRE(trace.events[0].thread == 0); // thread 2's park, at 1 ns, comes first
    // A worker index past any runtime's is corruption.
    TraceBuilder w;
    w.chunk(0).record(EventKind::WakeupSent, 1, {std::uint64_t{1} << 40});
    REQUIRE(parseError(w.bytes()).find("worker") != std::string::npos);
}

// Every record of `list` reads back as `want` holds it, whole and by field.
static void requireRecords(const trace::EventList& list, const std::vector<trace::Event>& want) {
    REQUIRE(list.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        INFO("record " << i);
        REQUIRE(list[i] == want[i]);
        REQUIRE(list.time(i) == want[i].time);
        REQUIRE(list.kind(i) == want[i].kind);
        REQUIRE(list.thread(i) == want[i].thread);
    }
}

// Trace::events keeps records in columns (trace_event_list.hpp): a field is
// stored only when it is not 0, a record with a wide field or thread whole.
// Every record reads back as it went in, whatever its zeros, after set()
// turned fields 0 or non-0 anywhere in the list, and after cutting it short.
TEST_CASE("the record list reads back every record as pushed: zero fields, wide values, set and resize", "[reader][columns]") {
    std::mt19937_64 rng(13);
    const std::uint64_t unusual[] = {0,
                                     1,
                                     7,
                                     UINT32_MAX,                         // a 32-bit value that is not a sign-extended int32
                                     std::uint64_t{1} << 32,             // a fiber id past 2^32
                                     static_cast<std::uint64_t>(-4),     // -errno
                                     static_cast<std::uint64_t>(INT32_MIN),
                                     0x7f00'1234'5678'9abcull};          // an object's address
    const auto randomEvent = [&](std::size_t i) {
        trace::Event e;
        e.time = static_cast<std::int64_t>(i) * 1000 + static_cast<std::int64_t>(rng() % 1000);
        if (i % 97 == 5) e.time += std::int64_t{40} * 3600 * 1'000'000'000; // 40 hours in (and back)
        e.kind = static_cast<EventKind>(1 + rng() % kMaxEventKind);
        e.small = static_cast<std::uint8_t>(rng() % 4);
        // Mostly a few threads; now and then 255, 256 and a crafted 70000 (each a shape of its own).
        const std::uint32_t edge[] = {255, 256, 70000};
        e.thread = rng() % 30 == 0 ? edge[rng() % 3] : static_cast<std::uint32_t>(rng() % 4);
        for (auto& a : e.arg) a = rng() % 3 == 0 ? unusual[rng() % std::size(unusual)] : rng() % 3;
        return e;
    };
    std::vector<trace::Event> want;
    trace::EventList list;
    for (std::size_t i = 0; i < 1000; ++i) {
        want.push_back(randomEvent(i));
        list.push_back(want.back());
    }
    const auto check = [&] { requireRecords(list, want); };
    check();
    list.shrink_to_fit();
    check();
    // Turn fields 0 and non-0 in the middle of groups, at group edges, and wide.
    for (std::size_t i : {0u, 1u, 63u, 64u, 65u, 127u, 128u, 500u, 998u, 999u}) {
        trace::Event e = want[i];
        e.arg[0] = e.arg[0] ? 0 : 5;
        e.arg[1] = 0;
        e.arg[2] = i % 2 ? std::uint64_t{1} << 40 : 9;
        want[i] = e;
        list.set(i, e);
    }
    check();
    for (std::size_t i = 0; i < want.size(); i += 3) {
        want[i].arg[0] = want[i].arg[1] = want[i].arg[2] = 0;
        want[i].thread = 1;
        list.set(i, want[i]);
    }
    check();
    // Cut inside a group, then at a group's edge, and grow again.
    for (std::size_t n : {777u, 640u, 0u}) {
        want.resize(n);
        list.resize(n);
        check();
        for (std::size_t i = n; i < n + 100; ++i) {
            want.push_back(randomEvent(i));
            list.push_back(want.back());
        }
        check();
    }
    const trace::EventList copy(want);
    REQUIRE(copy == list);
}

// The compact codes (trace_event_list.hpp): dense times in 16-bit blocks that
// widen to 32 bits or whole when a record does not fit (also in an earlier
// block, through set()), and field values in 16-bit codes: small ones as
// themselves, clustered ids in their group's window, and the rest escaped,
// at every boundary of those ranges. They must read back exactly, and a
// dense trace of clustered ids must take under 11 bytes a record, not 15.
TEST_CASE("the record list's table of shapes: 65535 of them, then records kept whole", "[reader][columns]") {
    // Each record a shape (thread, kind, enumerated field) of its own: the
    // table codes the first 65535; a record of a new shape after that is
    // kept whole, and one of a known shape is still coded.
    std::vector<trace::Event> want;
    trace::EventList list;
    for (std::uint32_t k = 0; k < 65'535 + 300; ++k) {
        trace::Event e;
        e.time = k;
        e.thread = k / 4;
        e.kind = static_cast<EventKind>(1 + k % 2);
        e.small = static_cast<std::uint8_t>(k % 4 / 2);
        e.arg[0] = k % 5;
        want.push_back(e);
        list.push_back(e);
    }
    for (std::uint32_t k = 0; k < 100; ++k) { // known shapes again
        trace::Event e = want[k * 7];
        e.time = 70'000 + k;
        want.push_back(e);
        list.push_back(e);
    }
    requireRecords(list, want);
}

TEST_CASE("the record list's 16-bit times and field codes read back at every boundary", "[reader][columns]") {
    std::mt19937_64 rng(29);
    const std::int64_t edges[] = {0, 1, 32766, 32767, 32768, 32769, 65535, 65536, 16383, 16384, -1, -4, -11,
                                  INT32_MAX, INT32_MAX - 1, INT32_MIN, INT32_MIN + 1, 1'000'000, 1'016'383, 1'016'384};
    std::vector<trace::Event> want;
    trace::EventList list;
    std::int64_t t = 5;
    std::uint64_t fiber = 1'000'000;
    const auto next = [&](std::size_t i) {
        trace::Event e;
        // Dense (16-bit blocks), with a stretch of sparse records (32-bit
        // blocks), a jump of hours (whole) and a step back (whole).
        t += i >= 3000 && i < 3600 ? 70'000 + static_cast<std::int64_t>(rng() % 1000) : static_cast<std::int64_t>(rng() % 40);
        if (i == 4100) t += std::int64_t{5} * 3600 * 1'000'000'000;
        e.time = i == 4500 ? t - 1'000'000 : t;
        e.kind = static_cast<EventKind>(1 + rng() % kMaxEventKind);
        e.thread = static_cast<std::uint32_t>(rng() % 4);
        fiber += rng() % 3;
        for (auto& a : e.arg) {
            const unsigned pick = static_cast<unsigned>(rng() % 8);
            const std::int64_t v = pick < 4   ? static_cast<std::int64_t>(fiber - rng() % 64) // a cluster of ids
                                   : pick < 6 ? static_cast<std::int64_t>(rng() % 4)
                                              : edges[rng() % std::size(edges)];
            a = static_cast<std::uint64_t>(v);
        }
        return e;
    };
    for (std::size_t i = 0; i < 5000; ++i) {
        want.push_back(next(i));
        list.push_back(want.back());
    }
    const auto check = [&] { requireRecords(list, want); };
    check();
    // Widen earlier blocks (16 -> 32 bits, 16 -> whole), escape values and
    // bring them back, in the middle of the list.
    for (std::size_t i : {10u, 300u, 700u, 1000u, 2049u}) {
        want[i].time += i == 300 ? 50'000'000'000 : 100'000;
        want[i].arg[0] = static_cast<std::uint64_t>(std::int64_t{-7});
        want[i].arg[1] = static_cast<std::uint64_t>(std::int64_t{INT32_MIN});
        want[i].arg[2] = 0;
        list.set(i, want[i]);
    }
    check();
    for (std::size_t i : {10u, 2049u}) {
        want[i].arg[0] = 3;
        want[i].arg[1] = fiber;
        list.set(i, want[i]);
    }
    check();
    // Cut in a 16-bit block, in a 32-bit one, in a whole one, and grow again.
    for (std::size_t n : {4600u, 4200u, 3300u, 1500u}) {
        want.resize(n);
        list.resize(n);
        check();
        for (std::size_t i = n; i < n + 300; ++i) {
            want.push_back(next(i));
            list.push_back(want.back());
        }
        check();
    }
    // The compact form's size on a dense run of clustered ids and small values.
    trace::EventList dense;
    std::uint64_t id = 3'000'000;
    for (std::size_t i = 0; i < 64'000; ++i) {
        trace::Event e;
        e.time = static_cast<std::int64_t>(i) * 25;
        e.kind = EventKind::Switch;
        e.thread = static_cast<std::uint32_t>(i % 4);
        id += i % 4 == 0;
        e.arg[0] = id;
        e.arg[1] = i % 3 == 0 ? 0 : id + 1;
        dense.push_back(e);
    }
    dense.shrink_to_fit();
    const double per_record = static_cast<double>(dense.memoryBytes()) / 64'000.0;
    INFO("bytes per record: " << per_record);
    REQUIRE(per_record < 11.0); // 15.4 in 32-bit columns
}
