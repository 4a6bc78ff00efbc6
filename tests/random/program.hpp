// Random fiber programs: the oracle's programs nobody wrote by hand.
//
// A program is a list of tasks that run at once, each on fibers of its own,
// each a small pattern over the public API (spawn trees, Mutex, Condition,
// Queue, Event, Semaphore, RwLock, Group, select, cancel, CancelProtection,
// sleeps, timed waits, pipes, files, loopback sockets, detached fibers,
// yields), with its parameters. Every pattern ends by construction (a wait
// without a timeout only where a wake-up is certain, every other wait
// bounded), so a program that does not end is a runtime bug: a lost
// wake-up. Each pattern also checks its own outcome (the count under a
// mutex, the items through a queue, Canceled from a canceled wait...).
//
// Programs are data: generated from a seed, printed and parsed as text
// ("mutex:fibers=3,rounds=5;queue:producers=2,consumers=1,items=8"), so a
// failure is reported as a seed and as a program, and shrunk by removing
// tasks and halving parameters while it still fails.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace fiberscope {
class EventLoop;
}

namespace random_programs {

struct Task {
    std::string kind;                  // one of kinds()
    std::map<std::string, int> params; // its parameters (defaults fill what is missing)
};

struct Program {
    std::vector<Task> tasks;
};

// Every task kind, in a fixed order.
const std::vector<std::string>& kinds();

// A program of 1 to `max_tasks` tasks, deterministic from `seed`.
Program generate(std::uint64_t seed, int max_tasks = 5);

std::string toText(const Program& program);
// False, with `error` naming the problem, for text that is not a program.
bool parse(std::string_view text, Program& out, std::string& error);

// Smaller programs to try when `program` fails: each without one of its
// tasks, then each with one parameter halved (or lowered by one).
std::vector<Program> shrinkCandidates(const Program& program);

// Runs `program` on `loop` from the loop's main fiber; false, with
// `failure` saying what a task found wrong, if a check failed.
bool run(fiberscope::EventLoop& loop, const Program& program, std::string& failure);

} // namespace random_programs
