// Handing freed heap pages back to the system after a large build (issue 13:
// resident memory while viewing).
//
// Why: the viewer builds some structures lazily, on a model's first frame
// (the counter tracks, the flow index, the event table's rows), and frees
// their scratch (heaps, sort buffers, vectors that grew by doubling) at
// once. glibc keeps those pages resident: they sit between the model's
// long-lived blocks, so the heap's top cannot shrink past them. On the
// 10M-event benchmark trace that was ~37 MiB of the viewer's ~580 MiB
// resident. malloc_trim returns the free pages inside the heap too
// (MADV_DONTNEED). drawApp calls it once per model, after its first frame
// (not at every snapshot of a live trace);
// buildTimeline does the same for the model's own build
// (tracer/analysis/timeline.cpp).
#pragma once

#include <cstddef>

namespace fiberscope::viewer {

// A build under this many bytes leaves too little scratch to be worth a
// trim, which walks the heap's free chunks.
inline constexpr std::size_t kTrimAfterBytes = std::size_t{16} << 20;

// After building a structure of `built_bytes` whose scratch was freed: on
// glibc, and when built_bytes >= kTrimAfterBytes, returns the heap's free
// pages to the system; otherwise nothing.
void trimHeapAfterBuild(std::size_t built_bytes) noexcept;

} // namespace fiberscope::viewer
