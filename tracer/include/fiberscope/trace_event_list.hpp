// The decoded records of a trace, kept compact: Trace::events.
//
// A viewer keeps every record of the trace it shows for as long as it is
// open, and a trace holds tens of millions of them; the file spends ~6 bytes
// on each, the plain decoded record (Event) 40. EventList stores the same
// records in columns at ~8.8 bytes each on a dense trace (issue 13: memory
// while viewing):
//   * time: an offset from its block's base (blocks of 256 records in
//     order): 16 bits while the block spans under 65.5 us (a busy program
//     records far more densely), else 32 bits (~4.3 s), else the block keeps
//     whole times (a longer span, or times that run backwards). A block
//     starts narrow and widens when a record does not fit; widening the
//     last block moves only its own times (appending stays O(1) amortised).
//   * its shape, the (thread, kind, enumerated field) triple, as a code
//     into the list's table of the shapes it has seen (a loop has a thread
//     per worker, and each kind a few values of its enumerated field: a
//     dense trace has tens of shapes, each 8 bytes in the table): a byte
//     while the table holds at most 255 (codes 0..254; 255 marks a record
//     kept whole), then 16 bits (the codes are widened once, when the 256th
//     shape arrives),
//   * each of the three fields only when it is not 0, in a 16-bit code:
//     a value in [0, 32767] is the code itself (workers, counts, string ids,
//     fds, small results); codes 0x8000..0xFFFE are an offset into a window
//     of 32767 values that the group's first larger (or negative) value of
//     that field opens around itself (fiber ids: the records of 64 in a row
//     name fibers whose ids are close); 0xFFFF escapes to a 32-bit value
//     kept apart (a result of -EAGAIN beside fiber ids, an id far from the
//     window). Most kinds have fewer than three fields besides the
//     enumerated one (a switch: from, to; a park: none), and a field is
//     often 0 (the idle loop's fiber, worker 0, no name). Per group of 64
//     records, a 64-bit mask per field says which records have it non-zero,
//     with the count of codes and of escapes before the group and the
//     window's base (Group: 64 bytes, 1 per record); the code of record i's
//     field k is codes_[k][rank + popcount(the mask's bits below i)], so a
//     read stays O(1) but for an escape (counted within its group: <= 63).
//     A record with a wider field (a mutex's or queue's address, a huge
//     count), or of a new shape when the table holds 65535, is kept whole
//     beside the columns, found by a binary search over the few such records.
// Reading a record decodes it into an Event (a value, not a reference), so
// `const Event& e = events[i]` and `for (const Event& e : events)` read as
// before; records are changed only through the member functions (appending
// is O(1) amortised; set() that makes a field 0 or non-0 or changes whether
// it escapes, set() that widens an earlier block, and insert(), are O(n): for
// building traces by hand; resize() to fewer records costs what it drops).
// Decoding on demand from the mapped file (Tracy, Perfetto) would take even
// less, but every consumer reads records by index at random (hover, the
// model's causes, filters), and a fixed-size record keeps that O(1).
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <vector>

#include "fiberscope/trace_events.hpp"

namespace fiberscope::trace {

// One record. Its fields are those the record table lists for its kind
// (trace_records.hpp): arg[0..2] hold them in order, skipping the one
// enumerated field (switch reason, schedule how, opcode, group/queue op,
// condition-wake how), which is in `small`. Signed fields (fd, result) are
// stored as int64 bits. fieldValue() and fiberFields() read them by the table.
struct Event {
    std::int64_t time = 0; // nanoseconds since the recording started
    std::uint64_t arg[3] = {0, 0, 0};
    std::uint32_t thread = 0; // index into Trace::threads (ThreadInfo::number is the file's number)
    EventKind kind = EventKind::Mark;
    std::uint8_t small = 0;

    std::int64_t signedArg(int i) const noexcept { return static_cast<std::int64_t>(arg[i]); }
    friend bool operator==(const Event&, const Event&) = default;
};

class EventList {
public:
    static constexpr std::size_t kBlock = 256;

    EventList() = default;
    EventList(std::initializer_list<Event> events) { assign(events.begin(), events.end()); }
    EventList(const std::vector<Event>& events) { assign(events.begin(), events.end()); } // NOLINT: a list by hand
    EventList& operator=(std::initializer_list<Event> events) {
        clear();
        assign(events.begin(), events.end());
        return *this;
    }
    EventList& operator=(const std::vector<Event>& events) {
        clear();
        assign(events.begin(), events.end());
        return *this;
    }

    std::size_t size() const noexcept { return wide_shapes_ ? shape16_.size() : shape8_.size(); }
    bool empty() const noexcept { return size() == 0; }

