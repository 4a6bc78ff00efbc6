// Per-thread buffers: attach, rotate when full or stale, intern strings,
// lend a parked thread's buffer to the writer.
//
// A thread fills one Slab at a time with no synchronisation at all. The
// recording's mutex is taken only at chunk boundaries (every ~256 KiB of
// records, or every flush budget), to hand the slab to the writer and take
// an empty one.
#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "recording.hpp"

namespace fiberscope::trace {

std::atomic<bool> g_enabled{false};

namespace detail {

std::atomic<Recording*> g_recording{nullptr};
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

thread_local ThreadSlot t_state;

void startChunk(Slab* slab, const Buffer& from) {
    Buffer& b = slab->buffer;
    b.start = b.pos = slab->bytes.get();
    b.end = b.start + slab->capacity;
    b.last_time = b.base_time = from.last_time;
    b.last_fiber = b.base_fiber = from.last_fiber;
    b.records = 0;
    b.thread = from.thread;
    b.lost = from.lost;
    b.flush_at = ~std::uint64_t{0}; // set by the chunk's first record
    b.flush_budget = from.flush_budget;
    b.generation = from.generation;
    std::copy(std::begin(from.string_keys), std::end(from.string_keys), std::begin(b.string_keys));
    std::copy(std::begin(from.string_ids), std::end(from.string_ids), std::begin(b.string_ids));
}

// Takes a lent slab back (the thread is about to record again). If the
// writer holds it at this instant, waits: it only swaps a slab, under a
// microsecond, but it may have been preempted, so after a short spin this
// yields the CPU instead of burning it.
void reclaim(ThreadSlot& t) noexcept {
    for (int spins = 0;; ++spins) {
        std::uint32_t expected = ThreadSlot::kLent;
        if (t.lend.compare_exchange_weak(expected, ThreadSlot::kOwned, std::memory_order_acquire,
                                         std::memory_order_relaxed))
            break;
        if (spins < 64) {
#if defined(__x86_64__)
            __builtin_ia32_pause();
#endif
        } else {
            sched_yield();
        }
    }
    t.generation = t.lent_generation;
    t.lent_generation = 0;
}

} // namespace

ThreadSlot::~ThreadSlot() {
    if (lent_generation) reclaim(*this);
    // A thread that exits hands its last records to the writer.
    std::lock_guard lock(g_lifecycle);
    Recording* r = activeRecording();
    if (!r || registered != r->generation) return;
    std::lock_guard guard(r->mutex);
    std::erase(r->threads, this);
    if (!slab || generation != r->generation) return;
    if (slab->buffer.records) r->full.push_back(slab);
    else r->free.push_back(slab);
    slab = nullptr;
    r->work.notify_one();
}

std::size_t takeLentSlabs(Recording& r, std::uint64_t now, std::uint64_t min_age, bool stopping) {
    std::size_t taken = 0;
    for (ThreadSlot* t : r.threads) {
        if (t->lend.load(std::memory_order_relaxed) != ThreadSlot::kLent) continue;
        std::uint32_t expected = ThreadSlot::kLent;
        if (!t->lend.compare_exchange_strong(expected, ThreadSlot::kTaken, std::memory_order_acquire,
                                             std::memory_order_relaxed))
            continue; // it just woke up and took it back
        // The thread lent it under this recording (lendBuffer checks), so
        // the slab is ours to swap until `lend` is released below. (None if
        // taken by an earlier call while stopping.)
        Buffer* b = t->slab ? &t->slab->buffer : nullptr;
        const std::uint64_t first = b ? b->flush_at - b->flush_budget : 0; // valid when records > 0
        if (b && b->records && now >= first && now - first >= min_age) {
            if (stopping) {
                // The recording ends: no fresh slab is needed. The thread
                // finds none when it wakes, and attaches anew if recording.
                r.full.push_back(t->slab);
                t->slab = nullptr;
                ++taken;
            } else if (Slab* next = r.takeFree()) {
                startChunk(next, *b);
                r.full.push_back(t->slab);
                t->slab = next;
                ++taken;
            }
        }
        t->lend.store(ThreadSlot::kLent, std::memory_order_release);
    }
    return taken;
}

} // namespace detail

