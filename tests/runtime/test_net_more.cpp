// Sockets, part two: listener options (SO_REUSEADDR, SO_REUSEPORT), UDP
// (sendTo / recvFrom) and name resolution (resolve on the blocking pool,
// and its cancel while getaddrinfo runs on).
#include "test_support.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace fiberscope;
using namespace std::chrono_literals;

// Test-only knobs of runtime/src/io/resolve.cpp (no public header declares them).
namespace fiberscope::detail {
void holdResolvesForTesting(bool hold) noexcept;
unsigned resolvesHeldForTesting() noexcept;
unsigned resolveTasksAliveForTesting() noexcept;
} // namespace fiberscope::detail

namespace {

std::span<const std::byte> bytesOf(std::string_view text) { return std::as_bytes(std::span(text.data(), text.size())); }

std::string textOf(std::span<const std::byte> bytes) { return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size()); }

// Polls `done` every millisecond (sleeping on the loop) for up to `seconds`.
template <class Pred>
bool waitUntil(EventLoop& loop, Pred done, double seconds = 5.0) {
    const auto start = std::chrono::steady_clock::now();
    while (!done()) {
        if (test::secondsSince(start) > seconds) return false;
        (void)loop.sleep(1ms);
    }
    return true;
}

// Cancels must be prompt: none may look like a hang (0.5 s), and the median
// must meet the 10 ms target (a median, so one preemption on a shared
// machine does not fail the test).
void requirePrompt(std::vector<double> seconds, const char* what) {
    REQUIRE_FALSE(seconds.empty());
    std::sort(seconds.begin(), seconds.end());
    INFO(what << ": median " << seconds[seconds.size() / 2] * 1e3 << " ms, slowest " << seconds.back() * 1e3 << " ms");
    REQUIRE(seconds.back() < 0.5);
    REQUIRE(seconds[seconds.size() / 2] <= 0.010);
}

// Releases the resolve hold on every way out of a test.
struct HoldGuard {
    HoldGuard() { detail::holdResolvesForTesting(true); }
    ~HoldGuard() { detail::holdResolvesForTesting(false); }
};

// True once /proc/net/tcp shows a socket on local port `port` in TIME_WAIT.
bool timeWaitOn(std::uint16_t port) {
    std::ifstream table("/proc/net/tcp");
    std::string line;
    std::getline(table, line); // the header
    while (std::getline(table, line)) {
        std::istringstream fields(line);
        std::string slot, local, remote, state;
        fields >> slot >> local >> remote >> state;
        const auto colon = local.find(':');
        if (colon == std::string::npos) continue;
        if (std::stoul(local.substr(colon + 1), nullptr, 16) == port && state == "06") return true;
    }
    return false;
}

Address loopback(int family, std::uint16_t port = 0) {
    return family == AF_INET ? Address::ipv4("127.0.0.1", port).value() : Address::ipv6("::1", port).value();
}

// A UDP socket bound to the loopback of `family`, or an invalid one (and a
// warning) where that loopback does not exist.
Socket udpSocket(EventLoop& loop, int family) {
    auto made = loop.socket(family, SocketType::datagram);
    if (!made && made.error() == Errc::AddressFamilyNotSupported) {
        WARN("no IPv6 on this machine: " << made.error().message());
        return {};
    }
    REQUIRE(made);
    Status bound = loop.bind(*made, loopback(family));
    if (!bound && (bound.error() == Errc::AddressNotAvailable || bound.error() == Errc::AddressFamilyNotSupported)) {
        WARN("no loopback for family " << family << ": " << bound.error().message());
        REQUIRE(loop.close(*made));
        return {};
    }
    REQUIRE(bound);
    return *made;
}

} // namespace

// --- listener options ---------------------------------------------------------------

