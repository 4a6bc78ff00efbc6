// What a fiber's stack overflow prints instead of a bare "Segmentation
// fault": the guard page below each stack (stack_pool.hpp) turns an overflow
// into SIGSEGV, and the handler names the fiber and its stack size.
#pragma once

#include <cstddef>

namespace fiberscope::detail {

// SIGSEGV on a guard page prints which fiber overflowed its stack.
void installOverflowHandler();
// Gives the calling thread an alternate signal stack for that handler.
class AltSignalStack {
public:
    AltSignalStack();
    ~AltSignalStack();
    AltSignalStack(const AltSignalStack&) = delete;
    AltSignalStack& operator=(const AltSignalStack&) = delete;

private:
    void* memory_ = nullptr;
    std::size_t size_ = 0;
};

} // namespace fiberscope::detail