    std::int64_t time(std::size_t i) const noexcept {
        const Block& b = blocks_[i / kBlock];
        const std::size_t r = i % kBlock;
        if (b.mode == kTime16) return b.base + times16_[b.at[kTime16] + r];
        if (b.mode == kTime32) return b.base + times32_[b.at[kTime32] + r];
        return whole_times_[b.at[kTimeWhole] + r];
    }
    // One field, without decoding the rest.
    EventKind kind(std::size_t i) const noexcept {
        const std::uint16_t shape = shapeAt(i);
        return shape == kWideShape ? wideAt(i).kind : shapes_[shape].kind;
    }
    std::uint32_t thread(std::size_t i) const noexcept {
        const std::uint16_t shape = shapeAt(i);
        return shape == kWideShape ? wideAt(i).thread : shapes_[shape].thread;
    }
    // Whether field k (0..2) of record i is not 0, without decoding it (a
    // bit of its group's mask: the model's look-ahead pass counts switches
    // to a fiber this way).
    bool hasField(std::size_t i, int k) const noexcept {
        if (shapeAt(i) == kWideShape) return wideAt(i).arg[k] != 0;
        return (groups_[i / kGroup].nonzero[k] >> (i % kGroup) & 1) != 0;
    }
    Event operator[](std::size_t i) const noexcept {
        const std::uint16_t shape = shapeAt(i);
        if (shape == kWideShape) {
            Event e = wideAt(i);
            e.time = time(i);
            return e;
        }
        Event e;
        e.time = time(i);
        const Shape& s = shapes_[shape];
        e.thread = s.thread;
        e.small = s.small;
        e.kind = s.kind;
        const Group& g = groups_[i / kGroup];
        const unsigned r = i % kGroup;
        const std::uint64_t below = (std::uint64_t{1} << r) - 1;
        for (int k = 0; k < 3; ++k) {
            const std::uint64_t mask = g.nonzero[k];
            if (mask >> r & 1) {
                const std::uint32_t at = g.rank[k] + static_cast<std::uint32_t>(std::popcount(mask & below));
                e.arg[k] = static_cast<std::uint64_t>(static_cast<std::int64_t>(decode(g, k, at)));
            }
        }
        return e;
    }
    Event front() const noexcept { return (*this)[0]; }
    Event back() const noexcept { return (*this)[size() - 1]; }

    void push_back(const Event& e);
    void reserve(std::size_t n);
    void clear() noexcept;
    // Keeps the first n records (more: appends default records).
    void resize(std::size_t n);
    // Replaces record i.
    void set(std::size_t i, const Event& e);
    // Gives back the growth slack of the field values (how many fields are 0
    // is known only once the records are in).
    void shrink_to_fit();
    // Heap bytes held (by capacity).
    std::size_t memoryBytes() const noexcept;

    class const_iterator {
    public:
        using iterator_category = std::random_access_iterator_tag;
        using value_type = Event;
        using difference_type = std::ptrdiff_t;
        using reference = Event;
        using pointer = void;
        const_iterator() = default;
        const_iterator(const EventList* list, std::size_t i) : list_(list), i_(i) {}
        Event operator*() const noexcept { return (*list_)[i_]; }
        Event operator[](difference_type n) const noexcept { return (*list_)[static_cast<std::size_t>(static_cast<difference_type>(i_) + n)]; }
        const_iterator& operator++() noexcept { return ++i_, *this; }
        const_iterator operator++(int) noexcept { return {list_, i_++}; }
        const_iterator& operator--() noexcept { return --i_, *this; }
        const_iterator operator--(int) noexcept { return {list_, i_--}; }
        const_iterator& operator+=(difference_type n) noexcept { return i_ = static_cast<std::size_t>(static_cast<difference_type>(i_) + n), *this; }
        const_iterator& operator-=(difference_type n) noexcept { return *this += -n; }
        friend const_iterator operator+(const_iterator it, difference_type n) noexcept { return it += n; }
        friend const_iterator operator+(difference_type n, const_iterator it) noexcept { return it += n; }
        friend const_iterator operator-(const_iterator it, difference_type n) noexcept { return it -= n; }
        friend difference_type operator-(const const_iterator& a, const const_iterator& b) noexcept {
            return static_cast<difference_type>(a.i_) - static_cast<difference_type>(b.i_);
        }
        friend bool operator==(const const_iterator& a, const const_iterator& b) noexcept { return a.i_ == b.i_; }
        friend auto operator<=>(const const_iterator& a, const const_iterator& b) noexcept { return a.i_ <=> b.i_; }
        std::size_t index() const noexcept { return i_; }

    private:
        const EventList* list_ = nullptr;
        std::size_t i_ = 0;
    };
    using iterator = const_iterator;
    const_iterator begin() const noexcept { return {this, 0}; }
    const_iterator end() const noexcept { return {this, size()}; }
    // Inserts before `at` (O(n): for building traces by hand).
    void insert(const_iterator at, const Event& e);

