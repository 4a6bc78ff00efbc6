// Sockets and socket addresses for EventLoop's network operations.
//
// A Socket is a plain descriptor, like File: closing it is an explicit,
// awaitable operation (EventLoop::close). Addresses are numeric: IPv4
// ("127.0.0.1:8080"), IPv6 ("[::1]:8080") or a Unix socket path
// ("unix:/tmp/echo.sock"). Name resolution would block a worker thread, so
// the runtime does not do it; resolve names before calling in.
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
