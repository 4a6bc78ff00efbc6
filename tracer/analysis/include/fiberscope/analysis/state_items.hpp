// The replay items behind stateAt (state_at.hpp): every stay of a fiber in
// a ready queue and every ring operation in flight, with its [start, end).
//
// Memory (issue 13: ~0.2 items per trace event, the model's third-largest
// list): while the model is built an item is packed in 24 bytes
// (StateItemCodec below), because the builder ends items it made earlier
// (set()) and needs random writes. When the model is closed the list is
// compacted (compact()) into chunks of kChunk items in start order: a chunk
// whose items start within 67 ms of its least start, name records
// within 16382 of its least record, and sit in slots or on threads under
// 64 keeps its bases once and an item in 12 bytes. Fibers are near one of
// four bases (each thread takes fiber ids from its own block); what an item
// cannot hold (an operation's fd and opcode, which a queue stay lacks; a
// fiber far from every base, such as the main fiber among new ones; a span
// of 67 ms or more) goes whole to a side list, 4 bytes each, that the item
// points at. A chunk that does not fit (a sparse stretch, a wide item,
// thread 70000, too many extras) keeps its 24-byte items, so nothing is
// lost. On the benchmark's dense trace nearly every chunk fits: ~13 bytes
// an item instead of 24. Reads stay O(1) and give
// StateItem values, as from a vector.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "fiberscope/analysis/lane.hpp"
#include "fiberscope/analysis/packed_list.hpp"

namespace fiberscope::analysis {

enum class ItemKind : std::uint8_t { Queued, InFlight };
inline constexpr std::int64_t kOpenEnd = INT64_MAX;

struct StateItem {
    std::int64_t start = 0;
    std::int64_t end = kOpenEnd;  // exclusive
    std::uint64_t fiber = 0;
    std::int32_t fd = 0;          // InFlight: the operation's fd
    std::uint32_t where = 0;      // Queued: slot index; InFlight: trace thread number
    std::uint32_t event = kNoEvent; // the schedule/submit that began it
    ItemKind kind = ItemKind::Queued;
    std::uint8_t opcode = 0;
};
// Replay items packed (packed_list.hpp): 24 bytes where a StateItem is 40
// (issue 13: ~0.2 items per event). The start is 48 bits (+-39 hours from
// the recording's start, as a lane interval's) split in two words so the
// item needs only 4-byte alignment; the end is a 32-bit span from it (an
// open item's is kOpenSpan); the fiber is 32 bits, the slot or thread and
// the fd 16. An item that does not fit (open-ended spans of 4.3 s or more,
// a start 40 hours in, a crafted trace's thread 70000, an fd past 32767) is
// kept whole.
struct StateItemCodec {
    using Value = StateItem;
    struct Packed {
        std::uint32_t start_lo = 0;
        std::uint16_t start_hi = 0; // the start's bits 32..47 (sign-extended when read)
        std::uint16_t where = 0;
        std::uint32_t span = 0;    // end - start; kOpenSpan: end is kOpenEnd
        std::uint32_t fiber = 0;
        std::uint32_t event = 0;   // a wide item: the index of its value
        std::int16_t fd = 0;
        std::uint8_t kind = 0;     // ItemKind; kWideKind: wide
        std::uint8_t opcode = 0;
    };
    static_assert(sizeof(Packed) == 24);
    static constexpr std::uint32_t kOpenSpan = UINT32_MAX;
    static constexpr std::uint8_t kWideKind = UINT8_MAX;
    static constexpr std::int64_t kMaxStart = (std::int64_t{1} << 47) - 1;
    static bool pack(const StateItem& item, Packed& p) noexcept {
        std::uint32_t span = kOpenSpan;
        if (item.end != kOpenEnd) {
            if (item.end < item.start) return false;
            const auto d = static_cast<std::uint64_t>(item.end) - static_cast<std::uint64_t>(item.start); // no overflow: start <= end
            if (d >= kOpenSpan) return false;
            span = static_cast<std::uint32_t>(d);
        }
        if (item.start > kMaxStart || item.start < -kMaxStart - 1 || item.fd > INT16_MAX || item.fd < INT16_MIN ||
            item.fiber > UINT32_MAX || item.where > UINT16_MAX || static_cast<std::uint8_t>(item.kind) == kWideKind)
            return false;
        const auto start = static_cast<std::uint64_t>(item.start);
        p.start_lo = static_cast<std::uint32_t>(start);
        p.start_hi = static_cast<std::uint16_t>(start >> 32);
        p.span = span;
        p.fiber = static_cast<std::uint32_t>(item.fiber);
        p.event = item.event;
        p.fd = static_cast<std::int16_t>(item.fd);
        p.where = static_cast<std::uint16_t>(item.where);
        p.kind = static_cast<std::uint8_t>(item.kind);
        p.opcode = item.opcode;
        return true;
    }
    static StateItem unpack(const Packed& p) noexcept {
        StateItem item;
        item.start = static_cast<std::int64_t>(static_cast<std::uint64_t>(static_cast<std::int16_t>(p.start_hi)) << 32 | p.start_lo);
        item.end = p.span == kOpenSpan ? kOpenEnd : item.start + static_cast<std::int64_t>(p.span);
        item.fiber = p.fiber;
        item.fd = p.fd;
        item.where = p.where;
        item.event = p.event;
        item.kind = static_cast<ItemKind>(p.kind);
        item.opcode = p.opcode;
        return item;
    }
    static Packed wide(std::uint32_t index) noexcept {
        Packed p;
        p.event = index;
        p.kind = kWideKind;
        return p;
    }
    static bool isWide(const Packed& p, std::uint32_t& index) noexcept {
        index = p.event;
        return p.kind == kWideKind;
    }
};

// The items (see the design comment above). Built with push_back and set;
// compact() when it will not change again (a later change first expands it).
class StateItemList {
public:
    using value_type = StateItem;
    using const_iterator = IndexIterator<StateItemList, StateItem>;
    static constexpr std::size_t kChunk = 64;

