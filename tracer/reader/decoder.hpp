// The trace reader's decoding steps, shared by the one-shot reader
// (reader.cpp: a whole file) and the follower (follower.cpp: a file still
// being written, read a window at a time): the header check, the chunk
// decoder and the merge by time. Every check that rejects bad input lives
// here once, so both readers reject the same files with the same message.
#pragma once

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <queue>
#include <string>
#include <unordered_map>
#include <vector>

#include "../src/format.hpp"
#include "fiberscope/trace_merge.hpp"
#include "fiberscope/trace_reader.hpp"
#include "fiberscope/trace_records.hpp"

namespace fiberscope::trace::detail {

inline constexpr std::uint64_t kMaxStringId = 1u << 26;
inline constexpr std::uint32_t kMaxThreads = 1u << 16;
// Worker indices (and cancel-request's 1 + worker): the runtime's workers, and
// the epoll backend's blocking pool from 2000 up.
inline constexpr std::uint64_t kMaxWorker = kMaxWorkerField;
// Times are kept within +-2^53 ns (104 days) of the recording's start: every
// difference of two times then fits an int64 with room to spare, and every
// time converts to a double and back exactly, so no consumer's arithmetic can
// overflow. A record outside that span is rejected as corrupt (FORMAT.md).
inline constexpr std::int64_t kMaxTimeNs = std::int64_t{1} << 53;

struct Cursor {
    const std::uint8_t* base; // file start, for offsets
    const std::uint8_t* p;
    const std::uint8_t* end;
    std::uint64_t origin = 0; // the file offset of `base`

    std::uint64_t offset() const { return origin + static_cast<std::uint64_t>(p - base); }
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
    // The largest tick distance from start_ticks whose time is within
    // kMaxTimeNs (computed once; compared before converting, so the double
    // to int64 conversion below is always in range).
    double max_ticks;
    std::vector<std::vector<Event>> per_thread; // indexed by dense thread index
    // Thread numbers as the file names them -> dense index. Files number
    // threads 0, 1, ... so this is the identity, but a hostile file may name
    // thread 65535 alone: nothing is allocated for numbers it does not use.
    std::unordered_map<std::uint32_t, std::uint32_t> thread_index;
    std::vector<std::uint32_t> thread_number; // dense index -> file's number
    // String definitions as read: (id, text). Tables indexed by id are built
    // at the end only when the ids are dense (see finishStrings).
    std::unordered_map<std::uint64_t, std::string> strings;
    std::uint64_t origin = 0; // the file offset of `base` (a follower decodes a window of the file)

    bool fail(std::uint64_t offset, std::string message) {
        error.offset = offset;
        error.message = std::move(message);
        return false;
    }

    // Ticks to ns since the start; false if outside +-kMaxTimeNs.
    bool toNs(std::uint64_t ticks, std::int64_t& ns) const {
        // The distance in ticks, exactly, whatever the two values are.
        const __int128 delta = static_cast<__int128>(ticks) - static_cast<__int128>(start_ticks);
        const double d = static_cast<double>(delta);
        if (d > max_ticks || d < -max_ticks) return false;
        ns = static_cast<std::int64_t>(d * ns_per_tick);
        return ns <= kMaxTimeNs && ns >= -kMaxTimeNs;
    }

    std::uint32_t threadIndex(std::uint32_t number) {
        auto [it, added] = thread_index.try_emplace(number, static_cast<std::uint32_t>(per_thread.size()));
        if (added) {
            per_thread.emplace_back();
            thread_number.push_back(number);
        }
        return it->second;
    }

