// Lanes: the rows of intervals the timeline draws (one per thread, one per
// fiber), and what is precomputed on them once so frames stay cheap.
//
// Design: a lane is a sorted list of non-overlapping intervals, plus
//   * levels of detail (lod.hpp): for granularities g = 1, 16, 256, ... ns,
//     the runs of consecutive intervals whose starts fall in the same g-ns
//     bucket, merged into one Block. Only runs of two or more intervals are
//     stored (an interval alone in its bucket is read from `intervals`), and a
//     level whose runs equal the previous level's is not stored at all, so the
//     memory stays near the size of the lane itself;
//   * per-state time prefix sums every kPrefixStride intervals, so the time a
//     lane spent in each state over any range costs O(log n + stride).
//   Both are held behind the one pointer IntervalList keeps for what lanes
//   rarely have (IntervalList::index): most lanes are short fiber lanes
//   with neither. A stored run keeps only what its member
//   intervals cannot give back (StoredRun: 32 bytes, a Block is 56; stored
//   packed in 20, StoredRunCodec).
// Plain structs; the functions that fill and query them live in lod.hpp (and
// the viewer's range statistics, viewer/src/model/range_stats.hpp, read the
// prefix sums).
//
// Memory (issue 13: the model held ~140 bytes per trace event, the file ~5):
// the intervals are among the model's largest parts (the benchmark's trace
// makes ~0.5 thread and ~0.6 fiber intervals per event), so IntervalList
// stores each in 16 bytes, not an Interval's 40, and hands out Interval
// values. What the 40 held that 16 need not:
//   * the end: a lane's intervals follow each other (a thread or fiber
//     leaves one state as it enters the next), so an item's end is the next
//     item's start; the list keeps the last item's end, and the few items
//     followed by a gap (a thread stopped and started again, a fiber that
//     left the loop) keep theirs in a side list;
//   * 64-bit start: 48 bits (+-39 hours from the recording's start) share a
//     word with the state, the wait reason and the thread (8 bits: -1 and
//     trace threads 0..254, the loop's workers);
//   * a 64-bit fiber id (runtime ids count up from 1: 32 bits).
// An interval that does not fit (a crafted trace's thread 70000, an id past
// 2^32, a time 40 hours in) is stored whole in the side list, so nothing is
// lost; the list keeps the side list's pointer in its items' block header
// (8 bytes more in a block of its own; a lane in the store, most fiber
// lanes, pays nothing for it). The list itself is 16 bytes. A read is a
// few instructions more than a vector's; the level-of-detail walk keeps
// reads to O(pixels) per frame.
//
// Fiber lanes (issue 13, the benchmark's "fiber lane intervals": a fiber
// every ~6.5 events, 3 or 6 intervals each): a block of its own per lane
// costs ~90 bytes with the allocator's rounding and header. When the model is
// closed, the lanes that fit a compact format move into one LaneStore block
// owned by the Timeline (Timeline::fiber_store) and each list borrows its
// slice: 16 bytes of slice header and 8 bytes an item, with no per-lane
// allocation or capacity. An 8-byte item keeps what differs between a
// lane's items: the start as a 32-bit offset from the slice's start base,
// the cause as a 17-bit offset from its cause base (all ones: kNoEvent),
// the thread + 1 (8 bits), the state, the reason and the gap flag (always
// clear: a lane with gaps has a side list and stays out of the store). The
// fiber is the slice's (a fiber lane's items all name its own fiber). A
// lane whose starts span under 65.5 us and causes under 63 records, on
// threads 0..6 (a short-lived fiber of a busy program: most of them), is
// narrow: 4 bytes an item (a 16-bit start offset, a 6-bit cause offset,
// 3-bit thread + 1). A lane whose items do not fit (one spanning 4.3 s or
// more, or 2^17 events or more, or naming more than one fiber or a fiber
// past 2^32, or holding wide items, gaps or an index: a side list, or of
// 32768 items or more) keeps its own block of 16-byte items (compacted if
// long), so nothing is lost. A borrowed list reads as an owned one; copying
// it (or a Timeline) copies the items into a block of the copy's own, and
// appending to it first does the same, so a store only ever backs the
// lists it was written for, and moving a Timeline moves the store's block
// by pointer, which keeps the slices where they are.
//
// Long lanes (issue 13, the benchmark's "thread lane intervals": a thread
// lane holds an interval for every ~2 of its records, millions of them, and
// names a different fiber in each): when the model is closed, a lane of
// kChunk items or more is compacted (compact()) into chunks of kChunk items.
// A chunk whose items share a thread, start within 2^28 ns (268 ms) of its
// least start, have causes within 8190 of its least cause and fibers (but
// fiber 0, the idle loop) within 65534 of its least fiber, and hold no wide
// item, keeps three words of bases and a word an item: the start's offset,
// the state, the reason, the gap flag and the cause's and fiber's offsets.
// Any other chunk keeps its 16-byte items, so nothing is lost and a sparse
// or odd stretch costs what it did. A busy thread's 64 intervals span well
// under a millisecond and a few hundred records, so nearly every chunk is
// compact: ~8.4 bytes an interval instead of 16. Reads stay O(1) (the chunk
// is item / kChunk; a table gives where each begins). Appending to a
// compacted list first copies it back into a block of 16-byte items (as
// for a borrowed one): the model is not appended to once closed.
#pragma once

