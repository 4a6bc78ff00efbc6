// heap_trim.hpp says why.
#include "platform/heap_trim.hpp"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace fiberscope::viewer {

void trimHeapAfterBuild(std::size_t built_bytes) noexcept {
#ifdef __GLIBC__
    if (built_bytes >= kTrimAfterBytes) malloc_trim(0);
#else
    (void)built_bytes;
#endif
}

} // namespace fiberscope::viewer
