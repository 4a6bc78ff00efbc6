// EventList: the columns behind Trace::events (see trace_event_list.hpp).
#include "fiberscope/trace_event_list.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace fiberscope::trace {

namespace {

bool fits32(std::uint64_t v) noexcept {
    return static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<std::int32_t>(static_cast<std::uint32_t>(v)))) == v;
}

// A record whose fields or thread do not fit the columns.
bool isWide(const Event& e) noexcept {
    return e.thread > 0xFFFF || static_cast<unsigned>(e.kind) > 0x3F || !fits32(e.arg[0]) || !fits32(e.arg[1]) || !fits32(e.arg[2]);
}

template <class T>
std::size_t bytesOf(const std::vector<T>& v) noexcept {
    return v.capacity() * sizeof(T);
}

} // namespace

Event EventList::wideAt(std::size_t i) const noexcept {
    const auto it = std::lower_bound(wide_index_.begin(), wide_index_.end(), static_cast<std::uint32_t>(i));
    return wide_[static_cast<std::size_t>(it - wide_index_.begin())];
}

void EventList::push_back(const Event& e) {
    const std::size_t i = size();
    if (i % kBlock == 0) blocks_.push_back(Block{e.time, kNarrow});
    if (i % kGroup == 0) {
        Group g;
        for (int k = 0; k < 3; ++k) g.rank[k] = static_cast<std::uint32_t>(values_[k].size());
        groups_.push_back(g);
    }
    time_offset_.push_back(0);
    meta_.push_back(0);
    setTime(i, e.time);
    setRest(i, e);
}

void EventList::setTime(std::size_t i, std::int64_t time) {
    Block& b = blocks_[i / kBlock];
    if (b.whole == kNarrow) {
        // A narrow block holds offsets in [0, 2^32) from its base.
        if (time >= b.base && static_cast<std::uint64_t>(time - b.base) <= UINT32_MAX) {
            time_offset_[i] = static_cast<std::uint32_t>(time - b.base);
            return;
        }
        // Keep this block's times whole from now on.
        const std::size_t first = i - i % kBlock;
        b.whole = static_cast<std::uint32_t>(whole_times_.size());
        whole_times_.resize(whole_times_.size() + kBlock, 0);
        for (std::size_t k = first; k < size(); ++k) whole_times_[b.whole + k % kBlock] = b.base + time_offset_[k];
    }
    whole_times_[b.whole + i % kBlock] = time;
    time_offset_[i] = 0;
}

void EventList::setRest(std::size_t i, const Event& e) {
    const auto it = std::lower_bound(wide_index_.begin(), wide_index_.end(), static_cast<std::uint32_t>(i));
    const bool was_wide = it != wide_index_.end() && *it == i;
    const std::size_t at = static_cast<std::size_t>(it - wide_index_.begin());
    if (isWide(e)) {
        meta_[i] = kWideBit;
        for (int k = 0; k < 3; ++k) setField(i, k, 0);
        if (was_wide) {
            wide_[at] = e;
        } else {
            wide_index_.insert(it, static_cast<std::uint32_t>(i));
            wide_.insert(wide_.begin() + static_cast<std::ptrdiff_t>(at), e);
        }
        return;
    }
    if (was_wide) {
        wide_index_.erase(it);
        wide_.erase(wide_.begin() + static_cast<std::ptrdiff_t>(at));
    }
    meta_[i] = e.thread | static_cast<std::uint32_t>(e.small) << 16 | static_cast<std::uint32_t>(e.kind) << 24;
    for (int k = 0; k < 3; ++k) setField(i, k, static_cast<std::int32_t>(static_cast<std::uint32_t>(e.arg[k])));
}

std::size_t EventList::rankAt(std::size_t i, int k) const noexcept {
    if (i / kGroup >= groups_.size()) return values_[k].size();
    const Group& g = groups_[i / kGroup];
    return g.rank[k] + static_cast<std::size_t>(std::popcount(g.nonzero[k] & ((std::uint64_t{1} << (i % kGroup)) - 1)));
}

