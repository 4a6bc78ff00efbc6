// The state panel's chip motion (state_motion.hpp): a linear match by fiber
// and an eased straight-line interpolation; layouts are a few dozen chips.
#include "model/state_motion.hpp"

#include <algorithm>
#include <unordered_map>

namespace fiberscope::viewer {

float easeOut(float t) noexcept {
    t = std::clamp(t, 0.0f, 1.0f);
    const float u = 1.0f - t;
    return 1.0f - u * u * u;
}

std::vector<ChipFrame> interpolateChips(const std::vector<ChipPlace>& from, const std::vector<ChipPlace>& to, float fraction) {
    std::vector<ChipFrame> out;
    out.reserve(to.size() + from.size());
    if (fraction >= 1.0f) {
        for (const ChipPlace& c : to) out.push_back({c.fiber, c.x, c.y, c.width, 1.0f, 1.0f, false});
        return out;
    }
    const float e = easeOut(fraction);
    // The k-th chip of a fiber in `from`, for the k-th in `to`.
    std::unordered_map<std::uint64_t, std::vector<std::size_t>> old_of;
    for (std::size_t i = 0; i < from.size(); ++i) old_of[from[i].fiber].push_back(i);
    std::unordered_map<std::uint64_t, std::size_t> taken;
    std::vector<bool> matched(from.size(), false);
    for (const ChipPlace& c : to) {
        std::size_t& k = taken[c.fiber];
        const auto it = old_of.find(c.fiber);
        if (it != old_of.end() && k < it->second.size()) {
            const ChipPlace& o = from[it->second[k]];
            matched[it->second[k]] = true;
            out.push_back({c.fiber, o.x + (c.x - o.x) * e, o.y + (c.y - o.y) * e, o.width + (c.width - o.width) * e, 1.0f, 1.0f, false});
        } else if (it != old_of.end()) {
            // A second place of a fiber already shown (a submit: running and in
            // flight): it slides out of the first.
            const ChipPlace& o = from[it->second.front()];
            out.push_back({c.fiber, o.x + (c.x - o.x) * e, o.y + (c.y - o.y) * e, o.width + (c.width - o.width) * e, 1.0f, 1.0f, false});
        } else {
            out.push_back({c.fiber, c.x, c.y, c.width, e, 0.5f + 0.5f * e, false}); // appears: fades and grows in
        }
        ++k;
    }
    std::unordered_map<std::uint64_t, std::size_t> new_of; // a fiber's first chip in `to`
    for (std::size_t i = to.size(); i-- > 0;) new_of[to[i].fiber] = i;
    for (std::size_t i = 0; i < from.size(); ++i)
        if (!matched[i]) {
            const ChipPlace& o = from[i];
            if (const auto it = new_of.find(o.fiber); it != new_of.end()) {
                // One of two places of a fiber ends (its operation completed): it slides into the other, fading.
                const ChipPlace& c = to[it->second];
                out.push_back({o.fiber, o.x + (c.x - o.x) * e, o.y + (c.y - o.y) * e, o.width, 1.0f - e, 1.0f, true});
            } else {
                out.push_back({o.fiber, o.x, o.y, o.width, 1.0f - e, 1.0f - 0.5f * e, true}); // leaves: fades out
            }
        }
    return out;
}

std::size_t decisionsBetween(const trace::Trace& trace, std::uint32_t a, std::uint32_t b, std::size_t limit) {
    const std::size_t n = trace.events.size();
    std::size_t lo = std::min(a, b), hi = std::max(a, b);
    if (hi >= n) hi = n ? n - 1 : 0;
    std::size_t count = 0;
    for (std::size_t i = lo + 1; i <= hi && i < n; ++i)
        if (trace::recordKind(trace.events[i].kind).step && ++count > limit) break;
    return count;
}

bool moveAnimates(bool stepped, std::size_t decisions) noexcept { return stepped && decisions <= 1; }

std::vector<ChipFrame> ChipMotion::frame(const void* model, const trace::Trace& trace, std::int64_t time, std::uint32_t step_event,
                                         const std::vector<ChipPlace>& layout, double now) {
    if (model_ != model || time_ != time) {
        const std::size_t n = trace.events.size();
        const bool stepped = model_ == model && step_event != analysis::kNoEvent && step_event_ != analysis::kNoEvent &&
                             step_event != step_event_ && step_event < n && step_event_ < n && trace.events[step_event].time == time &&
                             trace.events[step_event_].time == time_;
        if (moveAnimates(stepped, stepped ? decisionsBetween(trace, step_event_, step_event) : 0)) {
            std::vector<ChipPlace> from;
            if (start_ >= 0) {
                for (const ChipFrame& f : interpolateChips(from_, shown_, static_cast<float>((now - start_) / kChipMotionSeconds)))
                    if (!f.leaving) from.push_back({f.fiber, f.x, f.y, f.width});
            } else {
                from = shown_;
            }
            from_ = std::move(from);
            start_ = now;
        } else {
            start_ = -1;
        }
        model_ = model;
        time_ = time;
    }
    step_event_ = step_event;
    shown_ = layout;
    const float fraction = start_ < 0 ? 1.0f : static_cast<float>((now - start_) / kChipMotionSeconds);
    if (fraction >= 1.0f) start_ = -1;
    return interpolateChips(start_ < 0 ? layout : from_, layout, fraction);
}

} // namespace fiberscope::viewer
