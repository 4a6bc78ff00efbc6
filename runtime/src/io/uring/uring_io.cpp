// execute() on io_uring: one SQE per operation, tagged with the waiting
// fiber, plus an IORING_OP_LINK_TIMEOUT when the operation has a limit.
//
// The fiber queues its SQE and switches away; the SQE reaches the kernel when
// its thread next enters it (the idle loop, batched with others, or
// pollDriver), and the completion resumes the fiber (io/driver.cpp reaps it). A timeout is
// a second SQE linked to the first (IOSQE_IO_LINK): whichever finishes first
// cancels the other. The kernel reports the withdrawn operation as
// -ECANCELED, which execute() turns into -ETIMEDOUT unless the fiber really
// was canceled.
#include "io/cancel.hpp"
#include "loop.hpp"
#include "io/operation.hpp"
#include "io/uring/ring.hpp"
#include "scheduler/scheduler.hpp"
#include "io/syscall_io.hpp"
#include "scheduler/worker.hpp"
#include "support/tracing.hpp"

namespace fiberscope::detail {

static void prepare(io_uring_sqe* sqe, const Operation& op) {
    const auto length = static_cast<unsigned>(op.length);
    switch (op.opcode) {
    case IORING_OP_OPENAT:
        io_uring_prep_openat(sqe, op.fd, static_cast<const char*>(op.address), op.flags, op.mode);
        break;
    case IORING_OP_CLOSE: io_uring_prep_close(sqe, op.fd); break;
    case IORING_OP_READ: io_uring_prep_read(sqe, op.fd, op.address, length, op.offset); break;
    case IORING_OP_WRITE: io_uring_prep_write(sqe, op.fd, op.address, length, op.offset); break;
    case IORING_OP_READV:
        io_uring_prep_readv(sqe, op.fd, static_cast<const iovec*>(op.address), length, op.offset);
        break;
    case IORING_OP_WRITEV:
        io_uring_prep_writev(sqe, op.fd, static_cast<const iovec*>(op.address), length, op.offset);
        break;
    case IORING_OP_SOCKET: io_uring_prep_socket(sqe, op.domain, op.flags, static_cast<int>(op.mode), 0); break;
    case kOpBind:
        // The kernel's layout (io_bind_prep): sockaddr in addr, its size in addr2.
        sqe->opcode = kOpBind;
        sqe->fd = op.fd;
        sqe->addr = reinterpret_cast<std::uint64_t>(op.address);
        sqe->addr2 = op.length;
        break;
    case kOpListen:
        sqe->opcode = kOpListen;
        sqe->fd = op.fd;
        sqe->len = length;
        break;
    case IORING_OP_ACCEPT:
        io_uring_prep_accept(sqe, op.fd, static_cast<sockaddr*>(op.address), op.address_size, op.flags);
        break;
    case IORING_OP_CONNECT:
        io_uring_prep_connect(sqe, op.fd, static_cast<const sockaddr*>(op.address), static_cast<socklen_t>(op.length));
        break;
    case IORING_OP_RECV:
        io_uring_prep_recv(sqe, op.fd, op.address, op.length, op.flags);
        break;
    case IORING_OP_SEND: io_uring_prep_send(sqe, op.fd, op.address, op.length, op.flags); break;
    case IORING_OP_SENDMSG: io_uring_prep_sendmsg(sqe, op.fd, static_cast<const msghdr*>(op.address), op.flags); break;
    case IORING_OP_RECVMSG: io_uring_prep_recvmsg(sqe, op.fd, static_cast<msghdr*>(op.address), op.flags); break;
    case IORING_OP_SHUTDOWN: io_uring_prep_shutdown(sqe, op.fd, op.flags); break;
    case IORING_OP_STATX:
        io_uring_prep_statx(sqe, op.fd, static_cast<const char*>(op.address), op.flags, op.mode,
                            static_cast<struct statx*>(op.address2));
        break;
    case IORING_OP_UNLINKAT: io_uring_prep_unlinkat(sqe, op.fd, static_cast<const char*>(op.address), op.flags); break;
    case IORING_OP_RENAMEAT:
        io_uring_prep_renameat(sqe, op.fd, static_cast<const char*>(op.address), op.fd2,
                               static_cast<const char*>(op.address2), 0);
        break;
    case IORING_OP_MKDIRAT: io_uring_prep_mkdirat(sqe, op.fd, static_cast<const char*>(op.address), op.mode); break;
    case IORING_OP_FSYNC: io_uring_prep_fsync(sqe, op.fd, static_cast<unsigned>(op.flags)); break;
    case kOpFtruncate:
        // The kernel's layout (io_ftruncate_prep): the new length in off.
        io_uring_prep_nop(sqe);
        sqe->opcode = kOpFtruncate;
        sqe->fd = op.fd;
        sqe->off = op.offset;
        break;
    case IORING_OP_POLL_ADD: io_uring_prep_poll_add(sqe, op.fd, static_cast<unsigned>(op.flags)); break;
    case kOpWaitid: // the kernel's layout (io_waitid_prep), as liburing 2.5's io_uring_prep_waitid
        io_uring_prep_rw(kOpWaitid, sqe, op.fd, nullptr, length, 0);
        sqe->file_index = static_cast<unsigned>(op.flags);
        sqe->addr2 = reinterpret_cast<std::uint64_t>(op.address);
        break;
    case IORING_OP_TIMEOUT:
        io_uring_prep_timeout(sqe, static_cast<__kernel_timespec*>(op.address), 0, static_cast<unsigned>(op.flags));
        break;
    default: io_uring_prep_nop(sqe); break;
    }
}

Result<Completion> uringExecute(const Operation& op, Thread* thread) {
    Fiber* fiber = thread->currentFiber();
    // An operation the kernel's io_uring lacks (bind and listen before 6.11,
    // socket before 5.19) is done right here: none of them blocks.
    if (op.opcode < 64 && !(thread->loop->ring_opcodes & (std::uint64_t{1} << op.opcode))) {
        if (op.opcode == kOpBind || op.opcode == kOpListen || op.opcode == IORING_OP_SOCKET)
            return performInline(op, fiber->id);
        // The file and directory opcodes a ring may lack (FTRUNCATE before
        // 6.9; the others predate the 5.18 the loop needs, but a sandbox's
        // ring may offer fewer): a plain syscall, which may block this
        // worker for the length of a disk access.
        switch (op.opcode) {
        case IORING_OP_STATX: case IORING_OP_UNLINKAT: case IORING_OP_RENAMEAT: case IORING_OP_MKDIRAT:
        case IORING_OP_FSYNC: case kOpFtruncate:
            return performInline(op, fiber->id);
        default: break;
        }
    }
    // No io_uring opcode reads a directory: getdents64 is a plain syscall.
    if (op.opcode == kOpGetdents64) return performInline(op, fiber->id);
    if (op.cancelable)
        if (auto entered = enterCancelRegion(fiber, thread); !entered) return entered.error();
    const bool limited = op.timeout_ns >= 0;
    __kernel_timespec limit{};
    // Both entries must reach the kernel in one submission, or the link breaks.
    if (limited) thread->driver.ring.reserve(2);
    io_uring_sqe* sqe = thread->driver.ring.sqe();
    prepare(sqe, op);
    sqe->user_data = reinterpret_cast<std::uint64_t>(fiber);
    fiber->last_opcode = op.opcode;
    FIBERSCOPE_TRACE_EVENT(emit::submit(now, fiber->id, op.opcode, op.fd));
    if (limited) {
        sqe->flags |= IOSQE_IO_LINK;
        limit.tv_sec = op.timeout_ns / 1'000'000'000;
        limit.tv_nsec = op.timeout_ns % 1'000'000'000;
        // `limit` lives on this fiber's stack, which stays put until we are
        // resumed; the kernel reads it when the entry is submitted.
        io_uring_sqe* timer = thread->driver.ring.sqe();
        io_uring_prep_link_timeout(timer, &limit, 0);
        // Its own completion (-ETIME or -ECANCELED) says nothing we need.
        timer->user_data = static_cast<std::uint64_t>(RingTag::cleanup);
    }
    yield(nullptr, PendingTask::nothing, trace::SwitchReason::IoWait);
    // `thread` is the ring that held the operation (the fiber may have
    // resumed elsewhere): the cancel region was entered with it.
    if (op.cancelable) exitCancelRegion(fiber, thread);
    Completion done = fiber->completion;
    // acquire: pairs with the canceler's exchange, as in cancelRequested().
    if (limited && done.result == -ECANCELED && fiber->cancel_thread.load(std::memory_order_acquire) != kCanceling)
        done.result = -ETIMEDOUT;
    return done;
}

} // namespace fiberscope::detail
