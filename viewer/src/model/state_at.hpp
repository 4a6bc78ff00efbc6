// The trace's model moved to the analysis library, which the tools share
// (tracer/analysis/include/fiberscope/analysis/state_at.hpp); the viewer names it
// as its own.
#pragma once

#include "fiberscope/analysis/state_at.hpp"

namespace fiberscope::viewer {
using namespace fiberscope::analysis;
} // namespace fiberscope::viewer
