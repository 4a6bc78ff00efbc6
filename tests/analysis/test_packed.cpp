// The model's packed lists (packed_list.hpp; issue 13: memory): a value
// that fits is stored packed and one that does not is kept whole beside
// the list, and both read back exactly as pushed, also after a set() and
// after the items are reordered (the close of the model sorts the flows).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <vector>

#include <fiberscope/analysis/timeline.hpp>

namespace {

namespace analysis = fiberscope::analysis;
using analysis::Flow;
using analysis::FlowEnd;
using analysis::FlowKind;

void requireSameFlow(const Flow& a, const Flow& b) {
    REQUIRE(a.kind == b.kind);
    REQUIRE(a.from.time == b.from.time);
    REQUIRE(a.from.fiber == b.from.fiber);
    REQUIRE(a.from.thread == b.from.thread);
    REQUIRE(a.from.event == b.from.event);
    REQUIRE(a.to.time == b.to.time);
    REQUIRE(a.to.fiber == b.to.fiber);
    REQUIRE(a.to.thread == b.to.thread);
    REQUIRE(a.to.event == b.to.event);
}

} // namespace

TEST_CASE("flows read back as pushed, packed or wide", "[analysis][packed]") {
    const std::vector<Flow> flows = {
        Flow{FlowKind::Spawn, FlowEnd{10, 1, 0, 3}, FlowEnd{20, 2, 1, 7}},                         // packed
        Flow{FlowKind::Wakeup, FlowEnd{50, 0, 2, 9}, FlowEnd{40, 0, 3, 8}},                        // received first: negative span
        Flow{FlowKind::AwaitChain, FlowEnd{100, 4, 0, 11}, FlowEnd{100 + 5'000'000'000, 5, 0, 12}}, // over 2 s
        Flow{FlowKind::Steal, FlowEnd{60, 1ull << 40, 0, 13}, FlowEnd{61, 7, 0, 14}},              // a fiber past 2^32
        Flow{FlowKind::Cancel, FlowEnd{70, 1, 70000, 15}, FlowEnd{71, 1, 5000, 16}},               // threads past 16 and 12 bits
        Flow{FlowKind::Steal, FlowEnd{80, 3, 1, analysis::kNoEvent}, FlowEnd{90, 3, 2, 17}},       // no record at the cause
        Flow{FlowKind::ConditionWake, FlowEnd{INT64_MIN + 1, 1, 0, 18}, FlowEnd{INT64_MAX - 1, 2, 0, 19}}, // far times
    };
    analysis::FlowList list;
    for (const Flow& f : flows) list.push_back(f);
    REQUIRE(list.size() == flows.size());
    CHECK(list.wideCount() == 4);
    for (std::size_t k = 0; k < flows.size(); ++k) {
        INFO("flow " << k);
        requireSameFlow(list[k], flows[k]);
    }
    // Iterators give the same values.
    std::size_t k = 0;
    for (const Flow& f : list) requireSameFlow(f, flows[k++]);
    CHECK(list.end() - list.begin() == static_cast<std::ptrdiff_t>(flows.size()));
    // set(): packed -> wide, wide -> rewritten, wide -> packed value.
    list.set(0, flows[2]);
    requireSameFlow(list[0], flows[2]);
    list.set(2, flows[1]);
    requireSameFlow(list[2], flows[1]);
    list.set(3, flows[4]);
    requireSameFlow(list[3], flows[4]);
    // Reordering the packed items carries each wide value along.
    std::vector<Flow> expected(list.begin(), list.end());
    std::vector<std::size_t> order(list.size());
    std::iota(order.rbegin(), order.rend(), 0); // reversed
    auto& items = list.packed();
    const auto before = items;
    for (std::size_t j = 0; j < order.size(); ++j) items[j] = before[order[j]];
    for (std::size_t j = 0; j < order.size(); ++j) {
        INFO("reordered flow " << j);
        requireSameFlow(list[j], expected[order[j]]);
    }
}

TEST_CASE("latency samples read back as pushed, packed or wide", "[analysis][packed]") {
    using analysis::LatencySample;
    const std::vector<LatencySample> samples = {
        {10, 25, 3},                              // packed
        {0, 5'000'000'000, 4},                    // a wait over 4.3 s
        {30, 20, 5},                              // ready after run (a damaged trace)
        {40, 41, 1ull << 33},                     // a fiber past 2^32
        {INT64_MIN + 1, INT64_MAX - 1, 6},        // far times
    };
    analysis::PackedList<analysis::LatencyCodec> list;
    for (const LatencySample& s : samples) list.push_back(s);
    CHECK(list.wideCount() == 4);
    for (std::size_t k = 0; k < samples.size(); ++k) {
        INFO("sample " << k);
        CHECK(list[k].ready == samples[k].ready);
        CHECK(list[k].run == samples[k].run);
        CHECK(list[k].fiber == samples[k].fiber);
    }
}

namespace {

// Replay item `a` reads as `b`, field by field.
void requireSameItem(const analysis::StateItem& a, const analysis::StateItem& b) {
    REQUIRE(a.start == b.start);
    REQUIRE(a.end == b.end);
    REQUIRE(a.fiber == b.fiber);
    REQUIRE(a.fd == b.fd);
    REQUIRE(a.where == b.where);
    REQUIRE(a.event == b.event);
    REQUIRE(a.kind == b.kind);
    REQUIRE(a.opcode == b.opcode);
}

} // namespace

TEST_CASE("replay items read back as pushed, packed or wide, and ended later", "[analysis][packed]") {
    using analysis::ItemKind;
    using analysis::StateItem;
    const auto item = [](std::int64_t start, std::int64_t end, std::uint64_t fiber, std::int32_t fd, std::uint32_t where,
                         std::uint32_t event, ItemKind kind, std::uint8_t opcode) {
        StateItem i;
        i.start = start, i.end = end, i.fiber = fiber, i.fd = fd, i.where = where, i.event = event, i.kind = kind, i.opcode = opcode;
        return i;
    };
    const std::vector<StateItem> items = {
        item(100, 150, 2, 0, 1, 7, ItemKind::Queued, 0),                        // packed
        item(200, analysis::kOpenEnd, 3, -5, 2, 8, ItemKind::InFlight, 22),     // open, a negative fd
        item(-300, 10, 4, 0, 0, 9, ItemKind::Queued, 0),                        // a negative start
        item(0, 5'000'000'000, 5, 0, 0, 10, ItemKind::Queued, 0),               // a span over 4.3 s
        item(10, 20, 1ull << 40, 0, 70000, analysis::kNoEvent, ItemKind::InFlight, 1), // wide fiber and thread
        item(50, 40, 6, 0, 0, 11, ItemKind::Queued, 0),                         // ends before it starts
    };
    const auto same = requireSameItem;
    // A list of `values`, each read back as pushed, `wide` of them kept whole.
    const auto packed = [&](const std::vector<StateItem>& values, std::size_t wide) {
        analysis::StateItemList l;
        for (const StateItem& i : values) l.push_back(i);
        CHECK(l.wideCount() == wide);
        for (std::size_t k = 0; k < values.size(); ++k) {
            INFO("item " << k);
            same(l[k], values[k]);
        }
        return l;
    };
    analysis::StateItemList list = packed(items, 3);
    // An open item is ended later (what the model does when the fiber leaves
    // the queue or the operation completes): near, then too far to pack.
    StateItem ended = items[1];
    ended.end = 260;
    list.set(1, ended);
    same(list[1], ended);
    ended.end = 200 + 6'000'000'000;
    list.set(1, ended);
    same(list[1], ended);
    same(list[0], items[0]);
    // The 48-bit start and the 16-bit fd at their edges, and past them.
    constexpr std::int64_t k40h = std::int64_t{40} * 3600 * 1'000'000'000;
    constexpr std::int64_t kEdge = (std::int64_t{1} << 47) - 1;
    const std::vector<StateItem> edges = {
        item(kEdge, analysis::kOpenEnd, 7, 32767, 65535, 12, ItemKind::InFlight, 255), // packed: the largest of each
        item(-kEdge - 1, -kEdge, 8, -32768, 0, 13, ItemKind::InFlight, 3),            // packed: the most negative
        item(k40h, k40h + 5, 9, 3, 1, 14, ItemKind::Queued, 0),                      // 40 hours in: wide
        item(1000, 2000, 10, 40000, 3, 15, ItemKind::InFlight, 2),                   // fd past 32767: wide
        item(1000, 2000, 11, -40000, 3, 16, ItemKind::InFlight, 2),                  // fd below -32768: wide
    };
    (void)packed(edges, 3);
}

TEST_CASE("replay items compacted into chunks read back as built, chunk by chunk compact or not", "[analysis][packed]") {
    using analysis::ItemKind;
    using analysis::StateItem;
    constexpr std::size_t kChunk = analysis::StateItemList::kChunk;
    constexpr std::int64_t k2e26 = std::int64_t{1} << 26;
    // A chunk of items that fits the compact form at its edges: starts
    // 2^26 - 1 apart, records 16382 apart, slot 63, open items, the largest
    // near span (2^26 - 3) and one kept apart (2^26 - 2), operations with
    // negative fds and the largest opcode, an item with no record; fibers in
    // four clusters (one 16382 wide) and seven alone, far from the clusters.
    // Its extras: 16 operations, 7 far fibers, 2 far spans.
    const auto chunk = [](std::int64_t base) {
        std::vector<StateItem> items(kChunk);
        for (std::size_t r = 0; r < kChunk; ++r) {
            StateItem& i = items[r];
            i.start = base + static_cast<std::int64_t>(r) * 1000;
            i.end = r % 5 == 0 ? analysis::kOpenEnd : i.start + static_cast<std::int64_t>(r);
            i.fiber = r < 20 ? 100'000 + r : r < 35 ? 300'000 + r : r < 47 ? 500'000 + r : r < 57 ? 700'000 + r : 900'000 + r * 20'000;
            i.event = 5'000'000 + static_cast<std::uint32_t>(r);
            i.where = static_cast<std::uint32_t>(r % 3);
            i.kind = r % 4 == 1 ? ItemKind::InFlight : ItemKind::Queued;
            if (i.kind == ItemKind::InFlight) i.fd = r % 8 == 1 ? -32768 : static_cast<std::int32_t>(r), i.opcode = static_cast<std::uint8_t>(r == 1 ? 255 : r);
        }
        items[2].end = items[2].start + k2e26 - 3;
        items[8].end = items[8].start + k2e26 - 2;
        items[9].end = items[9].start + 3'000'000'000;
        items[kChunk - 1].start = base + k2e26 - 1;
        items[kChunk - 1].end = items[kChunk - 1].start + 1;
        items[3].fiber = 100'000 + 16'382;
        items[4].event = 5'000'000 + 16'382;
        items[6].event = analysis::kNoEvent;
        items[7].where = 63;
        return items;
    };
    constexpr std::size_t kEdgeExtras = 16 + 7 + 2;
    // A chunk of operations with far spans: 2 extras each, and one far fiber
    // (item 0's, away from the four clusters of the rest): the last item's
    // first extra is the 128th, the most an item can point at.
    const auto extras = [](std::int64_t base) {
        std::vector<StateItem> items(kChunk);
        for (std::size_t r = 0; r < kChunk; ++r) {
            StateItem& i = items[r];
            i.start = base + static_cast<std::int64_t>(r);
            i.end = i.start + 100'000'000;
            i.fiber = r == 0 ? 10 : 100'000 + (r % 4) * 50'000 + r;
            i.event = 7'000'000 + static_cast<std::uint32_t>(r);
            i.kind = ItemKind::InFlight;
            i.fd = 3, i.opcode = 9;
        }
        return items;
    };
    // Chunk by chunk: the edge chunks, then one past each edge (kept whole),
    // then an edge chunk again, then a part chunk.
    std::vector<StateItem> items;
    std::vector<std::size_t> chunk_extras; // SIZE_MAX: not compact
    const auto add = [&](std::vector<StateItem> c, std::size_t extras) {
        items.insert(items.end(), c.begin(), c.end());
        chunk_extras.push_back(extras);
    };
    std::int64_t base = 1'000'000;
    const auto next = [&] { return base += std::int64_t{1} << 33; };
    add(chunk(base), kEdgeExtras);
    add(extras(next()), 2 * kChunk + 1);
    {
        auto c = chunk(next());
        c[kChunk - 1].start += 1, c[kChunk - 1].end += 1; // starts 2^26 apart
        add(c, SIZE_MAX);
    }
    {
        auto c = chunk(next());
        c[4].event += 1; // records 16383 apart
        add(c, SIZE_MAX);
    }
    {
        auto c = chunk(next());
        c[7].where = 64;
        add(c, SIZE_MAX);
    }
    {
        auto c = chunk(next());
        c[9].fiber = std::uint64_t{1} << 40; // wide
        add(c, SIZE_MAX);
    }
    {
        auto c = extras(next());
        c[kChunk - 2].fiber = 20; // one more far fiber: the last item's first extra would be the 129th
        add(c, SIZE_MAX);
    }
    add(chunk(next()), kEdgeExtras);
    {
        auto c = chunk(next());
        c.resize(10);
        add(c, 3 + 2); // operations 1, 5, 9; items 8 and 9: far spans
    }
    analysis::StateItemList list;
    for (const StateItem& i : items) list.push_back(i);
    list.compact();
    REQUIRE(list.compacted());
    REQUIRE(list.size() == items.size());
    REQUIRE(list.wideCount() == 1);
    const auto same = [&](const analysis::StateItemList& l) {
        for (std::size_t k = 0; k < items.size(); ++k) {
            INFO("item " << k << " (chunk " << k / kChunk << ")");
            requireSameItem(l[k], items[k]);
        }
    };
    same(list);
    // Its words: a compact chunk takes 8 words of bases, 3 an item and 1 an
    // extra; any other, 6 words an item; and 1 a chunk to find it.
    std::size_t words = chunk_extras.size();
    for (std::size_t c = 0; c < chunk_extras.size(); ++c) {
        const std::size_t n = std::min(kChunk, items.size() - c * kChunk);
        words += chunk_extras[c] != SIZE_MAX ? 8 + 3 * n + chunk_extras[c] : 6 * n;
    }
    CHECK(list.itemBytes() == words * sizeof(std::uint32_t));
    // A copy reads the same; a change expands the list and keeps the rest.
    const analysis::StateItemList copy = list;
    same(copy);
    StateItem changed = items[70];
    changed.end = changed.start + 3;
    list.set(70, changed);
    CHECK(!list.compacted());
    items[70] = changed;
    same(list);
}

namespace {

// An interval by its fields (cause 7 unless given).
analysis::Interval laneInterval(std::int64_t start, std::int64_t end, std::uint64_t fiber, std::int32_t thread, analysis::State state,
                                analysis::WaitReason reason = analysis::WaitReason::None, std::uint32_t cause = 7) {
    analysis::Interval i;
    i.start = start, i.end = end, i.fiber = fiber, i.cause = cause, i.thread = thread, i.state = state, i.reason = reason;
    return i;
}

// `list` reads back as `intervals`, field by field and through each reader.
void requireIntervals(const analysis::IntervalList& list, const std::vector<analysis::Interval>& intervals) {
    REQUIRE(list.size() == intervals.size());
    for (std::size_t k = 0; k < intervals.size(); ++k) {
        INFO("interval " << k << " (chunk " << k / analysis::IntervalList::kChunk << ")");
        const analysis::Interval a = list[k], &b = intervals[k];
        REQUIRE(a.start == b.start);
        REQUIRE(a.end == b.end);
        REQUIRE(a.fiber == b.fiber);
        REQUIRE(a.cause == b.cause);
        REQUIRE(a.thread == b.thread);
        REQUIRE(a.state == b.state);
        REQUIRE(a.reason == b.reason);
        REQUIRE(list.startOf(k) == b.start);
        REQUIRE(list.endOf(k) == b.end);
    }
    std::size_t k = 0;
    for (const analysis::Interval& i : list) REQUIRE(i.start == intervals[k++].start);
}

} // namespace

TEST_CASE("lane intervals read back as pushed: ends from the next start, gaps, wide ones", "[analysis][packed]") {
    using analysis::Interval;
    using analysis::State;
    using analysis::WaitReason;
    const std::vector<Interval> intervals = {
        laneInterval(-50, 10, 3, -1, State::Ready, WaitReason::None, analysis::kNoEvent), // no thread, no cause, a negative start
        laneInterval(10, 10, 3, 0, State::Running),                                      // zero length
        laneInterval(10, 6'000'000'010, 3, 254, State::Waiting, WaitReason::Exit),      // over 4 s; the last packable thread
        laneInterval(6'000'000'100, 6'000'000'200, 3, 1, State::Ready),                 // after a gap
        laneInterval(6'000'000'200, 6'000'000'300, 1ull << 35, 2, State::Running),      // a fiber past 2^32: wide
        laneInterval(6'000'000'300, 6'000'000'400, 3, 255, State::Waiting, WaitReason::Io), // thread 255: wide
        laneInterval(6'000'000'400, 6'000'000'500, 3, 2, State::Finished),              // after two wide ones
        laneInterval(6'000'000'600, 6'000'000'700, 3, 2, State::Idle),                  // a gap after a packed one, then...
        laneInterval(1ll << 50, (1ll << 50) + 5, 3, 2, State::Parked),                  // ...a start past 48 bits: wide
        laneInterval((1ll << 50) + 9, (1ll << 50) + 9, 3, 2, State::Parked),            // after a wide one, with a gap: wide
        laneInterval(20, 30, 3, 2, State::Running),                                      // earlier than the last end (damaged)
        laneInterval(30, 40, 3, 2, State::Ready),                                        // and on from there
    };
    analysis::IntervalList list;
    for (const Interval& i : intervals) list.push_back(i);
    CHECK(list.wideCount() == 4);
    const analysis::IntervalList copy = list;
    requireIntervals(list, intervals);
    requireIntervals(copy, intervals);
    // Every state and wait reason survives the packing.
    analysis::IntervalList all;
    std::int64_t t = 0;
    for (int s = 0; s < analysis::kStateCount; ++s)
        for (int r = 0; r <= static_cast<int>(WaitReason::Exit); ++r, t += 10)
            all.push_back(laneInterval(t, t + 10, 1, 0, static_cast<State>(s), static_cast<WaitReason>(r)));
    CHECK(all.wideCount() == 0);
    std::size_t k = 0;
    for (int s = 0; s < analysis::kStateCount; ++s)
        for (int r = 0; r <= static_cast<int>(WaitReason::Exit); ++r, ++k) {
            REQUIRE(all[k].state == static_cast<State>(s));
            REQUIRE(all[k].reason == static_cast<WaitReason>(r));
        }
}

TEST_CASE("a lane moved into a store reads back as built; one that does not fit keeps its own block", "[analysis][packed]") {
    using analysis::Interval;
    using analysis::IntervalList;
    using analysis::State;
    using analysis::WaitReason;
    const auto same = requireIntervals;
    const std::uint64_t far = 1ull << 33; // a fiber id past 2^32 in one that fits otherwise
    // Lanes that fit: the edges of every field the compact item keeps.
    const std::vector<std::vector<Interval>> fitting = {
        {laneInterval(-40, 10, 3, -1, State::Ready, WaitReason::None, analysis::kNoEvent), // no thread, no cause, a negative start
         laneInterval(10, 10, 3, 0, State::Running, WaitReason::None, 1'000'000),       // zero length
         laneInterval(10, 20, 3, 254, State::Waiting, WaitReason::Exit, 999'999 + (1u << 17) - 2), // the last thread; the farthest cause
         laneInterval(20, std::int64_t{UINT32_MAX} - 40, 3, 1, State::Ready, WaitReason::None, 999'999), // a cause below the first
         laneInterval(std::int64_t{UINT32_MAX} - 40, 9'000'000'000'000, 3, 2, State::Finished, WaitReason::None, 1'000'001)}, // the farthest start; a far end
        {laneInterval(-(1ll << 47), 5, UINT32_MAX, 4, State::Running, WaitReason::Mutex, UINT32_MAX - 1)}, // the least packed start, the largest fiber
        // Narrow (two items to a word) from here on:
        {laneInterval(0, 9, 3, 2, State::Idle), laneInterval(9, 12, 3, 2, State::Parked), laneInterval(12, 12, 3, 2, State::Waiting, WaitReason::Select)},
        {laneInterval(-5, 10, 7, -1, State::Ready, WaitReason::None, analysis::kNoEvent),         // no thread, no cause, a negative start
         laneInterval(10, 20, 7, 6, State::Running, WaitReason::None, 500),                       // the last narrow thread
         laneInterval(20, 65'530, 7, 0, State::Waiting, WaitReason::Exit, 500 + 62),              // the farthest narrow cause
         laneInterval(65'530, 9'000'000'000, 7, 3, State::Finished, WaitReason::None, 501)},      // the farthest narrow start (65535 past -5)
    };
    constexpr std::ptrdiff_t kFirstNarrow = 2;
    // Lanes that do not: each breaks one limit of the compact item.
    const std::vector<std::vector<Interval>> other = {
        {laneInterval(0, 10, 3, 0, State::Ready), laneInterval(10, 20, far, 0, State::Running)},                    // a fiber past 2^32 (wide)
        {laneInterval(0, 10, 3, 0, State::Ready), laneInterval(10, 20, 4, 0, State::Running)},                      // two fibers
        {laneInterval(0, 10, 3, 0, State::Ready), laneInterval(10, 20, 3, 70000, State::Running)},                  // thread 70000 (wide)
        {laneInterval(0, 10, 3, 0, State::Ready), laneInterval(10 + std::int64_t{UINT32_MAX}, 20 + std::int64_t{UINT32_MAX}, 3, 0, State::Running)}, // starts 2^32 apart
        {laneInterval(0, 10, 3, 0, State::Ready, WaitReason::None, 5), laneInterval(10, 20, 3, 0, State::Running, WaitReason::None, 5 + (1u << 17) - 1)},
        {laneInterval(1ll << 50, (1ll << 50) + 1, 3, 0, State::Ready)},                                   // a start past 48 bits (wide)
        {laneInterval(20, 30, 3, 0, State::Ready), laneInterval(10, 40, 3, 0, State::Running)},                     // damaged: before the last end
        {laneInterval(0, 5, 3, 2, State::Idle), laneInterval(9, 12, 3, 2, State::Parked)},                          // a gap (its end kept aside)
    };
    std::vector<IntervalList> lists;
    std::size_t words = 0;
    for (const auto* set : {&fitting, &other})
        for (const auto& intervals : *set) {
            IntervalList& l = lists.emplace_back();
            for (const Interval& i : intervals) l.push_back(i);
            const std::size_t w = l.storeWords();
            INFO("lane of " << intervals.size() << " at " << (set == &fitting ? "fitting " : "other ") << (&intervals - set->data()));
            if (set == &fitting) REQUIRE(w == 2 + (&intervals - set->data() >= kFirstNarrow ? (intervals.size() + 1) / 2 : intervals.size()));
            else REQUIRE(w == 0);
            words += w;
        }
    analysis::LaneStore store(words);
    std::uint64_t* at = store.data();
    for (IntervalList& l : lists)
        if (const std::size_t w = l.storeWords()) {
            l.moveToStore(at);
            at += w;
            REQUIRE(l.inStore());
            REQUIRE(l.itemBytes() == 0);
        }
    REQUIRE(at == store.data() + words);
    std::size_t k = 0;
    for (const auto* set : {&fitting, &other})
        for (const auto& intervals : *set) {
            INFO("lane " << k);
            IntervalList& l = lists[k++];
            same(l, intervals);
            // A copy owns its items; so does a moved-to store's list (its slice moves with it).
            const IntervalList copy = l;
            REQUIRE_FALSE(copy.inStore());
            same(copy, intervals);
            IntervalList assigned;
            assigned = l;
            same(assigned, intervals);
            const IntervalList moved = std::move(assigned);
            same(moved, intervals);
        }
    // Just past each narrow limit a lane still fits, a word an item.
    const std::vector<std::vector<Interval>> not_narrow = {
        {laneInterval(0, 65'536, 3, 0, State::Ready), laneInterval(65'536, 65'540, 3, 0, State::Running)},                 // starts 65536 apart
        {laneInterval(0, 10, 3, 0, State::Ready, WaitReason::None, 9), laneInterval(10, 20, 3, 0, State::Running, WaitReason::None, 9 + 63)}, // causes 63 apart
        {laneInterval(0, 10, 3, 7, State::Ready), laneInterval(10, 20, 3, 0, State::Running)},                              // thread 7
    };
    for (const auto& intervals : not_narrow) {
        IntervalList l;
        for (const Interval& i : intervals) l.push_back(i);
        REQUIRE(l.storeWords() == 2 + intervals.size());
        analysis::LaneStore own(l.storeWords());
        l.moveToStore(own.data());
        same(l, intervals);
    }
    // A store moved by pointer keeps the slices where they are.
    analysis::LaneStore moved_store = std::move(store);
    same(lists[0], fitting[0]);
    // Appending to a list in the store first copies it out (the store is left as it was).
    std::vector<Interval> longer = fitting[2];
    longer.push_back(laneInterval(20, 25, 3, 1, State::Ready));
    lists[2].push_back(longer.back());
    REQUIRE_FALSE(lists[2].inStore());
    same(lists[2], longer);
    same(lists[1], fitting[1]);
}

TEST_CASE("a long lane compacted into chunks reads back as built, chunk by chunk compact or not", "[analysis][packed]") {
    using analysis::Interval;
    using analysis::IntervalList;
    using analysis::State;
    using analysis::WaitReason;
    constexpr std::size_t kChunk = IntervalList::kChunk;
    // Chunks of a thread-lane-like list, each breaking (or not) one limit of
    // a compact chunk; `compact` says which should be stored compact.
    std::vector<Interval> intervals;
    std::vector<bool> compact;
    std::int64_t t = 1000;
    std::uint32_t cause = 100;
    const auto chunk = [&](bool fits, auto&& make) {
        for (std::size_t r = 0; r < kChunk; ++r) intervals.push_back(make(r));
        compact.push_back(fits);
    };
    const auto busy = [&](std::size_t r, std::int32_t thread = 2) { // a running fiber, then the idle loop, in turn
        const std::int64_t start = t;
        t += 37;
        return laneInterval(start, t, r % 2 ? 0 : 5000 + r, thread, r % 2 ? State::Idle : State::Running, WaitReason::None, cause += 3);
    };
    chunk(true, [&](std::size_t r) { return busy(r); });
    chunk(true, [&](std::size_t r) { // the edges: the farthest start, cause and fiber, no cause, a gap, a reason
        Interval i = busy(r);
        if (i.fiber != 0) i.fiber = 70'000 + r;
        i.cause = 20'000 + static_cast<std::uint32_t>(r);
        if (r == 2) i.fiber = 70'000 + 0xfffe, i.cause = 20'000 + 8190;
        if (r == 4) i.cause = analysis::kNoEvent;
        if (r == 6) i.end = i.start + 5, t = i.start + 9; // a gap after it
        if (r == 8) i.state = State::Waiting, i.reason = WaitReason::Exit;
        if (r == kChunk - 1) t = intervals[intervals.size() - r].start + (std::int64_t{1} << 28) - 1, i.start = t - 1, i.end = t;
        return i;
    });
    cause = 30'000;
    chunk(false, [&](std::size_t r) { return busy(r, r == 9 ? 3 : 2); });                  // two threads
    chunk(false, [&](std::size_t r) { Interval i = busy(r); if (r == 7) i.thread = 700; return i; }); // a wide item
    chunk(false, [&](std::size_t r) {                                                         // 2^28 ns apart
        Interval i = busy(r);
        if (r == kChunk - 1) t = i.start = intervals[intervals.size() - r].start + (std::int64_t{1} << 28), i.end = t;
        return i;
    });
    chunk(false, [&](std::size_t r) { Interval i = busy(r); if (r == 3) i.cause = cause + 8191; return i; }); // causes 8191 apart
    chunk(false, [&](std::size_t r) { Interval i = busy(r); if (r == 2) i.fiber = 5000 + 0xffff; return i; }); // fibers 65535 apart
    for (std::size_t r = 0; r < 9; ++r) intervals.push_back(busy(r)); // a short last chunk
    compact.push_back(true);
    IntervalList list;
    for (const Interval& i : intervals) list.push_back(i);
    const std::size_t before = list.itemBytes();
    list.compact();
    REQUIRE(list.compacted());
    requireIntervals(list, intervals);
    // Compact chunks take a word an item and three for their bases; the
    // others two words an item.
    std::size_t words = 0;
    for (std::size_t c = 0; c < compact.size(); ++c) {
        const std::size_t items = std::min(kChunk, intervals.size() - c * kChunk);
        words += compact[c] ? 3 + items : 2 * items;
    }
    CHECK(list.itemBytes() >= words * 8);
    CHECK(list.itemBytes() < words * 8 + 256);
    CHECK(list.itemBytes() < before);
    // A copy stays compact; appending copies the items back out first.
    IntervalList copy = list;
    REQUIRE(copy.compacted());
    requireIntervals(copy, intervals);
    intervals.push_back(laneInterval(t, t + 10, 9, 2, State::Running));
    copy.push_back(intervals.back());
    REQUIRE_FALSE(copy.compacted());
    requireIntervals(copy, intervals);
    // A short list is left as it is.
    IntervalList short_list;
    short_list.push_back(laneInterval(0, 10, 1, 0, State::Running));
    short_list.compact();
    CHECK_FALSE(short_list.compacted());
}

TEST_CASE("a thread's instants read back as pushed: near ones in 16 bits, far ones whole", "[analysis][packed]") {
    std::vector<std::uint32_t> events;
    std::uint32_t e = 5;
    for (int i = 0; i < 300; ++i) {
        e += 1 + static_cast<std::uint32_t>(i % 7);
        if (i == 70) e += 65'534 - 26;        // the last one that fits its block (offset 65534)...
        if (i == 71) e += 1;                  // ...and one past it: whole
        if (i == 200) e += 1'000'000;         // a thread that records rarely
        if (i == 201) e = UINT32_MAX - 1;     // the last index
        if (i == 202) e = 10;                 // back to the start (a damaged trace): whole
        events.push_back(e);
    }
    analysis::InstantList list;
    for (const std::uint32_t event : events) list.push_back(analysis::Instant{event});
    REQUIRE(list.size() == events.size());
    for (std::size_t k = 0; k < events.size(); ++k) {
        INFO("instant " << k);
        REQUIRE(list[k].event == events[k]);
    }
    std::size_t k = 0;
    for (const analysis::Instant& i : list) REQUIRE(i.event == events[k++]);
    CHECK(list.back().event == events.back());
    // Two bytes an instant and four a block; whole: those 65535 or more past
    // their block's first, or before it (after a far one, the rest of its
    // block), and only those.
    std::size_t whole = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
        const std::uint32_t base = events[i - i % analysis::InstantList::kBlock];
        whole += events[i] < base || events[i] - base >= 65'535;
    }
    CHECK(whole > 50);
    CHECK(events[70] - events[64] == 65'534); // (the edge: it fits)
    list.shrink_to_fit();
    CHECK(list.offsetBytes() == 2 * events.size());
    CHECK(list.baseBytes() == 4 * 5);
    CHECK(list.wholeBytes() == 8 * whole);
    // A copy reads the same; clear empties it.
    const analysis::InstantList copy = list;
    REQUIRE(std::equal(copy.begin(), copy.end(), list.begin(), [](analysis::Instant a, analysis::Instant b) { return a.event == b.event; }));
    list.clear();
    CHECK(list.empty());
}

TEST_CASE("near values read back as pushed: 16-bit offsets from each block's first, far ones whole", "[analysis][packed]") {
    constexpr std::size_t kBlock = analysis::NearValueList::kBlock;
    // Block 0: the offsets' edges (+32767, -32767) and one past each (whole);
    // block 1 starts far off (its first is its base); block 2 begins at the
    // largest value and runs down to 0 (whole); then a part block.
    std::vector<std::uint32_t> values;
    for (std::size_t k = 0; k < kBlock; ++k) values.push_back(100'000 + static_cast<std::uint32_t>(k));
    values[1] = 100'000 + 32'767;
    values[2] = 100'000 - 32'767;
    values[3] = 100'000 + 32'768;
    values[4] = 100'000 - 32'768;
    for (std::size_t k = 0; k < kBlock; ++k) values.push_back(4'000'000'000u - static_cast<std::uint32_t>(k));
    for (std::size_t k = 0; k < kBlock; ++k) values.push_back(k == 0 ? UINT32_MAX : k == 1 ? 0 : UINT32_MAX - static_cast<std::uint32_t>(k));
    for (std::size_t k = 0; k < 5; ++k) values.push_back(7 + static_cast<std::uint32_t>(k));
    const analysis::NearValueList list(values);
    REQUIRE(list.size() == values.size());
    for (std::size_t k = 0; k < values.size(); ++k) {
        INFO("value " << k);
        REQUIRE(list[k] == values[k]);
    }
    // 2 bytes a value, 4 a block, 8 for each of the three kept whole.
    CHECK(list.bytes() == 2 * values.size() + 4 * 4 + 8 * 3);
    // Read through iterators, as the flow index's binary searches do.
    std::vector<std::uint32_t> sorted(list.begin() + kBlock, list.begin() + 2 * kBlock);
    CHECK(std::is_sorted(sorted.rbegin(), sorted.rend()));
    CHECK(std::equal(list.begin(), list.end(), values.begin()));
}

TEST_CASE("stored runs of a level of detail read back as pushed, packed or wide", "[analysis][packed]") {
    using analysis::StoredRun;
    const std::vector<StoredRun> runs = {
        {1000, 600, 0, 5, 2},                       // packed
        {6'000'000'000, 5'000'000'000, 5, 2, 6},    // a member over 4.29 s: wide
        {UINT32_MAX - 1, 0, 7, 3, 7},               // the largest packed busy time
        {10, 4, 10, 2, 11},
    };
    analysis::PackedList<analysis::StoredRunCodec> list;
    for (const StoredRun& r : runs) list.push_back(r);
    CHECK(list.wideCount() == 1);
    for (std::size_t k = 0; k < runs.size(); ++k) {
        INFO("run " << k);
        CHECK(list[k].busy == runs[k].busy);
        CHECK(list[k].dominant_ns == runs[k].dominant_ns);
        CHECK(list[k].first == runs[k].first);
        CHECK(list[k].count == runs[k].count);
        CHECK(list[k].dominant == runs[k].dominant);
    }
}

TEST_CASE("a fiber lane's id, links, creation and rare fields read back as set, packed or whole", "[analysis][packed]") {
    using analysis::FiberLane;
    using analysis::State;
    constexpr std::int64_t kMax48 = (std::int64_t{1} << 47) - 1;
    struct Created {
        std::int64_t time;
        std::int32_t thread;
        std::uint64_t parent;
    };
    const std::vector<Created> cases = {
        {0, 0, 0},                            // packed: the smallest
        {10, 3, 1},                           // packed
        {kMax48, 65533, 0xfffffffe},          // packed: the largest of each
        {-kMax48 - 1, 0, 5},                  // packed: the earliest time
        {kMax48 + 1, 1, 2},                   // a time past 48 bits (the lane's interval is whole)
        {5, 65534, 2},                        // whole: thread + 1 is the escape code
        {5, 70000, 2},                        // whole: a crafted thread
        {5, 1, 0xffffffff},                   // whole parent: the escape code
        {5, 1, std::uint64_t{1} << 40},       // whole parent: past 32 bits
    };
    // Created where its lane starts (the time read from the lane), or after
    // its lane began (a record named it before its create: the time kept whole).
    for (const bool starts_lane : {true, false})
        for (const Created& c : cases) {
            INFO("created at " << c.time << " on thread " << c.thread << " by fiber " << c.parent << (starts_lane ? ", starting its lane" : ", after its lane began"));
            FiberLane fl;
            REQUIRE(fl.created() == -1);
            REQUIRE(fl.createdThread() == -1);
            REQUIRE(!fl.createdInTrace());
            REQUIRE(fl.parent() == 0);
            if (!starts_lane) fl.lane.intervals.push_back(laneInterval(c.time - 3, c.time, 9, 0, State::Waiting));
            fl.setCreated(c.time, c.thread, c.parent, starts_lane);
            fl.lane.intervals.push_back(laneInterval(c.time, c.time + 1, 9, 0, State::Ready));
            fl.setAwaitedBy(c.parent + 1);
            const FiberLane copy = fl; // copies the rare block, if any
            for (const FiberLane* x : {static_cast<const FiberLane*>(&fl), &copy}) {
                REQUIRE(x->created() == c.time);
                REQUIRE(x->createdThread() == c.thread);
                REQUIRE(x->createdInTrace());
                REQUIRE(x->parent() == c.parent);
                REQUIRE(x->awaitedBy() == c.parent + 1);
                REQUIRE(!x->named());
                REQUIRE(x->zones().empty());
            }
            // Set again (a damaged trace's second create record) with packed values: no stale whole value shows.
            fl.setCreated(c.time, 2, 3, starts_lane);
            fl.setAwaitedBy(4);
            REQUIRE(fl.created() == c.time);
            REQUIRE(fl.createdThread() == 2);
            REQUIRE(fl.parent() == 3);
            REQUIRE(fl.awaitedBy() == 4);
        }
    // Ids: 32 bits, and whole past them.
    for (const std::uint64_t id : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{0xfffffffe}, std::uint64_t{0xffffffff}, std::uint64_t{1} << 40}) {
        INFO("fiber " << id);
        FiberLane fl;
        fl.setFiberId(id);
        REQUIRE(fl.fiber() == id);
        REQUIRE(FiberLane(fl).fiber() == id);
        REQUIRE((fl.rareBytes() > 0) == (id >= 0xffffffff)); // (the rare block only for a whole id)
    }
    // The usual fiber fits its word: a parent created shortly before it (in
    // either order of ids: the runtime hands out ids in per-thread blocks),
    // awaited by that parent, created on a thread below 510. What does not
    // fit goes whole to the rare block and reads back the same, whatever the
    // order the builder learns it in.
    struct Links {
        std::uint64_t fiber, parent, awaiter;
        std::int32_t thread;
        bool fits;
    };
    const std::vector<Links> links = {
        {1000, 999, 999, 0, true},
        {1000, 1300, 1300, 3, true},                       // a parent with a later id
        {1000, 0, 0, 2, true},                             // created by an idle loop, never awaited
        {(1u << 20) + 5, 5, 5, 1, false},                  // a parent ~a million ids away: whole
        {5, (1u << 20) + 5, 0, 1, false},                  // likewise, the other way
        {1000, 999, 42, 1, false},                         // awaited by another fiber: whole
        {1000, 999, 999, 509, true},                       // the highest thread that fits
        {1000, 999, 999, 510, false},                      // thread + 1 is the escape code
        {std::uint64_t{1} << 40, (std::uint64_t{1} << 40) - 1, (std::uint64_t{1} << 40) - 1, 0, false}, // a whole id, a near parent
        {0xfffffffe, 1, 0, 0, false},                      // the largest narrow id, a far parent
    };
    for (const Links& l : links) {
        for (const bool await_first : {false, true}) {
            INFO("fiber " << l.fiber << " parent " << l.parent << " awaiter " << l.awaiter << " thread " << l.thread << (await_first ? ", awaited first" : ""));
            FiberLane fl;
            fl.setFiberId(l.fiber);
            if (await_first) fl.setAwaitedBy(l.awaiter);
            fl.setCreated(7, l.thread, l.parent, true);
            if (!await_first) fl.setAwaitedBy(l.awaiter);
            fl.lane.intervals.push_back(laneInterval(7, 9, l.fiber < 0xffffffff ? l.fiber : 0, 0, State::Ready));
            CHECK(fl.fiber() == l.fiber);
            CHECK(fl.parent() == l.parent);
            CHECK(fl.awaitedBy() == l.awaiter);
            CHECK(fl.createdThread() == l.thread);
            CHECK(fl.created() == 7);
            if (!await_first) CHECK((fl.rareBytes() == 0) == l.fits);
        }
    }
    // A second create record with another parent: an awaiter that was the
    // old parent stays who it was.
    {
        FiberLane fl;
        fl.setFiberId(1000);
        fl.setCreated(7, 0, 999, true);
        fl.setAwaitedBy(999);
        REQUIRE(fl.rareBytes() == 0);
        fl.setCreated(7, 0, 998, true);
        CHECK(fl.parent() == 998);
        CHECK(fl.awaitedBy() == 999);
    }
    // A name and zones share the rare block; a lane with none allocates nothing.
    FiberLane plain;
    plain.setFiberId(7);
    plain.setCreated(1, 0, 1, true);
    plain.setRecordedName("");
    REQUIRE(plain.rareBytes() == 0);
    FiberLane named;
    named.setRecordedName("a name longer than the short-string buffer");
    named.editZones().push_back(analysis::Zone{1, 2, 3, 4, 5, 0, 0});
    named.setCreated(kMax48 + 1, 1, std::uint64_t{1} << 40, false);
    FiberLane moved = std::move(named);
    REQUIRE(moved.recordedName() == "a name longer than the short-string buffer");
    REQUIRE(moved.name() == "a name longer than the short-string buffer");
    REQUIRE(moved.zones().size() == 1);
    REQUIRE(moved.zones()[0].label == 3);
    REQUIRE(moved.created() == kMax48 + 1);
    REQUIRE(moved.parent() == std::uint64_t{1} << 40);
    REQUIRE(moved.rareBytes() > 0);
    REQUIRE(moved.nameBytes() > 0);
    // The rare block rides in the lane's side block: an empty lane keeps a
    // block for it through a copy and a trim, a lane with one stays out of
    // the store, and appending keeps it.
    FiberLane empty_named;
    empty_named.setRecordedName("w");
    empty_named.lane.intervals.shrink_to_fit();
    const FiberLane empty_copy = empty_named;
    REQUIRE(empty_copy.recordedName() == "w");
    REQUIRE(empty_named.recordedName() == "w");
    REQUIRE(empty_copy.lane.intervals.empty());
    for (int k = 0; k < 100; ++k) empty_named.lane.intervals.push_back(laneInterval(k, k + 1, 7, 0, State::Running));
    empty_named.lane.intervals.shrink_to_fit();
    REQUIRE(empty_named.recordedName() == "w");
    REQUIRE(empty_named.lane.intervals.storeWords() == 0);
    empty_named.lane.intervals.compact();
    REQUIRE(empty_named.lane.intervals.compacted());
    REQUIRE(FiberLane(empty_named).recordedName() == "w");
    REQUIRE(empty_named.lane.intervals.size() == 100);
    empty_named.lane.intervals.push_back(laneInterval(100, 101, 7, 0, State::Running)); // (owns a block again)
    REQUIRE(empty_named.recordedName() == "w");
    REQUIRE(empty_named.lane.intervals[100].start == 100);
    FiberLane unnamed;
    unnamed.lane.intervals.push_back(laneInterval(0, 1, 7, 0, State::Running));
    REQUIRE(unnamed.lane.intervals.storeWords() > 0);
    REQUIRE(unnamed.rareBytes() == 0);
}
