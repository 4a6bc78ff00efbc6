// Words for the model's numbers: io_uring opcodes, errno values, durations,
// and how to name a fiber or a thread in a sentence. Shared by the
// explanations (hit.hpp) and the UI's tooltips.
#pragma once

#include <cstdint>
#include <string>

#include "fiberscope/trace_reader.hpp"
#include "model/timeline.hpp"

namespace fiberscope::viewer {

// "IORING_OP_READ", a plain description for the runtime's own numbers
// ("getdents64 (a plain syscall: ...)"), or "IORING_OP_<n>" for an opcode
// the table does not know.
std::string opcodeName(std::uint8_t opcode);
// A noun for what the operation does: "read", "write", "timer", "accept", ...
std::string opcodeNoun(std::uint8_t opcode);
inline constexpr std::uint8_t kOpTimeout = 11;     // IORING_OP_TIMEOUT
inline constexpr std::uint8_t kOpLinkTimeout = 15; // IORING_OP_LINK_TIMEOUT
// IORING_OP_POLL_ADD: on the epoll backend, a fiber's wait for readiness
// (the result is the epoll event mask).
inline constexpr std::uint8_t kOpPollAdd = 6;
// "ECANCELED" (or "errno <n>").
std::string errnoName(int error);
// "850 ns", "12.3 us", "4.56 ms", "1.234 s".
std::string formatDuration(std::int64_t ns);
// A time since the recording started: "12.345678 ms".
std::string formatTime(std::int64_t ns);

// "fiber 'name' (#12)", "fiber #12", "the main fiber (#1)", "the idle loop" (0).
std::string fiberLabel(const Timeline& timeline, std::uint64_t fiber);
// "thread 2 (worker 2)" or "thread 5" when the worker is unknown.
std::string threadLabel(const Timeline& timeline, std::uint32_t thread);
// "worker 3".
std::string workerLabel(std::int64_t worker);
// The worker index of a trace thread (-1 if unknown).
std::int64_t workerOf(const Timeline& timeline, std::uint32_t thread) noexcept;
// "0x7f12...": an object identity (mutex, condition, group, queue).
std::string objectLabel(std::uint64_t object);

} // namespace fiberscope::viewer
