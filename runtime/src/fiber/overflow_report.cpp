// The stack overflow report (overflow_report.hpp): a SIGSEGV on a fiber's
// guard page says which fiber overflowed, with async-signal-safe calls only.
#include "fiber/overflow_report.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "fiber/stack_pool.hpp"
#include "scheduler/worker.hpp"
#include "support/sanitizer.hpp"

namespace fiberscope::detail {

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
        if (fiber->slot && fiber->guarded && address >= fiber->slot && address < stackBottom(fiber)) {
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
