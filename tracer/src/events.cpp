// Names of record kinds and their enumerated fields, read from the record
// table (trace_records.hpp).
#include "fiberscope/trace_events.hpp"

#include "fiberscope/trace_records.hpp"

namespace fiberscope::trace {

const char* eventKindName(EventKind kind) noexcept {
    const char* name = recordKind(kind).name;
    return name ? name : "unknown";
}

const char* switchReasonName(SwitchReason reason) noexcept {
    const auto r = static_cast<std::uint8_t>(reason);
    return r <= kMaxSwitchReason ? kSwitchReasonNames[r] : "unknown";
}

const char* scheduleHowName(ScheduleHow how) noexcept {
    const auto h = static_cast<std::uint8_t>(how);
    return h <= kMaxScheduleHow ? kScheduleHowNames[h] : "unknown";
}

} // namespace fiberscope::trace
