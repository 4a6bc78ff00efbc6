// Operations as plain syscalls (see syscall_io.hpp).
#include "io/syscall_io.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "support/tracing.hpp"

namespace fiberscope::detail {

static int resultOf(long result) noexcept { return result < 0 ? -errno : static_cast<int>(result); }

int performSyscall(const Operation& op) noexcept {
    const bool positional = op.offset != kCurrentPosition;
    const auto offset = static_cast<off_t>(op.offset);
    const auto length = static_cast<std::size_t>(op.length);
    switch (op.opcode) {
    case IORING_OP_NOP: return 0;
    case IORING_OP_OPENAT: return resultOf(::openat(op.fd, static_cast<const char*>(op.address), op.flags, op.mode));
    case IORING_OP_CLOSE: return resultOf(::close(op.fd));
    case IORING_OP_READ:
        return resultOf(positional ? ::pread(op.fd, op.address, length, offset) : ::read(op.fd, op.address, length));
    case IORING_OP_WRITE:
        return resultOf(positional ? ::pwrite(op.fd, op.address, length, offset) : ::write(op.fd, op.address, length));
    case IORING_OP_READV: {
        const auto* iov = static_cast<const iovec*>(op.address);
        return resultOf(positional ? ::preadv(op.fd, iov, static_cast<int>(length), offset)
                                   : ::readv(op.fd, iov, static_cast<int>(length)));
    }
    case IORING_OP_WRITEV: {
        const auto* iov = static_cast<const iovec*>(op.address);
        return resultOf(positional ? ::pwritev(op.fd, iov, static_cast<int>(length), offset)
                                   : ::writev(op.fd, iov, static_cast<int>(length)));
    }
    case IORING_OP_SOCKET: return resultOf(::socket(op.domain, op.flags, static_cast<int>(op.mode)));
    case kOpBind: return resultOf(::bind(op.fd, static_cast<const sockaddr*>(op.address), static_cast<socklen_t>(op.length)));
    case kOpListen: return resultOf(::listen(op.fd, static_cast<int>(op.length)));
    case IORING_OP_ACCEPT: return resultOf(::accept4(op.fd, static_cast<sockaddr*>(op.address), op.address_size, op.flags));
    case IORING_OP_CONNECT:
        return resultOf(::connect(op.fd, static_cast<const sockaddr*>(op.address), static_cast<socklen_t>(op.length)));
    case IORING_OP_RECV: return resultOf(::recv(op.fd, op.address, length, op.flags));
    case IORING_OP_SEND: return resultOf(::send(op.fd, op.address, length, op.flags));
    case IORING_OP_SENDMSG: return resultOf(::sendmsg(op.fd, static_cast<const msghdr*>(op.address), op.flags));
    case IORING_OP_RECVMSG: return resultOf(::recvmsg(op.fd, static_cast<msghdr*>(op.address), op.flags));
    case IORING_OP_SHUTDOWN: return resultOf(::shutdown(op.fd, op.flags));
    case kOpWaitid: { // never blocks: -EAGAIN (retry on the pidfd's readiness) while the child runs
        auto* info = static_cast<siginfo_t*>(op.address);
        info->si_pid = 0;
        if (::waitid(static_cast<idtype_t>(op.length), static_cast<id_t>(op.fd), info, op.flags | WNOHANG) < 0)
            return -errno;
        return info->si_pid == 0 ? -EAGAIN : 0;
    }
    case IORING_OP_STATX:
        return resultOf(::statx(op.fd, static_cast<const char*>(op.address), op.flags, op.mode,
                                static_cast<struct statx*>(op.address2)));
    case IORING_OP_UNLINKAT: return resultOf(::unlinkat(op.fd, static_cast<const char*>(op.address), op.flags));
    case IORING_OP_RENAMEAT:
        return resultOf(::renameat(op.fd, static_cast<const char*>(op.address), op.fd2,
                                   static_cast<const char*>(op.address2)));
    case IORING_OP_MKDIRAT: return resultOf(::mkdirat(op.fd, static_cast<const char*>(op.address), op.mode));
    case IORING_OP_FSYNC: return resultOf((op.flags & IORING_FSYNC_DATASYNC) ? ::fdatasync(op.fd) : ::fsync(op.fd));
    case kOpFtruncate: return resultOf(::ftruncate(op.fd, offset));
    // glibc's getdents64 wrapper is 2.30+; the syscall itself is the same.
    case kOpGetdents64: return resultOf(::syscall(SYS_getdents64, op.fd, op.address, length));
    default: return -EOPNOTSUPP;
    }
}

Completion performInline(const Operation& op, std::uint64_t fiber_id) noexcept {
    const std::uint64_t started = trace::enabled() ? trace::now() : 0;
    const int result = performSyscall(op);
    FIBERSCOPE_TRACE_EVENT(emit::submit(started, fiber_id, op.opcode, op.fd);
                           emit::complete(started, fiber_id, op.opcode, result));
    return Completion{result, 0};
}

} // namespace fiberscope::detail
