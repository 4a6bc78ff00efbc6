// The model of a trace: what every thread and fiber was doing when, and how
// work moved between them. Computed from a loaded Trace by buildTimeline
// (one pass over the events in time order), or appended to as a followed
// file grows (TimelineBuilder: the same model, however the records arrive),
// then only read. It is the one
// meaning of a trace: the viewer draws it, and `fiberscope stats`, `timeline`
// and `export` print it (tracer/tools), so they cannot disagree.
//
// Design:
//   * Thread lanes (ordered by worker index) are built from switch, park and
//     unpark records: the thread runs the `to` fiber of its last switch, or
//     its idle loop (fiber 0), or is parked in the kernel. A lane covers the
//     thread's life as a loop thread: from its first record to its
//     thread-stop, or to the trace's end if it never stopped (it was still in
//     its last state when the recording ended). A fiber switched to on a
//     stopped thread (the main fiber resumed after the loop shut down) leaves
//     the model there too, so a fiber's Running intervals are exactly the
//     thread lanes' Running intervals of it, and per-thread busy time adds
//     up to per-fiber run time.
//   * Fiber lanes are a small state machine per fiber driven by every record
//     that names it: create/schedule/complete/condition-wake/mutex-handoff
//     make it Ready, a switch to it makes it Running, a switch away makes it
//     Waiting (the switch reason says for what; yield and hand-off make it
//     Ready again, finish makes it Finished).
//   * Ready queues are modelled for stateAt: a schedule record names only the
//     head of the queue it placed and a count, so the members are recovered
//     from the fibers that just became ready on that thread (the idle loop's
//     completions, a condition broadcast's waiters). Each thread owns a queue
//     "slot"; a steal takes the victim's whole slot by changing the slot's
//     owner (O(1), or small-into-large merging if the thief's model queue is
//     not empty), so a big queue bouncing between thieves stays cheap. Each
//     stay of a fiber in a queue, and each in-flight ring operation, becomes
//     an item with a [start, end) for the checkpointed replay in state_at.hpp.
//   * Flows pair a cause with its effect: wake-up sent/received (FIFO per
//     sender/target pair), steal (where the head was queued -> the thief),
//     spawn (create -> first run), completion (submit -> the resume after the
//     completion), await chain (the awaited fiber's finish -> the awaiter's
//     resume), cancel (request -> delivery) and canceled (delivery -> the
//     operation's -ECANCELED completion, or the wait's resume), mutex
//     hand-off (the unlocker -> the new owner's resume) and condition wake
//     (the signaling fiber -> the woken fiber's resume).
//   * The Timeline never points into the Trace; functions that need event
//     details (explanations, filters, statistics) take both. Indices of
//     events (uint32) are indices into Trace::events.
//   * Memory (issue 13; `fiberscope benchmark` prints it per structure): the
//     model lives as long as the trace is open, beside the decoded events
//     (~9 bytes each on a dense trace, trace_event_list.hpp), so what an event index can
//     give back is not copied: an Instant is only its record's index
//     (instantTime, instantKind, instantLabel, instantFiber read the rest;
//     a fiber no record field names is kept aside), lane intervals are
//     packed (lane.hpp), flows, latency samples and replay items are packed
//     (packed_list.hpp: values, not record indices, so that no reader needs
//     the trace to read the model; a spawn flow is read back from its
//     fiber's lane, FlowStore; the replay items are compacted in chunks
//     when the model is closed, state_items.hpp), and the events of a kind or of a thread are found
//     through per-stride counts and bits (KindIndex), not lists of indices.
//     Lists are allocated once at their final size where the look-ahead
//     pass can count them, and trimmed. The fiber lanes' intervals, built
//     in a block per lane, move into one store when the model is closed
//     (Timeline::fiber_store, 8 bytes an interval: lane.hpp).
#pragma once

#include <array>
#include <bit>
#include <memory>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fiberscope/trace_reader.hpp"
#include "fiberscope/analysis/lane.hpp"
#include "fiberscope/analysis/packed_list.hpp"
#include "fiberscope/analysis/state_items.hpp"

namespace fiberscope::analysis {

// A record drawn as a tick on its thread's lane (4 bytes; there is one per
// record but a few kinds): the index of its record, from which its time,
// kind, label and fiber are read (instantTime, instantKind, instantLabel,
// instantFiber: the record list reads one field without decoding the rest);
// only the fiber of a record that names none (a mark, a wake-up) is kept,
// in ThreadLane::instant_fibers.
struct Instant {
    std::uint32_t event = kNoEvent;
};

// A thread's instants in ~2 bytes each, not 4 (issue 13: a record in two
// is an instant). They are its records in order, so each is kept as its
// record index's offset from the first of its block of kBlock (16 bits),
// plus 4 bytes a block; an instant too far from its block's first (a thread
// that records rarely among busy ones) is kept whole beside them, found by
// a binary search over the few such. Reads give Instant values, so
// `lane.instants[k]` and `for (const Instant& i : lane.instants)` read as
// from a vector.
class InstantList {
public:
    static constexpr std::size_t kBlock = 64;
    using value_type = Instant;
    using const_iterator = IndexIterator<InstantList, Instant>;