#include <array>
#include <cstddef>
#include <compare>
#include <cstdlib>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "fiberscope/analysis/packed_list.hpp"

namespace fiberscope::analysis {

// What a lane is doing during an interval. Thread lanes use Running (a fiber
// runs), Idle (the idle loop runs: looking for work, not in the kernel) and
// Parked (waiting in io_uring_enter). Fiber lanes use Ready (runnable, not
// running), Running (on `Interval::thread`), Waiting (see WaitReason) and
// Finished (from the moment its function returned to the end of the trace).
enum class State : std::uint8_t { Running, Idle, Parked, Ready, Waiting, Finished };
inline constexpr int kStateCount = 6;

// Why a fiber waits (State::Waiting only; None otherwise).
enum class WaitReason : std::uint8_t {
    None,
    Io,        // a ring operation (read, write, accept, ...)
    Timer,     // IORING_OP_TIMEOUT (sleep, deadlines)
    Mutex,     // Mutex::lock found it locked
    Condition, // Condition::wait
    Await,     // Future::await of another fiber
    Select,    // waiting for the first of several fibers
    Exit,      // the main fiber waiting for the loop to shut down
};

inline constexpr std::uint32_t kNoEvent = UINT32_MAX; // "no event" index
inline constexpr std::size_t kNone = SIZE_MAX;        // "nothing found" index

struct Interval {
    std::int64_t start = 0; // ns since the recording started
    std::int64_t end = 0;   // exclusive; end >= start (zero-length intervals exist)
    std::uint64_t fiber = 0; // thread lane: the fiber running (0: none); fiber lane: the fiber itself
    std::uint32_t cause = kNoEvent; // index in Trace::events of the event that began the interval
    std::int32_t thread = -1;       // trace thread number: the lane's thread (thread lanes), the thread
                                    // running it / whose ready queue holds it / it waited on (fiber lanes)
    State state = State::Idle;
    WaitReason reason = WaitReason::None;

    std::int64_t duration() const noexcept { return end - start; }
};

struct LaneIndex;

// A lane's intervals, packed (see the design comment above). Reads return
// Interval values, so `const Interval& iv = lane.intervals[k]` and
// `for (const Interval& iv : lane.intervals)` read as from a vector; the only
// way to change the list's intervals is push_back (its builder's): how they
// are stored changes when the model is closed (compact, moveToStore).
class IntervalList {
public:
    using const_iterator = IndexIterator<IntervalList, Interval>;

    IntervalList() = default;
    IntervalList(std::initializer_list<Interval> intervals) { // a lane by hand (tests)
        reserve(intervals.size());
        for (const Interval& iv : intervals) push_back(iv);
    }
    IntervalList(const IntervalList& other);
    IntervalList(IntervalList&&) noexcept = default;
    IntervalList& operator=(const IntervalList& other);
    IntervalList& operator=(IntervalList&&) noexcept = default;

    std::size_t size() const noexcept { return items_.size(); }
    bool empty() const noexcept { return items_.empty(); }
    std::size_t capacity() const noexcept { return items_.capacity(); }
    void reserve(std::size_t n) { items_.reserve(n); }
    void shrink_to_fit();
    void clear() noexcept;
    // Appends `iv`, which starts at or after the end of the last one.
    void push_back(const Interval& iv);

    Interval operator[](std::size_t k) const noexcept;
    Interval front() const noexcept { return (*this)[0]; }
    Interval back() const noexcept { return (*this)[items_.size() - 1]; }
    // One field, without decoding the rest.
    std::int64_t startOf(std::size_t k) const noexcept;
    std::int64_t endOf(std::size_t k) const noexcept;
    State stateOf(std::size_t k) const noexcept {
        const Packed p = items_.at(k);
        return p.bits & kWide ? wideAt(k).state : static_cast<State>((p.bits >> kStateShift) & 7);
    }
    std::uint32_t causeOf(std::size_t k) const noexcept {
        const Packed p = items_.at(k);
        return p.bits & kWide ? wideAt(k).cause : p.cause;
    }

