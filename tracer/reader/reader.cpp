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

#include "../src/format.hpp"
#include "fiberscope/trace_reader.hpp"

namespace fiberscope::trace {

std::string ReadError::text() const {
    std::string out = path.empty() ? std::string("trace") : path;
    out += ": offset " + std::to_string(offset) + ": " + message;
    return out;
}

namespace {

// Field codes per kind, in record order: F fiber (zigzag delta), U varint,
// S zigzag signed, E enumerated varint stored in Event::small.
const char* const kFields[kMaxEventKind + 1] = {
    nullptr, // 0: invalid
    "UU",    // ThreadStart: worker, name
    "",      // ThreadStop
    "FFU",   // FiberCreate: fiber, parent, name
    "F",     // FiberFinish
    "F",     // FiberRecycle
    "FU",    // FiberName: fiber, name
    "FFE",   // Switch: from, to, reason
    "FUUE",  // Schedule: head, count, target, how
    "FU",    // Steal: head, victim
    "U",     // WakeupSent: target
    "U",     // WakeupReceived: sender
    "",      // Park
    "U",     // Unpark: completions
    "FES",   // Submit: fiber, opcode, fd
    "FES",   // Complete: fiber, opcode, result
    "FU",    // CancelRequest: fiber, target + 1
    "F",     // CancelDelivered
    "FU",    // MutexContended: fiber, mutex
    "FFU",   // MutexHandoff: from, to, mutex
    "FU",    // ConditionWait: fiber, condition
    "FUE",   // ConditionWake: fiber, condition, all
    "FF",    // Await: fiber, target
    "EUF",   // GroupOp: op, group, fiber
    "EUF",   // QueueOp: op, queue, fiber
    "U",     // Mark: label
    "U",     // ZoneBegin: label
    "",      // ZoneEnd
    nullptr, // StringDef: decoded specially
    "U",     // LostEvents: count
};

std::uint8_t maxEnum(EventKind kind) {
    switch (kind) {
    case EventKind::Switch: return kMaxSwitchReason;
    case EventKind::Schedule: return 2;
    case EventKind::ConditionWake: return 1;
    case EventKind::GroupOp: return 2;
    case EventKind::QueueOp: return 4;
    default: return 255; // opcodes
    }
}

constexpr std::uint64_t kMaxStringId = 1u << 26;
constexpr std::uint32_t kMaxThreads = 1u << 16;

struct Cursor {
    const std::uint8_t* base; // file start, for offsets
    const std::uint8_t* p;
    const std::uint8_t* end;

    std::uint64_t offset() const { return static_cast<std::uint64_t>(p - base); }
    bool varint(std::uint64_t& value) {
        value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (p == end) return false;
            const std::uint8_t byte = *p++;
            value |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
            if (!(byte & 0x80)) return true;
        }
        return false; // more than 10 bytes
    }
};

struct Decoder {
    Trace& trace;
    ReadError& error;
    const std::uint8_t* base;
    double ns_per_tick;
    std::uint64_t start_ticks;
    std::vector<std::vector<Event>> per_thread;

    bool fail(std::uint64_t offset, std::string message) {
        error.offset = offset;
        error.message = std::move(message);
        return false;
    }

    std::int64_t toNs(std::uint64_t ticks) const {
        const double delta = static_cast<double>(static_cast<std::int64_t>(ticks - start_ticks));
        return static_cast<std::int64_t>(delta * ns_per_tick);
    }

