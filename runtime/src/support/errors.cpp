// Names and messages of every Errc, and the errno mappings.
#include "support/errors.hpp"

#include <netdb.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fiberscope {

const char* errcName(Errc code) noexcept {
    switch (code) {
#define FIBERSCOPE_ERRC(name) \
    case Errc::name: return #name;
        FIBERSCOPE_ERRC(Canceled) FIBERSCOPE_ERRC(OutOfMemory) FIBERSCOPE_ERRC(IoUringUnavailable)
        FIBERSCOPE_ERRC(InvalidArgument) FIBERSCOPE_ERRC(BadFileDescriptor) FIBERSCOPE_ERRC(FileNotFound)
        FIBERSCOPE_ERRC(AccessDenied) FIBERSCOPE_ERRC(PermissionDenied) FIBERSCOPE_ERRC(PathAlreadyExists)
        FIBERSCOPE_ERRC(IsDir) FIBERSCOPE_ERRC(NotDir) FIBERSCOPE_ERRC(NameTooLong) FIBERSCOPE_ERRC(SymLinkLoop)
        FIBERSCOPE_ERRC(FileTooBig) FIBERSCOPE_ERRC(NoSpaceLeft) FIBERSCOPE_ERRC(DiskQuota)
        FIBERSCOPE_ERRC(ProcessFdQuotaExceeded) FIBERSCOPE_ERRC(SystemFdQuotaExceeded)
        FIBERSCOPE_ERRC(SystemResources) FIBERSCOPE_ERRC(NoDevice) FIBERSCOPE_ERRC(DeviceBusy)
        FIBERSCOPE_ERRC(FileBusy) FIBERSCOPE_ERRC(WouldBlock) FIBERSCOPE_ERRC(InputOutput)
        FIBERSCOPE_ERRC(Unseekable) FIBERSCOPE_ERRC(BrokenPipe) FIBERSCOPE_ERRC(ConnectionResetByPeer)
        FIBERSCOPE_ERRC(NotOpenForReading) FIBERSCOPE_ERRC(NotOpenForWriting) FIBERSCOPE_ERRC(UnsupportedClock)
        FIBERSCOPE_ERRC(Closed) FIBERSCOPE_ERRC(TimedOut) FIBERSCOPE_ERRC(ConnectionRefused)
        FIBERSCOPE_ERRC(ConnectionAborted) FIBERSCOPE_ERRC(NetworkUnreachable) FIBERSCOPE_ERRC(HostUnreachable)
        FIBERSCOPE_ERRC(NetworkDown) FIBERSCOPE_ERRC(AddressInUse) FIBERSCOPE_ERRC(AddressNotAvailable)
        FIBERSCOPE_ERRC(AddressFamilyNotSupported) FIBERSCOPE_ERRC(ProtocolNotSupported) FIBERSCOPE_ERRC(NotSocket)
        FIBERSCOPE_ERRC(SocketNotConnected) FIBERSCOPE_ERRC(AlreadyConnected) FIBERSCOPE_ERRC(ConnectionPending)
        FIBERSCOPE_ERRC(OperationNotSupported) FIBERSCOPE_ERRC(MessageTooBig) FIBERSCOPE_ERRC(UnsupportedBackend)
        FIBERSCOPE_ERRC(NotOnLoopThread) FIBERSCOPE_ERRC(ProcessNotFound) FIBERSCOPE_ERRC(InvalidExecutable)
        FIBERSCOPE_ERRC(DirectoryNotEmpty) FIBERSCOPE_ERRC(ReadOnlyFileSystem)
        FIBERSCOPE_ERRC(RenameAcrossMountPoints) FIBERSCOPE_ERRC(LinkQuotaExceeded)
        FIBERSCOPE_ERRC(NameNotFound) FIBERSCOPE_ERRC(TemporaryNameFailure) FIBERSCOPE_ERRC(NameServerFailure)
        FIBERSCOPE_ERRC(ServiceNotFound)
        FIBERSCOPE_ERRC(Unexpected)
#undef FIBERSCOPE_ERRC
    }
    return "Unknown";
}