TEST_CASE("ListenOptions: a second listener on a port fails without reuse_port and shares it with", "[net][listen]") {
    auto loop = test::makeLoop(2);
    // Without SO_REUSEPORT (the default, also of the int form).
    auto first = loop->listenOn(loopback(AF_INET));
    REQUIRE(first);
    const std::uint16_t port = loop->localAddress(*first).value().port();
    REQUIRE(loop->listenOn(loopback(AF_INET, port)).error() == Errc::AddressInUse);
    // Every listener on the port must ask for it: the first did not.
    REQUIRE(loop->listenOn(loopback(AF_INET, port), {.reuse_port = true}).error() == Errc::AddressInUse);
    REQUIRE(loop->close(*first));

    // With it, on both: the port is shared, and connections reach the two.
    auto a = loop->listenOn(loopback(AF_INET), {.reuse_port = true});
    REQUIRE(a);
    const Address shared = loop->localAddress(*a).value();
    auto b = loop->listenOn(shared, ListenOptions{.backlog = 64, .reuse_port = true});
    REQUIRE(b);
    REQUIRE(loop->localAddress(*b).value().port() == shared.port());
    // The same through socket / bind / listen, options given to both.
    auto c = loop->socket(AF_INET);
    REQUIRE(c);
    REQUIRE(loop->bind(*c, shared, {.reuse_port = true}));
    REQUIRE(loop->listen(*c, {.reuse_port = true}));
    // A plain bind (no options) is still refused.
    auto d = loop->socket(AF_INET);
    REQUIRE(d);
    REQUIRE(loop->bind(*d, shared).error() == Errc::AddressInUse);
    REQUIRE(loop->close(*d));

    const int clients = 12;
    std::vector<Socket> connected;
    for (int i = 0; i < clients; ++i) {
        auto client = loop->connectTo(shared, 5s);
        REQUIRE(client);
        connected.push_back(*client);
    }
    // The kernel spreads them by hash: drain every listener.
    int accepted = 0;
    for (Socket listener : {*a, *b, *c}) {
        for (;;) {
            auto peer = loop->accept(listener, nullptr, 100ms);
            if (!peer) {
                REQUIRE(peer.error() == Errc::TimedOut);
                break;
            }
            ++accepted;
            REQUIRE(loop->close(*peer));
        }
    }
    REQUIRE(accepted == clients);
    for (Socket s : connected) REQUIRE(loop->close(s));
    for (Socket s : {*a, *b, *c}) REQUIRE(loop->close(s));

    // Options checked before anything is made: a negative backlog, and
    // SO_REUSEPORT on a Unix-domain socket (which refuses it).
    REQUIRE(loop->listenOn(loopback(AF_INET), {.backlog = -1}).error() == Errc::InvalidArgument);
    const std::string path = "@fiberscope-reuse-" + std::to_string(getpid());
    REQUIRE(loop->listenOn(Address::local(path).value(), {.reuse_port = true}).error() == Errc::OperationNotSupported);
    auto unix_listener = loop->listenOn(Address::local(path).value(), ListenOptions{}); // reuse_address ignored
    REQUIRE(unix_listener);
    REQUIRE(loop->close(*unix_listener));
}

TEST_CASE("ListenOptions: a restarted server binds its port in TIME_WAIT with reuse_address", "[net][listen]") {
    auto loop = test::makeLoop(2);
    auto listener = loop->listenOn(loopback(AF_INET));
    REQUIRE(listener);
    const std::uint16_t port = loop->localAddress(*listener).value().port();
    auto client = loop->connectTo(loopback(AF_INET, port), 5s);
    REQUIRE(client);
    auto conn = loop->accept(*listener, nullptr, 5s);
    REQUIRE(conn);
    // The server closes first, so its end (on `port`) goes to TIME_WAIT.
    REQUIRE(loop->close(*conn));
    std::byte byte[1];
    auto eof = loop->recv(*client, byte, 5s);
    REQUIRE(eof);
    REQUIRE(*eof == 0);
    REQUIRE(loop->close(*client));
    REQUIRE(loop->close(*listener));
    REQUIRE(waitUntil(*loop, [&] { return timeWaitOn(port); }));

    // Without SO_REUSEADDR the restart fails for as long as TIME_WAIT lasts.
    REQUIRE(loop->listenOn(loopback(AF_INET, port), {.reuse_address = false}).error() == Errc::AddressInUse);
    auto plain = loop->socket(AF_INET);
    REQUIRE(plain);
    REQUIRE(loop->bind(*plain, loopback(AF_INET, port)).error() == Errc::AddressInUse);
    REQUIRE(loop->close(*plain));
    REQUIRE(timeWaitOn(port));
    // With it (the default), the restart works, and serves.
    auto restarted = loop->listenOn(loopback(AF_INET, port), ListenOptions{});
    REQUIRE(restarted);
    auto again = loop->connectTo(loopback(AF_INET, port), 5s);
    REQUIRE(again);
    auto served = loop->accept(*restarted, nullptr, 5s);
    REQUIRE(served);
    REQUIRE(loop->close(*served));
    REQUIRE(loop->close(*again));
    REQUIRE(loop->close(*restarted));
    // The socket / bind / listen path, the options given to bind.
    auto manual = loop->socket(AF_INET);
    REQUIRE(manual);
    REQUIRE(loop->bind(*manual, loopback(AF_INET, port), ListenOptions{}));
    REQUIRE(loop->listen(*manual, ListenOptions{.backlog = 8}));
    REQUIRE(loop->close(*manual));
}

