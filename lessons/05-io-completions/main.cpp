// Lesson 5: I/O completions.
//
// Four "writer" fibers each write one block of a temporary file, then four
// "reader" fibers read the blocks back and check them. Every operation goes
// through the thread's io_uring: the fiber prepares a submission, switches
// away (it is parked on the ring, not on a queue), the thread's idle loop
// submits everything in one io_uring_enter and waits; each completion makes
// its fiber ready again.
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

namespace {

constexpr const char* kName = "lesson05-io-completions";
constexpr int kBlocks = 4;
constexpr std::size_t kBlockSize = 4096;

std::string tempPath() {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/fiberscope-lesson05-" + std::to_string(getpid()) + ".dat";
}

// Block `i` is filled with the byte 'a' + i.
std::byte pattern(int block) { return static_cast<std::byte>('a' + block); }

// Returns 0 on success, else prints what failed and returns 1.
int run(fiberscope::EventLoop& loop, const std::string& path) {
    auto file = loop.createFile(path, {.read = true});
    if (!file) {
        std::fprintf(stderr, "%s: cannot create %s: %s\n", kName, path.c_str(), file.error().message());
        return 1;
    }
    fiberscope::trace::mark("checkpoint: file created");

    fiberscope::trace::mark("checkpoint: writing");
    std::vector<fiberscope::Future<bool>> writers;
    for (int i = 0; i < kBlocks; ++i)
        writers.push_back(loop.async([&loop, &file, i] {
            fiberscope::setFiberName("writer " + std::to_string(i));
            std::vector<std::byte> block(kBlockSize, pattern(i));
            // Submit an IORING_OP_WRITE and park until its completion.
            auto written = loop.pwrite(*file, block, static_cast<std::uint64_t>(i) * kBlockSize);
            return written && *written == kBlockSize;
        }));
    int ok_writes = 0;
    for (auto& writer : writers) ok_writes += writer.await();
    std::printf("%d writer fibers wrote %d of %d blocks of %zu bytes.\n", kBlocks, ok_writes, kBlocks, kBlockSize);

    fiberscope::trace::mark("checkpoint: reading");
    std::vector<fiberscope::Future<bool>> readers;
    for (int i = 0; i < kBlocks; ++i)
        readers.push_back(loop.async([&loop, &file, i] {
            fiberscope::setFiberName("reader " + std::to_string(i));
            std::vector<std::byte> block(kBlockSize);
            // Submit an IORING_OP_READ and park until its completion.
            auto read = loop.pread(*file, block, static_cast<std::uint64_t>(i) * kBlockSize);
            if (!read || *read != kBlockSize) return false;
            for (std::byte b : block)
                if (b != pattern(i)) return false;
            return true;
        }));
    int ok_reads = 0;
    for (auto& reader : readers) ok_reads += reader.await();
    std::printf("%d reader fibers read back %d of %d blocks intact.\n", kBlocks, ok_reads, kBlocks);

    if (auto closed = loop.close(*file); !closed) {
        std::fprintf(stderr, "%s: close failed: %s\n", kName, closed.error().message());
        return 1;
    }
    fiberscope::trace::mark("checkpoint: file closed");
    return ok_writes == kBlocks && ok_reads == kBlocks ? 0 : 1;
}

} // namespace

int main(int argc, char** argv) {
    // One thread and one ring: every step happens in one place.
    auto loop = lesson::start(kName, argc, argv, 1);
    const std::string path = tempPath();
    // The backend the loop runs on (epoll when asked for, or when the kernel refuses io_uring).
    const bool uring = loop->backend() == fiberscope::IoBackend::io_uring;
    std::printf("Writing and reading %s through %s on %u thread(s).\n", path.c_str(),
                uring ? "io_uring" : "epoll (the blocking pool's threads do the file I/O)", loop->maxThreads());
    const int status = run(*loop, path);
    loop.reset(); // stop the loop before removing the file with a plain syscall
    ::unlink(path.c_str());
    return status;
}
