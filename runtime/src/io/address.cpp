// Address: parsing and printing numeric socket addresses.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <charconv>
#include <cstddef>
#include <cstring>

#include "fiberscope/net.hpp"

namespace fiberscope {

static constexpr Error kBadAddress{Errc::InvalidArgument, EINVAL};

Result<Address> Address::ipv4(std::string_view host, std::uint16_t port) {
    char text[INET_ADDRSTRLEN] = {};
    if (host.size() >= sizeof text) return kBadAddress;
    std::memcpy(text, host.data(), host.size());
    Address address;
    auto* in = reinterpret_cast<sockaddr_in*>(&address.storage_);
    in->sin_family = AF_INET;
    in->sin_port = htons(port);
    if (inet_pton(AF_INET, text, &in->sin_addr) != 1) return kBadAddress;
    address.size_ = sizeof(sockaddr_in);
    return address;
}

Result<Address> Address::ipv6(std::string_view host, std::uint16_t port) {
    char text[INET6_ADDRSTRLEN] = {};
    if (host.size() >= sizeof text) return kBadAddress;
    std::memcpy(text, host.data(), host.size());
    Address address;
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&address.storage_);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(port);
    if (inet_pton(AF_INET6, text, &in6->sin6_addr) != 1) return kBadAddress;
    address.size_ = sizeof(sockaddr_in6);
    return address;
}

Result<Address> Address::local(std::string_view path) {
    Address address;
    auto* un = reinterpret_cast<sockaddr_un*>(&address.storage_);
    if (path.empty() || path.size() >= sizeof un->sun_path) return Error{Errc::NameTooLong, ENAMETOOLONG};
    un->sun_family = AF_UNIX;
    std::memcpy(un->sun_path, path.data(), path.size());
    // Abstract sockets are named by the bytes after a leading NUL.
    if (path[0] == '@') un->sun_path[0] = '\0';
    address.size_ = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size() + (path[0] == '@' ? 0 : 1));
    return address;
}

Result<Address> Address::parse(std::string_view text) {
    if (text.starts_with("unix:")) return local(text.substr(5));
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos || colon + 1 == text.size()) return kBadAddress;
    unsigned port = 0;
    const std::string_view digits = text.substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (ec != std::errc{} || end != digits.data() + digits.size() || port > 65535) return kBadAddress;
    std::string_view host = text.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        return ipv6(host.substr(1, host.size() - 2), static_cast<std::uint16_t>(port));
    return ipv4(host, static_cast<std::uint16_t>(port));
}

Address Address::fromNative(const sockaddr* native, socklen_t size) {
    Address address;
    if (size > sizeof address.storage_) size = sizeof address.storage_;
    std::memcpy(&address.storage_, native, size);
    address.size_ = size;
    return address;
}

std::uint16_t Address::port() const noexcept {
    if (family() == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage_)->sin_port);
    if (family() == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_port);
    return 0;
}

std::string Address::toString() const {
    char text[INET6_ADDRSTRLEN] = {};
    switch (family()) {
    case AF_INET:
        inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage_)->sin_addr, text, sizeof text);
        return std::string(text) + ":" + std::to_string(port());
    case AF_INET6:
        inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage_)->sin6_addr, text, sizeof text);
        return std::string("[").append(text).append("]:").append(std::to_string(port()));
    case AF_UNIX: {
        const auto* un = reinterpret_cast<const sockaddr_un*>(&storage_);
        const std::size_t length = size_ > offsetof(sockaddr_un, sun_path) ? size_ - offsetof(sockaddr_un, sun_path) : 0;
        if (length == 0) return "unix:";
        if (un->sun_path[0] == '\0') return std::string("unix:@").append(un->sun_path + 1, length - 1);
        return std::string("unix:").append(un->sun_path, strnlen(un->sun_path, length));
    }
    default: return std::string("(unknown address family ").append(std::to_string(family())).append(")");
    }
}

} // namespace fiberscope
