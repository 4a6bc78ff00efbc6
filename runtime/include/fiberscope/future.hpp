// Future<T>: the handle to a fiber started by EventLoop::async/concurrent.
//
// await() suspends the calling fiber until the fiber finishes and returns its
// result (rethrowing what the closure threw). cancel() first asks the fiber to
// stop: its current or next cancelable operation returns Errc::Canceled.
// A Future that is destroyed without being awaited cancels and awaits its
// fiber, so no fiber outlives the scope that started it (detached fibers
// excepted). Futures may be awaited from any fiber, on any thread, once.
//
// Misuse is an abort with one line on stderr naming it, never undefined
// behaviour: await(), cancel() or select() on a Future that was already
// awaited, canceled or moved from (valid() is false) prints
// "fiberscope: misuse: Future::await() on a Future that was already awaited
// or moved from" (or cancel()/select()) and aborts. So does await() or
// cancel() on a thread that is not one of the loop's (a plain std::thread:
// there is no fiber to suspend), and select() over no futures at all (it
// would wait forever; with no arguments it does not compile).
#pragma once

#include <array>
#include <cstddef>
#include <cstring>
#include <span>
#include <utility>

#include "fiberscope/result.hpp"
#include "fiberscope/task.hpp"

namespace fiberscope {

namespace detail {
struct Fiber;
// Suspends until `fiber` has finished (returns at once if it has).
void awaitFiber(Fiber* fiber);
// Destroys the fiber's task and returns its stack to this thread's free list.
void recycleFiber(Fiber* fiber);
// Marks `fiber` canceled and interrupts its in-flight operation, if any.
void requestCancel(Fiber* fiber);
// The fibers a select waits for, read in place: `count` Fiber* values
// `stride` bytes apart from `first`. An array of them, or the fiber_ member
// of consecutive Futures in a span: no copy, so nothing to allocate.
struct FiberRefs {
    const std::byte* first;
    std::size_t stride;
    std::size_t count;
    Fiber* operator[](std::size_t i) const noexcept {
        Fiber* fiber;
        std::memcpy(&fiber, first + i * stride, sizeof fiber);
        return fiber;
    }
};
// selectFibers' result when the selecting fiber was canceled.
inline constexpr std::size_t kSelectCanceled = ~std::size_t{0};
// Index of the first of `fibers` to finish (nullptr entries count as
// finished). `cancelable`: a cancel of the caller (before or during the
// wait) returns kSelectCanceled, unless a future had finished by then.
std::size_t selectFibers(FiberRefs fibers, bool cancelable);
TaskBase* fiberTask(Fiber* fiber);
// Prints "fiberscope: misuse: <what>" on stderr and aborts.
[[noreturn]] void misuse(const char* what) noexcept;
// misuse(what) unless the caller runs on one of a loop's threads (a fiber or
// the thread that created the loop), where it can suspend.
void requireLoopThread(const char* what) noexcept;
} // namespace detail

template <class T>
class Future {
public:
    Future() = default;
    Future(Future&& other) noexcept
        : fiber_(std::exchange(other.fiber_, nullptr)), task_(std::exchange(other.task_, nullptr)) {}
    Future& operator=(Future&& other) noexcept {
        if (this != &other) {
            discard();
            fiber_ = std::exchange(other.fiber_, nullptr);
            task_ = std::exchange(other.task_, nullptr);
        }
        return *this;
    }
    Future(const Future&) = delete;
    Future& operator=(const Future&) = delete;
    ~Future() { discard(); }

    // True until awaited or canceled.
    bool valid() const noexcept { return task_ != nullptr; }

    // Waits for the fiber and returns its result. Once only (see the top).
    T await() {
        if (!task_) detail::misuse("Future::await() on a Future that was already awaited or moved from");
        if (fiber_) {
            detail::requireLoopThread("Future::await() on a thread that is not one of the loop's (await from a fiber or the thread that created the loop)");
            detail::awaitFiber(fiber_);
        }
        return release();
    }

    // Requests cancellation, then waits for the fiber and returns its result
    // (typically a Result holding Errc::Canceled, if the closure returns one).
    T cancel() {
        if (!task_) detail::misuse("Future::cancel() on a Future that was already awaited or moved from");
        if (fiber_) {
            detail::requireLoopThread("Future::cancel() on a thread that is not one of the loop's (cancel from a fiber or the thread that created the loop)");
            detail::requestCancel(fiber_);
        }
        return await();
    }

