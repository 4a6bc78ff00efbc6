// EventLoop: Fiberscope's M:N fiber runtime on Linux io_uring.
//
// Fibers (stackful coroutines with their own mmap'ed stacks) run on up to
// `EventLoopOptions::threads` worker threads, each with its own io_uring.
// The thread that creates the loop becomes worker 0 and its caller becomes
// the "main fiber": everything it calls on the loop may suspend it.
//
//     auto loop = fiberscope::EventLoop::create().value();
//     auto sum = loop->async([] { return 1 + 1; });
//     int two = sum.await();
//
// Operations are called from fibers of this loop (or the main fiber). They
// return Result/Status; `Errc::Canceled` means the fiber was canceled.
// A fiber may resume on a different OS thread after any suspension: don't
// keep pointers to thread_locals across one, and don't suspend inside a
// catch block.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "fiberscope/clock.hpp"
#include "fiberscope/file.hpp"
#include "fiberscope/future.hpp"
#include "fiberscope/net.hpp"
#include "fiberscope/process.hpp"
#include "fiberscope/result.hpp"

#include <sys/uio.h>

namespace fiberscope {

// How the loop talks to the kernel (see README "Backends").
//   io_uring  one io_uring per thread: every operation is a submission, its
//             completion resumes the fiber; idle threads are woken with
//             IORING_OP_MSG_RING.
//   epoll     one epoll instance per thread (the seed's Kqueue design):
//             non-blocking syscalls, retried when epoll reports readiness;
//             timers in the idle loop's wait; regular-file I/O on a small
//             blocking pool; idle threads are woken through an eventfd.
//   automatic io_uring, or epoll with one log line when the kernel refuses
//             io_uring (seccomp, kernel.io_uring_disabled, gVisor). The
//             environment variable FIBERSCOPE_BACKEND=uring|epoll picks one
//             when the options leave it automatic.
enum class IoBackend { automatic, io_uring, epoll };

// "io_uring", "epoll" or "automatic".
const char* ioBackendName(IoBackend backend) noexcept;

// How ready fibers find a thread (runtime/src/scheduler/scheduler.hpp explains both).
//   seed     the course's design: schedule() offers work to any thread whose
//            ready queue is empty (a CAS on that thread's queue word, then
//            a MSG_RING or eventfd wake-up), and a thread that finds nothing
//            parks at once. What the lessons teach.
//   scaling  the default: each thread queues its ready fibers on itself
//            only (new work LIFO; fibers that yield in a FIFO ring, which
//            other threads take half of); no thread is handed work: after a push one parked thread is woken
//            to search, and only when no thread is searching (Go's wakep),
//            so a burst of spawns is not a burst of kernel wake-ups; a
//            thread that runs out of work searches (steals) a bounded while
//            before it parks; a spawned fiber waits in its spawner's runnext
//            slot, so a spawn that is awaited at once stays local.
// Fixed per loop at create time: the hot path branches on a loop field.
enum class SchedulerPolicy { seed, scaling };

// "seed" or "scaling".
const char* schedulerPolicyName(SchedulerPolicy policy) noexcept;

struct EventLoopOptions {
    // Most worker threads the loop may start, counting the creating thread.
    // 0 means the number of CPUs. Workers start lazily, when work appears
    // and no thread is idle. More than the CPU count oversubscribes.
    unsigned threads = 0;
    // Submission queue entries per ring (rounded up to a power of two).
    unsigned ring_entries = 256;
    // Completion queue entries per ring (rounded up to a power of two, at
    // least ring_entries). 0 means the larger of 4096 and 2 x ring_entries.
    // Completions beyond it are not lost (the kernel keeps them on an
    // overflow list) but cost an allocation each: size it for the
    // operations a thread has in flight at once (for a server, about one per
    // connection it serves).
    unsigned completion_entries = 0;
    // Usable stack per fiber, rounded up to whole pages (at least 16 KiB).
    // Untouched pages cost address space only, not memory.
    std::size_t stack_size = 256 * 1024;
    // Which kernel interface to use (see IoBackend).
    IoBackend backend = IoBackend::automatic;
    // Which scheduling policy to use (see SchedulerPolicy). Unset: the
    // environment variable FIBERSCOPE_SCHEDULER=seed|scaling picks one, else
    // scaling.
    std::optional<SchedulerPolicy> scheduler = std::nullopt;
    // true: every fiber stack has a guard page below it, which turns an
    // overflow into a clear message naming the fiber; never silently
    // dropped. On Linux 6.13+ a guard is a page-table marker and costs no
    // memory mapping; on older kernels it costs two of the process's
    // vm.max_map_count mappings (about 32k fibers at the default 65530),
    // and past that concurrent() fails with OutOfMemory.
    // false: no guard page, so an overflow silently corrupts the memory
    // below the stack; on older kernels this is what allows more fibers
    // than vm.max_map_count / 2 (see README "Limits").
    bool guard_pages = true;
    // true: each worker thread runs only on one CPU of the set the process
    // may use (worker i on the i-th, round robin past its end; the creating
    // thread, worker 0, gets its own set back when the loop is destroyed),
    // so the OS cannot move a worker between CPUs: a steadier picture for a
    // lesson or a measurement, at the cost of the OS no longer moving a
    // worker off a CPU another process keeps busy. The trace says where
    // each worker went (a `pinned: worker N to CPU M` mark). Unset: the
    // environment variable FIBERSCOPE_PIN=1 pins, else nothing is pinned.
    std::optional<bool> pin_workers = std::nullopt;
};

// Ring pressure counters, summed over the loop's threads (EventLoop::ioStats).
struct IoStats {
    // Times a thread wanted a submission entry and its queue was full, so it
    // submitted what was queued first.
    std::uint64_t full_submissions = 0;
    // Times a thread reaped while the kernel held completions that had
    // overflowed its completion queue (they are delivered, not lost).
    std::uint64_t completion_overflows = 0;
};

namespace detail {
struct Loop;
Result<Fiber*> spawnFiber(Loop* loop, const TaskLayout& layout, bool detached);
// Says on stderr (one line) and in the trace (a mark) that a detached
// fiber's function threw, naming the fiber (nullptr: the function ran inline
// on the calling fiber) and what().
void reportDetachedException(const Fiber* fiber, const std::exception_ptr& exception) noexcept;
} // namespace detail

// The trace number of the calling fiber (1 for the main fiber, 0 outside
// any fiber). Stable for the fiber's life; reused by no other live fiber.
std::uint64_t currentFiberId() noexcept;
// Names the calling fiber in the trace ("worker 7"); the viewer shows it.
void setFiberName(std::string_view name) noexcept;

class EventLoop {
public:
    // Starts a loop on the calling thread. Fails with IoUringUnavailable when
    // the kernel refuses io_uring and IoBackend::io_uring was asked for,
    // UnsupportedBackend for a bad FIBERSCOPE_BACKEND, InvalidArgument for
    // a bad FIBERSCOPE_SCHEDULER (one line on stderr names it) or for
    // bad options, or when this thread already runs a loop.
    static Result<std::unique_ptr<EventLoop>> create(EventLoopOptions options = {});

