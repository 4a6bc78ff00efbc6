// Recorder: opens the trace file, writes the header, runs the writer thread
// that appends full chunks, and completes the header on stop.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>
#include <unordered_map>

#include "recording.hpp"

namespace fiberscope::trace {

using namespace detail;

namespace detail {

bool readSchedstat(std::uint32_t tid, std::uint64_t& on_cpu, std::uint64_t& waiting) noexcept {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/self/task/%u/schedstat", tid);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    char text[128];
    const ssize_t n = ::read(fd, text, sizeof text - 1);
    ::close(fd);
    if (n <= 0) return false;
    text[n] = '\0';
    unsigned long long a = 0, b = 0;
    if (std::sscanf(text, "%llu %llu", &a, &b) != 2) return false;
    on_cpu = a;
    waiting = b;
    return true;
}

} // namespace detail

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

bool writeChunk(Recording* r, std::uint32_t thread, std::uint32_t records, std::uint64_t base_ticks, std::uint64_t base_fiber,
                const std::uint8_t* payload, std::size_t size, std::string& error) {
    format::ChunkHeader chunk{};
    chunk.magic = format::kChunkMagic;
    chunk.size = static_cast<std::uint32_t>(size);
    chunk.thread = thread;
    chunk.records = records;
    chunk.base_ticks = base_ticks;
    chunk.base_fiber = base_fiber;
    chunk.checksum = format::crc32(payload, size);
    chunk.header_crc = format::chunkHeaderCrc(chunk);
    return writeAll(r->fd, &chunk, sizeof chunk, error) && writeAll(r->fd, payload, size, error);
}

// What the OS did to the recorded threads: every writer tick, each attached
// thread's /proc/self/task/TID/schedstat (nanoseconds on a CPU, nanoseconds
// ready but waiting on a runqueue, timeslices) is read and the change since
// the last look becomes a cpu-sample record.
//
// Where the records go: a cpu-sample is about another thread, but it cannot
// go into that thread's chunks. A running thread's buffer is its alone (the
// record path takes no lock, and must not start to), and a chunk written
// later under its thread number would break the rule that a thread's
// records reach the file in time order (readers merge on it). So the writer
// keeps a chunk stream of its own, under a pseudo trace thread number taken
// when it first samples, and each record names the trace thread it
// describes in its `thread` field. A pseudo thread has no thread-start: no
// runtime worker runs on it. Its chunks are written like a thread's, when
// their first record is as old as a lent buffer's may get, and at stop.
class CpuSampler {
public:
    struct Target {
        std::uint32_t trace_thread;
        std::uint32_t tid;
        bool has_base; // its totals when it attached (else the first sample counts from the thread's start)
        std::uint64_t base_on_cpu, base_waiting;
    };

    void sample(Recording& r, const std::vector<Target>& targets) {
        for (const Target& target : targets) {
            std::uint64_t on_cpu = 0, waiting = 0;
            if (!readSchedstat(target.tid, on_cpu, waiting)) {
                last_.erase(target.trace_thread); // the thread exited meanwhile
                continue;
            }
            const Last base = target.has_base ? Last{target.tid, target.base_on_cpu, target.base_waiting} : Last{target.tid, 0, 0};
            auto [it, first] = last_.try_emplace(target.trace_thread, base);
            if (!first && it->second.tid != target.tid) it->second = base;
            Last& last = it->second;
            // A thread's first sample counts from when it attached (its
            // first record); later ones from its previous sample (FORMAT.md).
            const std::uint64_t on_delta = on_cpu > last.on_cpu ? on_cpu - last.on_cpu : 0;
            const std::uint64_t wait_delta = waiting > last.waiting ? waiting - last.waiting : 0;
            last.on_cpu = on_cpu;
            last.waiting = waiting;
            append(r, now(), target.trace_thread, on_delta, wait_delta);
        }
    }

    // Writes the pending chunk if it holds records older than `min_age`
    // ticks (all of them when `all`).
    void flush(Recording* r, std::uint64_t min_age, bool all) {
        if (!records_) return;
        const std::uint64_t t = now();
        if (!all && (t < base_ || t - base_ < min_age)) return;
        std::string error;
        writeChunk(r, thread_, records_, base_, 0, bytes_.data(), bytes_.size(), error);
        if (!error.empty()) {
            std::lock_guard lock(r->mutex);
            if (r->write_error.empty()) r->write_error = error;
        }
        bytes_.clear();
        records_ = 0;
    }

private:
    struct Last {
        std::uint32_t tid;
        std::uint64_t on_cpu, waiting;
    };

