// Files: plain descriptors, opened and used through the event loop's ring.
#pragma once

#include <fcntl.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "fiberscope/clock.hpp"

namespace fiberscope {

// An open file. Plain data: closing it is explicit (EventLoop::close), since
// closing is itself an operation that can be awaited and can fail.
struct File {
    int fd = -1;
    bool valid() const noexcept { return fd >= 0; }
};

// The directory a relative path is resolved against: the working directory
// (cwd), or one opened with EventLoop::openDir (closed with close(Dir)).
struct Dir {
    int fd = AT_FDCWD;
    static Dir cwd() noexcept { return Dir{}; }
};

enum class OpenMode { read_only, write_only, read_write };

struct OpenFlags {
    OpenMode mode = OpenMode::read_only;
};

struct CreateFlags {
    bool read = false;      // also open for reading
    bool truncate = true;   // truncate an existing file
    bool exclusive = false; // fail with PathAlreadyExists if it exists
    unsigned mode = 0666;   // permission bits for a new file (before umask)
};

// What a path names. `unknown` only in a DirEntry, when the filesystem does
// not say (DT_UNKNOWN): stat the entry to learn it. `other`: a type Linux
// has beyond these (a whiteout).
enum class FileKind { unknown, regular, directory, symlink, fifo, socket, character_device, block_device, other };

// What EventLoop::stat reports (statx(2)). Plain data. A field the
// filesystem does not provide is 0.
struct FileStat {
    std::uint64_t size = 0;  // bytes (a symlink: the length of its target)
    FileKind kind = FileKind::unknown;
    unsigned mode = 0;       // permission bits: 0777 plus setuid, setgid, sticky (07777)
    std::uint64_t inode = 0;
    std::uint64_t links = 0; // hard links
    // On the realtime clock (nanoseconds since the Unix epoch).
    Timestamp modified{};    // content last changed
    Timestamp accessed{};    // last read
    Timestamp changed{};     // inode (metadata) last changed
};

struct StatFlags {
    // false: a symlink is reported itself (kind symlink), as lstat(2) does.
    bool follow_symlinks = true;
};

// One directory entry (EventLoop::readDir). `name` points into the
// DirIterator's buffer and is NUL-terminated there (name.data() can go to a
// C API): it stays valid until the next readDir call on the same iterator,
// which may refill the buffer. Copy it to keep it longer.
struct DirEntry {
    std::string_view name;
    FileKind kind = FileKind::unknown;
    std::uint64_t inode = 0;
};

// Reads a directory opened with EventLoop::openDir, getdents64(2) filling
// the caller's buffer: no allocation in the runtime, and each refill is one
// traced operation returning as many entries as fit. "." and ".." are
// skipped. The iterator does not own the Dir (close it after iterating) and
// reads from the directory's file position: one iterator per open Dir at a
// time. Any size of at least kMinBuffer bytes works (a name is at most 255
// bytes); 8 KiB or more takes fewer refills for a large directory.
class DirIterator {
public:
    static constexpr std::size_t kMinBuffer = 280; // one dirent64 with a 255-byte name
    DirIterator(Dir dir, std::span<std::byte> buffer) noexcept : dir_(dir), buffer_(buffer) {}
    Dir dir() const noexcept { return dir_; }

private:
    friend class EventLoop;
    Dir dir_;
    std::span<std::byte> buffer_;
    std::size_t next_ = 0; // the next record in buffer_
    std::size_t end_ = 0;  // bytes the last refill returned
    bool finished_ = false;
};

} // namespace fiberscope
