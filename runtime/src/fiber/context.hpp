// A suspended execution context and the switch between two of them.
//
// The switch saves only the stack pointer, frame pointer and resume address
// of the current context, then loads those of the next one. Every other
// register is declared clobbered to the compiler (see the per-architecture
// headers), so the compiler itself spills exactly the registers that are live
// across the switch: nothing is saved that does not need to be. This is the
// seeds' design, and the physical floor for a user-space switch.
//
// The switch carries one pointer across: the `SwitchMessage` the previous
// context sent. Its first two words are the contexts {prev, ready}; the rest
// is the pending task the receiving side performs (switch_message.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace fiberscope::detail {

struct Context {
    // Offsets 0, 8, 16 are read and written by the switch's assembly.
    std::uintptr_t sp = 0;
    std::uintptr_t fp = 0;
    std::uintptr_t pc = 0;
    // The stack this context runs on, for the sanitizers' fiber annotations.
    const void* stack_bottom = nullptr;
    std::size_t stack_size = 0;
    // ThreadSanitizer's handle for this context (sanitizer.hpp); unused
    // without TSan.
    void* tsan_fiber = nullptr;
};

struct ContextPair {
    Context* prev;
    Context* ready;
};

} // namespace fiberscope::detail

#if defined(__x86_64__)
#include "fiber/context_switch_x86_64.hpp"
#elif defined(__aarch64__)
#include "fiber/context_switch_aarch64.hpp"
#else
#error "Fiberscope's context switch supports x86_64 and aarch64 only"
#endif

namespace fiberscope::detail {

// The address new fibers start at: it moves the received message into the
// first argument register and calls `fiberMain(const ContextPair*)`.
extern "C" void fiberscope_fiber_entry();
// The same for the main thread's idle context: calls `mainIdle`.
extern "C" void fiberscope_main_idle_entry();

// Prepares `context` to start at `entry` on a stack whose highest usable
// address is `stack_top` (rounded down to 16 bytes).
inline void prepareContext(Context& context, void* stack_top, void (*entry)()) {
    auto top = reinterpret_cast<std::uintptr_t>(stack_top) & ~std::uintptr_t{15};
    context.sp = top;
    context.fp = 0;
    context.pc = reinterpret_cast<std::uintptr_t>(entry);
}

} // namespace fiberscope::detail
