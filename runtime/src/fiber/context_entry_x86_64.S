// Entry trampolines for new contexts (x86_64). A new context's saved rsp is
// 16-byte aligned; `call` pushes the return slot, so the callee starts with
// the ABI's rsp % 16 == 8. The message arrives in rsi (see context_switch_x86_64.hpp).
    .text
    .globl fiberscope_fiber_entry
    .type fiberscope_fiber_entry, @function
fiberscope_fiber_entry:
    .cfi_startproc
    .cfi_undefined rip
    xorl %ebp, %ebp
    movq %rsi, %rdi
    call fiberscope_fiber_main
    ud2
    .cfi_endproc
    .size fiberscope_fiber_entry, .-fiberscope_fiber_entry

    .globl fiberscope_main_idle_entry
    .type fiberscope_main_idle_entry, @function
fiberscope_main_idle_entry:
    .cfi_startproc
    .cfi_undefined rip
    xorl %ebp, %ebp
    movq %rsi, %rdi
    call fiberscope_main_idle
    ud2
    .cfi_endproc
    .size fiberscope_main_idle_entry, .-fiberscope_main_idle_entry
    .section .note.GNU-stack,"",@progbits
