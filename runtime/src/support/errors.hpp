// errno -> Errc, per family of operations (the seeds' switch statements).
// A negative completion result is -errno.
#pragma once

#include "fiberscope/result.hpp"

namespace fiberscope::detail {

Error openError(int err);
Error readError(int err);
Error writeError(int err);
Error closeError(int err);
// Paths, metadata and directories (stat, unlink, rename, mkdir, rmdir,
// getdents, ftruncate, fsync): openError's names, and ENOTEMPTY, EROFS,
// EXDEV, EMLINK.
Error pathError(int err);
Error timerError(int err);
// Sockets: every errno the socket calls document, named (see Errc).
Error socketError(int err);
// getaddrinfo's EAI_* code as an Errc (`err`: errno, for EAI_SYSTEM).
Error resolveError(int eai, int err);
// Creating a kernel object (an epoll instance, an eventfd, a ring): EMFILE,
// ENOMEM, EPERM (seccomp), ... each named as what it is.
Error systemError(int err);
[[noreturn]] void fatal(const char* what, int err);

} // namespace fiberscope::detail
