// Recording traces, and annotating them from your own code.
//
//     fiberscope::trace::Recorder recorder("out.fstrace");   // RAII
//     if (!recorder.ok()) std::fprintf(stderr, "%s\n", recorder.error().c_str());
//     ...
//     fiberscope::trace::mark("loaded config");               // an instant
//     { fiberscope::trace::Zone zone("parse"); parse(); }     // a span
//
// Or without touching code: `FIBERSCOPE_TRACE=out.fstrace ./prog` (any
// program built on the runtime), or `fiberscope record -o out.fstrace -- ./prog`.
// Fiber names are set through the runtime (fiberscope::setFiberName).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "fiberscope/trace_emit.hpp"

namespace fiberscope::trace {

struct RecorderOptions {
    std::string backend = "io_uring"; // recorded in the header
    std::size_t buffer_bytes = 256 * 1024; // per chunk
    std::size_t max_buffers = 1024;        // memory cap: beyond it records are dropped (and counted)
};

// Records every trace event of this process into `path` while alive. Only
// one Recorder may be active at a time.
class Recorder {
public:
    explicit Recorder(const std::string& path, RecorderOptions options = {});
    ~Recorder();
    Recorder(const Recorder&) = delete;
    Recorder& operator=(const Recorder&) = delete;

    bool ok() const noexcept { return error_.empty(); }
    const std::string& error() const noexcept { return error_; }
    // Stops recording (also done by the destructor). Returns false, with
    // error() set, if the file could not be completed.
    bool stop();

private:
    std::string error_;
    bool active_ = false;
};

// Starts a process-wide recording if FIBERSCOPE_TRACE names a file (the
// runtime calls this when a loop is created). Returns the recorder it
// started, or nullptr (not requested, already recording, or failed: then a
// one-line error is printed).
// `backend` is the loop's backend ("io_uring" or "epoll"), recorded in the
// header (the runtime passes the one its loop chose).
Recorder* startFromEnvironment(std::string_view backend = "io_uring");
bool recording() noexcept;

// An instant mark on the calling thread (and fiber). `label` must be a
// string literal or otherwise never change; use markCopy for built strings.
// (Strings are interned before the record opens: a string definition is a
// record of its own and must not land inside another.)
inline std::uint64_t internLabel(const char* label) noexcept {
    Buffer* b = enabled() ? threadBuffer() : nullptr;
    return b ? internStable(b, label) : 0;
}
inline void mark(const char* label) noexcept {
    if (!enabled()) return;
    const std::uint64_t id = internLabel(label);
    if (Record r{EventKind::Mark, now()}) r.u(id);
}
inline void markCopy(std::string_view label) noexcept {
    if (!enabled()) return;
    Buffer* b = threadBuffer();
    if (!b) return;
    const std::uint64_t id = internCopy(b, label);
    if (Record r{EventKind::Mark, now()}) r.u(id);
}

// A span of work on the calling fiber: begins now, ends with the scope.
class Zone {
public:
    explicit Zone(const char* label) noexcept {
        if (!enabled()) return;
        const std::uint64_t id = internLabel(label);
        if (Record r{EventKind::ZoneBegin, now()}) r.u(id);
    }
    ~Zone() { Record r{EventKind::ZoneEnd, now()}; }
    Zone(const Zone&) = delete;
    Zone& operator=(const Zone&) = delete;
};

} // namespace fiberscope::trace
