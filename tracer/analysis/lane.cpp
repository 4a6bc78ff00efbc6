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
    if (n == 0 && !other.side()) return; // (an empty list with a side block holds something attached)
    if (other.chunked()) { // a compacted list's copy stays compact
        adopt(new Chunks(other.chunks()));
        return;
    }
    // The side block is copied first: a throw then leaves nothing to free
    // (a constructor that throws runs no destructor).
    std::unique_ptr<Side> side = other.side() ? std::make_unique<Side>(*other.side()) : nullptr;
    reallocate(std::max<std::size_t>(n, 1));
    if (other.borrowed())
        for (std::size_t k = 0; k < n; ++k) data_[k] = widen(other.slice(), k);
    else
        std::memcpy(data_, other.data_, n * sizeof(Packed));
    header()->size = static_cast<std::uint32_t>(n);
    header()->side = side.release();
}

IntervalList::Chunks::Chunks(const Chunks& other)
    : size(other.size), at(other.at), words(other.words), side(other.side ? std::make_unique<Side>(*other.side) : nullptr) {}

IntervalList::Chunks::~Chunks() = default;

IntervalList::Side& IntervalList::Items::makeSide() {
    if (!owned() && !chunked()) own(size());
    if (chunked()) {
        Chunks& c = *reinterpret_cast<Chunks*>(reinterpret_cast<std::uintptr_t>(data_) & ~std::uintptr_t{kChunksTag});
        if (!c.side) c.side = std::make_unique<Side>();
        return *c.side;
    }
    if (!data_) reallocate(1); // (a block to hold it: callers push an item next)
    if (!header()->side) header()->side = new Side();
    return *header()->side;
}

void IntervalList::Items::own(std::size_t n) {
    if (owned()) return;
    const std::size_t size = this->size();
    Items copy;
    copy.reallocate(std::max<std::size_t>({n, size, 1}));
    for (std::size_t k = 0; k < size; ++k) copy.data_[k] = at(k);
    copy.header()->size = static_cast<std::uint32_t>(size);
    if (chunked()) { // its side block moves along (a slice has none)
        Chunks& c = *reinterpret_cast<Chunks*>(reinterpret_cast<std::uintptr_t>(data_) & ~std::uintptr_t{kChunksTag});
        copy.header()->side = c.side.release();
    }
    *this = std::move(copy);
}

void IntervalList::Items::release() noexcept {
    if (chunked()) {
        delete &chunks();
    } else if (data_ && !borrowed()) {
        delete header()->side;
        std::free(header());
    }
    data_ = nullptr;
}

void IntervalList::Items::clear() noexcept {
    if (!owned()) {
        release();
    } else if (data_) {
        delete std::exchange(header()->side, nullptr);
        header()->size = 0;
    }
}

std::size_t IntervalList::Items::blockBytes() const noexcept {
    if (!data_ || borrowed()) return 0;
    if (chunked()) {
        const Chunks& c = chunks();
        return sizeof(Chunks) + c.at.capacity() * sizeof(std::uint32_t) + c.words.capacity() * sizeof(std::uint64_t); // (the side block: wideBytes)
    }
    return sizeof(Header) + capacity() * sizeof(Packed);
}

void IntervalList::Items::reallocate(std::size_t n) {
    if (n > UINT32_MAX) throw std::length_error("IntervalList: more than 2^32 intervals");
    if (n == 0) {
        release();
        return;
    }
    const std::uint32_t size = static_cast<std::uint32_t>(std::min(this->size(), n));
    // Packed and Header are trivially copyable: realloc moves them.
    void* grown = std::realloc(data_ ? static_cast<void*>(header()) : nullptr, sizeof(Header) + n * sizeof(Packed));
    if (!grown) throw std::bad_alloc();
    Header* h = static_cast<Header*>(grown);
    if (!data_) h->side = nullptr; // (a grown block keeps its side block)
    h->size = size;
    h->capacity = static_cast<std::uint32_t>(n);
    data_ = reinterpret_cast<Packed*>(static_cast<char*>(grown) + sizeof(Header));
}

