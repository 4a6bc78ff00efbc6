// Future<T>: the handle to a fiber started by EventLoop::async/concurrent.
//
// await() suspends the calling fiber until the fiber finishes and returns its
// result (rethrowing what the closure threw). cancel() first asks the fiber to
// stop: its current or next cancelable operation returns Errc::Canceled.
// A Future that is destroyed without being awaited cancels and awaits its
// fiber, so no fiber outlives the scope that started it (detached fibers
// excepted). Futures may be awaited from any fiber, on any thread, once.
#pragma once

#include <array>
#include <memory>
#include <cstddef>
#include <span>
#include <utility>

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
// Index of the first of `fibers` to finish (nullptr entries count as finished).
std::size_t selectFibers(Fiber* const* fibers, std::size_t count);
TaskBase* fiberTask(Fiber* fiber);
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

    // Waits for the fiber and returns its result.
    T await() {
        if (fiber_) detail::awaitFiber(fiber_);
        return release();
    }

    // Requests cancellation, then waits for the fiber and returns its result
    // (typically a Result holding Errc::Canceled, if the closure returns one).
    T cancel() {
        if (fiber_) detail::requestCancel(fiber_);
        return await();
    }

    detail::Fiber* fiber() const noexcept { return fiber_; }

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

// Suspends until one of the futures has finished and returns its index.
// The others keep running; await or cancel them as you see fit.
template <class... T>
std::size_t select(Future<T>&... futures) {
    std::array<detail::Fiber*, sizeof...(T)> fibers{futures.fiber()...};
    return detail::selectFibers(fibers.data(), fibers.size());
}

template <class T>
std::size_t select(std::span<Future<T>> futures) {
    constexpr std::size_t kStack = 16;
    if (futures.size() <= kStack) {
        std::array<detail::Fiber*, kStack> fibers{};
        for (std::size_t i = 0; i < futures.size(); ++i) fibers[i] = futures[i].fiber();
        return detail::selectFibers(fibers.data(), futures.size());
    }
    std::unique_ptr<detail::Fiber*[]> fibers(new detail::Fiber*[futures.size()]);
    for (std::size_t i = 0; i < futures.size(); ++i) fibers[i] = futures[i].fiber();
    return detail::selectFibers(fibers.get(), futures.size());
}

} // namespace fiberscope