    bool chunk(const format::ChunkHeader& header, std::uint64_t header_offset, const std::uint8_t* payload) {
        if (header.thread >= kMaxThreads)
            return fail(header_offset + 8, "chunk names thread " + std::to_string(header.thread) + ", more than a trace can have: corrupt file");
        if (header.records > header.size / 2) // every record takes at least 2 bytes
            return fail(header_offset + 12, "chunk claims " + std::to_string(header.records) + " records in " +
                                                std::to_string(header.size) + " bytes: corrupt file");
        if (per_thread.size() <= header.thread) per_thread.resize(header.thread + 1);
        std::vector<Event>& events = per_thread[header.thread];
        events.reserve(events.size() + header.records);
        Cursor c{base, payload, payload + header.size};
        std::uint64_t ticks = header.base_ticks;
        std::uint64_t fiber = header.base_fiber;
        std::uint32_t records = 0;
        while (c.p < c.end) {
            const std::uint64_t at = c.offset();
            const std::uint8_t kind_byte = *c.p++;
            if (kind_byte == 0 || kind_byte > kMaxEventKind)
                return fail(at, "unknown record kind " + std::to_string(kind_byte) + ": corrupt file or a newer format");
            const auto kind = static_cast<EventKind>(kind_byte);
            std::uint64_t delta;
            if (!c.varint(delta)) return fail(at, "record runs past the end of its chunk");
            ticks += delta;
            ++records;
            if (kind == EventKind::StringDef) {
                std::uint64_t id, length;
                if (!c.varint(id) || !c.varint(length)) return fail(at, "string record runs past the end of its chunk");
                if (id == 0 || id > kMaxStringId) return fail(at, "string id " + std::to_string(id) + " out of range");
                if (length > format::kMaxStringBytes || length > static_cast<std::uint64_t>(c.end - c.p))
                    return fail(at, "string of " + std::to_string(length) + " bytes does not fit its chunk");
                if (trace.strings.size() <= id) trace.strings.resize(id + 1);
                trace.strings[id].assign(reinterpret_cast<const char*>(c.p), length);
                c.p += length;
                continue;
            }
            Event event;
            event.time = toNs(ticks);
            event.thread = header.thread;
            event.kind = kind;
            int slot = 0;
            for (const char* f = kFields[kind_byte]; *f; ++f) {
                std::uint64_t value;
                if (!c.varint(value)) return fail(at, std::string(eventKindName(kind)) + " record runs past the end of its chunk");
                switch (*f) {
                case 'F':
                    fiber += static_cast<std::uint64_t>(static_cast<std::int64_t>(value >> 1) ^ -static_cast<std::int64_t>(value & 1));
                    event.arg[slot++] = fiber;
                    break;
                case 'S':
                    event.arg[slot++] = static_cast<std::uint64_t>(static_cast<std::int64_t>(value >> 1) ^ -static_cast<std::int64_t>(value & 1));
                    break;
                case 'E':
                    if (value > maxEnum(kind))
                        return fail(at, std::string(eventKindName(kind)) + " record has an out-of-range field " + std::to_string(value));
                    event.small = static_cast<std::uint8_t>(value);
                    break;
                default:
                    event.arg[slot++] = value;
                    break;
                }
            }
            if (kind == EventKind::LostEvents) trace.lost_events += event.arg[0];
            if (kind == EventKind::ThreadStart) {
                if (trace.threads.size() <= header.thread) trace.threads.resize(header.thread + 1);
                trace.threads[header.thread].worker = static_cast<std::int64_t>(event.arg[0]);
                trace.threads[header.thread].name_id = event.arg[1]; // resolved after all strings
            }
            events.push_back(event);
        }
        if (records != header.records)
            return fail(header_offset + 12, "chunk claims " + std::to_string(header.records) + " records but holds " +
                                                std::to_string(records) + ": corrupt file");
        return true;
    }
};

template <class T>
T load(const std::uint8_t* p) {
    T value;
    std::memcpy(&value, p, sizeof value);
    return value;
}

} // namespace

