// The epoll backend: see poller.hpp for the design.
#include "io/epoll/poller.hpp"

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>

#include "io/epoll/blocking_pool.hpp"
#include "io/cancel.hpp"
#include "support/errors.hpp"
#include "loop.hpp"
#include "scheduler/scheduler.hpp"
#include "io/syscall_io.hpp"
#include "scheduler/worker.hpp"
#include "support/tracing.hpp"

namespace fiberscope::detail {

std::int64_t monotonicNanoseconds() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// The eventfd's epoll_data: no real fd is negative.
static constexpr int kEventFdTag = -1;

Status Poller::open() {
    close();
    use_pwait2_ = true;
    // Each failure keeps its errno's meaning: EMFILE is the descriptor limit,
    // EPERM a seccomp filter, ENOMEM memory (never all "out of resources").
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) return systemError(errno);
    event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (event_fd_ < 0) {
        const int err = errno;
        close();
        return systemError(err);
    }
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = kEventFdTag;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, event_fd_, &event) != 0) {
        const int err = errno;
        close();
        return systemError(err);
    }
    // Try the wait now, not first in the idle loop where a refusal could only
    // abort: epoll_pwait2 is missing before Linux 5.11 and refused by some
    // seccomp profiles that allow epoll_wait; then epoll_wait it is.
    epoll_event none[1];
    const timespec zero{};
    if (epoll_pwait2(epoll_fd_, none, 1, &zero, nullptr) < 0) {
        if (errno != ENOSYS && errno != EPERM && errno != EACCES) {
            const int err = errno;
            close();
            return systemError(err);
        }
        use_pwait2_ = false;
        if (epoll_wait(epoll_fd_, none, 1, 0) < 0) {
            const int err = errno;
            close();
            return systemError(err);
        }
    }
    return {};
}

void Poller::close() noexcept {
    if (event_fd_ >= 0) ::close(event_fd_);
    if (epoll_fd_ >= 0) ::close(epoll_fd_);
    event_fd_ = epoll_fd_ = -1;
}

void Poller::signal() noexcept {
    const std::uint64_t one = 1;
    // EAGAIN means the counter is saturated: the owner is being woken anyway.
    [[maybe_unused]] ssize_t n = ::write(event_fd_, &one, sizeof one);
}

void Poller::wake(unsigned sender) noexcept {
    // The eventfd write is the wake-up, and the ready queue's release CAS
    // publishes the work; the sender's name is for the trace alone.
    if (trace::enabled()) {
        std::lock_guard lock(mailbox_mutex_);
        wake_senders_.push_back(sender);
    }
    signal();
}

void Poller::postCancel(Fiber* fiber) {
    {
        std::lock_guard lock(mailbox_mutex_);
        cancels_.push_back(fiber);
    }
    signal();
}

void Poller::postDone(Fiber* fiber) {
    {
        std::lock_guard lock(mailbox_mutex_);
        done_.push_back(fiber);
    }
    signal();
}

void Poller::postTaskDone(PoolTask* task) {
    {
        std::lock_guard lock(mailbox_mutex_);
        tasks_done_.push_back(task);
    }
    signal();
}

void Poller::postExit() noexcept {
    {
        std::lock_guard lock(mailbox_mutex_);
        exit_requested_ = true;
    }
    signal();
}

// Registers interest in whatever the fd's parked fibers wait for. One-shot:
// after reporting, the fd is disarmed until a fiber parks on it again, so a
// ready fd nobody waits for does not keep waking the thread.
void Poller::arm(int fd, FdWaiters& waiters) {
    epoll_event event{};
    event.events = EPOLLONESHOT | (waiters.readers ? unsigned(EPOLLIN) : 0u) | (waiters.writers ? unsigned(EPOLLOUT) : 0u);
    event.data.fd = fd;
    if (waiters.added) {
        if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &event) == 0) return;
        // ENOENT: the fd was closed (leaving the epoll set) and its number
        // reused since we last saw it. Add it afresh.
    }
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) == 0 || errno == EEXIST) {
        if (errno == EEXIST) epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &event);
        waiters.added = true;
        return;
    }
    // EPERM: a regular file or directory, which epoll refuses; it is always
    // ready. Report it so at once: the retry will not block.
    waiters.added = false;
    for (Waiter* w = waiters.readers; w; w = w->next) w->result = EPOLLIN;
    for (Waiter* w = waiters.writers; w; w = w->next) w->result = EPOLLOUT;
}

