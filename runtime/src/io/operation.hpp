// Operation: one I/O request described apart from the backend that runs it.
//
// Every EventLoop I/O call (files, sockets, timers) fills in an Operation and
// calls execute(), which suspends the calling fiber until the operation is
// done. The io_uring backend turns it into one SQE (plus a linked timeout);
// a readiness backend would run the same request as a non-blocking syscall
// retried on readiness. The opcode is the io_uring opcode number on every
// backend: it is what the trace records and the viewer names.
#pragma once

#include <liburing.h>
#include <sys/socket.h>

#include <cstdint>

#include "fiber/fiber.hpp"
#include "fiberscope/clock.hpp"
#include "fiberscope/result.hpp"

namespace fiberscope::detail {

// Operation::offset for streams (pipes, sockets, terminals): use and advance
// the file position, as read(2)/write(2) do.
inline constexpr std::uint64_t kCurrentPosition = ~std::uint64_t{0};

struct Operation {
    std::uint8_t opcode = IORING_OP_NOP;
    int fd = -1;
    // The buffer (read, write, recv, send), iovec array (readv, writev),
    // msghdr (sendmsg, recvmsg),
    // sockaddr (bind, connect, accept), path (openat) or
    // __kernel_timespec (timeout). Must stay valid until execute() returns.
    void* address = nullptr;
    // Bytes, iovec count, sockaddr size (bind, connect) or backlog (listen).
    std::uint64_t length = 0;
    // File offset (read, write, readv, writev).
    std::uint64_t offset = kCurrentPosition;
    // accept: in/out size of the sockaddr at `address`.
    socklen_t* address_size = nullptr;
    // openat flags, MSG_* flags, accept4 flags, shutdown's how, socket type,
    // or IORING_TIMEOUT_* flags.
    int flags = 0;
    // openat mode; socket protocol.
    unsigned mode = 0;
    // socket: the address family.
    int domain = 0;
    // renameat: the new path and its directory fd; statx: the struct statx
    // to fill (its path is `address`, its field mask `mode`).
    void* address2 = nullptr;
    int fd2 = -1;
    // A limit on the wait, in nanoseconds (< 0: none). Past it the operation
    // is withdrawn and completes with -ETIMEDOUT.
    std::int64_t timeout_ns = -1;
    // Runs in a cancel region (cancel.hpp): a cancel withdraws it and it
    // completes with -ECANCELED. Close is the one operation that is not.
    bool cancelable = true;
};

// Most bytes Linux moves in one read/write, and most iovecs in one call.
inline constexpr std::size_t kMaxTransfer = 0x7ffff000;
inline constexpr std::size_t kMaxVectors = 1024; // IOV_MAX

// Operation::timeout_ns for a Timeout.
inline std::int64_t timeoutNanoseconds(Timeout timeout) noexcept {
    return timeout.limited() ? timeout.duration.count() : -1;
}

// Runs `op` for the calling fiber and suspends until it is done. Returns the
// completion (result >= 0 or -errno), or Canceled if the fiber had been
// canceled before anything was started.
Result<Completion> execute(const Operation& op);

// The two backends' execute(), for the calling fiber on `thread`:
// uring_io.cpp and poller.cpp.
struct Thread;
Result<Completion> uringExecute(const Operation& op, Thread* thread);
Result<Completion> pollerExecute(const Operation& op, Thread* thread);

// Closes any descriptor through execute() (not cancelable).
Status closeDescriptor(int fd);

} // namespace fiberscope::detail
