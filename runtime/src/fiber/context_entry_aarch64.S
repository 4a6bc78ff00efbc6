// Entry trampolines for new contexts (AArch64). The message arrives in x1
// (see context_switch_aarch64.hpp); sp is 16-byte aligned already.
    .text
    .globl fiberscope_fiber_entry
    .type fiberscope_fiber_entry, %function
fiberscope_fiber_entry:
    .cfi_startproc
    .cfi_undefined x30
    mov x29, #0
    mov x30, #0
    mov x0, x1
    bl fiberscope_fiber_main
    brk #0
    .cfi_endproc
    .size fiberscope_fiber_entry, .-fiberscope_fiber_entry

    .globl fiberscope_main_idle_entry
    .type fiberscope_main_idle_entry, %function
fiberscope_main_idle_entry:
    .cfi_startproc
    .cfi_undefined x30
    mov x29, #0
    mov x30, #0
    mov x0, x1
    bl fiberscope_main_idle
    brk #0
    .cfi_endproc
    .size fiberscope_main_idle_entry, .-fiberscope_main_idle_entry
    .section .note.GNU-stack,"",%progbits
