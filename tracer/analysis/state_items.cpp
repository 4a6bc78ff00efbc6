// StateItemList: the replay items, compacted in chunks when the model is
// closed (see state_items.hpp for why and the layout).
//
// Each compact chunk's bases are its items' least start and least record
// (kNoEvent aside), so those offsets are >= 0, and four fiber bases chosen
// greedily, each the start of the window of ids that holds the most fibers
// the ones before it do not; an item's extras are appended to extras_ in
// item order, so its chunk's first extra plus its own index finds them.
#include "fiberscope/analysis/state_items.hpp"

#include <algorithm>
#include <array>
#include <cstring>

namespace fiberscope::analysis {

void StateItemList::clear() noexcept {
    list_.clear();
    size_ = 0;
    at_.clear();
    words_.clear();
    extras_.clear();
    wide_.clear();
}

StateItem StateItemList::chunkItem(std::size_t k) const noexcept {
    const std::uint32_t at = at_[k / kChunk];
    const std::uint32_t* w = words_.data() + (at & ~kCompactChunk);
    const std::size_t r = k % kChunk;
    if (!(at & kCompactChunk)) {
        Packed p;
        std::memcpy(static_cast<void*>(&p), w + r * kPackedWords, sizeof p);
        std::uint32_t index = 0;
        if (StateItemCodec::isWide(p, index)) return wide_[index];
        return StateItemCodec::unpack(p);
    }
    const std::uint32_t* item = w + kHeader + 3 * r;
    const std::uint64_t lo = item[0] | std::uint64_t{item[1]} << 32;
    const std::uint32_t hi = item[2];
    const std::uint32_t* extra = extras_.data() + w[7] + (hi >> 25);
    StateItem out;
    out.start = static_cast<std::int64_t>(w[0] | std::uint64_t{w[1]} << 32) + static_cast<std::int64_t>(lo & ((std::uint64_t{1} << kStartBits) - 1));
    out.kind = static_cast<ItemKind>((hi >> 24) & 1);
    if (out.kind == ItemKind::InFlight) {
        out.fd = static_cast<std::int16_t>(*extra & 0xffff);
        out.opcode = static_cast<std::uint8_t>(*extra++ >> 16);
    }
    const std::uint32_t fiber = hi & 0xffff;
    out.fiber = fiber == kFarFiber ? *extra++ : std::uint64_t{w[2 + (fiber >> 14)]} + (fiber & (kFiberWindow - 1));
    const std::uint64_t span = (lo >> kStartBits) & kOpenSpan;
    out.end = span == kOpenSpan ? kOpenEnd : out.start + static_cast<std::int64_t>(span == kFarSpan ? *extra : span);
    const auto event = static_cast<std::uint32_t>(lo >> 52) | ((hi >> 16) & 3) << 12;
    out.event = event == kNoEventOffset ? kNoEvent : w[6] + event;
    out.where = (hi >> 18) & 63;
    return out;
}

namespace {

// Up to `count` bases for `fibers` (sorted): each the start of a window of
// `window` ids holding the most of those no earlier base's window holds.
// Unused bases are 0.
void chooseBases(const std::uint32_t* fibers, std::size_t n, std::uint32_t window, std::uint32_t* bases, int count) {
    std::array<bool, 64> taken{};
    std::array<std::uint8_t, 65> before{}; // before[i]: fibers [0, i) not taken
    std::fill(bases, bases + count, 0u);
    for (int b = 0; b < count; ++b) {
        for (std::size_t i = 0; i < n; ++i) before[i + 1] = static_cast<std::uint8_t>(before[i] + !taken[i]);
        std::size_t best = 0;
        for (std::size_t i = 0, j = 0; i < n; ++i) { // [i, j): the fibers in i's window
            while (j < n && fibers[j] - fibers[i] < window) ++j;
            if (!taken[i] && static_cast<std::size_t>(before[j] - before[i]) > best) best = before[j] - before[i], bases[b] = fibers[i];
        }
        if (best == before[n]) return; // every fiber left is near this base (or none is left)
        for (std::size_t i = 0; i < n; ++i)
            if (fibers[i] >= bases[b] && fibers[i] - bases[b] < window) taken[i] = true;
    }
}

} // namespace

void StateItemList::compact() {
    const std::size_t n = list_.size();
    static_assert(kChunk <= 64); // (chooseBases)
    if (compacted() || n < kChunk) return;
    const std::size_t count = (n + kChunk - 1) / kChunk;
    struct Bases {
        std::int64_t start = INT64_MAX;
        std::uint32_t fiber[kFiberBases] = {};
        std::uint32_t event = UINT32_MAX;
    };
    auto& packed = list_.packed();
    // The near fiber code of `fiber` (kFarFiber: none).
    const auto fiberCode = [](const Bases& b, std::uint32_t fiber) {
        for (int i = 0; i < kFiberBases; ++i)
            if (fiber >= b.fiber[i] && fiber - b.fiber[i] < kFiberWindow - (i == kFiberBases - 1))
                return static_cast<std::uint32_t>(i) << 14 | (fiber - b.fiber[i]);
        return kFarFiber;
    };
    // The extras of item `item` (kind, fiber code and span fixed).
    const auto extrasOf = [](const StateItem& item, std::uint32_t code) {
        return (item.kind == ItemKind::InFlight) + (code == kFarFiber) +
               (item.end != kOpenEnd && static_cast<std::uint64_t>(item.end - item.start) >= kFarSpan);
    };
    // Whether chunk [first, last) fits, its bases and its extras.
    const auto fits = [&](std::size_t first, std::size_t last, Bases& b, std::size_t& extras) {
        std::int64_t hi = INT64_MIN;
        std::uint32_t event_hi = 0;
        std::uint32_t fibers[kChunk];
        std::uint32_t index = 0;
        for (std::size_t k = first; k < last; ++k) {
            if (StateItemCodec::isWide(packed[k], index)) return false;
            // (Not wide: its fiber fits 32 bits, its fd 16, its span is 0
            // or more and under 2^32 or it is open.)
            const StateItem item = StateItemCodec::unpack(packed[k]);
            if (item.where >= 64) return false;
            b.start = std::min(b.start, item.start);
            hi = std::max(hi, item.start);
            fibers[k - first] = static_cast<std::uint32_t>(item.fiber);
            if (item.event != kNoEvent) {
                b.event = std::min(b.event, item.event);
                event_hi = std::max(event_hi, item.event);
            }
        }
        if (b.event == UINT32_MAX) b.event = 0;
        // (Starts are within 48 bits: no overflow.)
        if (hi - b.start >= (std::int64_t{1} << kStartBits) || event_hi - std::min(event_hi, b.event) >= kNoEventOffset) return false;
        std::sort(fibers, fibers + (last - first));
        chooseBases(fibers, last - first, kFiberWindow - 1, b.fiber, kFiberBases);
        extras = 0;
        for (std::size_t k = first; k < last; ++k) {
            if (extras > kMaxExtra) return false;
            const StateItem item = StateItemCodec::unpack(packed[k]);
            extras += extrasOf(item, fiberCode(b, static_cast<std::uint32_t>(item.fiber)));
        }
        return true;
    };
    std::vector<Bases> bases(count);
    std::vector<std::uint32_t> at;
    at.reserve(count);
    std::size_t words = 0, extras = 0, wide = 0;
    for (std::size_t c = 0; c < count; ++c) {
        const std::size_t first = c * kChunk, last = std::min(n, first + kChunk);
        std::size_t chunk_extras = 0;
        const bool compact = fits(first, last, bases[c], chunk_extras);
        if (words >= kCompactChunk) return; // (over 2^31 words: left as it is)
        at.push_back(static_cast<std::uint32_t>(words) | (compact ? kCompactChunk : 0));
        words += compact ? kHeader + 3 * (last - first) : kPackedWords * (last - first);
        if (compact) extras += chunk_extras;
        for (std::size_t k = first; !compact && k < last; ++k) {
            std::uint32_t index = 0;
            wide += StateItemCodec::isWide(packed[k], index);
        }
    }
    if (words >= kCompactChunk || extras > UINT32_MAX) return;
    std::vector<std::uint32_t> w(words), extra_list;
    std::vector<StateItem> wide_list;
    extra_list.reserve(extras);
    wide_list.reserve(wide);
    for (std::size_t c = 0; c < count; ++c) {
        const std::size_t first = c * kChunk, last = std::min(n, first + kChunk);
        std::uint32_t* cw = w.data() + (at[c] & ~kCompactChunk);
        if (!(at[c] & kCompactChunk)) {
            for (std::size_t k = first; k < last; ++k, cw += kPackedWords) {
                Packed p = packed[k];
                std::uint32_t index = 0;
                if (StateItemCodec::isWide(p, index)) {
                    p = StateItemCodec::wide(static_cast<std::uint32_t>(wide_list.size()));
                    wide_list.push_back(list_[k]);
                }
                std::memcpy(cw, &p, sizeof p);
            }
            continue;
        }
        const Bases& b = bases[c];
        cw[0] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(b.start));
        cw[1] = static_cast<std::uint32_t>(static_cast<std::uint64_t>(b.start) >> 32);
        for (int i = 0; i < kFiberBases; ++i) cw[2 + i] = b.fiber[i];
        cw[6] = b.event;
        const std::size_t chunk_first = extra_list.size();
        cw[7] = static_cast<std::uint32_t>(chunk_first);
        for (std::size_t k = first; k < last; ++k) {
            const StateItem item = StateItemCodec::unpack(packed[k]);
            const auto offset = static_cast<std::uint64_t>(item.start - b.start);
            const std::uint32_t fiber = fiberCode(b, static_cast<std::uint32_t>(item.fiber));
            const auto first_extra = static_cast<std::uint32_t>(extra_list.size() - chunk_first); // <= kMaxExtra (fits)
            if (item.kind == ItemKind::InFlight) extra_list.push_back(static_cast<std::uint16_t>(item.fd) | std::uint32_t{item.opcode} << 16);
            if (fiber == kFarFiber) extra_list.push_back(static_cast<std::uint32_t>(item.fiber));
            std::uint64_t span = kOpenSpan;
            if (item.end != kOpenEnd) {
                span = static_cast<std::uint64_t>(item.end - item.start);
                if (span >= kFarSpan) {
                    extra_list.push_back(static_cast<std::uint32_t>(span));
                    span = kFarSpan;
                }
            }
            const std::uint32_t event = item.event == kNoEvent ? kNoEventOffset : item.event - b.event;
            const std::uint64_t lo = offset | span << kStartBits | std::uint64_t{event & 0xfff} << 52;
            const std::uint32_t hi = fiber | (event >> 12) << 16 | item.where << 18 | static_cast<std::uint32_t>(item.kind) << 24 | first_extra << 25;
            std::uint32_t* iw = cw + kHeader + 3 * (k - first);
            iw[0] = static_cast<std::uint32_t>(lo);
            iw[1] = static_cast<std::uint32_t>(lo >> 32);
            iw[2] = hi;
        }
    }
    // All built: nothing can fail now.
    size_ = n;
    at_ = std::move(at);
    words_ = std::move(w);
    extras_ = std::move(extra_list);
    wide_ = std::move(wide_list);
    list_ = PackedList<StateItemCodec>();
}

void StateItemList::expand() {
    if (!compacted()) return;
    PackedList<StateItemCodec> list;
    list.reserve(size_);
    for (std::size_t k = 0; k < size_; ++k) list.push_back(chunkItem(k));
    list_ = std::move(list);
    size_ = 0;
    at_ = {};
    words_ = {};
    extras_ = {};
    wide_ = {};
}

} // namespace fiberscope::analysis
