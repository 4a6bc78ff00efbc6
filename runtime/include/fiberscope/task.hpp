// The type-erased closure and result slot a fiber runs (implementation detail
// of EventLoop::async and friends; not part of the stable API).
//
// A `Task<F, R>` is constructed in place at the top of the fiber's own stack
// mapping (or on the heap when it is too large to share the stack), so
// spawning a fiber allocates nothing beyond the recycled stack. There is no
// limit on the size or alignment of the closure or its result.
#pragma once

#include <cstddef>
#include <exception>
#include <new>
#include <type_traits>
#include <utility>

namespace fiberscope::detail {

struct TaskBase {
    void (*run)(TaskBase*) noexcept;
    void (*destroy)(TaskBase*) noexcept;
    bool heap_allocated = false;
    // What the closure threw, if it did: here rather than in TaskResult<R>
    // so the runtime can report a detached fiber's exception without
    // knowing R.
    std::exception_ptr exception;
};

template <class R>
struct TaskResult : TaskBase {
    bool has_value = false;
    alignas(R) unsigned char storage[sizeof(R)];

    R& value() noexcept { return *std::launder(reinterpret_cast<R*>(storage)); }
    template <class F>
    void runInto(F& fn) noexcept {
        try {
            ::new (static_cast<void*>(storage)) R(fn());
            has_value = true;
        } catch (...) {
            this->exception = std::current_exception();
        }
    }
    R take() {
        if (this->exception) std::rethrow_exception(this->exception);
        return std::move(value());
    }
    ~TaskResult() {
        if (has_value) value().~R();
    }
};

template <>
struct TaskResult<void> : TaskBase {
    template <class F>
    void runInto(F& fn) noexcept {
        try {
            fn();
        } catch (...) {
            this->exception = std::current_exception();
        }
    }
    void take() {
        if (this->exception) std::rethrow_exception(this->exception);
    }
};

template <class F, class R>
struct Task final : TaskResult<R> {
    F fn;
    template <class G>
    explicit Task(G&& g) : fn(std::forward<G>(g)) {
        this->run = [](TaskBase* base) noexcept {
            auto* self = static_cast<Task*>(base);
            self->runInto(self->fn);
        };
        this->destroy = [](TaskBase* base) noexcept {
            auto* self = static_cast<Task*>(base);
            bool heap = self->heap_allocated;
            self->~Task();
            if (heap) ::operator delete(static_cast<void*>(self), std::align_val_t{alignof(Task)});
        };
    }
};

// How the runtime builds a task inside a fiber: size and alignment of the
// object, and a callback that placement-constructs it at `where`.
struct TaskLayout {
    std::size_t size;
    std::size_t align;
    TaskBase* (*construct)(void* where, void* closure);
    void* closure;
};

template <class F, class R, class G>
TaskLayout taskLayout(G& closure) {
    using T = Task<F, R>;
    return TaskLayout{sizeof(T), alignof(T),
                      [](void* where, void* c) noexcept -> TaskBase* {
                          return ::new (where) T(std::forward<G>(*static_cast<std::remove_reference_t<G>*>(c)));
                      },
                      static_cast<void*>(&closure)};
}

// Prints one line naming an allocation of `bytes` that async() could not
// make, and aborts (event_loop.cpp).
[[noreturn]] void inlineTaskOutOfMemory(std::size_t bytes) noexcept;

// Runs a closure on the calling stack, for async() when no fiber can be had.
// The finished task (its result) lives on the heap until the Future takes it;
// that allocation does not throw: if even it fails the process aborts with
// one line saying so (concurrent() is the call that reports OutOfMemory).
template <class F, class R, class G>
TaskResult<R>* runInline(G&& closure) {
    using T = Task<F, R>;
    void* memory = ::operator new(sizeof(T), std::align_val_t{alignof(T)}, std::nothrow);
    if (!memory) inlineTaskOutOfMemory(sizeof(T));
    auto* task = ::new (memory) T(std::forward<G>(closure));
    task->heap_allocated = true;
    task->run(task);
    return task;
}

} // namespace fiberscope::detail
