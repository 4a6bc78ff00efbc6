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

// A record whose fields do not fit the columns.
bool isWide(const Event& e) noexcept { return !fits32(e.arg[0]) || !fits32(e.arg[1]) || !fits32(e.arg[2]); }

// Room for one more element, growing geometrically (as push_back would), so
// that the insert that follows cannot throw.
template <class T>
void roomForOne(std::vector<T>& v) {
    if (v.size() == v.capacity()) v.reserve(v.capacity() ? 2 * v.capacity() : 8);
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

std::uint32_t EventList::escapesBetween(int k, std::size_t from, std::size_t to) const noexcept {
    std::uint32_t n = 0;
    for (std::size_t a = from; a < to; ++a) n += codes_[k][a] == kEscape;
    return n;
}

std::uint16_t EventList::encode(Group& g, int k, std::int32_t value) noexcept {
    if (value >= 0 && value < kWindowCode) return static_cast<std::uint16_t>(value);
    const unsigned bit = 1u << k;
    if (!(g.has_base & bit)) {
        // Centred on the first value, so ids a little below it fit too.
        g.base[k] = static_cast<std::int32_t>(std::max<std::int64_t>(INT32_MIN, std::int64_t{value} - kWindowLead));
        g.has_base = static_cast<std::uint8_t>(g.has_base | bit);
    }
    const std::int64_t d = std::int64_t{value} - g.base[k];
    if (d >= 0 && d < kEscape - kWindowCode) return static_cast<std::uint16_t>(kWindowCode + d);
    return kEscape;
}

void EventList::push_back(const Event& e) {
    const std::size_t i = size();
    if (i >= UINT32_MAX) throw std::length_error("EventList: more than 2^32 records");
    if (i % kBlock == 0) {
        Block b;
        b.base = e.time;
        b.at[kTime16] = static_cast<std::uint32_t>(times16_.size());
        b.at[kTime32] = static_cast<std::uint32_t>(times32_.size());
        b.at[kTimeWhole] = static_cast<std::uint32_t>(whole_times_.size());
        blocks_.push_back(b);
    }
    if (i % kGroup == 0) {
        Group g;
        for (int k = 0; k < 3; ++k) {
            g.rank[k] = static_cast<std::uint32_t>(codes_[k].size());
            g.escape_rank[k] = static_cast<std::uint32_t>(escapes_[k].size());
        }
        groups_.push_back(g);
    }
    // A placeholder in the last block's array, which setTime fills (or widens).
    switch (blocks_.back().mode) {
    case kTime16: times16_.push_back(0); break;
    case kTime32: times32_.push_back(0); break;
    default: whole_times_.push_back(0); break;
    }
    if (wide_shapes_) shape16_.push_back(kWideShape);
    else shape8_.push_back(kWideShape8);
    // (The placeholder says "kept whole" with no whole record yet: a throw
    // below takes the record off again, so no read finds it half made.)
    try {
        setTime(i, e.time);
        setRest(i, e);
    } catch (...) {
        resize(i);
        throw;
    }
}

std::size_t EventList::blockRecords(std::size_t b) const noexcept {
    return std::min(kBlock, size() - b * kBlock);
}

// Moves block b's times to a wider array. O(its records) for the last block
// (its times sit at the ends of the arrays); O(n) for an earlier one, whose
// later blocks' positions shift.
void EventList::widenBlock(std::size_t b, std::uint8_t mode) {
    Block& block = blocks_[b];
    const std::size_t n = blockRecords(b);
    std::int64_t times[kBlock];
    for (std::size_t r = 0; r < n; ++r) times[r] = time(b * kBlock + r);
    const auto from = static_cast<std::ptrdiff_t>(block.at[block.mode]);
    const auto count = static_cast<std::ptrdiff_t>(n);
    switch (block.mode) {
    case kTime16: times16_.erase(times16_.begin() + from, times16_.begin() + from + count); break;
    case kTime32: times32_.erase(times32_.begin() + from, times32_.begin() + from + count); break;
    default: break; // whole is the widest
    }
    const auto to = static_cast<std::ptrdiff_t>(block.at[mode]);
    if (mode == kTime32) {
        times32_.insert(times32_.begin() + to, n, 0);
        for (std::size_t r = 0; r < n; ++r) times32_[static_cast<std::size_t>(to) + r] = static_cast<std::uint32_t>(times[r] - block.base);
    } else {
        whole_times_.insert(whole_times_.begin() + to, times, times + n);
    }
    for (std::size_t later = b + 1; later < blocks_.size(); ++later) {
        blocks_[later].at[block.mode] -= static_cast<std::uint32_t>(n);
        blocks_[later].at[mode] += static_cast<std::uint32_t>(n);
    }
    block.mode = mode;
}

void EventList::setTime(std::size_t i, std::int64_t time) {
    const std::size_t b = i / kBlock, r = i % kBlock;
    Block& block = blocks_[b];
    // The narrowest mode that holds it (the offset from a base at or before it).
    std::uint8_t need = kTimeWhole;
    std::uint64_t offset = 0;
    if (time >= block.base) {
        offset = static_cast<std::uint64_t>(time) - static_cast<std::uint64_t>(block.base); // no overflow: time >= base
        need = offset <= UINT16_MAX ? kTime16 : offset <= UINT32_MAX ? kTime32 : kTimeWhole;
    }
    if (need > block.mode) widenBlock(b, need);
    switch (block.mode) {
    case kTime16: times16_[block.at[kTime16] + r] = static_cast<std::uint16_t>(offset); break;
    case kTime32: times32_[block.at[kTime32] + r] = static_cast<std::uint32_t>(offset); break;
    default: whole_times_[block.at[kTimeWhole] + r] = time; break;
    }
}

// What may allocate (the shape table, widening the codes, the whole
// record's place, a field's code) is done before the record's shape says
// how to read it, so a throw never leaves a record read through a whole
// record it does not have.
void EventList::setRest(std::size_t i, const Event& e) {
    const std::uint16_t shape = isWide(e) ? kWideShape : shapeCode(e);
    widenShapesFor(shape);
    const auto found = std::lower_bound(wide_index_.begin(), wide_index_.end(), static_cast<std::uint32_t>(i));
    const bool was_wide = found != wide_index_.end() && *found == i;
    const auto at = found - wide_index_.begin();
    if (shape == kWideShape) {
        if (was_wide) {
            wide_[static_cast<std::size_t>(at)] = e;
        } else {
            roomForOne(wide_index_);
            roomForOne(wide_);
            wide_index_.insert(wide_index_.begin() + at, static_cast<std::uint32_t>(i)); // (cannot throw now)
            wide_.insert(wide_.begin() + at, e);
        }
        setShape(i, kWideShape);
        for (int k = 0; k < 3; ++k) setField(i, k, 0); // (only takes codes away: no allocation)
        return;
    }
    // A whole record stays readable as it was until its fields are coded.
    for (int k = 0; k < 3; ++k) setField(i, k, static_cast<std::int32_t>(static_cast<std::uint32_t>(e.arg[k])));
    setShape(i, shape);
    if (was_wide) {
        wide_index_.erase(wide_index_.begin() + at);
        wide_.erase(wide_.begin() + at);
    }
}

// The shapes are few (tens on a dense trace): their keys (thread, kind,
// enumerated field, and the index in the low 16 bits) are kept sorted, so
// a look-up is a binary search over a few cache lines; a new shape is
// inserted in order (O(shapes), at most 65535 times).
std::uint16_t EventList::shapeCode(const Event& e) {
    const std::uint64_t key = (std::uint64_t{e.thread} << 16 | static_cast<std::uint64_t>(e.kind) << 8 | e.small) << 16;
    const auto it = std::lower_bound(shape_keys_.begin(), shape_keys_.end(), key);
    if (it != shape_keys_.end() && (*it & ~std::uint64_t{0xFFFF}) == key) return static_cast<std::uint16_t>(*it & 0xFFFF);
    if (shapes_.size() >= kWideShape) return kWideShape;
    const auto index = static_cast<std::uint16_t>(shapes_.size());
    const auto at = it - shape_keys_.begin();
    roomForOne(shape_keys_);
    shapes_.push_back(Shape{e.thread, e.kind, e.small});
    shape_keys_.insert(shape_keys_.begin() + at, key | index); // (cannot throw now)
    return index;
}

// A code that does not fit a byte widens every record's first (once: the
// table only grows).
void EventList::widenShapesFor(std::uint16_t shape) {
    if (wide_shapes_ || shape == kWideShape || shape < kWideShape8) return;
    std::vector<std::uint16_t> wide;
    wide.reserve(std::max(shape8_.capacity(), shape8_.size() + 1));
    for (const std::uint8_t s8 : shape8_) wide.push_back(s8 == kWideShape8 ? kWideShape : s8);
    shape16_ = std::move(wide);
    shape8_ = {};
    wide_shapes_ = true;
}

void EventList::setShape(std::size_t i, std::uint16_t shape) noexcept {
    if (wide_shapes_) shape16_[i] = shape;
    else shape8_[i] = static_cast<std::uint8_t>(shape);
}

std::size_t EventList::rankAt(std::size_t i, int k) const noexcept {
    if (i / kGroup >= groups_.size()) return codes_[k].size();
    const Group& g = groups_[i / kGroup];
    return g.rank[k] + static_cast<std::size_t>(std::popcount(g.nonzero[k] & ((std::uint64_t{1} << (i % kGroup)) - 1)));
}

std::size_t EventList::escapeRankAt(std::size_t i, int k) const noexcept {
    if (i / kGroup >= groups_.size()) return escapes_[k].size();
    const Group& g = groups_[i / kGroup];
    return g.escape_rank[k] + escapesBetween(k, g.rank[k], rankAt(i, k));
}

// O(1) when the field stays 0 or non-0 and stays escaped or not, or i is the
// last record (appending); else the later codes or escapes move and the
// later groups' ranks change: O(n).
void EventList::setField(std::size_t i, int k, std::int32_t value) {
    const std::size_t group = i / kGroup;
    Group& g = groups_[group];
    const std::uint64_t bit = std::uint64_t{1} << (i % kGroup);
    std::vector<std::uint16_t>& codes = codes_[k];
    std::vector<std::int32_t>& escapes = escapes_[k];
    const std::size_t at = rankAt(i, k);
    const bool had = (g.nonzero[k] & bit) != 0;
    const bool had_escape = had && codes[at] == kEscape;
    if (!had && value == 0) return;
    const std::uint16_t code = value != 0 ? encode(g, k, value) : 0;
    const bool escape = value != 0 && code == kEscape;
    const std::size_t escape_at = had_escape || escape ? escapeRankAt(i, k) : 0;
    // Room first (growing geometrically, as push_back would), so that a
    // failed allocation throws before anything changed: an escape inserted
    // without its code would shift every later escape of the field.
    // (encode may have opened the group's window: a window no code uses
    // changes no value.)
    const auto room = [](auto& v) {
        if (v.size() == v.capacity()) v.reserve(std::max<std::size_t>(16, 2 * v.capacity()));
    };
    if (!had && value != 0) {
        if (codes.size() >= UINT32_MAX) throw std::length_error("EventList: more than 2^32 field values");
        room(codes);
    }
    if (escape && !had_escape) room(escapes);
    if (had_escape && escape) {
        escapes[escape_at] = value;
        return;
    }
    if (had_escape) {
        escapes.erase(escapes.begin() + static_cast<std::ptrdiff_t>(escape_at));
        for (std::size_t h = group + 1; h < groups_.size(); ++h) --groups_[h].escape_rank[k];
    }
    if (escape) {
        escapes.insert(escapes.begin() + static_cast<std::ptrdiff_t>(escape_at), value);
        for (std::size_t h = group + 1; h < groups_.size(); ++h) ++groups_[h].escape_rank[k];
    }
    if (value == 0) {
        codes.erase(codes.begin() + static_cast<std::ptrdiff_t>(at));
        g.nonzero[k] &= ~bit;
        for (std::size_t h = group + 1; h < groups_.size(); ++h) --groups_[h].rank[k];
    } else if (had) {
        codes[at] = code;
    } else {
        codes.insert(codes.begin() + static_cast<std::ptrdiff_t>(at), code); // (room was made above: cannot throw)
        g.nonzero[k] |= bit;
        for (std::size_t h = group + 1; h < groups_.size(); ++h) ++groups_[h].rank[k];
    }
}

void EventList::set(std::size_t i, const Event& e) {
    setTime(i, e.time);
    setRest(i, e);
}

void EventList::reserve(std::size_t n) {
    if (wide_shapes_) shape16_.reserve(n);
    else shape8_.reserve(n);
    groups_.reserve((n + kGroup - 1) / kGroup);
    blocks_.reserve((n + kBlock - 1) / kBlock);
    // (the times and codes grow as they come: which blocks are narrow and
    // how many fields are 0 is not known yet; shrink_to_fit trims them)
}

void EventList::shrink_to_fit() {
    const auto trim = [](auto& v) {
        if (v.capacity() - v.size() > v.size() / 8) v.shrink_to_fit();
    };
    trim(times16_);
    trim(times32_);
    trim(whole_times_);
    for (auto& codes : codes_) trim(codes);
    for (auto& escapes : escapes_) trim(escapes);
}

void EventList::clear() noexcept {
    blocks_.clear();
    times16_.clear();
    times32_.clear();
    whole_times_.clear();
    wide_shapes_ = false;
    shape8_.clear();
    shape16_.clear();
    shapes_.clear();
    shape_keys_.clear();
    groups_.clear();
    for (auto& codes : codes_) codes.clear();
    for (auto& escapes : escapes_) escapes.clear();
    wide_index_.clear();
    wide_.clear();
}

void EventList::resize(std::size_t n) {
    if (n >= size()) {
        reserve(n);
        while (size() < n) push_back(Event{});
        return;
    }
    for (int k = 0; k < 3; ++k) {
        escapes_[k].resize(escapeRankAt(n, k)); // (reads the codes: before they are cut)
        codes_[k].resize(rankAt(n, k));
    }
    groups_.resize((n + kGroup - 1) / kGroup);
    if (n % kGroup != 0)
        for (std::uint64_t& mask : groups_.back().nonzero) mask &= (std::uint64_t{1} << (n % kGroup)) - 1;
    // The arrays keep what the blocks before the last kept one own, and that
    // block's first records.
    blocks_.resize((n + kBlock - 1) / kBlock);
    std::size_t keep[3] = {0, 0, 0};
    if (!blocks_.empty()) {
        const Block& last = blocks_.back();
        for (int m = 0; m < 3; ++m) keep[m] = last.at[m];
        keep[last.mode] += n - (blocks_.size() - 1) * kBlock;
    }
    times16_.resize(keep[kTime16]);
    times32_.resize(keep[kTime32]);
    whole_times_.resize(keep[kTimeWhole]);
    shape8_.resize(wide_shapes_ ? 0 : n); // (the table keeps the shapes: a later record may have one)
    shape16_.resize(wide_shapes_ ? n : 0);
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
    std::size_t bytes = bytesOf(blocks_) + bytesOf(times16_) + bytesOf(times32_) + bytesOf(whole_times_) + bytesOf(shape8_) + bytesOf(shape16_) + bytesOf(shapes_) + bytesOf(shape_keys_) +
                        bytesOf(groups_) + bytesOf(wide_index_) + bytesOf(wide_);
    for (int k = 0; k < 3; ++k) bytes += bytesOf(codes_[k]) + bytesOf(escapes_[k]);
    return bytes;
}

bool operator==(const EventList& a, const EventList& b) noexcept {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i])) return false;
    return true;
}

} // namespace fiberscope::trace
