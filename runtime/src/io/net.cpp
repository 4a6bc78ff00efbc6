// Socket operations: socket, bind, listen, accept, connect, recv, send,
// sendmsg/recvmsg (readv/writev on sockets, sendTo/recvFrom for datagrams),
// shutdown, close. (resolve is in resolve.cpp.)
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "support/errors.hpp"
#include "fiberscope/event_loop.hpp"
#include "io/operation.hpp"
#include "io/syscall_io.hpp"

namespace fiberscope {

using namespace detail;

namespace {

Result<int> run(const Operation& op) {
    auto done = execute(op);
    if (!done) return done.error();
    if (done->result < 0) return socketError(-done->result);
    return done->result;
}

// SO_REUSEADDR / SO_REUSEPORT as `options` say. setsockopt never blocks.
Status setReuse(Socket socket, const ListenOptions& options) {
    int domain = 0;
    socklen_t size = sizeof domain;
    if (::getsockopt(socket.fd, SOL_SOCKET, SO_DOMAIN, &domain, &size) != 0) return socketError(errno);
    const bool inet = domain == AF_INET || domain == AF_INET6;
    if (inet) {
        const int value = options.reuse_address ? 1 : 0;
        if (::setsockopt(socket.fd, SOL_SOCKET, SO_REUSEADDR, &value, sizeof value) != 0) return socketError(errno);
    }
    // Unix-domain sockets refuse SO_REUSEPORT (EOPNOTSUPP): said, not hidden.
    if (options.reuse_port || inet) {
        const int value = options.reuse_port ? 1 : 0;
        if (::setsockopt(socket.fd, SOL_SOCKET, SO_REUSEPORT, &value, sizeof value) != 0) return socketError(errno);
    }
    return {};
}
} // namespace

Result<Socket> EventLoop::socket(int family, SocketType type) {
    const int os_type = (type == SocketType::stream ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC;
    auto fd = run(Operation{.opcode = IORING_OP_SOCKET, .flags = os_type, .domain = family});
    if (!fd) return fd.error();
    return Socket{*fd};
}

Status EventLoop::bind(Socket socket, const Address& address) {
    auto done = run(Operation{.opcode = kOpBind, .fd = socket.fd, .address = const_cast<sockaddr*>(address.native()),
                              .length = address.size()});
    if (!done) return done.error();
    return {};
}

Status EventLoop::bind(Socket socket, const Address& address, const ListenOptions& options) {
    if (Status set = setReuse(socket, options); !set) return set;
    return bind(socket, address);
}

Status EventLoop::listen(Socket socket, const ListenOptions& options) {
    if (Status set = setReuse(socket, options); !set) return set;
    return listen(socket, options.backlog);
}

Status EventLoop::listen(Socket socket, int backlog) {
    if (backlog < 0) return Error{Errc::InvalidArgument, EINVAL};
    auto done = run(Operation{.opcode = kOpListen, .fd = socket.fd, .length = static_cast<std::uint64_t>(backlog)});
    if (!done) return done.error();
    return {};
}

Result<Socket> EventLoop::accept(Socket listener, Address* peer, Timeout timeout) {
    Address scratch;
    Address& into = peer ? *peer : scratch;
    *into.sizePointer() = sizeof(sockaddr_storage);
    auto fd = run(Operation{.opcode = IORING_OP_ACCEPT, .fd = listener.fd, .address = into.native(),
                            .address_size = into.sizePointer(), .flags = SOCK_CLOEXEC, .timeout_ns = timeoutNanoseconds(timeout)});
    if (!fd) return fd.error();
    return Socket{*fd};
}

Status EventLoop::connect(Socket socket, const Address& address, Timeout timeout) {
    auto done = run(Operation{.opcode = IORING_OP_CONNECT, .fd = socket.fd,
                              .address = const_cast<sockaddr*>(address.native()), .length = address.size(),
                              .timeout_ns = timeoutNanoseconds(timeout)});
    if (!done) return done.error();
    return {};
}

Result<std::size_t> EventLoop::recv(Socket socket, std::span<std::byte> buffer, Timeout timeout) {
    auto n = run(Operation{.opcode = IORING_OP_RECV, .fd = socket.fd, .address = buffer.data(),
                           .length = std::min(buffer.size(), kMaxTransfer), .timeout_ns = timeoutNanoseconds(timeout)});
    if (!n) return n.error();
    return static_cast<std::size_t>(*n);
}

Result<std::size_t> EventLoop::send(Socket socket, std::span<const std::byte> buffer, Timeout timeout) {
    // MSG_NOSIGNAL: a closed peer is an error value (BrokenPipe), not SIGPIPE.
    auto n = run(Operation{.opcode = IORING_OP_SEND, .fd = socket.fd, .address = const_cast<std::byte*>(buffer.data()),
                           .length = std::min(buffer.size(), kMaxTransfer), .flags = MSG_NOSIGNAL,
                           .timeout_ns = timeoutNanoseconds(timeout)});
    if (!n) return n.error();
    return static_cast<std::size_t>(*n);
}

Status EventLoop::sendAll(Socket socket, std::span<const std::byte> buffer, Timeout timeout) {
    while (!buffer.empty()) {
        auto sent = send(socket, buffer, timeout);
        if (!sent) return sent.error();
        buffer = buffer.subspan(*sent);
    }
    return {};
}

Result<std::size_t> EventLoop::readv(Socket socket, std::span<const iovec> buffers, Timeout timeout) {
    if (buffers.size() > kMaxVectors) return Error{Errc::InvalidArgument, EINVAL};
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(buffers.data());
    message.msg_iovlen = buffers.size();
    auto n = run(Operation{.opcode = IORING_OP_RECVMSG, .fd = socket.fd, .address = &message,
                           .timeout_ns = timeoutNanoseconds(timeout)});
    if (!n) return n.error();
    return static_cast<std::size_t>(*n);
}

Result<std::size_t> EventLoop::writev(Socket socket, std::span<const iovec> buffers, Timeout timeout) {
    if (buffers.size() > kMaxVectors) return Error{Errc::InvalidArgument, EINVAL};
    msghdr message{};
    message.msg_iov = const_cast<iovec*>(buffers.data());
    message.msg_iovlen = buffers.size();
    auto n = run(Operation{.opcode = IORING_OP_SENDMSG, .fd = socket.fd, .address = &message, .flags = MSG_NOSIGNAL,
                           .timeout_ns = timeoutNanoseconds(timeout)});
    if (!n) return n.error();
    return static_cast<std::size_t>(*n);
}

Result<std::size_t> EventLoop::sendTo(Socket socket, std::span<const std::byte> buffer, const Address& to,
                                      Timeout timeout) {
    iovec piece{const_cast<std::byte*>(buffer.data()), std::min(buffer.size(), kMaxTransfer)};
    msghdr message{};
    message.msg_name = const_cast<sockaddr*>(to.native());
    message.msg_namelen = to.size();
    message.msg_iov = &piece;
    message.msg_iovlen = 1;
    auto n = run(Operation{.opcode = IORING_OP_SENDMSG, .fd = socket.fd, .address = &message, .flags = MSG_NOSIGNAL,
                           .timeout_ns = timeoutNanoseconds(timeout)});
    if (!n) return n.error();
    return static_cast<std::size_t>(*n);
}

Result<std::size_t> EventLoop::recvFrom(Socket socket, std::span<std::byte> buffer, Address* from, Timeout timeout) {
    iovec piece{buffer.data(), std::min(buffer.size(), kMaxTransfer)};
    msghdr message{};
    if (from) {
        message.msg_name = from->native();
        message.msg_namelen = sizeof(sockaddr_storage);
    }
    message.msg_iov = &piece;
    message.msg_iovlen = 1;
    auto n = run(Operation{.opcode = IORING_OP_RECVMSG, .fd = socket.fd, .address = &message,
                           .timeout_ns = timeoutNanoseconds(timeout)});
    if (!n) return n.error();
    if (from) *from->sizePointer() = message.msg_namelen;
    return static_cast<std::size_t>(*n);
}

Status EventLoop::shutdown(Socket socket, ShutdownHow how) {
    const int os_how = how == ShutdownHow::read ? SHUT_RD : how == ShutdownHow::write ? SHUT_WR : SHUT_RDWR;
    auto done = run(Operation{.opcode = IORING_OP_SHUTDOWN, .fd = socket.fd, .flags = os_how});
    if (!done) return done.error();
    return {};
}

Status EventLoop::close(Socket socket) { return closeDescriptor(socket.fd); }

Result<Address> EventLoop::localAddress(Socket socket) {
    Address address;
    *address.sizePointer() = sizeof(sockaddr_storage);
    // getsockname never blocks: no operation to wait for.
    if (::getsockname(socket.fd, address.native(), address.sizePointer()) != 0) return socketError(errno);
    return address;
}

Result<Socket> EventLoop::listenOn(const Address& address, int backlog) {
    return listenOn(address, ListenOptions{.backlog = backlog});
}

Result<Socket> EventLoop::listenOn(const Address& address, const ListenOptions& options) {
    auto made = socket(address.family(), SocketType::stream);
    if (!made) return made.error();
    Status status = bind(*made, address, options);
    if (status) status = listen(*made, options.backlog);
    if (!status) {
        (void)close(*made);
        return status.error();
    }
    return made;
}

Result<Socket> EventLoop::connectTo(const Address& address, Timeout timeout) {
    auto made = socket(address.family(), SocketType::stream);
    if (!made) return made.error();
    if (address.family() != AF_UNIX) {
        // Request/response traffic: send small writes now, not after 40 ms.
        const int on = 1;
        ::setsockopt(made->fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    }
    if (Status connected = connect(*made, address, timeout); !connected) {
        (void)close(*made);
        return connected.error();
    }
    return made;
}

} // namespace fiberscope
