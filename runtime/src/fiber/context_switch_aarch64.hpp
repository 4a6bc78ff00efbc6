// AArch64 (AAPCS64) context switch (included by context.hpp).
//
// x1 carries the message both ways; the two contexts come in x0 and x2,
// not loaded from the message the caller has just stored (as on x86_64,
// where that reload stalled). sp and the frame pointer x29 are saved by
// hand; the resume address is local label 1. All other general-purpose
// registers (but x18, the platform register, which Linux leaves to user code
// and is clobbered too) and all vector registers are clobbered, so the
// compiler spills the callee-saved ones (x19-x28, d8-d15) that are live.
// prepareContext rounds sp down to 16 bytes, as AAPCS64 requires at all times.
//
// Run under qemu-user by scripts/test_aarch64.sh: the runtime suite, and
// tests/runtime/test_switch_abi.cpp, which fails when a callee-saved register
// is missing here or a fiber starts misaligned. qemu does not reorder memory
// as an aarch64 CPU does: the orderings are ThreadSanitizer's to check.
// No BTI landing pad at label 1 or in the entry trampolines (reached by
// `br`): context_entry_aarch64.S carries no BTI property note, so a program
// built with -mbranch-protection links as not BTI-enforced.
#pragma once

namespace fiberscope::detail {

__attribute__((always_inline)) inline const ContextPair* contextSwitch(const ContextPair* message) {
    // Loaded into plain locals first: a load between a register variable's
    // assignment and the asm may become a call (ThreadSanitizer's
    // __tsan_read8), which would overwrite x0 and x1.
    Context* const prev = message->prev;
    Context* const ready = message->ready;
    register const ContextPair* x1 asm("x1") = message;
    register Context* x0 asm("x0") = prev;
    register Context* x2 asm("x2") = ready;
    asm volatile(
        "ldr x3, [x2, #16]\n\t"  // x3 = ready resume address
        "mov x4, sp\n\t"
        "stp x4, x29, [x0]\n\t"
        "adr x5, 1f\n\t"
        "ldp x4, x29, [x2]\n\t"
        "str x5, [x0, #16]\n\t"
        "mov sp, x4\n\t"
        "br x3\n"
        "1:\n\t"
        : "+r"(x1), "+r"(x0), "+r"(x2)
        :
        : "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
          "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
          "x28", "x30", "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11",
          "v12", "v13", "v14", "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24",
          "v25", "v26", "v27", "v28", "v29", "v30", "v31", "memory", "cc");
    return x1;
}

} // namespace fiberscope::detail