    bool chunk(const format::ChunkHeader& header, std::uint64_t header_offset, const std::uint8_t* payload) {
        if (header.thread >= kMaxThreads)
            return fail(header_offset + 8, "chunk names thread " + std::to_string(header.thread) + ", more than a trace can have: corrupt file");
        if (header.records > header.size / 2) // every record takes at least 2 bytes
            return fail(header_offset + 12, "chunk claims " + std::to_string(header.records) + " records in " +
                                                std::to_string(header.size) + " bytes: corrupt file");
        const std::uint32_t thread = threadIndex(header.thread);
        std::vector<Event>& events = per_thread[thread];
        // Room for the chunk, growing geometrically: reserving just enough
        // for each chunk would copy the thread's records once per chunk
        // (quadratic in the number of chunks).
        if (const std::size_t need = events.size() + header.records; need > events.capacity())
            events.reserve(std::max(need, 2 * events.capacity()));
        Cursor c{base, payload, payload + header.size, origin};
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
            if (__builtin_add_overflow(ticks, delta, &ticks))
                return fail(at, "record time overflows the 64-bit clock: corrupt file");
            ++records;
            if (kind == EventKind::StringDef) {
                std::uint64_t id, length;
                if (!c.varint(id) || !c.varint(length)) return fail(at, "string record runs past the end of its chunk");
                if (id == 0 || id > kMaxStringId) return fail(at, "string id " + std::to_string(id) + " out of range");
                if (length > format::kMaxStringBytes || length > static_cast<std::uint64_t>(c.end - c.p))
                    return fail(at, "string of " + std::to_string(length) + " bytes does not fit its chunk");
                strings[id].assign(reinterpret_cast<const char*>(c.p), length);
                c.p += length;
                continue;
            }
            Event event;
            if (!toNs(ticks, event.time))
                return fail(at, std::string(eventKindName(kind)) + " record lies more than 104 days (2^53 ns) from the "
                                "recording's start: corrupt file or clock");
            event.thread = thread;
            event.kind = kind;
            // The fields as the record table lists them (trace_records.hpp).
            const RecordKindInfo& info = kRecordKinds[kind_byte];
            int slot = 0;
            for (int k = 0; k < info.field_count; ++k) {
                const FieldInfo& f = info.fields[k];
                std::uint64_t value;
                if (!c.varint(value)) return fail(at, std::string(info.name) + " record runs past the end of its chunk");
                switch (f.type) {
                case FieldType::Fiber:
                    fiber += static_cast<std::uint64_t>(static_cast<std::int64_t>(value >> 1) ^ -static_cast<std::int64_t>(value & 1));
                    event.arg[slot++] = fiber;
                    break;
                case FieldType::Signed:
                    event.arg[slot++] = static_cast<std::uint64_t>(static_cast<std::int64_t>(value >> 1) ^ -static_cast<std::int64_t>(value & 1));
                    break;
                case FieldType::Enum:
                case FieldType::Opcode:
                    if (value > f.max)
                        return fail(at, std::string(info.name) + " record has an out-of-range " + f.name + " " + std::to_string(value));
                    event.small = static_cast<std::uint8_t>(value);
                    break;
                case FieldType::Worker:
                case FieldType::WorkerPlusOne:
                    if (value > kMaxWorker)
                        return fail(at, std::string(info.name) + " record names worker " + std::to_string(value) +
                                            ", more than a trace can have: corrupt file");
                    event.arg[slot++] = value;
                    break;
                default: // strings, objects, counts
                    event.arg[slot++] = value;
                    break;
                }
            }
            if (kind == EventKind::LostEvents) trace.lost_events += event.arg[0];
            if (kind == EventKind::ThreadStart) {
                if (trace.threads.size() <= thread) trace.threads.resize(thread + 1);
                trace.threads[thread].worker = static_cast<std::int64_t>(event.arg[0]);
                trace.threads[thread].name_id = event.arg[1]; // resolved after all strings
            }
            events.push_back(event);
        }
        if (records != header.records)
            return fail(header_offset + 12, "chunk claims " + std::to_string(header.records) + " records but holds " +
                                                std::to_string(records) + ": corrupt file");
        return true;
    }