    const_iterator begin() const noexcept;
    const_iterator end() const noexcept;

    // Heap bytes by capacity: the packed items (0 while they are in a
    // LaneStore, which counts them); the side list (whole intervals that do
    // not pack, and the ends of items followed by a gap).
    std::size_t itemBytes() const noexcept { return items_.blockBytes(); }
    std::size_t wideBytes() const noexcept {
        const Side* side = items_.side();
        return side ? sizeof(Side) + side->whole.capacity() * sizeof(Side::Whole) + side->ends.capacity() * sizeof(Side::End) : 0;
    } // (the index's bytes are counted apart: footprint.hpp's levels of detail)
    std::size_t wideCount() const noexcept { return items_.side() ? items_.side()->whole.size() : 0; }

    // The lane's levels of detail and prefix sums (lod.hpp: buildLaneIndex),
    // if built: kept in the list's side block, so that a short fiber lane
    // pays one pointer for everything it rarely has, not one per part.
    const LaneIndex* index() const noexcept { return items_.side() ? items_.side()->index.get() : nullptr; }
    void setIndex(std::unique_ptr<LaneIndex> index);

    // What the list's owner keeps out of line with it, in the side block: a
    // fiber lane's rare block (FiberLane), so that the millions of fiber
    // lanes with none pay no pointer of their own for it. Copied with the
    // list (clone), kept by shrink_to_fit; clear() drops it. A list holding
    // one has a side block, so it never goes to a LaneStore (storeWords() is
    // 0): it owns a block of its own, even when empty.
    struct Attached {
        virtual ~Attached() = default;
        virtual std::unique_ptr<Attached> clone() const = 0;
    };
    const Attached* attached() const noexcept {
        const Side* side = items_.side();
        return side ? side->attached.get() : nullptr;
    }
    Attached* attached() noexcept {
        const Side* side = items_.side();
        return side ? side->attached.get() : nullptr;
    }
    // Attaches `a` (replacing what was attached); on a throw nothing changes.
    void attach(std::unique_ptr<Attached> a) { side().attached = std::move(a); }

    // The compact format (see the design comment above): how many words of
    // a LaneStore the items take in it, 0 if they do not fit (or there are
    // none). moveToStore writes them to `slice` (that many words, in a store
    // that outlives this list's reads) and frees the list's own block.
    std::size_t storeWords() const noexcept;
    void moveToStore(std::uint64_t* slice) noexcept;
    bool inStore() const noexcept { return items_.borrowed(); }

