// Names of record kinds and their enumerated fields.
#include "fiberscope/trace_events.hpp"

namespace fiberscope::trace {

const char* eventKindName(EventKind kind) noexcept {
    switch (kind) {
    case EventKind::ThreadStart: return "thread-start";
    case EventKind::ThreadStop: return "thread-stop";
    case EventKind::FiberCreate: return "fiber-create";
    case EventKind::FiberFinish: return "fiber-finish";
    case EventKind::FiberRecycle: return "fiber-recycle";
    case EventKind::FiberName: return "fiber-name";
    case EventKind::Switch: return "switch";
    case EventKind::Schedule: return "schedule";
    case EventKind::Steal: return "steal";
    case EventKind::WakeupSent: return "wakeup-sent";
    case EventKind::WakeupReceived: return "wakeup-received";
    case EventKind::Park: return "park";
    case EventKind::Unpark: return "unpark";
    case EventKind::Submit: return "submit";
    case EventKind::Complete: return "complete";
    case EventKind::CancelRequest: return "cancel-request";
    case EventKind::CancelDelivered: return "cancel-delivered";
    case EventKind::MutexContended: return "mutex-contended";
    case EventKind::MutexHandoff: return "mutex-handoff";
    case EventKind::ConditionWait: return "condition-wait";
    case EventKind::ConditionWake: return "condition-wake";
    case EventKind::Await: return "await";
    case EventKind::GroupOp: return "group";
    case EventKind::QueueOp: return "queue";
    case EventKind::Mark: return "mark";
    case EventKind::ZoneBegin: return "zone-begin";
    case EventKind::ZoneEnd: return "zone-end";
    case EventKind::StringDef: return "string";
    case EventKind::LostEvents: return "lost-events";
    }
    return "unknown";
}

const char* switchReasonName(SwitchReason reason) noexcept {
    switch (reason) {
    case SwitchReason::Start: return "start";
    case SwitchReason::Yield: return "yield";
    case SwitchReason::Await: return "await";
    case SwitchReason::Select: return "select";
    case SwitchReason::IoWait: return "io-wait";
    case SwitchReason::Mutex: return "mutex";
    case SwitchReason::Condition: return "condition";
    case SwitchReason::Finish: return "finish";
    case SwitchReason::Handoff: return "handoff";
    case SwitchReason::Idle: return "idle";
    case SwitchReason::Exit: return "exit";
    }
    return "unknown";
}

const char* scheduleHowName(ScheduleHow how) noexcept {
    switch (how) {
    case ScheduleHow::IdleHandoff: return "idle-handoff";
    case ScheduleHow::NewWorker: return "new-worker";
    case ScheduleHow::OwnQueue: return "own-queue";
    }
    return "unknown";
}

} // namespace fiberscope::trace
