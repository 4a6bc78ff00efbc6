// EventList: the columns behind Trace::events (see trace_event_list.hpp).
#include "fiberscope/trace_event_list.hpp"

#include <algorithm>

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
    time_offset_.push_back(0);
    meta_.push_back(0);
    args_.insert(args_.end(), 3, 0);
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
        args_[3 * i] = args_[3 * i + 1] = args_[3 * i + 2] = 0;
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
    for (int k = 0; k < 3; ++k) args_[3 * i + static_cast<std::size_t>(k)] = static_cast<std::int32_t>(static_cast<std::uint32_t>(e.arg[k]));
}

void EventList::set(std::size_t i, const Event& e) {
    setTime(i, e.time);
    setRest(i, e);
}

void EventList::reserve(std::size_t n) {
    time_offset_.reserve(n);
    meta_.reserve(n);
    args_.reserve(3 * n);
    blocks_.reserve((n + kBlock - 1) / kBlock);
}

void EventList::clear() noexcept {
    blocks_.clear();
    time_offset_.clear();
    whole_times_.clear();
    meta_.clear();
    args_.clear();
    wide_index_.clear();
    wide_.clear();
}

void EventList::resize(std::size_t n) {
    if (n >= size()) {
        reserve(n);
        while (size() < n) push_back(Event{});
        return;
    }
    time_offset_.resize(n);
    meta_.resize(n);
    args_.resize(3 * n);
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
    return bytesOf(blocks_) + bytesOf(time_offset_) + bytesOf(whole_times_) + bytesOf(meta_) + bytesOf(args_) + bytesOf(wide_index_) +
           bytesOf(wide_);
}

bool operator==(const EventList& a, const EventList& b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i])) return false;
    return true;
}

} // namespace fiberscope::trace
