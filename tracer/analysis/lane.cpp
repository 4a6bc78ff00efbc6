// IntervalList: a lane's intervals in 16 bytes each (see lane.hpp for why).
//
// push_back keeps no end: an item ends where the next one starts, and the
// list keeps the last one's end. When a pushed interval does not start where
// the last one ended (a gap), the last item's end goes to the side list.
// Items that do not fit the packed fields go whole to the side list. Both
// side lists are ordered by item index because items are only appended.
#include "fiberscope/analysis/lane.hpp"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>

namespace fiberscope::analysis {

IntervalList::Items::Items(const Items& other) {
    const std::size_t n = other.size();
    if (n == 0) return;
    reallocate(n);
    std::memcpy(data_, other.data_, n * sizeof(Packed));
    header()->size = static_cast<std::uint32_t>(n);
}

void IntervalList::Items::reallocate(std::size_t n) {
    if (n > UINT32_MAX) throw std::length_error("IntervalList: more than 2^32 intervals");
    if (n == 0) {
        if (data_) std::free(header());
        data_ = nullptr;
        return;
    }
    const std::uint32_t size = static_cast<std::uint32_t>(std::min(this->size(), n));
    // Packed and Header are trivially copyable: realloc moves them.
    void* grown = std::realloc(data_ ? static_cast<void*>(header()) : nullptr, sizeof(Header) + n * sizeof(Packed));
    if (!grown) throw std::bad_alloc();
    Header* h = static_cast<Header*>(grown);
    h->size = size;
    h->capacity = static_cast<std::uint32_t>(n);
    data_ = reinterpret_cast<Packed*>(static_cast<char*>(grown) + sizeof(Header));
}

void IntervalList::Items::reserve(std::size_t n) {
    if (n > capacity()) reallocate(n);
}

void IntervalList::Items::shrink_to_fit() {
    if (capacity() > size()) reallocate(size());
}

IntervalList::IntervalList(const IntervalList& other)
    : items_(other.items_), side_(other.side_ ? std::make_unique<Side>(*other.side_) : nullptr), last_end_(other.last_end_) {}

IntervalList& IntervalList::operator=(const IntervalList& other) {
    if (this != &other) *this = IntervalList(other);
    return *this;
}

void IntervalList::shrink_to_fit() {
    items_.shrink_to_fit();
    if (side_) {
        side_->whole.shrink_to_fit();
        side_->ends.shrink_to_fit();
    }
}

void IntervalList::clear() noexcept {
    items_.clear();
    side_.reset();
    last_end_ = 0;
}

IntervalList::Side::Side(const Side& other)
    : whole(other.whole), ends(other.ends), index(other.index ? std::make_unique<LaneIndex>(*other.index) : nullptr) {}

IntervalList::Side::~Side() = default;

void IntervalList::setIndex(std::unique_ptr<LaneIndex> index) {
    if (!index && !side_) return;
    side().index = std::move(index);
}

IntervalList::Side& IntervalList::side() {
    if (!side_) side_ = std::make_unique<Side>();
    return *side_;
}

const Interval& IntervalList::wideAt(std::size_t k) const noexcept {
    const auto& whole = side_->whole;
    const auto it = std::lower_bound(whole.begin(), whole.end(), static_cast<std::uint32_t>(k),
                                     [](const Side::Whole& w, std::uint32_t index) { return w.first < index; });
    return it->second;
}

std::int64_t IntervalList::gapEnd(std::size_t k) const noexcept {
    const auto& ends = side_->ends;
    const auto it = std::lower_bound(ends.begin(), ends.end(), static_cast<std::uint32_t>(k),
                                     [](const Side::End& e, std::uint32_t index) { return e.first < index; });
    return it->second;
}

void IntervalList::push_back(const Interval& iv) {
    const std::size_t k = items_.size();
    // The last item ends where this one starts, unless there is a gap (or an
    // overlap, which a damaged trace could make): then its end is kept aside.
    if (k > 0) {
        Packed& last = items_.back();
        if (!(last.bits & kWide) && last_end_ != iv.start) {
            side().ends.emplace_back(static_cast<std::uint32_t>(k - 1), last_end_);
            last.bits |= kGap;
        }
    }
    Packed p;
    const bool fits = iv.fiber <= UINT32_MAX && iv.thread >= -1 && iv.thread < 255 && iv.start >= -kMaxStart - 1 &&
                      iv.start <= kMaxStart && static_cast<unsigned>(iv.state) < 8 && static_cast<unsigned>(iv.reason) < 8 &&
                      iv.end >= iv.start;
    if (fits) {
        p.bits = (static_cast<std::uint64_t>(iv.start) & ((std::uint64_t{1} << kStartBits) - 1)) |
                 static_cast<std::uint64_t>(iv.state) << kStateShift | static_cast<std::uint64_t>(iv.reason) << kReasonShift |
                 static_cast<std::uint64_t>(iv.thread + 1) << kThreadShift;
        p.cause = iv.cause;
        p.fiber = static_cast<std::uint32_t>(iv.fiber);
    } else {
        p.bits = kWide;
        side().whole.emplace_back(static_cast<std::uint32_t>(k), iv);
    }
    items_.push_back(p);
    last_end_ = iv.end;
}

} // namespace fiberscope::analysis
