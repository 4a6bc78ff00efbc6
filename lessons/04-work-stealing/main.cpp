// Lesson 4: work stealing.
//
// An unbalanced tree of work: a node of depth d does a slice of CPU work,
// then spawns children of depths d-1, d-2, ..., 0 and awaits them. The first
// child of every node holds half of the remaining tree, the last one is a
// leaf. Spawned children pile up on the ready queue of the thread that
// spawned them; a thread that runs dry takes another thread's whole queue.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>

#include "../lesson_start.hpp"

using namespace std::chrono_literals;

namespace {

constexpr const char* kName = "lesson04-work-stealing";
constexpr int kDepth = 7; // 2^7 = 128 nodes

void compute(std::chrono::microseconds duration) {
    const auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() < end) {
    }
}

// Which OS thread ran how many nodes (an OS mutex, never held across a suspension).
std::mutex g_mutex;
std::map<std::thread::id, int> g_nodes_per_thread;

int node(fiberscope::EventLoop& loop, int depth) {
    compute(200us);
    {
        std::lock_guard lock(g_mutex);
        ++g_nodes_per_thread[std::this_thread::get_id()];
    }
    std::vector<fiberscope::Future<int>> children;
    for (int d = depth - 1; d >= 0; --d) children.push_back(loop.async([&loop, d] { return node(loop, d); }));
    int count = 1;
    for (auto& child : children) count += child.await();
    return count;
}

} // namespace

int main(int argc, char** argv) {
    const auto loop_owner = lesson::start(kName, argc, argv, 4);
    fiberscope::EventLoop& loop = *loop_owner;

    std::printf("Running an unbalanced tree of depth %d on up to %u threads...\n", kDepth, loop.maxThreads());
    fiberscope::trace::mark("checkpoint: tree begins");
    auto root = loop.async([&loop] {
        fiberscope::setFiberName("root");
        return node(loop, kDepth);
    });
    const int nodes = root.await();
    fiberscope::trace::mark("checkpoint: tree done");

    std::printf("%d nodes ran; per OS thread:", nodes);
    char letter = 'A';
    for (const auto& [id, count] : g_nodes_per_thread) std::printf(" %c=%d", letter++, count);
    std::printf("\n(The trace's steal records say which thread ran dry and whose queue it took.)\n");
    return 0;
}
