// Live: while a traced program runs, a follower sees its records within the
// writer's flush budget, and the model built from what was read so far has
// the program's threads and fibers on it, before the program ends.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include <fiberscope/analysis/timeline.hpp>
#include <fiberscope/trace_follower.hpp>

extern char** environ;

using namespace std::chrono_literals;
using namespace fiberscope;

namespace {

// Runs the never-ending busy program recording into `trace_path`; the destructor kills it.
struct BusyProgram {
    pid_t pid = -1;
    explicit BusyProgram(const std::string& trace_path) {
        std::vector<std::string> env_strings;
        for (char** e = environ; *e; ++e)
            if (std::string_view(*e).rfind("FIBERSCOPE_TRACE=", 0) != 0) env_strings.emplace_back(*e);
        env_strings.push_back("FIBERSCOPE_TRACE=" + trace_path);
        std::vector<char*> env;
        for (auto& s : env_strings) env.push_back(s.data());
        env.push_back(nullptr);
        char program[] = FIBERSCOPE_BUSY_TRACED;
        char mode[] = "busy";
        char* argv[] = {program, mode, nullptr};
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
        REQUIRE(posix_spawn(&pid, program, &actions, nullptr, argv, env.data()) == 0);
        posix_spawn_file_actions_destroy(&actions);
    }
    bool running() const {
        int status;
        return waitpid(pid, &status, WNOHANG) == 0;
    }
    ~BusyProgram() {
        if (pid > 0) {
            kill(pid, SIGKILL);
            int status;
            waitpid(pid, &status, 0);
        }
    }
};

} // namespace

TEST_CASE("a running program's trace is followed and modelled while it runs", "[live]") {
    const std::string path = "/tmp/fiberscope-live-" + std::to_string(getpid()) + ".fstrace";
    unlink(path.c_str());
    BusyProgram program(path);
    trace::TraceFollower follower(path);
    trace::Trace trace;
    trace::ReadError error;
    // Bounded: the writer makes records durable within ~100 ms; 20 s covers a
    // loaded machine and a sanitizer build.
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    std::vector<std::size_t> sizes; // events after each poll that grew
    std::size_t lanes_with_work = 0, fibers_seen = 0;
    while (std::chrono::steady_clock::now() < deadline && sizes.size() < 4) {
        std::this_thread::sleep_for(50ms);
        trace::PollResult result;
        REQUIRE(follower.poll(trace, error, &result));
        if (!result.appended) continue;
        sizes.push_back(trace.events.size());
        // The model of what was read so far: the program's two workers run fibers.
        const analysis::Timeline timeline = analysis::buildTimeline(trace);
        lanes_with_work = 0;
        for (const auto& lane : timeline.threads) {
            bool ran = false;
            for (const auto& interval : lane.lane.intervals) ran = ran || (interval.state == analysis::State::Running && interval.fiber > 1);
            lanes_with_work += ran;
        }
        fibers_seen = timeline.fibers.size();
    }
    INFO("event counts after each poll: " << sizes.size() << " polls grew the trace");
    REQUIRE(sizes.size() == 4); // else: nothing durable within 20 s
    REQUIRE(program.running());  // all of it while the program still runs
    REQUIRE_FALSE(follower.finished());
    REQUIRE_FALSE(trace.header.complete);
    for (std::size_t i = 1; i < sizes.size(); ++i) REQUIRE(sizes[i] > sizes[i - 1]);
    REQUIRE(lanes_with_work >= 1);
    REQUIRE(fibers_seen >= 4);
    unlink(path.c_str());
}