    friend bool operator==(const EventList& a, const EventList& b) noexcept;

private:
    // A record's shape: what shape_of_ codes (see the design comment).
    struct Shape {
        std::uint32_t thread = 0;
        EventKind kind = EventKind::Mark;
        std::uint8_t small = 0;
    };
    static constexpr std::uint16_t kWideShape = UINT16_MAX; // the record is kept whole
    static constexpr std::uint8_t kWideShape8 = UINT8_MAX;  // likewise, in a byte
    std::uint16_t shapeCode(const Event& e); // kWideShape: the table is full
    std::uint16_t shapeAt(std::size_t i) const noexcept {
        if (wide_shapes_) return shape16_[i];
        const std::uint8_t shape = shape8_[i];
        return shape == kWideShape8 ? kWideShape : shape;
    }
    void widenShapesFor(std::uint16_t shape); // makes room for `shape`'s code (may allocate)
    void setShape(std::size_t i, std::uint16_t shape) noexcept; // (after widenShapesFor)

    // Where a block keeps its times (see the design comment): modes only
    // widen, 16 -> 32 -> whole.
    static constexpr std::uint8_t kTime16 = 0, kTime32 = 1, kTimeWhole = 2;
    struct Block {
        std::int64_t base = 0; // the block's first time
        // at[m]: how many entries of array m (times16_, times32_,
        // whole_times_) belong to the blocks before this one; its own times
        // are array `mode`'s [at[mode], at[mode] + its records).
        std::uint32_t at[3] = {0, 0, 0};
        std::uint8_t mode = kTime16;
    };

    // Field codes (see the design comment).
    static constexpr std::uint16_t kWindowCode = 0x8000; // codes below: the value itself
    static constexpr std::uint16_t kEscape = 0xFFFF;
    static constexpr std::int64_t kWindowLead = 16383;   // a window opens this far below its first value

    // Records [g * kGroup, (g + 1) * kGroup): bit r of nonzero[k] is set if
    // record g * kGroup + r has field k non-0; rank[k]: how many codes of
    // field k come before the group (its first code's index in codes_[k]);
    // escape_rank[k]: likewise in escapes_[k]; base[k]: the window of field
    // k, opened (bit k of has_base) by its first value that needed one.
    static constexpr std::size_t kGroup = 64;
    struct Group {
        std::uint64_t nonzero[3] = {0, 0, 0};
        std::uint32_t rank[3] = {0, 0, 0};
        std::uint32_t escape_rank[3] = {0, 0, 0};
        std::int32_t base[3] = {0, 0, 0};
        std::uint8_t has_base = 0;
    };

    template <class It>
    void assign(It first, It last) {
        reserve(static_cast<std::size_t>(std::distance(first, last)));
        for (; first != last; ++first) push_back(*first);
    }
    std::int32_t decode(const Group& g, int k, std::uint32_t at) const noexcept {
        const std::uint16_t code = codes_[k][at];
        if (code < kWindowCode) return code;
        if (code != kEscape) return static_cast<std::int32_t>(g.base[k] + (code - kWindowCode));
        return escapes_[k][g.escape_rank[k] + escapesBetween(k, g.rank[k], at)];
    }
    std::uint32_t escapesBetween(int k, std::size_t from, std::size_t to) const noexcept; // codes kEscape in codes_[k][from, to)
    std::uint16_t encode(Group& g, int k, std::int32_t value) noexcept; // may open the group's window
    Event wideAt(std::size_t i) const noexcept;
    std::size_t blockRecords(std::size_t b) const noexcept; // records in block b
    void widenBlock(std::size_t b, std::uint8_t mode);
    void setTime(std::size_t i, std::int64_t time);
    void setRest(std::size_t i, const Event& e);
    void setField(std::size_t i, int k, std::int32_t value);
    std::size_t rankAt(std::size_t i, int k) const noexcept;       // field k's codes before record i
    std::size_t escapeRankAt(std::size_t i, int k) const noexcept; // field k's escapes before record i

    std::vector<Block> blocks_;
    std::vector<std::uint16_t> times16_;    // time - its block's base, in 16-bit blocks
    std::vector<std::uint32_t> times32_;    // likewise in 32-bit blocks
    std::vector<std::int64_t> whole_times_; // the times of whole blocks
    bool wide_shapes_ = false;              // the codes are in shape16_, not shape8_
    std::vector<std::uint8_t> shape8_;      // per record: its shape's index in shapes_, or kWideShape8
    std::vector<std::uint16_t> shape16_;    // per record: its shape's index in shapes_, or kWideShape
    std::vector<Shape> shapes_;             // the shapes seen, in the order first seen
    std::vector<std::uint64_t> shape_keys_; // (key, index) of each shape, by key: shapeCode's look-up
    std::vector<Group> groups_;             // per kGroup records: which fields are not 0, and where
    std::vector<std::uint16_t> codes_[3];   // field k's non-zero values' codes, by record
    std::vector<std::int32_t> escapes_[3];  // the values coded kEscape, by record (sign-extended when read)
    std::vector<std::uint32_t> wide_index_; // the records kept whole, by index
    std::vector<Event> wide_;               // parallel to wide_index_ (time unused)
};

} // namespace fiberscope::trace
