// Counter tracks (issue 14): how many fibers wait in each thread's ready
// queue, how many ring operations are in flight (per thread and in all), and
// how many fibers are alive, as step functions of time.
//
// Why it is built this way:
//   * They are computed once per model, from what the analysis already keeps
//     (Timeline::replay's Queued / InFlight items with their [start, end),
//     the queue slots' owner histories, each FiberLane's created/finished):
//     one sweep in time order, O(items log open) with a heap of open items,
//     so no copy of the events is made.
//   * A series stores only its change points (a time and the value from then
//     on), so a quiet stretch costs nothing however long it is.
//   * Drawing asks for the min and max in each pixel (decimate). Per pixel
//     that is two binary searches for the change points inside it and a
//     range min/max over them, answered from maxima and minima precomputed
//     per level of detail (blocks of 16, 256, ... change points), so a pixel
//     costs O(log n) and a frame over a 10M-event trace stays fast; the true
//     max in a pixel is never lost to sampling.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "fiberscope/analysis/timeline.hpp"

namespace fiberscope::viewer {

// The min and max of a series over a stretch of time.
struct CounterRange {
    std::int32_t min = 0;
    std::int32_t max = 0;
};

// A series' change times, strictly increasing, in ~2 bytes each (issue 13:
// the counter tracks held ~8 bytes per trace event, 12 per change point):
// each is an offset from the first time of its block of kBlock, 16 bits
// while the block spans under 65.5 us (a busy counter changes far more
// often), else 32 bits (the block is widened when a time does not fit:
// only the last block's times move, so appending stays O(1) amortised),
// plus 12 bytes per block. A time more than 4.29 s after its block's first
// (a long quiet stretch) is kept whole beside them, found by a binary
// search over the few such. Reads give values, so `s.times[i]` reads as
// from a vector.
class ChangeTimes {
public:
    static constexpr std::size_t kBlock = 64;

    std::size_t size() const noexcept { return size_; }
    bool empty() const noexcept { return size_ == 0; }
    std::int64_t operator[](std::size_t i) const noexcept {
        const std::uint32_t at = at_[i / kBlock];
        const std::size_t r = i % kBlock;
        if (!(at & kWide)) return bases_[i / kBlock] + static_cast<std::int64_t>(narrow_[at + r]);
        const std::uint32_t offset = wide_[(at & ~kWide) + r];
        return offset == kWhole ? wholeAt(i) : bases_[i / kBlock] + static_cast<std::int64_t>(offset);
    }
    std::int64_t front() const noexcept { return (*this)[0]; }
    std::int64_t back() const noexcept { return (*this)[size() - 1]; }
    void push_back(std::int64_t t);
    void pop_back() noexcept;
    void shrink_to_fit();
    // The index of the first time after `t` (upper bound) / at or after `t`
    // (lower bound), among [from, size()).
    std::size_t upperBound(std::int64_t t, std::size_t from = 0) const noexcept;
    std::size_t lowerBound(std::int64_t t, std::size_t from = 0) const noexcept;
    // Heap bytes by capacity, with the allocator's per-block overhead.
    std::size_t bytes() const noexcept;

private:
    static constexpr std::uint32_t kWhole = UINT32_MAX;
    static constexpr std::uint32_t kWide = 1u << 31; // in at_: the block's offsets are in wide_
    std::int64_t wholeAt(std::size_t i) const noexcept;
    void widenLast();
    std::size_t size_ = 0;
    std::vector<std::int64_t> bases_;                         // per block: its first time
    std::vector<std::uint32_t> at_;                           // per block: where its offsets begin in narrow_ (or, kWide, in wide_)
    std::vector<std::uint16_t> narrow_;                       // time - its block's base
    std::vector<std::uint32_t> wide_;                         // time - its block's base; kWhole: in whole_
    std::vector<std::pair<std::uint32_t, std::int64_t>> whole_; // (index, time), by index
};

// A series' values, ~3 bits each once the series is complete (issue 13:
// 4 bytes a change point, ~1 per trace event on a fiber-heavy trace, then
// 1.25). Built by appending (push_back, setBack, pop_back) into a plain
// list; freeze() then keeps, per block of kBlock values, the block's first
// value, and for each later one the step from the value before it in two
// bits: -1, +1, 0, or "kept whole" (a step of any other size, found by a
// binary search over the few such). A counter moves by one at nearly every
// change (a fiber queued or run, an operation submitted or completed, a
// fiber born or finished; changes at the same instant are merged, which
// makes the rare larger step). The codes sit in two 64-bit masks per block,
// so a value is the last whole value at or before it (the block's first,
// or a step kept whole) plus the +1 steps after it less the -1 steps, each
// a popcount: O(1), no walk. Reads give values, as ChangeTimes' do.
class ChangeValues {
public:
    static constexpr std::size_t kBlock = 64;
    using const_iterator = analysis::IndexIterator<ChangeValues, std::int32_t>;

