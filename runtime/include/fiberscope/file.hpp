// Files: plain descriptors, opened and used through the event loop's ring.
#pragma once

#include <fcntl.h>

namespace fiberscope {

// An open file. Plain data: closing it is explicit (EventLoop::close), since
// closing is itself an operation that can be awaited and can fail.
struct File {
    int fd = -1;
    bool valid() const noexcept { return fd >= 0; }
};

// The directory a relative path is resolved against.
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

} // namespace fiberscope
