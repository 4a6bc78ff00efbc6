// The random-program oracle (issue 35): random fiber programs over the whole
// public API, on every configuration, judged by their own checks, by a
// watchdog for hangs, and by the validator and the runtime's truth records
// on their traces. The driver (random_programs_main.cpp) does the work;
// these cases run bounded batches of it, once quiet and once beside a
// process competing for the CPUs, and check the generator itself.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <cstdio>
#include <set>
#include <string>

#include "program.hpp"

namespace {

struct Run {
    int status = -1;
    std::string output;
};

Run runDriver(const std::string& args) {
    Run run;
    const std::string command = std::string(FIBERSCOPE_RANDOM_PROGRAMS) + " " + args + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe);
    char buffer[4096];
    std::size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, pipe)) > 0) run.output.append(buffer, n);
    run.status = ::pclose(pipe);
    return run;
}

long count(const char* name, long fallback) {
    const char* text = std::getenv(name);
    return text && *text ? std::atol(text) : fallback;
}

} // namespace

TEST_CASE("random programs are data: deterministic from their seed, printed and parsed back, shrunk smaller",
          "[random]") {
    for (std::uint64_t seed = 1; seed < 200; ++seed) {
        const random_programs::Program a = random_programs::generate(seed), b = random_programs::generate(seed);
        const std::string text = random_programs::toText(a);
        INFO("seed " << seed << ": " << text);
        CHECK(text == random_programs::toText(b));
        random_programs::Program parsed;
        std::string error;
        REQUIRE(random_programs::parse(text, parsed, error));
        CHECK(random_programs::toText(parsed) == text);
        for (const auto& smaller : random_programs::shrinkCandidates(a))
            CHECK(random_programs::toText(smaller) != text);
    }
    // Every kind of task comes up.
    std::set<std::string> seen;
    for (std::uint64_t seed = 1; seed < 400; ++seed)
        for (const auto& task : random_programs::generate(seed).tasks) seen.insert(task.kind);
    CHECK(seen.size() == random_programs::kinds().size());
    random_programs::Program p;
    std::string error;
    CHECK_FALSE(random_programs::parse("mutex:fibers=99", p, error));
    CHECK(error.find("fibers") != std::string::npos);
    CHECK_FALSE(random_programs::parse("no-such-task", p, error));
}

TEST_CASE("random programs on every configuration end, pass their checks and verify", "[random][oracle]") {
    // FIBERSCOPE_RANDOM_PROGRAMS=N runs N programs per batch (default 120).
    const long n = count("FIBERSCOPE_RANDOM_PROGRAMS", 120);
    const Run quiet = runDriver("--check " + std::to_string(n) + " --from 1");
    INFO(quiet.output);
    CHECK(quiet.status == 0);
}

TEST_CASE("random programs beside a busy process, where rare interleavings happen", "[random][oracle]") {
    const long n = count("FIBERSCOPE_RANDOM_PROGRAMS", 120);
    const Run busy = runDriver("--check " + std::to_string(n) + " --from 100001 --busy");
    INFO(busy.output);
    CHECK(busy.status == 0);
}
