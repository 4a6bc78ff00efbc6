// x86_64 System V context switch (included by context.hpp).
//
// rsi carries the message both ways: it holds the outgoing ContextPair on the
// way in and, once resumed, the ContextPair sent by whoever switched back to
// us. The two contexts come in rax and rcx, not loaded from the message here:
// the caller has just stored the pair (often as one 16-byte store), and
// loading it back 8 bytes at a time stalled on store forwarding, measured
// at ~2.5 ns of a ~10 ns yield (issue 15). rsp and rbp are saved by hand
// (the compiler cannot be told they are clobbered); the resume address is
// the local label 1. All other general-purpose and vector registers are
// clobbered. The red zone is safe: nothing is pushed.
#pragma once

namespace fiberscope::detail {

__attribute__((always_inline)) inline const ContextPair* contextSwitch(const ContextPair* message) {
    Context* prev = message->prev;
    Context* ready = message->ready;
    asm volatile(
        "leaq 1f(%%rip), %%rdx\n\t"
        "movq %%rsp, 0(%%rax)\n\t"
        "movq %%rbp, 8(%%rax)\n\t"
        "movq %%rdx, 16(%%rax)\n\t"
        "movq 0(%%rcx), %%rsp\n\t"
        "movq 8(%%rcx), %%rbp\n\t"
        "jmpq *16(%%rcx)\n"
        "1:\n\t"
        : "+S"(message), "+a"(prev), "+c"(ready)
        :
        : "rbx", "rdx", "rdi", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
          "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",
          "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "st", "st(1)", "st(2)", "st(3)", "st(4)",
          "st(5)", "st(6)", "st(7)", "memory", "cc");
    return message;
}

} // namespace fiberscope::detail
