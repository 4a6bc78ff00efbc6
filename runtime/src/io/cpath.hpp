// CPath: a path argument made into the NUL-terminated string the kernel
// wants, on the calling fiber's stack (no allocation), with the argument
// errors caught before any syscall. Shared by the file and directory calls.
#pragma once

#include <limits.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "fiberscope/result.hpp"

namespace fiberscope::detail {

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

} // namespace fiberscope::detail
