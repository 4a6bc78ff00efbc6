// Lesson 17: find the problem in a real program.
//
// A small price service: eight connection fibers each serve ten requests.
// Serving one: look the item up in the shared price table (a
// fiberscope::Mutex guards it), append an audit line to a log file
// (loop.pwrite), answer. It is correct, and slow: requests wait far longer
// than the work they need. The lesson does not say why in the code: record
// a trace, and find out (lesson.md walks through it).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

namespace {

constexpr const char* kName = "lesson17-find-the-problem";
constexpr int kConnections = 8;
constexpr int kRequests = 10;

std::string logPath() {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/fiberscope-lesson17-" + std::to_string(getpid()) + ".log";
}

struct Service {
    Service(fiberscope::EventLoop& l, fiberscope::File f) : loop(l), log(f) {}
    fiberscope::EventLoop& loop;
    fiberscope::File log;
    fiberscope::Mutex prices_lock; // guards prices and log_offset
    std::map<std::string, long> prices = {{"apple", 120}, {"bread", 250}, {"cheese", 730}, {"dates", 410}};
    std::uint64_t log_offset = 0;

    // One request: the price of `item`, audited. Returns -1 on a failure.
    long serve(int connection, const std::string& item) {
        if (!prices_lock.lock()) return -1;
        const auto found = prices.find(item);
        const long price = found == prices.end() ? 0 : found->second;
        const std::string line = "connection " + std::to_string(connection) + " asked for " + item + ": " +
                                 std::to_string(price) + "\n";
        const auto bytes = std::as_bytes(std::span(line.data(), line.size()));
        const std::uint64_t offset = log_offset; // the line's place in the log
        log_offset += line.size();
        const auto written = loop.pwrite(log, bytes, offset);
        prices_lock.unlock();
        return written ? price : -1;
    }
};

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 2);
    fiberscope::EventLoop& loop = *loop_owner;
    if (const fiberscope::Status started = loop.startWorkers(); !started) {
        std::fprintf(stderr, "%s: cannot start the workers: %s\n", kName, started.error().message());
        return 1;
    }
    const std::string path = logPath();
    auto log = loop.createFile(path, {});
    if (!log) {
        std::fprintf(stderr, "%s: cannot create %s: %s\n", kName, path.c_str(), log.error().message());
        return 1;
    }
    Service service(loop, *log);
    fiberscope::setObjectName(service.prices_lock, "prices");
    std::printf("%d connections, %d requests each, on up to %u threads.\n", kConnections, kRequests, loop.maxThreads());

    const char* items[] = {"apple", "bread", "cheese", "dates"};
    fiberscope::trace::mark("checkpoint: serving");
    const auto start = std::chrono::steady_clock::now();
    std::vector<fiberscope::Future<long>> connections;
    for (int c = 0; c < kConnections; ++c)
        connections.push_back(loop.async([&, c] {
            fiberscope::setFiberName("connection " + std::to_string(c));
            long total = 0;
            for (int r = 0; r < kRequests; ++r) {
                const long price = service.serve(c, items[(c + r) % 4]);
                if (price < 0) return -1L;
                total += price;
            }
            return total;
        }));
    bool ok = true;
    for (auto& connection : connections) ok &= connection.await() >= 0;
    const auto took = std::chrono::steady_clock::now() - start;
    fiberscope::trace::mark("checkpoint: served");

    (void)loop.close(*log);
    ::unlink(path.c_str());
    const auto us = std::chrono::duration_cast<std::chrono::microseconds>(took).count();
    std::printf("%d requests in %lld us: %.1f us each, %s\n", kConnections * kRequests, static_cast<long long>(us),
                static_cast<double>(us) / (kConnections * kRequests), ok ? "all answered" : "SOME FAILED");
    return ok ? 0 : 1;
}
