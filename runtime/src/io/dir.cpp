// Metadata, sizes and durability of files, and directories: statx,
// ftruncate, fsync/fdatasync, unlinkat, renameat, mkdirat,
// openat(O_DIRECTORY) and getdents64.
//
// Each call is one Operation through execute(), so it is traced as a submit
// and completion of its opcode and runs however the loop's backend runs it:
// an io_uring opcode where the ring has one (a plain syscall where the
// kernel lacks it, see uringExecute), a blocking-pool job on epoll.
// getdents64 has no io_uring opcode at all; it carries the runtime's own
// number, kOpGetdents64, so that the trace can still name it.
//
// Directory reading keeps no state in the runtime: the caller's DirIterator
// holds the buffer getdents64 fills and the position in it, so a directory
// of any size costs no allocation, and one operation per buffer-full.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstddef>
#include <cstring>

#include "io/cpath.hpp"
#include "support/errors.hpp"
#include "fiberscope/event_loop.hpp"
#include "io/operation.hpp"
#include "io/syscall_io.hpp"

namespace fiberscope {

using namespace detail;

namespace {

FileKind kindOfMode(unsigned mode) {
    switch (mode & S_IFMT) {
    case S_IFREG: return FileKind::regular;
    case S_IFDIR: return FileKind::directory;
    case S_IFLNK: return FileKind::symlink;
    case S_IFIFO: return FileKind::fifo;
    case S_IFSOCK: return FileKind::socket;
    case S_IFCHR: return FileKind::character_device;
    case S_IFBLK: return FileKind::block_device;
    default: return FileKind::other;
    }
}

FileKind kindOfType(unsigned char type) {
    switch (type) {
    case DT_UNKNOWN: return FileKind::unknown;
    case DT_REG: return FileKind::regular;
    case DT_DIR: return FileKind::directory;
    case DT_LNK: return FileKind::symlink;
    case DT_FIFO: return FileKind::fifo;
    case DT_SOCK: return FileKind::socket;
    case DT_CHR: return FileKind::character_device;
    case DT_BLK: return FileKind::block_device;
    default: return FileKind::other;
    }
}

Timestamp timestampOf(const struct statx_timestamp& t) {
    return std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec);
}

// Runs `op`; a negative result is named by pathError.
Status run(const Operation& op) {
    auto done = execute(op);
    if (!done) return done.error();
    if (done->result < 0) return pathError(-done->result);
    return {};
}

Result<FileStat> statAt(int fd, const char* path, int flags) {
    struct statx buffer {};
    // AT_STATX_SYNC_AS_STAT: what stat(2) reports, no forced network sync.
    Operation op{.opcode = IORING_OP_STATX, .fd = fd, .address = const_cast<char*>(path),
                 .flags = flags | AT_STATX_SYNC_AS_STAT, .mode = STATX_BASIC_STATS, .address2 = &buffer};
    if (auto done = run(op); !done) return done.error();
    FileStat stat;
    stat.size = buffer.stx_size;
    stat.kind = kindOfMode(buffer.stx_mode);
    stat.mode = buffer.stx_mode & 07777u;
    stat.inode = buffer.stx_ino;
    stat.links = buffer.stx_nlink;
    stat.modified = timestampOf(buffer.stx_mtime);
    stat.accessed = timestampOf(buffer.stx_atime);
    stat.changed = timestampOf(buffer.stx_ctime);
    return stat;
}

Status unlinkAt(Dir dir, std::string_view path, int flags) {
    CPath c_path(path);
    if (!c_path.status) return c_path.status;
    return run(Operation{.opcode = IORING_OP_UNLINKAT, .fd = dir.fd, .address = c_path.bytes, .flags = flags});
}

Status syncFile(File file, int flags) {
    if (file.fd < 0) return Error{Errc::BadFileDescriptor, EBADF};
    return run(Operation{.opcode = IORING_OP_FSYNC, .fd = file.fd, .flags = flags});
}

} // namespace

Result<FileStat> EventLoop::stat(File file) {
    // A negative fd would be AT_FDCWD (the working directory) or EBADF.
    if (file.fd < 0) return Error{Errc::BadFileDescriptor, EBADF};
    return statAt(file.fd, "", AT_EMPTY_PATH);
}

Result<FileStat> EventLoop::stat(std::string_view path, Dir dir, StatFlags flags) {
    CPath c_path(path);
    if (!c_path.status) return c_path.status.error();
    return statAt(dir.fd, c_path.bytes, flags.follow_symlinks ? 0 : AT_SYMLINK_NOFOLLOW);
}