void IntervalList::Items::reserve(std::size_t n) {
    if (!owned()) own(std::max(n, size()));
    else if (n > capacity()) reallocate(n);
}

void IntervalList::Items::shrink_to_fit() {
    const std::size_t keep = std::max<std::size_t>(size(), side() ? 1 : 0); // (a side block needs a block to live in)
    if (owned() && capacity() > keep) reallocate(keep);
}

IntervalList::IntervalList(const IntervalList& other) : items_(other.items_), last_end_(other.last_end_) {}

IntervalList& IntervalList::operator=(const IntervalList& other) {
    if (this != &other) *this = IntervalList(other);
    return *this;
}

void IntervalList::shrink_to_fit() {
    items_.shrink_to_fit();
    if (Side* side = items_.side()) {
        side->whole.shrink_to_fit();
        side->ends.shrink_to_fit();
    }
}

void IntervalList::clear() noexcept {
    items_.clear(); // (and the side block)
    last_end_ = 0;
}

IntervalList::Side::Side(const Side& other)
    : whole(other.whole), ends(other.ends), index(other.index ? std::make_unique<LaneIndex>(*other.index) : nullptr),
      attached(other.attached ? other.attached->clone() : nullptr) {}

IntervalList::Side::~Side() = default;

void IntervalList::setIndex(std::unique_ptr<LaneIndex> index) {
    if (!index && !items_.side()) return;
    if (items_.empty()) return; // (an empty lane has no levels or sums: buildLaneIndex makes none)
    side().index = std::move(index);
}

const Interval& IntervalList::wideAt(std::size_t k) const noexcept {
    const auto& whole = items_.side()->whole;
    const auto it = std::lower_bound(whole.begin(), whole.end(), static_cast<std::uint32_t>(k),
                                     [](const Side::Whole& w, std::uint32_t index) { return w.first < index; });
    return it->second;
}

std::int64_t IntervalList::gapEnd(std::size_t k) const noexcept {
    const auto& ends = items_.side()->ends;
    const auto it = std::lower_bound(ends.begin(), ends.end(), static_cast<std::uint32_t>(k),
                                     [](const Side::End& e, std::uint32_t index) { return e.first < index; });
    return it->second;
}

void IntervalList::push_back(const Interval& iv) {
    items_.grow(); // (a slice is not ours to change, chunks cannot grow: both are copied to a block first)
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
    items_.push_back(p); // (cannot throw: grown above)
    last_end_ = iv.end;
}

// The compact format (lane.hpp): a slice's bases are its items' least
// start and least cause (kNoEvent aside), so every offset is >= 0.
std::size_t IntervalList::storeFormat(bool& narrow) const noexcept {
    narrow = false;
    const std::size_t n = items_.size();
    if (n == 0) return 0;
    if (items_.borrowed()) {
        narrow = (items_.slice()[0] & kSmallNarrow) != 0;
        return sliceWords(items_.slice());
    }
    if (n > kSmallMaxItems || items_.side()) return 0; // (a slice holds no side block)
    // Every item is packed (not wide): its start fits 48 bits, its thread
    // 8, its fiber 32. What is left to check is that the items share their
    // fiber and that their starts and causes are near enough to the least.
    std::int64_t lo = INT64_MAX, hi = INT64_MIN;
    std::uint32_t cause_lo = UINT32_MAX, cause_hi = 0;
    std::uint64_t thread_hi = 0; // the largest thread + 1
    const std::uint32_t fiber = items_.at(0).fiber;
    for (std::size_t k = 0; k < n; ++k) {
        const Packed p = items_.at(k);
        if (p.fiber != fiber) return 0;
        const std::int64_t start = startBits(p.bits);
        lo = std::min(lo, start);
        hi = std::max(hi, start);
        if (p.cause != kNoEvent) {
            cause_lo = std::min(cause_lo, p.cause);
            cause_hi = std::max(cause_hi, p.cause);
        }
        thread_hi = std::max(thread_hi, (p.bits >> kThreadShift) & 0xff);
    }
    // (Both differences are of values within 48 bits: no overflow.)
    if (hi - lo > static_cast<std::int64_t>(UINT32_MAX)) return 0;
    if (cause_lo != UINT32_MAX && cause_hi - cause_lo >= kSmallNoCause) return 0;
    narrow = hi - lo <= 0xffff && (cause_lo == UINT32_MAX || cause_hi - cause_lo < kNarrowNoCause) && thread_hi < 8;
    return kSmallHeader + (narrow ? (n + 1) / 2 : n);
}

