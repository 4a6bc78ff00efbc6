// Ring: one io_uring (liburing) owned by one worker thread.
//
// Only the owning thread submits to it (IORING_SETUP_SINGLE_ISSUER); other
// threads reach it solely through IORING_OP_MSG_RING, which posts a
// completion into it.
//
// Ring pressure. `sqe()` never fails: when the submission queue is full it
// submits what is queued and tries again. If the kernel refuses that
// submission because completions overflowed the completion queue (-EBUSY on
// kernels before 5.19; newer kernels keep the overflow in a list that
// liburing flushes when we next reap), the ring calls its reaper, which turns
// pending completions into ready fibers and so frees completion slots, and
// retries. `reserve(n)` makes room for n entries that must go to the kernel
// in the same submission (an operation and its linked timeout).
#pragma once

#include <liburing.h>

#include <atomic>
#include <cstdint>

#include "fiberscope/result.hpp"

namespace fiberscope::detail {

// What a completion's user_data means. Anything else is a Fiber* (an
// operation the fiber waits for), or a Fiber* with kCancelTag set (a cancel
// request sent by another thread with MSG_RING).
enum class RingTag : std::uint64_t {
    unused = 0,
    wakeup = 1,  // MSG_RING from schedule(): new work is in our ready queue
    // Our own CQEs we do not act on: a MSG_RING (exit, cancel) that could
    // not be delivered (the target exiting or not yet enabled), a link
    // timeout's, a cancel SQE's, a submitAndWaitFor timer's: ignored.
    cleanup = 2,
    exit = 3,    // MSG_RING from deinit: leave the idle loop
};
// A wake-up MSG_RING we sent that could not be delivered comes back to us
// with this user_data: kWakeupBounceTag | (target worker << 8). (No Fiber*
// or PoolTask* is that small: the tag cannot be mistaken for one.)
inline constexpr std::uint64_t kWakeupBounceTag = 4;
inline constexpr std::uint64_t kWakeupBounceLimit = std::uint64_t{1} << 32;
inline bool isWakeupBounce(std::uint64_t user_data) noexcept {
    return user_data < kWakeupBounceLimit && (user_data & 0xff) == kWakeupBounceTag;
}
inline constexpr std::uint64_t kCancelTag = 1;
// A PoolTask* with this bit: a blocking-pool thread finished the task a
// fiber of ours waits for (MSG_RING; see blocking_pool.cpp).
inline constexpr std::uint64_t kPoolDoneTag = 2;

class Ring {
public:
    Ring() = default;
    Ring(const Ring&) = delete;
    Ring& operator=(const Ring&) = delete;
    ~Ring() { close(); }

    // Creates the ring with `entries` submission slots and
    // `completion_entries` completion slots (0: the kernel's 2 x entries,
    // also taken when the kernel cannot afford the larger queue).
    // `attach_to` >= 0 shares that ring's async worker pool
    // (IORING_SETUP_ATTACH_WQ); `disabled` creates it R_DISABLED, to be
    // enabled by the thread that will own it.
    // IoUringUnavailable when the kernel refuses io_uring_setup.
    Status open(unsigned entries, unsigned completion_entries, int attach_to, bool disabled);
    Status enable();
    // Walks everything the runtime will ask of io_uring, on this freshly
    // opened ring (the creating thread's): enabling it if disabled,
    // registering its fd, probing its opcodes (into `opcodes`, bit n for
    // opcode n < 64) and one io_uring_enter that completes a NOP; and checks
    // that the opcodes the scheduler relies on exist. IoUringUnavailable
    // when the kernel or a seccomp filter refuses a step; `call` then names
    // it (for the log line).
    Status probe(std::uint64_t& opcodes, const char*& call);
    // Registers the ring's fd with the calling thread (the owner), so that
    // each io_uring_enter skips the fd lookup. Best effort.
    void registerWithOwner() noexcept;
    void close() noexcept;

    int fd() const noexcept { return ring_.ring_fd; }
    bool isOpen() const noexcept { return open_; }