    std::size_t size() const noexcept { return offsets_.size(); }
    bool empty() const noexcept { return offsets_.empty(); }
    std::size_t capacity() const noexcept { return offsets_.capacity(); }
    void reserve(std::size_t n) {
        offsets_.reserve(n);
        bases_.reserve((n + kBlock - 1) / kBlock);
    }
    void shrink_to_fit() {
        offsets_.shrink_to_fit();
        bases_.shrink_to_fit();
        whole_.shrink_to_fit();
    }
    void clear() noexcept {
        offsets_.clear();
        bases_.clear();
        whole_.clear();
    }
    void push_back(Instant instant) {
        const std::size_t k = offsets_.size();
        if (k % kBlock == 0) bases_.push_back(instant.event);
        const std::uint32_t base = bases_.back();
        if (instant.event >= base && instant.event - base < kWhole) {
            offsets_.push_back(static_cast<std::uint16_t>(instant.event - base));
        } else {
            whole_.emplace_back(static_cast<std::uint32_t>(k), instant.event);
            offsets_.push_back(kWhole);
        }
    }
    Instant operator[](std::size_t k) const noexcept {
        const std::uint16_t offset = offsets_[k];
        return Instant{offset == kWhole ? wholeAt(k) : bases_[k / kBlock] + offset};
    }
    Instant front() const noexcept { return (*this)[0]; }
    Instant back() const noexcept { return (*this)[size() - 1]; }
    const_iterator begin() const noexcept { return {this, 0}; }
    const_iterator end() const noexcept { return {this, size()}; }
    // Heap bytes by capacity: the offsets, the bases, the whole ones.
    std::size_t offsetBytes() const noexcept { return offsets_.capacity() * sizeof(std::uint16_t); }
    std::size_t baseBytes() const noexcept { return bases_.capacity() * sizeof(std::uint32_t); }
    std::size_t wholeBytes() const noexcept { return whole_.capacity() * sizeof(whole_[0]); }

private:
    static constexpr std::uint16_t kWhole = UINT16_MAX;
    std::uint32_t wholeAt(std::size_t k) const noexcept;
    std::vector<std::uint16_t> offsets_;                          // event - its block's first event; kWhole: in whole_
    std::vector<std::uint32_t> bases_;                            // per block: its first instant's event
    std::vector<std::pair<std::uint32_t, std::uint32_t>> whole_;  // (index, event), by index
};

inline std::int64_t instantTime(const trace::Trace& trace, const Instant& instant) noexcept { return trace.events.time(instant.event); }
inline trace::EventKind instantKind(const trace::Trace& trace, const Instant& instant) noexcept { return trace.events.kind(instant.event); }

// The instant's label: the string id of its record's first string field (a
// mark's label, a fiber's or thread's name), else 0.
std::uint64_t instantLabel(const trace::Trace& trace, const Instant& instant) noexcept;

// A user annotation span (trace::Zone), on the fiber that opened it.
struct Zone {
    std::int64_t start = 0;
    std::int64_t end = 0;     // the zone-end record, else the fiber's finish or the trace's end
    std::uint64_t label = 0;  // string id
    std::uint32_t begin_event = kNoEvent;
    std::uint32_t end_event = kNoEvent; // kNoEvent: never closed
    std::int32_t thread = -1;           // where it began
    std::uint32_t depth = 0;            // nesting depth on its fiber (0: outermost)
};

struct ThreadLane {
    std::uint32_t thread = 0;   // trace thread number
    std::int64_t worker = -1;   // runtime worker index, -1 if unknown
    std::string name;
    std::int64_t first_time = 0; // its first and last event
    std::int64_t last_time = 0;
    bool stopped = false;        // it recorded thread-stop (its idle loop returned)
    // Its life as a loop thread: from its first record (or a thread-start
    // after a stop) to its thread-stop, or to the trace's end if it did not
    // stop. `lane` covers exactly this time when the thread recorded any
    // switch, park or unpark (a blocking-pool thread records none: no lane).
    std::int64_t alive_ns = 0;
    std::int64_t alive_end = 0;  // its last moment alive
    std::array<std::uint32_t, trace::kMaxEventKind + 1> records{}; // its records, counted by kind
    std::uint32_t steals_given = 0; // steal and steal-half records (on any thread) naming its worker as the victim
    Lane lane;                   // Running / Idle / Parked
    InstantList instants;          // every record but switch, park, unpark, zone-begin/end, by time
    // (index in `instants`, the fiber running on the thread) for the instants
    // whose record names no fiber, by index (instantFiber reads it).
    std::vector<std::pair<std::uint32_t, std::uint64_t>> instant_fibers;
    std::vector<Zone> zones;       // zones opened by its idle loop (fiber 0)
    std::uint32_t record_count = 0; // its records (nextOnThread finds them)
};

// The fiber of lane.instants[k]: the first fiber its record names, else the
// fiber running on the thread when it was recorded.
std::uint64_t instantFiber(const trace::Trace& trace, const ThreadLane& lane, std::size_t k) noexcept;

// One fiber's row. There is one per fiber, millions in a big trace (issue
// 13: a fiber every ~6.5 events in the benchmark's trace), so it is 24
// bytes, not the 96 its fields would take as plain members: its lane (16)
// and one word of ids (8).
//   * The word: the id in 32 bits (runtime ids count up from 1); the
//     parent as its distance from the id, signed, in 20 bits (a parent
//     creates its children soon after it was created itself, and the
//     runtime numbers fibers in creation order: runtime/src/fiber/fiber.cpp);
//     the awaiter as a 2-bit code (none, the parent: who spawns a fiber
//     usually awaits it, or whole); where it was created as the thread + 1
//     in 9 bits; and a flag saying its creation time is whole. A value that
//     does not fit (a crafted trace's fiber past 2^32, thread 510 or more,
//     a parent half a million ids away or more, an awaiter other than the
//     parent) is kept whole in the rare block, so nothing is lost.
//   * When it was created is its lane's first interval's start: a fiber's
//     create record, when it is the first record naming it, makes it Ready
//     (timeline.hpp's design). A fiber named before its create record (a
//     damaged or reordered trace) keeps the time whole in the rare block.
//   * What most fibers never have (a recorded name, zones, whole links)
//     is in the rare block, allocated when first needed and attached to the
//     lane's intervals (IntervalList::attached: in the side block their
//     own wide items use), so a fiber without one pays no pointer for it.
//     A lane with a rare block keeps a block of its own rather than a slice
//     of the LaneStore (~50 bytes more: named fibers are few).
//   * Whether it was named or created in the trace is read from the fields
//     that say so, and when and where it finished from its lane's Finished
//     interval, not kept twice.
// Written by the model's builder (setFiberId, setCreated, setAwaitedBy,
// setRecordedName, editZones), then only read.
struct FiberLane {
    Lane lane;                    // Ready / Running / Waiting / Finished

