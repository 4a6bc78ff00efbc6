// Builds .fstrace bytes record by record, for tests and the fuzzer's seed
// corpus: hostile files (huge ids, times at the limits, odd thread numbers)
// that no Recorder would write, with valid checksums so that they reach the
// code past the reader's integrity checks.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "../../tracer/include/fiberscope/trace_events.hpp"

#include "../../tracer/src/format.hpp"

namespace fiberscope::testing {

class TraceBuilder {
public:
    std::uint32_t version = trace::format::kVersion;
    std::uint64_t ticks_per_second = 1000000000; // 1 tick = 1 ns
    std::uint64_t start_ticks = 0;
    std::uint64_t end_ticks = 0;
    bool complete = false;
    std::string backend = "io_uring";
    std::string command_line = "builder";

    // Starts a chunk of `thread`'s records; records go to the newest chunk.
    TraceBuilder& chunk(std::uint32_t thread, std::uint64_t base_ticks = 0, std::uint64_t base_fiber = 0) {
        chunks_.push_back(Chunk{thread, base_ticks, base_fiber, {}, 0});
        return *this;
    }
    // One record: its kind, the tick delta, then each field's raw varint
    // value (use zigzag() for fiber deltas and signed fields).
    TraceBuilder& record(trace::EventKind kind, std::uint64_t delta, std::initializer_list<std::uint64_t> fields = {}) {
        if (chunks_.empty()) chunk(0);
        Chunk& c = chunks_.back();
        c.payload.push_back(static_cast<char>(kind));
        varint(c.payload, delta);
        for (std::uint64_t f : fields) varint(c.payload, f);
        ++c.records;
        return *this;
    }
    TraceBuilder& string(std::uint64_t id, const std::string& text, std::uint64_t delta = 0) {
        if (chunks_.empty()) chunk(0);
        Chunk& c = chunks_.back();
        c.payload.push_back(static_cast<char>(trace::EventKind::StringDef));
        varint(c.payload, delta);
        varint(c.payload, id);
        varint(c.payload, text.size());
        c.payload += text;
        ++c.records;
        return *this;
    }

    static std::uint64_t zigzag(std::int64_t v) {
        return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
    }

    std::vector<std::uint8_t> bytes() const {
        namespace f = trace::format;
        std::string rest;
        appendString(rest, backend);
        appendString(rest, command_line);
        f::HeaderFixed h{};
        h.ticks_per_second = ticks_per_second;
        h.start_ticks = start_ticks;
        h.end_ticks = end_ticks;
        h.flags = complete ? static_cast<std::uint32_t>(f::kFlagComplete) : 0u;
        const std::uint32_t header_size = static_cast<std::uint32_t>(sizeof h + rest.size());
        std::string out(f::kMagic, sizeof f::kMagic);
        out.append(reinterpret_cast<const char*>(&version), 4);
        out.append(reinterpret_cast<const char*>(&header_size), 4);
        out.append(reinterpret_cast<const char*>(&h), sizeof h);
        out += rest;
        if (version >= 2) {
            const std::uint32_t crc = f::headerCrc(out.data(), out.size());
            out.replace(f::kHeaderCrcOffset, 4, reinterpret_cast<const char*>(&crc), 4);
        }
        for (const Chunk& c : chunks_) {
            f::ChunkHeader ch{};
            ch.magic = f::kChunkMagic;
            ch.size = static_cast<std::uint32_t>(c.payload.size());
            ch.thread = c.thread;
            ch.records = c.records;
            ch.base_ticks = c.base_ticks;
            ch.base_fiber = c.base_fiber;
            ch.checksum = f::crc32(c.payload.data(), c.payload.size());
            if (version >= 7) ch.header_crc = f::chunkHeaderCrc(ch);
            out.append(reinterpret_cast<const char*>(&ch), sizeof ch);
            out += c.payload;
        }
        return {out.begin(), out.end()};
    }

private:
    struct Chunk {
        std::uint32_t thread;
        std::uint64_t base_ticks;
        std::uint64_t base_fiber;
        std::string payload;
        std::uint32_t records;
    };
    std::vector<Chunk> chunks_;

    static void varint(std::string& out, std::uint64_t v) {
        do {
            std::uint8_t byte = v & 0x7F;
            v >>= 7;
            if (v) byte |= 0x80;
            out.push_back(static_cast<char>(byte));
        } while (v);
    }
    static void appendString(std::string& out, const std::string& text) {
        const std::uint32_t size = static_cast<std::uint32_t>(text.size());
        out.append(reinterpret_cast<const char*>(&size), 4);
        out += text;
    }
};

} // namespace fiberscope::testing
