// A traced program for the crash-loss test (tests/tracer/test_recording.cpp):
// it never ends by itself, and the test kills it with SIGKILL, so nothing
// is written at exit and the trace holds only what the tracer had already
// handed to the writer.
//
//   busy_traced busy   two workers, four fibers that each compute for about
//                      1 ms between yields, forever. The threads never park,
//                      and record slowly (a few KB a second): a buffer
//                      flushed only when full, or when its thread parks,
//                      would hold the whole run.
//   busy_traced park   a short burst of records on every worker (fibers
//                      spawned and yielding), the mark "burst done", then
//                      every fiber sleeps for an hour: the threads park with
//                      their last records in their buffers.
//
// Tracing is on when FIBERSCOPE_TRACE names a file (the loop starts it).
// Prints "ready" once the fibers are started.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

using namespace std::chrono_literals;

namespace {

void compute(std::chrono::microseconds how_long) {
    const auto until = std::chrono::steady_clock::now() + how_long;
    while (std::chrono::steady_clock::now() < until) {
    }
}

} // namespace

int main(int argc, char** argv) {
    const bool park = argc > 1 && std::strcmp(argv[1], "park") == 0;
    if (argc != 2 || (!park && std::strcmp(argv[1], "busy") != 0)) {
        std::fprintf(stderr, "usage: %s busy|park\n", argv[0]);
        return 2;
    }
    auto created = fiberscope::EventLoop::create({.threads = 2});
    if (!created) {
        std::fprintf(stderr, "busy_traced: cannot start the event loop: %s\n", created.error().message());
        return 1;
    }
    auto& loop = **created;
    std::vector<fiberscope::Future<void>> fibers;
    if (park) {
        for (int i = 0; i < 8; ++i)
            fibers.push_back(loop.async([&loop] {
                for (int r = 0; r < 20; ++r) loop.yield();
                (void)loop.sleep(1h);
            }));
        (void)loop.sleep(20ms); // the burst is over: every fiber sleeps
        fiberscope::trace::mark("burst done");
    } else {
        for (int i = 0; i < 4; ++i)
            fibers.push_back(loop.async([&loop] {
                for (;;) {
                    compute(1ms);
                    loop.yield();
                }
            }));
    }
    std::printf("ready\n");
    std::fflush(stdout);
    (void)loop.sleep(1h);
    std::fprintf(stderr, "busy_traced: not killed within an hour\n");
    std::_Exit(1);
}
