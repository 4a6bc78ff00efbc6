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
#include <source_location>
#include <string>
#include <string_view>

#include "fiberscope/trace_emit.hpp"

namespace fiberscope::trace {

struct RecorderOptions {
    std::string backend = "io_uring"; // recorded in the header
    std::size_t buffer_bytes = 256 * 1024; // per chunk
    std::size_t max_buffers = 1024;        // memory cap: beyond it records are dropped (and counted)
    // A checking recording (FIBERSCOPE_TRACE_CHECK=1 in the environment also
    // sets it): the runtime adds truth records saying what it knows at
    // decision points, for the validator (FORMAT.md "Truth"). Costs a few
    // records per decision; off, nothing.
    bool check = false;
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
//
// Marks and zones also record where they were made (the caller's file and
// line, by a defaulted std::source_location): a source-location record right
// after the mark or zone-begin, at the same time. The file name is a literal
// the compiler keeps at one address, so it is interned once and then found
// in the thread's string cache by its pointer, like the label.
inline std::uint64_t internLabel(const char* label) noexcept {
    Buffer* b = enabled() ? threadBuffer() : nullptr;
    return b ? internStable(b, label) : 0;
}
namespace detail {
// Writes a mark or zone-begin labelled `label` (an interned id) and its location.
inline void annotate(EventKind kind, std::uint64_t label, Buffer* b, const std::source_location& where) noexcept {
    const std::uint64_t file = internStable(b, where.file_name());
    const std::uint64_t t = now();
    bool wrote = false;
    if (Record r{kind, t}) r.u(label), wrote = true;
    if (wrote) emit::sourceLocation(t, file, where.line()); // not after a lost record: it would place another
}
} // namespace detail
inline void mark(const char* label, std::source_location where = std::source_location::current()) noexcept {
    if (!enabled()) return;
    Buffer* b = threadBuffer();
    if (!b) return;
    detail::annotate(EventKind::Mark, internStable(b, label), b, where);
}
inline void markCopy(std::string_view label, std::source_location where = std::source_location::current()) noexcept {
    if (!enabled()) return;
    Buffer* b = threadBuffer();
    if (!b) return;
    detail::annotate(EventKind::Mark, internCopy(b, label), b, where);
}

// A span of work on the calling fiber: begins now, ends with the scope.
class Zone {
public:
    explicit Zone(const char* label, std::source_location where = std::source_location::current()) noexcept {
        if (!enabled()) return;
        Buffer* b = threadBuffer();
        if (!b) return;
        detail::annotate(EventKind::ZoneBegin, internStable(b, label), b, where);
    }
    ~Zone() { Record r{EventKind::ZoneEnd, now()}; }
    Zone(const Zone&) = delete;
    Zone& operator=(const Zone&) = delete;
};

} // namespace fiberscope::trace
