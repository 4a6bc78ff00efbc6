// Recording a real program and reading it back: every scheduling decision
// shows up, consistently.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>
#include <fiberscope/trace_reader.hpp>

using namespace fiberscope;
using namespace fiberscope::trace;
using namespace std::chrono_literals;

namespace {

std::string tempTrace(const char* name) {
    return "/tmp/fiberscope-trace-" + std::to_string(getpid()) + "-" + name + ".fstrace";
}

long tree(EventLoop& loop, long depth) {
    if (depth == 0) return 1;
    std::vector<Future<long>> children;
    for (int i = 0; i < 4; ++i) children.push_back(loop.async([&loop, depth] { return tree(loop, depth - 1); }));
    long sum = 0;
    for (auto& c : children) sum += c.await();
    return sum;
}

std::map<EventKind, std::size_t> countKinds(const Trace& trace) {
    std::map<EventKind, std::size_t> counts;
    for (const Event& e : trace.events) ++counts[e.kind];
    return counts;
}

} // namespace

TEST_CASE("a recorded program's trace reads back with every kind of decision", "[tracer]") {
    const std::string path = tempTrace("decisions");
    {
        Recorder recorder(path);
        REQUIRE(recorder.ok());
        auto loop = EventLoop::create({.threads = 4}).value();
        auto total = loop->async([&] {
            setFiberName("root");
            mark("tree start");
            Zone zone("building the tree");
            return tree(*loop, 4);
        });
        REQUIRE(total.await() == 256);
        auto sleeper = loop->async([&] { return loop->sleep(30s); });
        (void)loop->sleep(2ms);
        REQUIRE(sleeper.cancel().error() == Errc::Canceled);
        // The main fiber holds the mutex while the lockers arrive: every one
        // of them contends, and each unlock hands the mutex over.
        Mutex mutex;
        mutex.lock();
        std::vector<Future<void>> lockers;
        for (int i = 0; i < 8; ++i)
            lockers.push_back(loop->async([&] {
                for (int r = 0; r < 20; ++r) {
                    std::lock_guard lock(mutex);
                    loop->yield();
                }
            }));
        (void)loop->sleep(5ms);
        mutex.unlock();
        for (auto& l : lockers) l.await();
    }
    Trace trace;
    ReadError error;
    const bool read = readTrace(path, trace, error, {.strict = true});
    INFO(error.text());
    REQUIRE(read);
    REQUIRE(trace.header.complete);
    REQUIRE(trace.warnings.empty());
    REQUIRE(trace.lost_events == 0);
    auto counts = countKinds(trace);
    const std::size_t fibers = 1 + 4 + 16 + 64 + 256 + 1 + 8;
    CHECK(counts[EventKind::FiberCreate] == fibers);
    CHECK(counts[EventKind::FiberFinish] == fibers);
    CHECK(counts[EventKind::Switch] >= 2 * fibers);
    CHECK(counts[EventKind::Schedule] >= fibers);
    CHECK(counts[EventKind::ThreadStart] >= 2);
    CHECK(counts[EventKind::Park] >= 1);
    CHECK(counts[EventKind::Submit] >= 2);
    CHECK(counts[EventKind::Complete] >= 2);
    CHECK(counts[EventKind::CancelRequest] == 1);
    CHECK(counts[EventKind::MutexContended] >= 1);
    CHECK(counts[EventKind::MutexHandoff] >= 1);
    CHECK(counts[EventKind::Mark] == 2); // ours, and the loop's "backend: ..."
    CHECK(counts[EventKind::ZoneBegin] == 1);
    CHECK(counts[EventKind::ZoneEnd] == 1);
    CHECK(counts[EventKind::FiberName] == 1);

    // Times are sorted, and fibers are named and created once.
    std::set<std::uint64_t> created;
    bool named_root = false;
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
        const Event& e = trace.events[i];
        if (i) REQUIRE(trace.events[i - 1].time <= e.time);
        if (e.kind == EventKind::FiberCreate) REQUIRE(created.insert(e.arg[0]).second);
        if (e.kind == EventKind::FiberName) named_root = trace.string(e.arg[1]) == "root";
        if (e.kind == EventKind::Mark)
            REQUIRE((trace.string(e.arg[0]) == "tree start" || trace.string(e.arg[0]).rfind("backend: ", 0) == 0));
        if (e.kind == EventKind::Switch) REQUIRE(e.small <= kMaxSwitchReason);
    }
    REQUIRE(named_root);
    REQUIRE(trace.threads.size() >= 2);
    bool has_worker0 = false;
    for (const auto& t : trace.threads) has_worker0 |= t.name == "worker 0";
    REQUIRE(has_worker0);
    unlink(path.c_str());
}

TEST_CASE("recording is off without a Recorder", "[tracer]") {
    REQUIRE_FALSE(recording());
    Recorder a("/tmp/fiberscope-no-such-dir/x.fstrace");
    REQUIRE_FALSE(a.ok());
    REQUIRE(a.error().find("cannot create trace file") != std::string::npos);
    REQUIRE_FALSE(recording());
}

TEST_CASE("only one Recorder at a time", "[tracer]") {
    const std::string path = tempTrace("one");
    Recorder first(path);
    REQUIRE(first.ok());
    Recorder second(tempTrace("two"));
    REQUIRE_FALSE(second.ok());
    REQUIRE(first.stop());
    unlink(path.c_str());
}
