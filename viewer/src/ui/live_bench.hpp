// The live view's latency, for `fiberscope benchmark` (live_bench.cpp).
#pragma once

#include <cstddef>
#include <string>

#include "platform/window.hpp"

namespace fiberscope::viewer {

struct LiveLatency {
    std::size_t samples = 0;
    double median_ms = 0, p99_ms = 0, max_ms = 0; // from a record being made to a frame showing it
};

// Records in this process for `seconds` while a live view follows the file
// and draws into `window`; false (with `error`) if too little was drawn.
bool measureLiveLatency(Window& window, double seconds, LiveLatency& out, std::string& error);

} // namespace fiberscope::viewer
