// libFuzzer target for the trace reader: any bytes must give a trace or a
// ReadError, never a crash, a hang or an out-of-bounds read (run with ASan).
#include <cstddef>
#include <cstdint>

#include <fiberscope/trace_reader.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    fiberscope::trace::Trace trace;
    fiberscope::trace::ReadError error;
    for (bool strict : {false, true}) {
        if (fiberscope::trace::parseTrace({data, size}, trace, error, {.strict = strict})) {
            // Touch what a viewer touches.
            for (const auto& event : trace.events) (void)trace.string(event.arg[0]);
        } else if (error.message.empty() || error.offset > size) {
            __builtin_trap();
        }
    }
    return 0;
}
