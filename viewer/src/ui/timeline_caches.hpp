// What the timeline keeps between frames (App::timeline_caches): the
// indexes it builds from a model, each keyed by the model's serial (and its
// sizes, for a model that grows), the fiber list's scroll, a drag under way,
// and scratch buffers reused from frame to frame. Here rather than in
// function statics: a new trace starts from a clean slate (App::reset...),
// and a reader finds all of the timeline's state in one place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fiberscope/analysis/state_at.hpp"
#include "fiberscope/analysis/timeline.hpp"
#include "model/counters.hpp"
#include "model/cpu_samples.hpp"
#include "model/fibers_in_view.hpp"
#include "model/flow_select.hpp"

namespace fiberscope::viewer {

struct TimelineCaches {
    // The mark instants of each thread lane (marksOfLanes): drawn one by one.
    std::uint64_t marks_for = 0; // Timeline::serial
    std::size_t marks_lanes = 0, marks_flows = 0;
    std::vector<std::vector<std::uint32_t>> marks;
    // The CPU strips' samples (cpuSamplesOf).
    std::uint64_t samples_for = 0; // Trace::serial
    std::size_t samples_events = 0;
    CpuSamples samples;
    // The counter tracks' series (countersOf).
    std::uint64_t counters_for = 0; // Timeline::serial
    std::size_t counters_items = 0, counters_fibers = 0, counters_threads = 0;
    std::int64_t counters_end = 0;
    Counters counters;
    // The flows in view, one index per run shown (this one, the compared one).
    FlowIndex flow_index, compare_flow_index;
    // The fibers alive in the view, and the fiber list's scroll (pixels).
    FibersInViewIndex fibers_index;
    std::vector<std::uint32_t> fiber_rows; // tl.fibers indices of the rows shown, from the first
    float fiber_scroll = 0;
    // A drag under way: selecting a range (from `select_anchor`), or panning.
    bool selecting = false, panning = false, dragged = false;
    double select_anchor = 0;
    // Scratch, refilled every frame.
    std::vector<Block> blocks;
    std::vector<std::uint32_t> flows;
    std::vector<CounterRange> ranges;
    std::vector<analysis::QueueStay> queue_stays; // the queue strips' stays in view
    std::vector<std::int32_t> queue_rows;        // a strip's stays' rows (queue_rows.hpp)
    std::vector<BundleChoice> bundle_choices;    // the faint arrows drawn (flow_select.hpp)
};

} // namespace fiberscope::viewer