    // Cancels and joins detached fibers, stops the workers, frees the stacks.
    // Must be called from the main fiber (the one that created the loop).
    ~EventLoop();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;

    // Starts `f` on a new fiber. If no fiber can be allocated, runs `f` right
    // here instead and returns a finished Future (as Zig's Io.async does);
    // its result then waits on the heap, and if even that allocation fails
    // the process aborts with one line saying so: async never throws (use
    // concurrent() to get OutOfMemory instead).
    template <class F, class R = std::invoke_result_t<std::decay_t<F>&>>
    Future<R> async(F&& f) {
        auto started = concurrent(std::forward<F>(f));
        if (started) return std::move(*started);
        return Future<R>::adopt(nullptr, detail::runInline<std::decay_t<F>, R>(std::forward<F>(f)));
    }

    // Starts `f` on a new fiber, guaranteed to run concurrently with the
    // caller; OutOfMemory when no fiber can be allocated (nothing ran).
    template <class F, class R = std::invoke_result_t<std::decay_t<F>&>>
    Result<Future<R>> concurrent(F&& f) {
        auto layout = detail::taskLayout<std::decay_t<F>, R>(f);
        auto fiber = detail::spawnFiber(impl_, layout, false);
        if (!fiber) return fiber.error();
        return Future<R>::adopt(*fiber, static_cast<detail::TaskResult<R>*>(detail::fiberTask(*fiber)));
    }