void Poller::unlink(Waiter& waiter) {
    if (waiter.fd >= 0) {
        auto it = fds_.find(waiter.fd);
        if (it != fds_.end()) {
            Waiter*& head = waiter.events == EPOLLIN ? it->second.readers : it->second.writers;
            if (waiter.prev) waiter.prev->next = waiter.next;
            else head = waiter.next;
            if (waiter.next) waiter.next->prev = waiter.prev;
        }
    }
    waiter.next = waiter.prev = nullptr;
    if (waiter.has_deadline) {
        deadlines_.erase(waiter.deadline);
        waiter.has_deadline = false;
    }
    parked_.erase(waiter.fiber);
}

int Poller::park(Waiter& waiter, std::int64_t deadline_ns) {
    Fiber* fiber = waiter.fiber;
    waiter.result = 0;
    parked_[fiber] = &waiter;
    if (deadline_ns >= 0) {
        waiter.deadline = deadlines_.emplace(deadline_ns, &waiter);
        waiter.has_deadline = true;
    }
    if (waiter.fd >= 0) {
        FdWaiters& waiters = fds_[waiter.fd];
        Waiter*& head = waiter.events == EPOLLIN ? waiters.readers : waiters.writers;
        waiter.next = head;
        waiter.prev = nullptr;
        if (head) head->prev = &waiter;
        head = &waiter;
        arm(waiter.fd, waiters);
        if (waiter.result != 0) { // epoll refused the fd: it is always ready
            unlink(waiter);
            return waiter.result;
        }
        fiber->last_opcode = IORING_OP_POLL_ADD;
        FIBERSCOPE_TRACE_EVENT(emit::submit(now, fiber->id, IORING_OP_POLL_ADD, waiter.fd));
    }
    // Nobody else can wake us before we are off this stack: only this
    // thread's idle loop looks at its waiters.
    yield(nullptr, PendingTask::nothing, trace::SwitchReason::IoWait);
    return waiter.result;
}

void Poller::ready(Waiter& waiter, int result, Fiber*& next, FiberQueue& queue, unsigned& count) {
    unlink(waiter);
    waiter.result = result;
    Fiber* fiber = waiter.fiber;
    FIBERSCOPE_TRACE_EVENT(emit::complete(now, fiber->id, fiber->last_opcode, result));
    ++count;
    queue.gather(next, fiber);
}

void Poller::forget(int fd) noexcept {
    auto it = fds_.find(fd);
    if (it == fds_.end()) return;
    if (!it->second.readers && !it->second.writers) fds_.erase(it);
    // Fibers still parked on it stay: closing the fd removes it from the
    // epoll set, so they are woken by their deadline or a cancel. (A fiber
    // that closes an fd another fiber waits on has a bug of its own.)
}

