// Sockets, timeouts, in-flight cancellation and ring pressure.
#include "test_support.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

using namespace fiberscope;
using namespace std::chrono_literals;

namespace {

// Open descriptors of this process, other than rings (workers start lazily
// and bring their own): a leak shows up as a growing count.
int openFdCount() {
    int count = 0;
    if (DIR* dir = opendir("/proc/self/fd")) {
        while (dirent* entry = readdir(dir)) {
            if (entry->d_name[0] == '.') continue;
            char target[256] = {};
            const std::string link = std::string("/proc/self/fd/") + entry->d_name;
            // A lazily started worker's own descriptors: its ring, or its
            // epoll instance and eventfd.
            if (readlink(link.c_str(), target, sizeof target - 1) > 0 &&
                (std::strstr(target, "io_uring") || std::strstr(target, "eventpoll") || std::strstr(target, "eventfd")))
                continue;
            ++count;
        }
        closedir(dir);
    }
    return count;
}

std::span<const std::byte> bytesOf(std::string_view text) { return std::as_bytes(std::span(text.data(), text.size())); }

// A listener on an ephemeral loopback port, and its address.
struct Listener {
    Socket socket;
    Address address;
};

Listener listenLoopback(EventLoop& loop, int backlog = 128) {
    auto socket = loop.listenOn(Address::ipv4("127.0.0.1", 0).value(), backlog);
    if (!socket) FAIL("listenOn(127.0.0.1:0) failed: " << socket.error().message());
    auto address = loop.localAddress(*socket);
    REQUIRE(address);
    return {*socket, *address};
}

// Accepts one connection and echoes until the peer closes; returns the bytes echoed.
std::size_t echoOnce(EventLoop& loop, Socket listener) {
    auto peer = loop.accept(listener);
    if (!peer) return 0;
    std::size_t total = 0;
    std::byte buffer[4096];
    for (;;) {
        auto n = loop.recv(*peer, buffer);
        if (!n || *n == 0) break;
        if (!loop.sendAll(*peer, std::span(buffer, *n))) break;
        total += *n;
    }
    (void)loop.close(*peer);
    return total;
}

void roundTrip(EventLoop& loop, const Address& address, Socket listener) {
    auto server = loop.async([&] { return echoOnce(loop, listener); });
    auto client = loop.connectTo(address);
    REQUIRE(client);
    const std::string_view message = "hello over the ring";
    REQUIRE(loop.sendAll(*client, bytesOf(message)));
    std::string back(message.size(), '\0');
    std::size_t got = 0;
    while (got < back.size()) {
        auto n = loop.recv(*client, std::as_writable_bytes(std::span(back.data() + got, back.size() - got)));
        REQUIRE(n);
        REQUIRE(*n > 0);
        got += *n;
    }
    REQUIRE(back == message);
    REQUIRE(loop.shutdown(*client, ShutdownHow::write));
    char byte;
    auto eof = loop.recv(*client, std::as_writable_bytes(std::span(&byte, 1)));
    REQUIRE(eof);
    REQUIRE(*eof == 0);
    REQUIRE(server.await() == message.size());
    REQUIRE(loop.close(*client));
}

} // namespace

TEST_CASE("addresses parse and print IPv4, IPv6 and Unix forms", "[net]") {
    REQUIRE(Address::parse("127.0.0.1:8080").value().toString() == "127.0.0.1:8080");
    REQUIRE(Address::parse("127.0.0.1:8080").value().port() == 8080);
    REQUIRE(Address::parse("[::1]:9").value().toString() == "[::1]:9");
    REQUIRE(Address::parse("[::1]:9").value().family() == AF_INET6);
    REQUIRE(Address::parse("unix:/tmp/x.sock").value().toString() == "unix:/tmp/x.sock");
    REQUIRE(Address::parse("unix:@abstract").value().toString() == "unix:@abstract");
    for (const char* bad : {"", "127.0.0.1", "127.0.0.1:", "127.0.0.1:99999", "localhost:80", "1.2.3:4", "[::1:80",
                            "127.0.0.1:8x"})
        REQUIRE(Address::parse(bad).error() == Errc::InvalidArgument);
    REQUIRE(Address::local(std::string(200, 'a')).error() == Errc::NameTooLong);
}

