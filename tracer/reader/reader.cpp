// The trace reader: validates every byte it uses, decodes chunks, merges the
// per-thread streams by time. Every path out of here on bad input is a
// ReadError naming the offset; nothing reads past the buffer.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <queue>
#include <unordered_map>

#include "decoder.hpp"
#include "fiberscope/trace_vocabulary.hpp"

namespace fiberscope::trace {

std::string ReadError::text() const {
    std::string out = path.empty() ? std::string("trace") : path;
    out += ": offset " + std::to_string(offset) + ": " + message;
    return out;
}

std::uint64_t nextTraceSerial() noexcept {
    // relaxed: only uniqueness matters, which the atomic increment gives.
    static std::atomic<std::uint64_t> last{0};
    return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

bool ranScalingPolicy(const Trace& trace) noexcept {
    // Worker 0's thread-start, backend mark and policy mark come first; 64
    // records leave room for other threads' first records merged among them.
    const std::size_t n = std::min<std::size_t>(trace.events.size(), 64);
    for (std::size_t i = 0; i < n; ++i)
        if (trace.events.kind(i) == EventKind::Mark && trace.string(trace.events[i].arg[0]) == kScalingPolicyMark) return true;
    return false;
}

using namespace detail;

bool parseTrace(std::span<const std::uint8_t> bytes, Trace& out, ReadError& error, ReadOptions options) {
    out = Trace{};
    out.serial = nextTraceSerial();
    out.file_bytes = bytes.size();
    const std::uint8_t* base = bytes.data();
    const std::size_t size = bytes.size();
    auto fail = [&](std::uint64_t offset, std::string message) {
        error.offset = offset;
        error.message = std::move(message);
        return false;
    };
    format::HeaderFixed fixed{};
    std::size_t header_end = 0;
    if (!detail::parseHeader(base, size, out, fixed, header_end, error)) return false;
    TraceHeader& h = out.header;
    const double ns_per_tick = 1e9 / static_cast<double>(fixed.ticks_per_second);
    Decoder decoder{out, error, base, ns_per_tick, fixed.start_ticks, static_cast<double>(kMaxTimeNs) / ns_per_tick, {}, {}, {}, {}};
    std::size_t offset = header_end;
    while (offset < size) {
        format::ChunkHeader chunk{};
        std::string tail;
        const ChunkCheck check = checkChunk(base + offset, size - offset, offset, chunk, tail, error, h.version, out.chunks);
        if (check == ChunkCheck::Corrupt) return false;
        if (check != ChunkCheck::Whole) {
            if (options.strict)
                return fail(offset, check == ChunkCheck::ZeroTail              ? "bad chunk magic: corrupt file"
                                    : size - offset < sizeof(format::ChunkHeader) ? "file ends inside a chunk header (truncated)"
                                                                                  : "file ends inside a chunk (truncated)");
            out.warnings.push_back(std::move(tail));
            break;
        }
        const std::uint8_t* payload = base + offset + sizeof chunk;
        if (format::crc32(payload, chunk.size) != chunk.checksum)
            return fail(offset + 32, "chunk checksum mismatch: corrupt file");
        if (!decoder.chunk(chunk, offset, payload)) return false;
        ++out.chunks;
        offset += sizeof chunk + chunk.size;
        if (options.progress) options.progress->store(offset, std::memory_order_relaxed);
    }
    if (!h.complete) out.warnings.push_back("the recording did not stop cleanly (the program crashed or is still running)");

    decoder.sortThreads();
    decoder.finishStrings();
    // Threads: name every thread that recorded.
    for (std::size_t i = 0; i < out.threads.size(); ++i) {
        ThreadInfo& t = out.threads[i];
        t.number = decoder.thread_number[i];
        t.name = out.string(t.name_id);
        if (t.name.empty()) t.name = t.worker >= 0 ? "worker " + std::to_string(t.worker) : "thread " + std::to_string(t.number);
    }

    // Each thread's events are in time order already: merge them (while an
    // observer reads the same streams; it is done before they are freed).
    {
        struct Done {
            MergeObserver* observer;
            ~Done() {
                if (observer) observer->merged();
            }
        } done{options.observer};
        if (options.observer) options.observer->merging(out, decoder.per_thread);
        mergeByTime(decoder.per_thread, out.events);
        out.events.shrink_to_fit(); // the trace is kept as long as it is open
    }
    h.duration_ns = out.events.empty() ? 0 : out.events.back().time;
    if (h.complete) {
        std::int64_t end = 0;
        if (!decoder.toNs(fixed.end_ticks, end) || end < 0)
            return fail(48, "the recording's end lies outside the 104 days (2^53 ns) a trace can span: corrupt header");
        h.duration_ns = std::max(end, h.duration_ns);
    }
    return true;
}

bool readTrace(const std::string& path, Trace& out, ReadError& error, ReadOptions options) {
    const int fd = openTrace(path, error);
    if (fd < 0) return false;
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        error.message = "not a regular file";
        return false;
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    if (size == 0) {
        ::close(fd);
        error.message = "file is empty: not a Fiberscope trace";
        return false;
    }
    void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) {
        error.message = std::string("cannot map: ") + std::strerror(errno);
        return false;
    }
    madvise(map, size, MADV_SEQUENTIAL);
    const bool ok = parseTrace({static_cast<const std::uint8_t*>(map), size}, out, error, options);
    munmap(map, size);
    return ok;
}

} // namespace fiberscope::trace
