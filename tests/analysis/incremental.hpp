// The incremental model (analysis::TimelineBuilder) against the model built
// at once; test_agreement runs these on every lesson's trace as it records
// them, test_incremental on synthetic and hostile traces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <fiberscope/analysis/timeline.hpp>
#include <fiberscope/trace_reader.hpp>

namespace test {

// Every field of the two models is the same (Catch REQUIREs, naming the first difference).
void requireSameModel(const fiberscope::analysis::Timeline& appended, const fiberscope::analysis::Timeline& whole);

// `trace` appended in `rounds` ways, each cut at random records (the thread
// table growing with the threads seen): after every piece the builder's
// snapshot equals buildTimeline of the records so far, and its finished
// model equals buildTimeline(trace).
void checkAppendedInPieces(const fiberscope::trace::Trace& trace, std::uint64_t seed, int rounds = 3);

// The file written the way a recorder writes it, cut at random bytes (so
// its chunks arrive in pieces and in the order they were written), followed
// by a TraceFollower whose every poll is appended (after a reset when the
// poll reordered records): the model at the end equals buildTimeline of the
// finished file, and the builder read everything again at most once per
// thread plus once per reordering poll.
void checkFollowedInPieces(const std::vector<std::uint8_t>& file, std::uint64_t seed, int rounds = 2);

// The file's bytes read by analysis::readTraceAndModel (the model built
// beside the reader's merge): the trace equals trace::readTrace's and the
// model equals buildTimeline of it.
void checkLoadedBesideRead(const std::vector<std::uint8_t>& file);

} // namespace test