std::size_t IntervalList::storeWords() const noexcept {
    bool narrow = false;
    return storeFormat(narrow);
}

void IntervalList::moveToStore(std::uint64_t* slice) noexcept {
    const std::size_t n = items_.size();
    if (items_.borrowed()) {
        std::memcpy(slice, items_.slice(), sliceWords(items_.slice()) * sizeof(std::uint64_t));
        items_.borrow(slice);
        return;
    }
    bool narrow = false;
    const std::size_t words = storeFormat(narrow);
    std::int64_t base = INT64_MAX;
    std::uint32_t cause_base = UINT32_MAX;
    for (std::size_t k = 0; k < n; ++k) {
        const Packed p = items_.at(k);
        base = std::min(base, startBits(p.bits));
        if (p.cause != kNoEvent) cause_base = std::min(cause_base, p.cause);
    }
    if (cause_base == UINT32_MAX) cause_base = 0;
    slice[0] = (narrow ? kSmallNarrow : 0) | static_cast<std::uint64_t>(n) << kStartBits |
               (static_cast<std::uint64_t>(base) & ((std::uint64_t{1} << kStartBits) - 1));
    slice[1] = static_cast<std::uint64_t>(items_.at(0).fiber) << 32 | cause_base;
    std::fill(slice + kSmallHeader, slice + words, 0);
    for (std::size_t k = 0; k < n; ++k) {
        const Packed p = items_.at(k);
        const std::uint64_t offset = static_cast<std::uint64_t>(startBits(p.bits) - base); // < 2^32 (storeWords); narrow: < 2^16
        const std::uint64_t thread = (p.bits >> kThreadShift) & 0xff, state = (p.bits >> kStateShift) & 7, reason = (p.bits >> kReasonShift) & 7;
        if (narrow) {
            const std::uint64_t cause = p.cause == kNoEvent ? kNarrowNoCause : p.cause - cause_base;
            const std::uint64_t v = offset | cause << kNarrowCauseShift | thread << kNarrowThreadShift | state << kNarrowStateShift |
                                    reason << kNarrowReasonShift | (p.bits & kGap ? kNarrowGap : 0);
            slice[kSmallHeader + k / 2] |= v << (32 * (k & 1));
            continue;
        }
        const std::uint64_t cause = p.cause == kNoEvent ? kSmallNoCause : p.cause - cause_base;
        slice[kSmallHeader + k] = offset | cause << kSmallCauseShift | thread << kSmallThreadShift | state << kSmallStateShift |
                                  reason << kSmallReasonShift | (p.bits & kGap ? kSmallGap : 0);
    }
    items_.borrow(slice);
}