const char* errcMessage(Errc code) noexcept {
    switch (code) {
    case Errc::Canceled: return "the operation was canceled";
    case Errc::OutOfMemory: return "no memory for a fiber stack or a kernel object: memory, the address-space limit (ulimit -v) or the kernel's limit on memory mappings (sysctl vm.max_map_count) ran out; the runtime's log line names which (README \"Limits\")";
    case Errc::IoUringUnavailable: return "the kernel refused io_uring (seccomp profile, kernel.io_uring_disabled, or a kernel without it); allow io_uring for this process";
    case Errc::InvalidArgument: return "invalid argument";
    case Errc::BadFileDescriptor: return "bad file descriptor (closed twice, or never opened)";
    case Errc::FileNotFound: return "no such file or directory";
    case Errc::AccessDenied: return "access denied (file permissions or a security policy)";
    case Errc::PermissionDenied: return "operation not permitted (a missing privilege, or a seccomp filter or security policy refused the system call)";
    case Errc::PathAlreadyExists: return "the path already exists";
    case Errc::IsDir: return "the path is a directory";
    case Errc::NotDir: return "a component of the path is not a directory";
    case Errc::NameTooLong: return "the path is too long";
    case Errc::SymLinkLoop: return "too many levels of symbolic links";
    case Errc::FileTooBig: return "the file is too big";
    case Errc::NoSpaceLeft: return "no space left on the device";
    case Errc::DiskQuota: return "disk quota exceeded";
    case Errc::ProcessFdQuotaExceeded: return "this process has too many open files";
    case Errc::SystemFdQuotaExceeded: return "the system has too many open files";
    case Errc::SystemResources: return "the kernel is out of resources";
    case Errc::NoDevice: return "no such device";
    case Errc::DeviceBusy: return "the device is busy";
    case Errc::FileBusy: return "the file is busy";
    case Errc::WouldBlock: return "the operation would block";
    case Errc::InputOutput: return "input/output error";
    case Errc::Unseekable: return "the file is not seekable";
    case Errc::BrokenPipe: return "broken pipe";
    case Errc::ConnectionResetByPeer: return "connection reset by peer";
    case Errc::NotOpenForReading: return "the file is not open for reading";
    case Errc::NotOpenForWriting: return "the file is not open for writing";
    case Errc::UnsupportedClock: return "this clock is not supported for timers";
    case Errc::Closed: return "the queue is closed";
    case Errc::TimedOut: return "the operation timed out";
    case Errc::ConnectionRefused: return "connection refused (nothing listens at that address)";
    case Errc::ConnectionAborted: return "the connection was aborted before it was accepted";
    case Errc::NetworkUnreachable: return "the network is unreachable";
    case Errc::HostUnreachable: return "the host is unreachable";
    case Errc::NetworkDown: return "the network is down";
    case Errc::AddressInUse: return "the address is already in use; pick another port or wait for the old socket to close";
    case Errc::AddressNotAvailable: return "the address is not available on this machine";
    case Errc::AddressFamilyNotSupported: return "the address family is not supported";
    case Errc::ProtocolNotSupported: return "the protocol or socket type is not supported";
    case Errc::NotSocket: return "the descriptor is not a socket";
    case Errc::SocketNotConnected: return "the socket is not connected";
    case Errc::AlreadyConnected: return "the socket is already connected";
    case Errc::ConnectionPending: return "a connection attempt is already under way";
    case Errc::OperationNotSupported: return "the operation is not supported on this socket";
    case Errc::MessageTooBig: return "the message is too big to send in one piece";
    case Errc::UnsupportedBackend: return "the requested I/O backend is not available; use FIBERSCOPE_BACKEND=uring or epoll";
    case Errc::NotOnLoopThread: return "this call suspends, and the calling thread is not one of the loop's (a plain std::thread has no fiber to suspend); call it from a fiber (loop->async) or from the thread that created the loop";
    case Errc::DirectoryNotEmpty: return "the directory is not empty";
    case Errc::ReadOnlyFileSystem: return "the file system is read-only";
    case Errc::RenameAcrossMountPoints: return "a rename cannot move a file to another file system (copy it, then delete it)";
    case Errc::LinkQuotaExceeded: return "too many links to the file (or subdirectories in the directory)";
    case Errc::ProcessNotFound: return "no such process: the child was already waited for (reaped), or SIGCHLD is ignored so the kernel reaped it";
    case Errc::InvalidExecutable: return "the file is not a program this system can run (no #! line, or a binary for another machine)";
    case Errc::NameNotFound: return "the host name is not known (no such host, or no address of the requested family); check its spelling, /etc/hosts and the name servers in /etc/resolv.conf";
    case Errc::TemporaryNameFailure: return "name resolution failed for now (the name server did not answer or could not be reached); check the network and /etc/resolv.conf, then try again";
    case Errc::NameServerFailure: return "the name server failed to resolve the name and will keep failing; check the name servers in /etc/resolv.conf";
    case Errc::ServiceNotFound: return "the port name is not known for this socket type; give the port as a number, or use a name listed in /etc/services";
    case Errc::Unexpected: return "unexpected error from the kernel";
    }
    return "unknown error";
}

