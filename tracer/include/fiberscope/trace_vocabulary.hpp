// The words every tool prints for a trace's numbers: one table of opcodes
// (the short name the tools print, the kernel's name the viewer's sentences
// use, a noun for prose, one sentence of explanation, and which backend
// notes apply), one duration format and one count format.
//
// A trace records an operation by number: the kernel's io_uring opcode
// (enum io_uring_op, a stable ABI, so no liburing header is needed here), or
// for an operation io_uring has no opcode for, a number the runtime gives it
// far past any kernel opcode (runtime/src/io/syscall_io.hpp). Both backends
// record the same numbers (FORMAT.md, "The epoll backend"). The tools, the
// viewer and the lessons' checks all name them from this one table, so
// `fiberscope export` and the viewer never disagree about an opcode.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

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

// --- The backend a trace was recorded on -----------------------------------
// Both backends record the same kinds (FORMAT.md, "The epoll backend"), but
// what a park, a wake-up or an operation in flight is differs: every sentence
// that names one takes its words from here, by the header's backend name, so
// no tool or panel says io_uring_enter of an epoll trace.
enum class Backend : std::uint8_t { IoUring, Epoll };

struct BackendWords {
    Backend backend = Backend::IoUring;
    const char* name = nullptr;       // "io_uring", "epoll"
    const char* park_call = nullptr;  // the call a parked thread waits in: "io_uring_enter", "epoll_pwait2"
    const char* park_waits_for = nullptr; // what it waits for: "completions or a MSG_RING", "readiness, a deadline or its eventfd"
    const char* wake = nullptr;       // how one thread wakes another: "MSG_RING", "eventfd write"
    const char* in_flight = nullptr;  // where an operation waits: "in the ring", "registered with epoll"
    const char* in_flight_short = nullptr; // the state card's row label: "in ring", "in epoll"
    const char* completions = nullptr;     // what a thread collects: "ring completions", "completions"
    // What opcode 6 (IORING_OP_POLL_ADD) is: on io_uring the kernel's poll,
    // on epoll a fiber's wait for readiness.
    const char* poll_add = nullptr;   // "IORING_OP_POLL_ADD", "IORING_OP_POLL_ADD; epoll backend"
};

// The words for a trace whose header names `backend` ("epoll"; anything
// else, "io_uring" or an older trace's empty name, is io_uring).
const BackendWords& backendWords(std::string_view backend) noexcept;
const BackendWords& backendWords(Backend backend) noexcept;

// The mark worker 0 writes right after its backend mark when the loop runs
// the scaling scheduler policy (FORMAT.md, "Marks"); a trace without it ran
// the seed's policy, as every trace before that mark did.
inline constexpr std::string_view kScalingPolicyMark = "scheduler: scaling";

// Trace worker numbers from here up are blocking-pool threads (both
// backends start them for jobs the kernel cannot run asynchronously; the
// runtime's blocking_pool.cpp numbers them so).
inline constexpr std::int64_t kBlockingPoolWorkerBase = 2000;
bool isBlockingPoolWorker(std::int64_t worker) noexcept;
// How every tool and panel names a thread: "worker 3", "blocking pool
// thread 0" (worker 2000), or "thread 5" (trace thread 5, worker unknown).
std::string threadDisplayName(std::int64_t worker, std::uint32_t thread);

// "812 ns", "3.25 us", "40.98 ms", "1.204 s", "-3.25 us": the one duration
// format of the tools and the viewer (the viewer's ruler labels its ticks
// at the ruler's own step instead, time_view.hpp).
std::string formatDuration(std::int64_t ns);
// "1,234,567".
std::string formatCount(std::uint64_t value);

} // namespace fiberscope::trace
