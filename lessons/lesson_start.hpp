// What every lesson program does first: read `--threads N` (the only
// argument a lesson takes) and start an EventLoop. Public API only.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include <fiberscope/fiberscope.hpp>

namespace lesson {

// The loop for lesson `name`, on up to `default_threads` worker threads
// unless `--threads N` says otherwise. On a bad argument it prints a
// one-line usage error and exits with 2; if the loop cannot start, the
// reason and exits with 1.
inline std::unique_ptr<fiberscope::EventLoop> start(const char* name, int argc, char** argv, unsigned default_threads) {
    unsigned threads = default_threads;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--threads" && i + 1 < argc) {
            char* end = nullptr;
            const unsigned long n = std::strtoul(argv[++i], &end, 10);
            if (*end == '\0' && n >= 1 && n <= 1024) {
                threads = static_cast<unsigned>(n);
                continue;
            }
        }
        std::fprintf(stderr, "%s: bad argument '%s'; usage: %s [--threads N]\n", name, argv[i], name);
        std::exit(2);
    }
    auto created = fiberscope::EventLoop::create({.threads = threads});
    if (!created) {
        std::fprintf(stderr, "%s: cannot start the event loop: %s\n", name, created.error().message());
        std::exit(1);
    }
    return std::move(*created);
}

} // namespace lesson
