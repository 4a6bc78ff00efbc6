// TraceFollower: reads a trace file a window at a time while it grows.
//
// Why this shape: the writer appends whole chunks and rewrites only the
// header, once, when the recording stops (writer.cpp). So a follower keeps
// the offset of the first byte it has not decoded and, each poll, preads what
// was appended after it, decodes the chunks that are complete and keeps the
// incomplete tail for the next poll: each byte is read and checked once,
// however long the program runs. It never maps the file (a growing mapping
// would have to be remapped, and a truncated one faults); it preads at most
// kPollBudget bytes per poll so that a large backlog (the follower started
// late, or the file is already big) is taken in steps that keep a viewer's
// frames short.
//
// Completion: the header is read again at each poll until it says the
// recording stopped, and it is read *before* the file's size: every chunk is
// written before the header is rewritten, so when the flag is seen the size
// that follows covers every chunk. A header read while it is being rewritten
// fails its checksum; that poll just does not learn the end yet.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <optional>

#include "decoder.hpp"
#include "fiberscope/trace_follower.hpp"

namespace fiberscope::trace {

using namespace detail;

namespace {

// Bytes decoded per poll at most (a whole chunk always fits: chunks are at
// most 64 MiB).
constexpr std::size_t kPollBudget = std::size_t{format::kMaxChunkSize} + sizeof(format::ChunkHeader);
// A header is the fixed part plus the backend's name and the command line.
constexpr std::uint32_t kMaxHeaderBytes = 16u << 20;

bool preadAll(int fd, void* out, std::size_t size, std::uint64_t offset) {
    auto* p = static_cast<std::uint8_t*>(out);
    while (size) {
        const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        p += n;
        size -= static_cast<std::size_t>(n);
        offset += static_cast<std::uint64_t>(n);
    }
    return true;
}

// (time, thread): the order of Trace::events.
bool earlier(const Event& a, const Event& b) noexcept { return a.time != b.time ? a.time < b.time : a.thread < b.thread; }

} // namespace

struct TraceFollower::State {
    std::string path;
    int fd = -1;
    bool started = false;  // the header has been read
    bool complete = false; // the header says the recording stopped
    bool finished = false;
    std::uint32_t header_size = 0;
    format::HeaderFixed fixed{};
    std::size_t header_end = 0;
    ReadError decode_error; // the decoder reports here
    std::optional<Decoder> decoder;
    Trace* trace = nullptr;
    std::uint64_t offset = 0;          // file offset of buffer[0]
    std::vector<std::uint8_t> buffer;  // bytes read but not yet decoded (an incomplete chunk)
    std::size_t strings_seen = 0;
    bool warned_string = false;

    ~State() {
        if (fd >= 0) ::close(fd);
    }

    bool fail(ReadError& error, std::uint64_t at, std::string message) {
        error.offset = at;
        error.message = std::move(message);
        return false;
    }

    // Reads the header again; on the first success, resets `out` and sets up
    // the decoder. Returns false on a hard error; `ready` says whether the
    // header was there to read.
    bool readHeader(Trace& out, std::uint64_t size, ReadError& error, bool& ready) {
        ready = false;
        std::uint8_t prefix[16];
        if (size < sizeof prefix) return true;
        if (!preadAll(fd, prefix, sizeof prefix, 0)) return fail(error, 0, std::string("cannot read: ") + std::strerror(errno));
        const auto claimed = load<std::uint32_t>(prefix + 12);
        if (std::memcmp(prefix, format::kMagic, sizeof format::kMagic) != 0)
            return fail(error, 0, "not a Fiberscope trace (bad magic; expected \"FSTRACE\")");
        if (claimed > kMaxHeaderBytes) return fail(error, 12, "header size " + std::to_string(claimed) + " is larger than any writer makes: corrupt header");
        if (started && claimed != header_size) return fail(error, 12, "the header changed size: the file was replaced; open it again");
        if (size < 16 + std::uint64_t{claimed}) return true; // the writer is still writing it
        std::vector<std::uint8_t> bytes(16 + std::size_t{claimed});
        if (!preadAll(fd, bytes.data(), bytes.size(), 0)) return fail(error, 0, std::string("cannot read: ") + std::strerror(errno));
        Trace fresh;
        format::HeaderFixed now{};
        std::size_t end = 0;
        ReadError header_error;
        header_error.path = path;
        if (!parseHeader(bytes.data(), bytes.size(), fresh, now, end, header_error)) {
            // A rewrite caught half-done fails its checksum: try again next poll.
            if (started && header_error.offset == format::kHeaderCrcOffset) return true;
            error = header_error;
            return false;
        }
        if (!started) {
            out = std::move(fresh);
            out.serial = nextTraceSerial();
            out.strings.assign(1, std::string());
            started = true;
            header_size = claimed;
            fixed = now;
            header_end = end;
            offset = end;
            trace = &out;
            decode_error.path = path;
            const double ns_per_tick = 1e9 / static_cast<double>(fixed.ticks_per_second);
            decoder.emplace(Decoder{out, decode_error, nullptr, ns_per_tick, fixed.start_ticks,
                                    static_cast<double>(kMaxTimeNs) / ns_per_tick, {}, {}, {}, {}});
        } else if (now.flags & format::kFlagComplete) {
            if (now.start_ticks != fixed.start_ticks || now.ticks_per_second != fixed.ticks_per_second)
                return fail(error, 16, "the header's clock changed: the file was replaced; open it again");
            fixed = now;
            out.header.complete = true;
        }
        complete = fixed.flags & format::kFlagComplete;
        out.header.complete = complete;
        ready = true;
        return true;
    }