namespace detail {

void badResultAccess(const Error& error) noexcept {
    std::fprintf(stderr, "fiberscope: value() of a Result holding an error: %s (%s)", errcName(error.code),
                 errcMessage(error.code));
    if (error.sys_errno) std::fprintf(stderr, " [errno %d: %s]", error.sys_errno, std::strerror(error.sys_errno));
    std::fprintf(stderr, "\n");
    std::abort();
}

void fatal(const char* what, int err) {
    std::fprintf(stderr, "fiberscope: fatal: %s: %s\n", what, std::strerror(err));
    std::abort();
}

static Error common(int err) {
    switch (err) {
    case ECANCELED: return {Errc::Canceled, err};
    case ENOMEM: case ENOBUFS: return {Errc::SystemResources, err};
    case EINVAL: case EFAULT: return {Errc::InvalidArgument, err};
    case EBADF: return {Errc::BadFileDescriptor, err};
    case EAGAIN: return {Errc::WouldBlock, err};
    case EIO: return {Errc::InputOutput, err};
    case EACCES: return {Errc::AccessDenied, err};
    case EPERM: return {Errc::PermissionDenied, err};
    case EISDIR: return {Errc::IsDir, err};
    case ENXIO: case ENODEV: return {Errc::NoDevice, err};
    case EBUSY: return {Errc::DeviceBusy, err};
    case EFBIG: return {Errc::FileTooBig, err};
    case ETIMEDOUT: case ETIME: return {Errc::TimedOut, err};
    case EMFILE: return {Errc::ProcessFdQuotaExceeded, err};
    case ENFILE: return {Errc::SystemFdQuotaExceeded, err};
    case EPIPE: return {Errc::BrokenPipe, err};
    case ECONNRESET: return {Errc::ConnectionResetByPeer, err};
    case ECONNREFUSED: return {Errc::ConnectionRefused, err};
    case ECONNABORTED: return {Errc::ConnectionAborted, err};
    case ENETUNREACH: return {Errc::NetworkUnreachable, err};
    case EHOSTUNREACH: return {Errc::HostUnreachable, err};
    case ENETDOWN: return {Errc::NetworkDown, err};
    case EADDRINUSE: return {Errc::AddressInUse, err};
    case EADDRNOTAVAIL: return {Errc::AddressNotAvailable, err};
    case EAFNOSUPPORT: return {Errc::AddressFamilyNotSupported, err};
    case EPROTONOSUPPORT: case EPROTOTYPE: case ESOCKTNOSUPPORT: return {Errc::ProtocolNotSupported, err};
    case ENOTSOCK: return {Errc::NotSocket, err};
    case ENOTCONN: case EDESTADDRREQ: return {Errc::SocketNotConnected, err};
    case EISCONN: return {Errc::AlreadyConnected, err};
    case EALREADY: case EINPROGRESS: return {Errc::ConnectionPending, err};
    case EOPNOTSUPP: return {Errc::OperationNotSupported, err};
    case EMSGSIZE: return {Errc::MessageTooBig, err};
    case ENOENT: return {Errc::FileNotFound, err};
    case ENOSPC: return {Errc::NoSpaceLeft, err};
    default: return {Errc::Unexpected, err};
    }
}

Error openError(int err) {
    switch (err) {
    case ENOENT: return {Errc::FileNotFound, err};
    case EEXIST: return {Errc::PathAlreadyExists, err};
    case ENOTDIR: return {Errc::NotDir, err};
    case ENAMETOOLONG: return {Errc::NameTooLong, err};
    case ELOOP: return {Errc::SymLinkLoop, err};
    case EOVERFLOW: return {Errc::FileTooBig, err};
    case EMFILE: return {Errc::ProcessFdQuotaExceeded, err};
    case ENFILE: return {Errc::SystemFdQuotaExceeded, err};
    case ENOSPC: return {Errc::NoSpaceLeft, err};
    case ETXTBSY: return {Errc::FileBusy, err};
    case EDQUOT: return {Errc::DiskQuota, err};
    default: return common(err);
    }
}

Error readError(int err) {
    switch (err) {
    case EBADF: return {Errc::NotOpenForReading, err};
    case ESPIPE: case EOVERFLOW: return {Errc::Unseekable, err};
    case ECONNRESET: return {Errc::ConnectionResetByPeer, err};
    default: return common(err);
    }
}

Error writeError(int err) {
    switch (err) {
    case EBADF: return {Errc::NotOpenForWriting, err};
    case ESPIPE: case EOVERFLOW: return {Errc::Unseekable, err};
    case ENOSPC: return {Errc::NoSpaceLeft, err};
    case EDQUOT: return {Errc::DiskQuota, err};
    case EPIPE: return {Errc::BrokenPipe, err};
    case ECONNRESET: return {Errc::ConnectionResetByPeer, err};
    default: return common(err);
    }
}

Error pathError(int err) {
    switch (err) {
    case ENOTEMPTY: return {Errc::DirectoryNotEmpty, err};
    case EROFS: return {Errc::ReadOnlyFileSystem, err};
    case EXDEV: return {Errc::RenameAcrossMountPoints, err};
    case EMLINK: return {Errc::LinkQuotaExceeded, err};
    default: return openError(err);
    }
}

Error closeError(int err) { return common(err); }

Error systemError(int err) { return common(err); }

Error timerError(int err) { return common(err); }

Error socketError(int err) { return common(err); }

Error resolveError(int eai, int err) {
    switch (eai) {
    case EAI_NONAME: case EAI_NODATA: case EAI_ADDRFAMILY: return {Errc::NameNotFound, 0};
    case EAI_AGAIN: return {Errc::TemporaryNameFailure, 0};
    case EAI_FAIL: return {Errc::NameServerFailure, 0};
    case EAI_SERVICE: return {Errc::ServiceNotFound, 0};
    case EAI_FAMILY: return {Errc::AddressFamilyNotSupported, EAFNOSUPPORT};
    case EAI_SOCKTYPE: return {Errc::ProtocolNotSupported, ESOCKTNOSUPPORT};
    case EAI_BADFLAGS: case EAI_OVERFLOW: return {Errc::InvalidArgument, EINVAL};
    // The name cannot be written in the DNS's alphabet (IDN encoding).
    case EAI_IDN_ENCODE: return {Errc::InvalidArgument, EINVAL};
    case EAI_MEMORY: return {Errc::OutOfMemory, ENOMEM};
    case EAI_CANCELED: return {Errc::Canceled, ECANCELED};
    case EAI_INTR: return {Errc::TemporaryNameFailure, EINTR};
    // getaddrinfo_a's codes (EAI_INPROGRESS, EAI_NOTCANCELED, EAI_ALLDONE)
    // never come from getaddrinfo.
    case EAI_SYSTEM: return err ? common(err) : Error{Errc::Unexpected, 0};
    default: return {Errc::Unexpected, 0};
    }
}

} // namespace detail
} // namespace fiberscope