// Compacting (lane.hpp): each chunk's bases are its items' least start,
// least cause (kNoEvent aside) and least fiber (0 aside), so every offset is
// >= 0; a chunk whose items do not all fit keeps them as they are.
void IntervalList::compact() {
    const std::size_t n = items_.size();
    if (!items_.owned() || n < kChunk || n > UINT32_MAX / 4) return;
    auto chunks = std::make_unique<Chunks>();
    chunks->size = static_cast<std::uint32_t>(n);
    const std::size_t count = (n + kChunk - 1) / kChunk;
    chunks->at.reserve(count);
    std::size_t words = 0;
    // Whether chunk [first, last) fits, and its bases.
    struct Bases {
        std::int64_t start = INT64_MAX;
        std::uint32_t cause = UINT32_MAX, fiber = UINT32_MAX;
        std::uint64_t thread = 0;
    };
    const auto fits = [&](std::size_t first, std::size_t last, Bases& b) {
        std::int64_t hi = INT64_MIN;
        std::uint32_t cause_hi = 0, fiber_hi = 0;
        b.thread = (items_[first].bits >> kThreadShift) & 0xff;
        for (std::size_t k = first; k < last; ++k) {
            const Packed& p = items_[k];
            if (p.bits & kWide || ((p.bits >> kThreadShift) & 0xff) != b.thread) return false;
            const std::int64_t start = startBits(p.bits);
            b.start = std::min(b.start, start);
            hi = std::max(hi, start);
            if (p.cause != kNoEvent) {
                b.cause = std::min(b.cause, p.cause);
                cause_hi = std::max(cause_hi, p.cause);
            }
            if (p.fiber != 0) {
                b.fiber = std::min(b.fiber, p.fiber);
                fiber_hi = std::max(fiber_hi, p.fiber);
            }
        }
        if (b.cause == UINT32_MAX) b.cause = 0;
        if (b.fiber == UINT32_MAX) b.fiber = 0;
        // (Starts are within 48 bits: no overflow.)
        return hi - b.start < (std::int64_t{1} << kChunkStartBits) && cause_hi - std::min(cause_hi, b.cause) < kChunkNoCause &&
               fiber_hi - std::min(fiber_hi, b.fiber) < 0xffff;
    };
    std::vector<Bases> bases(count);
    for (std::size_t c = 0; c < count; ++c) {
        const std::size_t first = c * kChunk, last = std::min(n, first + kChunk);
        const bool compact = fits(first, last, bases[c]);
        chunks->at.push_back(static_cast<std::uint32_t>(words) | (compact ? Chunks::kCompactChunk : 0));
        words += compact ? kChunkHeader + (last - first) : 2 * (last - first);
    }
    chunks->words.resize(words);
    for (std::size_t c = 0; c < count; ++c) {
        const std::size_t first = c * kChunk, last = std::min(n, first + kChunk);
        const std::uint32_t at = chunks->at[c];
        std::uint64_t* w = chunks->words.data() + (at & ~Chunks::kCompactChunk);
        if (!(at & Chunks::kCompactChunk)) {
            for (std::size_t k = first; k < last; ++k, w += 2) {
                w[0] = items_[k].bits;
                w[1] = static_cast<std::uint64_t>(items_[k].fiber) << 32 | items_[k].cause;
            }
            continue;
        }
        const Bases& b = bases[c];
        w[0] = static_cast<std::uint64_t>(b.start);
        w[1] = static_cast<std::uint64_t>(b.fiber) << 32 | b.cause;
        w[2] = b.thread;
        for (std::size_t k = first; k < last; ++k) {
            const Packed& p = items_[k];
            const auto offset = static_cast<std::uint64_t>(startBits(p.bits) - b.start);
            const std::uint64_t cause = p.cause == kNoEvent ? kChunkNoCause : p.cause - b.cause;
            const std::uint64_t fiber = p.fiber == 0 ? 0 : p.fiber - b.fiber + 1;
            w[kChunkHeader + k - first] = offset | ((p.bits >> kStateShift) & 7) << kChunkStateShift |
                                          ((p.bits >> kReasonShift) & 7) << kChunkReasonShift | (p.bits & kGap ? kChunkGap : 0) |
                                          cause << kChunkCauseShift | fiber << kChunkFiberShift;
        }
    }
    items_.adopt(chunks.release());
}

} // namespace fiberscope::analysis
