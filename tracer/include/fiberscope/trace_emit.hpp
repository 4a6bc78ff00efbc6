// The recording hot path: append one compact record to the calling thread's
// buffer. Used by the runtime at every scheduling decision, and by user
// annotations (trace.hpp).
//
// Cost when not recording: one load (acquire: a plain mov on x86-64, an LDAR
// on AArch64; enabled() says why) and a predictable branch.
// Cost when recording: a clock read (shared by the records of one decision),
// a buffer pointer fetch, a bounds check and a few varint stores. No lock,
// no allocation: when a buffer fills, it is handed to the writer thread and
// a fresh one taken from a pool (the only slow path). Build with
// -DFIBERSCOPE_TRACING=0 to compile every record away.
//
// How much a crash can lose: a buffer is also handed over when a record
// arrives more than the flush budget (100 ms) after the buffer's first
// record, so a busy thread never holds more than ~100 ms of records
// unwritten; a thread parked in the kernel lends its buffer to the writer
// (lendBuffer), which writes it once it is about that old. A thread blocked
// anywhere else keeps its last (at most 100 ms of) records until it records
// again: nothing else may touch its buffer. (FORMAT.md, "How recent".)
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "fiberscope/trace_events.hpp"

#ifndef FIBERSCOPE_TRACING
#define FIBERSCOPE_TRACING 1
#endif