unsigned Poller::poll(bool block, Fiber*& next, FiberQueue& queue, bool& exit, std::int64_t extra_deadline_ns) {
    unsigned count = 0;
    int timeout_ms = block ? -1 : 0;
    timespec timeout_ts{};
    const timespec* timeout = block ? nullptr : &timeout_ts;
    std::int64_t nearest = deadlines_.empty() ? -1 : deadlines_.begin()->first;
    if (extra_deadline_ns >= 0 && (nearest < 0 || extra_deadline_ns < nearest)) nearest = extra_deadline_ns;
    if (block && nearest >= 0) {
        std::int64_t wait = nearest - monotonicNanoseconds();
        if (wait < 0) wait = 0;
        timeout_ts.tv_sec = wait / 1'000'000'000;
        timeout_ts.tv_nsec = wait % 1'000'000'000;
        timeout = &timeout_ts;
        timeout_ms = static_cast<int>((wait + 999'999) / 1'000'000);
    }
    epoll_event events[64];
    int n = use_pwait2_ ? epoll_pwait2(epoll_fd_, events, 64, timeout, nullptr)
                        : epoll_wait(epoll_fd_, events, 64, timeout_ms); // millisecond deadlines, rounded up
    if (n < 0 && errno != EINTR) fatal("epoll_wait failed", errno);
    bool mailbox = false;
    for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == kEventFdTag) {
            mailbox = true;
            continue;
        }
        auto it = fds_.find(fd);
        if (it == fds_.end()) continue;
        const std::uint32_t got = events[i].events;
        const bool error = got & (EPOLLERR | EPOLLHUP);
        // Every fiber parked on a ready direction retries (the seed wakes the
        // whole wait queue); the others keep waiting.
        if ((got & EPOLLIN) || error)
            while (Waiter* w = it->second.readers) ready(*w, static_cast<int>(got), next, queue, count);
        if ((got & EPOLLOUT) || error)
            while (Waiter* w = it->second.writers) ready(*w, static_cast<int>(got), next, queue, count);
        if (it->second.readers || it->second.writers) arm(fd, it->second);
    }
    if (mailbox) {
        std::uint64_t value;
        [[maybe_unused]] ssize_t r = ::read(event_fd_, &value, sizeof value);
        std::vector<Fiber*> cancels, done;
        std::vector<PoolTask*> tasks_done;
        std::vector<unsigned> senders;
        {
            std::lock_guard lock(mailbox_mutex_);
            cancels.swap(cancels_);
            done.swap(done_);
            tasks_done.swap(tasks_done_);
            senders.swap(wake_senders_);
            if (exit_requested_) exit = true;
        }
        // One receipt per wake-up, in the order they were sent.
        for (unsigned sender : senders) FIBERSCOPE_TRACE_EVENT(emit::wakeupReceived(now, sender));
        for (Fiber* fiber : cancels) {
            // Only a fiber still parked here: one that was woken meanwhile
            // sees the cancel when it next enters a cancel region.
            // A late request must not interrupt a wait entered inside a
            // CancelProtection scope (see scheduler/worker.cpp): it stays pending.
            const Thread* state = fiber->cancel_thread.load(std::memory_order_acquire);
            if (isProtected(state)) continue;
            // A request for the fiber that used this Fiber before (finished,
            // reused since): the one parked now was not canceled (its word
            // is not kCanceling) and keeps waiting (driver.cpp says more).
            if (state != kCanceling) continue;
            auto it = parked_.find(fiber);
            if (it == parked_.end()) {
                // Perhaps waiting for a blocking-pool task (blocking_pool.cpp).
                cancelPoolWait(fiber, next, queue, count);
                continue;
            }
            FIBERSCOPE_TRACE_EVENT(emit::cancelDelivered(now, fiber->id));
            ready(*it->second, -ECANCELED, next, queue, count);
        }
        for (Fiber* fiber : done) {
            ++count;
            queue.gather(next, fiber);
        }
        for (PoolTask* task : tasks_done) {
            ++count;
            poolTaskDone(task, next, queue);
        }
    }
    if (!deadlines_.empty()) {
        const std::int64_t now_ns = monotonicNanoseconds();
        while (!deadlines_.empty() && deadlines_.begin()->first <= now_ns)
            ready(*deadlines_.begin()->second, -ETIME, next, queue, count);
    }
    return count;
}

// --- operations ----------------------------------------------------------------