    StateItemList() = default;
    StateItemList(std::initializer_list<StateItem> values) : list_(values) {}

    std::size_t size() const noexcept { return compacted() ? size_ : list_.size(); }
    bool empty() const noexcept { return size() == 0; }
    std::size_t capacity() const noexcept { return compacted() ? size_ : list_.capacity(); }
    void reserve(std::size_t n) {
        expand();
        list_.reserve(n);
    }
    void shrink_to_fit() { list_.shrink_to_fit(); }
    void clear() noexcept;
    void push_back(const StateItem& item) {
        expand();
        list_.push_back(item);
    }
    void set(std::size_t k, const StateItem& item) {
        expand();
        list_.set(k, item);
    }
    StateItem operator[](std::size_t k) const noexcept { return compacted() ? chunkItem(k) : list_[k]; }
    StateItem front() const noexcept { return (*this)[0]; }
    StateItem back() const noexcept { return (*this)[size() - 1]; }
    const_iterator begin() const noexcept { return {this, 0}; }
    const_iterator end() const noexcept { return {this, size()}; }
    // The packed items, to reorder whole items (expands a compacted list).
    std::vector<StateItemCodec::Packed>& packed() {
        expand();
        return list_.packed();
    }

    void compact();
    bool compacted() const noexcept { return !at_.empty(); }

    // Heap bytes by capacity: the items (packed, or chunks with their
    // operations' side list); the values kept whole.
    std::size_t itemBytes() const noexcept {
        return list_.itemBytes() + (at_.capacity() + words_.capacity() + extras_.capacity()) * sizeof(std::uint32_t);
    }
    std::size_t wideBytes() const noexcept { return list_.wideBytes() + wide_.capacity() * sizeof(StateItem); }
    std::size_t wideCount() const noexcept { return compacted() ? wide_.size() : list_.wideCount(); }

private:
    using Packed = StateItemCodec::Packed;
    static_assert(sizeof(Packed) % sizeof(std::uint32_t) == 0);
    static constexpr std::size_t kPackedWords = sizeof(Packed) / sizeof(std::uint32_t);
    // A compact chunk: kHeader words (the least start, low then high; four
    // fiber bases; the least record, kNoEvent aside; the index in extras_ of
    // its first extra), then three words an item: a 64-bit word of the
    // start's offset (kStartBits), the span (kSpanBits; kOpenSpan: open,
    // kFarSpan: an extra) and the record offset's low 12 bits, then a 32-bit
    // word of the fiber (2 bits: which base, 14: the offset from it; all
    // ones: an extra), the record offset's high 2 bits (all ones: kNoEvent),
    // the slot or thread (6), the kind (1) and the index of its first extra
    // among its chunk's (7). An item's extras, in this order: an
    // operation's fd (16 bits) and opcode; a far fiber; a far span.
    static constexpr std::size_t kHeader = 8;
    static constexpr int kStartBits = 26, kSpanBits = 26, kFiberBases = 4;
    static constexpr std::uint64_t kOpenSpan = (std::uint64_t{1} << kSpanBits) - 1, kFarSpan = kOpenSpan - 1;
    static constexpr std::uint32_t kFarFiber = 0xffff, kFiberWindow = 1u << 14;
    static constexpr std::uint32_t kNoEventOffset = (1u << 14) - 1;
    static constexpr std::uint32_t kMaxExtra = 127; // the first extra's index in its chunk
    static constexpr std::uint32_t kCompactChunk = 1u << 31; // in at_: the chunk is compact
    StateItem chunkItem(std::size_t k) const noexcept;
    void expand();

    PackedList<StateItemCodec> list_; // while not compacted
    // Compacted: chunk c's words begin at words_[at_[c] & ~kCompactChunk];
    // a chunk without kCompactChunk holds its Packed items (a wide one's
    // value in wide_).
    std::size_t size_ = 0;
    std::vector<std::uint32_t> at_;
    std::vector<std::uint32_t> words_;
    std::vector<std::uint32_t> extras_; // what a compact chunk's items hold apart, by chunk and item
    std::vector<StateItem> wide_;
};

} // namespace fiberscope::analysis
