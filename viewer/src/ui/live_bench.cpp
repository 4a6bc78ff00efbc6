// `fiberscope benchmark`'s live part: how long from a record being made to
// the live view drawing it.
//
// A recording in this process plays a small program: a busy thread that
// records a mark every millisecond and parks in between (as a worker that
// wakes for timers does), and a quiet thread that records once every 300 ms
// and parks for the rest (the worst case: its records wait in its buffer
// until the writer takes them, after the 100 ms flush budget). The live view
// follows the file exactly as `view --live` does (same follower thread, same
// frames). After each frame is presented, every record that is new in the
// drawn model is a sample: now - (the recording's start + the record's
// time), both on CLOCK_REALTIME.
#include "ui/live_bench.hpp"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "fiberscope/trace.hpp"
#include "ui/app.hpp"
#include "ui/live_view.hpp"

namespace fiberscope::viewer {

namespace {

std::int64_t realtimeNs() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

void recordingThread(unsigned worker, const char* name, std::chrono::milliseconds every, const std::atomic<bool>& stop) {
    namespace emit = trace::emit;
    emit::threadStart(trace::now(), worker, name);
    while (!stop.load(std::memory_order_relaxed)) {
        trace::mark(worker == 0 ? "tick" : "quiet tick");
        const std::uint64_t t = trace::now();
        trace::flushIfStale(t);
        emit::park(t);
        std::this_thread::sleep_for(every);
        emit::unpark(trace::now(), 1);
    }
    emit::threadStop(trace::now());
}

} // namespace

bool measureLiveLatency(Window& window, double seconds, LiveLatency& out, std::string& error) {
    const char* tmp = std::getenv("TMPDIR");
    const std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/fiberscope-bench-live-" + std::to_string(getpid()) + ".fstrace";
    trace::Recorder recorder(path, {});
    if (!recorder.ok()) {
        error = recorder.error();
        return false;
    }
    std::atomic<bool> stop{false};
    std::thread busy(recordingThread, 0u, "busy", std::chrono::milliseconds(1), std::cref(stop));
    std::thread quiet(recordingThread, 1u, "quiet", std::chrono::milliseconds(300), std::cref(stop));
    App app;
    app.headless = true;
    followFile(app, path);
    std::vector<double> samples_ms;
    std::vector<std::size_t> seen; // per trace thread: its records already sampled
    const auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < std::chrono::duration<double>(seconds)) {
        window.frame([&] { drawApp(app, window.fonts()); });
        window.present();
        if (!app.trace) continue;
        const std::int64_t drawn = realtimeNs();
        const trace::Trace& t = *app.trace;
        seen.resize(t.threads.size(), 0);
        std::vector<std::size_t> count(t.threads.size(), 0);
        for (const trace::Event& e : t.events) {
            if (e.thread >= count.size()) continue;
            // A thread's records keep their order in the model: the ones past `seen` are new.
            if (count[e.thread]++ >= seen[e.thread] && e.kind == trace::EventKind::Mark)
                samples_ms.push_back(static_cast<double>(drawn - static_cast<std::int64_t>(t.header.start_realtime_ns) - e.time) / 1e6);
        }
        for (std::size_t i = 0; i < count.size(); ++i) seen[i] = count[i];
        std::this_thread::sleep_for(std::chrono::milliseconds(8)); // ~60 frames a second with the frame itself
    }
    stop = true;
    busy.join();
    quiet.join();
    app.live.reset();
    (void)recorder.stop();
    unlink(path.c_str());
    if (samples_ms.size() < 10) {
        error = "the live view drew only " + std::to_string(samples_ms.size()) + " records in " + std::to_string(seconds) + " s";
        return false;
    }
    std::sort(samples_ms.begin(), samples_ms.end());
    const auto at = [&](double q) { return samples_ms[std::min(samples_ms.size() - 1, static_cast<std::size_t>(q * static_cast<double>(samples_ms.size())))]; };
    out.samples = samples_ms.size();
    out.median_ms = at(0.5);
    out.p99_ms = at(0.99);
    out.max_ms = samples_ms.back();
    return true;
}

} // namespace fiberscope::viewer
