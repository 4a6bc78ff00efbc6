// Queue<T>: a bounded multi-producer multi-consumer channel between fibers,
// built on Mutex and Condition. put() suspends while the queue is full,
// get() while it is empty. close() wakes everybody: later put()s fail with
// Closed, get()s drain what is left and then fail with Closed.
//
// get() and put() are cancel points whenever they wait (for the queue's
// mutex or for room or an item): a cancel makes them return Canceled, having
// taken or stored nothing. An item is never lost: a get() that was woken for
// it takes it even if a cancel came meanwhile (the cancel stays pending),
// and a canceled get() leaves the item to the next one (Condition passes the
// signal on). getUncancelable() / putUncancelable() wait whatever happens.
//
// Each takes an optional Timeout on its wait for room or an item (the
// queue's mutex is held only briefly and is not timed): past it, put()
// returns TimedOut having stored nothing, get() TimedOut having taken nothing.
#pragma once

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "fiberscope/condition.hpp"
#include "fiberscope/mutex.hpp"
#include "fiberscope/object_name.hpp"
#include "fiberscope/result.hpp"

namespace fiberscope {

namespace detail {
// Records a queue operation in the trace (op: trace::QueueOp).
void traceQueueOp(int op, const void* queue) noexcept;
}

template <class T>
class Queue;
// Names it and its parts in the trace (object_name.hpp).
template <class T>
void setObjectName(const Queue<T>& queue, std::string_view name) noexcept;

template <class T>
class Queue {
public:
    explicit Queue(std::size_t capacity) : slots_(capacity ? capacity : 1) {}

    Status put(T value, Timeout timeout = {}) { return putImpl<true>(std::move(value), timeout); }
    Status putUncancelable(T value, Timeout timeout = {}) { return putImpl<false>(std::move(value), timeout); }
    Result<T> get(Timeout timeout = {}) { return getImpl<true>(timeout); }
    Result<T> getUncancelable(Timeout timeout = {}) { return getImpl<false>(timeout); }

    void close() {
        mutex_.lockUncancelable();
        closed_ = true;
        mutex_.unlock();
        detail::traceQueueOp(4, this);
        not_empty_.broadcast();
        not_full_.broadcast();
    }

    std::size_t capacity() const noexcept { return slots_.size(); }

    template <class U>
    friend void setObjectName(const Queue<U>& queue, std::string_view name) noexcept;

private:
    template <bool Cancelable>
    Status lockMutex() {
        if constexpr (Cancelable) return mutex_.lock();
        mutex_.lockUncancelable();
        return {};
    }
    // A Timeout's end as a steady_clock time (CLOCK_MONOTONIC, as the runtime's).
    struct Deadline {
        bool limited;
        std::chrono::steady_clock::time_point at;
        explicit Deadline(Timeout timeout)
            : limited(timeout.limited()), at(limited ? std::chrono::steady_clock::now() + timeout.duration
                                                     : std::chrono::steady_clock::time_point{}) {}
        // What is left of it (0 once passed).
        Timeout left() const {
            auto rest = at - std::chrono::steady_clock::now();
            return rest.count() > 0 ? Timeout(rest) : Timeout(std::chrono::nanoseconds(0));
        }
    };

    template <bool Cancelable>
    Status waitOn(Condition& condition, const Deadline& deadline) {
        if (deadline.limited) {
            if constexpr (Cancelable) return condition.wait(mutex_, deadline.left());
            return condition.waitUncancelable(mutex_, deadline.left());
        }
        if constexpr (Cancelable) return condition.wait(mutex_);
        condition.waitUncancelable(mutex_);
        return {};
    }

    template <bool Cancelable>
    Status putImpl(T value, Timeout timeout) {
        const Deadline deadline(timeout);
        if (auto s = lockMutex<Cancelable>(); !s) return s;
        std::unique_lock lock(mutex_, std::adopt_lock);
        if (count_ == slots_.size() && !closed_) detail::traceQueueOp(2, this);
        while (count_ == slots_.size() && !closed_)
            if (auto s = waitOn<Cancelable>(not_full_, deadline); !s) return s;
        if (closed_) return Errc::Closed;
        slots_[(head_ + count_) % slots_.size()].emplace(std::move(value));
        ++count_;
        detail::traceQueueOp(0, this);
        lock.unlock();
        not_empty_.signal();
        return {};
    }

    template <bool Cancelable>
    Result<T> getImpl(Timeout timeout) {
        const Deadline deadline(timeout);
        if (auto s = lockMutex<Cancelable>(); !s) return s.error();
        std::unique_lock lock(mutex_, std::adopt_lock);
        if (count_ == 0 && !closed_) detail::traceQueueOp(3, this);
        while (count_ == 0 && !closed_)
            if (auto s = waitOn<Cancelable>(not_empty_, deadline); !s) return s.error();
        if (count_ == 0) return Errc::Closed;
        T value = std::move(*slots_[head_]);
        slots_[head_].reset();
        head_ = (head_ + 1) % slots_.size();
        --count_;
        detail::traceQueueOp(1, this);
        lock.unlock();
        not_full_.signal();
        return value;
    }

    Mutex mutex_;
    Condition not_empty_, not_full_;
    std::vector<std::optional<T>> slots_;
    std::size_t head_ = 0, count_ = 0;
    bool closed_ = false;
};

template <class T>
void setObjectName(const Queue<T>& queue, std::string_view name) noexcept {
    // The parts first: one may share the queue's address, whose name is the queue's.
    detail::nameParts(name, {{&queue.mutex_, "mutex"}, {&queue.not_empty_, "not-empty"}, {&queue.not_full_, "not-full"}});
    setObjectName(static_cast<const void*>(&queue), name);
}

} // namespace fiberscope
