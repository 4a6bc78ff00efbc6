// Per-thread buffers: attach, rotate when full or stale, intern strings.
//
// A thread fills one Slab at a time with no synchronisation at all. The
// recording's mutex is taken only at chunk boundaries (every ~256 KiB of
// records), to hand the full slab to the writer and take an empty one.
#include <algorithm>

#include "recording.hpp"

namespace fiberscope::trace {

std::atomic<bool> g_enabled{false};

namespace detail {

Recording* g_recording = nullptr;
std::mutex g_lifecycle;

Slab* Recording::takeFree() {
    if (!free.empty()) {
        Slab* slab = free.back();
        free.pop_back();
        return slab;
    }
    if (all.size() >= options.max_buffers) return nullptr;
    auto slab = std::make_unique<Slab>();
    slab->bytes.reset(new (std::nothrow) std::uint8_t[options.buffer_bytes]);
    if (!slab->bytes) return nullptr;
    slab->capacity = options.buffer_bytes;
    all.push_back(std::move(slab));
    return all.back().get();
}

namespace {

struct ThreadState {
    Slab* slab = nullptr;
    std::uint32_t generation = 0;
    ~ThreadState() {
        // A thread that exits hands its last records to the writer.
        std::lock_guard lock(g_lifecycle);
        Recording* r = g_recording;
        if (!r || !slab || generation != r->generation) return;
        std::lock_guard guard(r->mutex);
        if (slab->buffer.records) r->full.push_back(slab);
        else r->free.push_back(slab);
        slab = nullptr;
        r->work.notify_one();
    }
};

thread_local ThreadState t_state;

void startChunk(Slab* slab, const Buffer& from) {
    Buffer& b = slab->buffer;
    b.start = b.pos = slab->bytes.get();
    b.end = b.start + slab->capacity;
    b.last_time = b.base_time = from.last_time;
    b.last_fiber = b.base_fiber = from.last_fiber;
    b.records = 0;
    b.thread = from.thread;
    b.lost = from.lost;
    b.generation = from.generation;
    std::copy(std::begin(from.string_keys), std::end(from.string_keys), std::begin(b.string_keys));
    std::copy(std::begin(from.string_ids), std::end(from.string_ids), std::begin(b.string_ids));
}

} // namespace

} // namespace detail

using namespace detail;

__attribute__((noinline)) Buffer* threadBuffer() noexcept {
    Recording* r = g_recording;
    if (!r) return nullptr;
    ThreadState& t = t_state;
    if (t.slab && t.generation == r->generation) return &t.slab->buffer;
    std::lock_guard lock(r->mutex);
    Slab* slab = r->takeFree();
    if (!slab) return nullptr;
    Buffer seed;
    seed.last_time = r->header.start_ticks;
    seed.thread = r->next_thread.fetch_add(1, std::memory_order_relaxed);
    seed.generation = r->generation;
    startChunk(slab, seed);
    t.slab = slab;
    t.generation = r->generation;
    return &slab->buffer;
}

Buffer* rotate(Buffer* full) noexcept {
    Recording* r = g_recording;
    ThreadState& t = t_state;
    if (!r || !t.slab || &t.slab->buffer != full || full->generation != r->generation) return nullptr;
    Slab* next;
    {
        std::lock_guard lock(r->mutex);
        next = r->takeFree();
        if (!next) {
            // The writer is behind and the memory cap is reached: drop this
            // record, count it, and report the count once space returns.
            ++full->lost;
            return nullptr;
        }
        if (full->records) {
            r->full.push_back(t.slab);
            r->work.notify_one();
        } else {
            r->free.push_back(t.slab);
        }
    }
    startChunk(next, *full);
    t.slab = next;
    Buffer* b = &next->buffer;
    if (b->lost) {
        const std::uint64_t lost = b->lost;
        b->lost = 0;
        if (Record record{EventKind::LostEvents, b->last_time}) record.u(lost);
    }
    return b;
}

static std::uint64_t defineString(Buffer* b, std::string_view text) noexcept {
    Recording* r = g_recording;
    if (!r) return 0;
    if (text.size() > format::kMaxStringBytes) text = text.substr(0, format::kMaxStringBytes);
    if (static_cast<std::size_t>(b->end - b->pos) < text.size() + 32) {
        b = rotate(b);
        if (!b || static_cast<std::size_t>(b->end - b->pos) < text.size() + 32) return 0;
    }
    const std::uint64_t id = r->next_string.fetch_add(1, std::memory_order_relaxed);
    Record record{EventKind::StringDef, b->last_time};
    if (!record) return 0;
    record.u(id);
    record.u(text.size());
    record.bytes(text.data(), text.size());
    return id;
}

std::uint64_t internStable(Buffer* b, const char* text) noexcept {
    if (!b || !text) return 0;
    const std::size_t slot = (reinterpret_cast<std::uintptr_t>(text) >> 3) & 63;
    if (b->string_keys[slot] == text) return b->string_ids[slot];
    const std::uint64_t id = defineString(b, text);
    // defineString may have rotated: cache in the thread's current buffer.
    if (Buffer* current = threadBuffer(); current && id) {
        current->string_keys[slot] = text;
        current->string_ids[slot] = static_cast<std::uint32_t>(id);
    }
    return id;
}

std::uint64_t internCopy(Buffer* b, std::string_view text) noexcept { return b ? defineString(b, text) : 0; }

void flushIfStale(std::uint64_t time) noexcept {
    if (!enabled()) return;
    Recording* r = g_recording;
    Buffer* b = threadBuffer();
    if (!r || !b || b->records == 0) return;
    // 50 ms worth of ticks.
    if (time - b->fill_started > r->header.ticks_per_second / 20) rotate(b);
}

} // namespace fiberscope::trace