    void varint(std::uint64_t value) {
        while (value >= 0x80) {
            bytes_.push_back(static_cast<std::uint8_t>(value | 0x80));
            value >>= 7;
        }
        bytes_.push_back(static_cast<std::uint8_t>(value));
    }

    void append(Recording& r, std::uint64_t t, std::uint32_t thread, std::uint64_t on_cpu, std::uint64_t waiting) {
        if (!have_thread_) {
            thread_ = r.next_thread.fetch_add(1, std::memory_order_relaxed);
            have_thread_ = true;
        }
        // Clocks can step back across CPUs by a few ticks: clamp, as Record does.
        if (records_ == 0) base_ = last_time_ = std::max(t, last_time_);
        const std::uint64_t delta = t > last_time_ ? t - last_time_ : 0;
        last_time_ = std::max(t, last_time_);
        bytes_.push_back(static_cast<std::uint8_t>(EventKind::CpuSample));
        varint(delta);
        varint(thread);
        varint(on_cpu);
        varint(waiting);
        ++records_;
    }

    std::unordered_map<std::uint32_t, Last> last_; // by trace thread number
    std::vector<std::uint8_t> bytes_;              // the pending chunk's payload
    std::uint32_t records_ = 0;
    std::uint64_t base_ = 0;
    std::uint64_t last_time_ = 0;
    std::uint32_t thread_ = 0;
    bool have_thread_ = false;
};

// Appends full slabs as chunks. It also wakes every kWriterTickMs to take
// the stale buffers of parked threads (lent, see lendBuffer): a thread that
// records a little and then waits in the kernel for a long time would
// otherwise keep its last records out of the file until it woke. When
// stopping it takes every lent buffer that holds records. At each tick, and
// once when stopping, it samples the threads' CPU time (CpuSampler).
void writerMain(Recording* r) {
    using Clock = std::chrono::steady_clock;
    const auto tick = std::chrono::milliseconds(kWriterTickMs);
    // A lent buffer is taken once its first record is this old: with the
    // tick, no parked thread's record waits much longer than the budget.
    const std::uint64_t min_age = r->flush_ticks - r->flush_ticks * kWriterTickMs / kFlushBudgetMs;
    auto next_look = Clock::now() + tick;
    CpuSampler sampler;
    std::vector<CpuSampler::Target> targets;
    bool sampled_at_stop = false;
    for (;;) {
        Slab* slab = nullptr;
        bool stopping, sample = false;
        {
            std::unique_lock lock(r->mutex);
            r->work.wait_until(lock, next_look, [&] { return !r->full.empty() || r->stopping; });
            stopping = r->stopping;
            if (stopping) {
                takeLentSlabs(*r, now(), 0, true);
                sample = !sampled_at_stop;
                sampled_at_stop = true;
            } else if (Clock::now() >= next_look) {
                takeLentSlabs(*r, now(), min_age, false);
                next_look = Clock::now() + tick;
                sample = true;
            }
            if (sample) {
                // Copied under the lock (threads attach and exit under it);
                // the /proc reads happen after it is released.
                targets.clear();
                for (const ThreadSlot* t : r->threads)
                    if (t->tid)
                        targets.push_back({t->trace_thread, t->tid, t->has_base && t->base_generation == r->generation, t->base_on_cpu,
                                           t->base_waiting});
            }
            if (!r->full.empty()) {
                slab = r->full.front();
                r->full.pop_front();
            }
        }
        if (sample) sampler.sample(*r, targets);
        sampler.flush(r, min_age, stopping);
        if (!slab) {
            if (stopping) return;
            continue;
        }
        const Buffer& b = slab->buffer;
        std::string error;
        writeChunk(r, b.thread, b.records, b.base_time, b.base_fiber, b.start, static_cast<std::size_t>(b.pos - b.start), error);
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
    // release: pairs with activeRecording()'s acquire load.
    g_recording.store(r.release(), std::memory_order_release);
    // relaxed: published by the release store of g_enabled below.
    const char* check = std::getenv("FIBERSCOPE_TRACE_CHECK");
    g_check.store(options.check || (check && *check && std::string_view(check) != "0"), std::memory_order_relaxed);
    // release: pairs with enabled()'s acquire load, so a thread that sees
    // tracing on sees everything above (g_use_tsc from calibrateClock, the
    // recording) before its first record.
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
