// The record-kind table: for every EventKind, its name, its fields (in the
// order the file stores them, each with its name and type) and one sentence
// saying what it records.
//
// This is the one place that says which field of a record is a fiber, a
// worker, a string, an object or an enumerated value. The reader decodes and
// validates with it, the viewer's filters find a record's fibers with it, the
// exports name their arguments with it, and tests check FORMAT.md's record
// table against it. (The typed emitters in trace_emit.hpp write the same
// order; a test round-trips every kind through them and this table.)
//
// It is constexpr and header-only so that the reader's per-record loop reads
// it as cheaply as the string of field codes it replaced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <initializer_list>

#include "fiberscope/trace_events.hpp"

namespace fiberscope::trace {

enum class FieldType : std::uint8_t {
    Fiber,         // a fiber number (stored as a zigzag delta, FORMAT.md "Fiber numbers"); 0 = the idle loop
    Worker,        // a runtime worker index (at most kMaxWorkerField)
    WorkerPlusOne, // 1 + a worker index, 0 = none (cancel-request's ring)
    String,        // a string id (0 = none), defined by a string record
    Object,        // an opaque 64-bit identity: a mutex, condition, group, queue, semaphore, rwlock or event
    Enum,          // an enumerated value, at most FieldInfo::max, named by FieldInfo::values
    Opcode,        // an io_uring opcode or one of the runtime's own numbers (trace_vocabulary.hpp)
    Signed,        // a signed value stored zigzag: an fd, a result (-errno)
    Count,         // an unsigned count
    // Only in the string record, which the reader decodes itself:
    StringId,      // the id a string record defines
    Length,        // the number of bytes that follow
    Bytes,         // the string's bytes
};

// The largest worker index a Worker field may hold (the epoll backend's
// blocking pool numbers its threads from 2000).
inline constexpr std::uint64_t kMaxWorkerField = std::uint64_t{1} << 16;

struct FieldInfo {
    const char* name = nullptr; // as FORMAT.md names it: "fiber", "parent", "reason"
    FieldType type = FieldType::Count;
    std::uint8_t max = 0;                 // Enum: the largest valid value; Opcode: 255
    const char* const* values = nullptr;  // Enum: the names of 0..max
};

struct RecordKindInfo {
    EventKind kind{};
    const char* name = nullptr; // "thread-start"
    // A short word grouping related kinds, as trace_events.hpp groups them
    // (the Chrome export's category): thread, fiber, sched, io, cancel,
    // sync, user, trace, os.
    const char* category = nullptr;
    std::uint8_t field_count = 0;
    FieldInfo fields[4] = {};
    const char* explanation = nullptr; // one sentence
    // A point in time on its thread (the viewer's instants): not a change of
    // the thread's state (switch, park, unpark), a zone edge or a string.
    bool instant = false;
    // A step a learner stops at when stepping through decisions (the
    // lesson panel): every kind but the frequent switch and bookkeeping.
    bool step = false;
    // Decoded by the reader itself (the string record: its bytes follow it);
    // never in Trace::events.
    bool special = false;
};

// Names of enumerated values, indexed by value.
inline constexpr const char* kSwitchReasonNames[kMaxSwitchReason + 1] = {
    "start", "yield", "await", "select", "io-wait", "mutex", "condition", "finish", "handoff", "idle", "exit"};
inline constexpr std::uint8_t kMaxScheduleHow = 3;
inline constexpr const char* kScheduleHowNames[kMaxScheduleHow + 1] = {"idle-handoff", "new-worker", "own-queue", "run-next"};
inline constexpr std::uint8_t kMaxConditionWakeHow = 2;
inline constexpr const char* kConditionWakeHowNames[kMaxConditionWakeHow + 1] = {"signal", "broadcast", "timed-out"};
inline constexpr std::uint8_t kMaxGroupOp = 2;
inline constexpr const char* kGroupOpNames[kMaxGroupOp + 1] = {"spawn", "wait", "cancel"};
inline constexpr std::uint8_t kMaxSearchOp = 3;
inline constexpr const char* kSearchOpNames[kMaxSearchOp + 1] = {"begin", "found", "gave-up", "completions"};
inline constexpr std::uint8_t kMaxStealOneFrom = 1;
inline constexpr const char* kStealOneFromNames[kMaxStealOneFrom + 1] = {"new-work", "run-next"};
inline constexpr std::uint8_t kMaxOverflowOp = 1;
inline constexpr const char* kOverflowOpNames[kMaxOverflowOp + 1] = {"put", "take"};
inline constexpr std::uint8_t kMaxTruthOp = 2;
inline constexpr const char* kTruthOpNames[kMaxTruthOp + 1] = {"queued", "empty", "backdated"};
inline constexpr std::uint8_t kMaxQueueOp = 4;
inline constexpr const char* kQueueOpNames[kMaxQueueOp + 1] = {"put", "get", "put-blocked", "get-blocked", "close"};
inline constexpr std::uint8_t kMaxSemaphoreOp = 3;
inline constexpr const char* kSemaphoreOpNames[kMaxSemaphoreOp + 1] = {"take", "blocked", "gave-up", "post"};
inline constexpr std::uint8_t kMaxEventOp = 4;
inline constexpr const char* kEventOpNames[kMaxEventOp + 1] = {"set", "reset", "blocked", "returned", "gave-up"};
inline constexpr std::uint8_t kMaxRwLockOp = 6;
inline constexpr const char* kRwLockOpNames[kMaxRwLockOp + 1] = {"read-locked", "write-locked", "read-blocked", "write-blocked",
                                                                 "gave-up",     "read-unlock",  "write-unlock"};

namespace records_detail {
using T = FieldType;
constexpr FieldInfo fiber(const char* name = "fiber") { return {name, T::Fiber}; }
constexpr FieldInfo worker(const char* name) { return {name, T::Worker}; }
constexpr FieldInfo string(const char* name) { return {name, T::String}; }
constexpr FieldInfo object(const char* name) { return {name, T::Object}; }
constexpr FieldInfo count(const char* name = "count") { return {name, T::Count}; }
constexpr FieldInfo signedValue(const char* name) { return {name, T::Signed}; }
constexpr FieldInfo opcode() { return {"opcode", T::Opcode, 255}; }
template <std::size_t N>
constexpr FieldInfo enumerated(const char* name, const char* const (&values)[N]) {
    return {name, T::Enum, static_cast<std::uint8_t>(N - 1), values};
}

struct Row {
    EventKind kind;
    const char* name;
    const char* category;
    const char* explanation;
    bool instant;
    bool step;
};

constexpr RecordKindInfo row(Row r, std::initializer_list<FieldInfo> fields = {}, bool special = false) {
    RecordKindInfo info;
    info.special = special;
    info.kind = r.kind;
    info.name = r.name;
    info.category = r.category;
    info.explanation = r.explanation;
    info.instant = r.instant;
    info.step = r.step;
    for (const FieldInfo& f : fields) info.fields[info.field_count++] = f;
    return info;
}

using K = EventKind;
// clang-format off
inline constexpr RecordKindInfo kTable[kMaxEventKind + 1] = {
    RecordKindInfo{},
    row({K::ThreadStart, "thread-start", "thread",
         "This trace thread starts as the runtime's worker `worker` (worker 0 is the thread that created the loop).", true, true},
        {worker("worker"), string("name")}),
    row({K::ThreadStop, "thread-stop", "thread", "The worker's idle loop returned: the loop is shutting down.", true, true}),
    row({K::FiberCreate, "fiber-create", "fiber",
         "`parent` (0: the idle loop) created `fiber`, which is ready to run.", true, true},
        {fiber(), fiber("parent"), string("name")}),
    row({K::FiberFinish, "fiber-finish", "fiber", "The fiber's function returned; it will never run again.", true, true},
        {fiber()}),
    row({K::FiberRecycle, "fiber-recycle", "fiber", "The finished fiber's stack went back to a free list for a later spawn.", true, false},
        {fiber()}),
    row({K::FiberName, "fiber-name", "fiber", "The fiber named itself.", true, false}, {fiber(), string("name")}),
    row({K::Switch, "switch", "sched", "The thread stopped running `from` and runs `to` now, for `reason`.", false, false},
        {fiber("from"), fiber("to"), enumerated("reason", kSwitchReasonNames)}),
    row({K::Schedule, "schedule", "sched",
         "`count` fibers, the first being `fiber`, became ready: handed to idle worker `target`, given to a new worker "
         "`target`, queued on this thread, or (a spawn, the scaling policy) put in this thread's run_next slot (`how`).", true, true},
        {fiber(), count(), worker("target"), enumerated("how", kScheduleHowNames)}),
    row({K::Steal, "steal", "sched",
         "This thread found its ready queue empty and took worker `victim`'s whole queue word, whose head is `fiber` "
         "(the seed's ready queue; under the scaling policy, the first work a new worker was started with).", true, true},
        {fiber(), worker("victim")}),
    row({K::WakeupSent, "wakeup-sent", "sched",
         "This thread woke idle worker `target` (a MSG_RING on io_uring, an eventfd write on epoll).", true, true},
        {worker("target")}),
    row({K::WakeupReceived, "wakeup-received", "sched", "The wake-up sent by worker `sender` reached this thread.", true, true},
        {worker("sender")}),
    row({K::Park, "park", "sched", "The thread found nothing to run and waits in the kernel (io_uring_enter or epoll_pwait2).", false, true}),
    row({K::Unpark, "unpark", "sched",
         "The thread returned from the kernel with `count` completions (on epoll: `count` fibers made ready).", false, true},
        {count()}),
    row({K::Submit, "submit", "io", "The fiber started an operation (`opcode`) on `fd` and waits for its completion.", true, true},
        {fiber(), opcode(), signedValue("fd")}),
    row({K::Complete, "complete", "io", "The fiber's operation (`opcode`) completed with `result`: a count, or -errno.", true, true},
        {fiber(), opcode(), signedValue("result")}),
    row({K::CancelRequest, "cancel-request", "cancel",
         "Cancellation of `fiber` was requested; `target` is 1 + the worker whose ring holds its operation, 0 if none is in flight.",
         true, true},
        {fiber(), FieldInfo{"target", FieldType::WorkerPlusOne}}),
    row({K::CancelDelivered, "cancel-delivered", "cancel",
         "The cancellation of `fiber` reached it: its operation is withdrawn, or its mutex or condition wait returns Canceled.", true, true},
        {fiber()}),
    row({K::MutexContended, "mutex-contended", "sync", "The fiber found the mutex locked and waits for its owner to hand it over.", true, true},
        {fiber(), object("mutex")}),
    row({K::MutexHandoff, "mutex-handoff", "sync",
         "`from` unlocked the mutex by handing it to its waiter `to`, which now holds it and is ready (an unlock then "
         "switches to it; a Condition::wait's unlock queues it).", true, true},
        {fiber("from"), fiber("to"), object("mutex")}),
    row({K::ConditionWait, "condition-wait", "sync", "The fiber waits on the condition.", true, true},
        {fiber(), object("condition")}),
    row({K::ConditionWake, "condition-wake", "sync",
         "The condition woke `fiber`: by signal(), by broadcast() (one record per fiber it woke), or because its wait's "
         "Timeout passed (`how`).", true, true},
        {fiber(), object("condition"), enumerated("how", kConditionWakeHowNames)}),
    row({K::Await, "await", "sync", "`fiber` waits for `target` to finish.", true, true}, {fiber(), fiber("target")}),
    row({K::GroupOp, "group", "sync", "`fiber` joined the group (spawn), waits for its members, or canceled them (`op`).", true, true},
        {enumerated("op", kGroupOpNames), object("group"), fiber()}),
    row({K::QueueOp, "queue", "sync",
         "`fiber` put into or got from the queue, blocked because it was full or empty, or closed it (`op`).", true, true},
        {enumerated("op", kQueueOpNames), object("queue"), fiber()}),
    row({K::Mark, "mark", "user", "A user annotation at an instant (trace::mark).", true, true}, {string("label")}),
    row({K::ZoneBegin, "zone-begin", "user", "A user annotation: a span begins on the running fiber (trace::Zone).", false, false},
        {string("label")}),
    row({K::ZoneEnd, "zone-end", "user", "The innermost open span of the running fiber ends.", false, false}),
    row({K::StringDef, "string", "trace", "Defines string `id` for the records that name it (any thread may use it).", false, false},
        {FieldInfo{"id", FieldType::StringId}, FieldInfo{"length", FieldType::Length}, FieldInfo{"bytes", FieldType::Bytes}},
        /*special=*/true),
    row({K::LostEvents, "lost-events", "trace", "`count` records were dropped here because the trace writer fell behind.", true, false},
        {count()}),
    // Written by the trace writer thread on a pseudo thread of its own (a
    // thread's own chunks cannot take it: the thread may be running, and its
    // buffer is its alone), so `thread` names the trace thread it describes.
    row({K::CpuSample, "cpu-sample", "os",
         "Since its last sample, trace thread `thread` ran on a CPU for `on_cpu_ns` and waited on a kernel runqueue for "
         "`runqueue_wait_ns`, ready but preempted by another thread (its /proc schedstat).", false, false},
        {count("thread"), count("on_cpu_ns"), count("runqueue_wait_ns")}),
    // Written right after the mark or zone-begin it places, on the same thread
    // at the same time (Event has no room for two more fields in those records,
    // and a version-3 reader's records keep their layout).
    row({K::SourceLocation, "source-location", "user",
         "The thread's previous record (a mark or zone-begin) was made at line `line` of source file `file`.", false, false},
        {string("file"), count("line")}),
    // One record per fiber a steal moved (the scaling policy takes the
    // older half of a victim's ring of yielders at once), oldest first, all
    // at one time; the last is the fiber the thief runs now, the others
    // wait in its ring. (Versions 5 and 6 also wrote it for a deque's
    // oldest fiber, which steal-one records since version 7.)
    row({K::StealHalf, "steal-half", "sched",
         "This thread found nothing to run and took `fiber` from worker `victim`'s ring of fibers that yielded, one of "
         "the older half it took at once (the scaling policy); the last one it took it runs now.", true, true},
        {fiber(), worker("victim")}),
    // The scaling policy's spin before parking: a begin, then one of the
    // three ends, on the same thread; `searchers` counts the threads
    // searching once the record's change is made (this one included at a
    // begin, not at an end).
    row({K::Search, "search", "sched",
         "This thread, out of work, begins to search the other threads' queues for a while before it parks, or stops "
         "searching: it found work (a steal record just before this one says whose, unless it came from the loop's "
         "overflow list), gave up, or has completions of its own (`op`; the scaling policy). `searchers` threads are "
         "searching now.", true, true},
        {enumerated("op", kSearchOpNames), count("searchers")}),
    row({K::StealOne, "steal-one", "sched",
         "This thread found nothing to run and took one fiber, `fiber`, from worker `victim`: the oldest of its deque "
         "of new work, or the fiber waiting in its run_next slot (`from`; the scaling policy); it runs it now.", true, true},
        {fiber(), worker("victim"), enumerated("from", kStealOneFromNames)}),
    row({K::WakeupBounced, "wakeup-bounced", "sched",
         "The wake-up this thread sent to worker `target` was not delivered (`result`, -errno: its ring was not yet "
         "enabled, or was closing); the target finds its work when it starts.", true, true},
        {worker("target"), signedValue("result")}),
    row({K::MutexTaken, "mutex-taken", "sync",
         "The fiber, which had found the mutex locked, found it unlocked as it went to wait, and took it: it holds it "
         "and is ready.", true, true},
        {fiber(), object("mutex")}),
    row({K::Overflow, "overflow", "sched",
         "The scaling policy moved `fiber` from this thread's full queue to the loop's overflow list (put), or took it "
         "from that list into this thread's ring (take).", true, true},
        {enumerated("op", kOverflowOpNames), fiber()}),
    // Written only when the recording checks itself (FIBERSCOPE_TRACE_CHECK=1):
    // what the runtime knows at a decision point, for the validator to compare.
    row({K::Truth, "truth", "trace",
         "What the runtime knew here (a checking recording): it took `fiber` from this thread's own queues (queued), "
         "this thread's queues were empty (empty), or this thread wrote a record stamped `value` ns before its previous "
         "one (backdated).", true, false},
        {enumerated("op", kTruthOpNames), fiber(), count("value")}),
    // A Semaphore and an RwLock are built on a Mutex and Conditions, whose
    // records stay (they are what schedules the fibers); these say what the
    // primitive itself did, written under its mutex, so in its order.
    row({K::SemaphoreOp, "semaphore", "sync",
         "`fiber` took a permit from the semaphore, found none and waits (its Condition's records follow), stopped "
         "waiting without one (canceled or timed out), or posted `count` permits (`op`).", true, true},
        {enumerated("op", kSemaphoreOpNames), object("semaphore"), fiber(), count()}),
    row({K::RwLockOp, "rwlock", "sync",
         "`fiber` holds the rwlock shared (read-locked) or exclusively (write-locked) now, waits for it (blocked), "
         "stopped waiting without it (canceled or timed out), or released its shared or exclusive hold (`op`).", true, true},
        {enumerated("op", kRwLockOpNames), object("rwlock"), fiber()}),
    row({K::EventOp, "event", "sync",
         "`fiber` set or reset the event, found it clear and waits (its Condition's records follow), returned from that "
         "wait because it was set, or stopped waiting without that (canceled or timed out) (`op`).", true, true},
        {enumerated("op", kEventOpNames), object("event"), fiber()}),
    // Written by setObjectName, on the naming thread, before any record of
    // the object that could show the name is written after it; a primitive
    // built on others names its parts too ("table.readers").
    row({K::ObjectName, "object-name", "sync",
         "The program named the object (setObjectName): a Mutex, Condition, Queue, Semaphore, RwLock, Event or Group, "
         "or a part of one (\"table.readers\"); the tools call it by this name from here on.", true, false},
        {object("object"), string("name")}),
};
// clang-format on
} // namespace records_detail

// The table, indexed by kind number (entry 0 is empty: no kind 0).
inline constexpr const RecordKindInfo (&kRecordKinds)[kMaxEventKind + 1] = records_detail::kTable;

// The entry for `kind` (an empty entry, name nullptr, for a number that is no kind).
constexpr const RecordKindInfo& recordKind(EventKind kind) noexcept {
    const auto k = static_cast<std::uint8_t>(kind);
    return k <= kMaxEventKind ? kRecordKinds[k] : kRecordKinds[0];
}

// The kind whose table name is `name` ("wakeup-sent"), or nullptr; never
// the string record, which the reader decodes itself.
inline const RecordKindInfo* recordKindNamed(std::string_view name) noexcept {
    for (unsigned k = 1; k <= kMaxEventKind; ++k) {
        const RecordKindInfo& info = kRecordKinds[k];
        if (!info.special && info.name && name == info.name) return &info;
    }
    return nullptr;
}

// A record of work taken from another thread (one per steal, or one per
// fiber a steal moved): what stats and the viewer count as steals.
constexpr bool isSteal(EventKind kind) noexcept {
    return kind == EventKind::Steal || kind == EventKind::StealHalf || kind == EventKind::StealOne;
}

// Where field `field` of a decoded Event is: its slot in Event::arg, or -1
// for the one Enum or Opcode field, which is in Event::small.
constexpr int eventSlot(const RecordKindInfo& info, int field) noexcept {
    int slot = 0;
    for (int i = 0; i < field; ++i)
        if (info.fields[i].type != FieldType::Enum && info.fields[i].type != FieldType::Opcode) ++slot;
    const FieldType t = info.fields[field].type;
    return t == FieldType::Enum || t == FieldType::Opcode ? -1 : slot;
}

// The name of value `value` of an Enum field ("io-wait"), or nullptr if out of range.
constexpr const char* enumValueName(const FieldInfo& field, std::uint64_t value) noexcept {
    return field.type == FieldType::Enum && field.values && value <= field.max ? field.values[value] : nullptr;
}

// Each kind's entry is at its own number, no kind has more fields than
// Event can hold, and each has at most one field stored in Event::small.
// GCC's -fsanitize=undefined turns a pointer's comparison with null into a
// run-time check, which is then not a constant expression: the sanitizer
// builds skip those checks (the plain build makes them, on the same table).
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kConstantNullChecks = false;
#else
inline constexpr bool kConstantNullChecks = true;
#endif
constexpr bool recordTableConsistent() {
    for (unsigned k = 1; k <= kMaxEventKind; ++k) {
        const RecordKindInfo& info = kRecordKinds[k];
        if (static_cast<unsigned>(info.kind) != k) return false;
        if (kConstantNullChecks && (!info.name || !info.explanation || !info.category)) return false;
        int small = 0, slots = 0;
        for (int i = 0; i < info.field_count; ++i) {
            const FieldInfo& f = info.fields[i];
            if (kConstantNullChecks && !f.name) return false;
            if (f.type == FieldType::Enum || f.type == FieldType::Opcode) ++small;
            else ++slots;
            if (kConstantNullChecks && f.type == FieldType::Enum && !f.values) return false;
        }
        if (small > 1 || (!info.special && slots > 3)) return false;
    }
    return true;
}
static_assert(recordTableConsistent(), "the record table disagrees with EventKind or with Event's layout");
// The enumerations' last values (trace_events.hpp) are the names' last.
static_assert(static_cast<std::uint8_t>(SwitchReason::Exit) == kMaxSwitchReason);
static_assert(static_cast<std::uint8_t>(ScheduleHow::RunNext) == kMaxScheduleHow);
static_assert(static_cast<std::uint8_t>(ConditionWakeHow::TimedOut) == kMaxConditionWakeHow);
static_assert(static_cast<std::uint8_t>(GroupOp::Cancel) == kMaxGroupOp);
static_assert(static_cast<std::uint8_t>(QueueOp::Close) == kMaxQueueOp);
static_assert(static_cast<std::uint8_t>(SearchOp::Completions) == kMaxSearchOp);
static_assert(static_cast<std::uint8_t>(StealOneFrom::RunNext) == kMaxStealOneFrom);
static_assert(static_cast<std::uint8_t>(OverflowOp::Take) == kMaxOverflowOp);
static_assert(static_cast<std::uint8_t>(TruthOp::Backdated) == kMaxTruthOp);
static_assert(static_cast<std::uint8_t>(SemaphoreOp::Post) == kMaxSemaphoreOp);
static_assert(static_cast<std::uint8_t>(RwLockOp::WriteUnlock) == kMaxRwLockOp);
static_assert(static_cast<std::uint8_t>(EventOp::GaveUp) == kMaxEventOp);

} // namespace fiberscope::trace