    std::size_t size() const noexcept { return frozen_ ? size_ : plain_.size(); }
    bool empty() const noexcept { return size() == 0; }
    std::int32_t operator[](std::size_t i) const noexcept { return frozen_ ? frozenAt(i) : plain_[i]; }
    std::int32_t back() const noexcept { return (*this)[size() - 1]; }
    const_iterator begin() const noexcept { return {this, 0}; }
    const_iterator end() const noexcept { return {this, size()}; }
    // While building (a frozen list thaws first: O(n)).
    void push_back(std::int32_t v);
    void pop_back();
    void setBack(std::int32_t v);
    // Compacts the list (done by indexCounter).
    void freeze();
    // Heap bytes by capacity, with the allocator's per-block overhead.
    std::size_t bytes() const noexcept;

private:
    // A block's steps: per value (bit r for its r-th, r >= 1), lo and hi
    // together say -1 (0, 0), +1 (1, 0), 0 (0, 1) or whole (1, 1).
    struct Steps {
        std::uint64_t lo = 0, hi = 0;
    };
    std::int32_t frozenAt(std::size_t i) const noexcept;
    std::int32_t wholeAt(std::size_t i) const noexcept;
    void thaw();
    bool frozen_ = false;
    std::size_t size_ = 0;                                      // frozen
    std::vector<std::int32_t> plain_;                           // while building
    std::vector<std::int32_t> firsts_;                          // frozen: per block, its first value
    std::vector<Steps> steps_;                                  // frozen: per block, its steps
    std::vector<std::pair<std::uint32_t, std::int32_t>> whole_; // frozen: (index, value) of the steps kept whole, by index
};

struct CounterSeries {
    ChangeTimes times;                // change points, strictly increasing
    ChangeValues values;              // values[i] holds on [times[i], times[i+1]); 0 before times[0]
    std::int32_t peak = 0;            // the largest value anywhere
    // Per level of detail k >= 1: the min/max of each block of 16^k values.
    std::vector<std::vector<std::int32_t>> level_max, level_min;
};

// The series' value at `time`.
std::int32_t counterAt(const CounterSeries& series, std::int64_t time) noexcept;
// The min and max over [t0, t1) (the value at t0 if t1 <= t0).
CounterRange counterRange(const CounterSeries& series, std::int64_t t0, std::int64_t t1) noexcept;
// The min and max in each of `pixels` pixels, pixel p covering
// [floor(t0 + p * ns_per_pixel), floor(t0 + (p + 1) * ns_per_pixel)).
void decimateCounter(const CounterSeries& series, double t0, double ns_per_pixel, int pixels, std::vector<CounterRange>& out);
// (Re)builds the per-level minima and maxima from `values` (computeCounters
// does it; for series built by hand).
void indexCounter(CounterSeries& series);

struct Counters {
    std::vector<CounterSeries> ready;     // per thread lane (index in Timeline::threads): its ready-queue length
    std::vector<CounterSeries> in_flight; // per thread lane: ring operations submitted there, not yet completed
    CounterSeries ready_total;            // all ready queues together
    CounterSeries in_flight_total;        // every operation in flight
    CounterSeries fibers_alive;           // created (or there when the recording began) and not finished
};

// Which series to compute (each costs ~4 bytes a change point, kept while
// viewing: the viewer asks only for the tracks it draws). A series not asked
// for is left empty, and a per-thread list not asked for has no entries.
struct CounterSelection {
    bool ready_per_thread = true;
    bool ready_total = true;
    bool in_flight_per_thread = true;
    bool in_flight_total = true;
    bool fibers_alive = true;
};

Counters computeCounters(const analysis::Timeline& timeline, const CounterSelection& want = {});

// The timeline's counter tracks draw a ready track per thread lane up to
// this many lanes, else one for all queues; then the operations in flight
// in all, and the fibers alive.
inline constexpr std::size_t kMaxReadyTracks = 8;
// The series those tracks need (what the viewer computes).
CounterSelection drawnCounters(const analysis::Timeline& timeline) noexcept;
// Heap bytes the counters hold (by capacity, with the allocator's per-block
// overhead as analysis::heapBytes counts it): `fiberscope benchmark` prints it.
std::size_t countersBytes(const Counters& counters) noexcept;

} // namespace fiberscope::viewer
