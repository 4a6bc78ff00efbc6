// Counter tracks as step functions (see counters.hpp for why they are built
// this way): one sweep over the replay items and the slots' owner changes in
// time order, then per-level minima and maxima for decimation.
#include "model/counters.hpp"

#include "fiberscope/analysis/footprint.hpp"
#include "model/fibers_in_view.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <queue>
#include <stdexcept>
#include <utility>

namespace fiberscope::viewer {

namespace {

constexpr std::size_t kFan = 16; // values per block at each level of detail

// Sets the series' value from `time` on, merging changes at one time into
// one change point and dropping those that change nothing.
void emit(CounterSeries& s, std::int64_t time, std::int32_t value) {
    if (!s.times.empty() && s.times.back() == time) {
        s.values.setBack(value);
        const std::int32_t before = s.values.size() >= 2 ? s.values[s.values.size() - 2] : 0;
        if (before == value) s.times.pop_back(), s.values.pop_back();
        return;
    }
    const std::int32_t last = s.values.empty() ? 0 : s.values.back();
    if (last == value) return;
    s.times.push_back(time);
    s.values.push_back(value);
}

// The min and max of values [lo, hi) (hi > lo), going up a level of detail
// wherever whole blocks are covered.
void rangeOf(const CounterSeries& s, std::size_t level, std::size_t lo, std::size_t hi, CounterRange& acc) {
    const auto scan = [&](std::size_t a, std::size_t b) {
        if (level == 0) {
            for (std::size_t i = a; i < b; ++i) acc.min = std::min(acc.min, s.values[i]), acc.max = std::max(acc.max, s.values[i]);
        } else {
            const auto& mx = s.level_max[level - 1];
            const auto& mn = s.level_min[level - 1];
            for (std::size_t i = a; i < b; ++i) acc.min = std::min(acc.min, mn[i]), acc.max = std::max(acc.max, mx[i]);
        }
    };
    if (hi - lo <= 2 * kFan || level >= s.level_max.size()) {
        scan(lo, hi);
        return;
    }
    const std::size_t a = (lo + kFan - 1) / kFan, b = hi / kFan; // whole blocks [a, b) one level up
    scan(lo, a * kFan);
    scan(b * kFan, hi);
    rangeOf(s, level + 1, a, b, acc);
}

// A sweep's per-series running values, emitted once per time.
struct Sweep {
    std::vector<CounterSeries*> series;
    std::vector<std::int32_t> value;
    std::vector<char> dirty;
    std::vector<std::size_t> touched;

