// Ring: liburing calls with the error handling the seeds leave as TODOs.
#include "io/uring/ring.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "support/errors.hpp"
#include "support/sanitizer.hpp"

namespace fiberscope::detail {

Status Ring::open(unsigned entries, unsigned completion_entries, int attach_to, bool disabled) {
    close();
    // The newer seed's flags: share one async worker pool across rings, let
    // the owner thread enable its ring (it becomes the single issuer), run
    // completion task work only when we enter the kernel anyway, and say
    // in the ring's flags when such work waits (so a busy thread enters
    // only then: Driver::reap).
    unsigned flags = IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SINGLE_ISSUER;
    // A completion queue larger than the default 2 x entries: a thread
    // serving many connections has one operation in flight for each, and
    // every completion past the queue's end costs the kernel an allocation
    // on its overflow list (seen in profiles of the echo benchmark at 256
    // connections with the old 128-entry queue). 0 keeps the kernel's size.
    if (completion_entries > 0) flags |= IORING_SETUP_CQSIZE;
    if (attach_to >= 0) flags |= IORING_SETUP_ATTACH_WQ;
    if (disabled) flags |= IORING_SETUP_R_DISABLED;
    int result = -EINVAL;
    // Older kernels reject newer flags with EINVAL: retry without them.
    // (TASKRUN_FLAG needs COOP_TASKRUN, and came in the same kernel, 5.19.)
    constexpr unsigned kNewer = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG;
    for (unsigned drop : {0u, kNewer, kNewer | unsigned(IORING_SETUP_ATTACH_WQ)}) {
        io_uring_params params{};
        params.flags = flags & ~drop;
        if (params.flags & IORING_SETUP_ATTACH_WQ) params.wq_fd = static_cast<unsigned>(attach_to);
        params.cq_entries = completion_entries;
        result = io_uring_queue_init_params(entries, &ring_, &params);
        if (result != -EINVAL) {
            disabled_ = (params.flags & IORING_SETUP_R_DISABLED) != 0;
            break;
        }
    }
    // Kernels before 5.12 charge a ring's memory to RLIMIT_MEMLOCK, often
    // 64 KiB: rather than fail there, take the kernel's smaller queue.
    if (result == -ENOMEM && completion_entries > 0) return open(entries, 0, attach_to, disabled);
    if (result < 0) return refusal(-result);
    unpoisonRingMemory(ring_);
    open_ = true;
    return {};
}

void unpoisonRingMemory(const io_uring& ring) noexcept {
    // The kernel maps a ring wherever it likes, possibly where a stack was
    // (a fiber's, a thread's) whose abandoned frames left redzones in
    // AddressSanitizer's shadow; the kernel and liburing write this memory
    // without instrumentation, so nothing else clears them. Seen as
    // "stack-buffer-underflow" in Ring::sqe()'s memset of a fresh entry.
    sanitizerUnpoison(ring.sq.ring_ptr, ring.sq.ring_sz);
    sanitizerUnpoison(ring.cq.ring_ptr, ring.cq.ring_sz);
    sanitizerUnpoison(ring.sq.sqes, static_cast<std::size_t>(*ring.sq.kring_entries) * sizeof(io_uring_sqe));
}

Error Ring::refusal(int err) noexcept {
    // The errnos of a seccomp filter (Docker's profile says EPERM), of
    // kernel.io_uring_disabled (EPERM) and of a kernel without io_uring.
    if (err == EPERM || err == EACCES || err == ENOSYS) return Error{Errc::IoUringUnavailable, err};
    return systemError(err);
}

Status Ring::probe(std::uint64_t& opcodes, const char*& call) {
    // A seccomp profile may allow io_uring_setup and refuse the rest; then
    // the first submission, or a worker enabling its ring, could only abort.
    // So walk the whole path once, on this ring, before the loop uses it.
    call = "io_uring_register";
    if (auto enabled = enable(); !enabled) return refusal(enabled.error().sys_errno);
    // Best effort, as for every worker (registerWithOwner), but a refusal
    // counts: EINVAL only means a kernel before 5.18.
    if (int r = io_uring_register_ring_fd(&ring_); r < 0 && r != -EINVAL) return refusal(-r);
    constexpr unsigned kProbeOps = 256;
    const std::size_t probe_size = sizeof(io_uring_probe) + kProbeOps * sizeof(io_uring_probe_op);
    auto* probe = static_cast<io_uring_probe*>(std::calloc(1, probe_size));
    if (!probe) return Error{Errc::OutOfMemory, ENOMEM};
    const int probed = io_uring_register_probe(&ring_, probe, kProbeOps);
    opcodes = 0;
    if (probed == 0)
        for (int op = 0; op < 64; ++op)
            if (io_uring_opcode_supported(probe, op)) opcodes |= std::uint64_t{1} << op;
    std::free(probe);
    if (probed < 0) return refusal(-probed);
    // What the scheduler cannot do without: waking another thread's ring,
    // timers, timeouts and cancellation (Linux 5.18 has them all; gVisor
    // lacks MSG_RING).
    call = "an opcode the scheduler needs (MSG_RING, TIMEOUT, LINK_TIMEOUT, ASYNC_CANCEL)";
    for (int op : {IORING_OP_NOP, IORING_OP_MSG_RING, IORING_OP_TIMEOUT, IORING_OP_LINK_TIMEOUT, IORING_OP_ASYNC_CANCEL})
        if (!(opcodes & (std::uint64_t{1} << op))) return Error{Errc::IoUringUnavailable, EOPNOTSUPP};
    // One io_uring_enter, with a NOP to complete.
    call = "io_uring_enter";
    io_uring_sqe* nop = sqe();
    io_uring_prep_nop(nop);
    nop->user_data = static_cast<std::uint64_t>(RingTag::unused);
    if (int r = io_uring_submit_and_wait(&ring_, 1); r < 0) return refusal(-r);
    io_uring_cqe* cqe = nullptr;
    if (int r = io_uring_peek_cqe(&ring_, &cqe); r < 0) return refusal(-r);
    const int nop_result = cqe->res;
    io_uring_cqe_seen(&ring_, cqe);
    if (nop_result < 0) return refusal(-nop_result);
    call = nullptr;
    return {};
}

Status Ring::enable() {
    if (!disabled_) return {};
    // The raw syscall: Debian 12's liburing 2.3 declares io_uring_enable_rings
    // but does not export it.
    if (syscall(__NR_io_uring_register, ring_.ring_fd, IORING_REGISTER_ENABLE_RINGS, nullptr, 0) < 0)
        return systemError(errno);
    disabled_ = false;
    return {};
}

void Ring::registerWithOwner() noexcept {
    // Kernels before 5.18 say EINVAL: every enter then looks the fd up, as before.
    (void)io_uring_register_ring_fd(&ring_);
}

void Ring::close() noexcept {
    if (!open_) return;
    io_uring_queue_exit(&ring_);
    open_ = false;
}

void Ring::makeRoom() {
    full_submissions_.store(full_submissions_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    const int result = io_uring_submit(&ring_);
    if ((result == -EBUSY || result == -EAGAIN) && reaper_) reaper_(reaper_context_);
}

io_uring_sqe* Ring::sqe() {
    io_uring_sqe* entry;
    while ((entry = io_uring_get_sqe(&ring_)) == nullptr) makeRoom();
    std::memset(entry, 0, sizeof *entry);
    return entry;
}

void Ring::reserve(unsigned count) {
    while (io_uring_sq_space_left(&ring_) < count) makeRoom();
}

int Ring::submit() noexcept {
    int result;
    do {
        result = io_uring_submit(&ring_);
        if ((result == -EBUSY || result == -EAGAIN) && reaper_) {
            reaper_(reaper_context_);
            result = io_uring_submit(&ring_);
        }
    } while (result == -EINTR);
    return result;
}

int Ring::submitAndWait(unsigned wait) noexcept { return io_uring_submit_and_wait(&ring_, wait); }

int Ring::submitAndWaitFor(unsigned wait, std::int64_t timeout_ns) noexcept {
    __kernel_timespec limit{};
    limit.tv_sec = timeout_ns / 1'000'000'000;
    limit.tv_nsec = timeout_ns % 1'000'000'000;
    io_uring_cqe* cqe = nullptr;
    return io_uring_submit_and_wait_timeout(&ring_, &cqe, wait, &limit, nullptr);
}

unsigned Ring::drain(io_uring_cqe* out, unsigned max) noexcept {
    io_uring_cqe* ptrs[256];
    if (max > 256) max = 256;
    // The kernel sets this flag while completions wait in its overflow list;
    // peeking below flushes them into the ring as space allows.
    if (IO_URING_READ_ONCE(*ring_.sq.kflags) & IORING_SQ_CQ_OVERFLOW)
        completion_overflows_.store(completion_overflows_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    unsigned count = io_uring_peek_batch_cqe(&ring_, ptrs, max);
    for (unsigned i = 0; i < count; ++i) out[i] = *ptrs[i];
    io_uring_cq_advance(&ring_, count);
    return count;
}

void Ring::message(int target_fd, std::uint64_t user_data, std::int32_t result, std::uint64_t failure_tag) {
    io_uring_sqe* entry = sqe();
    io_uring_prep_msg_ring(entry, target_fd, static_cast<unsigned>(result), user_data, 0);
    entry->flags |= IOSQE_CQE_SKIP_SUCCESS;
    entry->user_data = failure_tag;
}

} // namespace fiberscope::detail
