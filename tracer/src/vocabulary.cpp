// The opcode table and the number formats (see trace_vocabulary.hpp).
//
// Kernel opcodes follow enum io_uring_op in order (0 .. 57, Linux 6.11);
// entries past the kernel's are the runtime's own numbers. The table is
// sorted by number, so a lookup is an index for kernel opcodes and a short
// scan for the rest. The runtime's tests (tests/runtime/test_opcode_names.cpp)
// check that every opcode the runtime records is here under its kernel name.
#include "fiberscope/trace_vocabulary.hpp"

#include <cinttypes>
#include <cstdio>

namespace fiberscope::trace {

namespace {

constexpr std::uint8_t kReady = kOpNoteReadinessWait;
constexpr std::uint8_t kTimer = kOpNoteTimer;
constexpr std::uint8_t kOwn = kOpNoteRuntimeNumber;
constexpr std::uint8_t kFallback = kOpNoteSyscallFallback;
constexpr std::uint8_t kPool = kOpNoteBlockingPool;

// clang-format off
constexpr OpcodeInfo kOpcodes[] = {
    {0, "nop", "IORING_OP_NOP", "no-op", "Does nothing; completes at once with result 0.", 0},
    {1, "readv", "IORING_OP_READV", "read", "Reads into several buffers (an iovec array) from a file or socket.", 0},
    {2, "writev", "IORING_OP_WRITEV", "write", "Writes several buffers (an iovec array) to a file or socket.", 0},
    {3, "fsync", "IORING_OP_FSYNC", "fsync", "Flushes a file's data (and, unless asked for data only, its metadata) to the disk.", kFallback},
    {4, "read-fixed", "IORING_OP_READ_FIXED", "read", "Reads into a buffer registered with the ring in advance.", 0},
    {5, "write-fixed", "IORING_OP_WRITE_FIXED", "write", "Writes from a buffer registered with the ring in advance.", 0},
    {6, "poll-add", "IORING_OP_POLL_ADD", "readiness wait",
     "Waits until a file descriptor is ready; on the epoll backend, a fiber parked until epoll reports its fd ready.", kReady},
    {7, "poll-remove", "IORING_OP_POLL_REMOVE", "poll removal", "Withdraws a pending readiness wait.", 0},
    {8, "sync-file-range", "IORING_OP_SYNC_FILE_RANGE", "sync_file_range", "Starts or waits for writing back a range of a file.", 0},
    {9, "sendmsg", "IORING_OP_SENDMSG", "sendmsg", "Sends a message (with an address, for UDP) on a socket.", 0},
    {10, "recvmsg", "IORING_OP_RECVMSG", "recvmsg", "Receives a message (with its sender's address, for UDP) from a socket.", 0},
    {11, "timeout", "IORING_OP_TIMEOUT", "timer", "A timer: completes with -ETIME when it expires (a sleep or a deadline).", kTimer},
    {12, "timeout-remove", "IORING_OP_TIMEOUT_REMOVE", "timer removal", "Withdraws or changes a pending timer.", 0},
    {13, "accept", "IORING_OP_ACCEPT", "accept", "Takes the next connection waiting on a listening socket; the result is its descriptor.", 0},
    {14, "cancel", "IORING_OP_ASYNC_CANCEL", "cancellation",
     "Asks the kernel to withdraw an operation in flight, which then completes with -ECANCELED.", 0},
    {15, "link-timeout", "IORING_OP_LINK_TIMEOUT", "linked timeout",
     "A limit on the operation linked before it: when it expires first, that operation is withdrawn.", kTimer},
    {16, "connect", "IORING_OP_CONNECT", "connect", "Connects a socket to an address.", 0},
    {17, "fallocate", "IORING_OP_FALLOCATE", "fallocate", "Reserves or frees space in a file.", 0},
    {18, "openat", "IORING_OP_OPENAT", "open", "Opens a file relative to a directory; the result is the new descriptor.", 0},
    {19, "close", "IORING_OP_CLOSE", "close", "Closes a file descriptor.", 0},
    {20, "files-update", "IORING_OP_FILES_UPDATE", "files update", "Changes the ring's table of registered files.", 0},
    {21, "statx", "IORING_OP_STATX", "stat", "Reads a file's size, kind, permissions and times.", kFallback},
    {22, "read", "IORING_OP_READ", "read", "Reads into a buffer from a file (at an offset) or a stream; the result is the byte count.", 0},
    {23, "write", "IORING_OP_WRITE", "write", "Writes a buffer to a file (at an offset) or a stream; the result is the byte count.", 0},
    {24, "fadvise", "IORING_OP_FADVISE", "fadvise", "Tells the kernel how a file will be read.", 0},
    {25, "madvise", "IORING_OP_MADVISE", "madvise", "Tells the kernel how a memory range will be used.", 0},
    {26, "send", "IORING_OP_SEND", "send", "Sends a buffer on a connected socket; the result is the byte count.", 0},
    {27, "recv", "IORING_OP_RECV", "receive", "Receives into a buffer from a socket; the result is the byte count, 0 at the end of the stream.", 0},
    {28, "openat2", "IORING_OP_OPENAT2", "open", "Opens a file with openat2's extended options.", 0},
    {29, "epoll-ctl", "IORING_OP_EPOLL_CTL", "epoll_ctl", "Changes an epoll instance's interest list.", 0},
    {30, "splice", "IORING_OP_SPLICE", "splice", "Moves data between a pipe and another descriptor without copying it to user space.", 0},
    {31, "provide-buffers", "IORING_OP_PROVIDE_BUFFERS", "buffer provision", "Gives the ring buffers to choose from for later reads.", 0},
    {32, "remove-buffers", "IORING_OP_REMOVE_BUFFERS", "buffer removal", "Takes provided buffers back from the ring.", 0},
    {33, "tee", "IORING_OP_TEE", "tee", "Copies data from one pipe to another without consuming it.", 0},
    {34, "shutdown", "IORING_OP_SHUTDOWN", "shutdown", "Shuts down one or both directions of a connected socket.", 0},
    {35, "renameat", "IORING_OP_RENAMEAT", "rename", "Renames a file or directory.", kFallback},
    {36, "unlinkat", "IORING_OP_UNLINKAT", "unlink", "Deletes a file, or an empty directory.", kFallback},
    {37, "mkdirat", "IORING_OP_MKDIRAT", "mkdir", "Creates a directory.", kFallback},
    {38, "symlinkat", "IORING_OP_SYMLINKAT", "symlink", "Creates a symbolic link.", 0},
    {39, "linkat", "IORING_OP_LINKAT", "link", "Creates a hard link.", 0},
    {40, "msg-ring", "IORING_OP_MSG_RING", "ring message",
     "Posts a completion into another ring: how one worker wakes another (wakeup-sent) or hands it a cancel request.", 0},
    {41, "fsetxattr", "IORING_OP_FSETXATTR", "fsetxattr", "Sets an extended attribute of an open file.", 0},
    {42, "setxattr", "IORING_OP_SETXATTR", "setxattr", "Sets an extended attribute of a path.", 0},
    {43, "fgetxattr", "IORING_OP_FGETXATTR", "fgetxattr", "Reads an extended attribute of an open file.", 0},
    {44, "getxattr", "IORING_OP_GETXATTR", "getxattr", "Reads an extended attribute of a path.", 0},
    {45, "socket", "IORING_OP_SOCKET", "socket creation", "Creates a socket; the result is its descriptor.", kFallback},
    {46, "uring-cmd", "IORING_OP_URING_CMD", "uring command", "Passes a command through to a device driver.", 0},
    {47, "send-zc", "IORING_OP_SEND_ZC", "zero-copy send", "Sends a buffer without copying it; a second completion says when it may be reused.", 0},
    {48, "sendmsg-zc", "IORING_OP_SENDMSG_ZC", "zero-copy sendmsg", "Sends a message without copying its buffers.", 0},
    {49, "read-multishot", "IORING_OP_READ_MULTISHOT", "multishot read", "Reads repeatedly, one completion per read, into provided buffers.", 0},
    {50, "waitid", "IORING_OP_WAITID", "child wait", "Waits for a child process to exit and collects its status.", kFallback},
    {51, "futex-wait", "IORING_OP_FUTEX_WAIT", "futex wait", "Waits on a futex word.", 0},
    {52, "futex-wake", "IORING_OP_FUTEX_WAKE", "futex wake", "Wakes waiters of a futex word.", 0},
    {53, "futex-waitv", "IORING_OP_FUTEX_WAITV", "futex waitv", "Waits on several futex words at once.", 0},
    {54, "fixed-fd-install", "IORING_OP_FIXED_FD_INSTALL", "fixed fd install", "Turns a registered file into a regular descriptor.", 0},
    {55, "ftruncate", "IORING_OP_FTRUNCATE", "truncation", "Sets a file's length, cutting or zero-extending it.", kFallback},
    {56, "bind", "IORING_OP_BIND", "bind", "Gives a socket its local address.", kFallback},
    {57, "listen", "IORING_OP_LISTEN", "listen", "Makes a bound socket accept connections.", kFallback},
    {kOpGetdents64, "getdents64", "plain syscall", "directory read",
     "Reads directory entries with the getdents64 syscall in place: io_uring has no opcode for it.", kOwn},
    {kOpResolve, "resolve", "blocking-pool job", "name lookup",
     "Looks a host name up with getaddrinfo on a blocking-pool thread; the result is the number of addresses.", kOwn | kPool},
};
// clang-format on

constexpr bool kernelOpcodesByIndex() {
    for (std::size_t i = 0; i < sizeof kOpcodes / sizeof kOpcodes[0]; ++i)
        if (kOpcodes[i].opcode != i && !(kOpcodes[i].notes & kOwn)) return false;
    return true;
}
static_assert(kernelOpcodesByIndex(), "kernel opcodes must sit at their own index");

} // namespace

std::span<const OpcodeInfo> opcodeTable() noexcept { return kOpcodes; }

const OpcodeInfo* findOpcode(std::uint8_t opcode) noexcept {
    if (opcode < std::size(kOpcodes) && kOpcodes[opcode].opcode == opcode) return &kOpcodes[opcode];
    for (const OpcodeInfo& op : kOpcodes)
        if (op.opcode == opcode) return &op;
    return nullptr;
}

bool opcodeHas(std::uint8_t opcode, OpcodeNote note) noexcept {
    const OpcodeInfo* op = findOpcode(opcode);
    return op && (op->notes & note);
}

std::string opcodeName(std::uint8_t opcode) {
    if (const OpcodeInfo* op = findOpcode(opcode)) return op->name;
    return "op " + std::to_string(opcode);
}

std::string opcodeLabel(std::uint8_t opcode) {
    const OpcodeInfo* op = findOpcode(opcode);
    if (!op) return "IORING_OP_" + std::to_string(opcode);
    if (op->notes & kOwn) return std::string(op->name) + " (" + op->kernel + ")";
    return op->kernel;
}

std::string opcodeNoun(std::uint8_t opcode) {
    if (const OpcodeInfo* op = findOpcode(opcode)) return op->noun;
    return "operation " + std::to_string(opcode);
}

std::string opcodeExplanation(std::uint8_t opcode) {
    if (const OpcodeInfo* op = findOpcode(opcode)) return op->explanation;
    return "Operation " + std::to_string(opcode) + ", a number this Fiberscope does not know (a newer kernel's opcode?).";
}

namespace {
constexpr BackendWords kUringWords{Backend::IoUring, "io_uring", "io_uring_enter", "completions or a MSG_RING", "MSG_RING",
                                   "in the ring", "in ring", "ring completions", "IORING_OP_POLL_ADD"};
constexpr BackendWords kEpollWords{Backend::Epoll, "epoll", "epoll_pwait2", "readiness, a deadline or its eventfd",
                                   "eventfd write", "registered with epoll", "in epoll", "completions",
                                   "IORING_OP_POLL_ADD; epoll backend"};
} // namespace

const BackendWords& backendWords(Backend backend) noexcept {
    return backend == Backend::Epoll ? kEpollWords : kUringWords;
}

const BackendWords& backendWords(std::string_view backend) noexcept {
    return backendWords(backend == "epoll" ? Backend::Epoll : Backend::IoUring);
}

bool isBlockingPoolWorker(std::int64_t worker) noexcept { return worker >= kBlockingPoolWorkerBase; }

std::string threadDisplayName(std::int64_t worker, std::uint32_t thread) {
    if (isBlockingPoolWorker(worker)) return "blocking pool thread " + std::to_string(worker - kBlockingPoolWorkerBase);
    if (worker >= 0) return "worker " + std::to_string(worker);
    return "thread " + std::to_string(thread);
}

std::string formatDuration(std::int64_t ns) {
    char text[48];
    // The magnitude as unsigned, so that INT64_MIN has one too.
    const std::uint64_t magnitude = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
    const double value = static_cast<double>(ns);
    // Each unit up to where two decimals would round to 1000 of it.
    if (magnitude < 1000) std::snprintf(text, sizeof text, "%" PRId64 " ns", ns);
    else if (magnitude < 999995) std::snprintf(text, sizeof text, "%.2f us", value / 1e3);
    else if (magnitude < 999995000) std::snprintf(text, sizeof text, "%.2f ms", value / 1e6);
    else std::snprintf(text, sizeof text, "%.3f s", value / 1e9);
    return text;
}

std::string formatCount(std::uint64_t value) {
    const std::string digits = std::to_string(value);
    std::string out;
    out.reserve(digits.size() + digits.size() / 3);
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

} // namespace fiberscope::trace