    // Compacts a long owned list into chunks (see the design comment above);
    // a list shorter than kChunk, or in a store, is left as it is.
    static constexpr std::size_t kChunk = 64;
    void compact();
    bool compacted() const noexcept { return items_.chunked(); }

private:
    // An item: `bits` holds the start (its low 48 bits, sign-extended), the
    // state, the wait reason, the thread + 1 and two flags (kGap: its end is
    // in the side list, not the next item's start; kWide: the whole interval
    // is in the side list).
    struct Packed {
        std::uint64_t bits = 0;
        std::uint32_t cause = kNoEvent;
        std::uint32_t fiber = 0;
    };
    static_assert(sizeof(Packed) == 16);
    static_assert(std::is_trivially_copyable_v<Packed>);
    static constexpr int kStartBits = 48;
    static constexpr int kStateShift = 48;  // 3 bits
    static constexpr int kReasonShift = 51; // 3 bits
    static constexpr int kThreadShift = 54; // 8 bits: thread + 1
    static constexpr std::uint64_t kGap = std::uint64_t{1} << 62;
    static constexpr std::uint64_t kWide = std::uint64_t{1} << 63;
    static constexpr std::int64_t kMaxStart = (std::int64_t{1} << (kStartBits - 1)) - 1;
    static std::int64_t startBits(std::uint64_t bits) noexcept {
        return static_cast<std::int64_t>(bits << (64 - kStartBits)) >> (64 - kStartBits);
    }
    // The compact format, in a LaneStore slice: word 0 holds the narrow flag
    // (its top bit), the item count (the 15 bits below) and the start base
    // (its low 48, sign-extended as a Packed start), word 1 the fiber (high
    // 32) and the cause base (low 32); then an item a word: the start's
    // offset from the base in the low 32 bits, then these fields. A narrow
    // slice (a fiber whose life spans under 65.5 us and 63 records, on
    // threads 0..6: most fibers of a busy program) holds an item in half a
    // word (the low half first): the start's offset in 16 bits, then the
    // kNarrow fields; smallItem reads either as the word above.
    static constexpr int kSmallCauseShift = 32;  // 17 bits: cause - cause base; kSmallNoCause: kNoEvent
    static constexpr int kSmallThreadShift = 49; // 8 bits: thread + 1
    static constexpr int kSmallStateShift = 57;  // 3 bits
    static constexpr int kSmallReasonShift = 60; // 3 bits
    static constexpr std::uint64_t kSmallGap = std::uint64_t{1} << 63;
    static constexpr std::uint32_t kSmallNoCause = (1u << 17) - 1;
    static constexpr std::size_t kSmallHeader = 2;          // words before the items
    static constexpr std::size_t kSmallMaxItems = 0x7fff;   // the count's 15 bits
    static constexpr std::uint64_t kSmallNarrow = std::uint64_t{1} << 63; // in word 0
    static constexpr int kNarrowCauseShift = 16;  // 6 bits: cause - cause base; kNarrowNoCause: kNoEvent
    static constexpr int kNarrowThreadShift = 22; // 3 bits: thread + 1
    static constexpr int kNarrowStateShift = 25;  // 3 bits
    static constexpr int kNarrowReasonShift = 28; // 3 bits
    static constexpr std::uint32_t kNarrowGap = 1u << 31;
    static constexpr std::uint32_t kNarrowNoCause = (1u << 6) - 1;
    static std::size_t sliceCount(const std::uint64_t* slice) noexcept { return static_cast<std::size_t>((slice[0] >> kStartBits) & kSmallMaxItems); }
    static std::size_t sliceWords(const std::uint64_t* slice) noexcept {
        const std::size_t n = sliceCount(slice);
        return kSmallHeader + (slice[0] & kSmallNarrow ? (n + 1) / 2 : n);
    }
    // Item k of a slice, in the (not narrow) item word's layout.
    static std::uint64_t smallItem(const std::uint64_t* slice, std::size_t k) noexcept {
        if (!(slice[0] & kSmallNarrow)) return slice[kSmallHeader + k];
        const auto v = static_cast<std::uint32_t>(slice[kSmallHeader + k / 2] >> (32 * (k & 1)));
        const std::uint32_t cause = (v >> kNarrowCauseShift) & kNarrowNoCause;
        return (v & 0xffff) | std::uint64_t{cause == kNarrowNoCause ? kSmallNoCause : cause} << kSmallCauseShift |
               std::uint64_t{(v >> kNarrowThreadShift) & 7} << kSmallThreadShift | std::uint64_t{(v >> kNarrowStateShift) & 7} << kSmallStateShift |
               std::uint64_t{(v >> kNarrowReasonShift) & 7} << kSmallReasonShift | (v & kNarrowGap ? kSmallGap : 0);
    }
    // How a list would go to a store: 0 it does not fit, else the words it takes (narrow: whether narrow).
    std::size_t storeFormat(bool& narrow) const noexcept;
    // A compact chunk (compact()): words 0..2 hold the start base, the
    // cause base (low 32) and fiber base (high 32), and the thread + 1 (low
    // 8 bits); then an item a word: the start's offset in the low 28 bits,
    // then these fields.
    static constexpr int kChunkStartBits = 28;
    static constexpr int kChunkStateShift = 28;  // 3 bits
    static constexpr int kChunkReasonShift = 31; // 3 bits
    static constexpr std::uint64_t kChunkGap = std::uint64_t{1} << 34;
    static constexpr int kChunkCauseShift = 35;  // 13 bits: cause - cause base; kChunkNoCause: kNoEvent
    static constexpr int kChunkFiberShift = 48;  // 16 bits: 0: fiber 0, else fiber - fiber base + 1
    static constexpr std::uint32_t kChunkNoCause = (1u << 13) - 1;
    static constexpr std::size_t kChunkHeader = 3;
    // The chunks of a compacted list: chunk c's words begin at
    // words[at[c] & ~kCompactChunk]; a chunk without kCompactChunk holds two
    // words an item (a Packed's bits, then its cause and fiber).
    struct Side;
    struct Chunks {
        static constexpr std::uint32_t kCompactChunk = 1u << 31;
        std::uint32_t size = 0;
        std::vector<std::uint32_t> at;
        std::vector<std::uint64_t> words;
        std::unique_ptr<Side> side; // the list's side block, if any