TEST_CASE("TCP over IPv4: connect, accept, send, recv, shutdown, close", "[net]") {
    auto loop = test::makeLoop(2);
    const int fds_before = openFdCount();
    for (int i = 0; i < test::scaled(50); ++i) {
        Listener listener = listenLoopback(*loop);
        roundTrip(*loop, listener.address, listener.socket);
        REQUIRE(loop->close(listener.socket));
    }
    REQUIRE(openFdCount() == fds_before);
}

TEST_CASE("TCP over IPv6 loopback", "[net]") {
    auto loop = test::makeLoop(2);
    auto listener = loop->listenOn(Address::ipv6("::1", 0).value());
    if (!listener && (listener.error() == Errc::AddressNotAvailable || listener.error() == Errc::AddressFamilyNotSupported)) {
        WARN("no IPv6 loopback on this machine: " << listener.error().message());
        return;
    }
    REQUIRE(listener);
    auto address = loop->localAddress(*listener);
    REQUIRE(address);
    REQUIRE(address->family() == AF_INET6);
    roundTrip(*loop, *address, *listener);
    REQUIRE(loop->close(*listener));
}

TEST_CASE("Unix-domain sockets, by path and abstract", "[net]") {
    auto loop = test::makeLoop(2);
    const std::string path = "/tmp/fiberscope-test-" + std::to_string(getpid()) + ".sock";
    unlink(path.c_str());
    for (const std::string& name : {path, "@fiberscope-test-" + std::to_string(getpid())}) {
        auto address = Address::local(name);
        REQUIRE(address);
        auto listener = loop->listenOn(*address);
        REQUIRE(listener);
        roundTrip(*loop, *address, *listener);
        REQUIRE(loop->close(*listener));
    }
    unlink(path.c_str());
}

TEST_CASE("socket errors are named Errc values", "[net][errors]") {
    auto loop = test::makeLoop(2);
    // Nothing listens on a port we just released.
    Listener listener = listenLoopback(*loop);
    REQUIRE(loop->close(listener.socket));
    REQUIRE(loop->connectTo(listener.address).error() == Errc::ConnectionRefused);

    Listener busy = listenLoopback(*loop);
    auto second = loop->socket(AF_INET);
    REQUIRE(second);
    REQUIRE(loop->bind(*second, busy.address).error() == Errc::AddressInUse);
    REQUIRE(loop->close(*second));
    REQUIRE(loop->bind(Socket{}, busy.address).error() == Errc::BadFileDescriptor);
    REQUIRE(loop->socket(12345).error() == Errc::AddressFamilyNotSupported);
    REQUIRE(loop->listen(busy.socket, -1).error() == Errc::InvalidArgument);

    // recv on a file: not a socket.
    int pipe_fds[2];
    REQUIRE(pipe(pipe_fds) == 0);
    char byte = 0;
    REQUIRE(loop->recv(Socket{pipe_fds[0]}, std::as_writable_bytes(std::span(&byte, 1))).error() == Errc::NotSocket);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);

    // Sending on an unconnected stream socket.
    auto lonely = loop->socket(AF_INET);
    REQUIRE(lonely);
    REQUIRE(loop->send(*lonely, bytesOf("x")).error() == Errc::BrokenPipe); // Linux says EPIPE here
    REQUIRE(loop->recv(*lonely, std::as_writable_bytes(std::span(&byte, 1))).error() == Errc::SocketNotConnected);
    REQUIRE(loop->close(*lonely));
    REQUIRE(loop->close(*lonely).error() == Errc::BadFileDescriptor);

    // Writing to a peer that has gone: BrokenPipe or ConnectionResetByPeer,
    // never SIGPIPE (which would kill this test).
    auto server = loop->async([&] {
        auto peer = loop->accept(busy.socket);
        if (peer) (void)loop->close(*peer);
        return peer.has_value();
    });
    auto client = loop->connectTo(busy.address);
    REQUIRE(client);
    REQUIRE(server.await());
    Status sent;
    for (int i = 0; i < 100 && sent; ++i) sent = loop->sendAll(*client, bytesOf(std::string(4096, 'x')));
    REQUIRE_FALSE(sent);
    REQUIRE((sent.error() == Errc::BrokenPipe || sent.error() == Errc::ConnectionResetByPeer));
    REQUIRE(loop->close(*client));
    REQUIRE(loop->close(busy.socket));
}

