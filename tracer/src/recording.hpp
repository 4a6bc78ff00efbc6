// The process-wide state of an active recording (internal).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fiberscope/trace.hpp"
#include "format.hpp"

namespace fiberscope::trace::detail {

// A chunk's memory: the Buffer the producer fills plus its bytes.
struct Slab {
    Buffer buffer;
    std::unique_ptr<std::uint8_t[]> bytes;
    std::size_t capacity = 0;
};

// A thread's attachment to the recording (its thread_local, thread_buffer.cpp).
// Only the thread touches `slab` and `generation`, except while the slab is
// lent: between lendBuffer() (the thread parks) and its next record, the
// writer may take `lend` from kLent to kTaken and, holding it, replace a
// stale slab with a fresh one. The acquire/release pairs on `lend` order the
// two sides' accesses to `slab` and the buffer.
struct ThreadSlot {
    enum : std::uint32_t { kOwned, kLent, kTaken };
    Slab* slab = nullptr;
    std::uint32_t generation = 0;      // the recording `slab` belongs to (0 while lent)
    std::uint32_t lent_generation = 0; // while lent: what `generation` was
    std::uint32_t registered = 0;      // the generation whose `threads` list holds this slot
    // For the writer's CPU samples (writer.cpp), set when the thread attaches
    // (threadBuffer's slow path, under Recording::mutex, which the writer
    // holds to read them): its kernel thread id and its trace thread number.
    std::uint32_t tid = 0;
    std::uint32_t trace_thread = 0;
    // Its schedstat totals when it attached (the first sample counts from
    // there), read in threadBuffer's attach path before the lock.
    std::uint32_t base_generation = 0; // the recording they were read for (0: none)
    bool has_base = false;             // the read succeeded
    std::uint64_t base_on_cpu = 0, base_waiting = 0;
    std::atomic<std::uint32_t> lend{kOwned};
    ~ThreadSlot();
};

struct Recording {
    RecorderOptions options;
    int fd = -1;
    std::uint32_t generation = 0;
    format::HeaderFixed header{};
    std::string header_bytes; // the whole header as written, for its checksum

    std::mutex mutex; // guards everything below (touched once per chunk)
    std::condition_variable work;
    std::deque<Slab*> full;              // waiting for the writer
    std::vector<Slab*> free;             // ready for producers
    std::vector<std::unique_ptr<Slab>> all;
    bool stopping = false;
    std::string write_error;
    std::vector<ThreadSlot*> threads;    // every thread attached (to take lent stale slabs)
    std::uint64_t flush_ticks = 0;       // the flush budget in clock ticks (100 ms)

    std::atomic<std::uint32_t> next_thread{0};
    std::atomic<std::uint64_t> next_string{1};
    std::thread writer;

    Slab* takeFree(); // under mutex
};

// The flush budget: no record stays unwritten longer than about this (a
// busy thread's buffer is handed over by the first record past it; a parked
// thread's by the writer, which looks every kWriterTickMs).
inline constexpr std::uint64_t kFlushBudgetMs = 100;
inline constexpr std::uint64_t kWriterTickMs = 20;

// Under r.mutex, by the writer: every lent slab with records at least
// `min_age` ticks old (its first record before `now - min_age`) goes to
// `full`, and its thread gets a fresh one (none when `stopping`). Returns
// how many were taken.
std::size_t takeLentSlabs(Recording& r, std::uint64_t now, std::uint64_t min_age, bool stopping);

// The active recording. Atomic because threads that already run when a
// Recorder starts read it: its release store (and these acquire loads)
// publish the Recording's contents to them.
extern std::atomic<Recording*> g_recording;
inline Recording* activeRecording() noexcept { return g_recording.load(std::memory_order_acquire); }
extern std::mutex g_lifecycle;

// Reads /proc/self/task/TID/schedstat: nanoseconds on a CPU and ready on a
// runqueue (writer.cpp). False if the thread is gone or the kernel has none.
bool readSchedstat(std::uint32_t tid, std::uint64_t& on_cpu, std::uint64_t& waiting) noexcept;

// Calibrates the trace clock; fills the clock fields of `header`.
void calibrateClock(format::HeaderFixed& header);
// Fills end_ticks / end_monotonic_ns and refines ticks_per_second.
void finishClock(format::HeaderFixed& header);

} // namespace fiberscope::trace::detail