    // Starts `f` on a fiber nobody awaits. It is canceled and joined when the
    // loop is destroyed, if still running. Runs inline if no fiber is
    // available (allocating nothing). An exception `f` throws is reported on
    // stderr (one line naming the fiber's number, its name and what()) and
    // as a mark in the trace, then dropped.
    template <class F>
    void asyncDetached(F&& f) {
        using Fn = std::decay_t<F>;
        using R = std::invoke_result_t<Fn&>;
        auto layout = detail::taskLayout<Fn, R>(f);
        if (!detail::spawnFiber(impl_, layout, true)) {
            // Nobody takes a detached result, so the task can live right
            // here on the caller's stack: nothing to allocate, nothing thrown.
            detail::Task<Fn, R> task(std::forward<F>(f));
            task.run(&task);
            if (task.exception) detail::reportDetachedException(nullptr, task.exception);
        }
    }

    // Puts the calling fiber back on its thread's ready queue and runs the
    // next ready fiber (or lets the idle loop run). Under the scaling policy
    // (the default) yielders take turns in FIFO order, after newly ready
    // work; under the seed policy the queue is a LIFO stack, so with three
    // or more fibers yielding on one thread the two most recent take turns.
    // Now and then it also services the thread's driver, its ring or epoll
    // instance: every 8th yield if work waits there, every 1024th anyway.
    void yield();
    // True once the calling fiber has been asked to cancel.
    bool cancelRequested();

    Result<File> createFile(std::string_view path, CreateFlags flags = {}, Dir dir = Dir::cwd());
    Result<File> openFile(std::string_view path, OpenFlags flags = {}, Dir dir = Dir::cwd());
    // Closes the descriptor; BadFileDescriptor if it was not open (a double close).
    Status close(File file);
    // Every operation that can wait takes an optional Timeout: past it the
    // operation is withdrawn and returns TimedOut. Every one is also a cancel
    // point: canceled while in flight, it is withdrawn and returns Canceled.
    Result<std::size_t> pread(File file, std::span<std::byte> buffer, std::uint64_t offset, Timeout timeout = {});
    Result<std::size_t> pwrite(File file, std::span<const std::byte> buffer, std::uint64_t offset, Timeout timeout = {});
    Result<std::size_t> preadv(File file, std::span<const iovec> buffers, std::uint64_t offset, Timeout timeout = {});
    Result<std::size_t> pwritev(File file, std::span<const iovec> buffers, std::uint64_t offset, Timeout timeout = {});
    // At the file position: for pipes, terminals and other streams.
    Result<std::size_t> read(File file, std::span<std::byte> buffer, Timeout timeout = {});
    Result<std::size_t> write(File file, std::span<const std::byte> buffer, Timeout timeout = {});

    // Metadata, sizes and durability (file.hpp's FileStat). Each is one
    // io_uring operation where the kernel has its opcode (STATX, FSYNC;
    // FTRUNCATE from Linux 6.9) and a plain syscall otherwise; on epoll a
    // blocking-pool job. stat(File) of a closed file: BadFileDescriptor.
    Result<FileStat> stat(File file);
    Result<FileStat> stat(std::string_view path, Dir dir = Dir::cwd(), StatFlags flags = {});
    Result<std::uint64_t> length(File file);
    // ftruncate: grows (with zeros) or shrinks the file; InvalidArgument if
    // it is not a regular file open for writing.
    Status setLength(File file, std::uint64_t length);
    // fsync (data and metadata), and fdatasync (data, and the metadata
    // needed to read it back, such as the size).
    Status sync(File file);
    Status syncData(File file);

