// fiberscope_random_programs: runs random fiber programs (program.hpp) and
// judges each by what it did and by its trace.
//
//   --check N [--from SEED] [--busy] [--timeout SEC] [--max-tasks K]
//       the driver: programs SEED .. SEED+N-1, each in a child process of
//       its own (this binary with --run), on a configuration the seed picks
//       (1 to 4 threads, io_uring or epoll, seed or scaling policy, and now
//       and then the runtime's fault injection that widens a worker's
//       start), recorded with FIBERSCOPE_TRACE_CHECK=1. A program fails if
//       it does not exit 0 (a failed check, an abort, a crash), does not end
//       within the timeout (a lost wake-up: a hang), or its trace does not
//       verify (the validator and the model against the runtime's truth
//       records). A failure is printed with its seed and configuration, then
//       shrunk (tasks removed, parameters halved, each try run up to three
//       times) and printed again with the command that reproduces it.
//       --busy: a process competing for the CPUs the whole time. Exit 1 if
//       any program failed.
//   --long N: --check N --busy, for a long local run.
//   --run PROGRAM --threads N --backend uring|epoll --scheduler seed|scaling
//       one program, here (what the driver's children do).
//   --seed S --threads ...: the program seed S generates, here.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fiberscope/fiberscope.hpp>

#include "program.hpp"
#include "trace_tools.hpp"