    // Its id.
    std::uint64_t fiber() const noexcept {
        const auto id = static_cast<std::uint32_t>(bits_);
        return id == kWideId ? rare_()->fiber : id;
    }
    // The fiber that created it (its fiber-create record's parent), 0: created
    // by an idle loop, or unknown.
    std::uint64_t parent() const noexcept {
        const std::uint64_t code = (bits_ >> kParentShift) & kParentMask;
        if (code == 0) return 0;
        if (code == kParentMask) return rare_()->parent;
        return fiber() - (code - kParentBias); // (modular: the distance was taken so)
    }
    // The fiber that awaited it (Future::await), 0 if none.
    std::uint64_t awaitedBy() const noexcept {
        switch ((bits_ >> kAwaitedShift) & 3) {
        case kAwaitedNone: return 0;
        case kAwaitedParent: return parent();
        default: return rare_()->awaited_by;
        }
    }
    // When and on which trace thread its fiber-create record was made; -1
    // (both) when the trace has none (it ran before the recording began).
    // (The time is read from its lane once the model is closed.)
    std::int64_t created() const noexcept {
        if (createdThread() < 0) return -1;
        if (bits_ & kTimeWhole) return rare_()->created;
        return lane.intervals.empty() ? -1 : lane.intervals.startOf(0);
    }
    std::int32_t createdThread() const noexcept {
        const auto thread = static_cast<std::uint32_t>((bits_ >> kThreadShift) & kThreadMask);
        return thread == kThreadMask ? rare_()->created_thread : static_cast<std::int32_t>(thread) - 1;
    }
    // Its zones (user annotation spans it opened), by start.
    const std::vector<Zone>& zones() const noexcept {
        static const std::vector<Zone> none;
        const Rare* r = rare_();
        return r ? r->zones : none;
    }

    // Its fiber-name (or create) record's name, if any.
    std::string_view recordedName() const noexcept {
        const Rare* r = rare_();
        return r ? std::string_view(r->name) : std::string_view();
    }
    // A fiber-name (or create) record named it: recordedName().
    bool named() const noexcept { return !recordedName().empty(); }
    // Its fiber-create record is in the trace.
    bool createdInTrace() const noexcept { return createdThread() >= 0; }
    // When and on which thread its function returned (its finishing switch),
    // -1 if it did not finish in the trace: its lane's Finished interval,
    // which is the lane's last (a finished fiber stays Finished to the
    // trace's end; later records naming it, in a damaged trace, change
    // nothing).
    std::int64_t finished() const noexcept {
        return !lane.intervals.empty() && lane.intervals.back().state == State::Finished ? lane.intervals.back().start : -1;
    }
    std::int32_t finishedThread() const noexcept {
        return !lane.intervals.empty() && lane.intervals.back().state == State::Finished ? lane.intervals.back().thread : -1;
    }
    // Its recorded name, else "main" for fiber 1, else "fiber #id".
    std::string name() const;

