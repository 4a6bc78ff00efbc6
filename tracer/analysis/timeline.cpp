// Building the model (timeline.hpp): buildTimeline at once, TimelineBuilder
// as records arrive; and traceEndTime, the end of the trace the model covers.
// Both drive the Builder: its design, and where each of its parts is, in
// timeline_builder.hpp. FiberLane's members are in fiber_lane.cpp; reading
// the model, in timeline_queries.cpp.
#include "fiberscope/analysis/timeline.hpp"

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "timeline_builder.hpp"

namespace fiberscope::analysis {

using detail::Builder;

// --- TimelineBuilder ------------------------------------------------------------

struct TimelineBuilder::Impl {
    Builder builder;
    std::size_t restarts = 0;
};

TimelineBuilder::TimelineBuilder() : impl_(std::make_unique<Impl>()) {}
TimelineBuilder::~TimelineBuilder() = default;
TimelineBuilder::TimelineBuilder(TimelineBuilder&&) noexcept = default;
TimelineBuilder& TimelineBuilder::operator=(TimelineBuilder&&) noexcept = default;

void TimelineBuilder::append(const trace::Trace& trace) {
    if (impl_->builder.append(trace)) return;
    // What arrived changes what records already read mean: read them all again.
    ++impl_->restarts;
    impl_->builder = Builder();
    const bool whole = impl_->builder.append(trace); // a first append never starts over
    (void)whole;
}

bool TimelineBuilder::appendStreams(const trace::Trace& trace, const std::vector<std::vector<trace::Event>>& per_thread) {
    if (impl_->builder.appendStreams(trace, per_thread)) return true;
    impl_->builder = Builder(); // (what it read of them, if anything, is dropped: append reads trace.events anew)
    return false;
}

void TimelineBuilder::reset() { impl_->builder = Builder(); }
std::size_t TimelineBuilder::appended() const noexcept { return impl_->builder.appended(); }
std::size_t TimelineBuilder::restarts() const noexcept { return impl_->restarts; }

Timeline TimelineBuilder::snapshot(const trace::Trace& trace) const {
    Timeline out = impl_->builder.model();
    impl_->builder.close(out, trace);
    return out;
}

Timeline TimelineBuilder::finish(const trace::Trace& trace) && {
    Builder& builder = impl_->builder;
    builder.close(builder.model(), trace, &builder); // (frees the builder's scratch)
    Timeline out = std::move(builder.model());
    impl_.reset();
    return out;
}

std::int64_t traceEndTime(const trace::Trace& trace) noexcept {
    if (trace.events.empty()) return std::max<std::int64_t>(0, trace.header.duration_ns);
    return std::max(trace.events.back().time, trace.header.duration_ns);
}

Timeline buildTimeline(const trace::Trace& trace) {
    Timeline timeline;
    {
        TimelineBuilder builder;
        builder.append(trace);
        timeline = std::move(builder).finish(trace);
    }
#ifdef __GLIBC__
    // The build's scratch (per-fiber state, maps, pools: tens of bytes per
    // event) is freed by now, but interleaved with the model's small blocks,
    // so glibc keeps most of its pages resident; the model lives as long as
    // the trace is open, so hand them back (issue 13: resident memory).
    malloc_trim(0);
#endif
    return timeline;
}

} // namespace fiberscope::analysis
