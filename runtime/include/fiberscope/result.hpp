// Errors as values.
//
// Every fallible runtime operation returns `Result<T>` (or `Status` when there
// is no value). A `Result` holds either a value or an `Error`; `Error` names
// the failure with an `Errc` and keeps the raw errno it came from, if any.
// The runtime never throws. Exceptions thrown by *your* closures are carried
// to whoever awaits the fiber and rethrown there (see future.hpp).
#pragma once

#include <cstdlib>
#include <new>
#include <type_traits>
#include <utility>

namespace fiberscope {

// One name for every failure the runtime reports. `errcName` gives the
// identifier, `errcMessage` one plain sentence for a user.
enum class Errc : int {
    Canceled = 1,          // the operation was canceled (Future::cancel, Group::cancel)
    OutOfMemory,           // a fiber stack or a kernel object could not be allocated
    IoUringUnavailable,    // the kernel refused io_uring (ENOSYS, EPERM, io_uring_disabled)
    InvalidArgument,       // EINVAL, or a bad argument caught before any syscall
    BadFileDescriptor,     // EBADF: the file was closed (twice?) or never opened
    FileNotFound,          // ENOENT
    AccessDenied,          // EACCES
    PermissionDenied,      // EPERM
    PathAlreadyExists,     // EEXIST
    IsDir,                 // EISDIR
    NotDir,                // ENOTDIR
    NameTooLong,           // ENAMETOOLONG
    SymLinkLoop,           // ELOOP
    FileTooBig,            // EFBIG, EOVERFLOW
    NoSpaceLeft,           // ENOSPC
    DiskQuota,             // EDQUOT
    ProcessFdQuotaExceeded,// EMFILE
    SystemFdQuotaExceeded, // ENFILE
    SystemResources,       // ENOMEM, ENOBUFS
    NoDevice,              // ENODEV, ENXIO
    DeviceBusy,            // EBUSY
    FileBusy,              // ETXTBSY
    WouldBlock,            // EAGAIN
    InputOutput,           // EIO
    Unseekable,            // ESPIPE
    BrokenPipe,            // EPIPE
    ConnectionResetByPeer, // ECONNRESET
    NotOpenForReading,     // EBADF on a read
    NotOpenForWriting,     // EBADF on a write
    UnsupportedClock,      // a clock the kernel's timers do not support
    Closed,                // Queue::get/put after Queue::close
    TimedOut,              // ETIMEDOUT, or an operation's Timeout expired
    ConnectionRefused,     // ECONNREFUSED
    ConnectionAborted,     // ECONNABORTED
    NetworkUnreachable,    // ENETUNREACH
    HostUnreachable,       // EHOSTUNREACH
    NetworkDown,           // ENETDOWN
    AddressInUse,          // EADDRINUSE
    AddressNotAvailable,   // EADDRNOTAVAIL
    AddressFamilyNotSupported, // EAFNOSUPPORT
    ProtocolNotSupported,  // EPROTONOSUPPORT, EPROTOTYPE, ESOCKTNOSUPPORT
    NotSocket,             // ENOTSOCK
    SocketNotConnected,    // ENOTCONN, EDESTADDRREQ
    AlreadyConnected,      // EISCONN
    ConnectionPending,     // EALREADY, EINPROGRESS
    OperationNotSupported, // EOPNOTSUPP
    MessageTooBig,         // EMSGSIZE
    UnsupportedBackend,    // an I/O backend this build or kernel cannot provide
    NotOnLoopThread,       // a call that suspends, made on a thread that is not one of the loop's
    ProcessNotFound,       // ESRCH, ECHILD: the child was already waited for (reaped)
    InvalidExecutable,     // ENOEXEC, ELIBBAD: the file is not a program this kernel can run
    DirectoryNotEmpty,     // ENOTEMPTY (and EEXIST from rmdir)
    ReadOnlyFileSystem,    // EROFS
    RenameAcrossMountPoints, // EXDEV
    LinkQuotaExceeded,     // EMLINK: too many links (or subdirectories)
    NameNotFound,          // EAI_NONAME, EAI_NODATA, EAI_ADDRFAMILY: no such host (or no address of that family)
    TemporaryNameFailure,  // EAI_AGAIN: the name server did not answer; try again later
    NameServerFailure,     // EAI_FAIL: the name server failed for good
    ServiceNotFound,       // EAI_SERVICE: a port name /etc/services does not know (for this socket type)
    Unexpected,            // an errno the runtime does not name (kept in Error::sys_errno)
};

const char* errcName(Errc code) noexcept;
const char* errcMessage(Errc code) noexcept;

struct Error {
    Errc code = Errc::Unexpected;
    int sys_errno = 0; // the errno it came from, 0 if none

    const char* name() const noexcept { return errcName(code); }
    const char* message() const noexcept { return errcMessage(code); }
    friend bool operator==(const Error& a, Errc b) noexcept { return a.code == b; }
};

namespace detail {
[[noreturn]] void badResultAccess(const Error& error) noexcept;
}

// Result<T>: a value or an Error (like C++23 std::expected<T, Error>).
// `value()` on an error prints the error and aborts: check first, or use
// `operator bool` / `has_value()`.
template <class T>
class [[nodiscard]] Result {
public:
    template <class U = T, class = std::enable_if_t<std::is_constructible_v<T, U&&>>>
    Result(U&& value) : ok_(true) { ::new (&value_) T(std::forward<U>(value)); }
    Result(Error error) : ok_(false) { ::new (&error_) Error(error); }
    Result(Errc code) : Result(Error{code, 0}) {}

    Result(Result&& other) noexcept(std::is_nothrow_move_constructible_v<T>) : ok_(other.ok_) {
        if (ok_) ::new (&value_) T(std::move(other.value_));
        else ::new (&error_) Error(other.error_);
    }
    Result(const Result& other) : ok_(other.ok_) {
        if (ok_) ::new (&value_) T(other.value_);
        else ::new (&error_) Error(other.error_);
    }
    Result& operator=(Result other) {
        this->~Result();
        ::new (this) Result(std::move(other));
        return *this;
    }
    ~Result() {
        if (ok_) value_.~T();
    }

    bool has_value() const noexcept { return ok_; }
    explicit operator bool() const noexcept { return ok_; }

    T& value() & { check(); return value_; }
    const T& value() const& { check(); return value_; }
    T&& value() && { check(); return std::move(value_); }
    T& operator*() & { return value(); }
    T&& operator*() && { return std::move(*this).value(); }
    T* operator->() { return &value(); }
    const Error& error() const noexcept { return error_; }
    template <class U>
    T value_or(U&& fallback) const& { return ok_ ? value_ : T(std::forward<U>(fallback)); }

private:
    void check() const {
        if (!ok_) detail::badResultAccess(error_);
    }
    bool ok_;
    union {
        T value_;
        Error error_;
    };
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : ok_(false), error_(error) {}
    Result(Errc code) : Result(Error{code, 0}) {}
    bool has_value() const noexcept { return ok_; }
    explicit operator bool() const noexcept { return ok_; }
    void value() const {
        if (!ok_) detail::badResultAccess(error_);
    }
    const Error& error() const noexcept { return error_; }

private:
    bool ok_ = true;
    Error error_{};
};

using Status = Result<void>;

} // namespace fiberscope