    // Orders the threads by the file's thread numbers (chunks of different
    // threads reach the file in any order), so Trace::threads reads 0, 1, ...
    // `merged`: events already handed out (a follower's), renumbered too.
    void sortThreads(EventList* merged = nullptr) {
        const std::size_t n = per_thread.size();
        trace.threads.resize(std::max(trace.threads.size(), n));
        std::vector<std::uint32_t> order(n);
        for (std::uint32_t i = 0; i < n; ++i) order[i] = i;
        std::sort(order.begin(), order.end(), [&](auto a, auto b) { return thread_number[a] < thread_number[b]; });
        bool identity = true;
        for (std::uint32_t i = 0; i < n; ++i) identity = identity && order[i] == i;
        if (identity) return;
        std::vector<std::uint32_t> new_index(n);
        for (std::uint32_t i = 0; i < n; ++i) new_index[order[i]] = i;
        std::vector<std::vector<Event>> events(n);
        std::vector<ThreadInfo> threads(n);
        std::vector<std::uint32_t> numbers(n);
        for (std::uint32_t old = 0; old < n; ++old) {
            const std::uint32_t i = new_index[old];
            events[i] = std::move(per_thread[old]);
            for (Event& e : events[i]) e.thread = i;
            threads[i] = std::move(trace.threads[old]);
            numbers[i] = thread_number[old];
        }
        per_thread = std::move(events);
        trace.threads = std::move(threads);
        thread_number = std::move(numbers);
        for (auto& entry : thread_index) entry.second = new_index[entry.second];
        if (merged)
            for (std::size_t i = 0; i < merged->size(); ++i) {
                Event e = (*merged)[i];
                e.thread = new_index[e.thread];
                merged->set(i, e);
            }
    }

    // Builds Trace::strings. When the ids are dense (as every writer makes
    // them: 1, 2, ...) the table is indexed by the file's ids. A file whose
    // ids are sparse (a lost chunk, or a hostile id of 2^26) is renumbered
    // instead: ids in order, and every string field rewritten, so the table
    // costs what the file holds, not what its largest id claims.
    void finishStrings() {
        trace.strings.assign(1, std::string());
        std::uint64_t max_id = 0;
        for (const auto& [id, text] : strings) max_id = std::max(max_id, id);
        if (max_id <= 2 * strings.size() + 1024) {
            trace.strings.resize(max_id + 1);
            for (auto& [id, text] : strings) trace.strings[id] = std::move(text);
            return;
        }
        std::vector<std::uint64_t> ids;
        ids.reserve(strings.size());
        for (const auto& entry : strings) ids.push_back(entry.first);
        std::sort(ids.begin(), ids.end());
        std::unordered_map<std::uint64_t, std::uint64_t> dense;
        for (std::uint64_t id : ids) {
            dense.emplace(id, trace.strings.size());
            trace.strings.push_back(std::move(strings[id]));
        }
        // An id with no definition becomes 0 ("none"), as it reads anyway.
        auto renumber = [&](std::uint64_t id) {
            auto it = dense.find(id);
            return it == dense.end() ? std::uint64_t{0} : it->second;
        };
        for (auto& events : per_thread)
            for (Event& event : events) {
                const RecordKindInfo& info = recordKind(event.kind);
                for (int k = 0; k < info.field_count; ++k)
                    if (info.fields[k].type == FieldType::String) {
                        const int slot = eventSlot(info, k);
                        event.arg[slot] = renumber(event.arg[slot]);
                    }
            }
        for (ThreadInfo& t : trace.threads) t.name_id = renumber(t.name_id);
    }
};

// True if every byte from `p` to `end` is zero: a file preallocated, or a
// crash that extended it without writing (see FORMAT.md, "Truncation").
inline bool allZero(const std::uint8_t* p, const std::uint8_t* end) {
    for (; p < end; ++p)
        if (*p) return false;
    return true;
}

template <class T>
inline T load(const std::uint8_t* p) {
    T value;
    std::memcpy(&value, p, sizeof value);
    return value;
}