    // Moves the decoder's new string definitions into the trace's table.
    void takeStrings(Trace& out) {
        Decoder& d = *decoder;
        if (d.strings.empty()) return;
        if (out.strings.empty()) out.strings.assign(1, std::string());
        for (auto& [id, text] : d.strings) {
            if (id > kFollowMaxStringId) {
                if (!warned_string)
                    out.warnings.push_back("string id " + std::to_string(id) + " is larger than a followed trace can index (" +
                                           std::to_string(kFollowMaxStringId) + "): its text reads as empty");
                warned_string = true;
                continue;
            }
            if (out.strings.size() <= id) out.strings.resize(id + 1);
            out.strings[id] = std::move(text);
        }
        d.strings.clear();
    }

    // String fields naming ids a followed trace does not index read as 0.
    static void clampStrings(std::vector<Event>& events) {
        for (Event& e : events) {
            const RecordKindInfo& info = recordKind(e.kind);
            for (int k = 0; k < info.field_count; ++k)
                if (info.fields[k].type == FieldType::String) {
                    const int slot = eventSlot(info, k);
                    if (e.arg[slot] > kFollowMaxStringId) e.arg[slot] = 0;
                }
        }
    }

    // Merges the decoder's new events into `out.events`, keeping (time, thread) order.
    void takeEvents(Trace& out, PollResult& result) {
        Decoder& d = *decoder;
        const std::size_t known = d.thread_number.size();
        bool renumbered = false;
        if (known) {
            std::vector<std::uint32_t> before = d.thread_number;
            d.sortThreads(&out.events);
            renumbered = before != d.thread_number;
        }
        for (std::size_t i = 0; i < out.threads.size(); ++i) {
            ThreadInfo& t = out.threads[i];
            t.number = d.thread_number[i];
            t.name = out.string(t.name_id);
            if (t.name.empty()) t.name = t.worker >= 0 ? "worker " + std::to_string(t.worker) : "thread " + std::to_string(t.number);
        }
        if (renumbered) {
            // Ties between threads follow the thread numbers: re-sort what the new numbering disturbed.
            std::vector<Event> all(out.events.begin(), out.events.end());
            std::stable_sort(all.begin(), all.end(), earlier);
            out.events = all;
            result.reordered = true;
        }
        std::vector<Event> batch;
        for (auto& events : d.per_thread) clampStrings(events);
        mergeByTime(d.per_thread, batch);
        for (auto& events : d.per_thread) events.clear();
        if (batch.empty()) return;
        result.appended = batch.size();
        const bool append_only = out.events.empty() || !earlier(batch.front(), out.events.back());
        if (append_only) {
            for (const Event& e : batch) out.events.push_back(e);
            return;
        }
        // Only the events after the new batch's first one can move: merge
        // that tail with the batch and put it back.
        const auto from = static_cast<std::size_t>(std::upper_bound(out.events.begin(), out.events.end(), batch.front(), earlier) - out.events.begin());
        std::vector<Event> tail(out.events.begin() + static_cast<std::ptrdiff_t>(from), out.events.end());
        const auto middle = static_cast<std::ptrdiff_t>(tail.size());
        tail.insert(tail.end(), batch.begin(), batch.end());
        std::inplace_merge(tail.begin(), tail.begin() + middle, tail.end(), earlier);
        out.events.resize(from);
        for (const Event& e : tail) out.events.push_back(e);
        result.reordered = true;
    }

