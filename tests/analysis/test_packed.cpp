// The model's packed lists (packed_list.hpp; issue 13: memory): a value
// that fits is stored packed and one that does not is kept whole beside
// the list, and both read back exactly as pushed, also after a set() and
// after the items are reordered (the close of the model sorts the flows).
#include <catch2/catch.hpp>

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
