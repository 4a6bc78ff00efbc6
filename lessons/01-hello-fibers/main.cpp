// Lesson 1: hello fibers. Spawn a few fibers, await them, and see which
// worker thread each one ran on.
#include <cstdio>
#include <thread>
#include <vector>

#include <fiberscope/fiberscope.hpp>

int main(int argc, char** argv) {
    unsigned threads = 2;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == "--threads" && i + 1 < argc) threads = static_cast<unsigned>(std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "lesson01: unknown argument '%s'; usage: lesson01-hello-fibers [--threads N]\n", argv[i]);
            return 2;
        }
    }
    auto created = fiberscope::EventLoop::create({.threads = threads});
    if (!created) {
        std::fprintf(stderr, "lesson01: cannot start the event loop: %s\n", created.error().message());
        return 1;
    }
    auto& loop = **created;

    std::printf("Spawning 8 fibers on up to %u threads...\n", loop.maxThreads());
    std::vector<fiberscope::Future<std::size_t>> fibers;
    for (int i = 0; i < 8; ++i)
        fibers.push_back(loop.async([&loop, i] {
            // A fiber is a function with its own stack; sleeping suspends only it.
            (void)loop.sleep(std::chrono::milliseconds(5 * (8 - i)));
            return std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000;
        }));
    for (int i = 0; i < 8; ++i) std::printf("  fiber %d finished on OS thread #%03zu\n", i, fibers[i].await());
    std::printf("%u worker thread(s) were started lazily.\n", loop.activeThreads());
    return 0;
}