using namespace detail;

__attribute__((noinline)) Buffer* threadBuffer() noexcept {
    Recording* r = activeRecording();
    if (!r) return nullptr;
    ThreadSlot& t = t_state;
    // `generation` first: while the slab is lent it is 0, and `slab` is not
    // the thread's to read until reclaimed.
    if (t.generation == r->generation && t.slab) return &t.slab->buffer;
    if (t.lent_generation) {
        reclaim(t);
        if (t.generation == r->generation && t.slab) return &t.slab->buffer;
    }
    // The thread's CPU totals as it attaches, so the writer's first sample
    // of it covers its time in this recording (a /proc read: once per
    // thread and recording, on this attach path only, never the record path).
    // Written outside the lock, but only before this slot first joins this
    // recording's `threads` (below), so the writer cannot be reading them.
    if (t.base_generation != r->generation) {
        if (!t.tid) t.tid = static_cast<std::uint32_t>(gettid());
        t.base_generation = r->generation;
        t.base_on_cpu = t.base_waiting = 0;
        t.has_base = readSchedstat(t.tid, t.base_on_cpu, t.base_waiting);
    }
    std::lock_guard lock(r->mutex);
    Slab* slab = r->takeFree();
    if (!slab) return nullptr;
    Buffer seed;
    seed.last_time = r->header.start_ticks;
    seed.thread = r->next_thread.fetch_add(1, std::memory_order_relaxed);
    seed.generation = r->generation;
    seed.flush_budget = r->flush_ticks;
    startChunk(slab, seed);
    t.slab = slab;
    t.generation = r->generation;
    // Who the writer's CPU samples describe (gettid is a syscall, but this is
    // the attach path, once per thread and recording, never the record path).
    if (!t.tid) t.tid = static_cast<std::uint32_t>(gettid());
    t.trace_thread = seed.thread;
    if (t.registered != r->generation) {
        r->threads.push_back(&t);
        t.registered = r->generation;
    }
    return &slab->buffer;
}

void lendBuffer() noexcept {
    Recording* r = activeRecording();
    ThreadSlot& t = t_state;
    if (!r || !t.slab || t.generation != r->generation || t.registered != r->generation) return;
    t.lent_generation = t.generation;
    t.generation = 0; // threadBuffer's fast path now misses, and reclaims
    t.lend.store(ThreadSlot::kLent, std::memory_order_release);
}

Buffer* rotate(Buffer* full, bool stale_only) noexcept {
    Recording* r = activeRecording();
    ThreadSlot& t = t_state;
    if (!r || !t.slab || &t.slab->buffer != full || full->generation != r->generation) return nullptr;
    Slab* next;
    {
        std::lock_guard lock(r->mutex);
        next = r->takeFree();
        if (!next && stale_only) {
            // Nothing is lost by keeping this buffer a while longer: retry
            // the hand-over after an eighth of the budget.
            full->flush_at = full->last_time + full->flush_budget / 8;
            return full;
        }
        if (!next) {
            // The writer is behind and the memory cap is reached: drop this
            // record, count it, and report the count once space returns.
            ++full->lost;
            return nullptr;
        }
        // The new chunk continues from the old one, which must be read
        // before it is given away: once pushed, the writer may write it and
        // another thread take it for its next chunk.
        startChunk(next, *full);
        if (full->records) {
            r->full.push_back(t.slab);
            r->work.notify_one();
        } else {
            r->free.push_back(t.slab);
        }
    }
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
    Recording* r = activeRecording();
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
    Buffer* b = threadBuffer();
    if (!b || b->records == 0) return;
    // Older than half the budget: hand it over now rather than leave it to
    // the writer's next look at lent buffers.
    if (time + b->flush_budget / 2 >= b->flush_at) rotate(b, true);
}

} // namespace fiberscope::trace