        Chunks() = default;
        Chunks(const Chunks& other);
        ~Chunks();
    };
    // Item k of a compacted list as a 16-byte item.
    static Packed chunkItem(const Chunks& chunks, std::size_t k) noexcept;
    static std::int64_t chunkStart(const Chunks& chunks, std::size_t k) noexcept;
    // Item k of a slice as a 16-byte item (what a copy of the list holds).
    static Packed widen(const std::uint64_t* slice, std::size_t k) noexcept;
    struct Side {
        using Whole = std::pair<std::uint32_t, Interval>; // by item index
        using End = std::pair<std::uint32_t, std::int64_t>; // a kGap item's end, by item index
        std::vector<Whole> whole;
        std::vector<End> ends;
        std::unique_ptr<LaneIndex> index; // see index()
        std::unique_ptr<Attached> attached; // see attached()

        Side() = default;
        Side(const Side& other);
        ~Side();
    };

    // The items: a vector whose size and capacity (32 bits each: a lane has
    // fewer than 2^32 intervals, as a trace has fewer than 2^32 events) and
    // side block pointer sit in its heap block, just before the items, so
    // the list holds one pointer (8 bytes in each of millions of fiber
    // lanes, where a pointer of its own to the side block cost 8 more).
    // Grown by doubling, trimmed by shrink_to_fit. A side block belongs to
    // a list with a block: a non-empty list, or one with something attached
    // (attached()), which keeps a block of at least one item.
    //
    // Or borrowed: `data_` then points at a slice of a LaneStore (compact
    // format, above), tagged by its low bit (a slice is 8-aligned); the list
    // frees nothing, and owns a block again (own()) before it changes. A
    // list with a side block never goes to a store (storeWords() is 0).
    //
    // Or chunked: `data_` then points at a Chunks (compact(), above) that
    // the list owns, tagged by bit 1, which holds the side block; a copy
    // copies it, and the list owns a block of 16-byte items again (own())
    // before it changes.
    class Items {
    public:
        Items() = default;
        Items(const Items& other);
        Items(Items&& other) noexcept : data_(std::exchange(other.data_, nullptr)) {}
        Items& operator=(const Items& other) { return *this = Items(other); }
        Items& operator=(Items&& other) noexcept {
            std::swap(data_, other.data_);
            return *this;
        }
        ~Items() { release(); }

        bool borrowed() const noexcept { return (reinterpret_cast<std::uintptr_t>(data_) & kSliceTag) != 0; }
        bool chunked() const noexcept { return (reinterpret_cast<std::uintptr_t>(data_) & kChunksTag) != 0; }
        bool owned() const noexcept { return (reinterpret_cast<std::uintptr_t>(data_) & (kSliceTag | kChunksTag)) == 0; }
        // The slice (borrowed only).
        const std::uint64_t* slice() const noexcept {
            return reinterpret_cast<const std::uint64_t*>(reinterpret_cast<std::uintptr_t>(data_) & ~std::uintptr_t{kSliceTag});
        }
        // The chunks (chunked only).
        const Chunks& chunks() const noexcept {
            return *reinterpret_cast<const Chunks*>(reinterpret_cast<std::uintptr_t>(data_) & ~std::uintptr_t{kChunksTag});
        }
        std::size_t size() const noexcept {
            if (!data_) return 0;
            if (borrowed()) return sliceCount(slice());
            return chunked() ? chunks().size : header()->size;
        }
        bool empty() const noexcept { return size() == 0; }
        std::size_t capacity() const noexcept { return !owned() ? size() : data_ ? header()->capacity : 0; }
        // The side block (nullptr: none).
        Side* side() const noexcept {
            if (!data_ || borrowed()) return nullptr;
            return chunked() ? chunks().side.get() : header()->side;
        }
        // The side block, made if there is none (a non-empty list only).
        Side& makeSide();
        // Room for one more item, without changing the items (push_back then cannot throw).
        void grow() {
            if (!owned()) own(size() + 1);
            const std::size_t n = size(), cap = capacity();
            if (n == cap) reserve(cap ? 2 * cap : 1);
        }
        // Item k as a 16-byte item, whichever the storage.
        Packed at(std::size_t k) const noexcept {
            if (owned()) return data_[k];
            return borrowed() ? widen(slice(), k) : chunkItem(chunks(), k);
        }
        const Packed& operator[](std::size_t k) const noexcept { return data_[k]; } // owned only
        Packed& back() noexcept { return data_[header()->size - 1]; }               // owned only
        void push_back(const Packed& p) {
            grow();
            const std::size_t n = size();
            data_[n] = p;
            header()->size = static_cast<std::uint32_t>(n + 1);
        }
        void reserve(std::size_t n);
        void shrink_to_fit();
        void clear() noexcept; // (and the side block)
        std::size_t blockBytes() const noexcept;
        // Borrows `slice` (its items are these, in the compact format),
        // freeing the own block (which holds no side block).
        void borrow(std::uint64_t* slice) noexcept {
            release();
            data_ = reinterpret_cast<Packed*>(reinterpret_cast<std::uintptr_t>(slice) | 1);
        }
        // Takes `chunks` (new'd: the list deletes it), moving the side block
        // into it and freeing the own block.
        void adopt(Chunks* chunks) noexcept {
            if (owned() && data_) chunks->side.reset(std::exchange(header()->side, nullptr));
            release();
            data_ = reinterpret_cast<Packed*>(reinterpret_cast<std::uintptr_t>(chunks) | kChunksTag);
        }
        // Copies borrowed or chunked items into an own block of capacity `n` (>= size).
        void own(std::size_t n);

