// The cancellation protocol.
//
// A cancelable operation runs inside a cancel region: before submitting it,
// the fiber CASes its cancel_thread from nullptr to the thread whose ring
// will carry the operation; after the completion it CASes it back. A
// canceler exchanges kCanceling into cancel_thread:
//   - got nullptr: the fiber is between operations; its next cancel region
//     (or cancelRequested()) sees kCanceling and returns Canceled;
//   - got a thread: an operation is in flight on that thread's ring. The
//     canceler sends that ring a MSG_RING completion carrying the fiber
//     (tagged with kCancelTag) and -EINTR; the owner's idle loop answers it
//     with IORING_OP_ASYNC_CANCEL for the fiber's operation, which then
//     completes with -ECANCELED (or its real result, if it won the race).
// Only the ring's owner may submit to it (SINGLE_ISSUER), hence the message.
//
// Sync waits (Mutex::lock, Condition::wait, and Queue, Event, Semaphore and
// RwLock through them; select and Group::wait) use the same word. A fiber parked on a primitive's wait list holds a tagged
// pointer to the primitive there (syncWaitTag): the handler that parks it
// CASes nullptr -> tag under the primitive's spin lock, in the same critical
// section that links it into the list, so a canceler that sees the tag
// always finds the fiber linked, or already unlinked by a waker. The
// canceler CASes tag -> kCancelingSync, unlinks the fiber under that spin
// lock (cancelSyncWaiter), stores kCanceling, and schedules the fiber only
// if it found it linked. A waker (unlock, signal) unlinks under the same
// lock, so exactly one of them takes the fiber out: the waker's outcome
// (lock, notification) wins with the cancel left pending, or the cancel's
// (Canceled). The woken fiber clears its tag (exitSyncWait) and, seeing
// kCancelingSync, waits for the canceler to store kCanceling: the canceler
// is then done with the primitive, which the fiber may destroy next.
// A select has no list: its tag names the selecting fiber, and the canceler
// adds a claim to its wake_claims instead of unlinking it (fiber.cpp).
//
// An await (Future::await) is no cancel point: it returns the awaited
// fiber's own result. But a cancel that reaches a fiber while it awaits is
// passed on to the fiber it awaits (structured concurrency: as Zig's cancel
// is request-and-await, a canceled parent's children are canceled as it
// waits for them), so that tearing a tree of fibers down always ends: the
// awaiting fiber's tag names the awaited fiber (SyncKind::await), and the
// canceler, having swapped it for kCancelingSync, requests the awaited
// fiber's cancel (recursively down a chain of awaits) and leaves the awaiter
// waiting, with its cancel pending for its next cancel point. The awaited
// fiber cannot be recycled meanwhile: its awaiter recycles it only after its
// exitSyncWait, which waits for the canceler to store kCanceling. A cancel
// requested before the await is passed on as the await begins.
//
// Cancel protection (CancelProtection) swaps nullptr for kProtected, or a
// pending kCanceling for kProtectedCanceled. Both block every entry: a cancel
// region or a sync wait entered under protection runs uncancelable (the CAS
// from nullptr fails, and the caller proceeds untagged instead of returning
// Canceled). A canceler turns kProtected into kProtectedCanceled and touches
// nothing else; leaving the outermost scope turns that into kCanceling.
#pragma once

#include "fiber/fiber.hpp"
#include "fiberscope/result.hpp"

#include <cstdint>

namespace fiberscope::detail {

// Canceled if the fiber was canceled before it could enter. Under cancel
// protection it succeeds without registering: the operation is uncancelable
// (exitCancelRegion then finds nothing to undo).
Status enterCancelRegion(Fiber* fiber, Thread* thread);
void exitCancelRegion(Fiber* fiber, Thread* thread);

// cancel_thread while a canceler unlinks the fiber from a sync wait list.
inline Thread* const kCancelingSync = reinterpret_cast<Thread*>(std::uintptr_t{128});
// cancel_thread inside a CancelProtection scope, without / with a cancel
// requested (before or during the scope).
inline Thread* const kProtected = reinterpret_cast<Thread*>(std::uintptr_t{192});
inline Thread* const kProtectedCanceled = reinterpret_cast<Thread*>(std::uintptr_t{256});
inline bool isProtected(const Thread* value) { return value == kProtected || value == kProtectedCanceled; }
// What a parked fiber stores in cancel_thread: the primitive's address with
// a low tag bit (primitives and Threads are 8-aligned; the sentinels are too).
// select: the tag names the selecting fiber itself; a canceler claims it
// (wake_claims) instead of unlinking it from a list (fiber.cpp).
// await: the tag names the awaited fiber, to which a cancel is passed on.
// (Three low bits: every primitive, Fiber and Thread is 8-aligned, and the
// sentinels above are multiples of 64.)
enum class SyncKind : std::uintptr_t { mutex = 1, condition = 2, select = 3, await = 4 };
inline constexpr std::uintptr_t kSyncKindBits = 7;
inline Thread* syncWaitTag(const void* primitive, SyncKind kind) {
    return reinterpret_cast<Thread*>(reinterpret_cast<std::uintptr_t>(primitive) | static_cast<std::uintptr_t>(kind));
}
inline bool isSyncWaitTag(const Thread* value) { return (reinterpret_cast<std::uintptr_t>(value) & kSyncKindBits) != 0; }
// Under the primitive's spin lock, before linking `fiber`: false if it was
// canceled already (then it must not park, and returns Canceled). Under
// cancel protection true without tagging: the wait is uncancelable.
bool enterSyncWait(Fiber* fiber, Thread* tag);
// By the fiber once resumed from a cancelable sync wait.
void exitSyncWait(Fiber* fiber);
// By a fiber about to await `awaited`: tags it (SyncKind::await) so that a
// cancel is passed on; a cancel pending already is passed on now. True if
// tagged (then exitSyncWait once resumed); false under cancel protection or
// with a cancel pending (then nothing to undo).
bool enterAwait(Fiber* fiber, Fiber* awaited);
// A sync wait's outcome, in Fiber::completion.result: 0 (woken: got the lock
// or a notification) or kSyncCanceled (unlinked by a cancel).
inline constexpr std::int32_t kSyncCanceled = -125; // -ECANCELED

} // namespace fiberscope::detail