Result<std::uint64_t> EventLoop::length(File file) {
    auto stat = this->stat(file);
    if (!stat) return stat.error();
    return stat->size;
}

Status EventLoop::setLength(File file, std::uint64_t length) {
    if (file.fd < 0) return Error{Errc::BadFileDescriptor, EBADF};
    // off_t is signed: a length past its range is one no file can have.
    if (length > static_cast<std::uint64_t>(LLONG_MAX)) return Error{Errc::FileTooBig, EFBIG};
    return run(Operation{.opcode = kOpFtruncate, .fd = file.fd, .offset = length});
}

Status EventLoop::sync(File file) { return syncFile(file, 0); }

Status EventLoop::syncData(File file) { return syncFile(file, IORING_FSYNC_DATASYNC); }

Status EventLoop::deleteFile(std::string_view path, Dir dir) { return unlinkAt(dir, path, 0); }

Status EventLoop::deleteDir(std::string_view path, Dir dir) {
    auto deleted = unlinkAt(dir, path, AT_REMOVEDIR);
    // POSIX lets rmdir say EEXIST for a directory that is not empty.
    if (!deleted && deleted.error().sys_errno == EEXIST) return Error{Errc::DirectoryNotEmpty, EEXIST};
    return deleted;
}

Status EventLoop::rename(std::string_view from, std::string_view to, Dir from_dir, Dir to_dir) {
    CPath c_from(from);
    if (!c_from.status) return c_from.status;
    CPath c_to(to);
    if (!c_to.status) return c_to.status;
    return run(Operation{.opcode = IORING_OP_RENAMEAT, .fd = from_dir.fd, .address = c_from.bytes,
                         .address2 = c_to.bytes, .fd2 = to_dir.fd});
}

Status EventLoop::makeDir(std::string_view path, unsigned mode, Dir dir) {
    CPath c_path(path);
    if (!c_path.status) return c_path.status;
    return run(Operation{.opcode = IORING_OP_MKDIRAT, .fd = dir.fd, .address = c_path.bytes, .mode = mode});
}

Result<Dir> EventLoop::openDir(std::string_view path, Dir dir) {
    CPath c_path(path);
    if (!c_path.status) return c_path.status.error();
    Operation op{.opcode = IORING_OP_OPENAT, .fd = dir.fd, .address = c_path.bytes,
                 .flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC};
    auto done = execute(op);
    if (!done) return done.error();
    if (done->result < 0) return pathError(-done->result);
    return Dir{done->result};
}

Status EventLoop::close(Dir dir) { return closeDescriptor(dir.fd); }

Result<std::optional<DirEntry>> EventLoop::readDir(DirIterator& it) {
    // The records getdents64 writes are struct dirent64's layout, each
    // d_reclen bytes long; read through memcpy, since the caller's buffer
    // need not be aligned.
    constexpr std::size_t kName = offsetof(struct dirent64, d_name);
    for (;;) {
        while (it.next_ < it.end_) {
            const std::byte* record = it.buffer_.data() + it.next_;
            std::uint64_t inode;
            unsigned short size;
            unsigned char type;
            std::memcpy(&inode, record + offsetof(struct dirent64, d_ino), sizeof inode);
            std::memcpy(&size, record + offsetof(struct dirent64, d_reclen), sizeof size);
            std::memcpy(&type, record + offsetof(struct dirent64, d_type), sizeof type);
            if (size <= kName || size > it.end_ - it.next_) {
                // Not what the kernel writes: stop rather than read past it.
                it.next_ = it.end_;
                it.finished_ = true;
                return Error{Errc::Unexpected, 0};
            }
            it.next_ += size;
            const char* name = reinterpret_cast<const char*>(record + kName);
            const std::string_view view(name, strnlen(name, size - kName));
            if (view == "." || view == "..") continue;
            return std::optional<DirEntry>(DirEntry{view, kindOfType(type), inode});
        }
        if (it.finished_) return std::optional<DirEntry>();
        if (it.buffer_.size() < DirIterator::kMinBuffer) return Error{Errc::InvalidArgument, EINVAL};
        const std::size_t capacity = std::min<std::size_t>(it.buffer_.size(), INT_MAX);
        Operation op{.opcode = kOpGetdents64, .fd = it.dir_.fd, .address = it.buffer_.data(), .length = capacity};
        auto done = execute(op);
        if (!done) return done.error();
        if (done->result < 0) return pathError(-done->result);
        it.next_ = 0;
        it.end_ = static_cast<std::size_t>(done->result);
        if (it.end_ == 0) it.finished_ = true;
    }
}

} // namespace fiberscope
