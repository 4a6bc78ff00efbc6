// Fiber stacks: slots carved from large mmap'ed slabs, each with a guard
// page below its stack (unless EventLoopOptions::guard_pages is false),
// recycled through per-thread free lists (free_list.hpp).
//
// The number of memory mappings is what bounds live fibers, long before
// memory does: the kernel allows vm.max_map_count per process (65530 by
// default), and two neighbouring regions of different protection are two
// mappings. So a guard page made with mprotect(PROT_NONE) between two
// read-write stacks costs two mappings per stack, and caps a process at
// about 32k fibers whatever their size. Three ways to place a guard, best
// first, chosen once per pool:
//
// * marker: madvise(MADV_GUARD_INSTALL) (Linux 6.13+) puts a guard marker
//   in the page table instead. The slab stays one mapping (and merges with
//   its neighbours), so live fibers are bounded by memory alone.
// * mapping: mprotect(PROT_NONE), on older kernels: two mappings a stack.
//   When the kernel refuses one more, the stack is not handed out unguarded:
//   carve() fails (OutOfMemory) and says once that vm.max_map_count is the
//   limit.
// * none, only when guard_pages is false: no guard; one mapping per slab.
//
// The slot is [guard page][stack ... ][header page]; the fiber header sits
// at the top of the last page, the task right below it, and the stack grows
// down from there, towards the guard.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include "fiber/fiber.hpp"

namespace fiberscope::detail {

struct Thread;

class StackPool {
public:
    StackPool(std::size_t stack_size, bool guard_pages);
    ~StackPool();
    StackPool(const StackPool&) = delete;
    StackPool& operator=(const StackPool&) = delete;

    // A fresh slot from the shared slabs (mmaps a new slab when needed);
    // nullptr when memory is exhausted.
    Fiber* carve();

    std::size_t stackSize() const noexcept { return stack_size_; }
    std::size_t slotSize() const noexcept { return slot_size_; }

    // How the guards are made; `unknown` until the first slot is carved.
    enum class Guard { unknown, marker, mapping, none };

private:
    // Makes the guard page of a fresh slot; false (errno set) if the kernel
    // refused it.
    bool guard(char* slot);
    // Says once, on stderr, which limit a failed carve() ran into.
    void reportFailure(const char* call, int err);

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
    std::size_t carved_ = 0;    // slots handed out so far (all slabs)
    Guard guard_;
    bool reported_ = false;     // reportFailure() has spoken
};

// The usable stack range of a fiber slot.
char* stackBottom(const Fiber* fiber);
std::size_t stackSize(const Fiber* fiber);

} // namespace fiberscope::detail
