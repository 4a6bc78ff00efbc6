// The scaling policy's idle set (Loop::idle_set): bit `index % 64` of word
// `index / 64` is set while worker `index` has published itself parked.
// Only that worker sets or clears its bit (search.cpp); schedule() and
// scheduleSpawned() read the set as a hint (schedule.cpp).
#pragma once

#include <cstdint>

namespace fiberscope::detail {

inline std::uint64_t idleBit(unsigned index) { return std::uint64_t{1} << (index % 64); }

} // namespace fiberscope::detail
