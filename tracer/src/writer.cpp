// Recorder: opens the trace file, writes the header, runs the writer thread
// that appends full chunks, and completes the header on stop.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>

#include "recording.hpp"

namespace fiberscope::trace {

using namespace detail;

namespace {

std::uint32_t g_generation = 0;
// Stopped recordings are kept (not freed) until the next one starts, so a
// straggling thread that still holds a slab never touches freed memory.
std::vector<std::unique_ptr<Recording>> g_retired;

bool writeAll(int fd, const void* data, std::size_t size, std::string& error) {
    auto* bytes = static_cast<const std::uint8_t*>(data);
    while (size) {
        ssize_t n = ::write(fd, bytes, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (error.empty()) error = std::string("writing the trace failed: ") + std::strerror(errno);
            return false;
        }
        bytes += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

std::string commandLine() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!text.empty() && text.back() == '\0') text.pop_back();
    return text; // arguments separated by NUL
}

void appendString(std::string& out, const std::string& text) {
    const std::uint32_t size = static_cast<std::uint32_t>(text.size());
    out.append(reinterpret_cast<const char*>(&size), 4);
    out += text;
}

// Appends full slabs as chunks. It also wakes every kWriterTickMs to take
// the stale buffers of parked threads (lent, see lendBuffer): a thread that
// records a little and then waits in the kernel for a long time would
// otherwise keep its last records out of the file until it woke. When
// stopping it takes every lent buffer that holds records.
void writerMain(Recording* r) {
    using Clock = std::chrono::steady_clock;
    const auto tick = std::chrono::milliseconds(kWriterTickMs);
    // A lent buffer is taken once its first record is this old: with the
    // tick, no parked thread's record waits much longer than the budget.
    const std::uint64_t min_age = r->flush_ticks - r->flush_ticks * kWriterTickMs / kFlushBudgetMs;
    auto next_look = Clock::now() + tick;
    for (;;) {
        Slab* slab;
        {
            std::unique_lock lock(r->mutex);
            r->work.wait_until(lock, next_look, [&] { return !r->full.empty() || r->stopping; });
            if (r->stopping) {
                takeLentSlabs(*r, now(), 0, true);
            } else if (Clock::now() >= next_look) {
                takeLentSlabs(*r, now(), min_age, false);
                next_look = Clock::now() + tick;
            }
            if (r->full.empty()) {
                if (r->stopping) return;
                continue;
            }
            slab = r->full.front();
            r->full.pop_front();
        }
        const Buffer& b = slab->buffer;
        format::ChunkHeader chunk{};
        chunk.magic = format::kChunkMagic;
        chunk.size = static_cast<std::uint32_t>(b.pos - b.start);
        chunk.thread = b.thread;
        chunk.records = b.records;
        chunk.base_ticks = b.base_time;
        chunk.base_fiber = b.base_fiber;
        chunk.checksum = format::crc32(b.start, chunk.size);
        std::string error;
        if (writeAll(r->fd, &chunk, sizeof chunk, error)) writeAll(r->fd, b.start, chunk.size, error);
        std::lock_guard lock(r->mutex);
        if (!error.empty() && r->write_error.empty()) r->write_error = error;
        r->free.push_back(slab);
    }
}

} // namespace

Recorder::Recorder(const std::string& path, RecorderOptions options) {
    std::lock_guard lock(g_lifecycle);
    if (activeRecording()) {
        error_ = "a trace is already being recorded in this process; stop that Recorder first";
        return;
    }
    if (options.buffer_bytes < 4096) options.buffer_bytes = 4096;
    if (options.buffer_bytes > format::kMaxChunkSize) options.buffer_bytes = format::kMaxChunkSize;
    if (options.max_buffers < 2) options.max_buffers = 2;
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        error_ = "cannot create trace file '" + path + "': " + std::strerror(errno);
        return;
    }
    g_retired.clear();
    auto r = std::make_unique<Recording>();
    r->options = options;
    r->fd = fd;
    r->generation = ++g_generation;
    calibrateClock(r->header);
    r->flush_ticks = r->header.ticks_per_second * kFlushBudgetMs / 1000;
    r->header.cpu_count = std::thread::hardware_concurrency();
    r->header.pid = static_cast<std::uint32_t>(getpid());