// --- UDP ------------------------------------------------------------------------------

TEST_CASE("UDP ping-pong over IPv4 and IPv6 loopback; recvFrom names the sender", "[net][udp]") {
    auto loop = test::makeLoop(2);
    for (int family : {AF_INET, AF_INET6}) {
        Socket a = udpSocket(*loop, family);
        if (!a.valid()) continue;
        Socket b = udpSocket(*loop, family);
        REQUIRE(b.valid());
        const Address address_a = loop->localAddress(a).value();
        const Address address_b = loop->localAddress(b).value();
        INFO("a = " << address_a.toString() << ", b = " << address_b.toString());
        const int rounds = static_cast<int>(test::scaled(50));
        // b answers every ping to whoever sent it; it waits before a sends.
        auto server = loop->async([&]() -> int {
            std::byte buffer[256];
            for (int i = 0; i < rounds; ++i) {
                Address from;
                auto n = loop->recvFrom(b, buffer, &from, 5s);
                if (!n) return i;
                if (textOf(std::span(buffer, *n)) != "ping " + std::to_string(i)) return i;
                if (from.toString() != address_a.toString() || from.family() != family) return i;
                const std::string pong = "pong " + std::to_string(i);
                auto sent = loop->sendTo(b, bytesOf(pong), from, 5s);
                if (!sent || *sent != pong.size()) return i;
            }
            return rounds;
        });
        for (int i = 0; i < rounds; ++i) {
            const std::string ping = "ping " + std::to_string(i);
            auto sent = loop->sendTo(a, bytesOf(ping), address_b, 5s);
            REQUIRE(sent);
            REQUIRE(*sent == ping.size());
            std::byte buffer[256];
            Address from;
            auto n = loop->recvFrom(a, buffer, &from, 5s);
            REQUIRE(n);
            REQUIRE(textOf(std::span(buffer, *n)) == "pong " + std::to_string(i));
            REQUIRE(from.toString() == address_b.toString());
            REQUIRE(from.port() == address_b.port());
        }
        REQUIRE(server.await() == rounds);
        // Without a `from`, and a datagram cut to a short buffer (the rest
        // is dropped: the next recvFrom gets the next datagram).
        REQUIRE(loop->sendTo(a, bytesOf("0123456789"), address_b).value() == 10);
        REQUIRE(loop->sendTo(a, bytesOf("next"), address_b).value() == 4);
        std::byte small[4];
        REQUIRE(loop->recvFrom(b, small, nullptr, 5s).value() == 4);
        REQUIRE(textOf(small) == "0123");
        std::byte buffer[16];
        REQUIRE(textOf(std::span(buffer, loop->recvFrom(b, buffer, nullptr, 5s).value())) == "next");
        // Past UDP's limit: one datagram cannot carry it.
        std::vector<std::byte> huge(70000);
        REQUIRE(loop->sendTo(a, huge, address_b).error() == Errc::MessageTooBig);
        REQUIRE(loop->close(a));
        REQUIRE(loop->close(b));
    }
}

