// Tells AddressSanitizer which stack we are switching to, so it follows
// fibers across context switches (fake stacks, stack-use-after-return,
// stack bounds in reports). Compiles to nothing without ASan.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define FIBERSCOPE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIBERSCOPE_ASAN 1
#endif
#endif

#if FIBERSCOPE_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace fiberscope::detail {

// Before switching: `fake_stack_save` is nullptr when the current context
// will never run again (a finished fiber), so ASan can free its fake stack.
inline void sanitizerStartSwitch(void** fake_stack_save, const void* bottom, std::size_t size) {
#if FIBERSCOPE_ASAN
    __sanitizer_start_switch_fiber(fake_stack_save, bottom, size);
#else
    (void)fake_stack_save, (void)bottom, (void)size;
#endif
}

// Right after a switch lands, on the new stack.
inline void sanitizerFinishSwitch(void* fake_stack_save) {
#if FIBERSCOPE_ASAN
    __sanitizer_finish_switch_fiber(fake_stack_save, nullptr, nullptr);
#else
    (void)fake_stack_save;
#endif
}

// A recycled stack may still carry poison from the frames of its last fiber.
inline void sanitizerUnpoison(void* address, std::size_t size) {
#if FIBERSCOPE_ASAN
    __asan_unpoison_memory_region(address, size);
#else
    (void)address, (void)size;
#endif
}

} // namespace fiberscope::detail