    // A zeroed submission entry, submitting queued ones first if full.
    io_uring_sqe* sqe();
    // Makes sure the next `count` sqe() calls need no submission in between.
    void reserve(unsigned count);
    // Called when a submission is refused for lack of completion space: must
    // reap completions (the owning Thread installs it).
    void setReaper(void (*reaper)(void*), void* context) noexcept {
        reaper_ = reaper;
        reaper_context_ = context;
    }
    // Times the submission queue was full when an entry was wanted, and times
    // the completion queue had overflowed when we reaped (owner writes; any
    // thread may read, hence relaxed atomics).
    std::uint64_t fullSubmissions() const noexcept { return full_submissions_.load(std::memory_order_relaxed); }
    std::uint64_t completionOverflows() const noexcept { return completion_overflows_.load(std::memory_order_relaxed); }
    // Submits queued entries now (used for wake-ups, which must not wait for
    // the owner to go idle). Returns the io_uring_enter result.
    int submit() noexcept;
    // Submits queued entries and enters the kernel even if there are none,
    // so deferred completion work runs (COOP_TASKRUN) and its CQEs appear.
    int submitAndGetEvents() noexcept { return io_uring_submit_and_get_events(&ring_); }
    // SQEs queued but not yet submitted, and CQEs waiting to be reaped.
    unsigned pendingSubmissions() const noexcept { return io_uring_sq_ready(&ring_); }
    unsigned pendingCompletions() const noexcept { return io_uring_cq_ready(&ring_); }
    // Whether the kernel holds completions that only an entry brings out:
    // task work it deferred to our next entry (COOP_TASKRUN), which it flags
    // with IORING_SQ_TASKRUN where the ring was set up with
    // IORING_SETUP_TASKRUN_FLAG, or CQEs on its overflow list. A ring
    // without that flag (a kernel before 5.19) never shows IORING_SQ_TASKRUN:
    // reportsTaskWork() says whether a false here can be believed.
    // (The kernel sets and clears these bits; a stale read costs one entry
    // too many, or one reap later, never a completion.)
    bool kernelHoldsCompletions() const noexcept {
        return (IO_URING_READ_ONCE(*ring_.sq.kflags) & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) != 0;
    }
    bool reportsTaskWork() const noexcept { return (ring_.flags & IORING_SETUP_TASKRUN_FLAG) != 0; }
    // Submits and waits for at least `wait` completions.
    int submitAndWait(unsigned wait) noexcept;
    // The same, but returns -ETIME after `timeout_ns` without one. (Where the
    // kernel lacks IORING_FEAT_EXT_ARG, liburing queues a timeout entry
    // tagged LIBURING_UDATA_TIMEOUT, which the reaper skips.)
    int submitAndWaitFor(unsigned wait, std::int64_t timeout_ns) noexcept;
    // Copies up to `max` completions into `out` and marks them seen.
    unsigned drain(io_uring_cqe* out, unsigned max) noexcept;

    // Queues a MSG_RING posting a completion {user_data, result} to `target`.
    // Only a failure posts a completion to us, with `failure_tag`.
    void message(int target_fd, std::uint64_t user_data, std::int32_t result,
                 std::uint64_t failure_tag = static_cast<std::uint64_t>(RingTag::cleanup));

private:
    void makeRoom();
    // An io_uring call's errno as an Error: EPERM, EACCES, ENOSYS are a
    // refusal (IoUringUnavailable), anything else what its errno says.
    static Error refusal(int err) noexcept;

    io_uring ring_{};
    void (*reaper_)(void*) = nullptr;
    void* reaper_context_ = nullptr;
    std::atomic<std::uint64_t> full_submissions_{0};
    std::atomic<std::uint64_t> completion_overflows_{0};
    bool open_ = false;
    bool disabled_ = false;
};

// Clears AddressSanitizer's shadow over a freshly mapped ring (ring.cpp).
void unpoisonRingMemory(const io_uring& ring) noexcept;

} // namespace fiberscope::detail