namespace {

bool isStreamOp(std::uint8_t opcode) {
    switch (opcode) {
    case IORING_OP_READ: case IORING_OP_WRITE: case IORING_OP_READV: case IORING_OP_WRITEV: return true;
    default: return false;
    }
}

bool isWrite(std::uint8_t opcode) {
    switch (opcode) {
    case IORING_OP_WRITE: case IORING_OP_WRITEV: case IORING_OP_SEND: case IORING_OP_SENDMSG: case IORING_OP_CONNECT:
        return true;
    default: return false;
    }
}

// Regular files and block devices never report readiness: they go to the pool.
bool needsPool(const Operation& op) {
    // Path lookups, metadata, durability and directory reads: disk work
    // that readiness cannot announce.
    switch (op.opcode) {
    case IORING_OP_OPENAT: case IORING_OP_STATX: case IORING_OP_UNLINKAT: case IORING_OP_RENAMEAT:
    case IORING_OP_MKDIRAT: case IORING_OP_FSYNC: case kOpFtruncate: case kOpGetdents64:
        return true;
    default: break;
    }
    if (!isStreamOp(op.opcode)) return false;
    if (op.offset != kCurrentPosition) return true;
    struct stat st {};
    if (fstat(op.fd, &st) != 0) return false; // the syscall reports the error
    return S_ISREG(st.st_mode) || S_ISBLK(st.st_mode) || S_ISDIR(st.st_mode);
}

void makeNonBlocking(int fd) {
    const int flags = fcntl(fd, F_GETFL);
    if (flags >= 0 && !(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// A deadline for a TIMEOUT operation, on CLOCK_MONOTONIC.
//
// An absolute deadline on another clock becomes "what is left of it" on
// that clock plus monotonic now. The other clock is read first: the time
// that passes between the two reads then makes the deadline later, never
// earlier (read the other way round, a slow pair of reads, 15 us under
// qemu-user, woke a 5 ms sleepUntil on CLOCK_BOOTTIME that much early).
std::int64_t timerDeadline(const Operation& op) {
    const auto* ts = static_cast<const __kernel_timespec*>(op.address);
    const std::int64_t value = static_cast<std::int64_t>(ts->tv_sec) * 1'000'000'000 + ts->tv_nsec;
    if (!(op.flags & IORING_TIMEOUT_ABS)) return monotonicNanoseconds() + value;
    clockid_t clock = CLOCK_MONOTONIC;
    if (op.flags & IORING_TIMEOUT_REALTIME) clock = CLOCK_REALTIME;
    if (op.flags & IORING_TIMEOUT_BOOTTIME) clock = CLOCK_BOOTTIME;
    if (clock == CLOCK_MONOTONIC) return value;
    timespec other{};
    clock_gettime(clock, &other);
    const std::int64_t left = value - (static_cast<std::int64_t>(other.tv_sec) * 1'000'000'000 + other.tv_nsec);
    return monotonicNanoseconds() + left;
}

} // namespace

Result<Completion> pollerExecute(const Operation& original, Thread* thread) {
    Fiber* fiber = thread->currentFiber();
    Operation op = original;
    // These never block: done in place.
    switch (op.opcode) {
    case IORING_OP_SOCKET:
        op.flags |= SOCK_NONBLOCK;
        return performInline(op, fiber->id);
    case kOpBind: case kOpListen: case IORING_OP_SHUTDOWN: case IORING_OP_NOP:
        return performInline(op, fiber->id);
    case IORING_OP_CLOSE:
        thread->driver.poller.forget(op.fd);
        return performInline(op, fiber->id);
    default: break;
    }

    Thread* region = thread;
    if (op.cancelable)
        if (auto entered = enterCancelRegion(fiber, region); !entered) return entered.error();
    const std::int64_t deadline = op.timeout_ns >= 0 ? monotonicNanoseconds() + op.timeout_ns : -1;
    int result;
    if (op.opcode == IORING_OP_TIMEOUT) {
        fiber->last_opcode = IORING_OP_TIMEOUT;
        FIBERSCOPE_TRACE_EVENT(emit::submit(now, fiber->id, IORING_OP_TIMEOUT, -1));
        Waiter waiter;
        waiter.fiber = fiber;
        result = thread->driver.poller.park(waiter, timerDeadline(op));
    } else if (needsPool(op)) {
        // Not interruptible: a regular-file operation finishes quickly, and
        // a pool thread cannot be stopped in the middle of one.
        fiber->last_opcode = op.opcode;
        FIBERSCOPE_TRACE_EVENT(emit::submit(now, fiber->id, op.opcode, op.fd));
        thread->loop->blocking_pool.submit(op, fiber, thread);
        yield(nullptr, PendingTask::nothing, trace::SwitchReason::IoWait);
        result = fiber->completion.result;
    } else {
        // A readiness loop: try without blocking, park on EAGAIN, retry.
        switch (op.opcode) {
        case IORING_OP_RECV: case IORING_OP_SEND: case IORING_OP_RECVMSG: case IORING_OP_SENDMSG:
            op.flags |= MSG_DONTWAIT;
            break;
        case IORING_OP_ACCEPT:
            op.flags |= SOCK_NONBLOCK;
            makeNonBlocking(op.fd);
            break;
        default: makeNonBlocking(op.fd); break;
        }
        const std::uint32_t direction = isWrite(op.opcode) ? EPOLLOUT : EPOLLIN;
        bool connecting = false;
        // When the attempt that succeeds began: its submit record's time.
        // Its effect (a send's bytes, an accept's connection) can be seen by
        // another thread as soon as the syscall runs, so a submit stamped
        // after it let the peer's receive come first in the trace (lesson
        // 13's test: bytes received before their send was submitted).
        std::uint64_t attempt_at = 0;
        for (;;) {
            attempt_at = trace::enabled() ? trace::now() : 0;
            if (connecting) {
                int error = 0;
                socklen_t size = sizeof error;
                result = getsockopt(op.fd, SOL_SOCKET, SO_ERROR, &error, &size) == 0 ? -error : -errno;
            } else {
                result = performSyscall(op);
            }
            if (op.opcode == IORING_OP_CONNECT && result == -EINPROGRESS) {
                connecting = true;
                result = -EAGAIN;
            }
            if (result != -EAGAIN && result != -EINTR) break;
            if (result == -EINTR) continue;
            // We may be on another thread than last time round: the cancel
            // region must name the thread whose poller we park on.
            Thread* here = currentThread();
            if (op.cancelable && here != region) {
                exitCancelRegion(fiber, region);
                region = here;
                if (auto entered = enterCancelRegion(fiber, region); !entered) {
                    region = nullptr;
                    result = -ECANCELED;
                    break;
                }
            }
            Waiter waiter;
            waiter.fiber = fiber;
            waiter.fd = op.fd;
            waiter.events = direction;
            const int woke = here->driver.poller.park(waiter, deadline);
            if (woke == -ECANCELED) {
                result = -ECANCELED;
                break;
            }
            if (woke == -ETIME) {
                result = -ETIMEDOUT;
                attempt_at = 0; // no attempt after the park: the pair is stamped now, after the park's records
                break;
            }
        }
        if (result != -ECANCELED) {
            // The submit at the start of the attempt that ended the loop
            // (nothing else is recorded on this thread between that and
            // here), or now when the loop ended in a park (a timeout);
            // the completion now.
            FIBERSCOPE_TRACE_EVENT(emit::submit(attempt_at ? attempt_at : now, fiber->id, op.opcode, op.fd);
                                   emit::complete(now, fiber->id, op.opcode, result));
        }
    }
    if (op.cancelable && region) exitCancelRegion(fiber, region);
    return Completion{result, 0};
}

} // namespace fiberscope::detail