    private:
        struct Header {
            std::uint32_t size = 0;
            std::uint32_t capacity = 0;
            Side* side = nullptr; // owned
        };
        static_assert(sizeof(Header) % alignof(Packed) == 0);
        static constexpr std::uintptr_t kSliceTag = 1, kChunksTag = 2; // (slices and Chunks are 8-aligned)
        Header* header() const noexcept { return reinterpret_cast<Header*>(reinterpret_cast<char*>(data_) - sizeof(Header)); }
        void release() noexcept;
        void reallocate(std::size_t n);
        // The items, after a Header in the same block; nullptr: no block;
        // kSliceTag set: a slice; kChunksTag set: a Chunks.
        Packed* data_ = nullptr;
    };

    const Interval& wideAt(std::size_t k) const noexcept;
    std::int64_t gapEnd(std::size_t k) const noexcept;
    Side& side() { return items_.makeSide(); }

    Items items_; // and the side block
    std::int64_t last_end_ = 0; // the last item's end
};


inline IntervalList::const_iterator IntervalList::begin() const noexcept { return {this, 0}; }
inline IntervalList::const_iterator IntervalList::end() const noexcept { return {this, items_.size()}; }

inline IntervalList::Packed IntervalList::widen(const std::uint64_t* slice, std::size_t k) noexcept {
    const std::uint64_t w = smallItem(slice, k);
    const std::int64_t start = startBits(slice[0]) + static_cast<std::int64_t>(static_cast<std::uint32_t>(w));
    const auto cause = static_cast<std::uint32_t>((w >> kSmallCauseShift) & kSmallNoCause);
    Packed p;
    // (The start fitted 48 bits when the slice was written: the Packed field holds it.)
    p.bits = (static_cast<std::uint64_t>(start) & ((std::uint64_t{1} << kStartBits) - 1)) |
             ((w >> kSmallStateShift) & 7) << kStateShift | ((w >> kSmallReasonShift) & 7) << kReasonShift |
             ((w >> kSmallThreadShift) & 0xff) << kThreadShift | (w & kSmallGap ? kGap : 0);
    p.cause = cause == kSmallNoCause ? kNoEvent : static_cast<std::uint32_t>(slice[1]) + cause;
    p.fiber = static_cast<std::uint32_t>(slice[1] >> 32);
    return p;
}

inline IntervalList::Packed IntervalList::chunkItem(const Chunks& chunks, std::size_t k) noexcept {
    const std::uint32_t at = chunks.at[k / kChunk];
    const std::uint64_t* w = chunks.words.data() + (at & ~Chunks::kCompactChunk);
    const std::size_t r = k % kChunk;
    Packed p;
    if (!(at & Chunks::kCompactChunk)) {
        p.bits = w[2 * r];
        p.cause = static_cast<std::uint32_t>(w[2 * r + 1]);
        p.fiber = static_cast<std::uint32_t>(w[2 * r + 1] >> 32);
        return p;
    }
    const std::uint64_t item = w[kChunkHeader + r];
    const std::int64_t start = static_cast<std::int64_t>(w[0]) + static_cast<std::int64_t>(item & ((std::uint64_t{1} << kChunkStartBits) - 1));
    // (The start fitted 48 bits when the chunk was written: the Packed field holds it.)
    p.bits = (static_cast<std::uint64_t>(start) & ((std::uint64_t{1} << kStartBits) - 1)) |
             ((item >> kChunkStateShift) & 7) << kStateShift | ((item >> kChunkReasonShift) & 7) << kReasonShift |
             (w[2] & 0xff) << kThreadShift | (item & kChunkGap ? kGap : 0);
    const auto cause = static_cast<std::uint32_t>((item >> kChunkCauseShift) & kChunkNoCause);
    p.cause = cause == kChunkNoCause ? kNoEvent : static_cast<std::uint32_t>(w[1]) + cause;
    const auto fiber = static_cast<std::uint32_t>(item >> kChunkFiberShift);
    p.fiber = fiber == 0 ? 0 : static_cast<std::uint32_t>(w[1] >> 32) + fiber - 1;
    return p;
}

inline std::int64_t IntervalList::chunkStart(const Chunks& chunks, std::size_t k) noexcept {
    const std::uint32_t at = chunks.at[k / kChunk];
    const std::uint64_t* w = chunks.words.data() + (at & ~Chunks::kCompactChunk);
    const std::size_t r = k % kChunk;
    if (at & Chunks::kCompactChunk)
        return static_cast<std::int64_t>(w[0]) + static_cast<std::int64_t>(w[kChunkHeader + r] & ((std::uint64_t{1} << kChunkStartBits) - 1));
    return startBits(w[2 * r]); // (a wide item's start is read by the caller)
}

inline std::int64_t IntervalList::startOf(std::size_t k) const noexcept {
    if (items_.borrowed()) {
        const std::uint64_t* s = items_.slice();
        return startBits(s[0]) + static_cast<std::int64_t>(static_cast<std::uint32_t>(smallItem(s, k)));
    }
    if (items_.chunked()) {
        const Chunks& c = items_.chunks();
        if (c.at[k / kChunk] & Chunks::kCompactChunk) return chunkStart(c, k);
        const std::uint64_t bits = chunkItem(c, k).bits;
        return bits & kWide ? wideAt(k).start : startBits(bits);
    }
    const std::uint64_t bits = items_[k].bits;
    return bits & kWide ? wideAt(k).start : startBits(bits);
}

inline std::int64_t IntervalList::endOf(std::size_t k) const noexcept {
    if (items_.borrowed()) {
        if (k + 1 == items_.size()) return last_end_;
        if (smallItem(items_.slice(), k) & kSmallGap) return gapEnd(k);
        return startOf(k + 1);
    }
    const std::uint64_t bits = items_.chunked() ? chunkItem(items_.chunks(), k).bits : items_[k].bits;
    if (bits & kWide) return wideAt(k).end;
    if (k + 1 == items_.size()) return last_end_;
    if (bits & kGap) return gapEnd(k);
    return startOf(k + 1);
}

inline Interval IntervalList::operator[](std::size_t k) const noexcept {
    const Packed p = items_.at(k);
    if (p.bits & kWide) return wideAt(k);
    Interval iv;
    iv.start = startBits(p.bits);
    iv.end = endOf(k);
    iv.fiber = p.fiber;
    iv.cause = p.cause;
    iv.thread = static_cast<std::int32_t>((p.bits >> kThreadShift) & 0xff) - 1;
    iv.state = static_cast<State>((p.bits >> kStateShift) & 7);
    iv.reason = static_cast<WaitReason>((p.bits >> kReasonShift) & 7);
    return iv;
}

// One block of lanes' items in the compact format (IntervalList::moveToStore),
// owned by the Timeline whose fiber lanes borrow slices of it. Moving it
// moves the block by pointer, so the slices stay valid. A copy is empty: a
// copied list copies a borrowed list's items into a block of its own (the
// lists of a copied Timeline do), so no list ever reads another store.
class LaneStore {
public:
    LaneStore() = default;
    explicit LaneStore(std::size_t words)
        : words_(words ? std::make_unique_for_overwrite<std::uint64_t[]>(words) : nullptr), size_(words) {}
    LaneStore(const LaneStore&) noexcept {}
    LaneStore(LaneStore&&) noexcept = default;
    // (Assigned after the lists that borrowed from it were: they read it no more.)
    LaneStore& operator=(const LaneStore& other) noexcept {
        if (this != &other) *this = LaneStore();
        return *this;
    }
    LaneStore& operator=(LaneStore&&) noexcept = default;

