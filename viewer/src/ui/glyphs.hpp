// The timeline's shapes, for the legend to show exactly what the timeline
// draws (timeline_view.cpp): a record's glyph on a thread lane, and a flow
// kind's arrow (colour and stroke: solid, dashed for cancellation, dotted for
// an operation in flight).
#pragma once

#include <imgui.h>

#include "fiberscope/trace_events.hpp"
#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::viewer {
using namespace fiberscope::analysis; // the viewer reads the analysis model (tracer/analysis) as its own
} // namespace fiberscope::viewer

namespace fiberscope::viewer {

// The glyph of a record of `kind` centred at (x, y), in its colour.
void drawRecordGlyph(ImDrawList* dl, trace::EventKind kind, float x, float y);
// An arrow of `kind` from `from` to `to` (faded when the kind is switched off).
void drawFlowSample(ImDrawList* dl, FlowKind kind, ImVec2 from, ImVec2 to, bool enabled = true);

} // namespace fiberscope::viewer
