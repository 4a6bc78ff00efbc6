// Every opcode the runtime records has a name in the tracer's opcode table
// (trace_vocabulary.hpp), under the kernel's own name for it, so that no tool
// ever prints "op N" for a trace of this runtime. The tracer cannot see the
// runtime's constants (it must not depend on the runtime), so the check
// lives here, where runtime/src headers are in reach: every IORING_OP_* the
// runtime's Operation or ring uses, and the runtime's own numbers.
#include "test_support.hpp"

#include <liburing.h>

#include <string>

#include <fiberscope/trace_vocabulary.hpp>

#include "../../runtime/src/io/syscall_io.hpp"

namespace trace = fiberscope::trace;
namespace detail = fiberscope::detail;

namespace {

struct Op {
    unsigned opcode;
    const char* kernel; // the kernel's name for it
};

#define FIBERSCOPE_OP(op) Op{op, #op}

// The opcodes the runtime submits (runtime/src/io/*.cpp, io/uring/uring_io.cpp,
// io/epoll/poller.cpp, io/uring/ring.cpp, io/cancel.cpp, io/process.cpp) or records.
const Op kRuntimeOps[] = {
    FIBERSCOPE_OP(IORING_OP_NOP),      FIBERSCOPE_OP(IORING_OP_READV),     FIBERSCOPE_OP(IORING_OP_WRITEV),
    FIBERSCOPE_OP(IORING_OP_FSYNC),    FIBERSCOPE_OP(IORING_OP_POLL_ADD),  FIBERSCOPE_OP(IORING_OP_SENDMSG),
    FIBERSCOPE_OP(IORING_OP_RECVMSG),  FIBERSCOPE_OP(IORING_OP_TIMEOUT),   FIBERSCOPE_OP(IORING_OP_ACCEPT),
    FIBERSCOPE_OP(IORING_OP_ASYNC_CANCEL), FIBERSCOPE_OP(IORING_OP_LINK_TIMEOUT), FIBERSCOPE_OP(IORING_OP_CONNECT),
    FIBERSCOPE_OP(IORING_OP_OPENAT),   FIBERSCOPE_OP(IORING_OP_CLOSE),     FIBERSCOPE_OP(IORING_OP_STATX),
    FIBERSCOPE_OP(IORING_OP_READ),     FIBERSCOPE_OP(IORING_OP_WRITE),     FIBERSCOPE_OP(IORING_OP_SEND),
    FIBERSCOPE_OP(IORING_OP_RECV),     FIBERSCOPE_OP(IORING_OP_SHUTDOWN),  FIBERSCOPE_OP(IORING_OP_RENAMEAT),
    FIBERSCOPE_OP(IORING_OP_UNLINKAT), FIBERSCOPE_OP(IORING_OP_MKDIRAT),   FIBERSCOPE_OP(IORING_OP_MSG_RING),
    FIBERSCOPE_OP(IORING_OP_SOCKET),
    // Newer than the liburing headers the runtime builds with: its own constants.
    Op{detail::kOpWaitid, "IORING_OP_WAITID"},
    Op{detail::kOpFtruncate, "IORING_OP_FTRUNCATE"},
    Op{detail::kOpBind, "IORING_OP_BIND"},
    Op{detail::kOpListen, "IORING_OP_LISTEN"},
};

} // namespace

TEST_CASE("every opcode the runtime records has the kernel's name in the tracer's table", "[opcodes]") {
    for (const Op& op : kRuntimeOps) {
        INFO(op.kernel << " = " << op.opcode);
        REQUIRE(op.opcode < 256);
        const auto opcode = static_cast<std::uint8_t>(op.opcode);
        const trace::OpcodeInfo* info = trace::findOpcode(opcode);
        REQUIRE(info);
        CHECK(std::string(info->kernel) == op.kernel);
        CHECK(trace::opcodeLabel(opcode) == op.kernel);
        CHECK(trace::opcodeName(opcode).rfind("op ", 0) != 0);
        CHECK_FALSE(info->notes & trace::kOpNoteRuntimeNumber);
    }
}

TEST_CASE("the runtime's own operation numbers are the tracer's", "[opcodes]") {
    // Operations io_uring has no opcode for, numbered for the trace only.
    CHECK(detail::kOpGetdents64 == trace::kOpGetdents64);
    CHECK(detail::kOpResolve == trace::kOpResolve);
    for (const std::uint8_t opcode : {detail::kOpGetdents64, detail::kOpResolve}) {
        INFO("opcode " << int(opcode));
        const trace::OpcodeInfo* info = trace::findOpcode(opcode);
        REQUIRE(info);
        CHECK(info->notes & trace::kOpNoteRuntimeNumber);
    }
    CHECK(trace::opcodeName(detail::kOpGetdents64) == "getdents64");
    CHECK(trace::opcodeName(detail::kOpResolve) == "resolve");
    // The opcode numbers the tools treat specially are the kernel's.
    CHECK(trace::kOpPollAdd == IORING_OP_POLL_ADD);
    CHECK(trace::kOpTimeout == IORING_OP_TIMEOUT);
    CHECK(trace::kOpAsyncCancel == IORING_OP_ASYNC_CANCEL);
    CHECK(trace::kOpLinkTimeout == IORING_OP_LINK_TIMEOUT);
    CHECK(trace::kOpMsgRing == IORING_OP_MSG_RING);
    // Every kernel opcode the runtime's liburing knows sits at its own number.
    for (unsigned op = 0; op < IORING_OP_LAST; ++op) {
        INFO("opcode " << op);
        const trace::OpcodeInfo* info = trace::findOpcode(static_cast<std::uint8_t>(op));
        REQUIRE(info);
        CHECK(std::string(info->kernel).rfind("IORING_OP_", 0) == 0);
    }
}