    // The builder's. setCreated: thread >= 0; `starts_lane`: the fiber has
    // no interval yet, and the create record makes its first at `time`.
    void setFiberId(std::uint64_t fiber);
    void setCreated(std::int64_t time, std::int32_t thread, std::uint64_t parent, bool starts_lane);
    void setAwaitedBy(std::uint64_t fiber);
    void setRecordedName(std::string_view name) {
        if (!name.empty() || rare_()) rare().name = name;
    }
    std::vector<Zone>& editZones() { return rare().zones; }
    // The bytes of its heap blocks: the rare block, its name's (a short name
    // lives inside the block) and its zones'.
    std::size_t rareBytes() const noexcept { return rare_() ? sizeof(Rare) : 0; }
    std::size_t nameBytes() const noexcept {
        const Rare* r = rare_();
        return r && r->name.capacity() > 15 ? r->name.capacity() + 1 : 0;
    }
    std::size_t zoneBytes() const noexcept {
        const Rare* r = rare_();
        return r ? r->zones.capacity() * sizeof(Zone) : 0;
    }
    void trimZones() {
        if (auto* r = lane.intervals.attached()) static_cast<Rare*>(r)->zones.shrink_to_fit();
    }

private:
    struct Rare final : IntervalList::Attached {
        std::unique_ptr<IntervalList::Attached> clone() const override { return std::make_unique<Rare>(*this); }
        std::string name;
        std::vector<Zone> zones;
        std::uint64_t fiber = 0;          // when the id's bits are kWideId
        std::uint64_t parent = 0;         // when the parent's code is kParentMask
        std::uint64_t awaited_by = 0;     // when the awaiter's code is kAwaitedWhole
        std::int64_t created = -1;        // when kTimeWhole is set
        std::int32_t created_thread = -1; // when the thread's bits are kThreadMask
    };
    // bits_: the id (32 bits; kWideId: whole), the parent's code (20: 0 is
    // no parent, kParentMask whole, else the id's distance to it + kParentBias),
    // the awaiter's code (2), the creating thread + 1 (9: 0 none, kThreadMask
    // whole), and kTimeWhole.
    static constexpr std::uint32_t kWideId = UINT32_MAX;
    static constexpr int kParentShift = 32;
    static constexpr std::uint64_t kParentMask = (1u << 20) - 1;
    static constexpr std::uint64_t kParentBias = 1u << 19;
    static constexpr int kAwaitedShift = 52;
    enum : std::uint64_t { kAwaitedNone = 0, kAwaitedParent = 1, kAwaitedWhole = 2 };
    static constexpr int kThreadShift = 54;
    static constexpr std::uint64_t kThreadMask = (1u << 9) - 1;
    static constexpr std::uint64_t kTimeWhole = std::uint64_t{1} << 63;
    // What bits_ holds, whole.
    struct Fields {
        std::uint64_t fiber = 0, parent = 0, awaited_by = 0;
        std::int32_t created_thread = -1;
        bool time_whole = false;
    };
    Fields fields() const noexcept;
    // Packs `f` into bits_, keeping in the rare block what does not fit
    // (allocated first: a failed allocation changes nothing).
    void store(const Fields& f);
    // The rare block: attached to the lane's intervals (IntervalList::attached,
    // in their side block), made when first needed.
    const Rare* rare_() const noexcept { return static_cast<const Rare*>(lane.intervals.attached()); }
    Rare& rare() {
        if (auto* r = lane.intervals.attached()) return static_cast<Rare&>(*r);
        auto made = std::make_unique<Rare>();
        Rare& r = *made;
        lane.intervals.attach(std::move(made));
        return r;
    }

