// FiberLane's members (timeline.hpp): its ids packed in one word, what does
// not fit kept whole in its rare block, and its display name.
#include "fiberscope/analysis/timeline.hpp"

#include <charconv>
#include <cstdint>
#include <string>

namespace fiberscope::analysis {

FiberLane::Fields FiberLane::fields() const noexcept {
    return {fiber(), parent(), awaitedBy(), createdThread(), (bits_ & kTimeWhole) != 0};
}

void FiberLane::store(const Fields& f) {
    const bool wide_id = f.fiber >= kWideId;
    std::uint64_t parent_code = 0;
    if (f.parent != 0) {
        const std::uint64_t code = f.fiber - f.parent + kParentBias; // (modular)
        parent_code = code >= 1 && code < kParentMask ? code : kParentMask;
    }
    const std::uint64_t awaited = f.awaited_by == 0 ? kAwaitedNone : f.awaited_by == f.parent ? kAwaitedParent : kAwaitedWhole;
    std::uint64_t thread = kThreadMask; // (whole)
    if (f.created_thread == -1) thread = 0;
    else if (f.created_thread >= 0 && static_cast<std::uint64_t>(f.created_thread) + 1 < kThreadMask) thread = static_cast<std::uint64_t>(f.created_thread) + 1;
    if (wide_id || parent_code == kParentMask || awaited == kAwaitedWhole || thread == kThreadMask) {
        Rare& r = rare(); // (may throw: nothing has changed yet)
        if (wide_id) r.fiber = f.fiber;
        if (parent_code == kParentMask) r.parent = f.parent;
        if (awaited == kAwaitedWhole) r.awaited_by = f.awaited_by;
        if (thread == kThreadMask) r.created_thread = f.created_thread;
    }
    bits_ = (wide_id ? kWideId : f.fiber) | parent_code << kParentShift | awaited << kAwaitedShift | thread << kThreadShift |
            (f.time_whole ? kTimeWhole : 0);
}

void FiberLane::setFiberId(std::uint64_t fiber) {
    Fields f = fields();
    f.fiber = fiber;
    store(f);
}

void FiberLane::setCreated(std::int64_t time, std::int32_t thread, std::uint64_t parent, bool starts_lane) {
    if (!starts_lane) rare().created = time; // (the flag is set below, once it is there)
    Fields f = fields();
    f.parent = parent;
    f.created_thread = thread;
    f.time_whole = !starts_lane;
    store(f);
}

void FiberLane::setAwaitedBy(std::uint64_t fiber) {
    Fields f = fields();
    f.awaited_by = fiber;
    store(f);
}

std::string FiberLane::name() const {
    if (named()) return std::string(recordedName());
    if (fiber() == 1) return "main";
    char buf[32] = "fiber #";
    const auto end = std::to_chars(buf + 7, buf + sizeof buf, fiber()).ptr;
    return std::string(buf, end);
}

} // namespace fiberscope::analysis