TEST_CASE("recvFrom: a Timeout returns TimedOut, a cancel Canceled at once", "[net][udp][cancel]") {
    auto loop = test::makeLoop(2);
    Socket a = udpSocket(*loop, AF_INET);
    Socket b = udpSocket(*loop, AF_INET);
    REQUIRE(a.valid());
    REQUIRE(b.valid());
    const Address address_b = loop->localAddress(b).value();
    std::byte buffer[64];
    for (int i = 0; i < 3; ++i) {
        const auto start = std::chrono::steady_clock::now();
        Address from;
        auto idle = loop->recvFrom(b, buffer, &from, 20ms);
        REQUIRE_FALSE(idle);
        REQUIRE(idle.error() == Errc::TimedOut);
        REQUIRE(test::secondsSince(start) >= 0.015);
    }
    std::vector<double> cancels;
    for (int i = 0; i < 12; ++i) {
        auto blocked = loop->async([&]() -> Result<std::size_t> {
            Address from;
            return loop->recvFrom(b, buffer, &from);
        });
        (void)loop->sleep(i % 2 ? 1ms : 5ms);
        const auto start = std::chrono::steady_clock::now();
        auto result = blocked.cancel();
        cancels.push_back(test::secondsSince(start));
        REQUIRE_FALSE(result);
        REQUIRE(result.error() == Errc::Canceled);
    }
    requirePrompt(cancels, "recvFrom cancel");
    // The canceled receives took nothing: the next datagram is there.
    REQUIRE(loop->sendTo(a, bytesOf("after"), address_b).value() == 5);
    auto n = loop->recvFrom(b, buffer, nullptr, 5s);
    REQUIRE(n);
    REQUIRE(textOf(std::span(buffer, *n)) == "after");
    REQUIRE(loop->close(a));
    REQUIRE(loop->close(b));
}

// --- resolve ------------------------------------------------------------------------

TEST_CASE("resolve: localhost, numeric addresses, hints and unix paths", "[net][resolve]") {
    auto loop = test::makeLoop(2);
    auto listener = loop->listenOn(loopback(AF_INET));
    REQUIRE(listener);
    const std::uint16_t port = loop->localAddress(*listener).value().port();
    const std::string name = "localhost:" + std::to_string(port);

    auto found = loop->resolve(name);
    REQUIRE(found);
    REQUIRE_FALSE(found->empty());
    bool has_loopback = false;
    for (const Address& address : *found) {
        INFO(address.toString());
        REQUIRE(address.port() == port);
        REQUIRE((address.family() == AF_INET || address.family() == AF_INET6));
        if (address.toString() == "127.0.0.1:" + std::to_string(port) || address.toString() == "[::1]:" + std::to_string(port))
            has_loopback = true;
    }
    REQUIRE(has_loopback);
    // Each address once.
    for (std::size_t i = 0; i < found->size(); ++i)
        for (std::size_t j = i + 1; j < found->size(); ++j) REQUIRE((*found)[i].toString() != (*found)[j].toString());
    // Try them in turn, as a client should: one reaches the listener.
    auto server = loop->async([&] { return loop->accept(*listener, nullptr, 5s); });
    Result<Socket> client = Error{Errc::ConnectionRefused, 0};
    for (const Address& address : *found)
        if ((client = loop->connectTo(address, 5s))) break;
    REQUIRE(client);
    auto peer = server.await();
    REQUIRE(peer);
    REQUIRE(loop->close(*peer));
    REQUIRE(loop->close(*client));
    REQUIRE(loop->close(*listener));

    // Hints: IPv4 only, and datagram sockets.
    auto v4 = loop->resolve(name, {.family = AF_INET});
    REQUIRE(v4);
    REQUIRE_FALSE(v4->empty());
    for (const Address& address : *v4) REQUIRE(address.family() == AF_INET);
    auto udp = loop->resolve("localhost:53", {.type = SocketType::datagram});
    REQUIRE(udp);
    REQUIRE_FALSE(udp->empty());

    // Numeric addresses, no lookup.
    auto v6 = loop->resolve("[::1]:8080");
    REQUIRE(v6);
    REQUIRE(v6->size() == 1);
    REQUIRE(v6->front().family() == AF_INET6);
    REQUIRE(v6->front().toString() == "[::1]:8080");
    auto numeric = loop->resolve("127.0.0.1:80");
    REQUIRE(numeric);
    REQUIRE(numeric->size() == 1);
    REQUIRE(numeric->front().toString() == "127.0.0.1:80");
    REQUIRE(loop->resolve("[2001:db8::5]:443", {.family = AF_INET6}).value().front().toString() == "[2001:db8::5]:443");
    // An IPv6 address has no IPv4 form.
    REQUIRE(loop->resolve("[::1]:80", {.family = AF_INET}).error() == Errc::NameNotFound);
    auto local = loop->resolve("unix:/tmp/fiberscope.sock");
    REQUIRE(local);
    REQUIRE(local->size() == 1);
    REQUIRE(local->front().family() == AF_UNIX);

    // Many lookups at once: the pool runs a few at a time, queues the rest.
    std::vector<Future<Result<std::vector<Address>>>> many;
    for (int i = 0; i < 20; ++i) many.push_back(loop->async([&] { return loop->resolve(name); }));
    for (auto& lookup : many) {
        auto result = lookup.await();
        REQUIRE(result);
        REQUIRE_FALSE(result->empty());
    }
    REQUIRE(detail::resolveTasksAliveForTesting() == 0);
}

