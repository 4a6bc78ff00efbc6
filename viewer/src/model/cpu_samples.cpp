// The per-thread CPU sample lists (cpu_samples.hpp).
#include "model/cpu_samples.hpp"

#include <algorithm>
#include <unordered_map>

#include "fiberscope/trace_vocabulary.hpp"

namespace fiberscope::viewer {

double CpuSampleSpan::waitFraction() const noexcept {
    const std::int64_t length = end - start;
    if (length <= 0) return runqueue_wait_ns ? 1.0 : 0.0;
    return std::min(1.0, static_cast<double>(runqueue_wait_ns) / static_cast<double>(length));
}

bool CpuSamples::empty() const noexcept {
    for (const auto& list : by_thread)
        if (!list.empty()) return false;
    return true;
}

CpuSamples buildCpuSamples(const trace::Trace& trace) {
    CpuSamples samples;
    samples.by_thread.resize(trace.threads.size());
    // A record names the file's thread number; lists are by dense index.
    std::unordered_map<std::uint64_t, std::uint32_t> index_of;
    for (std::uint32_t i = 0; i < trace.threads.size(); ++i) index_of.emplace(trace.threads[i].number, i);
    // Each thread's first sample counts from its first record (FORMAT.md).
    std::vector<std::int64_t> previous(trace.threads.size(), 0);
    std::vector<bool> seen(trace.threads.size(), false);
    for (const trace::Event& e : trace.events)
        if (e.thread < seen.size() && !seen[e.thread] && e.kind != trace::EventKind::CpuSample) {
            seen[e.thread] = true;
            previous[e.thread] = e.time;
        }
    for (std::uint32_t i = 0; i < trace.events.size(); ++i) {
        const trace::Event& e = trace.events[i];
        if (e.kind != trace::EventKind::CpuSample) continue;
        const auto it = index_of.find(e.arg[0]);
        if (it == index_of.end()) continue; // a thread the trace never saw record (a hostile or cut file)
        const std::uint32_t t = it->second;
        // Events are in time order, so each list is too. (A thread with no
        // record of its own: its first sample only opens its list.)
        if (seen[t] && e.time > previous[t])
            samples.by_thread[t].push_back({previous[t], e.time, e.arg[1], e.arg[2], i});
        if (!seen[t]) previous[t] = e.time;
        seen[t] = true;
        previous[t] = std::max(previous[t], e.time);
    }
    return samples;
}

const CpuSampleSpan* cpuSampleAt(const std::vector<CpuSampleSpan>& spans, std::int64_t time) noexcept {
    auto it = std::upper_bound(spans.begin(), spans.end(), time, [](std::int64_t t, const CpuSampleSpan& s) { return t < s.end; });
    if (it == spans.end() || time < it->start) return nullptr;
    return &*it;
}

std::string describeCpuSample(const CpuSampleSpan& span) {
    const std::string wait = trace::formatDuration(static_cast<std::int64_t>(span.runqueue_wait_ns));
    const std::string length = trace::formatDuration(span.end - span.start);
    if (span.runqueue_wait_ns == 0)
        return "the kernel gave this thread a CPU whenever it was ready here: it ran " +
               trace::formatDuration(static_cast<std::int64_t>(span.on_cpu_ns)) + " of " + length + " and never waited for one";
    return "the kernel ran another thread here: this thread waited " + wait + " of " + length +
           " for a CPU (a fiber shown running was then really waiting)";
}

bool isCpuSamplerLane(const analysis::ThreadLane& lane) noexcept {
    std::uint64_t all = 0;
    for (std::uint32_t count : lane.records) all += count;
    const std::uint32_t samples = lane.records[static_cast<std::size_t>(trace::EventKind::CpuSample)];
    return samples > 0 && all == samples;
}

} // namespace fiberscope::viewer