    std::string head(format::kMagic, sizeof format::kMagic);
    std::string rest;
    appendString(rest, options.backend);
    appendString(rest, commandLine());
    const std::uint32_t version = format::kVersion;
    const std::uint32_t header_size = static_cast<std::uint32_t>(sizeof(format::HeaderFixed) + rest.size());
    head.append(reinterpret_cast<const char*>(&version), 4);
    head.append(reinterpret_cast<const char*>(&header_size), 4);
    head.append(reinterpret_cast<const char*>(&r->header), sizeof r->header);
    head += rest;
    r->header.header_crc = format::headerCrc(head.data(), head.size());
    std::memcpy(head.data() + format::kHeaderCrcOffset, &r->header.header_crc, 4);
    r->header_bytes = head; // the checksum is computed anew when stop() rewrites the clock fields
    std::string error;
    if (!writeAll(fd, head.data(), head.size(), error)) {
        ::close(fd);
        error_ = error;
        return;
    }
    {
        std::lock_guard guard(r->mutex);
        for (int i = 0; i < 4; ++i)
            if (Slab* slab = r->takeFree()) r->free.push_back(slab);
    }
    r->writer = std::thread(writerMain, r.get());
    g_recording.store(r.release(), std::memory_order_release);
    // release: the recording is fully set up before any thread sees it enabled.
    g_enabled.store(true, std::memory_order_release);
    active_ = true;
}

Recorder::~Recorder() { stop(); }

bool Recorder::stop() {
    if (!active_) return error_.empty();
    active_ = false;
    Recording* r;
    {
        std::lock_guard lock(g_lifecycle);
        r = activeRecording();
        g_enabled.store(false, std::memory_order_release);
    }
    // The calling thread's records go out with the rest.
    if (Buffer* b = threadBuffer(); b && b->records) {
        std::lock_guard guard(r->mutex);
        for (auto& slab : r->all)
            if (&slab->buffer == b) r->full.push_back(slab.get());
    }
    {
        std::lock_guard guard(r->mutex);
        r->stopping = true;
        r->work.notify_all();
    }
    r->writer.join();
    finishClock(r->header);
    r->header.flags |= format::kFlagComplete;
    // The fixed part (with the checksum inside it) goes out in one pwrite, so
    // a reader sees either the old header or the new one, each with its CRC.
    std::memcpy(r->header_bytes.data() + format::kHeaderFixedOffset, &r->header, sizeof r->header);
    r->header.header_crc = format::headerCrc(r->header_bytes.data(), r->header_bytes.size());
    if (::pwrite(r->fd, &r->header, sizeof r->header, format::kHeaderFixedOffset) != sizeof r->header &&
        r->write_error.empty())
        r->write_error = std::string("completing the trace header failed: ") + std::strerror(errno);
    if (::close(r->fd) != 0 && r->write_error.empty())
        r->write_error = std::string("closing the trace failed: ") + std::strerror(errno);
    if (!r->write_error.empty()) error_ = r->write_error;
    std::lock_guard lock(g_lifecycle);
    g_recording.store(nullptr, std::memory_order_release);
    g_retired.emplace_back(r);
    return error_.empty();
}

bool recording() noexcept { return enabled(); }

Recorder* startFromEnvironment(std::string_view backend) {
    const char* path = std::getenv("FIBERSCOPE_TRACE");
    if (!path || !*path || recording()) return nullptr;
    static Recorder* from_env = nullptr;
    if (from_env) return nullptr;
    RecorderOptions options;
    options.backend = std::string(backend);
    auto* recorder = new Recorder(path, options);
    if (!recorder->ok()) {
        std::fprintf(stderr, "fiberscope: FIBERSCOPE_TRACE: %s; continuing without tracing\n", recorder->error().c_str());
        delete recorder;
        return nullptr;
    }
    from_env = recorder;
    std::atexit([] {
        if (!from_env->stop()) std::fprintf(stderr, "fiberscope: FIBERSCOPE_TRACE: %s\n", from_env->error().c_str());
    });
    return recorder;
}

} // namespace fiberscope::trace
