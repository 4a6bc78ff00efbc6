// What the trace tools share beyond the model: the trace's end. (The model
// itself, threads, fibers, flows and latencies, is the analysis library's,
// fiberscope/analysis; the words the tools print with are the tracer's
// vocabulary, tracer/src/vocabulary.cpp.)
#include "trace_tools.hpp"

namespace fiberscope::trace {

std::int64_t traceEnd(const Trace& trace) { return analysis::traceEndTime(trace); }

} // namespace fiberscope::trace
