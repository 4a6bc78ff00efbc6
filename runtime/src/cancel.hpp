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
#pragma once

#include "fiber.hpp"
#include "fiberscope/result.hpp"

namespace fiberscope::detail {

// Canceled if the fiber was canceled before it could enter.
Status enterCancelRegion(Fiber* fiber, Thread* thread);
void exitCancelRegion(Fiber* fiber, Thread* thread);

} // namespace fiberscope::detail