    std::uint64_t bits_ = 0;
};
static_assert(sizeof(FiberLane) == 24);

enum class FlowKind : std::uint8_t { Wakeup, Steal, Spawn, Completion, AwaitChain, Cancel, Canceled, MutexHandoff, ConditionWake };
inline constexpr int kFlowKindCount = 9;

struct FlowEnd {
    std::int64_t time = 0;
    std::uint64_t fiber = 0;
    std::uint32_t thread = 0;       // trace thread number
    std::uint32_t event = kNoEvent; // the record at this end (if any)
    friend bool operator==(const FlowEnd&, const FlowEnd&) = default;
};

// Wakeup: from = the wakeup-sent (fiber: the scheduling fiber), to = the
//   wakeup-received (fiber: the head of the handed-off queue, if known).
// Steal: from = where/when the head was queued on the victim, to = the steal.
// Spawn: from = the fiber-create (fiber: the parent), to = its first run.
// Completion: from = the submit, to = the switch resuming it after the complete.
// AwaitChain: from = the awaited fiber's finishing switch, to = the awaiter's resume.
// Cancel: from = the cancel-request (fiber: the requesting fiber, thread: where
//   it asked), to = the cancel-delivered (fiber: the canceled fiber).
// Canceled: from = that cancel-delivered, to = the canceled operation's
//   completion with -ECANCELED (or -EINTR), else the canceled fiber's next
//   resume (a mutex or condition wait unlinked, an operation that completed first).
// MutexHandoff: from = the mutex-handoff (fiber: the unlocking fiber), to = the
//   new owner's resume.
// ConditionWake: from = the condition-wake (fiber: the signaling fiber, the one
//   running there; one flow per waiter a broadcast wakes; none for a timed-out
//   wait), to = the woken fiber's resume.
struct Flow {
    FlowKind kind = FlowKind::Wakeup;
    FlowEnd from;
    FlowEnd to;
    friend bool operator==(const Flow&, const Flow&) = default;
};

// Flows are kept packed (packed_list.hpp): 32 bytes where a Flow is 56
// (issue 13: ~0.2 flows per event, 12.8 bytes per event unpacked with the
// reach). What a Flow holds that 32 bytes need not: a 64-bit `to.time` (its
// distance from `from.time` fits 32 bits but for a flow over 2 s), 64-bit
// fibers (runtime ids count up from 1) and 32-bit threads (a crafted trace's
// thread 70000 makes its flow wide, kept whole).
struct FlowCodec {
    using Value = Flow;
    struct Packed {
        std::int64_t from_time = 0;
        std::int32_t span = 0;          // to.time - from.time
        std::uint32_t from_event = 0;   // a wide item: the index of its value
        std::uint32_t to_event = 0;
        std::uint32_t from_fiber = 0;
        std::uint32_t to_fiber = 0;
        std::uint16_t from_thread = 0;
        std::uint16_t to_thread_kind = 0; // to.thread in the low 12 bits, the FlowKind in the high 4 (kWideKind: wide)
    };
    static_assert(sizeof(Packed) == 32);
    static constexpr unsigned kWideKind = 15;
    static bool pack(const Flow& f, Packed& p) noexcept {
        constexpr std::int64_t kFar = INT64_MAX / 2; // times nearer 0 than this subtract without overflow
        if (f.from.time > kFar || f.from.time < -kFar || f.to.time > kFar || f.to.time < -kFar) return false;
        const std::int64_t span = f.to.time - f.from.time;
        if (span < INT32_MIN || span > INT32_MAX || f.from.fiber > UINT32_MAX || f.to.fiber > UINT32_MAX ||
            f.from.thread > UINT16_MAX || f.to.thread >= 4096 || static_cast<unsigned>(f.kind) >= kWideKind)
            return false;
        p.from_time = f.from.time;
        p.span = static_cast<std::int32_t>(span);
        p.from_event = f.from.event;
        p.to_event = f.to.event;
        p.from_fiber = static_cast<std::uint32_t>(f.from.fiber);
        p.to_fiber = static_cast<std::uint32_t>(f.to.fiber);
        p.from_thread = static_cast<std::uint16_t>(f.from.thread);
        p.to_thread_kind = static_cast<std::uint16_t>(f.to.thread | static_cast<unsigned>(f.kind) << 12);
        return true;
    }
    static Flow unpack(const Packed& p) noexcept {
        Flow f;
        f.kind = static_cast<FlowKind>(p.to_thread_kind >> 12);
        f.from = FlowEnd{p.from_time, p.from_fiber, p.from_thread, p.from_event};
        f.to = FlowEnd{p.from_time + p.span, p.to_fiber, static_cast<std::uint32_t>(p.to_thread_kind & 0xfff), p.to_event};
        return f;
    }
    static Packed wide(std::uint32_t index) noexcept {
        Packed p;
        p.from_event = index;
        p.to_thread_kind = static_cast<std::uint16_t>(kWideKind << 12);
        return p;
    }
    static bool isWide(const Packed& p, std::uint32_t& index) noexcept {
        index = p.from_event;
        return (p.to_thread_kind >> 12) == kWideKind;
    }
};
using FlowList = PackedList<FlowCodec>;

// A long list of the model (by some order) whose items a fiber lane of the
// same model may give back field for field: such an item is kept as a Ref
// to that lane (a few bytes) instead of as a packed value, and a bit per
// item says which items are (with the count of such before every 64th
// item, so item k is found in O(1): place()). The order, and so every
// item's index, is the list's. Split once, when the model is closed
// (keepRefs); appending after that appends values.
template <class List, class Ref>
struct LaneBackedList {
    List stored;                                // the items kept as values, in order
    std::vector<Ref> refs;                      // the items kept as Refs, in order
    std::vector<std::uint64_t> by_ref;          // bit k % 64 of word k / 64: item k is in refs (empty: none is)
    std::vector<std::uint32_t> by_ref_before;   // per word: items in refs before it