TEST_CASE("resolve: bad text is InvalidArgument; unknown names and services are named errors", "[net][resolve][errors]") {
    auto loop = test::makeLoop(2);
    const std::string with_nul("local\0host:80", 13);
    for (std::string_view bad : {std::string_view(""), std::string_view("localhost"), std::string_view("localhost:"),
                                 std::string_view(":80"), std::string_view("localhost:99999"), std::string_view("localhost:-1"),
                                 std::string_view("::1:80"), std::string_view("[::1]80"), std::string_view("[::1"),
                                 std::string_view("[]:80"), std::string_view("[localhost]:80"), std::string_view("[::1]:"),
                                 std::string_view(with_nul)}) {
        INFO("'" << bad << "'");
        REQUIRE(loop->resolve(bad).error() == Errc::InvalidArgument);
    }
    REQUIRE(loop->resolve("localhost:80", {.family = 12345}).error() == Errc::AddressFamilyNotSupported);
    REQUIRE(loop->resolve("unix:/x", {.family = AF_INET}).error() == Errc::AddressFamilyNotSupported);
    // A port name /etc/services does not list.
    REQUIRE(loop->resolve("localhost:no-such-service-fiberscope").error() == Errc::ServiceNotFound);

    // The .invalid domain never exists (RFC 6761). Answered by a name server,
    // or not at all where there is no network: either way a named error, and
    // never a hang (a slow name server only makes the test warn).
    auto lookup = loop->async([&] { return loop->resolve("nonexistent.invalid:80"); });
    auto limit = loop->async([&] { return loop->sleep(20s); });
    const auto start = std::chrono::steady_clock::now();
    if (select(lookup, limit).value() == 0) {
        auto result = lookup.await();
        REQUIRE_FALSE(result);
        INFO(result.error().name() << " after " << test::secondsSince(start) << " s");
        REQUIRE((result.error() == Errc::NameNotFound || result.error() == Errc::TemporaryNameFailure ||
                 result.error() == Errc::NameServerFailure));
        REQUIRE(limit.cancel().error() == Errc::Canceled);
    } else {
        WARN("the name server took over 20 s to answer for nonexistent.invalid");
        REQUIRE(lookup.cancel().error() == Errc::Canceled);
    }

    // Every new code has a name and a message saying what to do.
    for (Errc code : {Errc::NameNotFound, Errc::TemporaryNameFailure, Errc::NameServerFailure, Errc::ServiceNotFound}) {
        REQUIRE(std::string(errcName(code)) != "Unknown");
        REQUIRE(std::string(errcMessage(code)).size() > 40);
    }
    REQUIRE(std::string(errcName(Errc::NameNotFound)) == "NameNotFound");
}