namespace {

using namespace random_programs;

struct Config {
    unsigned threads = 1;
    std::string backend = "uring";
    std::string scheduler = "scaling";
    int spawn_delay_us = 0; // the runtime's fault injection (loop.hpp)
    int jitter = 0;         // ... and its preemptions at the scheduler's delicate points (per mille: fault_injection.hpp)
};

// What the seed picks besides the program: every combination comes round
// every 16 seeds; one seed in five widens worker starts, one in three
// stalls threads at the scheduler's delicate points now and then.
Config configFor(std::uint64_t seed) {
    Config c;
    c.threads = 1 + static_cast<unsigned>(seed % 4);
    c.backend = (seed / 4) % 2 ? "epoll" : "uring";
    c.scheduler = (seed / 8) % 2 ? "seed" : "scaling";
    c.spawn_delay_us = seed % 5 == 3 ? 150 : 0;
    c.jitter = seed % 3 == 1 ? 20 : 0;
    return c;
}

std::string describe(const Config& c) {
    return std::to_string(c.threads) + " thread(s), " + c.backend + ", " + c.scheduler + " policy" +
           (c.spawn_delay_us ? ", worker starts widened by " + std::to_string(c.spawn_delay_us) + " us" : "") +
           (c.jitter ? ", threads stalled at " + std::to_string(c.jitter) + " per mille of the delicate points" : "");
}

int runHere(const Program& program, const Config& config) {
    fiberscope::EventLoopOptions options;
    options.threads = config.threads;
    options.backend = config.backend == "epoll" ? fiberscope::IoBackend::epoll : fiberscope::IoBackend::io_uring;
    options.scheduler = config.scheduler == "seed" ? fiberscope::SchedulerPolicy::seed : fiberscope::SchedulerPolicy::scaling;
    auto loop = fiberscope::EventLoop::create(options);
    if (!loop) {
        std::fprintf(stderr, "random program: cannot create the loop: %s\n", loop.error().message());
        return 2;
    }
    std::string failure;
    const bool ok = run(**loop, program, failure);
    if (!ok) std::fprintf(stderr, "random program: %s\n", failure.c_str());
    return ok ? 0 : 1;
}

struct Outcome {
    bool ok = true;
    std::string what; // why not
};

std::string selfPath() {
    char path[4096];
    const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
    if (n <= 0) return "fiberscope_random_programs";
    path[n] = '\0';
    return path;
}

std::string tail(const std::string& text, std::size_t lines) {
    std::size_t at = text.size();
    for (std::size_t k = 0; k <= lines && at > 0; ++k) {
        at = text.rfind('\n', at - 1);
        if (at == std::string::npos) return text;
    }
    return text.substr(at + 1);
}

// Runs `program` in a child (this binary with --run), recorded; judges it.
Outcome runChild(const std::string& program, const Config& config, int timeout_s, const std::string& dir, const std::string& tag) {
    const std::string trace_path = dir + "/" + tag + ".fstrace";
    const std::string err_path = dir + "/" + tag + ".err";
    const std::string self = selfPath();
    const std::string threads = std::to_string(config.threads);
    const pid_t pid = ::fork();
    if (pid < 0) return {false, "fork failed"};
    if (pid == 0) {
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (err >= 0) {
            ::dup2(err, STDERR_FILENO);
            ::dup2(err, STDOUT_FILENO);
        }
        ::setenv("FIBERSCOPE_TRACE", trace_path.c_str(), 1);
        ::setenv("FIBERSCOPE_TRACE_CHECK", "1", 1);
        if (config.spawn_delay_us) ::setenv("FIBERSCOPE_TEST_SPAWN_DELAY_US", std::to_string(config.spawn_delay_us).c_str(), 1);
        else ::unsetenv("FIBERSCOPE_TEST_SPAWN_DELAY_US");
        if (config.jitter) ::setenv("FIBERSCOPE_TEST_JITTER", std::to_string(config.jitter).c_str(), 1);
        else ::unsetenv("FIBERSCOPE_TEST_JITTER");
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        ::execl(self.c_str(), self.c_str(), "--run", program.c_str(), "--threads", threads.c_str(), "--backend",
                config.backend.c_str(), "--scheduler", config.scheduler.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
    bool hung = false;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            hung = true;
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    std::string output;
    {
        std::ifstream in(err_path);
        std::stringstream text;
        text << in.rdbuf();
        output = text.str();
    }
    Outcome out;
    if (hung) {
        out = {false, "hang: it did not end within " + std::to_string(timeout_s) + " s (a wait that should have ended did not)"};
    } else if (WIFSIGNALED(status)) {
        out = {false, "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")"};
    } else if (WEXITSTATUS(status) != 0) {
        out = {false, "exit status " + std::to_string(WEXITSTATUS(status))};
    } else {
        fiberscope::trace::Trace trace;
        fiberscope::trace::ReadError error;
        if (!fiberscope::trace::readTrace(trace_path, trace, error, {.strict = true})) {
            out = {false, "its trace does not read: " + error.text()};
        } else {
            const fiberscope::analysis::ValidationReport report = fiberscope::trace::verifyTrace(trace);
            if (!report.ok()) {
                out.ok = false;
                out.what = "its trace contradicts itself in " + std::to_string(report.count) + " place(s):";
                for (std::size_t k = 0; k < report.violations.size() && k < 5; ++k)
                    out.what += "\n    " + fiberscope::analysis::describeViolation(trace, report.violations[k]);
            }
        }
    }
    if (!out.ok && !output.empty()) out.what += "\n  its output ends:\n" + tail(output, 8);
    if (out.ok) {
        std::filesystem::remove(trace_path);
        std::filesystem::remove(err_path);
    }
    return out;
}

// Shrinks a failing program: the smallest one found that still fails (a try
// counts as failing if any of three runs fails: the failures are races).
Program shrink(Program program, const Config& config, int timeout_s, const std::string& dir, std::string& last_failure) {
    // Bounded: 60 child runs and 90 s (a hang costs its whole timeout).
    int budget = 60;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    const auto within = [&] { return budget > 0 && std::chrono::steady_clock::now() < give_up; };
    for (bool smaller = true; smaller && within();) {
        smaller = false;
        for (const Program& candidate : shrinkCandidates(program)) {
            bool fails = false;
            for (int attempt = 0; attempt < 3 && within() && !fails; ++attempt, --budget) {
                const Outcome o = runChild(toText(candidate), config, timeout_s, dir, "shrink");
                if (!o.ok) {
                    fails = true;
                    last_failure = o.what;
                }
            }
            if (fails) {
                program = candidate;
                smaller = true;
                break;
            }
            if (!within()) break;
        }
    }
    return program;
}

int check(std::uint64_t from, std::uint64_t count, bool busy, int timeout_s, int max_tasks) {
    pid_t competitor = -1;
    if (busy) {
        competitor = ::fork();
        if (competitor == 0) {
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            for (;;) asm volatile("" ::: "memory");
        }
    }
    char dir_template[] = "/tmp/fiberscope-random-XXXXXX";
    const std::string dir = ::mkdtemp(dir_template) ? dir_template : "/tmp";
    const std::string self = selfPath();
    std::size_t failed = 0;
    const auto start = std::chrono::steady_clock::now();
    for (std::uint64_t seed = from; seed < from + count; ++seed) {
        const Program program = generate(seed, max_tasks);
        const Config config = configFor(seed);
        const std::string text = toText(program);
        const Outcome o = runChild(text, config, timeout_s, dir, "seed-" + std::to_string(seed));
        if (o.ok) continue;
        ++failed;
        std::printf("FAILED: seed %llu (%s)\n  program: %s\n  %s\n", static_cast<unsigned long long>(seed),
                    describe(config).c_str(), text.c_str(), o.what.c_str());
        std::fflush(stdout);
        std::string last = o.what;
        const Program small = shrink(program, config, timeout_s, dir, last);
        std::string env;
        if (config.spawn_delay_us) env += "FIBERSCOPE_TEST_SPAWN_DELAY_US=" + std::to_string(config.spawn_delay_us) + " ";
        if (config.jitter) env += "FIBERSCOPE_TEST_JITTER=" + std::to_string(config.jitter) + " ";
        std::printf("  shrunk to: %s\n  which fails so: %s\n  reproduce: %s%s --run '%s' --threads %u --backend %s --scheduler %s\n"
                    "  (with FIBERSCOPE_TRACE=out.fstrace FIBERSCOPE_TRACE_CHECK=1 it records; then fiberscope verify out.fstrace)\n",
                    toText(small).c_str(), last.c_str(), env.c_str(),
                    self.c_str(), toText(small).c_str(), config.threads, config.backend.c_str(), config.scheduler.c_str());
        std::fflush(stdout);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%llu random programs (seeds %llu..%llu)%s in %.1f s: %zu failed\n", static_cast<unsigned long long>(count),
                static_cast<unsigned long long>(from), static_cast<unsigned long long>(from + count - 1),
                busy ? ", beside a busy process" : "", seconds, failed);
    if (competitor > 0) {
        ::kill(competitor, SIGKILL);
        ::waitpid(competitor, nullptr, 0);
    }
    if (failed == 0) std::filesystem::remove_all(dir);
    else std::printf("the failing programs' traces and output are in %s\n", dir.c_str());
    return failed == 0 ? 0 : 1;
}

int usage(const char* why) {
    std::fprintf(stderr,
                 "fiberscope_random_programs: %s\nusage: fiberscope_random_programs --check N [--from SEED] [--busy] [--timeout SEC] "
                 "[--max-tasks K] | --long N | --run PROGRAM|--seed S [--threads N] [--backend uring|epoll] [--scheduler seed|scaling]\n",
                 why);
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    std::uint64_t check_count = 0, from = 1;
    bool busy = false, checking = false;
    int timeout_s = 5, max_tasks = 5;
    std::string program_text;
    bool have_program = false;
    Config config;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if ((arg == "--check" || arg == "--long") && has_value) {
            check_count = std::strtoull(argv[++i], nullptr, 10);
            checking = true;
            if (arg == "--long") busy = true;
        } else if (arg == "--from" && has_value) {
            from = std::strtoull(argv[++i], nullptr, 10);
        } else if (arg == "--busy") {
            busy = true;
        } else if (arg == "--timeout" && has_value) {
            timeout_s = std::atoi(argv[++i]);
        } else if (arg == "--max-tasks" && has_value) {
            max_tasks = std::atoi(argv[++i]);
        } else if (arg == "--run" && has_value) {
            program_text = argv[++i];
            have_program = true;
        } else if (arg == "--seed" && has_value) {
            program_text = toText(generate(std::strtoull(argv[++i], nullptr, 10), max_tasks));
            have_program = true;
        } else if (arg == "--threads" && has_value) {
            config.threads = static_cast<unsigned>(std::atoi(argv[++i]));
        } else if (arg == "--backend" && has_value) {
            config.backend = argv[++i];
        } else if (arg == "--scheduler" && has_value) {
            config.scheduler = argv[++i];
        } else {
            return usage(("bad argument '" + arg + "'").c_str());
        }
    }
    if (checking) {
        if (check_count == 0) return usage("--check needs a count of programs");
        return check(from, check_count, busy, timeout_s, max_tasks);
    }
    if (!have_program) return usage("nothing to do");
    Program program;
    std::string error;
    if (!parse(program_text, program, error)) return usage(("bad program: " + error).c_str());
    return runHere(program, config);
}