    std::size_t size() const noexcept { return stored.size() + refs.size(); }
    bool empty() const noexcept { return size() == 0; }
    void push_back(const typename List::value_type& value) {
        if (!by_ref.empty() && size() % 64 == 0) {
            by_ref_before.push_back(static_cast<std::uint32_t>(refs.size()));
            by_ref.push_back(0);
        }
        stored.push_back(value);
    }
    // Where item k is: refs[index] if `ref`, else stored[index].
    struct Place {
        bool ref = false;
        std::size_t index = 0;
    };
    Place place(std::size_t k) const noexcept {
        if (by_ref.empty()) return {false, k};
        const std::uint64_t word = by_ref[k / 64];
        const unsigned r = k % 64;
        const std::size_t before = by_ref_before[k / 64] + static_cast<std::size_t>(std::popcount(word & ((std::uint64_t{1} << r) - 1)));
        return word >> r & 1 ? Place{true, before} : Place{false, k - before};
    }
    // Keeps each stored item for which ref_of(k, item, Ref&) is true as that
    // Ref (called in order, once per item). The list changes whole or not
    // at all (an allocation that fails leaves it as it was).
    template <class RefOf>
    void keepRefs(RefOf&& ref_of) {
        const std::size_t n = stored.size();
        if (!refs.empty() || n == 0) return; // (split once)
        std::vector<std::uint64_t> bits((n + 63) / 64, 0);
        std::vector<Ref> kept;
        for (std::size_t k = 0; k < n; ++k)
            if (Ref ref; ref_of(k, stored[k], ref)) {
                bits[k / 64] |= std::uint64_t{1} << (k % 64);
                kept.push_back(ref);
            }
        if (kept.empty()) return;
        kept.shrink_to_fit(); // (grown by doubling; a failed shrink keeps it as it is)
        List rest;
        rest.reserve(n - kept.size());
        for (std::size_t k = 0; k < n; ++k)
            if (!(bits[k / 64] >> (k % 64) & 1)) rest.push_back(stored[k]);
        std::vector<std::uint32_t> before(bits.size());
        std::uint32_t count = 0;
        for (std::size_t w = 0; w < bits.size(); ++w) {
            before[w] = count;
            count += static_cast<std::uint32_t>(std::popcount(bits[w]));
        }
        // (Nothing below allocates.)
        stored = std::move(rest);
        refs = std::move(kept);
        by_ref = std::move(bits);
        by_ref_before = std::move(before);
    }
};

// Every flow of the model (Timeline::flows), by from.time, read through
// flowsOf(timeline) (a flow may be read back from its fiber's lane, so a
// read needs the Timeline).
//
// Memory (issue 13): a spawn flow repeats what its fiber's lane already
// holds: from is the fiber's creation (FiberLane::created, createdThread,
// parent, and the cause of its first interval, the fiber-create record that
// made it Ready), to is its first Running interval. In the benchmark's
// trace three flows in four are spawns, 32 bytes each. When the model is
// closed, each spawn flow that its lane gives back field for field is kept
// as the index of that lane in Timeline::fibers (4 bytes).
using FlowStore = LaneBackedList<FlowList, std::uint32_t>;

// One ready episode: became ready at `ready`, switched in at `run` (one per
// switch to a fiber, stored in 16 bytes: LatencyCodec; the thread it ran on
// is its fiber lane's Running interval starting at `run`).
struct LatencySample {
    std::int64_t ready = 0;
    std::int64_t run = 0;
    std::uint64_t fiber = 0;
};

// Latency samples packed (packed_list.hpp): 16 bytes, the wait (run - ready)
// and the fiber in 32 bits each; a wait of 4.3 s or more, a negative one or a
// fiber past 2^32 is kept whole.
struct LatencyCodec {
    using Value = LatencySample;
    struct Packed {
        std::int64_t run = 0;
        std::uint32_t wait = 0;  // run - ready; kWide: wide, `fiber` holds the index of its value
        std::uint32_t fiber = 0;
    };
    static_assert(sizeof(Packed) == 16);
    static constexpr std::uint32_t kWide = UINT32_MAX;
    static bool pack(const LatencySample& s, Packed& p) noexcept {
        if (s.ready > s.run || s.fiber > UINT32_MAX) return false;
        const auto wait = static_cast<std::uint64_t>(s.run) - static_cast<std::uint64_t>(s.ready); // no overflow: ready <= run
        if (wait >= kWide) return false;
        p = Packed{s.run, static_cast<std::uint32_t>(wait), static_cast<std::uint32_t>(s.fiber)};
        return true;
    }
    static LatencySample unpack(const Packed& p) noexcept { return {p.run - static_cast<std::int64_t>(p.wait), p.run, p.fiber}; }
    static Packed wide(std::uint32_t index) noexcept { return Packed{0, kWide, index}; }
    static bool isWide(const Packed& p, std::uint32_t& index) noexcept {
        index = p.fiber;
        return p.wait == kWide;
    }
};

// Every latency sample of the model (Timeline::latencies), by run time,
// read through latenciesOf(timeline). A sample whose fiber's lane holds a
// Ready interval from `ready` followed by a Running one from `run` (nearly
// every sample) is kept as where that Running interval is, in one 32-bit
// word (4 bytes, not 16), as a spawn flow is (FlowStore, issue 13): the lane
// in 25 bits (33 million fibers), the interval in 7. A sample of a lane
// past those, or at its 129th interval or later (index 128 on: a
// long-lived fiber that ran many times), is kept as a value.
struct LatencyRef {
    static constexpr int kIntervalBits = 7;
    static constexpr std::uint32_t kMaxLane = (1u << (32 - kIntervalBits)) - 1, kMaxInterval = (1u << kIntervalBits) - 1;
    std::uint32_t bits = 0;
    static bool make(std::size_t lane, std::size_t interval, LatencyRef& ref) noexcept {
        if (lane > kMaxLane || interval > kMaxInterval) return false;
        ref.bits = static_cast<std::uint32_t>(lane << kIntervalBits | interval);
        return true;
    }
    std::uint32_t lane() const noexcept { return bits >> kIntervalBits; }          // index in Timeline::fibers
    std::uint32_t interval() const noexcept { return bits & kMaxInterval; }      // its Running interval (the one before is the Ready one)
};
using LatencyStore = LaneBackedList<PackedList<LatencyCodec>, LatencyRef>;

// --- The replay index behind stateAt (built by buildTimeline; see state_at.hpp).
// Its items: StateItem, StateItemList (state_items.hpp).

struct SlotOwner {
    std::int64_t since = INT64_MIN;
    std::uint32_t thread = 0; // trace thread number
};
struct StateCheckpoint {
    std::int64_t time = 0;
    std::uint32_t first_item = 0;        // items [first_item, ...) are not in `active`
    std::vector<std::uint32_t> active;   // items before first_item still open at `time`
};
struct ReplayIndex {
    StateItemList items;                         // by start
    std::vector<std::vector<SlotOwner>> slots;   // owner history per queue slot
    std::vector<StateCheckpoint> checkpoints;    // by time
};

// Where the records of each kind are, without a list of them (a list per
// kind cost 4 bytes per event, issue 13): how many records of each kind come
// before every kKindStride-th event. Counting a kind's records in a range is
// two look-ups and at most two strides of reading kinds; stepping to the next
// or previous one skips each stride that has none (nextOfKind, previousOfKind).
inline constexpr std::size_t kKindStride = 1024;
using KindCounts = std::array<std::uint32_t, trace::kMaxEventKind + 1>;
struct KindIndex {
    std::vector<KindCounts> before; // before[b][k]: events of kind k among events [0, b * kKindStride)
    KindCounts total{};             // events of each kind
    // thread_bits[b]: bit t % 64 is set if thread t has a record in stride b
    // (a thread's records are found by skipping the strides without its bit:
    // 8 bytes per 1024 events, where a list per thread cost 4 per event).
    std::vector<std::uint64_t> thread_bits;
};

inline constexpr std::size_t kFlowReachBlock = 64;

struct Timeline {
    // Unique to this build (or snapshot) in this process
    // (trace::nextTraceSerial): what a cache of the model is keyed by, with
    // its sizes for a model that grows; never its address, which the next
    // model may reuse.
    std::uint64_t serial = 0;
    std::int64_t start_time = 0; // first event (0 for an empty trace)
    std::int64_t end_time = 0;   // max(last event, header duration)
    std::vector<ThreadLane> threads;            // by worker index, then unknown workers by thread number
    std::vector<std::uint32_t> lane_of_thread;  // trace thread number -> index in `threads`
    std::vector<FiberLane> fibers;              // by fiber id (findFiber: O(1) for dense ids, else a binary search)
    // The items of the fiber lanes that fit the compact format, one block
    // for all (written when the model is closed; lane.hpp): the lanes'
    // lists borrow their slices, so it lives as long as they are read. A
    // copy of the Timeline copies those lists' items into blocks of their
    // own and holds no store; a move keeps the slices where they are.
    // (After `fibers`: assigned after them, when their old lists are gone.)
    LaneStore fiber_store;
    FlowStore flows;                            // by from.time: read them with flowsOf(timeline)
    // flow_reach[b] = the latest to.time of flows[0, (b + 1) * kFlowReachBlock):
    // where flowsInRange starts (8 bytes a block, where one a flow cost 8 a flow).
    std::vector<std::int64_t> flow_reach;
    LatencyStore latencies;                     // by run time: read them with latenciesOf(timeline)
    KindIndex kinds;                            // where the events of each kind are
    ReplayIndex replay;
    // The names the program gave objects (object-name records, version 9):
    // per object address, (from when, name), by time. An address may name
    // another object later (a Mutex on a stack, gone, another in its
    // place): a name holds until the next one.
    std::map<std::uint64_t, std::vector<std::pair<std::int64_t, std::string>>> object_names;
};

// The name object `object` had at `time` (its latest object-name record at
// or before it), or null.
const std::string* objectNameAt(const Timeline& timeline, std::uint64_t object, std::int64_t time);

Timeline buildTimeline(const trace::Trace& trace);

// Builds the model by appending records as they arrive (a followed file):
// buildTimeline(trace) is one append and finish. Appending a trace in any
// number of pieces gives the same model as building it at once (a property
// test holds it to that on every lesson's trace).
//
// Most of a record's meaning follows from the records before it; what
// needs later ones is looked up among the records available when it is
// read: what a thread ran before its first switch, and which thread runs
// the worker a steal or hand-off names. When a later append contradicts
// such a look-up (the thread's first switch arrives only now; the named
// worker's thread appears only now), the builder reads every record again
// from the first, so the answer never depends on where the pieces were cut.
// That happens at most once per thread, near its start.
class TimelineBuilder {
public:
    TimelineBuilder();
    ~TimelineBuilder();
    TimelineBuilder(TimelineBuilder&&) noexcept;
    TimelineBuilder& operator=(TimelineBuilder&&) noexcept;

