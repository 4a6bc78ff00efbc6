// Sockets and socket addresses for EventLoop's network operations.
//
// A Socket is a plain descriptor, like File: closing it is an explicit,
// awaitable operation (EventLoop::close). An Address is numeric: IPv4
// ("127.0.0.1:8080"), IPv6 ("[::1]:8080") or a Unix socket path
// ("unix:/tmp/echo.sock"). Names ("localhost:8080", "example.com:https")
// become Addresses through EventLoop::resolve, which runs getaddrinfo on a
// blocking-pool thread: getaddrinfo may wait seconds for a name server and
// cannot be interrupted, so a worker thread must never call it. A canceled
// resolve returns at once and leaves the lookup to finish on its own.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "fiberscope/result.hpp"

namespace fiberscope {

struct Socket {
    int fd = -1;
    bool valid() const noexcept { return fd >= 0; }
};

enum class SocketType { stream, datagram };
enum class ShutdownHow { read, write, both };

// How EventLoop::listenOn (and bind/listen given them) set up a listener.
struct ListenOptions {
    // The kernel's queue of connections not yet accepted (listen(2); the
    // kernel caps it at net.core.somaxconn).
    int backlog = 128;
    // SO_REUSEADDR, default on: a restarted server can bind its port while
    // connections of the old one linger in TIME_WAIT (up to 60 s). On Linux
    // it never lets two sockets listen on one port, so it hides no mistake.
    // Ignored for Unix-domain sockets, which have no TIME_WAIT.
    bool reuse_address = true;
    // SO_REUSEPORT, default off: several sockets (of the same user) listen on
    // one port and the kernel spreads connections across them. Off, a second
    // listener on the port fails with AddressInUse, which is what catches a
    // server started twice. Every listener on the port must set it. Not for
    // Unix-domain sockets (OperationNotSupported).
    bool reuse_port = false;
};

// Hints for EventLoop::resolve.
struct ResolveOptions {
    // AF_UNSPEC (both), AF_INET or AF_INET6.
    int family = AF_UNSPEC;
    // The socket the addresses are for: each address appears once for it.
    SocketType type = SocketType::stream;
};

class Address {
public:
    Address() = default;
    // Numeric IPv4 / IPv6 literals; port 0 lets the kernel pick a port
    // (read it back with EventLoop::localAddress).
    static Result<Address> ipv4(std::string_view host, std::uint16_t port);
    static Result<Address> ipv6(std::string_view host, std::uint16_t port);
    // A Unix-domain socket path (at most 107 bytes). A leading '@' names an
    // abstract socket, which leaves no file behind.
    static Result<Address> local(std::string_view path);
    // "HOST:PORT", "[HOST6]:PORT" or "unix:PATH"; InvalidArgument otherwise.
    static Result<Address> parse(std::string_view text);
    // Wraps what the kernel filled in (accept, getsockname).
    static Address fromNative(const sockaddr* address, socklen_t size);

    int family() const noexcept { return storage_.ss_family; }
    // The port of an IPv4/IPv6 address, 0 for other families.
    std::uint16_t port() const noexcept;
    // The same text parse() accepts.
    std::string toString() const;

    const sockaddr* native() const noexcept { return reinterpret_cast<const sockaddr*>(&storage_); }
    sockaddr* native() noexcept { return reinterpret_cast<sockaddr*>(&storage_); }
    socklen_t size() const noexcept { return size_; }
    socklen_t* sizePointer() noexcept { return &size_; }

private:
    sockaddr_storage storage_{};
    socklen_t size_ = 0;
};

} // namespace fiberscope
