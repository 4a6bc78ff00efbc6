// Following a trace file while its program still writes it (`fiberscope
// view --live`, and `fiberscope view` on an unfinished file).
//
//     fiberscope::trace::Trace trace;
//     fiberscope::trace::TraceFollower follower("out.fstrace");
//     fiberscope::trace::ReadError error;
//     while (!follower.finished()) {
//         if (!follower.poll(trace, error)) { report(error.text()); break; }
//         ... draw `trace` ...; sleep a little
//     }
//
// Each poll reads only what the file gained since the last one and decodes
// the chunks that are now complete (a chunk the writer is still appending
// waits for the next poll). The same checks as readTrace apply to every byte,
// with the same messages. After the poll that sees the recording's end, the
// trace equals what readTrace gives for the finished file (the reader's
// property test checks this at random cut points), except that string ids
// above kFollowMaxStringId read as "" (no writer makes them; a one-shot read
// renumbers such sparse ids instead).
//
// Events stay in time order across polls: the writer makes each thread's
// records durable within about 100 ms, so a late chunk of a quiet thread can
// hold records older than the newest ones already in `trace.events`. Those
// are merged in place (PollResult::reordered says indices moved).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fiberscope/trace_reader.hpp"

namespace fiberscope::trace {

inline constexpr std::uint64_t kFollowMaxStringId = 1u << 20;

struct PollResult {
    std::size_t appended = 0; // events added by this poll
    bool reordered = false;   // events already in the trace moved (indices into it changed)
    bool grew = false;        // anything changed (events, strings, threads or the header)
};

class TraceFollower {
public:
    // Follows `path`. The file need not exist yet: polls wait for it (and
    // for its header) without error.
    explicit TraceFollower(std::string path);
    ~TraceFollower();
    TraceFollower(const TraceFollower&) = delete;
    TraceFollower& operator=(const TraceFollower&) = delete;

    // Reads what the file gained into `trace`: pass the same Trace every time
    // (the first poll that finds a header resets it). Returns false, with
    // `error` naming the offset and what is wrong, if the new bytes are
    // corrupt or the file shrank; `trace` keeps what was read before.
    bool poll(Trace& trace, ReadError& error, PollResult* result = nullptr);

    // The recording stopped (the header says so) and every byte is read.
    bool finished() const noexcept;
    // The file exists and its header has been read.
    bool started() const noexcept;
    const std::string& path() const noexcept;

private:
    struct State;
    std::unique_ptr<State> state_;
};

// Reads and checks only the header of `path` (its clock, flags, backend and
// command line): `header.complete` says whether the recording has stopped.
bool readTraceHeader(const std::string& path, TraceHeader& header, ReadError& error);

} // namespace fiberscope::trace
