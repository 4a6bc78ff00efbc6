// Fiberscope's echo server for the echo benchmark: one fiber accepts, one
// fiber per connection echoes until the peer closes.
//
//   fiberscope_echo_server [--port P] [--threads N] [--backend uring|epoll]
//
// Prints "port P" once listening (P is the kernel's pick for --port 0), then
// serves until killed.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <fiberscope/fiberscope.hpp>

using namespace fiberscope;

static void serve(EventLoop& loop, Socket connection) {
    std::byte buffer[4096];
    for (;;) {
        auto n = loop.recv(connection, buffer);
        if (!n || *n == 0) break;
        if (!loop.sendAll(connection, std::span(buffer, *n))) break;
    }
    (void)loop.close(connection);
}

int main(int argc, char** argv) {
    unsigned port = 0, threads = 1;
    IoBackend backend = IoBackend::automatic;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--port" && i + 1 < argc) port = static_cast<unsigned>(std::atoi(argv[++i]));
        else if (arg == "--threads" && i + 1 < argc) threads = static_cast<unsigned>(std::atoi(argv[++i]));
        else if (arg == "--backend" && i + 1 < argc && (std::string_view(argv[i + 1]) == "uring" ||
                                                         std::string_view(argv[i + 1]) == "epoll"))
            backend = std::string_view(argv[++i]) == "epoll" ? IoBackend::epoll : IoBackend::io_uring;
        else {
            std::fprintf(stderr, "fiberscope_echo_server: bad argument '%s'; usage: %s [--port P] [--threads N] "
                                 "[--backend uring|epoll]\n", argv[i], argv[0]);
            return 2;
        }
    }
    auto created = EventLoop::create({.threads = threads, .backend = backend});
    if (!created) {
        std::fprintf(stderr, "fiberscope_echo_server: cannot start the event loop: %s\n", created.error().message());
        return 1;
    }
    auto& loop = *created;
    auto listener = loop->listenOn(Address::ipv4("127.0.0.1", static_cast<std::uint16_t>(port)).value(), 1024);
    if (!listener) {
        std::fprintf(stderr, "fiberscope_echo_server: cannot listen on port %u: %s\n", port, listener.error().message());
        return 1;
    }
    std::printf("port %u\n", loop->localAddress(*listener).value().port());
    std::fflush(stdout);
    for (;;) {
        auto connection = loop->accept(*listener);
        if (!connection) {
            std::fprintf(stderr, "fiberscope_echo_server: accept failed: %s\n", connection.error().message());
            return 1;
        }
        EventLoop& l = *loop;
        Socket c = *connection;
        loop->asyncDetached([&l, c] { serve(l, c); });
    }
}
