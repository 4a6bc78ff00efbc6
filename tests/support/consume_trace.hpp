// Drives every consumer of a trace the way the tools and the viewer do:
// stats (through its own entry point, which builds the analysis model), the
// text timeline and the Chrome export (on one shared model), the model itself with its totals
// and queries (state at an instant, levels of detail), what the viewer
// builds on opening it (openInViewer: counter tracks, fibers in view, CPU
// samples, the object index behind the scheduler-state panel), the viewer's
// queries on it (hit tests, explanations, range statistics, filters) and the
// viewer's time arithmetic, without GL.
// The fuzzer and the hostile-corpus test both run this on every input, so a
// crafted file that reads cleanly must also be drawable.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <fiberscope/analysis/object_state.hpp>
#include <fiberscope/analysis/totals.hpp>
#include <fiberscope/trace_reader.hpp>

#include "model/counters.hpp"
#include "model/cpu_samples.hpp"
#include "model/fibers_in_view.hpp"
#include "model/filter.hpp"
#include "model/explain.hpp"
#include "fiberscope/analysis/lod.hpp"
#include "model/range_stats.hpp"
#include "fiberscope/analysis/state_at.hpp"
#include "fiberscope/analysis/timeline.hpp"
#include "trace_tools.hpp"
#include "model/time_view.hpp"

namespace fiberscope::testing {

// What `fiberscope view` and `screenshot` build beyond the tools' model, and
// the panel queries of a frame (ui/timeline_view.cpp, ui/state_view.cpp):
// the counter tracks, the fibers alive in the view, the CPU samples, the
// object index, and the scheduler's and the objects' state at a few
// instants. Returns a count of what it produced (so the work is not
// optimized away).
inline std::size_t openInViewer(const trace::Trace& trace, const viewer::Timeline& tl) {
    std::size_t produced = viewer::countersBytes(viewer::computeCounters(tl, viewer::drawnCounters(tl)));
    produced += viewer::buildCpuSamples(trace).by_thread.size();
    viewer::FibersInViewIndex fibers;
    std::vector<std::uint32_t> rows;
    produced += viewer::fibersInView(tl, fibers, static_cast<double>(tl.start_time), static_cast<double>(tl.end_time), 0, 64, rows);
    const analysis::ObjectIndex objects = analysis::buildObjectIndex(trace, tl);
    const std::int64_t t0 = tl.start_time, t1 = tl.end_time;
    for (std::int64_t t : {t0, t0 / 2 + t1 / 2, t0 + (t1 - t0) / 7, t1, INT64_MIN, INT64_MAX}) {
        produced += viewer::stateAt(tl, t).parked.size();
        const analysis::ObjectState state = analysis::objectStateAt(trace, objects, t);
        for (const auto& m : state.mutexes) produced += m.waiters.size();
        for (const auto& c : state.conditions) produced += c.waiters.size();
        for (const auto& q : state.queues) produced += q.producers.size() + q.consumers.size() + q.woken.size();
        produced += state.wakeups.size() + state.cancels.size() + state.timers.size();
    }
    return produced;
}

// Returns the number of bytes the text outputs produced (so the work is not
// optimized away, and a test can bound it).
inline std::size_t consumeTrace(const trace::Trace& trace) {
    std::size_t produced = 0;
    {
        // One tool through its own entry point (which builds the model): the
        // entry points differ only in that, so the others run on the shared
        // model below (a model per tool made each input cost five builds).
        std::ostringstream out;
        trace::writeStats(trace, out);
        produced += out.str().size();
    }
    const viewer::Timeline tl = viewer::buildTimeline(trace);
    {
        // The tools on the one model, and its totals.
        std::ostringstream out;
        (void)trace::computeStats(trace, tl);
        trace::writeTextTimeline(trace, tl, out);
        trace::writeTextTimeline(trace, tl, out, {.max_rows = 5000});
        std::string error;
        trace::writeChromeJson(trace, tl, out, error);
        produced += out.str().size();
        for (const auto& lane : tl.threads) produced += analysis::laneTotals(lane.lane).runs;
        for (const auto& lane : tl.fibers) produced += analysis::laneTotals(lane.lane).runs;
        produced += analysis::latenciesByFiber(tl).values.size();
    }
    produced += openInViewer(trace, tl);
    const std::int64_t t0 = tl.start_time, t1 = tl.end_time;
    const std::int64_t instants[] = {t0, t1, t0 / 2 + t1 / 2, t0 + (t1 - t0) / 7, INT64_MIN, INT64_MAX, -1, 0};
    for (std::int64_t t : instants) {
        const viewer::SchedulerState state = viewer::stateAt(tl, t);
        (void)state;
    }
    // The views a screenshot or a user's zoom would make: whole, tenth, tiny.
    std::vector<viewer::Block> blocks;
    for (double fraction : {1.0, 0.1, 1e-6}) {
        viewer::TimeView view;
        view.fit(static_cast<double>(t0), static_cast<double>(t1));
        view.zoomAt(view.start + view.span() / 2, fraction);
        const double npp = view.nsPerPixel(1600);
        const double step = viewer::rulerStep(npp, 90.0f);
        produced += viewer::formatTick(view.start, step).size();
        const auto v0 = static_cast<std::int64_t>(view.start), v1 = static_cast<std::int64_t>(view.end);
        for (std::size_t lane = 0; lane < tl.threads.size() && lane < 64; ++lane) {
            blocks.clear();
            viewer::visibleBlocks(tl.threads[lane].lane, v0, v1, npp, blocks);
            const viewer::Hit hit = viewer::hitThreadLane(tl, trace, lane, v0 / 2 + v1 / 2, npp);
            produced += viewer::explain(tl, trace, hit, false).text.size();
        }
        for (std::size_t lane = 0; lane < tl.fibers.size() && lane < 64; ++lane) {
            blocks.clear();
            viewer::visibleBlocks(tl.fibers[lane].lane, v0, v1, npp, blocks);
            const viewer::Hit hit = viewer::hitFiberLane(tl, lane, v0 / 2 + v1 / 2, npp, true);
            produced += viewer::explain(tl, trace, hit, true).text.size();
        }
        const viewer::RangeStats range = viewer::rangeStats(tl, trace, v0, v1);
        (void)range;
    }
    for (std::uint32_t i = 0; i < trace.events.size() && i < 256; ++i) produced += viewer::explain(tl, trace, i).text.size();
    viewer::EventFilter filter;
    produced += viewer::countEvents(tl, trace, filter);
    (void)viewer::nextMatching(tl, trace, filter, t0);
    (void)viewer::previousMatching(tl, trace, filter, t1);
    (void)viewer::findFibers(tl, "main");
    return produced;
}

} // namespace fiberscope::testing
