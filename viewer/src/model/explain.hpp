// Explanations: what the runtime did at a record, a lane's interval or a
// zone, and why, in one plain sentence naming the runtime function.
//
// Design: an explanation reads the record and its neighbourhood: the
// record's own fields, the thread's previous or next record (the submit
// before an io-wait switch, the unpark after a park), and the model (the
// fiber lane says what a fiber was doing before it became ready; the thread
// lane how long a park lasted). Each kind of record maps to the runtime
// function that emits it, so the sentence can name it: schedule(),
// findReadyFiber(), yield(), idle(), completionsToReady(), execute(),
// spawnFiber(), Mutex::unlockSlow(), ... The words for the backend and the
// policy come from the trace (trace::backendWords, ranScalingPolicy).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "model/hit.hpp"

namespace fiberscope::viewer {

struct Explanation {
    std::string text;               // one plain sentence (or two)
    std::string function;           // the runtime function that did it, e.g. "findReadyFiber()"
    std::string file;               // where it lives, e.g. "runtime/src/scheduler/schedule.cpp"
    std::uint32_t event = kNoEvent; // the record explained (intervals: the one that began it)
};

// What the record at trace.events[event] means.
Explanation explain(const Timeline& timeline, const trace::Trace& trace, std::uint32_t event);
// What a thread lane's interval (Running / Idle / Parked) was.
Explanation explainThreadInterval(const Timeline& timeline, const trace::Trace& trace, std::size_t lane, std::size_t interval);
// What a fiber lane's interval (Ready / Running / Waiting / Finished) was.
Explanation explainFiberInterval(const Timeline& timeline, const trace::Trace& trace, std::size_t lane, std::size_t interval);
// What a zone was (`fiber`: the fiber it was opened on; 0 for an idle loop's zone).
Explanation explainZone(const Timeline& timeline, const trace::Trace& trace, const Zone& zone, std::uint64_t fiber);
// Dispatches on the hit (`fiber_lane`: the hit came from hitFiberLane).
Explanation explain(const Timeline& timeline, const trace::Trace& trace, const Hit& hit, bool fiber_lane);

} // namespace fiberscope::viewer
