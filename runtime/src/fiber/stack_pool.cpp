// Fiber stack slots: slabs and guard pages (stack_pool.hpp says why).
#include "fiber/stack_pool.hpp"
#include "support/sanitizer.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>

#include "loop.hpp"

namespace fiberscope::detail {

static std::size_t pageSize() {
    static const std::size_t size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return size;
}

static std::size_t roundUp(std::size_t value, std::size_t to) { return (value + to - 1) / to * to; }

// The header sits at the top of the slot, 64-byte aligned.
static constexpr std::size_t kHeaderSpace = (sizeof(Fiber) + 63) / 64 * 64;

StackPool::StackPool(std::size_t stack_size, bool guard_pages)
    : guard_(guard_pages ? Guard::unknown : Guard::none) {
    stack_size_ = roundUp(stack_size, pageSize());
    slot_size_ = pageSize() + stack_size_ + roundUp(kHeaderSpace, pageSize());
    // About 16 MiB of address space per slab, at least 4 slots.
    slots_per_slab_ = (16u << 20) / slot_size_;
    if (slots_per_slab_ < 4) slots_per_slab_ = 4;
    if (slots_per_slab_ > 256) slots_per_slab_ = 256;
}

StackPool::~StackPool() {
    for (const Slab& slab : slabs_) {
        // A stack keeps the redzones of the frames it left suspended (a
        // finished fiber never returns through them). Clear them with the
        // mapping, or memory mmapped here later (a ring, another loop's
        // stacks) reads as poisoned to AddressSanitizer.
        sanitizerUnpoison(slab.base, slab.size);
        munmap(slab.base, slab.size);
    }
}

// Linux 6.13's lightweight guard regions; Debian 12's headers predate them.
#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

bool StackPool::guard(char* slot) {
    switch (guard_) {
    case Guard::none:
        return true;
    case Guard::marker:
    case Guard::unknown:
        if (madvise(slot, pageSize(), MADV_GUARD_INSTALL) == 0) {
            guard_ = Guard::marker;
            return true;
        }
        // ENOMEM: no memory for the page tables, a real failure. Anything
        // else (EINVAL from a kernel without guard markers or for a mapping
        // they do not apply to, such as an mlock'ed one; EPERM from a
        // seccomp filter) leaves the older way.
        if (errno == ENOMEM) return false;
        if (guard_ == Guard::unknown) guard_ = Guard::mapping;
        return mprotect(slot, pageSize(), PROT_NONE) == 0;
    case Guard::mapping:
        return mprotect(slot, pageSize(), PROT_NONE) == 0;
    }
    return false;
}

// Lines of /proc/self/maps (one per mapping), or -1.
static long countMappings() {
    std::FILE* maps = std::fopen("/proc/self/maps", "re");
    if (!maps) return -1;
    long lines = 0;
    for (int c; (c = std::fgetc(maps)) != EOF;)
        if (c == '\n') ++lines;
    std::fclose(maps);
    return lines;
}

// The first number in a /proc file, or -1.
static long long readNumber(const char* path) {
    std::FILE* file = std::fopen(path, "re");
    if (!file) return -1;
    long long value = -1;
    if (std::fscanf(file, "%lld", &value) != 1) value = -1;
    std::fclose(file);
    return value;
}

void StackPool::reportFailure(const char* call, int err) {
    if (reported_) return;
    reported_ = true;
    char why[512];
    const long maps = countMappings();
    const long long max_maps = readNumber("/proc/sys/vm/max_map_count");
    rlimit address_space{};
    const bool as_limited = getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY;
    const long long vm_pages = readNumber("/proc/self/statm"); // total program size, in pages
    const std::size_t slab = slot_size_ * slots_per_slab_;
    if (err == ENOMEM && maps >= 0 && max_maps > 0 && maps + 8 >= max_maps) {
        std::snprintf(why, sizeof why,
                      "the process has %ld memory mappings and the kernel allows %lld (sysctl vm.max_map_count); "
                      "raise it (sysctl -w vm.max_map_count=%lld)%s",
                      maps, max_maps, max_maps * 4,
                      guard_ == Guard::mapping
                          ? ". Without guard markers (Linux 6.13+) each guard page is two mappings, so a "
                            "smaller stack_size does not help; EventLoopOptions::guard_pages = false removes "
                            "that cost and the overflow check with it"
                          : "");
    } else if (err == ENOMEM && as_limited && vm_pages >= 0 &&
               static_cast<unsigned long long>(vm_pages) * pageSize() + slab > address_space.rlim_cur) {
        std::snprintf(why, sizeof why,
                      "the address-space limit (ulimit -v, RLIMIT_AS) of %llu MiB is reached; each fiber reserves "
                      "%zu KiB of it (stack_size plus a guard page and a header page), %zu KiB at a time; untouched "
                      "pages cost no memory",
                      static_cast<unsigned long long>(address_space.rlim_cur >> 20), slot_size_ / 1024, slab / 1024);
    } else {
        std::snprintf(why, sizeof why, "%s failed (%s)", call, std::strerror(err));
    }
    std::fprintf(stderr,
                 "fiberscope: cannot allocate fiber stack #%zu: %s; concurrent() returns OutOfMemory and async() "
                 "runs its function inline (said once per loop)\n",
                 carved_ + 1, why);
}

Fiber* StackPool::carve() {
    std::lock_guard lock(mutex_);
    if (slabs_.empty() || next_slot_ == slots_per_slab_) {
        const std::size_t size = slot_size_ * slots_per_slab_;
        // MAP_NORESERVE: a stack costs memory only for the pages it touches.
        void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == MAP_FAILED) {
            reportFailure("mmap", errno);
            return nullptr;
        }
        try {
            slabs_.push_back({static_cast<char*>(base), size});
        } catch (const std::bad_alloc&) {
            munmap(base, size);
            reportFailure("allocating the slab table", ENOMEM);
            return nullptr;
        }
        next_slot_ = 0;
    }
    char* slot = slabs_.back().base + slot_size_ * next_slot_;
    // A guard the kernel refuses fails the carve: a stack is never handed
    // out with less protection than the options promise. The slot stays
    // for the next try.
    if (!guard(slot)) {
        reportFailure(guard_ == Guard::mapping ? "mprotect" : "madvise", errno);
        return nullptr;
    }
    ++next_slot_;
    ++carved_;
    auto* fiber = ::new (slot + slot_size_ - kHeaderSpace) Fiber();
    fiber->slot = slot;
    fiber->guarded = guard_ != Guard::none;
    return fiber;
}

char* stackBottom(const Fiber* fiber) { return fiber->slot + pageSize(); }

std::size_t stackSize(const Fiber* fiber) {
    return static_cast<std::size_t>(reinterpret_cast<const char*>(fiber) - stackBottom(fiber));
}

} // namespace fiberscope::detail
