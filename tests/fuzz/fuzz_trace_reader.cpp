// libFuzzer target for everything that reads a trace: any bytes must give a
// trace or a ReadError, never a crash, a hang, undefined behaviour (UBSan is
// fatal here) or an out-of-bounds read (ASan); and a trace that reads must
// survive stats, the text timeline, the Chrome export and the viewer's model
// with its queries (consume_trace.hpp), as a crafted file would meet them.
#include <cstddef>
#include <cstdint>

#include "consume_trace.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fiberscope::trace::Trace trace;
    fiberscope::trace::ReadError error;
    for (bool strict : {true, false}) {
        if (fiberscope::trace::parseTrace({data, size}, trace, error, {.strict = strict})) {
            if (!strict) (void)fiberscope::testing::consumeTrace(trace);
        } else if (error.message.empty() || error.offset > size) {
            __builtin_trap();
        }
    }
    return 0;
}