// O(1) when the field stays 0 or non-0, or i is the last record (appending);
// else the later values move and the later groups' ranks change: O(n).
void EventList::setField(std::size_t i, int k, std::int32_t value) {
    const std::size_t group = i / kGroup;
    Group& g = groups_[group];
    const std::uint64_t bit = std::uint64_t{1} << (i % kGroup);
    std::vector<std::int32_t>& values = values_[k];
    const auto at = static_cast<std::ptrdiff_t>(rankAt(i, k));
    if (g.nonzero[k] & bit) {
        if (value != 0) {
            values[static_cast<std::size_t>(at)] = value;
            return;
        }
        values.erase(values.begin() + at);
        g.nonzero[k] &= ~bit;
        for (std::size_t h = group + 1; h < groups_.size(); ++h) --groups_[h].rank[k];
        return;
    }
    if (value == 0) return;
    if (values.size() >= UINT32_MAX) throw std::length_error("EventList: more than 2^32 records");
    values.insert(values.begin() + at, value);
    g.nonzero[k] |= bit;
    for (std::size_t h = group + 1; h < groups_.size(); ++h) ++groups_[h].rank[k];
}

void EventList::set(std::size_t i, const Event& e) {
    setTime(i, e.time);
    setRest(i, e);
}

void EventList::reserve(std::size_t n) {
    time_offset_.reserve(n);
    meta_.reserve(n);
    groups_.reserve((n + kGroup - 1) / kGroup);
    blocks_.reserve((n + kBlock - 1) / kBlock);
    // (values_ grow as they come: how many fields are 0 is not known yet; shrink_to_fit trims them)
}

void EventList::shrink_to_fit() {
    for (auto& values : values_)
        if (values.capacity() - values.size() > values.size() / 8) values.shrink_to_fit();
}

void EventList::clear() noexcept {
    blocks_.clear();
    time_offset_.clear();
    whole_times_.clear();
    meta_.clear();
    groups_.clear();
    for (auto& values : values_) values.clear();
    wide_index_.clear();
    wide_.clear();
}

void EventList::resize(std::size_t n) {
    if (n >= size()) {
        reserve(n);
        while (size() < n) push_back(Event{});
        return;
    }
    for (int k = 0; k < 3; ++k) values_[k].resize(rankAt(n, k));
    groups_.resize((n + kGroup - 1) / kGroup);
    if (n % kGroup != 0)
        for (std::uint64_t& mask : groups_.back().nonzero) mask &= (std::uint64_t{1} << (n % kGroup)) - 1;
    time_offset_.resize(n);
    meta_.resize(n);
    blocks_.resize((n + kBlock - 1) / kBlock);
    // Whole-time blocks past the end are left in whole_times_ (unused).
    const auto cut = std::lower_bound(wide_index_.begin(), wide_index_.end(), static_cast<std::uint32_t>(n));
    wide_.resize(static_cast<std::size_t>(cut - wide_index_.begin()));
    wide_index_.erase(cut, wide_index_.end());
}

void EventList::insert(const_iterator at, const Event& e) {
    std::vector<Event> tail;
    for (std::size_t i = at.index(); i < size(); ++i) tail.push_back((*this)[i]);
    resize(at.index());
    push_back(e);
    for (const Event& t : tail) push_back(t);
}

std::size_t EventList::memoryBytes() const noexcept {
    return bytesOf(blocks_) + bytesOf(time_offset_) + bytesOf(whole_times_) + bytesOf(meta_) + bytesOf(groups_) + bytesOf(values_[0]) +
           bytesOf(values_[1]) + bytesOf(values_[2]) + bytesOf(wide_index_) + bytesOf(wide_);
}

bool operator==(const EventList& a, const EventList& b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i])) return false;
    return true;
}

} // namespace fiberscope::trace
