// A waiter list of the object replay (object_state.hpp): fibers in the order
// they joined, each at most once. A fiber joins at the back (moving there if
// it was listed already) and leaves from anywhere, each in O(1) on average,
// however long the list. A plain vector made every leave a linear search,
// and a trace of 100,000 fibers blocked on one Queue took minutes to open
// (issue 35).
//
// Design: the fibers sit in a vector in joining order and a hash map gives
// each listed fiber its slot. A fiber that leaves (or moves to the back)
// leaves a hole behind it; once the holes outnumber the fibers, the vector
// and the map are rebuilt without them. So both stay within about twice the
// fibers listed (a snapshot's copy costs O(size())), and each rebuild is
// paid for by the removals that made its holes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace fiberscope::analysis {

class FiberList {
public:
    // Puts `fiber` at the back. True if it was not listed before.
    bool pushBack(std::uint64_t fiber) {
        const auto [it, added] = at_.try_emplace(fiber, slots_.size());
        if (!added) {
            if (it->second + 1 == slots_.size()) return false; // already last
            slots_[it->second].listed = false, ++holes_;
            it->second = slots_.size();
        }
        slots_.push_back(Slot{fiber, true});
        if (!added) compactIfHoley();
        return added;
    }
    // Takes `fiber` off the list. True if it was listed.
    bool erase(std::uint64_t fiber) {
        const auto it = at_.find(fiber);
        if (it == at_.end()) return false;
        slots_[it->second].listed = false, ++holes_;
        at_.erase(it);
        compactIfHoley();
        return true;
    }
    bool contains(std::uint64_t fiber) const { return at_.count(fiber) != 0; }
    std::size_t size() const noexcept { return at_.size(); }
    bool empty() const noexcept { return at_.empty(); }
    void clear() noexcept {
        slots_.clear();
        at_ = {}; // (a cleared map keeps its buckets; a copy would copy them)
        holes_ = 0;
    }
    // f(fiber) for each listed fiber, the earliest to join first.
    template <class F>
    void forEach(F&& f) const {
        for (const Slot& slot : slots_)
            if (slot.listed) f(slot.fiber);
    }
    std::vector<std::uint64_t> fibers() const {
        std::vector<std::uint64_t> out;
        out.reserve(size());
        forEach([&](std::uint64_t fiber) { out.push_back(fiber); });
        return out;
    }

private:
    struct Slot {
        std::uint64_t fiber;
        bool listed; // false: a hole (the fiber left, or moved further back)
    };
    void compactIfHoley() {
        if (at_.empty()) return clear();
        if (holes_ <= at_.size() + 8) return;
        std::vector<Slot> slots;
        slots.reserve(at_.size());
        std::unordered_map<std::uint64_t, std::size_t> at;
        at.reserve(at_.size());
        for (const Slot& slot : slots_)
            if (slot.listed) at.emplace(slot.fiber, slots.size()), slots.push_back(slot);
        slots_ = std::move(slots);
        at_ = std::move(at);
        holes_ = 0;
    }

    std::vector<Slot> slots_;
    std::unordered_map<std::uint64_t, std::size_t> at_; // listed fiber -> its slot
    std::size_t holes_ = 0;
};

} // namespace fiberscope::analysis
