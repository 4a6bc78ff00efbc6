// Fiber stack slots: slabs, guard pages, free lists, overflow reports.
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
#include "scheduler/worker.hpp"

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

Fiber* takeFiber(Loop& loop, Thread& thread) {
    // Own list: only we push and pop; others only take it all. Taking it all
    // ourselves for a moment (a thief then finds it empty) means no link is
    // ever read while a thief may be rewriting it: reading head's link
    // before a CAS would race with a thief that took the list meanwhile
    // (ThreadSanitizer caught that one).
    // acquire: see the links of the fibers on the list.
    if (Fiber* head = thread.free_queue.exchange(nullptr, std::memory_order_acquire)) {
        // release: the rest stays published to thieves.
        thread.free_queue.store(head->queue_next, std::memory_order_release);
        head->queue_next = nullptr;
        return head;
    }
    // Steal another thread's whole free list (the newer seed's free_queue).
    const unsigned active = loop.active.load(std::memory_order_acquire);
    for (unsigned i = 0; i < kMaxStealFreeSearch && i < active; ++i, ++thread.steal_free_search_index) {
        if (thread.steal_free_search_index >= active) thread.steal_free_search_index = 0;
        Thread& victim = loop.threads[thread.steal_free_search_index];
        if (&victim == &thread || !victim.free_queue.load(std::memory_order_relaxed)) continue;
        // acquire: see the stolen fibers' links.
        Fiber* stolen = victim.free_queue.exchange(nullptr, std::memory_order_acquire);
        if (!stolen) continue;
        // release: our list is consistent for the next thief.
        thread.free_queue.store(stolen->queue_next, std::memory_order_release);
        stolen->queue_next = nullptr;
        return stolen;
    }
    return loop.stacks.carve();
}

void returnFiber(Thread& thread, Fiber* fiber) {
    // Off its stack for good: TSan's handle goes (spawnFiber makes a new one).
    tsanDestroyFiber(fiber->context.tsan_fiber);
    fiber->context.tsan_fiber = nullptr;
    Fiber* head = thread.free_queue.load(std::memory_order_relaxed);
    do fiber->queue_next = head;
    // release: thieves that take the list see our link.
    while (!thread.free_queue.compare_exchange_weak(head, fiber, std::memory_order_release, std::memory_order_relaxed));
}

// --- stack overflow reports -------------------------------------------------

static struct sigaction g_previous_segv;

static void writeAll(const char* text) {
    std::size_t length = std::strlen(text);
    while (length) {
        ssize_t n = write(STDERR_FILENO, text, length);
        if (n <= 0) return;
        text += n;
        length -= static_cast<std::size_t>(n);
    }
}

static void formatUnsigned(char* out, unsigned long long value) {
    char digits[24];
    int n = 0;
    do digits[n++] = static_cast<char>('0' + value % 10);
    while ((value /= 10) != 0);
    while (n) *out++ = digits[--n];
    *out = 0;
}

static void onSegv(int signo, siginfo_t* info, void* ucontext) {
    Thread* thread = currentThread();
    if (thread && thread->runningFiber()) {
        Fiber* fiber = thread->currentFiber();
        auto* address = static_cast<char*>(info->si_addr);
        if (fiber->slot && fiber->guarded && address >= fiber->slot && address < fiber->slot + pageSize()) {
            char id[24], kib[24];
            formatUnsigned(id, fiber->id);
            formatUnsigned(kib, stackSize(fiber) / 1024);
            writeAll("fiberscope: stack overflow in fiber #");
            writeAll(id);
            // The name was copied into the header by setFiberName: reading
            // it here is async-signal-safe (no allocation, no lookup).
            if (fiber->name[0]) {
                writeAll(" \"");
                writeAll(fiber->name);
                writeAll("\"");
            }
            writeAll(" (its stack is ");
            writeAll(kib);
            writeAll(" KiB): it hit the guard page below its stack; raise EventLoopOptions::stack_size or "
                     "use less stack (large local arrays, deep recursion)\n");
            signal(SIGSEGV, SIG_DFL);
            return; // the fault repeats with the default action: a core dump
        }
    }
    // Not ours: hand it to whoever was there before (ASan, a crash reporter).
    if (g_previous_segv.sa_flags & SA_SIGINFO) {
        if (g_previous_segv.sa_sigaction) return g_previous_segv.sa_sigaction(signo, info, ucontext);
    } else if (g_previous_segv.sa_handler != SIG_DFL && g_previous_segv.sa_handler != SIG_IGN) {
        return g_previous_segv.sa_handler(signo);
    }
    signal(SIGSEGV, SIG_DFL);
}

void installOverflowHandler() {
    // Installed at every loop creation, chained to whatever handler is there
    // now (test frameworks and crash reporters swap handlers in and out).
    struct sigaction current {};
    sigaction(SIGSEGV, nullptr, &current);
    if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == onSegv) return;
    struct sigaction action {};
    action.sa_sigaction = onSegv;
    action.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, &g_previous_segv);
}

AltSignalStack::AltSignalStack() {
    size_ = 64 * 1024;
    memory_ = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (memory_ == MAP_FAILED) {
        memory_ = nullptr;
        return;
    }
    stack_t stack{};
    stack.ss_sp = memory_;
    stack.ss_size = size_;
    sigaltstack(&stack, nullptr);
}

AltSignalStack::~AltSignalStack() {
    if (!memory_) return;
    stack_t disable{};
    disable.ss_flags = SS_DISABLE;
    sigaltstack(&disable, nullptr);
    sanitizerUnpoison(memory_, size_); // as ~StackPool
    munmap(memory_, size_);
}

} // namespace fiberscope::detail