    // Reads trace.events[appended(), end): `trace` is the trace appended
    // before, grown at its end. When records already read moved (a
    // follower's poll that reordered them), reset() first.
    void append(const trace::Trace& trace);
    // A first append of records the reader has decoded but not yet merged
    // into trace.events (trace::MergeObserver: each thread's, in time
    // order), read in the order and with the indices they will have there;
    // `trace` (its threads) is the one whose events they become. False if
    // the builder has appended before or must read them again once they
    // are in trace.events (then it is as new: append(trace) then).
    bool appendStreams(const trace::Trace& trace, const std::vector<std::vector<trace::Event>>& per_thread);
    void reset();
    std::size_t appended() const noexcept;
    std::size_t restarts() const noexcept; // times an append read everything again

    // The model of the records appended so far, as buildTimeline would build
    // it from a trace holding only them (`trace`: the one last appended).
    // Copies the model; the build goes on.
    Timeline snapshot(const trace::Trace& trace) const;
    // The same, ending the build without a copy.
    Timeline finish(const trace::Trace& trace) &&;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};
// The trace's end (Timeline::end_time): its last record, or the header's
// duration if later (0 for an empty trace).
std::int64_t traceEndTime(const trace::Trace& trace) noexcept;

// Lookups (nullptr / kNone when absent).
const FiberLane* findFiber(const Timeline& timeline, std::uint64_t fiber) noexcept;
const ThreadLane* findThread(const Timeline& timeline, std::uint32_t thread) noexcept;
// The fiber running on `thread` at `time` (0: its idle loop, parked, or unknown).
std::uint64_t runningFiber(const Timeline& timeline, std::uint32_t thread, std::int64_t time) noexcept;
// Indices into timeline.flows of the flows overlapping [t0, t1] whose kind is in
// `kind_mask` (bit FlowKind), at most `limit` of them.
void flowsInRange(const Timeline& timeline, std::int64_t t0, std::int64_t t1, std::vector<std::uint32_t>& out,
                  unsigned kind_mask = ~0u, std::size_t limit = SIZE_MAX);

const char* flowKindName(FlowKind kind) noexcept;

// A list of the model read by index through `At` (a LaneBackedList, whose
// items may be read back from the fiber lanes, so a read needs the
// Timeline) as a list of values: view[k], `for (const Value& v : view)`.
// (It refers to the Timeline, which must outlive it.)
template <class Value, auto At, auto Member>
struct ModelView {
    using const_iterator = IndexIterator<ModelView, Value>;
    const Timeline* timeline = nullptr;
    std::size_t size() const noexcept { return (timeline->*Member).size(); }
    bool empty() const noexcept { return size() == 0; }
    Value operator[](std::size_t k) const noexcept { return At(*timeline, k); }
    const_iterator begin() const noexcept { return {this, 0}; }
    const_iterator end() const noexcept { return {this, size()}; }
};

// Flow k of the model (k < timeline.flows.size()), and the flows as a list.
Flow flowAt(const Timeline& timeline, std::size_t k) noexcept;
using FlowView = ModelView<Flow, &flowAt, &Timeline::flows>;
inline FlowView flowsOf(const Timeline& timeline) noexcept { return FlowView{&timeline}; }

// Latency sample k of the model (k < timeline.latencies.size()), and the
// samples as a list.
LatencySample latencyAt(const Timeline& timeline, std::size_t k) noexcept;
using LatencyView = ModelView<LatencySample, &latencyAt, &Timeline::latencies>;
inline LatencyView latenciesOf(const Timeline& timeline) noexcept { return LatencyView{&timeline}; }

// Events by kind (trace.events indices; the trace the timeline was built from).
// The first event of `kind` at index `from` or later, else trace.events.size().
std::size_t nextOfKind(const Timeline& timeline, const trace::Trace& trace, trace::EventKind kind, std::size_t from) noexcept;
// The last event of `kind` before index `before`, else kNone.
std::size_t previousOfKind(const Timeline& timeline, const trace::Trace& trace, trace::EventKind kind, std::size_t before) noexcept;
// The first record of trace thread `thread` at index `from` or later, else
// trace.events.size(); the last one before index `before`, else kNone.
std::size_t nextOnThread(const Timeline& timeline, const trace::Trace& trace, std::uint32_t thread, std::size_t from) noexcept;
std::size_t previousOnThread(const Timeline& timeline, const trace::Trace& trace, std::uint32_t thread, std::size_t before) noexcept;
// How many events of `kind` have an index in [lo, hi).
std::size_t countOfKind(const Timeline& timeline, const trace::Trace& trace, trace::EventKind kind, std::size_t lo, std::size_t hi) noexcept;
// The index of the first event at time `time` or later (later than `time` if `after`).
std::size_t firstEventAt(const trace::Trace& trace, std::int64_t time, bool after = false) noexcept;

} // namespace fiberscope::analysis