bool parseTrace(std::span<const std::uint8_t> bytes, Trace& out, ReadError& error, ReadOptions options) {
    out = Trace{};
    out.file_bytes = bytes.size();
    const std::uint8_t* base = bytes.data();
    const std::size_t size = bytes.size();
    auto fail = [&](std::uint64_t offset, std::string message) {
        error.offset = offset;
        error.message = std::move(message);
        return false;
    };
    if (size < 16) return fail(0, "file is too short to be a Fiberscope trace (" + std::to_string(size) + " bytes)");
    if (std::memcmp(base, format::kMagic, sizeof format::kMagic) != 0)
        return fail(0, "not a Fiberscope trace (bad magic; expected \"FSTRACE\")");
    const auto version = load<std::uint32_t>(base + 8);
    if (version != format::kVersion)
        return fail(8, "unsupported trace format version " + std::to_string(version) + " (this reader reads version 1)");
    const auto header_size = load<std::uint32_t>(base + 12);
    if (header_size < sizeof(format::HeaderFixed) || header_size > size - 16)
        return fail(12, "header size " + std::to_string(header_size) + " does not fit the file: truncated or corrupt");
    const auto fixed = load<format::HeaderFixed>(base + format::kHeaderFixedOffset);
    if (fixed.ticks_per_second == 0) return fail(16, "clock rate is zero: corrupt header");
    TraceHeader& h = out.header;
    h.version = version;
    h.ticks_per_second = fixed.ticks_per_second;
    h.start_realtime_ns = fixed.start_realtime_ns;
    h.cpu_count = fixed.cpu_count;
    h.pid = fixed.pid;
    h.tsc_clock = fixed.flags & format::kFlagTscClock;
    h.complete = fixed.flags & format::kFlagComplete;
    // Header strings: backend, command line.
    std::size_t at = format::kHeaderFixedOffset + sizeof(format::HeaderFixed);
    const std::size_t header_end = 16 + header_size;
    std::string strings[2];
    for (auto& s : strings) {
        if (header_end - at < 4) return fail(at, "header string runs past the header: corrupt header");
        const auto length = load<std::uint32_t>(base + at);
        at += 4;
        if (length > header_end - at) return fail(at - 4, "header string of " + std::to_string(length) + " bytes runs past the header");
        s.assign(reinterpret_cast<const char*>(base + at), length);
        at += length;
    }
    h.backend = strings[0];
    for (std::size_t start = 0; start <= strings[1].size() && !strings[1].empty();) {
        std::size_t end = strings[1].find('\0', start);
        if (end == std::string::npos) end = strings[1].size();
        h.command_line.push_back(strings[1].substr(start, end - start));
        start = end + 1;
    }

    Decoder decoder{out, error, base, 1e9 / static_cast<double>(fixed.ticks_per_second), fixed.start_ticks, {}};
    out.strings.resize(1);
    std::size_t offset = header_end;
    while (offset < size) {
        if (size - offset < sizeof(format::ChunkHeader)) {
            if (options.strict) return fail(offset, "file ends inside a chunk header (truncated)");
            out.warnings.push_back("truncated at offset " + std::to_string(offset) + ": the last " +
                                   std::to_string(size - offset) + " bytes are an incomplete chunk header; loaded what precedes it");
            break;
        }
        const auto chunk = load<format::ChunkHeader>(base + offset);
        if (chunk.magic != format::kChunkMagic) return fail(offset, "bad chunk magic: corrupt file");
        if (chunk.size > format::kMaxChunkSize)
            return fail(offset + 4, "chunk size " + std::to_string(chunk.size) + " is larger than any writer makes: corrupt file");
        if (chunk.size > size - offset - sizeof chunk) {
            if (options.strict) return fail(offset, "file ends inside a chunk (truncated)");
            out.warnings.push_back("truncated at offset " + std::to_string(offset) + ": the last chunk is incomplete (" +
                                   std::to_string(size - offset - sizeof chunk) + " of " + std::to_string(chunk.size) +
                                   " bytes); loaded what precedes it");
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

    // Threads: make sure every thread that recorded has an entry, resolve names.
    if (out.threads.size() < decoder.per_thread.size()) out.threads.resize(decoder.per_thread.size());
    for (std::size_t i = 0; i < out.threads.size(); ++i) {
        ThreadInfo& t = out.threads[i];
        t.number = static_cast<std::uint32_t>(i);
        t.name = out.string(t.name_id);
        if (t.name.empty()) t.name = t.worker >= 0 ? "worker " + std::to_string(t.worker) : "thread " + std::to_string(i);
    }

    // Each thread's events are in time order already: k-way merge them.
    std::size_t total = 0;
    for (auto& v : decoder.per_thread) total += v.size();
    out.events.reserve(total);
    using Head = std::pair<std::int64_t, std::size_t>; // (time, thread)
    std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
    std::vector<std::size_t> next(decoder.per_thread.size(), 0);
    for (std::size_t t = 0; t < decoder.per_thread.size(); ++t)
        if (!decoder.per_thread[t].empty()) heads.push({decoder.per_thread[t][0].time, t});
    while (!heads.empty()) {
        const std::size_t t = heads.top().second;
        heads.pop();
        const auto& v = decoder.per_thread[t];
        // Take this thread's run until another thread's head is earlier.
        const std::int64_t limit = heads.empty() ? INT64_MAX : heads.top().first;
        std::size_t i = next[t];
        do out.events.push_back(v[i++]);
        while (i < v.size() && v[i].time <= limit);
        next[t] = i;
        if (i < v.size()) heads.push({v[i].time, t});
    }
    h.duration_ns = h.complete ? decoder.toNs(fixed.end_ticks) : (out.events.empty() ? 0 : out.events.back().time);
    return true;
}

bool readTrace(const std::string& path, Trace& out, ReadError& error, ReadOptions options) {
    error = ReadError{};
    error.path = path;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        error.message = std::string("cannot open: ") + std::strerror(errno);
        return false;
    }
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
