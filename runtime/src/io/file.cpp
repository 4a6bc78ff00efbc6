// File operations: openat, close, read, write, readv, writev.
#include <fcntl.h>

#include "io/cpath.hpp"
#include "support/errors.hpp"
#include "fiberscope/event_loop.hpp"
#include "io/operation.hpp"

namespace fiberscope {

using namespace detail;

namespace {
Result<File> openAt(Dir dir, CPath& path, int flags, unsigned mode) {
    if (!path.status) return path.status.error();
    Operation op{.opcode = IORING_OP_OPENAT, .fd = dir.fd, .address = path.bytes, .flags = flags, .mode = mode};
    auto done = execute(op);
    if (!done) return done.error();
    if (done->result < 0) return openError(-done->result);
    return File{done->result};
}


Result<std::size_t> transfer(std::uint8_t opcode, int fd, void* address, std::size_t length, std::uint64_t offset,
                             Timeout timeout, bool reading) {
    Operation op{.opcode = opcode, .fd = fd, .address = address, .length = length, .offset = offset,
                 .timeout_ns = timeoutNanoseconds(timeout)};
    auto done = execute(op);
    if (!done) return done.error();
    if (done->result < 0) return reading ? readError(-done->result) : writeError(-done->result);
    return static_cast<std::size_t>(done->result);
}
} // namespace

Result<File> EventLoop::createFile(std::string_view path, CreateFlags flags, Dir dir) {
    CPath c_path(path);
    int os_flags = O_CREAT | O_CLOEXEC | O_LARGEFILE | (flags.read ? O_RDWR : O_WRONLY);
    if (flags.truncate) os_flags |= O_TRUNC;
    if (flags.exclusive) os_flags |= O_EXCL;
    return openAt(dir, c_path, os_flags, flags.mode);
}

Result<File> EventLoop::openFile(std::string_view path, OpenFlags flags, Dir dir) {
    CPath c_path(path);
    int os_flags = O_CLOEXEC | O_LARGEFILE | O_NOCTTY;
    switch (flags.mode) {
    case OpenMode::read_only: os_flags |= O_RDONLY; break;
    case OpenMode::write_only: os_flags |= O_WRONLY; break;
    case OpenMode::read_write: os_flags |= O_RDWR; break;
    }
    return openAt(dir, c_path, os_flags, 0);
}

Status detail::closeDescriptor(int fd) {
    if (fd < 0) return Error{Errc::BadFileDescriptor, EBADF};
    // Not cancelable: a close always completes, and the fd is gone either way.
    Operation op{.opcode = IORING_OP_CLOSE, .fd = fd, .cancelable = false};
    auto done = execute(op);
    if (!done) return done.error();
    if (done->result < 0) return closeError(-done->result);
    return {};
}

Status EventLoop::close(File file) { return closeDescriptor(file.fd); }

Result<std::size_t> EventLoop::pread(File file, std::span<std::byte> buffer, std::uint64_t offset, Timeout timeout) {
    return transfer(IORING_OP_READ, file.fd, buffer.data(), std::min(buffer.size(), kMaxTransfer), offset, timeout, true);
}

Result<std::size_t> EventLoop::pwrite(File file, std::span<const std::byte> buffer, std::uint64_t offset, Timeout timeout) {
    return transfer(IORING_OP_WRITE, file.fd, const_cast<std::byte*>(buffer.data()), std::min(buffer.size(), kMaxTransfer),
                    offset, timeout, false);
}

Result<std::size_t> EventLoop::read(File file, std::span<std::byte> buffer, Timeout timeout) {
    return transfer(IORING_OP_READ, file.fd, buffer.data(), std::min(buffer.size(), kMaxTransfer), kCurrentPosition,
                    timeout, true);
}

Result<std::size_t> EventLoop::write(File file, std::span<const std::byte> buffer, Timeout timeout) {
    return transfer(IORING_OP_WRITE, file.fd, const_cast<std::byte*>(buffer.data()), std::min(buffer.size(), kMaxTransfer),
                    kCurrentPosition, timeout, false);
}

Result<std::size_t> EventLoop::preadv(File file, std::span<const iovec> buffers, std::uint64_t offset, Timeout timeout) {
    if (buffers.size() > kMaxVectors) return Error{Errc::InvalidArgument, EINVAL};
    return transfer(IORING_OP_READV, file.fd, const_cast<iovec*>(buffers.data()), buffers.size(), offset, timeout, true);
}

Result<std::size_t> EventLoop::pwritev(File file, std::span<const iovec> buffers, std::uint64_t offset, Timeout timeout) {
    if (buffers.size() > kMaxVectors) return Error{Errc::InvalidArgument, EINVAL};
    return transfer(IORING_OP_WRITEV, file.fd, const_cast<iovec*>(buffers.data()), buffers.size(), offset, timeout, false);
}


} // namespace fiberscope
