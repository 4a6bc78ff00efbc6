// Words for numbers (see describe.hpp). Opcodes and durations are the
// tracer's vocabulary (trace_vocabulary.hpp), shared with the tools.
#include "model/describe.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>

namespace fiberscope::viewer {

std::string errnoName(int error) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
    if (const char* name = strerrorname_np(error)) return name;
#endif
    return "errno " + std::to_string(error);
}

std::string formatTime(std::int64_t ns) {
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.6f ms", static_cast<double>(ns) / 1e6);
    return buffer;
}

std::string fiberLabel(const Timeline& timeline, std::uint64_t fiber) {
    if (fiber == 0) return "the idle loop";
    const FiberLane* lane = findFiber(timeline, fiber);
    const std::string id = "#" + std::to_string(fiber);
    if (lane && lane->named()) return "fiber '" + lane->name() + "' (" + id + ")";
    if (fiber == 1) return "the main fiber (" + id + ")";
    return "fiber " + id;
}

std::int64_t workerOf(const Timeline& timeline, std::uint32_t thread) noexcept {
    const ThreadLane* lane = findThread(timeline, thread);
    return lane ? lane->worker : -1;
}

std::string threadLabel(const Timeline& timeline, std::uint32_t thread) {
    // One number per thread everywhere (issue 14): the worker index, as the
    // lanes, the stats and the text timeline name it; the trace's own thread
    // number only when the worker is unknown.
    return trace::threadDisplayName(workerOf(timeline, thread), thread);
}

std::string workerLabel(std::int64_t worker) { return worker >= 0 ? trace::threadDisplayName(worker, 0) : "an unknown worker"; }

const trace::BackendWords& backendWords(const trace::Trace& trace) noexcept { return trace::backendWords(trace.header.backend); }

std::string objectLabel(std::uint64_t object) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "0x%" PRIx64, object);
    return buffer;
}

std::string objectLabel(const Timeline& timeline, std::uint64_t object, std::int64_t time) {
    if (const std::string* name = analysis::objectNameAt(timeline, object, time)) return *name;
    return objectLabel(object);
}

} // namespace fiberscope::viewer
