// The validator's verdict on a trace, as the viewer shows it: can the
// picture be trusted? A trace that contradicts itself (a fiber run while it
// was queued on another thread, a wake-up received that nobody sent: the
// rules of tracer/analysis/validate.hpp) draws a picture that is wrong
// somewhere, and a learner must know it, and where.
//
// The verdict is the one `fiberscope verify` gives (trace::verifyTrace: the
// validator, and on a checking recording the model held to the runtime's
// truth records), reduced to what the banner needs: how many
// contradictions, the first in full, and its line
// (trace::verificationWarning, the line `stats` and `export` print). It is
// computed where a trace is loaded, beside its model (a loader, follower or
// lesson-run thread): one pass over the records, never on a frame's thread.
#pragma once

#include <cstddef>
#include <string>

#include "fiberscope/analysis/timeline.hpp"
#include "fiberscope/analysis/validate.hpp"
#include "fiberscope/trace_reader.hpp"

namespace fiberscope::viewer {

struct Verdict {
    // False: not judged (a live trace still recording, whose newest records
    // may lack causes that sit unwritten in other threads' buffers).
    bool checked = false;
    std::size_t violations = 0; // all of them (0: consistent)
    analysis::Violation first;  // the first, in trace order (when violations > 0)
    std::string line;           // the first and the count in one line, escaped for display (empty: consistent)
};

// Judges `trace`, whose model is `timeline`.
Verdict judgeTrace(const trace::Trace& trace, const analysis::Timeline& timeline);

} // namespace fiberscope::viewer