namespace fiberscope::trace {

// One thread's buffer being filled (owned by that thread while filling).
struct Buffer {
    std::uint8_t* pos = nullptr;   // next free byte
    std::uint8_t* end = nullptr;   // end of usable space
    std::uint8_t* start = nullptr; // first byte of this chunk's records
    std::uint64_t last_time = 0;   // time of the previous record, in ticks
    std::uint64_t last_fiber = 0;  // previous fiber field (fibers are deltas)
    std::uint64_t base_time = 0;   // last_time when this chunk started
    std::uint64_t base_fiber = 0;  // last_fiber when this chunk started
    std::uint32_t records = 0;
    std::uint32_t thread = 0;      // trace thread number
    std::uint64_t lost = 0;        // records dropped, not yet reported
    // A checking recording: ticks the latest record was stamped before the
    // one ahead of it (its time was moved up to that one's), reported by a
    // truth record right after it.
    std::uint64_t backdated = 0;
    // A record at a time past flush_at hands this chunk to the writer first.
    // It is set by the chunk's first record (its time + flush_budget), and is
    // the largest value while the chunk is empty, so the check on the record
    // path is one compare with no special case.
    std::uint64_t flush_at = ~std::uint64_t{0};
    std::uint64_t flush_budget = 0; // ticks: the recording's flush budget
    std::uint32_t generation = 0;
    // Direct-mapped cache of interned stable strings: pointer -> id.
    const char* string_keys[64] = {};
    std::uint32_t string_ids[64] = {};
};

// The largest record except StringDef (which checks its own size).
inline constexpr std::size_t kMaxRecordBytes = 64;

// Set while a Recorder is active (and the trace clock's kind). They exist
// even when tracing is compiled out; enabled() then ignores them.
extern std::atomic<bool> g_enabled;
// Written (relaxed) while a Recorder starts, before g_enabled is set:
// atomic because threads already running read it with no lock, and a
// thread that saw enabled() (acquire) reads the value that recording set.
extern std::atomic<bool> g_use_tsc;
// Set while a checking recording is active (RecorderOptions::check, before
// g_enabled): the runtime writes truth records, and a record stamped earlier
// than its thread's previous one is reported (a truth `backdated` record).
extern std::atomic<bool> g_check;
// Ticks a record may be stamped before its thread's previous one without
// being reported: the TSCs of two CPUs can differ by a few, and a thread
// moves between CPUs.
inline constexpr std::uint64_t kBackdatedSlackTicks = 4000;

// Whether the recording checks itself (enabled() must be true first: that
// acquire load orders this relaxed one after the Recorder's setup).
inline bool checking() noexcept {
#if FIBERSCOPE_TRACING
    return g_check.load(std::memory_order_relaxed);
#else
    return false;
#endif
}

inline bool enabled() noexcept {
#if FIBERSCOPE_TRACING
    // acquire: pairs with the Recorder's release store of true, so a thread
    // that sees tracing on also sees what was set up before it (the clock's
    // kind read by now(), the active recording). On x86-64 an acquire load
    // is the same plain mov as a relaxed one; on AArch64 it is an LDAR.
    return g_enabled.load(std::memory_order_acquire);
#else
    return false;
#endif
}

// Ticks of the trace clock: the TSC (or the AArch64 virtual counter) when it
// is invariant, else CLOCK_MONOTONIC nanoseconds. Calibrated in the header.
inline std::uint64_t now() noexcept {
#if FIBERSCOPE_TRACING
#if defined(__x86_64__)
    if (g_use_tsc.load(std::memory_order_relaxed)) return __rdtsc();
#elif defined(__aarch64__)
    if (g_use_tsc.load(std::memory_order_relaxed)) {
        std::uint64_t value;
        asm volatile("mrs %0, cntvct_el0" : "=r"(value));
        return value;
    }
#endif
#endif
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

// The calling thread's buffer (attached on first use), nullptr when not
// recording. Not inlined: a fiber may call it on a different OS thread than
// last time, so its thread-local must be read afresh.
Buffer* threadBuffer() noexcept;
// Hands a full (or stale) buffer to the writer; returns the thread's fresh
// buffer, or nullptr if none could be had (records are then counted lost).
// With `stale_only` (the buffer still has room, it is only old), a missing
// fresh buffer loses nothing: the same buffer is returned, to retry later.
Buffer* rotate(Buffer* full, bool stale_only = false) noexcept;
// Interns a string whose bytes never change at this address (a literal).
std::uint64_t internStable(Buffer* buffer, const char* text) noexcept;
// Defines a new string id for `text` (copied into the trace).
std::uint64_t internCopy(Buffer* buffer, std::string_view text) noexcept;
// A park point: flushes this thread's buffer if it has held records for a
// while, so a live or crashing program's trace stays recent.
void flushIfStale(std::uint64_t time) noexcept;
// The calling thread is about to block (parked in the kernel) and records
// nothing until it returns: the writer may take its buffer meanwhile, once
// the buffer is stale, so a thread that parks for a long time does not keep
// its last records from the file. Its next record takes the buffer back
// (threadBuffer does, waiting out the writer if it is writing it just then).
void lendBuffer() noexcept;

// Encodes one record. Usage: `if (Record r{kind, time}) { r.fiber(f); r.u(x); }`
class Record {
public:
    Record(EventKind kind, std::uint64_t time) noexcept {
        if (!enabled()) return;
        Buffer* b = threadBuffer();
        if (!b) return;
        // One unlikely branch covers the three slow cases: no room, records
        // lost (to be reported), or the chunk is older than the flush budget
        // (handed to the writer so that a crash loses at most that much).
        const bool room = static_cast<std::size_t>(b->end - b->pos) >= kMaxRecordBytes;
        if (!room || b->lost || time > b->flush_at) [[unlikely]] {
            b = rotate(b, room && !b->lost);
            if (!b) return;
        }
        buffer_ = b;
        p_ = b->pos;
        *p_++ = static_cast<std::uint8_t>(kind);
        // Clocks can step back across CPUs by a few ticks: clamp to 0. More
        // than that is a record stamped before an earlier one of its thread
        // (a bug: its effect may already be in the trace); a checking
        // recording says so.
        const std::uint64_t delta = time > b->last_time ? time - b->last_time : 0;
        if (time + kBackdatedSlackTicks < b->last_time && checking()) [[unlikely]]
            b->backdated = b->last_time - time;
        if (b->records == 0) b->flush_at = time + b->flush_budget;
        b->last_time = time > b->last_time ? time : b->last_time;
        varint(delta);
    }
    ~Record() {
        if (!buffer_) return;
        buffer_->pos = p_;
        ++buffer_->records;
        if (buffer_->backdated) [[unlikely]]
            reportBackdated(buffer_);
    }
    Record(const Record&) = delete;
    Record& operator=(const Record&) = delete;

    explicit operator bool() const noexcept { return buffer_ != nullptr; }
    Buffer* buffer() const noexcept { return buffer_; }

    void u(std::uint64_t value) noexcept { varint(value); }
    void s(std::int64_t value) noexcept {
        varint((static_cast<std::uint64_t>(value) << 1) ^ static_cast<std::uint64_t>(value >> 63));
    }
    // Raw bytes (StringDef only: the caller checked the space).
    void bytes(const void* data, std::size_t size) noexcept {
        std::memcpy(p_, data, size);
        p_ += size;
    }
    void fiber(std::uint64_t id) noexcept {
        s(static_cast<std::int64_t>(id - buffer_->last_fiber));
        buffer_->last_fiber = id;
    }

private:
    // Writes the truth record a backdated record calls for (trace_emit's end).
    static void reportBackdated(Buffer* buffer) noexcept;
    void varint(std::uint64_t value) noexcept {
        while (value >= 0x80) {
            *p_++ = static_cast<std::uint8_t>(value | 0x80);
            value >>= 7;
        }
        *p_++ = static_cast<std::uint8_t>(value);
    }
    Buffer* buffer_ = nullptr;
    std::uint8_t* p_ = nullptr;
};

} // namespace fiberscope::trace

// Typed emitters: they write each record's fields in the order the record
// table lists them (trace_records.hpp, which the reader decodes with;
// FORMAT.md documents it; tests/tracer/test_record_table.cpp round-trips
// every kind through both).
namespace fiberscope::trace::emit {

inline void threadStart(std::uint64_t t, std::uint64_t worker, const char* stable_name) noexcept {
    if (!enabled()) return;
    Buffer* b = threadBuffer();
    if (!b) return;
    const std::uint64_t name = internStable(b, stable_name);
    if (Record r{EventKind::ThreadStart, t}) r.u(worker), r.u(name);
}
inline void threadStop(std::uint64_t t) noexcept { Record r{EventKind::ThreadStop, t}; }
inline void fiberCreate(std::uint64_t t, std::uint64_t fiber, std::uint64_t parent) noexcept {
    if (Record r{EventKind::FiberCreate, t}) r.fiber(fiber), r.fiber(parent), r.u(0);
}
inline void fiberFinish(std::uint64_t t, std::uint64_t fiber) noexcept {
    if (Record r{EventKind::FiberFinish, t}) r.fiber(fiber);
}
inline void fiberRecycle(std::uint64_t t, std::uint64_t fiber) noexcept {
    if (Record r{EventKind::FiberRecycle, t}) r.fiber(fiber);
}
inline void fiberName(std::uint64_t t, std::uint64_t fiber, std::string_view name) noexcept {
    if (!enabled()) return;
    Buffer* b = threadBuffer();
    if (!b) return;
    const std::uint64_t id = internCopy(b, name);
    if (Record r{EventKind::FiberName, t}) r.fiber(fiber), r.u(id);
}
inline void switchTo(std::uint64_t t, std::uint64_t from, std::uint64_t to, SwitchReason why) noexcept {
    if (Record r{EventKind::Switch, t}) r.fiber(from), r.fiber(to), r.u(static_cast<std::uint8_t>(why));
}
inline void schedule(std::uint64_t t, std::uint64_t head, std::uint64_t count, std::uint64_t target,
                     ScheduleHow how) noexcept {
    if (Record r{EventKind::Schedule, t}) r.fiber(head), r.u(count), r.u(target), r.u(static_cast<std::uint8_t>(how));
}
inline void steal(std::uint64_t t, std::uint64_t head, std::uint64_t victim) noexcept {
    if (Record r{EventKind::Steal, t}) r.fiber(head), r.u(victim);
}
inline void stealHalf(std::uint64_t t, std::uint64_t fiber, std::uint64_t victim) noexcept {
    if (Record r{EventKind::StealHalf, t}) r.fiber(fiber), r.u(victim);
}
inline void stealOne(std::uint64_t t, std::uint64_t fiber, std::uint64_t victim, StealOneFrom from) noexcept {
    if (Record r{EventKind::StealOne, t}) r.fiber(fiber), r.u(victim), r.u(static_cast<std::uint8_t>(from));
}
inline void wakeupBounced(std::uint64_t t, std::uint64_t target, std::int64_t result) noexcept {
    if (Record r{EventKind::WakeupBounced, t}) r.u(target), r.s(result);
}
inline void mutexTaken(std::uint64_t t, std::uint64_t fiber, const void* mutex) noexcept {
    if (Record r{EventKind::MutexTaken, t}) r.fiber(fiber), r.u(reinterpret_cast<std::uintptr_t>(mutex));
}
inline void overflow(std::uint64_t t, OverflowOp op, std::uint64_t fiber) noexcept {
    if (Record r{EventKind::Overflow, t}) r.u(static_cast<std::uint8_t>(op)), r.fiber(fiber);
}
// A truth record: only in a checking recording (the caller checks checking()).
inline void truth(std::uint64_t t, TruthOp op, std::uint64_t fiber, std::uint64_t value) noexcept {
    if (Record r{EventKind::Truth, t}) r.u(static_cast<std::uint8_t>(op)), r.fiber(fiber), r.u(value);
}
inline void search(std::uint64_t t, SearchOp op, std::uint64_t searchers) noexcept {
    if (Record r{EventKind::Search, t}) r.u(static_cast<std::uint8_t>(op)), r.u(searchers);
}
inline void wakeupSent(std::uint64_t t, std::uint64_t target) noexcept {
    if (Record r{EventKind::WakeupSent, t}) r.u(target);
}
inline void wakeupReceived(std::uint64_t t, std::uint64_t sender) noexcept {
    if (Record r{EventKind::WakeupReceived, t}) r.u(sender);
}
inline void park(std::uint64_t t) noexcept {
    { Record r{EventKind::Park, t}; }
    lendBuffer(); // the thread now waits in the kernel and records nothing until it returns
}
inline void unpark(std::uint64_t t, std::uint64_t completions) noexcept {
    if (Record r{EventKind::Unpark, t}) r.u(completions);
}
inline void submit(std::uint64_t t, std::uint64_t fiber, std::uint8_t opcode, std::int64_t fd) noexcept {
    if (Record r{EventKind::Submit, t}) r.fiber(fiber), r.u(opcode), r.s(fd);
}
inline void complete(std::uint64_t t, std::uint64_t fiber, std::uint8_t opcode, std::int64_t result) noexcept {
    if (Record r{EventKind::Complete, t}) r.fiber(fiber), r.u(opcode), r.s(result);
}
inline void cancelRequest(std::uint64_t t, std::uint64_t fiber, std::uint64_t target_plus_one) noexcept {
    if (Record r{EventKind::CancelRequest, t}) r.fiber(fiber), r.u(target_plus_one);
}
inline void cancelDelivered(std::uint64_t t, std::uint64_t fiber) noexcept {
    if (Record r{EventKind::CancelDelivered, t}) r.fiber(fiber);
}
inline void mutexContended(std::uint64_t t, std::uint64_t fiber, const void* mutex) noexcept {
    if (Record r{EventKind::MutexContended, t}) r.fiber(fiber), r.u(reinterpret_cast<std::uintptr_t>(mutex));
}
inline void mutexHandoff(std::uint64_t t, std::uint64_t from, std::uint64_t to, const void* mutex) noexcept {
    if (Record r{EventKind::MutexHandoff, t}) r.fiber(from), r.fiber(to), r.u(reinterpret_cast<std::uintptr_t>(mutex));
}
inline void conditionWait(std::uint64_t t, std::uint64_t fiber, const void* condition) noexcept {
    if (Record r{EventKind::ConditionWait, t}) r.fiber(fiber), r.u(reinterpret_cast<std::uintptr_t>(condition));
}
inline void conditionWake(std::uint64_t t, std::uint64_t fiber, const void* condition, ConditionWakeHow how) noexcept {
    if (Record r{EventKind::ConditionWake, t})
        r.fiber(fiber), r.u(reinterpret_cast<std::uintptr_t>(condition)), r.u(static_cast<std::uint8_t>(how));
}
inline void await(std::uint64_t t, std::uint64_t fiber, std::uint64_t target) noexcept {
    if (Record r{EventKind::Await, t}) r.fiber(fiber), r.fiber(target);
}
inline void groupOp(std::uint64_t t, GroupOp op, const void* group, std::uint64_t fiber) noexcept {
    if (Record r{EventKind::GroupOp, t})
        r.u(static_cast<std::uint8_t>(op)), r.u(reinterpret_cast<std::uintptr_t>(group)), r.fiber(fiber);
}
inline void queueOp(std::uint64_t t, QueueOp op, const void* queue, std::uint64_t fiber) noexcept {
    if (Record r{EventKind::QueueOp, t})
        r.u(static_cast<std::uint8_t>(op)), r.u(reinterpret_cast<std::uintptr_t>(queue)), r.fiber(fiber);
}
inline void semaphoreOp(std::uint64_t t, SemaphoreOp op, const void* semaphore, std::uint64_t fiber, std::uint64_t count) noexcept {
    if (Record r{EventKind::SemaphoreOp, t})
        r.u(static_cast<std::uint8_t>(op)), r.u(reinterpret_cast<std::uintptr_t>(semaphore)), r.fiber(fiber), r.u(count);
}
inline void eventOp(std::uint64_t t, EventOp op, const void* event, std::uint64_t fiber) noexcept {
    if (Record r{EventKind::EventOp, t})
        r.u(static_cast<std::uint8_t>(op)), r.u(reinterpret_cast<std::uintptr_t>(event)), r.fiber(fiber);
}
inline void objectName(std::uint64_t t, const void* object, std::string_view name) noexcept {
    if (!enabled()) return;
    Buffer* b = threadBuffer();
    if (!b) return;
    const std::uint64_t id = internCopy(b, name);
    if (Record r{EventKind::ObjectName, t}) r.u(reinterpret_cast<std::uintptr_t>(object)), r.u(id);
}
inline void rwlockOp(std::uint64_t t, RwLockOp op, const void* rwlock, std::uint64_t fiber) noexcept {
    if (Record r{EventKind::RwLockOp, t})
        r.u(static_cast<std::uint8_t>(op)), r.u(reinterpret_cast<std::uintptr_t>(rwlock)), r.fiber(fiber);
}
// Where the thread's previous record (a mark or zone-begin) was made: `file`
// is an interned string id (trace.hpp writes it after the record it places).
inline void sourceLocation(std::uint64_t t, std::uint64_t file, std::uint64_t line) noexcept {
    if (Record r{EventKind::SourceLocation, t}) r.u(file), r.u(line);
}

} // namespace fiberscope::trace::emit

namespace fiberscope::trace {
inline void Record::reportBackdated(Buffer* buffer) noexcept {
    const std::uint64_t ticks = buffer->backdated;
    buffer->backdated = 0;
    emit::truth(buffer->last_time, TruthOp::Backdated, 0, ticks);
}
} // namespace fiberscope::trace