TEST_CASE("resolve: a cancel returns Canceled at once while getaddrinfo runs on; its late result is dropped",
          "[net][resolve][cancel]") {
    REQUIRE(detail::resolveTasksAliveForTesting() == 0);
    {
        auto loop = test::makeLoop(2);
        HoldGuard hold; // getaddrinfo waits until released: a slow name server

        // A running lookup, canceled: the fiber returns at once, the task
        // finishes later and is freed.
        std::vector<double> cancels;
        for (int i = 0; i < 10; ++i) {
            detail::holdResolvesForTesting(true);
            auto lookup = loop->async([&] { return loop->resolve("localhost:80"); });
            REQUIRE(waitUntil(*loop, [] { return detail::resolvesHeldForTesting() == 1; }));
            const auto start = std::chrono::steady_clock::now();
            auto result = lookup.cancel();
            cancels.push_back(test::secondsSince(start));
            REQUIRE_FALSE(result);
            REQUIRE(result.error() == Errc::Canceled);
            REQUIRE(detail::resolveTasksAliveForTesting() == 1); // still in getaddrinfo's place
            detail::holdResolvesForTesting(false);
            REQUIRE(waitUntil(*loop, [] { return detail::resolveTasksAliveForTesting() == 0; }));
        }
        requirePrompt(cancels, "resolve cancel");

        // Running and queued lookups (the pool runs three at a time), all
        // canceled at once.
        detail::holdResolvesForTesting(true);
        std::vector<Future<Result<std::vector<Address>>>> lookups;
        for (int i = 0; i < 6; ++i) lookups.push_back(loop->async([&] { return loop->resolve("localhost:80"); }));
        REQUIRE(waitUntil(*loop, [] { return detail::resolvesHeldForTesting() == 3; }));
        (void)loop->sleep(5ms);
        REQUIRE(detail::resolvesHeldForTesting() == 3);
        REQUIRE(detail::resolveTasksAliveForTesting() == 6);
        cancels.clear();
        for (auto& lookup : lookups) {
            const auto start = std::chrono::steady_clock::now();
            auto result = lookup.cancel();
            cancels.push_back(test::secondsSince(start));
            REQUIRE_FALSE(result);
            REQUIRE(result.error() == Errc::Canceled);
        }
        requirePrompt(cancels, "cancel of running and queued lookups");
        detail::holdResolvesForTesting(false);
        // The queued ones are freed unrun, the running ones when they return.
        REQUIRE(waitUntil(*loop, [] { return detail::resolveTasksAliveForTesting() == 0; }));

        // The pool is not wedged: lookups still complete.
        auto after = loop->resolve("localhost:80");
        REQUIRE(after);
        REQUIRE_FALSE(after->empty());

        // A cancel that comes after the lookup finished changes nothing.
        auto finished = loop->async([&] { return loop->resolve("localhost:81"); });
        REQUIRE(waitUntil(*loop, [&] { return detail::resolveTasksAliveForTesting() == 0; }));
        auto late = finished.cancel();
        if (late) REQUIRE(late->front().port() == 81);
        else REQUIRE(late.error() == Errc::Canceled); // the cancel reached it first after all

        // Destroying the loop while an abandoned lookup still runs does not
        // wait for it: its pool thread finishes alone and frees it.
        detail::holdResolvesForTesting(true);
        auto abandoned = loop->async([&] { return loop->resolve("localhost:80"); });
        REQUIRE(waitUntil(*loop, [] { return detail::resolvesHeldForTesting() == 1; }));
        REQUIRE(abandoned.cancel().error() == Errc::Canceled);
        const auto start = std::chrono::steady_clock::now();
        loop.reset();
        REQUIRE(test::secondsSince(start) < 0.5);
        REQUIRE(detail::resolveTasksAliveForTesting() == 1);
    }
    detail::holdResolvesForTesting(false);
    const auto start = std::chrono::steady_clock::now();
    while (detail::resolveTasksAliveForTesting() != 0 && test::secondsSince(start) < 5) usleep(1000);
    REQUIRE(detail::resolveTasksAliveForTesting() == 0);
}

TEST_CASE("resolve from a plain std::thread is NotOnLoopThread", "[net][resolve]") {
    auto loop = test::makeLoop(1);
    Result<std::vector<Address>> result = Error{Errc::Unexpected, 0};
    std::thread([&] { result = loop->resolve("localhost:80"); }).join();
    REQUIRE(result.error() == Errc::NotOnLoopThread);
    REQUIRE(detail::resolveTasksAliveForTesting() == 0);
}