    std::size_t add(CounterSeries* s) {
        series.push_back(s);
        value.push_back(0);
        dirty.push_back(0);
        return series.size() - 1;
    }
    // A series not asked for (null) is swept but not kept.
    void change(std::size_t k, std::int32_t delta) {
        if (!series[k]) return;
        value[k] += delta;
        if (!dirty[k]) dirty[k] = 1, touched.push_back(k);
    }
    void flush(std::int64_t time) {
        for (std::size_t k : touched) {
            emit(*series[k], time, value[k]);
            dirty[k] = 0;
        }
        touched.clear();
    }
};

} // namespace

void ChangeTimes::push_back(std::int64_t t) {
    const std::size_t i = size_;
    if (i >= UINT32_MAX || narrow_.size() >= kWide || wide_.size() >= kWide) throw std::length_error("ChangeTimes: too many change points (2^31)");
    if (i % kBlock == 0) {
        bases_.push_back(t);
        at_.push_back(static_cast<std::uint32_t>(narrow_.size()));
    }
    const std::int64_t base = bases_.back();
    const std::uint64_t offset = static_cast<std::uint64_t>(t) - static_cast<std::uint64_t>(base); // modular: no overflow
    const bool fits = t >= base;
    if (!(at_.back() & kWide)) {
        if (fits && offset <= UINT16_MAX) {
            narrow_.push_back(static_cast<std::uint16_t>(offset));
            ++size_;
            return;
        }
        widenLast();
    }
    if (fits && offset < kWhole) {
        wide_.push_back(static_cast<std::uint32_t>(offset));
    } else {
        wide_.push_back(kWhole);
        whole_.emplace_back(static_cast<std::uint32_t>(i), t);
    }
    ++size_;
}

// Moves the last block's offsets from narrow_ to wide_ (it is the last
// block, so they are narrow_'s last).
void ChangeTimes::widenLast() {
    const std::uint32_t at = at_.back();
    wide_.reserve(wide_.size() + kBlock);
    const std::uint32_t to = static_cast<std::uint32_t>(wide_.size());
    wide_.insert(wide_.end(), narrow_.begin() + at, narrow_.end());
    narrow_.resize(at);
    at_.back() = to | kWide;
}

void ChangeTimes::pop_back() noexcept {
    const std::size_t i = size_ - 1;
    if (at_.back() & kWide) {
        if (wide_.back() == kWhole) whole_.pop_back();
        wide_.pop_back();
    } else {
        narrow_.pop_back();
    }
    --size_;
    if (i % kBlock == 0) {
        bases_.pop_back();
        at_.pop_back();
    }
}

void ChangeTimes::shrink_to_fit() {
    bases_.shrink_to_fit();
    at_.shrink_to_fit();
    narrow_.shrink_to_fit();
    wide_.shrink_to_fit();
    whole_.shrink_to_fit();
}

std::int64_t ChangeTimes::wholeAt(std::size_t i) const noexcept { return analysis::sideValueAt(whole_, i); }

std::size_t ChangeTimes::upperBound(std::int64_t t, std::size_t from) const noexcept {
    std::size_t lo = from, hi = size();
    while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if ((*this)[mid] <= t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

std::size_t ChangeTimes::lowerBound(std::int64_t t, std::size_t from) const noexcept {
    std::size_t lo = from, hi = size();
    while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if ((*this)[mid] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

std::size_t ChangeTimes::bytes() const noexcept {
    return analysis::heapBytes(bases_.capacity() * sizeof(std::int64_t)) + analysis::heapBytes(at_.capacity() * sizeof(std::uint32_t)) +
           analysis::heapBytes(narrow_.capacity() * sizeof(std::uint16_t)) + analysis::heapBytes(wide_.capacity() * sizeof(std::uint32_t)) +
           analysis::heapBytes(whole_.capacity() * sizeof(whole_[0]));
}

std::int32_t counterAt(const CounterSeries& s, std::int64_t time) noexcept {
    const std::size_t after = s.times.upperBound(time);
    return after == 0 ? 0 : s.values[after - 1];
}

CounterRange counterRange(const CounterSeries& s, std::int64_t t0, std::int64_t t1) noexcept {
    const std::int32_t at = counterAt(s, t0);
    CounterRange r{at, at};
    if (t1 <= t0) return r;
    // The change points inside (t0, t1).
    const std::size_t lo = s.times.upperBound(t0);
    const std::size_t hi = s.times.lowerBound(t1, lo);
    if (hi > lo) rangeOf(s, 0, lo, hi, r);
    return r;
}

void decimateCounter(const CounterSeries& s, double t0, double ns_per_pixel, int pixels, std::vector<CounterRange>& out) {
    out.clear();
    if (pixels <= 0) return;
    out.reserve(static_cast<std::size_t>(pixels));
    const auto bound = [&](int p) {
        const double t = std::floor(t0 + static_cast<double>(p) * ns_per_pixel);
        return t <= -9.2e18 ? INT64_MIN + 1 : t >= 9.2e18 ? INT64_MAX - 1 : static_cast<std::int64_t>(t);
    };
    std::int64_t b0 = bound(0);
    for (int p = 0; p < pixels; ++p) {
        const std::int64_t b1 = bound(p + 1);
        out.push_back(counterRange(s, b0, b1));
        b0 = b1;
    }
}

void ChangeValues::push_back(std::int32_t v) {
    thaw();
    plain_.push_back(v);
}

void ChangeValues::pop_back() {
    thaw();
    plain_.pop_back();
}

void ChangeValues::setBack(std::int32_t v) {
    thaw();
    plain_.back() = v;
}

void ChangeValues::thaw() {
    if (!frozen_) return;
    std::vector<std::int32_t> plain(size());
    for (std::size_t i = 0; i < plain.size(); ++i) plain[i] = (*this)[i];
    *this = ChangeValues();
    plain_ = std::move(plain);
}

void ChangeValues::freeze() {
    if (frozen_) return;
    // Built aside, so that a failed allocation leaves the list as it was.
    const std::size_t n = plain_.size();
    const std::size_t blocks = (n + kBlock - 1) / kBlock;
    std::vector<std::int32_t> firsts(blocks);
    std::vector<Steps> steps(blocks);
    std::vector<std::pair<std::uint32_t, std::int32_t>> whole;
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t b = i / kBlock, r = i % kBlock;
        if (r == 0) {
            firsts[b] = plain_[i];
            continue;
        }
        const std::int64_t step = static_cast<std::int64_t>(plain_[i]) - plain_[i - 1];
        const std::uint64_t bit = std::uint64_t{1} << r;
        if (step == 1) {
            steps[b].lo |= bit;
        } else if (step == 0) {
            steps[b].hi |= bit;
        } else if (step != -1) {
            steps[b].lo |= bit, steps[b].hi |= bit;
            whole.emplace_back(static_cast<std::uint32_t>(i), plain_[i]);
        }
    }
    whole.shrink_to_fit();
    firsts_ = std::move(firsts);
    steps_ = std::move(steps);
    whole_ = std::move(whole);
    size_ = n;
    std::vector<std::int32_t>().swap(plain_); // (assigning {} would keep its block)
    frozen_ = true;
}

std::int32_t ChangeValues::frozenAt(std::size_t i) const noexcept {
    const std::size_t b = i / kBlock, r = i % kBlock;
    const Steps& s = steps_[b];
    // Bits 1..r: the steps up to value i; the last kept whole among them is where to count from.
    const std::uint64_t upto = r == kBlock - 1 ? ~std::uint64_t{1} : ((std::uint64_t{1} << (r + 1)) - 1) & ~std::uint64_t{1};
    const std::uint64_t whole = s.lo & s.hi & upto;
    std::int64_t value = firsts_[b];
    std::uint64_t after = upto;
    if (whole) {
        const int at = 63 - std::countl_zero(whole);
        value = wholeAt(b * kBlock + static_cast<std::size_t>(at));
        after = upto & ~((std::uint64_t{2} << at) - 1); // (at < 63 here, or nothing follows it)
    }
    const int up = std::popcount(s.lo & ~s.hi & after);
    const int down = std::popcount(~s.lo & ~s.hi & after);
    return static_cast<std::int32_t>(value + up - down);
}

std::int32_t ChangeValues::wholeAt(std::size_t i) const noexcept { return analysis::sideValueAt(whole_, i); }

std::size_t ChangeValues::bytes() const noexcept {
    return analysis::heapBytes(plain_.capacity() * sizeof(std::int32_t)) + analysis::heapBytes(firsts_.capacity() * sizeof(std::int32_t)) +
           analysis::heapBytes(steps_.capacity() * sizeof(Steps)) + analysis::heapBytes(whole_.capacity() * sizeof(whole_[0]));
}

void indexCounter(CounterSeries& s) {
    // The series is complete: give back its growth slack and compact its
    // values (it lives as long as the model).
    s.times.shrink_to_fit();
    s.values.freeze();
    s.level_max.clear();
    s.level_min.clear();
    s.peak = 0;
    for (std::int32_t v : s.values) s.peak = std::max(s.peak, v);
    if (s.values.size() > kFan) { // the first level from the values
        std::vector<std::int32_t> mx((s.values.size() + kFan - 1) / kFan, INT32_MIN);
        std::vector<std::int32_t> mn(mx.size(), INT32_MAX);
        for (std::size_t i = 0; i < s.values.size(); ++i) {
            const std::int32_t v = s.values[i];
            mx[i / kFan] = std::max(mx[i / kFan], v);
            mn[i / kFan] = std::min(mn[i / kFan], v);
        }
        s.level_max.push_back(std::move(mx));
        s.level_min.push_back(std::move(mn));
    }
    const std::vector<std::int32_t>* below_max = s.level_max.empty() ? nullptr : &s.level_max.back();
    const std::vector<std::int32_t>* below_min = s.level_min.empty() ? nullptr : &s.level_min.back();
    while (below_max && below_max->size() > kFan) {
        std::vector<std::int32_t> mx((below_max->size() + kFan - 1) / kFan, INT32_MIN);
        std::vector<std::int32_t> mn(mx.size(), INT32_MAX);
        for (std::size_t i = 0; i < below_max->size(); ++i) {
            mx[i / kFan] = std::max(mx[i / kFan], (*below_max)[i]);
            mn[i / kFan] = std::min(mn[i / kFan], (*below_min)[i]);
        }
        s.level_max.push_back(std::move(mx));
        s.level_min.push_back(std::move(mn));
        below_max = &s.level_max.back();
        below_min = &s.level_min.back();
    }
}

Counters computeCounters(const analysis::Timeline& tl, const CounterSelection& want) {
    using analysis::ItemKind;
    using analysis::StateItem;
    Counters c;
    const std::size_t lanes = tl.threads.size();
    if (want.ready_per_thread) c.ready.resize(lanes);
    if (want.in_flight_per_thread) c.in_flight.resize(lanes);

    Sweep sweep;
    std::vector<std::size_t> ready_k(lanes), flight_k(lanes);
    for (std::size_t l = 0; l < lanes; ++l) {
        ready_k[l] = sweep.add(want.ready_per_thread ? &c.ready[l] : nullptr);
        flight_k[l] = sweep.add(want.in_flight_per_thread ? &c.in_flight[l] : nullptr);
    }
    const std::size_t ready_total = sweep.add(want.ready_total ? &c.ready_total : nullptr);
    const std::size_t flight_total = sweep.add(want.in_flight_total ? &c.in_flight_total : nullptr);
    const auto laneOf = [&](std::uint32_t thread) -> std::size_t {
        if (thread >= tl.lane_of_thread.size()) return SIZE_MAX;
        const std::size_t lane = tl.lane_of_thread[thread];
        return lane < lanes ? lane : SIZE_MAX;
    };

    // Queue slots: the fibers in each, and its owner now (as stateAt reads
    // the owner history: the first entry also covers the time before it).
    const auto& slots = tl.replay.slots;
    std::vector<std::int32_t> slot_count(slots.size(), 0);
    std::vector<std::uint32_t> slot_owner(slots.size(), UINT32_MAX);
    struct OwnerChange {
        std::int64_t since;
        std::uint32_t slot, thread;
    };
    std::vector<OwnerChange> owners;
    for (std::size_t s = 0; s < slots.size(); ++s) {
        if (slots[s].empty()) continue;
        slot_owner[s] = slots[s].front().thread;
        for (std::size_t k = 1; k < slots[s].size(); ++k)
            owners.push_back({slots[s][k].since, static_cast<std::uint32_t>(s), slots[s][k].thread});
    }
    std::stable_sort(owners.begin(), owners.end(), [](const OwnerChange& a, const OwnerChange& b) { return a.since < b.since; });

    const auto& items = tl.replay.items; // by start
    const auto apply = [&](const StateItem& item, std::int32_t delta) {
        if (item.kind == ItemKind::Queued) {
            if (item.where >= slots.size()) return;
            slot_count[item.where] += delta;
            const std::size_t lane = laneOf(slot_owner[item.where]);
            if (lane == SIZE_MAX) return;
            sweep.change(ready_k[lane], delta);
            sweep.change(ready_total, delta);
        } else {
            const std::size_t lane = laneOf(item.where);
            if (lane == SIZE_MAX) return;
            sweep.change(flight_k[lane], delta);
            sweep.change(flight_total, delta);
        }
    };
    using Open = std::pair<std::int64_t, std::uint32_t>; // (end, item)
    std::priority_queue<Open, std::vector<Open>, std::greater<Open>> open;
    std::size_t next_item = 0, next_owner = 0;
    for (;;) {
        std::int64_t t = INT64_MAX;
        bool any = false;
        if (next_item < items.size()) t = std::min(t, items[next_item].start), any = true;
        if (!open.empty()) t = std::min(t, open.top().first), any = true;
        if (next_owner < owners.size()) t = std::min(t, owners[next_owner].since), any = true;
        if (!any) break;
        while (!open.empty() && open.top().first == t) {
            apply(items[open.top().second], -1);
            open.pop();
        }
        for (; next_item < items.size() && items[next_item].start == t; ++next_item) {
            const StateItem& item = items[next_item];
            if (item.end <= item.start) continue; // never open
            apply(item, +1);
            if (item.end != analysis::kOpenEnd) open.emplace(item.end, static_cast<std::uint32_t>(next_item));
        }
        for (; next_owner < owners.size() && owners[next_owner].since == t; ++next_owner) {
            const OwnerChange& o = owners[next_owner];
            const std::size_t from = laneOf(slot_owner[o.slot]), to = laneOf(o.thread);
            slot_owner[o.slot] = o.thread;
            const std::int32_t n = slot_count[o.slot];
            if (n == 0 || from == to) continue;
            if (from != SIZE_MAX) sweep.change(ready_k[from], -n), sweep.change(ready_total, -n);
            if (to != SIZE_MAX) sweep.change(ready_k[to], n), sweep.change(ready_total, n);
        }
        sweep.flush(t);
    }

    // Fibers alive: from their creation (or the trace's start, if created
    // before the recording) to their finish, if they finished.
    std::vector<std::pair<std::int64_t, std::int32_t>> births_deaths;
    if (want.fibers_alive) births_deaths.reserve(tl.fibers.size() * 2);
    for (std::size_t k = 0; want.fibers_alive && k < tl.fibers.size(); ++k) {
        const analysis::FiberLane& f = tl.fibers[k];
        const std::int64_t born = fiberBorn(tl, f);
        if (f.finished() >= 0 && f.finished() <= born) continue;
        births_deaths.emplace_back(born, +1);
        if (const std::int64_t died = f.finished(); died >= 0) births_deaths.emplace_back(died, -1);
    }
    std::sort(births_deaths.begin(), births_deaths.end());
    std::int32_t alive = 0;
    for (const auto& [time, delta] : births_deaths) {
        alive += delta;
        emit(c.fibers_alive, time, alive);
    }

    for (CounterSeries& s : c.ready) indexCounter(s);
    for (CounterSeries& s : c.in_flight) indexCounter(s);
    indexCounter(c.ready_total);
    indexCounter(c.in_flight_total);
    indexCounter(c.fibers_alive);
    return c;
}

CounterSelection drawnCounters(const analysis::Timeline& tl) noexcept {
    const bool per_thread = tl.threads.size() <= kMaxReadyTracks;
    return {.ready_per_thread = per_thread, .ready_total = !per_thread, .in_flight_per_thread = false, .in_flight_total = true, .fibers_alive = true};
}

std::size_t countersBytes(const Counters& c) noexcept {
    const auto series = [](const CounterSeries& s) {
        std::size_t bytes = s.times.bytes() + s.values.bytes() +
                            analysis::heapBytes(s.level_max.capacity() * sizeof(s.level_max[0])) +
                            analysis::heapBytes(s.level_min.capacity() * sizeof(s.level_min[0]));
        for (const auto& level : s.level_max) bytes += analysis::heapBytes(level.capacity() * sizeof(std::int32_t));
        for (const auto& level : s.level_min) bytes += analysis::heapBytes(level.capacity() * sizeof(std::int32_t));
        return bytes;
    };
    std::size_t bytes = analysis::heapBytes(c.ready.capacity() * sizeof(CounterSeries)) +
                        analysis::heapBytes(c.in_flight.capacity() * sizeof(CounterSeries));
    for (const CounterSeries& s : c.ready) bytes += series(s);
    for (const CounterSeries& s : c.in_flight) bytes += series(s);
    return bytes + series(c.ready_total) + series(c.in_flight_total) + series(c.fibers_alive);
}

} // namespace fiberscope::viewer
