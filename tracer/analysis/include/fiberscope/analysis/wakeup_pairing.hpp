// How a wake-up's send is paired with its answer (its wakeup-received, or
// since format version 7 its wakeup-bounced): the one rule the model's
// flows (timeline_replay.cpp) and the state panel's pending wake-ups
// (object_state.cpp) both follow, so they cannot disagree.
//
// The rule: each (sender worker, target worker) pair is a FIFO. A send is
// answered by the next answer of its pair. An answer read before any send
// of its pair (the two threads' clocks can differ by a few hundred
// nanoseconds, and a version-6 epoll trace named its sender only as a hint)
// waits for the next send of its pair, which it answers at once.
//
// Except where the target's start decides: a worker records its
// thread-start once its ring takes messages (workerMain, after
// driver.start()), so a send made after the target's thread-start was not
// bounced, and only one made before it can have been. A bounce is recorded
// when the sender next reaps its own ring, often after the target already
// received a later send (lesson 3: a hand-off just before worker 1 started
// bounced, the next one was received, and the bounce was read 12 ms later).
// So an answer takes the oldest waiting send its consumer's `prefer`
// accepts (a receipt: one made at or after the target's latest
// thread-start; a bounce: one made before it), else the oldest.
//
// `Send` and `Answer` are what each consumer keeps of the two records (a
// flow end, a pending entry).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <map>
#include <utility>
#include <vector>

namespace fiberscope::analysis {

template <class Send, class Answer>
class WakeupPairing {
public:
    static std::uint64_t key(std::int64_t sender, std::int64_t target) noexcept {
        return (static_cast<std::uint64_t>(sender) << 32) ^ static_cast<std::uint64_t>(target);
    }
    // A send of pair `k`: the early answer it is paired with, if one
    // waits; else it waits for its answer.
    std::optional<Answer> sent(std::uint64_t k, const Send& send) {
        const auto it = pairs_.find(k);
        if (it != pairs_.end() && !it->second.early.empty()) {
            Answer a = it->second.early.pop();
            forgetIfEmpty(it);
            return a;
        }
        pairs_[k].sends.push(send);
        ++entries_;
        return std::nullopt;
    }
    // An answer (received or bounced) of pair `k`: the send it answers, if
    // one waits (the oldest `prefer` accepts, else the oldest); else it
    // waits for the next send.
    std::optional<Send> answered(std::uint64_t k, const Answer& answer) {
        return answered(k, answer, [](const Send&) { return true; });
    }
    template <class Prefer>
    std::optional<Send> answered(std::uint64_t k, const Answer& answer, Prefer&& prefer) {
        const auto it = pairs_.find(k);
        if (it != pairs_.end() && !it->second.sends.empty()) {
            Send s = it->second.sends.popPreferred(prefer);
            forgetIfEmpty(it);
            return s;
        }
        pairs_[k].early.push(answer);
        ++entries_;
        return std::nullopt;
    }
    // Every send still waiting for its answer (in no particular order).
    template <class F>
    void forEachWaiting(F&& f) const {
        for (const auto& [k, p] : pairs_) p.sends.forEach(f);
    }
    // Entries kept (sends and early answers), in O(1): the object replay
    // asks after every record (a walk over the pairs made a trace with a
    // pair per worker number quadratic).
    std::size_t size() const noexcept { return entries_; }
    void clear() { pairs_.clear(), entries_ = 0; }
    bool empty() const noexcept { return entries_ == 0; }

private:
    // A FIFO in a vector: taken from a moving head, compacted once the taken
    // part is the larger, so it keeps at most about twice what waits (a
    // std::deque allocates half a kilobyte even for one entry, and a pair
    // usually holds one).
    template <class T>
    class Fifo {
    public:
        void push(const T& value) { items_.push_back(value); }
        T pop() {
            T value = std::move(items_[head_++]);
            if (head_ == items_.size()) items_.clear(), head_ = 0;
            else if (head_ > items_.size() / 2 && head_ > 8) items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_)), head_ = 0;
            return value;
        }
        // The oldest of the first kLook items `prefer` accepts, else the
        // oldest. Bounded, so a hostile trace's thousands of waiting sends
        // stay linear: the sends a preference tells apart are the few
        // around the target's start. The one taken is rotated to the head
        // (kLook moves at most), not erased from the middle.
        template <class Prefer>
        T popPreferred(Prefer& prefer) {
            constexpr std::size_t kLook = 8;
            const std::size_t limit = std::min(items_.size(), head_ + kLook);
            std::size_t at = head_;
            while (at < limit && !prefer(items_[at])) ++at;
            if (at != limit && at != head_)
                std::rotate(items_.begin() + static_cast<std::ptrdiff_t>(head_), items_.begin() + static_cast<std::ptrdiff_t>(at),
                            items_.begin() + static_cast<std::ptrdiff_t>(at + 1));
            return pop();
        }
        bool empty() const noexcept { return head_ == items_.size(); }
        template <class F>
        void forEach(F& f) const {
            for (std::size_t i = head_; i < items_.size(); ++i) f(items_[i]);
        }

    private:
        std::vector<T> items_;
        std::size_t head_ = 0;
    };
    struct Pair {
        Fifo<Send> sends;    // not yet answered
        Fifo<Answer> early;  // answered before any send of the pair
    };
    // A pair with nothing waiting is dropped: a trace naming many worker
    // numbers would otherwise keep (and the replay copy into every
    // snapshot) one empty pair per number, uncounted by size(). (An ordered
    // map: a hash map keeps the buckets of its largest size, and a copy
    // copies them.)
    template <class It>
    void forgetIfEmpty(It it) {
        --entries_;
        if (it->second.sends.empty() && it->second.early.empty()) pairs_.erase(it);
    }

    std::map<std::uint64_t, Pair> pairs_;
    std::size_t entries_ = 0;
};

} // namespace fiberscope::analysis
