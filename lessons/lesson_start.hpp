// What every lesson program does first: read `--threads N`,
// `--backend uring|epoll`, `--scheduler seed|scaling` and `--pin` (the only
// arguments a lesson takes) and start an EventLoop. Public API only.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include <fiberscope/fiberscope.hpp>

namespace lesson {

// The loop for lesson `name`, on up to `default_threads` worker threads
// unless `--threads N` says otherwise, on the backend `--backend uring|epoll`
// names (else automatic: io_uring, or FIBERSCOPE_BACKEND from the
// environment), under the scheduler policy `--scheduler seed|scaling` names,
// else `policy`: the seed's for the lessons that teach it, whatever
// FIBERSCOPE_SCHEDULER says (the runtime's default is scaling; the course
// shows the seed's mechanism, and its traces and tests depend on it).
// `--pin` pins each worker to a CPU (EventLoopOptions::pin_workers), for a
// picture that changes less from run to run. On a
// bad argument it prints a one-line usage error and exits with 2; if the
// loop cannot start, the reason and exits with 1.
inline std::unique_ptr<fiberscope::EventLoop> start(const char* name, int argc, char** argv, unsigned default_threads,
                                                    fiberscope::SchedulerPolicy policy = fiberscope::SchedulerPolicy::seed) {
    fiberscope::EventLoopOptions options{.threads = default_threads, .scheduler = policy};
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--pin") {
            options.pin_workers = true;
            continue;
        }
        if (arg == "--threads" && i + 1 < argc) {
            char* end = nullptr;
            const unsigned long n = std::strtoul(argv[++i], &end, 10);
            if (*end == '\0' && n >= 1 && n <= 1024) {
                options.threads = static_cast<unsigned>(n);
                continue;
            }
        }
        if (arg == "--backend" && i + 1 < argc) {
            const std::string_view backend = argv[++i];
            if (backend == "uring" || backend == "io_uring") {
                options.backend = fiberscope::IoBackend::io_uring;
                continue;
            }
            if (backend == "epoll") {
                options.backend = fiberscope::IoBackend::epoll;
                continue;
            }
        }
        if (arg == "--scheduler" && i + 1 < argc) {
            const std::string_view scheduler = argv[++i];
            if (scheduler == "seed" || scheduler == "scaling") {
                options.scheduler =
                    scheduler == "seed" ? fiberscope::SchedulerPolicy::seed : fiberscope::SchedulerPolicy::scaling;
                continue;
            }
        }
        std::fprintf(stderr, "%s: bad argument '%s'; usage: %s [--threads N] [--backend uring|epoll] [--scheduler seed|scaling] [--pin]\n",
                     name, argv[i], name);
        std::exit(2);
    }
    auto created = fiberscope::EventLoop::create(options);
    if (!created) {
        std::fprintf(stderr, "%s: cannot start the event loop: %s (%s)\n", name, created.error().message(),
                     created.error().name());
        std::exit(1);
    }
    return std::move(*created);
}

} // namespace lesson
