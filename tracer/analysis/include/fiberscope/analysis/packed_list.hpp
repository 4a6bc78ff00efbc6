// A list of values stored packed: the model's long flat lists (flows,
// latency samples, replay items) hold millions of small records whose
// fields are mostly narrower than their types (a fiber id under 2^32, a
// duration under 4 s, a thread under 4096), so each is kept in a Codec's
// packed form, and the rare value that does not fit is kept whole in a side
// list that its packed item points at. Nothing is lost: reads give back the
// value that was pushed, bit for bit.
//
// Why packed values and not record indices (issue 13): a flow's ends, a
// sample's times and an item's fields could be read back from the records
// they came from, which would be smaller still, but then every reader
// (the viewer's frames, the export, stats, the tests) would need the trace
// beside the model, and the model would depend on the trace it came from
// (a live view copies both each poll; a compared run keeps its own). A packed
// list keeps the model self-contained and its readers unchanged: like
// IntervalList (lane.hpp), it hands out values, so `const Flow& f =
// list[k]` and `for (const Flow& f : list)` read as from a vector. (The one
// exception to "values, not indices" is what a lane of the same model holds
// already: a spawn flow is kept as its fiber's lane index, FlowStore in
// timeline.hpp.)
// What cannot be written through a reference any more is changed by set().
//
// A Codec provides:
//   using Value; using Packed (trivially copyable);
//   static bool pack(const Value&, Packed&)   false: it does not fit
//   static Value unpack(const Packed&)
//   static Packed wide(std::uint32_t index)   an item standing for wide_[index]
//   static bool isWide(const Packed&, std::uint32_t& index)
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <type_traits>
#include <utility>
#include <vector>

namespace fiberscope::analysis {

// A random-access iterator over any list read by index that returns values
// (there is no element to refer to): PackedList's, IntervalList's.
template <class List, class Value>
class IndexIterator {
public:
    using iterator_category = std::random_access_iterator_tag;
    using value_type = Value;
    using difference_type = std::ptrdiff_t;
    using reference = value_type; // a value: the list holds none to refer to
    struct pointer {
        value_type value;
        const value_type* operator->() const noexcept { return &value; }
    };

    IndexIterator() = default;
    IndexIterator(const List* list, std::size_t k) noexcept : list_(list), k_(static_cast<difference_type>(k)) {}

    value_type operator*() const noexcept { return (*list_)[static_cast<std::size_t>(k_)]; }
    pointer operator->() const noexcept { return {**this}; }
    value_type operator[](difference_type n) const noexcept { return (*list_)[static_cast<std::size_t>(k_ + n)]; }

    IndexIterator& operator++() noexcept { return ++k_, *this; }
    IndexIterator operator++(int) noexcept {
        IndexIterator old = *this;
        ++k_;
        return old;
    }
    IndexIterator& operator--() noexcept { return --k_, *this; }
    IndexIterator operator--(int) noexcept {
        IndexIterator old = *this;
        --k_;
        return old;
    }
    IndexIterator& operator+=(difference_type n) noexcept { return k_ += n, *this; }
    IndexIterator& operator-=(difference_type n) noexcept { return k_ -= n, *this; }
    friend IndexIterator operator+(IndexIterator it, difference_type n) noexcept { return it += n; }
    friend IndexIterator operator+(difference_type n, IndexIterator it) noexcept { return it += n; }
    friend IndexIterator operator-(IndexIterator it, difference_type n) noexcept { return it -= n; }
    friend difference_type operator-(const IndexIterator& a, const IndexIterator& b) noexcept { return a.k_ - b.k_; }
    friend bool operator==(const IndexIterator& a, const IndexIterator& b) noexcept { return a.k_ == b.k_; }
    friend auto operator<=>(const IndexIterator& a, const IndexIterator& b) noexcept { return a.k_ <=> b.k_; }

private:
    const List* list_ = nullptr;
    difference_type k_ = 0;
};

template <class Codec>
class PackedList {
public:
    using value_type = typename Codec::Value;
    using Packed = typename Codec::Packed;
    static_assert(std::is_trivially_copyable_v<Packed>);
    using const_iterator = IndexIterator<PackedList, typename Codec::Value>;

    PackedList() = default;
    PackedList(std::initializer_list<value_type> values) {
        reserve(values.size());
        for (const value_type& v : values) push_back(v);
    }

    std::size_t size() const noexcept { return items_.size(); }
    bool empty() const noexcept { return items_.empty(); }
    std::size_t capacity() const noexcept { return items_.capacity(); }
    void reserve(std::size_t n) { items_.reserve(n); }
    void shrink_to_fit() {
        items_.shrink_to_fit();
        wide_.shrink_to_fit();
    }
    void clear() noexcept {
        items_.clear();
        wide_.clear();
    }

