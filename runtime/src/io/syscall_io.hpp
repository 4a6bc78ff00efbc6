// The plain-syscall form of an Operation: what a readiness backend runs
// (retrying on EAGAIN once the fd is ready), and what the io_uring backend
// runs for operations the kernel's io_uring lacks (bind/listen before 6.11).
#pragma once

#include "io/operation.hpp"

namespace fiberscope::detail {

// io_uring opcode numbers newer than Debian 12's liburing headers (Linux 6.11).
inline constexpr std::uint8_t kOpBind = 56;
inline constexpr std::uint8_t kOpListen = 57;
// IORING_OP_WAITID (Linux 6.7): idtype in length, id in fd, options in
// flags, the siginfo_t at address. As a syscall it is waitid(WNOHANG):
// -EAGAIN while the child runs.
inline constexpr std::uint8_t kOpWaitid = 50;
// IORING_OP_FTRUNCATE (Linux 6.9): the length in the SQE's off field.
inline constexpr std::uint8_t kOpFtruncate = 55;
// An operation io_uring has no opcode for, numbered for the trace only:
// far past any kernel opcode (the tracer and viewer name it).
inline constexpr std::uint8_t kOpGetdents64 = 200;
// EventLoop::resolve: getaddrinfo on a blocking-pool thread (blocking_pool.hpp).
inline constexpr std::uint8_t kOpResolve = 210;

// Performs `op` with one syscall on the calling thread. Returns the result
// (>= 0) or -errno. Timeouts are the caller's business.
int performSyscall(const Operation& op) noexcept;

// performSyscall for an operation that never blocks, done in place by fiber
// `fiber_id`: traced as a submit and a completion at one instant.
Completion performInline(const Operation& op, std::uint64_t fiber_id) noexcept;

} // namespace fiberscope::detail
