// Reordering the model's long lists when it is closed (timeline_close.cpp):
// applying an order (permute, permuteInPlace) and finding one for keys that
// are nearly sorted already (sortNearlySorted). Private to the analysis
// library (not under include/).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace fiberscope::analysis::detail {

// Two ways to reorder `v` so that v[k] becomes the old v[order[k]].
//
// permute moves each element once into a new list of the exact size, reading
// kAhead elements ahead with a prefetch: the reads are independent of each
// other, at the cost of one extra copy of `v` at the peak. For the fiber
// lanes (by first appearance -> by id), whose permutation's cycles wander
// over the whole list; measured at 10M events: ~120 ms where following the
// cycles took ~200 ms (thread CPU time).
//
// permuteInPlace follows the cycles (`order` is used up), each step a load
// that depends on the one before it, prefetched along the cycle. No copy:
// for the flows, whose order is nearly sorted already (a flow is made when
// its effect happens, shortly after its cause), so the cycles are short and
// local (10M events: ~55 ms).
template <class T>
void permute(std::vector<T>& v, const std::vector<std::uint32_t>& order) {
    constexpr std::size_t kAhead = 16;
    std::vector<T> moved;
    moved.reserve(order.size());
    for (std::size_t k = 0; k < order.size(); ++k) {
        if (k + kAhead < order.size()) __builtin_prefetch(&v[order[k + kAhead]]);
        moved.push_back(std::move(v[order[k]]));
    }
    v = std::move(moved);
}

template <class T>
void permuteInPlace(std::vector<T>& v, std::vector<std::uint32_t>& order) {
    constexpr std::uint32_t kDone = UINT32_MAX;
    constexpr int kAhead = 8;
    for (std::uint32_t k = 0; k < order.size(); ++k) {
        if (order[k] == kDone || order[k] == k) continue;
        std::uint32_t ahead = k; // kAhead steps further along the cycle, while it lasts
        for (int step = 0; step < kAhead && order[ahead] != k; ++step) ahead = order[ahead];
        T held = std::move(v[k]);
        std::uint32_t j = k;
        for (;;) {
            if (order[ahead] != k) {
                ahead = order[ahead];
                __builtin_prefetch(&v[ahead]);
            }
            const std::uint32_t from = order[j];
            order[j] = kDone;
            if (from == k) {
                v[j] = std::move(held);
                break;
            }
            v[j] = std::move(v[from]);
            j = from;
        }
    }
}

// Sorts `keys`, which are usually nearly in order (a flow is made when its
// effect happens, shortly after its cause): an insertion sort costs one
// compare per key plus one move per inversion, so it runs until it has spent
// a few moves per key and leaves the rest to std::sort (10M events: the
// flows' keys in ~10 ms, where std::sort took ~80).
template <class Key>
void sortNearlySorted(std::vector<Key>& keys) {
    const std::size_t budget = 8 * keys.size() + 64;
    std::size_t moves = 0;
    for (std::size_t k = 1; k < keys.size(); ++k) {
        if (!(keys[k] < keys[k - 1])) continue;
        const Key held = keys[k];
        std::size_t j = k;
        for (; j > 0 && held < keys[j - 1]; --j) keys[j] = keys[j - 1];
        keys[j] = held;
        moves += k - j;
        if (moves > budget) {
            std::sort(keys.begin(), keys.end());
            return;
        }
    }
}

} // namespace fiberscope::analysis::detail
