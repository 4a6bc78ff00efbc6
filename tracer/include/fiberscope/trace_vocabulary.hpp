// The words every tool prints for a trace's numbers: one table of opcodes
// (the short name the tools print, the kernel's name the viewer's sentences
// use, a noun for prose, one sentence of explanation, and which backend
// notes apply), one duration format and one count format.
//
// A trace records an operation by number: the kernel's io_uring opcode
// (enum io_uring_op, a stable ABI, so no liburing header is needed here), or
// for an operation io_uring has no opcode for, a number the runtime gives it
// far past any kernel opcode (runtime/src/syscall_io.hpp). Both backends
// record the same numbers (FORMAT.md, "The epoll backend"). The tools, the
// viewer and the lessons' checks all name them from this one table, so
// `fiberscope export` and the viewer never disagree about an opcode.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace fiberscope::trace {

// Notes that change how an opcode's records read.
enum OpcodeNote : std::uint8_t {
    // On the epoll backend this opcode records a fiber's wait for its fd to
    // become ready (FORMAT.md): the result is the epoll event mask.
    kOpNoteReadinessWait = 1u << 0,
    // A timer: a result of -ETIME means it expired, not that it failed.
    kOpNoteTimer = 1u << 1,
    // Not an io_uring opcode: a number the runtime gives an operation it
    // runs another way (a plain syscall, or a blocking-pool job).
    kOpNoteRuntimeNumber = 1u << 2,
    // Where the kernel's ring lacks this opcode, the io_uring backend runs
    // the plain syscall in place (traced as a submit and a complete at one
    // instant).
    kOpNoteSyscallFallback = 1u << 3,
    // The runtime runs it on a blocking-pool thread (its complete record is
    // on that thread).
    kOpNoteBlockingPool = 1u << 4,
};

struct OpcodeInfo {
    std::uint8_t opcode = 0;
    const char* name = nullptr;        // short, what the tools print: "read", "poll-add"
    // The kernel's name, "IORING_OP_READ"; for one of the runtime's own
    // numbers (kOpNoteRuntimeNumber), what it is instead: "plain syscall".
    const char* kernel = nullptr;
    const char* noun = nullptr;        // for prose: "its read completed", "directory read"
    const char* explanation = nullptr; // one sentence
    std::uint8_t notes = 0;            // OpcodeNote bits
};

// Opcode numbers the tools and the viewer treat specially.
inline constexpr std::uint8_t kOpPollAdd = 6;      // IORING_OP_POLL_ADD: on epoll, a readiness wait
inline constexpr std::uint8_t kOpTimeout = 11;     // IORING_OP_TIMEOUT
inline constexpr std::uint8_t kOpAsyncCancel = 14; // IORING_OP_ASYNC_CANCEL
inline constexpr std::uint8_t kOpLinkTimeout = 15; // IORING_OP_LINK_TIMEOUT
inline constexpr std::uint8_t kOpMsgRing = 40;     // IORING_OP_MSG_RING
inline constexpr std::uint8_t kOpGetdents64 = 200; // the runtime's number: getdents64, a plain syscall
inline constexpr std::uint8_t kOpResolve = 210;    // the runtime's number: getaddrinfo on the blocking pool

// Every opcode the table knows, by number.
std::span<const OpcodeInfo> opcodeTable() noexcept;
// The table's entry for `opcode`, or nullptr.
const OpcodeInfo* findOpcode(std::uint8_t opcode) noexcept;
// True if the table knows `opcode` and `note` applies to it.
bool opcodeHas(std::uint8_t opcode, OpcodeNote note) noexcept;

// The short name ("read", "timeout", "getdents64"), or "op N".
std::string opcodeName(std::uint8_t opcode);
// What the viewer's sentences call it: the kernel's name ("IORING_OP_READ"),
// the short name with what it is for the runtime's own numbers
// ("getdents64 (plain syscall)"), or "IORING_OP_<n>" for a number the table
// does not know.
std::string opcodeLabel(std::uint8_t opcode);
// A noun for what it does: "read", "timer", "directory read"; "operation N".
std::string opcodeNoun(std::uint8_t opcode);
// One sentence; for an unknown number, says so.
std::string opcodeExplanation(std::uint8_t opcode);

// "812 ns", "3.25 us", "40.98 ms", "1.204 s", "-3.25 us": the one duration
// format of the tools and the viewer (the viewer's ruler labels its ticks
// at the ruler's own step instead, time_view.hpp).
std::string formatDuration(std::int64_t ns);
// "1,234,567".
std::string formatCount(std::uint64_t value);

} // namespace fiberscope::trace
