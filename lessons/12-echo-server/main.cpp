// Lesson 12: an echo server and a bounded client swarm.
//
// An "acceptor" fiber listens on 127.0.0.1 (a port the kernel picks) and
// starts one "conn N" fiber per connection, which echoes what it receives
// until the peer shuts its side, then closes. Eight "client N" fibers each
// connect, make twenty request/response round trips of a 32-byte message,
// check every echo byte for byte, shut down their sending side, see the
// server close, and close. Every socket operation is one io_uring submission:
// a fiber waiting in recv is parked on its thread's ring while that thread
// runs other fibers, and the completion makes it ready again. At the end the
// main fiber cancels the acceptor, whose accept is in flight; the acceptor
// joins its connections and closes the listener.
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

namespace {

constexpr const char* kName = "lesson12-echo-server";
constexpr int kClients = 8;
constexpr int kRoundTrips = 20;
constexpr std::size_t kMessageSize = 32;

// Client `client`'s request number `trip`: "client 5, round trip 07" padded
// with dots to kMessageSize bytes, so that every message is different.
std::vector<std::byte> request(int client, int trip) {
    char text[kMessageSize + 1];
    std::snprintf(text, sizeof text, "client %d, round trip %02d", client, trip);
    std::vector<std::byte> message(kMessageSize, static_cast<std::byte>('.'));
    std::memcpy(message.data(), text, std::strlen(text));
    return message;
}

struct ServerCounts {
    std::atomic<int> connections{0};
    std::atomic<long> bytes_echoed{0};
};

// One connection, on its own fiber: echo until the peer shuts its sending
// side (recv returns 0), then close.
fiberscope::Status serve(fiberscope::EventLoop& loop, fiberscope::Socket socket, ServerCounts& counts) {
    std::byte buffer[256];
    fiberscope::Status status;
    for (;;) {
        auto received = loop.recv(socket, buffer); // parks this fiber until data (or EOF) arrives
        if (!received) {
            status = received.error();
            break;
        }
        if (*received == 0) break; // the client shut down its side
        status = loop.sendAll(socket, std::span(buffer, *received));
        if (!status) break;
        counts.bytes_echoed += static_cast<long>(*received);
    }
    if (auto closed = loop.close(socket); !closed && status) status = closed;
    return status;
}

// The accept loop: one member fiber of `connections` per connection, until
// canceled. Then it joins the connections and closes the listener.
fiberscope::Status acceptLoop(fiberscope::EventLoop& loop, fiberscope::Socket listener, ServerCounts& counts) {
    fiberscope::Group connections(loop);
    fiberscope::Status stopped;
    for (;;) {
        fiberscope::Address peer;
        auto accepted = loop.accept(listener, &peer); // a cancel point while in flight
        if (!accepted) {
            stopped = accepted.error();
            break;
        }
        const int id = counts.connections++;
        connections.async([&loop, &counts, socket = *accepted, id] {
            fiberscope::setFiberName("conn " + std::to_string(id));
            return serve(loop, socket, counts);
        });
    }
    // Canceling the acceptor stopped its accept, not its connections: they
    // end when their clients do, and the group waits for them.
    const fiberscope::Status served = connections.wait();
    const fiberscope::Status closed = loop.close(listener);
    if (!served) return served;
    if (!closed) return closed;
    return stopped;
}

struct ClientReport {
    int round_trips = 0; // echoes received and matching
    int mismatches = 0;  // echoes that differed from the request
    std::string error;   // what failed, if anything did
};

// One client, on its own fiber: connect, kRoundTrips request/response round
// trips, then shut down the sending side, wait for the server's close, close.
ClientReport runClient(fiberscope::EventLoop& loop, const fiberscope::Address& server, int client) {
    ClientReport report;
    auto connected = loop.connectTo(server);
    if (!connected) {
        report.error = std::string("connect: ") + connected.error().message();
        return report;
    }
    const fiberscope::Socket socket = *connected;
    for (int trip = 0; trip < kRoundTrips && report.error.empty(); ++trip) {
        const std::vector<std::byte> message = request(client, trip);
        if (auto sent = loop.sendAll(socket, message); !sent) {
            report.error = std::string("send: ") + sent.error().message();
            break;
        }
        // TCP is a byte stream: the echo may arrive in pieces.
        std::vector<std::byte> echo(kMessageSize);
        std::size_t have = 0;
        while (have < echo.size()) {
            auto received = loop.recv(socket, std::span(echo).subspan(have)); // parks until the echo arrives
            if (!received) {
                report.error = std::string("recv: ") + received.error().message();
                break;
            }
            if (*received == 0) {
                report.error = "the server closed the connection early";
                break;
            }
            have += *received;
        }
        if (!report.error.empty()) break;
        if (echo == message) ++report.round_trips;
        else ++report.mismatches;
    }
    if (report.error.empty()) {
        // Half-close: the server's recv returns 0, it closes, ours returns 0.
        std::byte extra[1];
        if (auto shut = loop.shutdown(socket, fiberscope::ShutdownHow::write); !shut)
            report.error = std::string("shutdown: ") + shut.error().message();
        else if (auto end = loop.recv(socket, extra); !end || *end != 0)
            report.error = "expected the server to close after our shutdown";
    }
    if (auto closed = loop.close(socket); !closed && report.error.empty())
        report.error = std::string("close: ") + closed.error().message();
    return report;
}

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 2);
    fiberscope::EventLoop& loop = *loop_owner;
    // Both workers run before the clients come (lesson 3 shows the lazy
    // start): a worker still starting cannot take a wake-up (its ring is not
    // enabled yet: wakeup-bounced), and the story would be its start.
    if (const fiberscope::Status started = loop.startWorkers(); !started) {
        std::fprintf(stderr, "%s: cannot start the workers: %s\n", kName, started.error().message());
        return 1;
    }

    // Port 0: the kernel picks a free port (read back with localAddress).
    auto any_port = fiberscope::Address::ipv4("127.0.0.1", 0);
    if (!any_port) {
        std::fprintf(stderr, "%s: bad address: %s\n", kName, any_port.error().message());
        return 1;
    }
    auto listener = loop.listenOn(*any_port, kClients);
    if (!listener) {
        std::fprintf(stderr, "%s: cannot listen on 127.0.0.1: %s\n", kName, listener.error().message());
        return 1;
    }
    auto bound = loop.localAddress(*listener); // the port the kernel picked
    if (!bound) {
        std::fprintf(stderr, "%s: cannot read the listening address: %s\n", kName, bound.error().message());
        return 1;
    }
    const fiberscope::Address server = *bound;
    fiberscope::trace::mark("checkpoint: listening");
    std::printf("Echo server listening on %s, on up to %u threads.\n", server.toString().c_str(), loop.maxThreads());

    ServerCounts counts;
    auto acceptor = loop.async([&loop, &counts, socket = *listener] {
        fiberscope::setFiberName("acceptor");
        return acceptLoop(loop, socket, counts);
    });

    fiberscope::trace::mark("checkpoint: clients start");
    std::vector<fiberscope::Future<ClientReport>> clients;
    for (int c = 0; c < kClients; ++c)
        clients.push_back(loop.async([&loop, &server, c] {
            fiberscope::setFiberName("client " + std::to_string(c));
            return runClient(loop, server, c);
        }));
    int round_trips = 0, mismatches = 0, failed = 0;
    for (int c = 0; c < kClients; ++c) {
        const ClientReport report = clients[c].await();
        round_trips += report.round_trips;
        mismatches += report.mismatches;
        if (!report.error.empty()) {
            ++failed;
            std::printf("client %d failed: %s\n", c, report.error.c_str());
        }
    }
    fiberscope::trace::mark("checkpoint: clients done");

    // Every client is done; the acceptor is parked in its next accept.
    const fiberscope::Status stopped = acceptor.cancel();
    fiberscope::trace::mark("checkpoint: acceptor stopped");

    if (mismatches == 0 && failed == 0)
        std::printf("%d clients made %d round trips of %zu bytes; every echo matched byte for byte.\n", kClients,
                    round_trips, kMessageSize);
    else
        std::printf("%d clients made %d good round trips of %zu bytes; %d echoes did NOT match, %d clients failed.\n",
                    kClients, round_trips, kMessageSize, mismatches, failed);
    std::printf("The server accepted %d connections and echoed %ld bytes; the acceptor stopped with: %s.\n",
                counts.connections.load(), counts.bytes_echoed.load(), stopped ? "success" : stopped.error().name());
    const bool ok = failed == 0 && mismatches == 0 && round_trips == kClients * kRoundTrips &&
                    counts.connections == kClients &&
                    counts.bytes_echoed == static_cast<long>(kClients * kRoundTrips * kMessageSize) && !stopped &&
                    stopped.error() == fiberscope::Errc::Canceled;
    return ok ? 0 : 1;
}
