// A waiter list of the object replay (object_state.hpp): fibers in the order
// they joined, each at most once. A fiber joins at the back (moving there if
// it was listed already) and leaves from anywhere, each in O(1) on average,
// however long the list. A plain vector made every leave a linear search,
// and a trace of 100,000 fibers blocked on one Queue took minutes to open
// (issue 35).
//
// Design: the fibers sit in a vector in joining order. A fiber that leaves
// (or moves to the back) leaves a hole behind it; once the holes outnumber
// the fibers (plus a few), the vector is compacted in place. So it stays
// within about twice the fibers listed (a snapshot's copy costs O(size())),
// and each compaction is paid for by the removals that made its holes. A
// fiber is found by a search of the slots while the list is short (at most
// kLinear fibers: then at most ~2 kLinear slots, and no allocation per
// fiber, which most lists, a few waiters each, would pay on every join),
// and through a hash map from fiber to slot once it is longer; the map is
// dropped when a compaction finds the list short again (at half kLinear, so
// a list at the threshold does not build and drop it at every change), and
// shrunk when it has far more buckets than fibers (a copy copies them).
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace fiberscope::analysis {

class FiberList {
public:
    static constexpr std::size_t kLinear = 32;

    // Puts `fiber` at the back. True if it was not listed before.
    bool pushBack(std::uint64_t fiber) {
        const std::size_t at = find(fiber);
        if (at != kNone) {
            if (at + 1 == slots_.size()) return false; // already last
            slots_[at].listed = false, ++holes_;
        } else {
            ++size_;
        }
        slots_.push_back(Slot{fiber, true});
        if (indexed_) at_[fiber] = slots_.size() - 1;
        else if (size_ > kLinear) index();
        if (at != kNone) compactIfHoley();
        return at == kNone;
    }
    // Takes `fiber` off the list. True if it was listed.
    bool erase(std::uint64_t fiber) {
        const std::size_t at = find(fiber);
        if (at == kNone) return false;
        slots_[at].listed = false, ++holes_, --size_;
        if (indexed_) at_.erase(fiber);
        compactIfHoley();
        return true;
    }
    bool contains(std::uint64_t fiber) const { return find(fiber) != kNone; }
    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    void clear() noexcept {
        slots_.clear();
        at_ = {}; // (a cleared map keeps its buckets; a copy would copy them)
        indexed_ = false;
        holes_ = size_ = 0;
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
    static constexpr std::size_t kNone = ~std::size_t{0};
    struct Slot {
        std::uint64_t fiber;
        bool listed; // false: a hole (the fiber left, or moved further back)
    };
    std::size_t find(std::uint64_t fiber) const {
        if (indexed_) {
            const auto it = at_.find(fiber);
            return it == at_.end() ? kNone : it->second;
        }
        for (std::size_t i = 0; i < slots_.size(); ++i)
            if (slots_[i].listed && slots_[i].fiber == fiber) return i;
        return kNone;
    }
    void index() {
        at_.reserve(size_);
        for (std::size_t i = 0; i < slots_.size(); ++i)
            if (slots_[i].listed) at_[slots_[i].fiber] = i;
        indexed_ = true;
    }
    void compactIfHoley() {
        if (size_ == 0) return clear();
        if (holes_ <= size_ + 8) return;
        std::size_t kept = 0;
        for (std::size_t i = 0; i < slots_.size(); ++i) {
            if (!slots_[i].listed) continue;
            if (indexed_) at_.find(slots_[i].fiber)->second = kept;
            slots_[kept++] = slots_[i];
        }
        slots_.resize(kept);
        holes_ = 0;
        if (indexed_ && size_ <= kLinear / 2) at_ = {}, indexed_ = false;
        else if (indexed_ && at_.bucket_count() > 4 * size_ + 64) at_.rehash(0);
    }

    std::vector<Slot> slots_;
    std::unordered_map<std::uint64_t, std::size_t> at_; // listed fiber -> its slot, once indexed_
    bool indexed_ = false;
    std::size_t holes_ = 0;
    std::size_t size_ = 0; // fibers listed
};

} // namespace fiberscope::analysis