    detail::Fiber* fiber() const noexcept { return fiber_; }
    // Implementation detail: where the fiber pointer lives (select reads it in place).
    detail::Fiber* const* fiberAddress() const noexcept { return &fiber_; }

    // Implementation detail: adopt a started fiber (or an inline result).
    static Future adopt(detail::Fiber* fiber, detail::TaskResult<T>* task) noexcept {
        Future f;
        f.fiber_ = fiber;
        f.task_ = task;
        return f;
    }

private:
    T release() {
        struct Recycle {
            Future* self;
            ~Recycle() {
                if (self->fiber_) detail::recycleFiber(self->fiber_);
                else self->task_->destroy(self->task_);
                self->fiber_ = nullptr;
                self->task_ = nullptr;
            }
        } recycle{this};
        return task_->take();
    }
    void discard() noexcept {
        if (!task_) return;
        if (fiber_) {
            detail::requireLoopThread("a Future destroyed unawaited on a thread that is not one of the loop's (it must cancel and join its fiber there)");
            detail::requestCancel(fiber_);
            detail::awaitFiber(fiber_);
            detail::recycleFiber(fiber_);
        } else {
            task_->destroy(task_);
        }
        fiber_ = nullptr;
        task_ = nullptr;
    }

    detail::Fiber* fiber_ = nullptr;
    detail::TaskResult<T>* task_ = nullptr;
};

namespace detail {
template <class T>
Fiber* selectable(const Future<T>& future) {
    if (!future.valid()) misuse("select() over a Future that was already awaited or moved from");
    return future.fiber();
}
} // namespace detail

namespace detail {
template <class T>
FiberRefs selectRefs(std::span<Future<T>> futures) {
    if (futures.empty()) misuse("select() over an empty span of futures would wait forever");
    requireLoopThread("select() on a thread that is not one of the loop's (select from a fiber or the thread that created the loop)");
    for (auto& future : futures) (void)selectable(future);
    return FiberRefs{reinterpret_cast<const std::byte*>(futures[0].fiberAddress()), sizeof(Future<T>), futures.size()};
}
template <std::size_t N>
FiberRefs selectRefs(const std::array<Fiber*, N>& fibers) {
    requireLoopThread("select() on a thread that is not one of the loop's (select from a fiber or the thread that created the loop)");
    return FiberRefs{reinterpret_cast<const std::byte*>(fibers.data()), sizeof(Fiber*), N};
}
} // namespace detail

// Suspends until one of the futures has finished and returns its index.
// The others keep running; await or cancel them as you see fit. Every future
// must be valid(); a select over none would wait forever, so it does not
// compile (no arguments) or aborts (an empty span) with a line saying so.
//
// select() is a cancel point: if the calling fiber is canceled before or
// while it waits, it returns Canceled (the futures keep running: cancel
// them if you wish). A future that finished before the cancel came wins:
// its index is returned and the cancel stays pending for the next cancel
// point. selectUncancelable() waits for a future whatever happens.
template <class... T>
Result<std::size_t> select(Future<T>&... futures) {
    static_assert(sizeof...(T) > 0, "fiberscope::select() needs at least one future: over none it would wait forever");
    const std::array<detail::Fiber*, sizeof...(T)> fibers{detail::selectable(futures)...};
    const std::size_t first = detail::selectFibers(detail::selectRefs(fibers), true);
    if (first == detail::kSelectCanceled) return Errc::Canceled;
    return first;
}

template <class... T>
std::size_t selectUncancelable(Future<T>&... futures) {
    static_assert(sizeof...(T) > 0, "fiberscope::select() needs at least one future: over none it would wait forever");
    const std::array<detail::Fiber*, sizeof...(T)> fibers{detail::selectable(futures)...};
    return detail::selectFibers(detail::selectRefs(fibers), false);
}

template <class T>
Result<std::size_t> select(std::span<Future<T>> futures) {
    const std::size_t first = detail::selectFibers(detail::selectRefs(futures), true);
    if (first == detail::kSelectCanceled) return Errc::Canceled;
    return first;
}

template <class T>
std::size_t selectUncancelable(std::span<Future<T>> futures) {
    return detail::selectFibers(detail::selectRefs(futures), false);
}

} // namespace fiberscope