TEST_CASE("readv and writev on files and sockets", "[net][io]") {
    auto loop = test::makeLoop(2);
    const std::string path = "/tmp/fiberscope-test-" + std::to_string(getpid()) + "-vec";
    auto file = loop->createFile(path, {.read = true});
    REQUIRE(file);
    char a[] = "abc", b[] = "defgh";
    iovec out[] = {{a, 3}, {b, 5}};
    REQUIRE(loop->pwritev(*file, out, 10).value() == 8);
    char x[4] = {}, y[4] = {};
    iovec in[] = {{x, 4}, {y, 4}};
    REQUIRE(loop->preadv(*file, in, 10).value() == 8);
    REQUIRE(std::string(x, 4) == "abcd");
    REQUIRE(std::string(y, 4) == "efgh");
    REQUIRE(loop->close(*file));
    unlink(path.c_str());

    int pair[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    REQUIRE(loop->writev(Socket{pair[0]}, out).value() == 8);
    std::memset(x, 0, 4);
    std::memset(y, 0, 4);
    REQUIRE(loop->readv(Socket{pair[1]}, in).value() == 8);
    REQUIRE(std::string(x, 4) + std::string(y, 4) == "abcdefgh");
    REQUIRE(loop->close(Socket{pair[0]}));
    REQUIRE(loop->close(Socket{pair[1]}));
}

TEST_CASE("a Timeout withdraws a waiting operation with TimedOut", "[net][timeout]") {
    auto loop = test::makeLoop(2);
    int pair[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    char byte = 0;
    auto buffer = std::as_writable_bytes(std::span(&byte, 1));
    for (int i = 0; i < test::scaled(20); ++i) {
        auto start = std::chrono::steady_clock::now();
        auto idle = loop->recv(Socket{pair[0]}, buffer, 20ms);
        const double took = test::secondsSince(start);
        REQUIRE_FALSE(idle);
        REQUIRE(idle.error() == Errc::TimedOut);
        REQUIRE(took >= 0.015);
        REQUIRE(took < 2.0);
    }
    // Data in time: the operation completes and its timeout is disarmed.
    REQUIRE(::write(pair[1], "k", 1) == 1);
    auto got = loop->recv(Socket{pair[0]}, buffer, 5s);
    REQUIRE(got);
    REQUIRE(*got == 1);
    REQUIRE(byte == 'k');
    // The same on a pipe, and on accept.
    int pipe_fds[2];
    REQUIRE(pipe2(pipe_fds, O_CLOEXEC) == 0);
    REQUIRE(loop->read(File{pipe_fds[0]}, buffer, 10ms).error() == Errc::TimedOut);
    Listener listener = listenLoopback(*loop);
    REQUIRE(loop->accept(listener.socket, nullptr, 10ms).error() == Errc::TimedOut);
    REQUIRE(loop->close(listener.socket));
    for (int fd : {pipe_fds[0], pipe_fds[1], pair[0], pair[1]}) ::close(fd);
}

TEST_CASE("sleep races I/O through select", "[net][timeout][select]") {
    auto loop = test::makeLoop(2);
    int pair[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    for (int i = 0; i < test::scaled(20); ++i) {
        const bool data_first = i % 2 == 0;
        if (data_first) REQUIRE(::write(pair[1], "d", 1) == 1);
        auto reader = loop->async([&]() -> Result<std::size_t> {
            char byte;
            return loop->recv(Socket{pair[0]}, std::as_writable_bytes(std::span(&byte, 1)));
        });
        auto timer = loop->async([&] { return loop->sleep(data_first ? 10s : 10ms); });
        const std::size_t first = select(reader, timer).value();
        if (data_first) {
            REQUIRE(first == 0);
            REQUIRE(reader.await().value() == 1);
            REQUIRE(timer.cancel().error() == Errc::Canceled);
        } else {
            REQUIRE(first == 1);
            REQUIRE(timer.await());
            REQUIRE(reader.cancel().error() == Errc::Canceled);
        }
    }
    ::close(pair[0]);
    ::close(pair[1]);
}

// Cancels `op` (started on a fiber) after it has had time to block, and
// checks it returns Canceled promptly.
template <class Op>
void cancelInFlight(EventLoop& loop, Op op, const char* what) {
    for (int i = 0; i < test::scaled(30); ++i) {
        auto blocked = loop.async(op);
        if (i % 3 != 0) (void)loop.sleep(std::chrono::milliseconds(i % 3 == 1 ? 1 : 20));
        auto start = std::chrono::steady_clock::now();
        Status result = blocked.cancel();
        INFO(what << ", iteration " << i);
        REQUIRE_FALSE(result);
        REQUIRE(result.error() == Errc::Canceled);
        REQUIRE(test::secondsSince(start) < 2.0);
    }
}

TEST_CASE("canceling in-flight operations: accept, idle recv, black-hole connect, pipe read", "[net][cancel]") {
    auto loop = test::makeLoop(2);
    const int fds_before = openFdCount();
    Listener listener = listenLoopback(*loop);
    cancelInFlight(*loop, [&]() -> Status {
        auto peer = loop->accept(listener.socket);
        if (peer) (void)loop->close(*peer);
        return peer ? Status{} : Status{peer.error()};
    }, "accept");

    int pair[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    cancelInFlight(*loop, [&]() -> Status {
        char byte;
        auto n = loop->recv(Socket{pair[0]}, std::as_writable_bytes(std::span(&byte, 1)));
        return n ? Status{} : Status{n.error()};
    }, "recv");

    // A black hole: a listener with a full accept queue drops new SYNs, so a
    // connect to it waits (for retransmits) until canceled.
    Listener full = listenLoopback(*loop, 0);
    std::vector<Socket> fillers;
    for (int i = 0; i < 4; ++i) {
        auto filler = loop->socket(AF_INET);
        REQUIRE(filler);
        int flags = fcntl(filler->fd, F_GETFL);
        fcntl(filler->fd, F_SETFL, flags | O_NONBLOCK);
        ::connect(filler->fd, full.address.native(), full.address.size());
        fillers.push_back(*filler);
    }
    (void)loop->sleep(20ms);
    cancelInFlight(*loop, [&]() -> Status {
        auto socket = loop->socket(AF_INET);
        if (!socket) return socket.error();
        Status connected = loop->connect(*socket, full.address);
        (void)loop->close(*socket);
        return connected;
    }, "connect");
    // With a Timeout instead of a cancel, the same connect reports TimedOut.
    auto socket = loop->socket(AF_INET);
    REQUIRE(socket);
    REQUIRE(loop->connect(*socket, full.address, 30ms).error() == Errc::TimedOut);
    REQUIRE(loop->close(*socket));

    int pipe_fds[2];
    REQUIRE(pipe2(pipe_fds, O_CLOEXEC) == 0);
    cancelInFlight(*loop, [&]() -> Status {
        char byte;
        auto n = loop->read(File{pipe_fds[0]}, std::as_writable_bytes(std::span(&byte, 1)));
        return n ? Status{} : Status{n.error()};
    }, "pipe read");

    // Nothing leaked: every descriptor the operations made is closed.
    for (Socket s : fillers) REQUIRE(loop->close(s));
    for (int fd : {pipe_fds[0], pipe_fds[1], pair[0], pair[1]}) ::close(fd);
    REQUIRE(loop->close(full.socket));
    REQUIRE(loop->close(listener.socket));
    REQUIRE(openFdCount() == fds_before);
}

TEST_CASE("ring pressure: a full submission queue and an overflowing completion queue", "[net][ring]") {
    // Two submission entries (four completion slots) and one thread: 256
    // fibers each queue a read that completes at once, without the thread
    // reaping in between. The submission queue fills on every second entry,
    // and the completions overflow the completion queue.
    auto made = EventLoop::create({.threads = 1, .ring_entries = 2, .completion_entries = 4});
    REQUIRE(made);
    auto& loop = *made;
    const bool ring = loop->backend() == IoBackend::io_uring;
    auto zero = loop->openFile("/dev/zero");
    REQUIRE(zero);
    for (int round = 0; round < test::scaled(20); ++round) {
        std::vector<Future<Result<std::size_t>>> readers;
        std::vector<std::array<std::byte, 16>> buffers(256);
        for (auto& buffer : buffers) {
            buffer.fill(std::byte{1});
            readers.push_back(loop->async([&] { return loop->pread(*zero, buffer, 0); }));
        }
        for (std::size_t i = 0; i < readers.size(); ++i) {
            auto n = readers[i].await();
            REQUIRE(n);
            REQUIRE(*n == 16);
            REQUIRE(buffers[i][15] == std::byte{0});
        }
    }
    const IoStats stats = loop->ioStats();
    INFO("full submissions " << stats.full_submissions << ", completion overflows " << stats.completion_overflows);
    if (ring) { // the epoll backend has no rings: the reads still all complete
        REQUIRE(stats.full_submissions > 0);
        REQUIRE(stats.completion_overflows > 0);
    }
    REQUIRE(loop->close(*zero));
}

TEST_CASE("the default completion queue holds a thousand completions at once", "[net][ring]") {
    // The same burst as above with the default sizes: 1000 reads complete
    // before the thread reaps, and all of them fit in the completion queue
    // (an overflow would cost the kernel an allocation per completion).
    auto made = EventLoop::create({.threads = 1});
    REQUIRE(made);
    auto& loop = *made;
    auto zero = loop->openFile("/dev/zero");
    REQUIRE(zero);
    std::vector<Future<Result<std::size_t>>> readers;
    std::vector<std::array<std::byte, 16>> buffers(1000);
    for (auto& buffer : buffers) readers.push_back(loop->async([&] { return loop->pread(*zero, buffer, 0); }));
    for (auto& reader : readers) REQUIRE(reader.await().value() == 16);
    const IoStats stats = loop->ioStats();
    INFO("full submissions " << stats.full_submissions << ", completion overflows " << stats.completion_overflows);
    if (loop->backend() == IoBackend::io_uring) {
        REQUIRE(stats.full_submissions > 0); // 1000 entries through a 256-entry queue
        REQUIRE(stats.completion_overflows == 0);
    }
    REQUIRE(loop->close(*zero));
}

TEST_CASE("a large transfer fills the socket buffer: partial sends and write waits", "[net][stress]") {
    // 8 MiB through a Unix stream pair is far more than its buffers hold, so
    // the sender waits for room (io_uring: a poll inside the kernel; epoll:
    // EAGAIN, then EPOLLOUT) while the receiver drains it in small reads.
    auto loop = test::makeLoop(2);
    int pair[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    const std::size_t total = static_cast<std::size_t>(test::scaled(8)) << 20;
    std::vector<std::byte> data(total);
    for (std::size_t i = 0; i < total; ++i) data[i] = static_cast<std::byte>((i * 131) >> 3);
    auto sender = loop->async([&] {
        Status sent = loop->sendAll(Socket{pair[0]}, data);
        Status closed = loop->shutdown(Socket{pair[0]}, ShutdownHow::write);
        return sent && closed;
    });
    std::vector<std::byte> received;
    received.reserve(total);
    std::byte buffer[1500];
    for (;;) {
        auto n = loop->recv(Socket{pair[1]}, buffer, 10s);
        REQUIRE(n);
        if (*n == 0) break;
        received.insert(received.end(), buffer, buffer + *n);
    }
    REQUIRE(sender.await());
    REQUIRE(received.size() == total);
    REQUIRE((received == data)); // (no element-by-element expansion on failure)
    REQUIRE(loop->close(Socket{pair[0]}));
    REQUIRE(loop->close(Socket{pair[1]}));
}

TEST_CASE("many fibers wait on one socket; every one is served", "[net]") {
    // Several readers park on the same fd and direction (the seed's
    // wait_queues): each byte written wakes them, one wins it, the others
    // wait again; all of them finish.
    auto loop = test::makeLoop(2);
    for (int round = 0; round < test::scaled(20); ++round) {
        int pair[2];
        REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
        constexpr int kReaders = 8;
        std::vector<Future<Result<std::size_t>>> readers;
        for (int i = 0; i < kReaders; ++i)
            readers.push_back(loop->async([&] {
                char byte;
                return loop->recv(Socket{pair[0]}, std::as_writable_bytes(std::span(&byte, 1)), 10s);
            }));
        (void)loop->sleep(std::chrono::milliseconds(1));
        for (int i = 0; i < kReaders; ++i) {
            REQUIRE(::write(pair[1], "r", 1) == 1);
            if (i % 3 == 0) (void)loop->sleep(std::chrono::microseconds(100));
        }
        for (auto& reader : readers) {
            auto n = reader.await();
            REQUIRE(n);
            REQUIRE(*n == 1);
        }
        ::close(pair[0]);
        ::close(pair[1]);
    }
}
