// Words for the model's numbers: errno values, times, and how to name a
// fiber or a thread in a sentence, beside the tracer's vocabulary (opcodes,
// durations). Shared by the explanations (hit.hpp) and the UI's tooltips.
#pragma once

#include <cstdint>
#include <string>

#include "fiberscope/trace_reader.hpp"
#include "fiberscope/trace_vocabulary.hpp"
#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::viewer {
using namespace fiberscope::analysis; // the viewer reads the analysis model (tracer/analysis) as its own
} // namespace fiberscope::viewer

namespace fiberscope::viewer {

// Opcodes (trace::opcodeLabel: "IORING_OP_READ"; opcodeNoun: "read") and
// durations ("12.30 us") are the tracer's vocabulary, the same words the
// tools print.
using trace::formatDuration;
using trace::opcodeNoun;
using trace::kOpLinkTimeout;
using trace::kOpPollAdd;
using trace::kOpTimeout;
// "ECANCELED" (or "errno <n>").
std::string errnoName(int error);
// A time since the recording started: "12.345678 ms".
std::string formatTime(std::int64_t ns);

// "fiber 'name' (#12)", "fiber #12", "the main fiber (#1)", "the idle loop" (0).
std::string fiberLabel(const Timeline& timeline, std::uint64_t fiber);
// "worker 2", "blocking pool thread 0", or "thread 5" when the worker is
// unknown: trace::threadDisplayName, the one name of a thread in every panel.
std::string threadLabel(const Timeline& timeline, std::uint32_t thread);
// "worker 3", "blocking pool thread 0" (trace::threadDisplayName).
std::string workerLabel(std::int64_t worker);
// The words for what the trace's backend (its header's) does: the park
// call, the wake-up, where operations wait (trace::backendWords).
const trace::BackendWords& backendWords(const trace::Trace& trace) noexcept;
// The worker index of a trace thread (-1 if unknown).
std::int64_t workerOf(const Timeline& timeline, std::uint32_t thread) noexcept;
// "0x7f12...": an object identity (mutex, condition, group, queue).
std::string objectLabel(std::uint64_t object);
// The name the program gave the object by `time` (setObjectName: an
// object-name record), else its address.
std::string objectLabel(const Timeline& timeline, std::uint64_t object, std::int64_t time);

} // namespace fiberscope::viewer