    std::uint64_t* data() noexcept { return words_.get(); }
    std::size_t bytes() const noexcept { return size_ * sizeof(std::uint64_t); }

private:
    std::unique_ptr<std::uint64_t[]> words_;
    std::size_t size_ = 0; // words
};

// A run of consecutive intervals drawn as one: what visibleBlocks returns, and
// what the levels of detail store. A block of one interval has count 1.
struct Block {
    std::int64_t start = 0;       // the first member's start
    std::int64_t end = 0;         // the last member's end
    std::int64_t busy = 0;        // sum of the members' durations
    std::int64_t dominant_ns = 0; // (approximate) time of the dominant fiber/state among the members
    std::uint64_t fiber = 0;      // the dominant member's fiber
    std::uint32_t first = 0;      // index of the first member in Lane::intervals
    std::uint32_t count = 0;      // number of member intervals
    std::int32_t thread = -1;     // the dominant member's thread
    State state = State::Idle;    // the dominant member's state
    WaitReason reason = WaitReason::None;
    std::uint32_t dominant = 0;   // index of a member with the dominant fiber, state, reason and thread
};

// A stored run: a Block less what its members give back (start: the first
// member's; end: the last member's; fiber, thread, state, reason: the
// `dominant` member's), 32 bytes instead of 56.
struct StoredRun {
    std::int64_t busy = 0;
    std::int64_t dominant_ns = 0;
    std::uint32_t first = 0;
    std::uint32_t count = 0;
    std::uint32_t dominant = 0;
};

// Stored runs packed (packed_list.hpp): 20 bytes, not 32 (issue 13: the
// levels of detail held ~6 bytes per trace event). A run's members start
// within one bucket of its level, so its busy and dominant times fit 32 bits
// but for a run whose last member lasts over 4.29 s, which is kept whole.
struct StoredRunCodec {
    using Value = StoredRun;
    struct Packed {
        std::uint32_t busy = 0;
        std::uint32_t dominant_ns = 0;
        std::uint32_t first = 0;    // a wide run: the index of its value
        std::uint32_t count = 0;    // 0: wide (a stored run has two members or more)
        std::uint32_t dominant = 0;
    };
    static_assert(sizeof(Packed) == 20);
    static bool pack(const StoredRun& r, Packed& p) noexcept {
        if (r.busy < 0 || r.busy >= UINT32_MAX || r.dominant_ns < 0 || r.dominant_ns >= UINT32_MAX || r.count == 0) return false;
        p = Packed{static_cast<std::uint32_t>(r.busy), static_cast<std::uint32_t>(r.dominant_ns), r.first, r.count, r.dominant};
        return true;
    }
    static StoredRun unpack(const Packed& p) noexcept { return StoredRun{p.busy, p.dominant_ns, p.first, p.count, p.dominant}; }
    static Packed wide(std::uint32_t index) noexcept { return Packed{0, 0, index, 0, 0}; }
    static bool isWide(const Packed& p, std::uint32_t& index) noexcept {
        index = p.first;
        return p.count == 0;
    }
};

struct LodLevel {
    std::int64_t granularity = 1;          // ns: members' starts share floor(start / granularity)
    PackedList<StoredRunCodec> runs;       // the runs of >= 2 intervals, by `first`
};

inline constexpr std::size_t kPrefixStride = 64;
using StateTimes = std::array<std::int64_t, kStateCount>;

// What buildLaneIndex precomputes on a long lane (none on a short one).
struct LaneIndex {
    std::vector<LodLevel> levels; // by granularity
    // prefix[k][s]: time intervals [0, k * kPrefixStride) spent in state s
    // (only for lanes longer than kPrefixStride).
    std::vector<StateTimes> prefix;
};

struct Lane {
    IntervalList intervals; // sorted by start, non-overlapping; holds the lane's index (IntervalList::index)

    // The levels of detail and prefix sums (empty when not built or short).
    const std::vector<LodLevel>& levels() const noexcept { return intervals.index() ? intervals.index()->levels : none().levels; }
    const std::vector<StateTimes>& prefix() const noexcept { return intervals.index() ? intervals.index()->prefix : none().prefix; }

private:
    static const LaneIndex& none() noexcept {
        static const LaneIndex empty;
        return empty;
    }
};

const char* stateName(State state) noexcept;
const char* waitReasonName(WaitReason reason) noexcept;

// The interval the lane is in at `time`: the last one starting at or before
// it, if `time` is before its end (or it is the lane's last interval and
// `time` is its end). Ties resolve to the state after all events at `time`.
std::size_t intervalAt(const Lane& lane, std::int64_t time) noexcept;

} // namespace fiberscope::analysis