// What lies at a chunk's offset, with `avail` bytes of the file from there.
enum class ChunkCheck {
    Whole,      // a complete chunk whose header is sane (its payload is not yet checked)
    Incomplete, // the file ends inside it: truncated, or still being written
    ZeroTail,   // zeros from here to the end: preallocated or crash-cut
    Corrupt,    // `error` says what
};
// Checks the chunk header at `p` (file offset `offset`). For Incomplete and
// ZeroTail, `tail` receives the warning a reader of a finished file gives.
inline ChunkCheck checkChunk(const std::uint8_t* p, std::size_t avail, std::uint64_t offset, format::ChunkHeader& chunk,
                             std::string& tail, ReadError& error, std::uint32_t version, std::uint64_t number) {
    if (avail < sizeof(format::ChunkHeader)) {
        tail = "truncated at offset " + std::to_string(offset) + ": the last " + std::to_string(avail) +
               " bytes are an incomplete chunk header; loaded what precedes it";
        return ChunkCheck::Incomplete;
    }
    chunk = load<format::ChunkHeader>(p);
    if (chunk.magic != format::kChunkMagic) {
        if (allZero(p, p + avail)) {
            tail = "truncated at offset " + std::to_string(offset) + ": the last " + std::to_string(avail) +
                   " bytes are zeros (a preallocated or crash-cut file); loaded what precedes them";
            return ChunkCheck::ZeroTail;
        }
        error.offset = offset;
        error.message = "bad chunk magic: corrupt file";
        return ChunkCheck::Corrupt;
    }
    // Version 7 covers the header's own fields (size, thread, record count,
    // base time and fiber) with a CRC, checked before any of them is used:
    // one flipped bit in base_ticks would otherwise move every record of the
    // chunk by years and be read as truth.
    if (version >= 7 && format::chunkHeaderCrc(chunk) != chunk.header_crc) {
        error.offset = offset + 36;
        error.message = "chunk " + std::to_string(number) + " (its header at offset " + std::to_string(offset) +
                        "): header checksum mismatch: corrupt file";
        return ChunkCheck::Corrupt;
    }
    if (chunk.size > format::kMaxChunkSize) {
        error.offset = offset + 4;
        error.message = "chunk size " + std::to_string(chunk.size) + " is larger than any writer makes: corrupt file";
        return ChunkCheck::Corrupt;
    }
    if (chunk.size > avail - sizeof chunk) {
        tail = "truncated at offset " + std::to_string(offset) + ": the last chunk is incomplete (" +
               std::to_string(avail - sizeof chunk) + " of " + std::to_string(chunk.size) + " bytes); loaded what precedes it";
        return ChunkCheck::Incomplete;
    }
    return ChunkCheck::Whole;
}

// Opens `path` to read it as a trace: the fd, or -1 with `error` naming the
// file and why ("cannot open: No such file or directory").
inline int openTrace(const std::string& path, ReadError& error) {
    error = ReadError{};
    error.path = path;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) error.message = std::string("cannot open: ") + std::strerror(errno);
    return fd;
}

// Parses and checks the header at `base` (the file's first `size` bytes):
// magic, version, checksum, clock, flags and the header strings, into
// out.header (and out.warnings). `header_end` receives the offset of the
// first chunk.
inline bool parseHeader(const std::uint8_t* base, std::size_t size, Trace& out, format::HeaderFixed& fixed_out,
                        std::size_t& header_end_out, ReadError& error) {
    auto fail = [&](std::uint64_t offset, std::string message) {
        error.offset = offset;
        error.message = std::move(message);
        return false;
    };
    if (size < 16) return fail(0, "file is too short to be a Fiberscope trace (" + std::to_string(size) + " bytes)");
    if (std::memcmp(base, format::kMagic, sizeof format::kMagic) != 0)
        return fail(0, "not a Fiberscope trace (bad magic; expected \"FSTRACE\")");
    const auto version = load<std::uint32_t>(base + 8);
    if (version < format::kOldestVersion || version > format::kVersion)
        return fail(8, "unsupported trace format version " + std::to_string(version) + " (this reader reads versions " +
                           std::to_string(format::kOldestVersion) + " to " + std::to_string(format::kVersion) +
                           (version > format::kVersion ? "; a newer Fiberscope wrote it)" : ")"));
    const auto header_size = load<std::uint32_t>(base + 12);
    if (header_size < sizeof(format::HeaderFixed) || header_size > size - 16)
        return fail(12, "header size " + std::to_string(header_size) + " does not fit the file: truncated or corrupt");
    const auto fixed = load<format::HeaderFixed>(base + format::kHeaderFixedOffset);
    if (version >= 2) {
        if (format::headerCrc(base, 16 + std::size_t{header_size}) != fixed.header_crc)
            return fail(format::kHeaderCrcOffset, "header checksum mismatch: corrupt header");
    } else {
        out.warnings.push_back("format version 1: the header has no checksum, so its clock and flags are unchecked");
    }
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

    fixed_out = fixed;
    header_end_out = header_end;
    return true;
}

} // namespace fiberscope::trace::detail
