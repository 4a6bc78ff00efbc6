// CancelProtection: a scope in which the calling fiber's cancellation is
// deferred (Zig's swapCancelProtection), for cleanup that must finish.
//
//     {
//         fiberscope::CancelProtection protect;
//         (void)loop->pwrite(log, record, offset);   // not interrupted
//         mutex.lock();                              // waits, never Canceled
//     } // a cancel requested meanwhile is pending again from here on
//
// Inside the scope no cancel point returns Canceled, a cancel does not
// interrupt an operation or a wait, and cancelRequested() is false; the
// request is remembered and takes effect at the first cancel point after the
// scope. Scopes nest (only the outermost one matters). Create it on a fiber
// (or the main fiber) and destroy it on the same fiber.
#pragma once

namespace fiberscope {

class CancelProtection {
public:
    CancelProtection();
    ~CancelProtection();
    CancelProtection(const CancelProtection&) = delete;
    CancelProtection& operator=(const CancelProtection&) = delete;

private:
    void* fiber_ = nullptr; // the protected fiber, nullptr if an outer scope protects it
};

} // namespace fiberscope
