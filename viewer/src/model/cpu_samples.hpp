// What the OS did to each thread: the trace writer's cpu-sample records
// (FORMAT.md), turned into one list of sample intervals per trace thread,
// so the timeline can draw, under a thread's lane, how much of each
// interval the thread spent ready but waiting for a CPU. A "running" fiber
// holds its thread even while the kernel has preempted that thread; this
// is where a learner sees it.
//
// Built from the trace's events directly, once per trace (the analysis
// model knows nothing of these records): one pass, each sample appended to
// the list of the thread it names. A sample covers the time since the same
// thread's previous sample; its first sample counts from the thread's
// first record (when it attached to the recording).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fiberscope/analysis/timeline.hpp"
#include "fiberscope/trace_reader.hpp"

namespace fiberscope::viewer {

struct CpuSampleSpan {
    std::int64_t start = 0, end = 0; // ns since the recording started: the previous sample (or the thread's first record) to this one
    std::uint64_t on_cpu_ns = 0;
    std::uint64_t runqueue_wait_ns = 0;
    std::uint32_t event = 0; // the cpu-sample record's index in Trace::events

    // The part of the interval spent ready on a runqueue, in [0, 1].
    double waitFraction() const noexcept;
};

struct CpuSamples {
    // Indexed like Trace::threads (the dense index in Event::thread); each
    // list in time order.
    std::vector<std::vector<CpuSampleSpan>> by_thread;

    const std::vector<CpuSampleSpan>* of(std::uint32_t thread) const noexcept {
        return thread < by_thread.size() && !by_thread[thread].empty() ? &by_thread[thread] : nullptr;
    }
    bool empty() const noexcept;
};

CpuSamples buildCpuSamples(const trace::Trace& trace);

// The span of `spans` that contains `time`, or nullptr.
const CpuSampleSpan* cpuSampleAt(const std::vector<CpuSampleSpan>& spans, std::int64_t time) noexcept;

// One sentence for a hover: "the kernel ran another thread here: this
// worker waited 3.1 ms of 20 ms for a CPU" (or that it had a CPU when
// it was ready).
std::string describeCpuSample(const CpuSampleSpan& span);

// The trace writer's pseudo thread (FORMAT.md, "CPU samples"): a lane
// whose every record is a cpu-sample. It runs no fiber; the timeline draws
// its records under the lanes they describe instead of a lane of its own.
bool isCpuSamplerLane(const analysis::ThreadLane& lane) noexcept;

} // namespace fiberscope::viewer
