// IntervalList: a lane's intervals in 24 bytes each (see lane.hpp for why).
//
// push_back keeps an item's end as a 32-bit span. Items that do not fit the
// packed fields (a span of more than 4 s among them) go whole to the side
// list when pushed. The side list is ordered by item index
// because items are only appended.
#include "fiberscope/analysis/lane.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

namespace fiberscope::analysis {

IntervalList::Items::Items(const Items& other) {
    if (other.size_ == 0) return;
    reallocate(other.size_);
    std::memcpy(data_, other.data_, other.size_ * sizeof(Packed));
    size_ = other.size_;
}

void IntervalList::Items::reallocate(std::size_t n) {
    if (n > UINT32_MAX) throw std::length_error("IntervalList: more than 2^32 intervals");
    if (n == 0) {
        std::free(data_);
        data_ = nullptr;
    } else {
        void* grown = std::realloc(data_, n * sizeof(Packed)); // Packed is trivially copyable
        if (!grown) throw std::bad_alloc();
        data_ = static_cast<Packed*>(grown);
    }
    capacity_ = static_cast<std::uint32_t>(n);
}

void IntervalList::Items::reserve(std::size_t n) {
    if (n > capacity_) reallocate(n);
}

void IntervalList::Items::shrink_to_fit() {
    if (capacity_ > size_) reallocate(size_);
}

IntervalList::IntervalList(const IntervalList& other)
    : items_(other.items_), wide_(other.wide_ ? std::make_unique<Wide>(*other.wide_) : nullptr) {}

IntervalList& IntervalList::operator=(const IntervalList& other) {
    if (this != &other) *this = IntervalList(other);
    return *this;
}

void IntervalList::shrink_to_fit() {
    items_.shrink_to_fit();
    if (wide_) wide_->shrink_to_fit();
}

void IntervalList::clear() noexcept {
    items_.clear();
    wide_.reset();
}

const Interval& IntervalList::wideAt(std::size_t k) const noexcept {
    const auto it = std::lower_bound(wide_->begin(), wide_->end(), static_cast<std::uint32_t>(k),
                                     [](const Wide::value_type& w, std::uint32_t index) { return w.first < index; });
    return it->second;
}

void IntervalList::push_back(const Interval& iv) {
    Packed p;
    p.start = iv.start;
    p.cause = iv.cause;
    p.state_reason = static_cast<std::uint8_t>(static_cast<unsigned>(iv.state) | (static_cast<unsigned>(iv.reason) << 4));
    const bool fits = iv.fiber <= UINT32_MAX && iv.thread >= INT16_MIN && iv.thread <= INT16_MAX &&
                      static_cast<unsigned>(iv.state) < 16 && static_cast<unsigned>(iv.reason) < 16 && iv.end >= iv.start &&
                      static_cast<std::uint64_t>(iv.end - iv.start) <= UINT32_MAX;
    if (fits) {
        p.fiber = static_cast<std::uint32_t>(iv.fiber);
        p.thread = static_cast<std::int16_t>(iv.thread);
        p.span = static_cast<std::uint32_t>(iv.end - iv.start);
        p.how = kSpan;
    } else {
        p.how = kWide;
        if (!wide_) wide_ = std::make_unique<Wide>();
        wide_->emplace_back(static_cast<std::uint32_t>(items_.size()), iv);
    }
    items_.push_back(p);
}

} // namespace fiberscope::analysis
