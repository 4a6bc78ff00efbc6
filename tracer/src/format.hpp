// Byte layout of .fstrace files (see FORMAT.md; shared by writer and reader).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace fiberscope::trace::format {

inline constexpr char kMagic[8] = {'F', 'S', 'T', 'R', 'A', 'C', 'E', '\0'};
// Version 2 added the header checksum (HeaderFixed::header_crc); version 1
// files are still read, with a warning that their header is unchecked.
// Version 3 added the cpu-sample record kind (FORMAT.md, "CPU samples"): a
// version-2 reader would reject the file at its first such record, so the
// version tells it why at the header instead.
// Version 4 added the source-location record kind (a mark's or zone's file
// and line), for the same reason; version 5 the steal-half kind (the
// scaling scheduler policy's steal); version 6 the search kind (its idle
// threads' search before parking); version 7 the steal-one,
// wakeup-bounced, mutex-taken, overflow and truth kinds (one meaning per
// record kind, every state change recorded) and the chunk header's own CRC;
// version 8 the semaphore, rwlock and event kinds (a primitive built on a
// Mutex and Conditions appears as itself); version 9 the object-name kind
// (setObjectName).
inline constexpr std::uint32_t kVersion = 9;
inline constexpr std::uint32_t kOldestVersion = 1;
inline constexpr std::uint32_t kChunkMagic = 0x4B435346; // "FSCK" little-endian

enum HeaderFlags : std::uint32_t {
    kFlagTscClock = 1u << 0, // ticks are TSC / counter ticks, else nanoseconds
    kFlagComplete = 1u << 1, // the recorder stopped cleanly (end fields valid)
};

// Fixed part of the header, right after magic (8 bytes), version (4) and
// header_size (4). All integers little-endian.
struct HeaderFixed {
    std::uint64_t ticks_per_second; // calibrated clock rate
    std::uint64_t start_ticks;
    std::uint64_t start_monotonic_ns;
    std::uint64_t start_realtime_ns;
    std::uint64_t end_ticks;
    std::uint64_t end_monotonic_ns;
    std::uint32_t cpu_count;
    std::uint32_t pid;
    std::uint32_t flags;
    std::uint32_t header_crc; // version 2: see headerCrc(); version 1: reserved, 0
};
static_assert(sizeof(HeaderFixed) == 64);
inline constexpr std::size_t kHeaderFixedOffset = 16;
inline constexpr std::size_t kHeaderCrcOffset = kHeaderFixedOffset + offsetof(HeaderFixed, header_crc);

struct ChunkHeader {
    std::uint32_t magic;
    std::uint32_t size;    // payload bytes after this header
    std::uint32_t thread;  // trace thread number
    std::uint32_t records;
    std::uint64_t base_ticks;
    std::uint64_t base_fiber;
    std::uint32_t checksum; // crc32 of the payload
    std::uint32_t header_crc; // version 7: chunkHeaderCrc(); before: reserved, 0
};
static_assert(sizeof(ChunkHeader) == 40);

inline constexpr std::uint32_t kMaxChunkSize = 64u << 20;
inline constexpr std::uint32_t kMaxStringBytes = 4096;

std::uint32_t crc32(const void* data, std::size_t size) noexcept;
// CRC-32 of the whole header (magic through the last header string), its own
// four bytes read as zero. `header` points at the file's first byte.
std::uint32_t headerCrc(const void* header, std::size_t size) noexcept;
// CRC-32 of a chunk header's first 36 bytes (magic through the payload's
// CRC): what version 7 stores in its last four.
inline std::uint32_t chunkHeaderCrc(const ChunkHeader& chunk) noexcept {
    return crc32(&chunk, offsetof(ChunkHeader, header_crc));
}

} // namespace fiberscope::trace::format
