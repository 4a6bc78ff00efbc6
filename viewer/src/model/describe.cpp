// Words for numbers (see describe.hpp). The opcode table follows the kernel's
// enum io_uring_op (a stable ABI), so the model needs no liburing header.
#include "model/describe.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace fiberscope::viewer {

namespace {

struct OpInfo {
    const char* name;
    const char* noun;
};

constexpr OpInfo kOps[] = {
    {"NOP", "no-op"},
    {"READV", "read"},
    {"WRITEV", "write"},
    {"FSYNC", "fsync"},
    {"READ_FIXED", "read"},
    {"WRITE_FIXED", "write"},
    {"POLL_ADD", "poll"},
    {"POLL_REMOVE", "poll removal"},
    {"SYNC_FILE_RANGE", "sync_file_range"},
    {"SENDMSG", "sendmsg"},
    {"RECVMSG", "recvmsg"},
    {"TIMEOUT", "timer"},
    {"TIMEOUT_REMOVE", "timer removal"},
    {"ACCEPT", "accept"},
    {"ASYNC_CANCEL", "cancellation"},
    {"LINK_TIMEOUT", "linked timeout"},
    {"CONNECT", "connect"},
    {"FALLOCATE", "fallocate"},
    {"OPENAT", "open"},
    {"CLOSE", "close"},
    {"FILES_UPDATE", "files update"},
    {"STATX", "statx"},
    {"READ", "read"},
    {"WRITE", "write"},
    {"FADVISE", "fadvise"},
    {"MADVISE", "madvise"},
    {"SEND", "send"},
    {"RECV", "recv"},
    {"OPENAT2", "open"},
    {"EPOLL_CTL", "epoll_ctl"},
    {"SPLICE", "splice"},
    {"PROVIDE_BUFFERS", "buffer provision"},
    {"REMOVE_BUFFERS", "buffer removal"},
    {"TEE", "tee"},
    {"SHUTDOWN", "shutdown"},
    {"RENAMEAT", "rename"},
    {"UNLINKAT", "unlink"},
    {"MKDIRAT", "mkdir"},
    {"SYMLINKAT", "symlink"},
    {"LINKAT", "link"},
    {"MSG_RING", "ring message"},
    {"FSETXATTR", "fsetxattr"},
    {"SETXATTR", "setxattr"},
    {"FGETXATTR", "fgetxattr"},
    {"GETXATTR", "getxattr"},
    {"SOCKET", "socket"},
    {"URING_CMD", "uring command"},
    {"SEND_ZC", "zero-copy send"},
    {"SENDMSG_ZC", "zero-copy sendmsg"},
    {"READ_MULTISHOT", "multishot read"},
    {"WAITID", "waitid"},
    {"FUTEX_WAIT", "futex wait"},
    {"FUTEX_WAKE", "futex wake"},
    {"FUTEX_WAITV", "futex waitv"},
    {"FIXED_FD_INSTALL", "fixed fd install"},
    {"FTRUNCATE", "ftruncate"},
    {"BIND", "bind"},
    {"LISTEN", "listen"},
};
constexpr std::size_t kOpCount = sizeof kOps / sizeof kOps[0];

// Numbers the runtime gives operations io_uring has no opcode for (plain
// syscalls; runtime/src/syscall_io.hpp), past any kernel opcode.
struct InternalOp {
    std::uint8_t opcode;
    const char* name;
    const char* noun;
};
constexpr InternalOp kInternalOps[] = {
    {200, "getdents64 (a plain syscall: io_uring has no opcode for it)", "directory read"},
    {210, "resolve (getaddrinfo on a blocking-pool thread; the result is the number of addresses)", "name lookup"},
};

const InternalOp* internalOp(std::uint8_t opcode) {
    for (const InternalOp& op : kInternalOps)
        if (op.opcode == opcode) return &op;
    return nullptr;
}

} // namespace

std::string opcodeName(std::uint8_t opcode) {
    if (opcode < kOpCount) return std::string("IORING_OP_") + kOps[opcode].name;
    if (const InternalOp* op = internalOp(opcode)) return op->name;
    return "IORING_OP_" + std::to_string(opcode);
}

std::string opcodeNoun(std::uint8_t opcode) {
    if (opcode < kOpCount) return kOps[opcode].noun;
    if (const InternalOp* op = internalOp(opcode)) return op->noun;
    return "operation " + std::to_string(opcode);
}

std::string errnoName(int error) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    if (const char* name = strerrorname_np(error)) return name;
#endif
    return "errno " + std::to_string(error);
}

std::string formatDuration(std::int64_t ns) {
    char buffer[64];
    // The magnitude as unsigned: -INT64_MIN does not fit an int64.
    const std::uint64_t magnitude = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
    const double v = static_cast<double>(magnitude);
    const char* sign = ns < 0 ? "-" : "";
    if (v < 1e3) std::snprintf(buffer, sizeof buffer, "%s%" PRIu64 " ns", sign, magnitude);
    else if (v < 1e6) std::snprintf(buffer, sizeof buffer, "%s%.3g us", sign, v / 1e3);
    else if (v < 1e9) std::snprintf(buffer, sizeof buffer, "%s%.3g ms", sign, v / 1e6);
    else std::snprintf(buffer, sizeof buffer, "%s%.4g s", sign, v / 1e9);
    return buffer;
}

std::string formatTime(std::int64_t ns) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.6f ms", static_cast<double>(ns) / 1e6);
    return buffer;
}

std::string fiberLabel(const Timeline& timeline, std::uint64_t fiber) {
    if (fiber == 0) return "the idle loop";
    const FiberLane* lane = findFiber(timeline, fiber);
    const std::string id = "#" + std::to_string(fiber);
    if (lane && lane->named) return "fiber '" + lane->name + "' (" + id + ")";
    if (fiber == 1) return "the main fiber (" + id + ")";
    return "fiber " + id;
}

std::int64_t workerOf(const Timeline& timeline, std::uint32_t thread) noexcept {
    const ThreadLane* lane = findThread(timeline, thread);
    return lane ? lane->worker : -1;
}

std::string threadLabel(const Timeline& timeline, std::uint32_t thread) {
    const std::int64_t worker = workerOf(timeline, thread);
    std::string out = "thread " + std::to_string(thread);
    if (worker >= 0) out += " (worker " + std::to_string(worker) + ")";
    return out;
}

std::string workerLabel(std::int64_t worker) { return worker >= 0 ? "worker " + std::to_string(worker) : "an unknown worker"; }

std::string objectLabel(std::uint64_t object) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "0x%" PRIx64, object);
    return buffer;
}

} // namespace fiberscope::viewer
