// Tells the sanitizers about fibers, so they follow them across context
// switches. AddressSanitizer: which stack we switch to (fake stacks,
// stack-use-after-return, stack bounds in reports). ThreadSanitizer: each
// context is a TSan "fiber", and the switch says which one runs next (so its
// shadow stack and happens-before clock follow the fiber across threads).
// Everything compiles to nothing without the sanitizer it serves.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define FIBERSCOPE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FIBERSCOPE_ASAN 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define FIBERSCOPE_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FIBERSCOPE_TSAN 1
#endif
#endif

#if FIBERSCOPE_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if FIBERSCOPE_TSAN
#include <sanitizer/tsan_interface.h>
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

// TSan: the context running on this OS thread right now (a thread's own).
inline void* tsanCurrentFiber() {
#if FIBERSCOPE_TSAN
    return __tsan_get_current_fiber();
#else
    return nullptr;
#endif
}

// TSan: a new context (a fiber's, or the main thread's idle loop's).
inline void* tsanCreateFiber() {
#if FIBERSCOPE_TSAN
    return __tsan_create_fiber(0);
#else
    return nullptr;
#endif
}

// TSan: forget a context that will never run again (never the current one).
inline void tsanDestroyFiber(void* fiber) {
#if FIBERSCOPE_TSAN
    if (fiber) __tsan_destroy_fiber(fiber);
#else
    (void)fiber;
#endif
}

// TSan: immediately before the switch to the context `fiber`. The switch
// orders what ran before it on this thread before what runs after it.
inline void tsanSwitchTo(void* fiber) {
#if FIBERSCOPE_TSAN
    __tsan_switch_to_fiber(fiber, 0);
#else
    (void)fiber;
#endif
}

} // namespace fiberscope::detail
