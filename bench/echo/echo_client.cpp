// The echo benchmark's load generator: a bounded, closed-loop client. Each
// of C connections sends one message, waits for all of it to come back,
// records the round trip, and sends the next; so at most C requests are in
// flight. One thread, epoll, so the client costs the same whichever server
// it measures.
//
//   echo_client --port P [--connections C] [--seconds S] [--size B] [--warmup W]
//
// Prints one line: "requests N seconds S rps R p50_us A p99_us B all_requests M"
// (N and the rest count the measured window; M includes the warm-up).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Connection {
    int fd = -1;
    std::size_t received = 0; // bytes of the current echo received so far
    Clock::time_point sent_at;
};

[[noreturn]] void die(const char* what) {
    std::fprintf(stderr, "echo_client: %s: %s\n", what, std::strerror(errno));
    std::exit(1);
}

} // namespace

int main(int argc, char** argv) {
    unsigned port = 0, connections = 1, size = 64;
    double seconds = 2.0, warmup = 0.3;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--port" && has_value) port = static_cast<unsigned>(std::atoi(argv[++i]));
        else if (arg == "--connections" && has_value) connections = static_cast<unsigned>(std::atoi(argv[++i]));
        else if (arg == "--seconds" && has_value) seconds = std::atof(argv[++i]);
        else if (arg == "--warmup" && has_value) warmup = std::atof(argv[++i]);
        else if (arg == "--size" && has_value) size = static_cast<unsigned>(std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "echo_client: bad argument '%s'; usage: %s --port P [--connections C] [--seconds S] "
                                 "[--size B] [--warmup W]\n", argv[i], argv[0]);
            return 2;
        }
    }
    if (port == 0 || connections == 0 || size == 0 || size > 65536 || seconds <= 0) {
        std::fprintf(stderr, "echo_client: need --port, and positive --connections, --seconds, --size (<= 65536)\n");
        return 2;
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

    const int epoll = epoll_create1(EPOLL_CLOEXEC);
    if (epoll < 0) die("epoll_create1");
    std::vector<Connection> conns(connections);
    std::vector<char> message(size, 'e'), buffer(65536);
    const int on = 1;
    for (unsigned i = 0; i < connections; ++i) {
        const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) die("socket");
        if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) die("connect");
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        conns[i].fd = fd;
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.u32 = i;
        epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event);
    }

    auto sendRequest = [&](Connection& c) {
        c.received = 0;
        c.sent_at = Clock::now();
        if (send(c.fd, message.data(), size, MSG_NOSIGNAL) != static_cast<ssize_t>(size)) die("send");
    };
    const Clock::time_point start = Clock::now();
    const Clock::time_point measure_from = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(warmup));
    const Clock::time_point stop = measure_from + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    std::vector<std::uint32_t> latencies_ns;
    std::size_t all_requests = 0; // including the warm-up
    latencies_ns.reserve(1 << 20);
    for (auto& c : conns) sendRequest(c);

    epoll_event events[256];
    Clock::time_point now = Clock::now();
    while (now < stop) {
        const int count = epoll_wait(epoll, events, 256, 100);
        if (count < 0 && errno != EINTR) die("epoll_wait");
        now = Clock::now();
        for (int i = 0; i < count; ++i) {
            Connection& c = conns[events[i].data.u32];
            const ssize_t n = recv(c.fd, buffer.data(), buffer.size(), 0);
            if (n == 0) {
                std::fprintf(stderr, "echo_client: the server closed a connection\n");
                return 1;
            }
            if (n < 0) {
                if (errno == EAGAIN || errno == EINTR) continue;
                die("recv");
            }
            c.received += static_cast<std::size_t>(n);
            if (c.received < size) continue;
            ++all_requests;
            if (c.sent_at >= measure_from && now < stop)
                latencies_ns.push_back(static_cast<std::uint32_t>(
                    std::min<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(now - c.sent_at).count(),
                                        0xffffffffLL)));
            if (now < stop) sendRequest(c);
        }
    }
    for (auto& c : conns) close(c.fd);
    if (latencies_ns.empty()) {
        std::fprintf(stderr, "echo_client: no request completed in %.1f s\n", seconds);
        return 1;
    }
    std::sort(latencies_ns.begin(), latencies_ns.end());
    auto percentile = [&](double p) {
        return latencies_ns[std::min(latencies_ns.size() - 1, static_cast<std::size_t>(p * latencies_ns.size()))] / 1e3;
    };
    std::printf("requests %zu seconds %.3f rps %.0f p50_us %.1f p99_us %.1f all_requests %zu\n", latencies_ns.size(),
                seconds, latencies_ns.size() / seconds, percentile(0.50), percentile(0.99), all_requests);
    return 0;
}
