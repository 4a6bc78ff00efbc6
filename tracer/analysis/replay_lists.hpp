// The lists the timeline's builder keeps while it replays a trace
// (timeline_builder.hpp): a fiber's short lists in a shared pool, a thread's
// fibers made ready and not yet scheduled, a condition's waiters. Private to
// the analysis library (not under include/).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <list>
#include <unordered_map>
#include <vector>

namespace fiberscope::analysis::detail {

inline constexpr std::uint32_t kNil = UINT32_MAX;

// Short FIFO lists, one per fiber, as singly linked nodes in one shared pool
// (freed nodes are reused): most fibers hold zero or one entry at a time, and
// a vector per fiber would cost an allocation per fiber.
template <class T>
class ListPool {
public:
    struct List {
        std::uint32_t head = kNil;
        std::uint32_t tail = kNil;
        bool empty() const noexcept { return head == kNil; }
    };

    void pushBack(List& list, const T& value) {
        std::uint32_t n = free_;
        if (n != kNil) {
            free_ = nodes_[n].next;
            nodes_[n] = Node{value, kNil};
        } else {
            n = static_cast<std::uint32_t>(nodes_.size());
            nodes_.push_back(Node{value, kNil});
        }
        if (list.tail == kNil) list.head = n;
        else nodes_[list.tail].next = n;
        list.tail = n;
    }
    // Calls f(value) for each entry, in order.
    template <class F>
    void forEach(const List& list, F&& f) {
        for (std::uint32_t n = list.head; n != kNil; n = nodes_[n].next) f(nodes_[n].value);
    }
    // Removes and returns the first of the oldest kMatchWindow entries that
    // satisfies `pred`, else the first entry; false if the list is empty. The
    // window keeps each call O(1): a real fiber has one or two operations in
    // flight, and a crafted trace with thousands must not make loading quadratic.
    static constexpr int kMatchWindow = 8;
    template <class Pred>
    bool takeMatchOrFirst(List& list, Pred&& pred, T& out) {
        if (list.empty()) return false;
        std::uint32_t prev = kNil, n = list.head;
        for (int looked = 0; n != kNil && !pred(nodes_[n].value); ++looked) {
            if (looked + 1 == kMatchWindow) {
                n = kNil;
                break;
            }
            prev = n, n = nodes_[n].next;
        }
        if (n == kNil) prev = kNil, n = list.head;
        out = nodes_[n].value;
        const std::uint32_t next = nodes_[n].next;
        if (prev == kNil) list.head = next;
        else nodes_[prev].next = next;
        if (list.tail == n) list.tail = prev;
        nodes_[n].next = free_;
        free_ = n;
        return true;
    }
    void clear(List& list) {
        if (list.empty()) return;
        nodes_[list.tail].next = free_;
        free_ = list.head;
        list = List{};
    }

private:
    struct Node {
        T value;
        std::uint32_t next = kNil;
    };
    std::vector<Node> nodes_;
    std::uint32_t free_ = kNil;
};

// The fibers that became ready on one thread and are not yet accounted for
// by a schedule record, in order. A schedule record names its first fiber
// and a count: take() finds that fiber through a map and removes it and the
// ones after it, leaving holes that compact() squeezes out once they
// outnumber the live entries; so every call is amortized O(1 + taken), however
// long the list grows between parks (a thread that never parks).
class PendingReady {
public:
    // It runs without a schedule record having taken it (the idle loop's
    // first completion, a hand-off): no longer pending.
    void erase(std::uint64_t fiber) {
        auto it = position_.find(fiber);
        if (it == position_.end()) return;
        entries_[it->second] = kHole;
        ++holes_;
        position_.erase(it);
        if (holes_ > 32 && holes_ > entries_.size() / 2) compact();
    }
    void push(std::uint64_t fiber) {
        // Pending already (made ready before, and run or moved without a
        // schedule record taking it: the idle loop's first completion, a
        // hand-off): it is pending from now on, after the others, as a
        // schedule record's list will have it.
        auto [it, added] = position_.try_emplace(fiber, entries_.size());
        if (!added) {
            entries_[it->second] = kHole;
            ++holes_;
            it->second = entries_.size();
        }
        entries_.push_back(fiber);
    }
    // Appends to `out` the fiber `head` and up to `count - 1` pending after it,
    // removing them; false (nothing appended) if `head` is not pending.
    bool take(std::uint64_t head, std::uint64_t count, std::vector<std::uint64_t>& out) {
        auto it = position_.find(head);
        if (it == position_.end()) return false;
        std::size_t at = it->second;
        for (std::uint64_t taken = 0; at < entries_.size() && taken < std::max<std::uint64_t>(count, 1); ++at) {
            const std::uint64_t fiber = entries_[at];
            if (fiber == kHole) continue;
            out.push_back(fiber);
            position_.erase(fiber);
            entries_[at] = kHole;
            ++holes_;
            ++taken;
        }
        if (holes_ > 32 && holes_ > entries_.size() / 2) compact();
        return true;
    }
    void clear() {
        entries_.clear();
        position_.clear();
        holes_ = 0;
    }

private:
    static constexpr std::uint64_t kHole = UINT64_MAX;
    void compact() {
        std::size_t kept = 0;
        for (const std::uint64_t fiber : entries_) {
            if (fiber == kHole) continue;
            position_[fiber] = kept;
            entries_[kept++] = fiber;
        }
        entries_.resize(kept);
        holes_ = 0;
    }
    std::vector<std::uint64_t> entries_;                        // kHole where taken
    std::unordered_map<std::uint64_t, std::size_t> position_;   // pending fiber -> index
    std::size_t holes_ = 0;
};

// The fibers waiting on one condition, in order of waiting. Finding the one a
// wake names is a map look-up, not a scan, so N waiters woken newest-first
// cost O(N) in all.
class ConditionWaiters {
public:
    void add(std::uint64_t fiber) {
        if (where_.count(fiber)) return; // already waiting
        order_.push_back(fiber);
        where_.emplace(fiber, std::prev(order_.end()));
    }
    // The wake of `fiber` (all: and every waiter after it), appended to `out`;
    // `fiber` itself even if it was not seen waiting.
    void wake(std::uint64_t fiber, bool all, std::vector<std::uint64_t>& out) {
        auto it = where_.find(fiber);
        if (it == where_.end()) {
            out.push_back(fiber);
            return;
        }
        auto from = it->second;
        auto to = all ? order_.end() : std::next(from);
        for (auto w = from; w != to; ++w) {
            out.push_back(*w);
            where_.erase(*w);
        }
        order_.erase(from, to);
    }

private:
    std::list<std::uint64_t> order_;
    std::unordered_map<std::uint64_t, std::list<std::uint64_t>::iterator> where_;
};

} // namespace fiberscope::analysis::detail
