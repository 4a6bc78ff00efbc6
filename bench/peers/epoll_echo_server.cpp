// The echo benchmark's peer: a plain single-threaded epoll echo server, the
// way one is usually written (non-blocking sockets, level-triggered epoll,
// read then write back, EPOLLOUT only when a write falls short).
//
//   epoll_echo_server [--port P]
//
// Prints "port P" once listening, then serves until killed.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>

namespace {

struct Connection {
    std::string pending; // bytes read but not yet written back
    bool watching_out = false; // registered for EPOLLOUT
};

int fail(const char* what) {
    std::fprintf(stderr, "epoll_echo_server: %s: %s\n", what, std::strerror(errno));
    return 1;
}

} // namespace

int main(int argc, char** argv) {
    unsigned port = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--port" && i + 1 < argc) port = static_cast<unsigned>(std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "epoll_echo_server: bad argument '%s'; usage: %s [--port P]\n", argv[i], argv[0]);
            return 2;
        }
    }
    const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listener < 0) return fail("socket");
    const int on = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) return fail("bind");
    if (listen(listener, 1024) != 0) return fail("listen");
    socklen_t size = sizeof address;
    getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size);
    std::printf("port %u\n", ntohs(address.sin_port));
    std::fflush(stdout);

    const int epoll = epoll_create1(EPOLL_CLOEXEC);
    if (epoll < 0) return fail("epoll_create1");
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = listener;
    epoll_ctl(epoll, EPOLL_CTL_ADD, listener, &event);

    std::unordered_map<int, Connection> connections;
    char buffer[4096];
    epoll_event events[256];
    for (;;) {
        const int count = epoll_wait(epoll, events, 256, -1);
        if (count < 0) {
            if (errno == EINTR) continue;
            return fail("epoll_wait");
        }
        for (int i = 0; i < count; ++i) {
            const int fd = events[i].data.fd;
            if (fd == listener) {
                for (;;) {
                    const int client = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
                    if (client < 0) break;
                    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
                    epoll_event add{};
                    add.events = EPOLLIN;
                    add.data.fd = client;
                    epoll_ctl(epoll, EPOLL_CTL_ADD, client, &add);
                    connections[client];
                }
                continue;
            }
            Connection& connection = connections[fd];
            bool closed = false;
            if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
                const ssize_t n = read(fd, buffer, sizeof buffer);
                if (n > 0) connection.pending.append(buffer, static_cast<std::size_t>(n));
                else if (n == 0 || (errno != EAGAIN && errno != EINTR)) closed = true;
            }
            if (!closed && !connection.pending.empty()) {
                const ssize_t n = send(fd, connection.pending.data(), connection.pending.size(), MSG_NOSIGNAL);
                if (n > 0) connection.pending.erase(0, static_cast<std::size_t>(n));
                else if (n < 0 && errno != EAGAIN && errno != EINTR) closed = true;
            }
            // Watch for writability only while a write has fallen short.
            if (!closed && connection.watching_out == connection.pending.empty()) {
                connection.watching_out = !connection.pending.empty();
                epoll_event mod{};
                mod.events = EPOLLIN | (connection.watching_out ? unsigned(EPOLLOUT) : 0u);
                mod.data.fd = fd;
                epoll_ctl(epoll, EPOLL_CTL_MOD, fd, &mod);
            }
            if (closed) {
                epoll_ctl(epoll, EPOLL_CTL_DEL, fd, nullptr);
                close(fd);
                connections.erase(fd);
            }
        }
    }
}
