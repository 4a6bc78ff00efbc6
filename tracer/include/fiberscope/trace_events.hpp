// The record kinds of a Fiberscope trace and their payloads.
//
// This is the vocabulary of the trace format (FORMAT.md). It knows nothing
// of the runtime: fibers, threads and objects are plain numbers here.
// Every record is: kind (1 byte), time delta (varint), then the payload
// fields listed below, in order, each a varint unless noted. "fiber" fields
// are zigzag deltas against the previous fiber field of the same chunk
// (FORMAT.md, "Fiber numbers"); fiber 0 is "no fiber" (the thread's idle
// loop), fiber 1 is the main fiber. The comments below summarise each
// kind's fields; the record table (trace_records.hpp) is the one the reader
// and the tools read, and a test checks it against FORMAT.md and the emitters.
#pragma once

#include <cstdint>

namespace fiberscope::trace {

enum class EventKind : std::uint8_t {
    // Threads
    ThreadStart = 1,   // worker_index, name:string-id
    ThreadStop = 2,    //
    // Fibers
    FiberCreate = 3,   // fiber, parent:fiber, name:string-id (0 = none)
    FiberFinish = 4,   // fiber
    FiberRecycle = 5,  // fiber
    FiberName = 6,     // fiber, name:string-id
    Switch = 7,        // from:fiber, to:fiber, reason:SwitchReason
    // Scheduling
    Schedule = 8,      // fiber (head of the queue), count, target_thread:worker index, how:ScheduleHow
    Steal = 9,         // fiber (head of the stolen queue), victim:worker index
    WakeupSent = 10,   // target:worker index
    WakeupReceived = 11, // sender:worker index
    Park = 12,         // (entering the kernel to wait for completions)
    Unpark = 13,       // completions:count
    // The ring
    Submit = 14,       // fiber, opcode, fd (zigzag)
    Complete = 15,     // fiber, opcode, result (zigzag)
    CancelRequest = 16,   // fiber, target_thread:worker index + 1 (0 = not in flight)
    CancelDelivered = 17, // fiber
    // Synchronisation
    MutexContended = 18, // fiber, mutex:object
    MutexHandoff = 19,   // from:fiber, to:fiber, mutex:object
    ConditionWait = 20,  // fiber, condition:object
    ConditionWake = 21,  // fiber (woken), condition:object, how:ConditionWakeHow
    Await = 22,          // fiber (awaiting), target:fiber
    GroupOp = 23,        // op:GroupOp, group:object, fiber
    QueueOp = 24,        // op:QueueOp, queue:object, fiber
    // User annotations
    Mark = 25,         // label:string-id
    ZoneBegin = 26,    // label:string-id
    ZoneEnd = 27,      //
    // Bookkeeping
    StringDef = 28,    // id, length, bytes[length]
    LostEvents = 29,   // count (records dropped since the last LostEvents)
    // What the OS did (written by the trace writer, about another thread)
    CpuSample = 30,    // thread:trace thread number, on_cpu_ns, runqueue_wait_ns (deltas since its last sample)
    // Where in the source the previous record (a mark or zone-begin of the same thread) was made
    SourceLocation = 31, // file:string-id, line:count
    // The scaling policy's steal (one record per fiber taken)
    StealHalf = 32,    // fiber, victim:worker index
    // The scaling policy's search for work before parking (version 6)
    Search = 33,       // op:SearchOp, searchers:count
    // Version 7: one meaning per record, every state change recorded
    StealOne = 34,       // fiber, victim:worker index, from:StealOneFrom
    WakeupBounced = 35,  // target:worker index, result (zigzag: -errno)
    MutexTaken = 36,     // fiber, mutex:object
    Overflow = 37,       // op:OverflowOp, fiber
    Truth = 38,          // op:TruthOp, fiber, value:count (a checking recording only)
    // Version 8: a primitive built on a Mutex and Conditions appears as itself
    SemaphoreOp = 39,    // op:SemaphoreOp, semaphore:object, fiber, count
    RwLockOp = 40,       // op:RwLockOp, rwlock:object, fiber
    EventOp = 41,        // op:EventOp, event:object, fiber
    // Version 9: objects by the names the program gave them
    ObjectName = 42,     // object, name:string-id
};
inline constexpr std::uint8_t kMaxEventKind = 42;

// Why a fiber switched away.
enum class SwitchReason : std::uint8_t {
    Start = 0,      // the idle loop (or another fiber) resumed a ready fiber
    Yield = 1,      // EventLoop::yield: rescheduled behind others
    Await = 2,      // waiting for another fiber to finish
    Select = 3,     // waiting for the first of several fibers
    IoWait = 4,     // waiting for a ring operation (I/O, timer)
    Mutex = 5,      // waiting to lock a mutex
    Condition = 6,  // waiting on a condition
    Finish = 7,     // the fiber finished
    Handoff = 8,    // unlocking a mutex, switching straight to its new owner
    Idle = 9,       // the idle loop starting a fiber it found
    Exit = 10,      // the loop is shutting down
};
inline constexpr std::uint8_t kMaxSwitchReason = 10;

// How schedule() placed ready fibers.
enum class ScheduleHow : std::uint8_t {
    IdleHandoff = 0, // handed to an idle thread, woken with MSG_RING
    NewWorker = 1,   // a new worker thread was started for them
    OwnQueue = 2,    // nobody wanted them: queued on the scheduling thread
    RunNext = 3,     // the scaling policy: a spawned fiber in its spawner's run_next slot (version 5)
};

// What a search record says (the scaling policy's idle thread, version 6):
// it begins searching (spinning over the other threads' queues), or stops:
// it found work (the steal just before it on its thread took it), it gave up
// after its time, or its own ring has completions to reap.
enum class SearchOp : std::uint8_t { Begin = 0, Found = 1, GaveUp = 2, Completions = 3 };

// Where a steal-one record's fiber was taken from (version 7): the oldest
// of the victim's deque of new work, or the victim's run_next slot.
enum class StealOneFrom : std::uint8_t { NewWork = 0, RunNext = 1 };
// An overflow record (version 7): the scaling policy moved a fiber from a
// full queue of this thread to the loop's overflow list, or took one from it.
enum class OverflowOp : std::uint8_t { Put = 0, Take = 1 };
// What a truth record says (version 7; FIBERSCOPE_TRACE_CHECK=1 only): the
// runtime took `fiber` from this thread's own queues (queued); this
// thread's queues are empty (empty); the thread wrote a record stamped
// `value` ns before its previous one (backdated).
enum class TruthOp : std::uint8_t { Queued = 0, Empty = 1, Backdated = 2 };

enum class GroupOp : std::uint8_t { Spawn = 0, Wait = 1, Cancel = 2 };
// How a condition-wake record's fiber was woken: by signal(), by
// broadcast() (one record per fiber it woke, since version 7; before, one
// record for them all), or by its own wait's Timeout.
enum class ConditionWakeHow : std::uint8_t { Signal = 0, Broadcast = 1, TimedOut = 2 };
enum class QueueOp : std::uint8_t { Put = 0, Get = 1, PutBlocked = 2, GetBlocked = 3, Close = 4 };
// What a semaphore record says (version 8): the fiber took a permit, found
// none and waits (blocked; its Condition's records follow), stopped waiting
// without one (gave-up: canceled or timed out), or posted `count` permits.
enum class SemaphoreOp : std::uint8_t { Take = 0, Blocked = 1, GaveUp = 2, Post = 3 };
// What an rwlock record says (version 8): the fiber holds it shared or
// exclusively now, waits to (blocked), stopped waiting without it
// (gave-up), or released its shared or exclusive hold.
// What an event record says (version 8; the fiberscope::Event primitive):
// the fiber set or reset it, found it clear and waits (blocked; its
// Condition's records follow), returned from that wait because it was set,
// or stopped waiting without that (gave-up: canceled or timed out).
enum class EventOp : std::uint8_t { Set = 0, Reset = 1, Blocked = 2, Returned = 3, GaveUp = 4 };
enum class RwLockOp : std::uint8_t {
    ReadLocked = 0, WriteLocked = 1, ReadBlocked = 2, WriteBlocked = 3, GaveUp = 4, ReadUnlock = 5, WriteUnlock = 6
};

const char* eventKindName(EventKind kind) noexcept;
const char* switchReasonName(SwitchReason reason) noexcept;
const char* scheduleHowName(ScheduleHow how) noexcept;

} // namespace fiberscope::trace
