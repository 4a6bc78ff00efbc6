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

    std::atomic<std::uint32_t> next_thread{0};
    std::atomic<std::uint64_t> next_string{1};
    std::thread writer;

    Slab* takeFree(); // under mutex
};

extern Recording* g_recording; // valid while g_enabled
extern std::mutex g_lifecycle;

// Calibrates the trace clock; fills the clock fields of `header`.
void calibrateClock(format::HeaderFixed& header);
// Fills end_ticks / end_monotonic_ns and refines ticks_per_second.
void finishClock(format::HeaderFixed& header);

} // namespace fiberscope::trace::detail
