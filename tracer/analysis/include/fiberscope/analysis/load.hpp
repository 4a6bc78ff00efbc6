// Reading a trace file and building its model in one step, the build
// running beside the reader rather than after it.
//
// Why: on a large trace the model's build costs about as much as the read
// (10M records: ~2.5 s each on the benchmark's machine), and the read ends
// with a merge of the threads' records into one time order that keeps one
// core busy while the other waits. The build needs the records only in that
// order, one after another, so it merges the same per-thread streams itself
// (trace::mergeByTime: the one definition of the order) on a second thread
// while the reader merges them into Trace::events (trace::MergeObserver).
// The records then carry the indices they will have in Trace::events, so the
// model's causes point at the right records, and the model equals
// buildTimeline(trace) (a test checks it on every lesson's trace and on
// synthetic ones). Where the streams cannot be read so (no second thread, or
// a trace whose meaning depends on the merged order: the builder starts
// over), the build runs after the read, as buildTimeline. The read runs on
// a thread of its own, the build on the caller's (load.cpp says why).
#pragma once

#include <string>

#include "fiberscope/analysis/timeline.hpp"
#include "fiberscope/trace_reader.hpp"

namespace fiberscope::analysis {

// Reads `path` into `trace` (as trace::readTrace, with `options`; its
// observer must be unset) and builds `model` from it. False, with `error`
// set, if the read fails (`model` is then unchanged). Throws what
// buildTimeline throws (std::bad_alloc).
bool readTraceAndModel(const std::string& path, trace::Trace& trace, Timeline& model, trace::ReadError& error,
                       trace::ReadOptions options = {});

} // namespace fiberscope::analysis
