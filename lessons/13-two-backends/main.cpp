// Lesson 13: one program, two backends.
//
// The same small mix of work, on whichever backend the loop runs on
// (`--backend uring|epoll`, or FIBERSCOPE_BACKEND, else io_uring): three
// "sleeper" fibers sleep 1, 2 and 3 ms; a "ping" fiber and a "pong" fiber
// make ten request/reply round trips over a loopback TCP connection; then
// the main fiber writes a small temporary file and reads it back. The
// program never asks which backend it is on, except to print it: every call
// is the same, and so is the scheduler. Only the trace shows the difference:
// on io_uring each operation is one submission the kernel completes; on
// epoll a socket call that would block waits for readiness (a poll) and is
// retried, and file I/O runs on a blocking pool thread.
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

namespace {

constexpr const char* kName = "lesson13-two-backends";
constexpr int kSleepers = 3;
constexpr int kRoundTrips = 10;
constexpr std::size_t kMessageSize = 16;
constexpr std::size_t kFileSize = 4096;

// "ping 07" or "pong 07", padded with dots to kMessageSize bytes.
std::vector<std::byte> message(const char* word, int trip) {
    char text[kMessageSize + 1];
    std::snprintf(text, sizeof text, "%s %02d", word, trip);
    std::vector<std::byte> bytes(kMessageSize, static_cast<std::byte>('.'));
    std::memcpy(bytes.data(), text, std::strlen(text));
    return bytes;
}

// Receives exactly buffer.size() bytes (TCP may deliver them in pieces).
// Returns "" on success, "eof" if the peer closed first, else what failed.
std::string recvExactly(fiberscope::EventLoop& loop, fiberscope::Socket socket, std::span<std::byte> buffer) {
    std::size_t have = 0;
    while (have < buffer.size()) {
        auto received = loop.recv(socket, buffer.subspan(have)); // io_uring: one RECV; epoll: recv, or poll + recv
        if (!received) return std::string("recv: ") + received.error().message();
        if (*received == 0) return "eof";
        have += *received;
    }
    return "";
}

// The server side: accept one connection, answer every "ping NN" with
// "pong NN" until the client closes, then close. Returns what failed, or "".
std::string pong(fiberscope::EventLoop& loop, fiberscope::Socket listener, int& replies) {
    auto accepted = loop.accept(listener); // io_uring: one ACCEPT; epoll: accept, or poll + accept
    if (!accepted) return std::string("accept: ") + accepted.error().message();
    std::string error;
    for (int trip = 0;; ++trip) {
        std::vector<std::byte> request(kMessageSize);
        error = recvExactly(loop, *accepted, request);
        if (error == "eof" && trip == kRoundTrips) {
            error.clear(); // the client is done and closed its socket
            break;
        }
        if (error == "eof") error = "the client closed early";
        if (!error.empty()) break;
        if (request != message("ping", trip)) {
            error = "an unexpected request";
            break;
        }
        if (auto sent = loop.sendAll(*accepted, message("pong", trip)); !sent) {
            error = std::string("send: ") + sent.error().message();
            break;
        }
        ++replies;
    }
    if (auto closed = loop.close(*accepted); !closed && error.empty())
        error = std::string("close: ") + closed.error().message();
    return error;
}

// The client side: connect, kRoundTrips round trips, close.
std::string ping(fiberscope::EventLoop& loop, const fiberscope::Address& server, int& round_trips) {
    auto connected = loop.connectTo(server);
    if (!connected) return std::string("connect: ") + connected.error().message();
    std::string error;
    for (int trip = 0; trip < kRoundTrips && error.empty(); ++trip) {
        if (auto sent = loop.sendAll(*connected, message("ping", trip)); !sent) {
            error = std::string("send: ") + sent.error().message();
            break;
        }
        std::vector<std::byte> reply(kMessageSize);
        error = recvExactly(loop, *connected, reply); // the reply: the fiber waits for pong here
        if (error == "eof") error = "the server closed early";
        if (error.empty() && reply != message("pong", trip)) error = "an unexpected reply";
        if (error.empty()) ++round_trips;
    }
    if (auto closed = loop.close(*connected); !closed && error.empty())
        error = std::string("close: ") + closed.error().message();
    return error;
}

bool sleepers(fiberscope::EventLoop& loop) {
    std::vector<fiberscope::Future<bool>> sleeping;
    for (int i = 0; i < kSleepers; ++i)
        sleeping.push_back(loop.async([&loop, i] {
            fiberscope::setFiberName("sleeper " + std::to_string(i));
            // io_uring: a TIMEOUT in the ring; epoll: a deadline the idle loop's wait honours.
            return static_cast<bool>(loop.sleep(std::chrono::milliseconds(i + 1)));
        }));
    int slept = 0;
    for (auto& sleeper : sleeping) slept += sleeper.await();
    std::printf("%d sleeper fibers slept 1 to %d ms.\n", slept, kSleepers);
    return slept == kSleepers;
}

bool pingPong(fiberscope::EventLoop& loop) {
    // Port 0: the kernel picks a free port (read back with localAddress).
    auto any_port = fiberscope::Address::ipv4("127.0.0.1", 0);
    if (!any_port) {
        std::fprintf(stderr, "%s: bad address: %s\n", kName, any_port.error().message());
        return false;
    }
    auto listener = loop.listenOn(*any_port, 1);
    if (!listener) {
        std::fprintf(stderr, "%s: cannot listen on 127.0.0.1: %s\n", kName, listener.error().message());
        return false;
    }
    auto bound = loop.localAddress(*listener);
    if (!bound) {
        std::fprintf(stderr, "%s: cannot read the listening address: %s\n", kName, bound.error().message());
        (void)loop.close(*listener);
        return false;
    }
    const fiberscope::Address server = *bound;
    int replies = 0, round_trips = 0;
    auto server_side = loop.async([&loop, &replies, socket = *listener] {
        fiberscope::setFiberName("pong");
        return pong(loop, socket, replies);
    });
    auto client_side = loop.async([&loop, &server, &round_trips] {
        fiberscope::setFiberName("ping");
        return ping(loop, server, round_trips);
    });
    const std::string client_error = client_side.await();
    const std::string server_error = server_side.await();
    const fiberscope::Status closed = loop.close(*listener);
    if (!client_error.empty()) std::printf("ping failed: %s\n", client_error.c_str());
    if (!server_error.empty()) std::printf("pong failed: %s\n", server_error.c_str());
    if (!closed) std::printf("closing the listener failed: %s\n", closed.error().message());
    const bool ok = client_error.empty() && server_error.empty() && closed && round_trips == kRoundTrips &&
                    replies == kRoundTrips;
    std::printf("ping and pong made %d round trips of %zu bytes over %s%s.\n", round_trips, kMessageSize,
                server.toString().c_str(), ok ? "; every reply matched" : "; something went WRONG");
    return ok;
}

std::string tempPath() {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/fiberscope-lesson13-" + std::to_string(getpid()) + ".dat";
}

// A regular file: io_uring reads and writes it like a socket; epoll cannot
// wait for it at all, so the epoll backend hands the calls to a pool thread.
bool fileRoundTrip(fiberscope::EventLoop& loop, const std::string& path) {
    auto file = loop.createFile(path, {.read = true});
    if (!file) {
        std::fprintf(stderr, "%s: cannot create %s: %s\n", kName, path.c_str(), file.error().message());
        return false;
    }
    std::vector<std::byte> written(kFileSize);
    for (std::size_t i = 0; i < written.size(); ++i) written[i] = static_cast<std::byte>('a' + i % 26);
    auto wrote = loop.pwrite(*file, written, 0);
    std::vector<std::byte> read(kFileSize);
    auto got = wrote ? loop.pread(*file, read, 0) : fiberscope::Result<std::size_t>(wrote.error());
    const fiberscope::Status closed = loop.close(*file);
    if (!wrote || !got || !closed) {
        std::fprintf(stderr, "%s: %s %s failed: %s\n", kName, !wrote ? "writing" : !got ? "reading" : "closing",
                     path.c_str(), (!wrote ? wrote.error() : !got ? got.error() : closed.error()).message());
        return false;
    }
    const bool ok = *wrote == kFileSize && *got == kFileSize && read == written;
    std::printf("Wrote %zu bytes to %s and read back %zu%s.\n", *wrote, path.c_str(), *got,
                ok ? ", intact" : ", NOT the same");
    return ok;
}

} // namespace

int main(int argc, char** argv) {
    auto loop = lesson::start(kName, argc, argv, 2);
    // The only place the program looks at its backend: everything below is
    // the same code on both.
    std::printf("Running on the %s backend, on up to %u thread%s.\n", fiberscope::ioBackendName(loop->backend()),
                loop->maxThreads(), loop->maxThreads() == 1 ? "" : "s");
    std::fflush(stdout);

    fiberscope::trace::mark("checkpoint: sleeping");
    bool ok = sleepers(*loop);

    fiberscope::trace::mark("checkpoint: ping-pong");
    ok = pingPong(*loop) && ok;

    fiberscope::trace::mark("checkpoint: file");
    const std::string path = tempPath();
    ok = fileRoundTrip(*loop, path) && ok;

    fiberscope::trace::mark("checkpoint: done");
    loop.reset(); // stop the loop before removing the file with a plain syscall
    ::unlink(path.c_str());
    return ok ? 0 : 1;
}
