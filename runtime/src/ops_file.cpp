// File operations through io_uring: openat, close, read, write.
#include <fcntl.h>
#include <limits.h>

#include <cstring>

#include "errors.hpp"
#include "fiberscope/event_loop.hpp"
#include "ops.hpp"

namespace fiberscope {

using namespace detail;

namespace {
// A NUL-terminated copy of `path` on the fiber's stack.
struct CPath {
    char bytes[PATH_MAX];
    Status status;
    explicit CPath(std::string_view path) {
        if (path.size() >= sizeof bytes) status = Error{Errc::NameTooLong, ENAMETOOLONG};
        else if (path.find('\0') != std::string_view::npos || path.empty()) status = Error{Errc::InvalidArgument, EINVAL};
        else {
            std::memcpy(bytes, path.data(), path.size());
            bytes[path.size()] = 0;
        }
    }
};

Result<File> openAt(Dir dir, const CPath& path, int flags, unsigned mode) {
    if (!path.status) return path.status.error();
    auto done = perform(true, [&](io_uring_sqe* sqe) { io_uring_prep_openat(sqe, dir.fd, path.bytes, flags, mode); });
    if (!done) return done.error();
    if (done->result < 0) return openError(-done->result);
    return File{done->result};
}

constexpr std::size_t kMaxTransfer = 0x7ffff000; // what Linux moves in one read/write
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

Status EventLoop::close(File file) {
    if (file.fd < 0) return Error{Errc::BadFileDescriptor, EBADF};
    // Not cancelable: a close always completes, and the fd is gone either way.
    auto done = perform(false, [&](io_uring_sqe* sqe) { io_uring_prep_close(sqe, file.fd); });
    if (!done) return done.error();
    if (done->result < 0) return closeError(-done->result);
    return {};
}

Result<std::size_t> EventLoop::pread(File file, std::span<std::byte> buffer, std::uint64_t offset) {
    const unsigned length = static_cast<unsigned>(std::min(buffer.size(), kMaxTransfer));
    auto done = perform(true, [&](io_uring_sqe* sqe) { io_uring_prep_read(sqe, file.fd, buffer.data(), length, offset); });
    if (!done) return done.error();
    if (done->result < 0) return readError(-done->result);
    return static_cast<std::size_t>(done->result);
}

Result<std::size_t> EventLoop::pwrite(File file, std::span<const std::byte> buffer, std::uint64_t offset) {
    const unsigned length = static_cast<unsigned>(std::min(buffer.size(), kMaxTransfer));
    auto done = perform(true, [&](io_uring_sqe* sqe) { io_uring_prep_write(sqe, file.fd, buffer.data(), length, offset); });
    if (!done) return done.error();
    if (done->result < 0) return writeError(-done->result);
    return static_cast<std::size_t>(done->result);
}

} // namespace fiberscope