    bool poll(Trace& out, ReadError& error, PollResult& result) {
        error = ReadError{};
        error.path = path;
        if (finished) return true;
        if (started && &out != trace) return fail(error, 0, "TraceFollower::poll was given a different Trace than before");
        if (fd < 0) {
            fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                if (errno == ENOENT) return true; // the program has not created it yet
                return fail(error, 0, std::string("cannot open: ") + std::strerror(errno));
            }
        }
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return fail(error, 0, "not a regular file");
        // The header first, then the size: see the design comment.
        bool ready = false;
        const bool was_complete = complete;
        if (!complete && !readHeader(out, static_cast<std::uint64_t>(st.st_size), error, ready)) return false;
        if (!started) return true;
        if (complete != was_complete) result.grew = true;
        if (::fstat(fd, &st) != 0) return fail(error, 0, std::string("cannot stat: ") + std::strerror(errno));
        const std::uint64_t size = static_cast<std::uint64_t>(st.st_size);
        const std::uint64_t have = offset + buffer.size();
        if (size < have) return fail(error, have, "the file shrank to " + std::to_string(size) + " bytes: it was replaced or truncated; open it again");
        // Read the next window.
        const std::size_t room = kPollBudget > buffer.size() ? kPollBudget - buffer.size() : 0;
        const std::size_t take = static_cast<std::size_t>(std::min<std::uint64_t>(size - have, room));
        if (take) {
            const std::size_t at = buffer.size();
            buffer.resize(at + take);
            if (!preadAll(fd, buffer.data() + at, take, have)) {
                buffer.resize(at);
                return fail(error, have, std::string("cannot read: ") + std::strerror(errno));
            }
        }
        const bool read_all = offset + buffer.size() == size;
        // Decode the complete chunks.
        Decoder& d = *decoder;
        d.base = buffer.data();
        d.origin = offset;
        std::size_t pos = 0;
        std::string tail;
        bool ends_cut = false;
        while (pos < buffer.size()) {
            format::ChunkHeader chunk{};
            const ChunkCheck check = checkChunk(buffer.data() + pos, buffer.size() - pos, offset + pos, chunk, tail, error, out.header.version, out.chunks);
            if (check == ChunkCheck::Corrupt) return false;
            if (check != ChunkCheck::Whole) {
                ends_cut = true;
                break;
            }
            const std::uint8_t* payload = buffer.data() + pos + sizeof chunk;
            if (format::crc32(payload, chunk.size) != chunk.checksum)
                return fail(error, offset + pos + 32, "chunk checksum mismatch: corrupt file");
            if (!d.chunk(chunk, offset + pos, payload)) {
                error = decode_error;
                return false;
            }
            ++out.chunks;
            pos += sizeof chunk + chunk.size;
        }
        buffer.erase(buffer.begin(), buffer.begin() + static_cast<std::ptrdiff_t>(pos));
        offset += pos;
        out.file_bytes = offset;
        if (pos) result.grew = true;
        takeStrings(out);
        takeEvents(out, result);
        // The trace's span.
        out.header.duration_ns = out.events.empty() ? 0 : out.events.back().time;
        if (complete) {
            std::int64_t end = 0;
            if (!d.toNs(fixed.end_ticks, end) || end < 0)
                return fail(error, 48, "the recording's end lies outside the 104 days (2^53 ns) a trace can span: corrupt header");
            out.header.duration_ns = std::max(end, out.header.duration_ns);
            if (read_all) {
                // Nothing more will come: an incomplete tail is what a finished file has.
                if (ends_cut) {
                    out.warnings.push_back(tail);
                    out.file_bytes = size;
                }
                finished = true;
                buffer = {};
            }
        }
        return true;
    }
};

TraceFollower::TraceFollower(std::string path) : state_(std::make_unique<State>()) { state_->path = std::move(path); }
TraceFollower::~TraceFollower() = default;

bool TraceFollower::poll(Trace& trace, ReadError& error, PollResult* result) {
    PollResult ignored;
    return state_->poll(trace, error, result ? *result : ignored);
}

bool TraceFollower::finished() const noexcept { return state_->finished; }
bool TraceFollower::started() const noexcept { return state_->started; }
const std::string& TraceFollower::path() const noexcept { return state_->path; }

bool readTraceHeader(const std::string& path, TraceHeader& header, ReadError& error) {
    const int fd = openTrace(path, error);
    if (fd < 0) return false;
    std::uint8_t prefix[16];
    std::vector<std::uint8_t> bytes;
    bool ok = preadAll(fd, prefix, sizeof prefix, 0);
    if (ok) {
        const auto claimed = load<std::uint32_t>(prefix + 12);
        bytes.resize(16 + std::size_t{std::min(claimed, kMaxHeaderBytes)});
        ok = preadAll(fd, bytes.data(), bytes.size(), 0);
    }
    ::close(fd);
    if (!ok) {
        error.message = "file is too short to hold a trace header";
        return false;
    }
    Trace trace;
    format::HeaderFixed fixed{};
    std::size_t end = 0;
    if (!parseHeader(bytes.data(), bytes.size(), trace, fixed, end, error)) return false;
    header = std::move(trace.header);
    return true;
}

} // namespace fiberscope::trace