    // Paths (relative ones resolved against `dir`). Errors name the errno:
    // FileNotFound, PathAlreadyExists, NotDir, IsDir, DirectoryNotEmpty,
    // AccessDenied, PermissionDenied, NameTooLong, ReadOnlyFileSystem,
    // RenameAcrossMountPoints, ...
    // unlinkat: IsDir for a directory (use deleteDir).
    Status deleteFile(std::string_view path, Dir dir = Dir::cwd());
    // renameat: replaces `to` if it exists (an empty directory, over a directory).
    Status rename(std::string_view from, std::string_view to, Dir from_dir = Dir::cwd(), Dir to_dir = Dir::cwd());
    Status makeDir(std::string_view path, unsigned mode = 0777, Dir dir = Dir::cwd());
    // Removes an empty directory: DirectoryNotEmpty otherwise.
    Status deleteDir(std::string_view path, Dir dir = Dir::cwd());
    // Opens a directory for readDir and as the `dir` of other calls.
    Result<Dir> openDir(std::string_view path, Dir dir = Dir::cwd());
    // BadFileDescriptor if it was not open (or is Dir::cwd()).
    Status close(Dir dir);
    // The next entry of the directory ("." and ".." skipped), or nullopt at
    // its end. A refill of the iterator's buffer is one getdents64(2):
    // io_uring has no opcode for it, so on io_uring it is a plain syscall
    // on the calling worker (traced as a submit and completion at one
    // instant), on epoll a blocking-pool job. See DirIterator for how long
    // the entry's name stays valid.
    Result<std::optional<DirEntry>> readDir(DirIterator& iterator);

    // Sockets (net.hpp): TCP and UDP over IPv4/IPv6, and Unix-domain sockets.
    Result<Socket> socket(int family, SocketType type = SocketType::stream);
    Status bind(Socket socket, const Address& address);
    // Sets the reuse flags of `options` (SO_REUSEADDR, SO_REUSEPORT; its
    // backlog is unused here), then binds: the kernel checks them at bind.
    Status bind(Socket socket, const Address& address, const ListenOptions& options);
    Status listen(Socket socket, int backlog = 128);
    // Sets the reuse flags, then listens with options.backlog. The flags set
    // here shape later binds of the port by other sockets; for this socket's
    // own bind, give them to bind() too (or use listenOn).
    Status listen(Socket socket, const ListenOptions& options);
    // Waits for a connection; fills `peer` with its address if given.
    Result<Socket> accept(Socket listener, Address* peer = nullptr, Timeout timeout = {});
    Status connect(Socket socket, const Address& address, Timeout timeout = {});
    // 0 bytes means the peer closed its side.
    Result<std::size_t> recv(Socket socket, std::span<std::byte> buffer, Timeout timeout = {});
    // May send fewer bytes than given; sendAll loops until all are sent.
    Result<std::size_t> send(Socket socket, std::span<const std::byte> buffer, Timeout timeout = {});
    Status sendAll(Socket socket, std::span<const std::byte> buffer, Timeout timeout = {});
    Result<std::size_t> readv(Socket socket, std::span<const iovec> buffers, Timeout timeout = {});
    Result<std::size_t> writev(Socket socket, std::span<const iovec> buffers, Timeout timeout = {});
    // Datagrams (SocketType::datagram), one IORING_OP_SENDMSG / RECVMSG
    // each. sendTo sends one datagram to `to` (MessageTooBig past the
    // protocol's limit, about 64 KiB for UDP). recvFrom receives one and
    // fills `from` with its sender if given; a datagram longer than `buffer`
    // is cut to it and the rest discarded, as recvfrom(2) does.
    Result<std::size_t> sendTo(Socket socket, std::span<const std::byte> buffer, const Address& to, Timeout timeout = {});
    Result<std::size_t> recvFrom(Socket socket, std::span<std::byte> buffer, Address* from = nullptr, Timeout timeout = {});
    Status shutdown(Socket socket, ShutdownHow how = ShutdownHow::both);
    Status close(Socket socket);
    Result<Address> localAddress(Socket socket);
    // socket + the options' SO_REUSEADDR / SO_REUSEPORT + bind + listen
    // (the int form: ListenOptions{.backlog = backlog}, SO_REUSEADDR on);
    // and socket + TCP_NODELAY + connect.
    Result<Socket> listenOn(const Address& address, int backlog = 128);
    Result<Socket> listenOn(const Address& address, const ListenOptions& options);
    Result<Socket> connectTo(const Address& address, Timeout timeout = {});
    // Names to addresses: "HOST:PORT", "[IPV6]:PORT" (a scope too:
    // "[fe80::1%eth0]:80") or "unix:PATH"; PORT is a number or a service
    // name ("localhost:http"). Numeric addresses are parsed in place; a name
    // goes to getaddrinfo on a blocking-pool thread (traced as one "resolve"
    // operation completing there), so no worker thread blocks. The addresses
    // come in getaddrinfo's order (try them in turn), each once.
    // InvalidArgument for text of another shape; NameNotFound,
    // TemporaryNameFailure, NameServerFailure, ServiceNotFound, ... from the
    // lookup. A cancel point: a cancel returns Canceled at once, even
    // while getaddrinfo runs (it cannot be interrupted: the lookup finishes
    // on its own and its result is dropped). No Timeout: a name server's
    // wait is bounded by resolv.conf (timeout, attempts); for a shorter
    // bound, select it with a fiber that sleeps.
    Result<std::vector<Address>> resolve(std::string_view host_and_port, ResolveOptions options = {});

