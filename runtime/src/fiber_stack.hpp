// Fiber stacks: slots carved from large mmap'ed slabs, each with a guard
// page, recycled through per-thread free lists.
//
// Slabs keep mmap calls rare and bound the number of memory mappings
// (vm.max_map_count): a slab is one mapping, and each guard page splits it
// once more. When the kernel refuses a guard page (too many mappings) the
// stack is used unguarded and a one-time warning is printed.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "fiber.hpp"

namespace fiberscope::detail {

struct Thread;

class StackPool {
public:
    explicit StackPool(std::size_t stack_size);
    ~StackPool();
    StackPool(const StackPool&) = delete;
    StackPool& operator=(const StackPool&) = delete;

    // A fresh slot from the shared slabs (mmaps a new slab when needed);
    // nullptr when memory is exhausted.
    Fiber* carve();

    std::size_t stackSize() const noexcept { return stack_size_; }
    std::size_t slotSize() const noexcept { return slot_size_; }

private:
    struct Slab {
        char* base;
        std::size_t size;
    };
    std::size_t stack_size_;
    std::size_t slot_size_;
    std::size_t slots_per_slab_;
    std::mutex mutex_;
    std::vector<Slab> slabs_;
    std::size_t next_slot_ = 0; // in slabs_.back()
};

// A fiber header ready for a new task: from this thread's free list, else
// stolen from another thread's, else carved. nullptr if out of memory.
Fiber* takeFiber(Loop& loop, Thread& thread);
// Returns a finished fiber's slot to this thread's free list.
void returnFiber(Thread& thread, Fiber* fiber);

// The usable stack range of a fiber slot.
char* stackBottom(const Fiber* fiber);
std::size_t stackSize(const Fiber* fiber);

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
