// How a wake-up's send is paired with its answer (its wakeup-received, or
// since format version 7 its wakeup-bounced): the one rule the model's
// flows (timeline.cpp) and the state panel's pending wake-ups
// (object_state.cpp) both follow, so they cannot disagree.
//
// The rule: each (sender worker, target worker) pair is a FIFO. A send is
// answered by the next answer of its pair. An answer read before any send
// of its pair (the two threads' clocks can differ by a few hundred
// nanoseconds, and a version-6 epoll trace named its sender only as a hint)
// waits for the next send of its pair, which it answers at once.
//
// `Send` and `Answer` are what each consumer keeps of the two records (a
// flow end, a pending entry).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <unordered_map>

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
        Pair& p = pairs_[k];
        if (!p.early.empty()) {
            Answer a = p.early.front();
            p.early.pop_front();
            return a;
        }
        p.sends.push_back(send);
        return std::nullopt;
    }
    // An answer (received or bounced) of pair `k`: the send it answers, if
    // one waits; else it waits for the next send.
    std::optional<Send> answered(std::uint64_t k, const Answer& answer) {
        Pair& p = pairs_[k];
        if (!p.sends.empty()) {
            Send s = p.sends.front();
            p.sends.pop_front();
            return s;
        }
        p.early.push_back(answer);
        return std::nullopt;
    }
    // Every send still waiting for its answer (in no particular order).
    template <class F>
    void forEachWaiting(F&& f) const {
        for (const auto& [k, p] : pairs_)
            for (const Send& send : p.sends) f(send);
    }
    // Entries kept (sends and early answers).
    std::size_t size() const noexcept {
        std::size_t n = 0;
        for (const auto& [k, p] : pairs_) n += p.sends.size() + p.early.size();
        return n;
    }
    void clear() { pairs_.clear(); }
    bool empty() const noexcept { return pairs_.empty(); }

private:
    struct Pair {
        std::deque<Send> sends;    // not yet answered
        std::deque<Answer> early;  // answered before any send of the pair
    };
    std::unordered_map<std::uint64_t, Pair> pairs_;
};

} // namespace fiberscope::analysis
