// A hint to the CPU inside a spin-wait loop.
#pragma once

namespace fiberscope::detail {
inline void cpuRelax() noexcept {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield" ::: "memory");
#endif
}
} // namespace fiberscope::detail
