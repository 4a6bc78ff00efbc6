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
    if (other.borrowed())
        for (std::size_t k = 0; k < n; ++k) data_[k] = widen(other.slice(), k);
    else
        std::memcpy(data_, other.data_, n * sizeof(Packed));
    header()->size = static_cast<std::uint32_t>(n);
}

void IntervalList::Items::own(std::size_t n) {
    if (!borrowed()) return;
    Items copy(*this);
    copy.reserve(n);
    *this = std::move(copy);
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
    if (borrowed()) own(std::max(n, size()));
    else if (n > capacity()) reallocate(n);
}

void IntervalList::Items::shrink_to_fit() {
    if (!borrowed() && capacity() > size()) reallocate(size());
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
    if (items_.borrowed()) items_.own(items_.size() + 1); // the store's slice is not ours to change
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

// The compact format (lane.hpp): a slice's bases are its items' least
// start and least cause (kNoEvent aside), so every offset is >= 0.
std::size_t IntervalList::storeWords() const noexcept {
    const std::size_t n = items_.size();
    if (n == 0) return 0;
    if (items_.borrowed()) return kSmallHeader + n;
    if (n > kSmallMaxItems || wideCount() != 0) return 0;
    // Every item is packed (not wide): its start fits 48 bits, its thread
    // 8, its fiber 32. What is left to check is that the items share their
    // fiber and that their starts and causes are near enough to the least.
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    std::uint32_t cause_lo = UINT32_MAX, cause_hi = 0;
    const std::uint32_t fiber = items_[0].fiber;
    for (std::size_t k = 0; k < n; ++k) {
        const Packed& p = items_[k];
        if (p.fiber != fiber) return 0;
        const std::int64_t start = startBits(p.bits);
        lo = std::min(lo, start);
        hi = std::max(hi, start);
        if (p.cause != kNoEvent) {
            cause_lo = std::min(cause_lo, p.cause);
            cause_hi = std::max(cause_hi, p.cause);
        }
    }
    // (Both differences are of values within 48 bits: no overflow.)
    if (hi - lo > static_cast<std::int64_t>(UINT32_MAX)) return 0;
    if (cause_lo != UINT32_MAX && cause_hi - cause_lo >= kSmallNoCause) return 0;
    return kSmallHeader + n;
}

void IntervalList::moveToStore(std::uint64_t* slice) noexcept {
    const std::size_t n = items_.size();
    if (items_.borrowed()) {
        std::memcpy(slice, items_.slice(), (kSmallHeader + n) * sizeof(std::uint64_t));
        items_.borrow(slice);
        return;
    }
    std::int64_t base = INT64_MAX;
    std::uint32_t cause_base = UINT32_MAX;
    for (std::size_t k = 0; k < n; ++k) {
        base = std::min(base, startBits(items_[k].bits));
        if (items_[k].cause != kNoEvent) cause_base = std::min(cause_base, items_[k].cause);
    }
    if (cause_base == UINT32_MAX) cause_base = 0;
    slice[0] = static_cast<std::uint64_t>(n) << kStartBits | (static_cast<std::uint64_t>(base) & ((std::uint64_t{1} << kStartBits) - 1));
    slice[1] = static_cast<std::uint64_t>(items_[0].fiber) << 32 | cause_base;
    for (std::size_t k = 0; k < n; ++k) {
        const Packed& p = items_[k];
        const std::uint64_t offset = static_cast<std::uint64_t>(startBits(p.bits) - base); // < 2^32 (storeWords)
        const std::uint64_t cause = p.cause == kNoEvent ? kSmallNoCause : p.cause - cause_base;
        slice[kSmallHeader + k] = offset | cause << kSmallCauseShift | ((p.bits >> kThreadShift) & 0xff) << kSmallThreadShift |
                                  ((p.bits >> kStateShift) & 7) << kSmallStateShift |
                                  ((p.bits >> kReasonShift) & 7) << kSmallReasonShift | (p.bits & kGap ? kSmallGap : 0);
    }
    items_.borrow(slice);
}

} // namespace fiberscope::analysis
