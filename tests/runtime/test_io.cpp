#include "test_support.hpp"

#include <unistd.h>

#include <cstring>
#include <string>

using namespace fiberscope;
using namespace std::chrono_literals;

static std::string tempPath(const char* name) {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir ? dir : "/tmp") + "/fiberscope-test-" + std::to_string(getpid()) + "-" + name;
}

TEST_CASE("files: create, write, read back, close", "[io][file]") {
    auto loop = test::makeLoop(2);
    const std::string path = tempPath("rw");
    auto file = loop->createFile(path, {.read = true});
    REQUIRE(file);
    const char text[] = "hello, ring";
    auto wrote = loop->pwrite(*file, std::as_bytes(std::span(text, sizeof text)), 100);
    REQUIRE(wrote);
    REQUIRE(*wrote == sizeof text);
    char back[sizeof text] = {};
    auto read = loop->pread(*file, std::as_writable_bytes(std::span(back)), 100);
    REQUIRE(read);
    REQUIRE(*read == sizeof text);
    REQUIRE(std::memcmp(back, text, sizeof text) == 0);
    auto past_end = loop->pread(*file, std::as_writable_bytes(std::span(back)), 4096);
    REQUIRE(past_end);
    REQUIRE(*past_end == 0);
    REQUIRE(loop->close(*file));
    unlink(path.c_str());
}

TEST_CASE("files: every error is a named Errc, never a crash", "[io][file][errors]") {
    auto loop = test::makeLoop(2);
    REQUIRE(loop->openFile("/nonexistent/dir/file").error() == Errc::FileNotFound);
    REQUIRE(loop->openFile("").error() == Errc::InvalidArgument);
    REQUIRE(loop->openFile(std::string(5000, 'a')).error() == Errc::NameTooLong);
    REQUIRE(loop->openFile("/").value().fd >= 0);

    const std::string path = tempPath("errors");
    auto file = loop->createFile(path, {.exclusive = true});
    REQUIRE(file);
    REQUIRE(loop->createFile(path, {.exclusive = true}).error() == Errc::PathAlreadyExists);
    char byte;
    // Opened write-only: reading is refused.
    REQUIRE(loop->pread(*file, std::as_writable_bytes(std::span(&byte, 1)), 0).error() == Errc::NotOpenForReading);
    REQUIRE(loop->close(*file));
    // Double close: EBADF is an error value, not the seed's `unreachable`.
    REQUIRE(loop->close(*file).error() == Errc::BadFileDescriptor);
    REQUIRE(loop->close(File{}).error() == Errc::BadFileDescriptor);
    REQUIRE(loop->pwrite(*file, std::as_bytes(std::span(&byte, 1)), 0).error() == Errc::NotOpenForWriting);
    unlink(path.c_str());
}

TEST_CASE("many fibers reading a file concurrently", "[io][file][stress]") {
    auto loop = test::makeLoop(4);
    const std::string path = tempPath("many");
    auto file = loop->createFile(path, {.read = true});
    REQUIRE(file);
    std::vector<unsigned char> data(64 * 1024);
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i % 251);
    REQUIRE(*loop->pwrite(*file, std::as_bytes(std::span(data)), 0) == data.size());
    std::vector<Future<bool>> readers;
    for (int r = 0; r < 200; ++r)
        readers.push_back(loop->async([&, r] {
            unsigned char chunk[256];
            std::uint64_t offset = static_cast<std::uint64_t>(r) * 256;
            auto got = loop->pread(*file, std::as_writable_bytes(std::span(chunk)), offset);
            if (!got || *got != sizeof chunk) return false;
            return std::memcmp(chunk, data.data() + offset, sizeof chunk) == 0;
        }));
    for (auto& r : readers) REQUIRE(r.await());
    REQUIRE(loop->close(*file));
    unlink(path.c_str());
}

TEST_CASE("sleep waits at least its duration; sleepUntil on every clock", "[io][time]") {
    auto loop = test::makeLoop(2);
    auto before = *loop->now();
    REQUIRE(loop->sleep(20ms));
    auto after = *loop->now();
    REQUIRE(after - before >= 20ms);
    for (Clock clock : {Clock::monotonic, Clock::realtime, Clock::boottime}) {
        auto now = loop->now(clock);
        REQUIRE(now);
        REQUIRE(loop->sleepUntil(*now + 5ms, clock));
        REQUIRE(*loop->now(clock) >= *now + 5ms);
    }
    REQUIRE(loop->sleep(-5ms)); // a past deadline returns at once
}

TEST_CASE("many sleepers wake in deadline order", "[io][time]") {
    auto loop = test::makeLoop(1);
    std::vector<int> order;
    std::vector<Future<void>> sleepers;
    for (int i = 9; i >= 0; --i)
        sleepers.push_back(loop->async([&, i] {
            (void)loop->sleep(std::chrono::milliseconds(2 + 4 * i));
            order.push_back(i);
        }));
    for (auto& s : sleepers) s.await();
    REQUIRE(order == std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
}