    // Child processes (process.hpp). spawnProcess starts argv[0] with the
    // arguments argv (argv[0] included) and returns once it runs the new
    // program: FileNotFound, AccessDenied, InvalidExecutable, ... if it
    // could not. It does not suspend (the calling thread waits for the
    // child's exec, as vfork). The child starts with an empty signal mask
    // and every signal at its default action.
    Result<Child> spawnProcess(std::span<const std::string_view> argv, ProcessOptions options = {});
    // spawnProcess({"/bin/sh", "-c", "exit 3"}).
    Result<Child> spawnProcess(std::initializer_list<std::string_view> argv, ProcessOptions options = {}) {
        return spawnProcess(std::span<const std::string_view>(argv.begin(), argv.size()), options);
    }
    // Waits for the child to end and reaps it (closing its pidfd). A cancel
    // point: Canceled (or TimedOut past `timeout`) leaves the child running
    // and waitable again. ProcessNotFound once it has been reaped.
    Result<ExitStatus> wait(Child& child, Timeout timeout = {});
    // Sends `signal` through the pidfd (no pid-reuse race). Does not suspend.
    Status kill(const Child& child, int signal = SIGTERM);

    Result<Timestamp> now(Clock clock = Clock::monotonic);
    // Suspends for `duration` (a cancel point: Canceled if canceled meanwhile).
    Status sleep(std::chrono::nanoseconds duration, Clock clock = Clock::monotonic);
    // Suspends until `deadline` on `clock`.
    Status sleepUntil(Timestamp deadline, Clock clock = Clock::monotonic);

    // Starts every worker thread the loop may have (maxThreads) now, instead
    // of when work first finds no thread idle (workers start lazily), and
    // returns once each has settled into its scheduling loop (parked, or
    // running a fiber): for a program whose first burst of work should find
    // them all there, idle (a benchmark, a lesson's picture). Traced as each
    // worker's thread-start, with no schedule record (a worker started so
    // has no work yet). TimedOut if a worker
    // is not running after `timeout`; if one cannot start, its error
    // (SystemResources, ...), and the loop goes on with those it has. A
    // cancel point while it waits, when called from a fiber.
    Status startWorkers(std::chrono::nanoseconds timeout = std::chrono::seconds(5));
    // Worker threads started so far, and the most that may be started.
    unsigned activeThreads() const noexcept;
    unsigned maxThreads() const noexcept;
    IoStats ioStats() const noexcept;
    // The backend this loop runs on: io_uring or epoll, never automatic.
    IoBackend backend() const noexcept;
    // The scheduling policy this loop runs (chosen at create time).
    SchedulerPolicy scheduler() const noexcept;
    // The loop the calling fiber runs on, or nullptr outside any loop.
    static EventLoop* current() noexcept;

    detail::Loop* impl() const noexcept { return impl_; }

private:
    explicit EventLoop(detail::Loop* impl) : impl_(impl) {}
    detail::Loop* impl_;
};

} // namespace fiberscope