    void push_back(const value_type& v) {
        Packed p;
        if (!Codec::pack(v, p)) {
            p = Codec::wide(static_cast<std::uint32_t>(wide_.size()));
            wide_.push_back(v);
        }
        items_.push_back(p);
    }
    // Replaces item k (a wide item stays wide: its side entry is rewritten).
    void set(std::size_t k, const value_type& v) {
        std::uint32_t w = 0;
        if (Codec::isWide(items_[k], w)) {
            wide_[w] = v;
            return;
        }
        Packed p;
        if (Codec::pack(v, p)) {
            items_[k] = p;
            return;
        }
        items_[k] = Codec::wide(static_cast<std::uint32_t>(wide_.size()));
        wide_.push_back(v);
    }

    value_type operator[](std::size_t k) const noexcept {
        std::uint32_t w = 0;
        if (Codec::isWide(items_[k], w)) return wide_[w];
        return Codec::unpack(items_[k]);
    }
    value_type front() const noexcept { return (*this)[0]; }
    value_type back() const noexcept { return (*this)[items_.size() - 1]; }

    const_iterator begin() const noexcept;
    const_iterator end() const noexcept;

    // The packed items themselves, to reorder whole items (a wide one's side
    // entry goes with it: it is found through the item, not by position).
    std::vector<Packed>& packed() noexcept { return items_; }
    // Where the items live (a cache keyed on a list can tell a new one).
    const Packed* data() const noexcept { return items_.data(); }

    // Heap bytes by capacity: the packed items; the side list of wide values.
    std::size_t itemBytes() const noexcept { return items_.capacity() * sizeof(Packed); }
    std::size_t wideBytes() const noexcept { return wide_.capacity() * sizeof(value_type); }
    std::size_t wideCount() const noexcept { return wide_.size(); }

private:
    std::vector<Packed> items_;
    std::vector<value_type> wide_;
};


// The value kept aside for item `index` in a side list of (item index,
// value) pairs ordered by index, which holds it (the lists above and below
// keep what does not pack this way).
template <class T>
const T& sideValueAt(const std::vector<std::pair<std::uint32_t, T>>& side, std::size_t index) noexcept {
    const auto it = std::lower_bound(side.begin(), side.end(), static_cast<std::uint32_t>(index),
                                     [](const std::pair<std::uint32_t, T>& w, std::uint32_t k) { return w.first < k; });
    return it->second;
}

// A list of 32-bit values, each near the one before it (indices into a
// list, in an order close to the list's own), in ~2 bytes each: a signed
// 16-bit offset from the first value of its block of kBlock, plus 4 bytes a
// block; a value further off is kept whole aside. Reads give values, so
// std::lower_bound and `for (std::uint32_t v : list)` work as on a vector.
class NearValueList {
public:
    static constexpr std::size_t kBlock = 64;
    using value_type = std::uint32_t;
    using const_iterator = IndexIterator<NearValueList, std::uint32_t>;

    NearValueList() = default;
    explicit NearValueList(const std::vector<std::uint32_t>& values) {
        offsets_.reserve(values.size());
        bases_.reserve((values.size() + kBlock - 1) / kBlock);
        for (std::uint32_t v : values) push_back(v);
        whole_.shrink_to_fit();
    }
    std::size_t size() const noexcept { return offsets_.size(); }
    bool empty() const noexcept { return offsets_.empty(); }
    void push_back(std::uint32_t v) {
        const std::size_t k = offsets_.size();
        if (k % kBlock == 0) bases_.push_back(v);
        const std::int64_t d = std::int64_t{v} - std::int64_t{bases_.back()};
        if (d > kWhole && d <= INT16_MAX) {
            offsets_.push_back(static_cast<std::int16_t>(d));
        } else {
            whole_.emplace_back(static_cast<std::uint32_t>(k), v);
            offsets_.push_back(kWhole);
        }
    }
    std::uint32_t operator[](std::size_t k) const noexcept {
        const std::int16_t d = offsets_[k];
        return d == kWhole ? sideValueAt(whole_, k) : static_cast<std::uint32_t>(std::int64_t{bases_[k / kBlock]} + d);
    }
    const_iterator begin() const noexcept { return {this, 0}; }
    const_iterator end() const noexcept { return {this, size()}; }
    // Heap bytes by capacity.
    std::size_t bytes() const noexcept {
        return offsets_.capacity() * sizeof(std::int16_t) + bases_.capacity() * sizeof(std::uint32_t) + whole_.capacity() * sizeof(whole_[0]);
    }

private:
    static constexpr std::int16_t kWhole = INT16_MIN;
    std::vector<std::int16_t> offsets_;                           // value - its block's first; kWhole: in whole_
    std::vector<std::uint32_t> bases_;                            // per block: its first value
    std::vector<std::pair<std::uint32_t, std::uint32_t>> whole_;  // (index, value), by index
};

template <class Codec>
typename PackedList<Codec>::const_iterator PackedList<Codec>::begin() const noexcept {
    return {this, 0};
}
template <class Codec>
typename PackedList<Codec>::const_iterator PackedList<Codec>::end() const noexcept {
    return {this, items_.size()};
}

} // namespace fiberscope::analysis
