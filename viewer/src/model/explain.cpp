// Explanations (see explain.hpp for the design).
//
// Every sentence is built from the record's fields, a few neighbouring
// records of the same thread (stepped to with next/previousOnThread, at
// most a handful of steps) and the fiber/thread lanes. The runtime functions named
// are the ones that emit each record (runtime/src/*). One function per
// record kind, explainKind, listed in kExplainers (every kind of the record
// table has one, or this file does not compile); each words its own policy
// and backend variants (Ctx::scaling, Ctx::epoll).
#include "model/explain.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <utility>

#include "model/describe.hpp"

namespace fiberscope::viewer {

using trace::Event;
using trace::EventKind;
using trace::ScheduleHow;
using trace::SwitchReason;

// --- Explanations ------------------------------------------------------------------

namespace {

constexpr const char* kSwitch = "runtime/src/scheduler/switch.cpp";     // yield()
constexpr const char* kSchedule = "runtime/src/scheduler/schedule.cpp"; // schedule()
constexpr const char* kReadyQueue = "runtime/src/scheduler/queue.cpp";  // findReadyFiber()
constexpr const char* kThread = "runtime/src/scheduler/worker.cpp";
constexpr const char* kSearch = "runtime/src/scheduler/search.cpp"; // searchBeforePark()
constexpr const char* kDriver = "runtime/src/io/driver.cpp"; // Driver: wake, park, reap, on either backend
constexpr const char* kFiber = "runtime/src/fiber/fiber.cpp";
constexpr const char* kSwitchMessage = "runtime/src/scheduler/switch_message.cpp";
constexpr const char* kEventLoop = "runtime/src/event_loop.cpp";
constexpr const char* kOps = "runtime/src/io/operation.cpp"; // execute(): to uringExecute() or pollerExecute()
constexpr const char* kPoller = "runtime/src/io/epoll/poller.cpp";
constexpr const char* kMutex = "runtime/src/sync/mutex.cpp";
constexpr const char* kCondition = "runtime/src/sync/condition.cpp";
constexpr const char* kCancel = "runtime/src/io/cancel.cpp";
constexpr const char* kGroup = "runtime/src/sync/group.cpp";
constexpr const char* kQueue = "runtime/include/fiberscope/queue.hpp";
constexpr const char* kSemaphore = "runtime/src/sync/semaphore.cpp";
constexpr const char* kRwLock = "runtime/src/sync/rwlock.cpp";
constexpr const char* kEvent = "runtime/src/sync/event.cpp";
constexpr const char* kObjectName = "runtime/src/sync/object_name.cpp";
constexpr const char* kTraceApi = "tracer/include/fiberscope/trace.hpp";

struct Ctx {
    const Timeline& tl;
    const trace::Trace& tr;

    std::string fiber(std::uint64_t f) const { return fiberLabel(tl, f); }
    // The object's name at `time` (setObjectName), else its address.
    std::string object(std::uint64_t o, std::int64_t time) const { return objectLabel(tl, o, time); }
    std::string thread(std::uint32_t t) const { return threadLabel(tl, t); }
    // "worker 2" or "blocking pool thread 0" if known, else "thread 5".
    std::string workerName(std::uint32_t t) const { return trace::threadDisplayName(workerOf(tl, t), t); }
    // "worker 2", named by the worker index a record carries.
    std::string workerNamed(std::uint64_t w) const { return workerLabel(static_cast<std::int64_t>(w)); }
    Event event(std::uint32_t i) const { return tr.events[i]; }
    // The words of the backend the trace was recorded on (its header's).
    const trace::BackendWords& words() const { return backendWords(tr); }
    bool epoll() const { return words().backend == trace::Backend::Epoll; }
    // The scaling scheduler policy ran: worker 0 says so in a mark right
    // after its backend mark (FORMAT.md), among the trace's first records.
    bool scaling() const { return trace::ranScalingPolicy(tr); }
    bool valid(std::uint32_t i) const { return i != kNoEvent && i < tr.events.size(); }

    // The event of `kind` nearest before (step -1) or after (+1) event `i` on
    // its thread, looking at most `window` events away; stops at `stop` kinds.
    std::uint32_t neighbour(std::uint32_t i, EventKind kind, int step, int window = 8, std::uint64_t stop_kinds = 0) const {
        const std::uint32_t thread = tr.events.thread(i);
        std::size_t pos = i;
        for (int n = 0; n < window; ++n) {
            pos = step < 0 ? previousOnThread(tl, tr, thread, pos) : nextOnThread(tl, tr, thread, pos + 1);
            if (pos == kNone || pos >= tr.events.size()) return kNoEvent;
            const EventKind k = tr.events.kind(pos);
            if (k == kind) return static_cast<std::uint32_t>(pos);
            if (stop_kinds & (std::uint64_t{1} << static_cast<unsigned>(k))) return kNoEvent;
        }
        return kNoEvent;
    }
};

constexpr std::uint64_t bit(EventKind k) { return std::uint64_t{1} << static_cast<unsigned>(k); }

Explanation make(std::string text, std::string function, std::string file, std::uint32_t event) {
    Explanation x;
    x.text = std::move(text);
    x.function = std::move(function);
    x.file = std::move(file);
    x.event = event;
    return x;
}

std::string plural(std::uint64_t n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

// An epoll event mask in words: "readable", "writable, hung up".
std::string readinessText(std::int64_t mask) {
    std::string out;
    auto add = [&](std::int64_t bit, const char* word) {
        if (!(mask & bit)) return;
        if (!out.empty()) out += ", ";
        out += word;
    };
    add(0x001, "readable");   // EPOLLIN
    add(0x004, "writable");   // EPOLLOUT
    add(0x008, "error");      // EPOLLERR
    add(0x010, "hung up");    // EPOLLHUP
    add(0x2000, "peer closed"); // EPOLLRDHUP
    return out.empty() ? "ready" : out;
}

std::string resultText(std::uint8_t opcode, std::int64_t result) {
    if (trace::opcodeHas(opcode, trace::kOpNoteReadinessWait) && result > 0) return "as ready (" + readinessText(result) + ")";
    if (result >= 0) return "with result " + std::to_string(result);
    const int error = static_cast<int>(-result);
    if (trace::opcodeHas(opcode, trace::kOpNoteTimer) && error == ETIME) return "as expired (-ETIME)";
    if (error == ECANCELED) return "as canceled (-ECANCELED)";
    return "with error -" + errnoName(error);
}

// What the op was: "IORING_OP_READ on fd 5", "a timer (IORING_OP_TIMEOUT)",
// "a readiness wait (IORING_OP_POLL_ADD; epoll backend) on fd 7".
std::string operationText(const trace::BackendWords& words, std::uint8_t opcode, std::int64_t fd) {
    if (opcode == trace::kOpTimeout) return "a " + opcodeNoun(opcode) + " (" + trace::opcodeLabel(opcode) + ")";
    if (opcode == trace::kOpPollAdd)
        return "a " + opcodeNoun(opcode) + " (" + words.poll_add + ")" + (fd >= 0 ? " on fd " + std::to_string(fd) : std::string());
    std::string out = trace::opcodeLabel(opcode);
    if (fd >= 0) out += " on fd " + std::to_string(fd);
    return out;
}

struct Phrase {
    std::string text;
    const char* function;
    const char* file;
};

// What a fiber leaving the CPU with switch `sw` (event index i) was doing: "yielded (...)".
Phrase leavePhrase(const Ctx& c, std::uint32_t i) {
    const Event& sw = c.event(i);
    const std::uint64_t to = sw.arg[1];
    switch (static_cast<SwitchReason>(sw.small)) {
    case SwitchReason::Yield:
        // Where a yielder goes depends on the policy: the seed pushes it on
        // its thread's LIFO queue word, so it runs again before the fibers
        // queued before it (lesson 10); the scaling policy puts it at the back
        // of its thread's FIFO ring, behind them.
        if (c.scaling())
            return {"yielded in EventLoop::yield(), going to the back of its thread's ring of yielders, behind the other ready fibers",
                    "EventLoop::yield()", kEventLoop};
        return {"yielded in EventLoop::yield(), going back on top of its thread's ready queue (a LIFO stack: it runs again "
                "before the fibers queued before it, unless another thread steals them)",
                "EventLoop::yield()", kEventLoop};
    case SwitchReason::Await: {
        const std::uint32_t a = c.neighbour(i, EventKind::Await, -1, 4);
        const std::string target = a != kNoEvent ? c.fiber(c.event(a).arg[1]) : std::string("another fiber");
        return {"switched away to await " + target + " in awaitFiber() (Future::await())", "awaitFiber()", kFiber};
    }
    case SwitchReason::Select:
        return {"switched away in selectFibers() to wait for the first of several fibers to finish", "selectFibers()", kFiber};
    case SwitchReason::IoWait: {
        const std::uint32_t s = c.neighbour(i, EventKind::Submit, -1, 4);
        const std::string op = s != kNoEvent ? operationText(c.words(), c.event(s).small, c.event(s).signedArg(1))
                                             : std::string(c.epoll() ? "an operation" : "a ring operation");
        return {"switched away in execute() to wait for " + op + " (io-wait)", "execute()", kOps};
    }
    case SwitchReason::Mutex: {
        const std::uint32_t m = c.neighbour(i, EventKind::MutexContended, -1, 4);
        const std::string mutex = m != kNoEvent ? "mutex " + c.object(c.event(m).arg[1], c.event(m).time) : std::string("a mutex");
        return {"found " + mutex + " locked and switched away in Mutex::lockSlow() until its owner hands it over", "Mutex::lockSlow()", kMutex};
    }
    case SwitchReason::Condition: {
        const std::uint32_t w = c.neighbour(i, EventKind::ConditionWait, -1, 4);
        const std::string cond = w != kNoEvent ? "condition " + c.object(c.event(w).arg[1], c.event(w).time) : std::string("a condition");
        return {"switched away in Condition::wait() to wait on " + cond, "Condition::wait()", kCondition};
    }
    case SwitchReason::Finish: {
        const FiberLane* fl = findFiber(c.tl, sw.arg[0]);
        std::string text = "finished (its function returned) and finishFiber() switched away for good";
        if (fl && fl->awaitedBy() && fl->awaitedBy() == to) text += ", straight to its awaiter " + c.fiber(to);
        return {text, "finishFiber()", kFiber};
    }
    case SwitchReason::Handoff:
        return {"unlocked a mutex by handing it to " + c.fiber(to) + " and switching straight to it in Mutex::unlockSlow(), going back to a ready queue itself",
                "Mutex::unlockSlow()", kMutex};
    case SwitchReason::Exit:
        return {"switched away in EventLoop::~EventLoop() to let the loop shut down", "EventLoop::~EventLoop()", kEventLoop};
    case SwitchReason::Idle:
    case SwitchReason::Start:
        break;
    }
    return {"was switched out by yield()", "yield()", kSwitch};
}

// Why `fiber` is ready at `time` (after the event at that time): "its read
// completed", or "". With `by` (a schedule record), the ready episode is the
// latest one begun at or before it by a record of the same thread: a
// schedule() can be recorded after the fiber already ran (the hand-off or the
// new worker acts before the record is written).
std::string readyWhy(const Ctx& c, std::uint64_t fiber, std::int64_t time, std::uint32_t by = kNoEvent) {
    const FiberLane* fl = findFiber(c.tl, fiber);
    if (!fl) return "";
    const auto& iv = fl->lane.intervals;
    std::size_t k = intervalAt(fl->lane, time);
    if (c.valid(by) && k != kNone) {
        const std::uint32_t thread = c.event(by).thread;
        std::size_t found = kNone;
        for (std::size_t j = k + 1, steps = 0; j-- > 0 && steps < 64; ++steps) {
            const std::uint32_t cause = iv[j].cause;
            if (iv[j].state == State::Ready && c.valid(cause) && cause <= by && c.event(cause).thread == thread) {
                found = j;
                break;
            }
        }
        k = found;
    }
    if (k == kNone || iv[k].state != State::Ready) return "";
    const std::uint32_t cause = iv[k].cause;
    const State before = k > 0 ? iv[k - 1].state : State::Ready;
    const WaitReason reason = k > 0 ? iv[k - 1].reason : WaitReason::None;
    if (c.valid(cause)) {
        const Event& e = c.event(cause);
        switch (e.kind) {
        case EventKind::FiberCreate: return "it was just created by EventLoop::async()";
        case EventKind::Complete: return "its " + opcodeNoun(e.small) + " had completed";
        case EventKind::ConditionWake:
            if (e.small == static_cast<std::uint8_t>(trace::ConditionWakeHow::TimedOut))
                return "its condition wait's Timeout had passed";
            return "the condition it waited on was signalled";
        case EventKind::MutexHandoff: return "the mutex it waited for was handed to it";
        case EventKind::Switch:
            if (e.small == static_cast<std::uint8_t>(SwitchReason::Yield)) return "it had yielded";
            if (e.small == static_cast<std::uint8_t>(SwitchReason::Handoff)) return "it had just handed a mutex over";
            return "it had been switched out";
        default: break;
        }
    }
    if (before == State::Waiting) {
        switch (reason) {
        case WaitReason::Await: return "the fiber it awaited had finished";
        case WaitReason::Select: return "a fiber it selected on had finished";
        case WaitReason::Mutex: return "the mutex it waited for came free";
        case WaitReason::Condition: return "the condition it waited on was signalled";
        case WaitReason::Io: return c.epoll() ? "its operation had completed" : "its ring operation had completed";
        case WaitReason::Timer: return "its timer had expired";
        default: break;
        }
    }
    return "";
}

std::string queueWho(std::uint64_t count, const std::string& head) {
    if (count <= 1) return head;
    return head + " and " + plural(count - 1, "more fiber", "more fibers");
}

Explanation explainSwitch(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::uint64_t from = e.arg[0], to = e.arg[1];
    const std::string thread = c.thread(e.thread);
    if (from == 0) {
        if (to == 0) return make(thread + " switched to its idle loop (yield())", "yield()", kSwitch, i);
        std::string how = " in its own ready queue";
        const std::uint32_t steal = c.neighbour(i, EventKind::Steal, -1, 2);
        const std::uint32_t half = c.neighbour(i, EventKind::StealHalf, -1, 2);
        const std::uint32_t one = c.neighbour(i, EventKind::StealOne, -1, 2);
        if (one != kNoEvent && c.event(one).arg[0] == to) {
            const std::int64_t victim = c.event(one).signedArg(1);
            how = c.event(one).small == static_cast<std::uint8_t>(trace::StealOneFrom::RunNext)
                      ? " after taking it from worker " + std::to_string(victim) + "'s run_next slot"
                      : " after taking the oldest fiber of worker " + std::to_string(victim) + "'s new work";
        } else if (steal != kNoEvent && c.event(steal).arg[0] == to) {
            const std::int64_t victim = c.event(steal).signedArg(1);
            how = " after stealing worker " + std::to_string(victim) + "'s ready queue";
        } else if (half != kNoEvent && c.event(half).arg[0] == to) {
            const std::int64_t victim = c.event(half).signedArg(1);
            how = " after taking the older half of worker " + std::to_string(victim) + "'s ready queue";
        } else {
            const std::uint32_t done = c.neighbour(i, EventKind::Complete, -1, 64, bit(EventKind::Switch) | bit(EventKind::Park));
            // The idle loop runs the first completion of a batch at once (the others go to schedule()).
            for (std::uint32_t k = done; k != kNoEvent;
                 k = c.neighbour(k, EventKind::Complete, -1, 64, bit(EventKind::Switch) | bit(EventKind::Park))) {
                if (c.event(k).arg[0] == to) {
                    how = " right after its " + opcodeNoun(c.event(k).small) + " completed";
                    break;
                }
            }
        }
        return make(thread + "'s idle loop found " + c.fiber(to) + " ready" + how + " and switched to it (idle() -> yield())", "idle()",
                    kThread, i);
    }
    const Phrase leave = leavePhrase(c, i);
    std::string next;
    const auto reason = static_cast<SwitchReason>(e.small);
    if (reason == SwitchReason::Handoff || (reason == SwitchReason::Finish && leave.text.find("awaiter") != std::string::npos)) next = "";
    else if (to == 0) next = "; no other fiber was ready, so yield() switched to the idle loop";
    else next = "; yield() then switched to " + c.fiber(to) + ", the next ready fiber findReadyFiber() found";
    return make("on " + thread + ", " + c.fiber(from) + " " + leave.text + next, leave.function, leave.file, i);
}

Explanation explainSchedule(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::uint64_t head = e.arg[0], count = e.arg[1];
    const std::string who = queueWho(count, c.fiber(head));
    const std::string them = count > 1 ? "them" : "it";
    std::string text;
    switch (static_cast<ScheduleHow>(e.small)) {
    case ScheduleHow::IdleHandoff:
        text = "schedule() handed " + who + " to idle " + c.workerNamed(e.arg[2]) + " and woke it with " +
               (c.epoll() ? "an " : "") + c.words().wake;
        break;
    case ScheduleHow::NewWorker:
        text = "schedule() found no idle worker for " + who + " and started worker " + std::to_string(e.arg[2]) +
               " (spawnWorker()) with " + them + " as its first work";
        break;
    case ScheduleHow::OwnQueue:
        if (c.scaling())
            text = "schedule() queued " + who + " on " + c.thread(e.thread) +
                   "'s own queues (new work on its deque, a yielder at the back of its ring): the scaling policy "
                   "hands no thread work, it wakes a parked one to search, which takes the oldest of a deque or "
                   "the older half of a ring";
        else
            text = "schedule() found no idle worker to take " + who + " and no new worker to start, so it queued " + them +
                   " on " + c.thread(e.thread) + "'s own ready queue, where idle workers can steal " + them;
        break;
    case ScheduleHow::RunNext:
        text = "scheduleSpawned() put " + who + " in " + c.thread(e.thread) +
               "'s run_next slot (the scaling policy, Go's runnext): it runs as soon as its spawner suspends, before the "
               "ready queue, unless a searching thread takes it after 3 us";
        return make(text, "scheduleSpawned()", kSchedule, i);
    default: text = "schedule() made " + who + " ready"; break;
    }
    const std::string why = readyWhy(c, head, e.time, i);
    if (!why.empty()) text += "; " + c.fiber(head) + " was ready because " + why;
    return make(text, "schedule()", kSchedule, i);
}

Explanation explainThreadStart(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    if (e.arg[0] == 0)
        return make(thread + " became worker 0: EventLoop::create() made the calling thread the loop's first worker, running the main fiber",
                    "EventLoop::create()", kEventLoop, i);
    if (trace::isBlockingPoolWorker(static_cast<std::int64_t>(e.arg[0])))
        return make(thread + " started: a job the kernel cannot run asynchronously (a regular file on epoll, a name lookup) "
                             "needed another blocking-pool thread; it runs jobs and reports each finished one to the fiber's worker",
                    "BlockingPool::run()", "runtime/src/io/epoll/blocking_pool.cpp", i);
    return make(thread + " started as worker " + std::to_string(e.arg[0]) +
                    ": schedule() had ready fibers and no idle worker, so spawnWorker() started it and workerMain() entered its idle loop",
                "workerMain()", kThread, i);
}

Explanation explainThreadStop(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    if (workerOf(c.tl, e.thread) == 0)
        return make(thread + "'s idle loop returned after the exit message: the loop is shutting down and fiberscope_main_idle() resumes the main fiber",
                    "fiberscope_main_idle()", kEventLoop, i);
    return make(thread + "'s idle loop returned after the exit message: the loop is shutting down and workerMain() ends the thread",
                "workerMain()", kThread, i);
}

Explanation explainFiberCreate(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    const std::string parent = e.arg[1] ? c.fiber(e.arg[1]) : std::string("the idle loop");
    return make(parent + " spawned " + c.fiber(e.arg[0]) + " on " + thread +
                    " with EventLoop::async(): spawnFiber() gave it a stack and passed it to schedule()",
                "spawnFiber()", kFiber, i);
}

Explanation explainFiberFinish(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    std::string text = c.fiber(e.arg[0]) + "'s function had returned; on the other side of its last switch handleSwitchMessage() published it as finished";
    const FiberLane* fl = findFiber(c.tl, e.arg[0]);
    if (fl && fl->awaitedBy()) text += ", releasing its awaiter " + c.fiber(fl->awaitedBy());
    return make(text, "handleSwitchMessage()", kSwitchMessage, i);
}

Explanation explainFiberRecycle(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string worker = c.workerName(e.thread);
    return make(c.fiber(e.arg[0]) + "'s stack went back to " + worker + "'s free list for a later spawn to reuse (recycleFiber())",
                "recycleFiber()", kFiber, i);
}

Explanation explainFiberName(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    return make(c.fiber(e.arg[0]) + " named itself '" + c.tr.string(e.arg[1]) + "' with setFiberName()", "setFiberName()", kEventLoop, i);
}

Explanation explainSteal(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    if (c.scaling())
        return make(thread + " found nothing to run and took worker " + std::to_string(e.arg[1]) + "'s whole queue word, headed by " +
                        c.fiber(e.arg[0]) + " (stealReadyFrom()): under the scaling policy that word holds only the first "
                        "work a new worker was started with; it runs the head first",
                    "stealReadyFrom()", kReadyQueue, i);
    return make(thread + " found its ready queue empty and stole " + c.fiber(e.arg[0]) + " from worker " + std::to_string(e.arg[1]) +
                    " in findReadyFiber(): it took that worker's whole ready queue and runs its head first",
                "findReadyFiber()", kReadyQueue, i);
}

Explanation explainStealOne(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    if (e.small == static_cast<std::uint8_t>(trace::StealOneFrom::RunNext))
        return make(thread + " found nothing to run while searching and took " + c.fiber(e.arg[0]) + " from worker " +
                        std::to_string(e.arg[1]) + "'s run_next slot, where it had waited longer than 3 us for its spawner to "
                        "suspend (stealRunNext()); it runs it now",
                    "stealRunNext()", kSearch, i);
    return make(thread + " found nothing to run and took " + c.fiber(e.arg[0]) + ", the oldest fiber of worker " +
                    std::to_string(e.arg[1]) + "'s deque of new work (stealOldestFrom(); in a tree of spawns, the largest "
                    "piece of work left); it runs it now",
                "stealOldestFrom()", kReadyQueue, i);
}

Explanation explainWakeupBounced(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    return make("The wake-up " + thread + " sent to worker " + std::to_string(e.arg[0]) + " was not delivered (" +
                    std::to_string(e.signedArg(1)) + ": its ring was not enabled yet, or was closing); that worker finds "
                    "the work in its queue by itself when it starts (completionsToReady())",
                "completionsToReady()", kDriver, i);
}

Explanation explainMutexTaken(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    return make(c.fiber(e.arg[0]) + " had found mutex " + c.object(e.arg[1], e.time) + " locked, but by the time it queued "
                    "itself (mutexEnqueue(), after switching away) the mutex was free: it took it and was made ready",
                "mutexEnqueue()", kMutex, i);
}

Explanation explainOverflow(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    if (e.small == static_cast<std::uint8_t>(trace::OverflowOp::Put))
        return make(thread + "'s queue was full (256 fibers): " + c.fiber(e.arg[0]) + " went to the loop's overflow list "
                        "with the older half of the queue (pushOrOverflow(), Go's runqputslow)",
                    "pushOrOverflow()", kReadyQueue, i);
    return make(thread + " took " + c.fiber(e.arg[0]) + " from the loop's overflow list (takeOverflow())", "takeOverflow()",
                kReadyQueue, i);
}

Explanation explainTruth(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    return make("What the runtime knew here (a checking recording, FIBERSCOPE_TRACE_CHECK=1): " +
                    std::string(trace::recordKind(e.kind).explanation),
                "trace::emit::truth()", "tracer/include/fiberscope/trace_emit.hpp", i);
}

Explanation explainStealHalf(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    // The batch: this thread's steal-half records at this time.
    const std::uint32_t next = c.neighbour(i, EventKind::StealHalf, 1, 1);
    const bool runs = next == kNoEvent || c.event(next).time != e.time;
    // A batch of one: the oldest fiber of the victim's new work
    // (stealOldestFrom), or a ring with one fiber (stealHalf).
    const std::uint32_t before = c.neighbour(i, EventKind::StealHalf, -1, 1);
    if (runs && (before == kNoEvent || c.event(before).time != e.time))
        return make(thread + " found nothing to run and took " + c.fiber(e.arg[0]) + " from worker " +
                        std::to_string(e.arg[1]) +
                        "'s ring of yielders in stealHalf(): the scaling policy takes the older half of a thread's "
                        "yielders at once, here one fiber, and runs it now",
                    "findReadyFiber()", kReadyQueue, i);
    return make(thread + " found nothing to run and took " + c.fiber(e.arg[0]) + " from worker " + std::to_string(e.arg[1]) +
                    "'s ready queue in stealHalf(): the scaling policy takes the older half of a thread's yielders at once" +
                    (runs ? ", and runs the newest of them now" : "; it waits in this thread's queue"),
                "stealHalf()", kReadyQueue, i);
}

// What became of wake-up `i`: received (its arrow's end), or bounced (no
// arrow: the model pairs it with the sender's later wakeup-bounced,
// wakeup_pairing.hpp), or neither yet.
std::string wakeupAnswer(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    std::vector<std::uint32_t> flows;
    flowsInRange(c.tl, e.time, e.time, flows, 1u << static_cast<unsigned>(FlowKind::Wakeup), 100000);
    for (std::uint32_t k : flows) {
        const Flow f = flowAt(c.tl, k);
        if (f.from.event == i) return "; " + c.workerName(f.to.thread) + " received it " + formatDuration(f.to.time - e.time) + " later";
    }
    // No receipt: the next bounce of this pair on this thread answers it.
    constexpr std::size_t kLook = 1'000'000; // records; a hover must stay quick
    const std::uint32_t thread = c.tr.events.thread(i);
    for (std::size_t j = i + 1; j < c.tr.events.size() && j < i + kLook; ++j) {
        if (c.tr.events.thread(j) != thread || c.tr.events.kind(j) != EventKind::WakeupBounced) continue;
        const Event b = c.event(static_cast<std::uint32_t>(j));
        if (b.arg[0] != e.arg[0]) continue;
        return "; it bounced (result " + std::to_string(b.signedArg(1)) + ": worker " + std::to_string(e.arg[0]) +
               "'s ring was not yet enabled, or was closing), which this thread read back " + formatDuration(b.time - e.time) +
               " later (wakeup-bounced); the worker finds its work when it starts";
    }
    return "";
}

Explanation explainWakeupSent(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    std::string text = thread + (c.epoll() ? " wrote to the eventfd of idle worker " : " sent a MSG_RING to wake idle worker ") +
                       std::to_string(e.arg[0]);
    if (c.scaling())
        return make(text + " to search for work: it had just queued a fiber and no thread was searching (wakeToSearch(), "
                           "Go's wakep); one wake-up per burst, not one per fiber",
                    "wakeToSearch()", kSchedule, i);
    const std::uint32_t s = c.neighbour(i, EventKind::Schedule, -1, 2);
    if (s != kNoEvent && c.event(s).time == e.time) text += " after schedule() handed it " + queueWho(c.event(s).arg[1], c.fiber(c.event(s).arg[0]));
    else text += " after schedule() handed it ready fibers";
    text += c.epoll() ? " (schedule() -> Driver::wake() -> Poller::wake())" : " (schedule() -> Driver::wake() -> ring.message())";
    return make(text + wakeupAnswer(c, i), "schedule()", kSchedule, i);
}

Explanation explainWakeupReceived(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    if (c.scaling())
        return make(thread + " was woken by worker " + std::to_string(e.arg[0]) +
                        " to search for work (wakeToSearch()): nobody handed it fibers; its idle loop looks for them in the "
                        "other threads' queues (searchBeforePark())",
                    "searchBeforePark()", kSearch, i);
    if (c.epoll())
        return make(thread + "'s eventfd woke its epoll_pwait2 (sent by worker " + std::to_string(e.arg[0]) +
                        "): the fibers it was handed are already in its ready queue and its idle loop picks them up next (Poller::poll())",
                    "Poller::poll()", kPoller, i);
    return make(thread + "'s ring delivered the MSG_RING from worker " + std::to_string(e.arg[0]) +
                    ": the fibers it was handed are already in its ready queue and its idle loop picks them up next (completionsToReady())",
                "completionsToReady()", kDriver, i);
}

Explanation explainSearch(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    const std::string others = e.arg[0] == 0 ? std::string("no other thread") : plural(e.arg[0], "thread", "threads");
    switch (static_cast<trace::SearchOp>(e.small)) {
    case trace::SearchOp::Begin:
        return make(thread + " found nothing to run and, before parking, searches the other threads' queues and run_next "
                             "slots for up to 10 us (searchBeforePark(), Go's spinning M): " +
                        plural(e.arg[0], "thread searches", "threads search") +
                        " now, and while one does, a spawn wakes nobody",
                    "searchBeforePark()", kSearch, i);
    case trace::SearchOp::Found:
        return make(thread + " stopped searching: it found work (the steal before this says whose) and runs it; " + others +
                        " still searching" + (e.arg[0] == 0 ? ", so it woke a parked thread to search in its place if there was one (Go's resetspinning)" : ""),
                    "searchBeforePark()", kSearch, i);
    case trace::SearchOp::GaveUp:
        return make(thread + " searched for 10 us and found nothing: it publishes itself idle and parks, unless a last look finds "
                             "work queued meanwhile (searchBeforePark()); " + others + " still searching",
                    "searchBeforePark()", kSearch, i);
    case trace::SearchOp::Completions:
        return make(thread + " stopped searching: its own ring has completions to reap, which it does before anything else "
                             "(searchBeforePark()); " + others + " still searching",
                    "searchBeforePark()", kSearch, i);
    }
    return make(thread + " searched for work (searchBeforePark())", "searchBeforePark()", kSearch, i);
}

Explanation explainPark(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    std::string text = thread + " found nothing to run (findReadyFiber() came back empty) and parked in " +
                       c.words().park_call + " to wait for " + c.words().park_waits_for;
    const ThreadLane* lane = findThread(c.tl, e.thread);
    if (lane) {
        const std::size_t k = intervalAt(lane->lane, e.time);
        if (k != kNone && lane->lane.intervals[k].state == State::Parked)
            text += ", for " + formatDuration(lane->lane.intervals[k].duration());
    }
    return make(text + (c.epoll() ? " (idle() -> Driver::park() -> Poller::poll())" : " (idle() -> Driver::park() -> ring.submitAndWait())"), "idle()", kThread, i);
}

Explanation explainUnpark(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    if (c.epoll())
        return make(thread + " returned from " + c.words().park_call + " having made " + plural(e.arg[0], "fiber", "fibers") +
                        " ready (readiness, expired deadlines, cancels and finished pool jobs; Poller::poll())",
                    "Poller::poll()", kPoller, i);
    std::string text = thread + " returned from " + c.words().park_call + " with " + plural(e.arg[0], "completion", "completions");
    const std::uint32_t park = c.neighbour(i, EventKind::Park, -1, 256);
    if (park != kNoEvent) text += " after " + formatDuration(e.time - c.event(park).time) + " parked";
    return make(text + "; completionsToReady() made the completed fibers ready (idle())", "idle()", kThread, i);
}

Explanation explainSubmit(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string worker = c.workerName(e.thread);
    if (c.epoll()) {
        if (trace::opcodeHas(e.small, trace::kOpNoteReadinessWait))
            return make(c.fiber(e.arg[0]) + " got EAGAIN, parked on " + worker + "'s wait queue for fd " +
                            std::to_string(e.signedArg(1)) + " (" + trace::opcodeLabel(e.small) +
                            ") and switched away (io-wait); epoll's readiness report wakes it to retry (Poller::park())",
                        "Poller::park()", kPoller, i);
        return make(c.fiber(e.arg[0]) + " started " + operationText(c.words(), e.small, e.signedArg(1)) +
                        " on the epoll backend: a non-blocking syscall (retried on readiness), a timer, or a blocking-pool job for a regular file (pollerExecute())",
                    "pollerExecute()", kPoller, i);
    }
    std::string text = c.fiber(e.arg[0]) + " submitted " + operationText(c.words(), e.small, e.signedArg(1)) +
                       " and switched away (io-wait); the SQE reaches the kernel when " + worker +
                       " next enters it, and the completion resumes the fiber (execute())";
    return make(text, "execute()", kOps, i);
}

Explanation explainComplete(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    const std::string worker = c.workerName(e.thread);
    std::string text = c.epoll() ? thread + " finished " + c.fiber(e.arg[0]) + "'s " + opcodeNoun(e.small) + " " +
                                       resultText(e.small, e.signedArg(1))
                                 : worker + "'s ring completed " + c.fiber(e.arg[0]) + "'s " + opcodeNoun(e.small) + " " +
                                       resultText(e.small, e.signedArg(1)) + "; the idle loop made it ready (completionsToReady())";
    if (const FiberLane* fl = findFiber(c.tl, e.arg[0])) {
        const auto& iv = fl->lane.intervals;
        auto it = std::lower_bound(iv.begin(), iv.end(), e.time, [](const Interval& a, std::int64_t t) { return a.start < t; });
        for (; it != iv.end(); ++it)
            if (it->state == State::Running || it->state == State::Finished) break;
        if (it != iv.end() && it->state == State::Running && it->thread >= 0)
            text += " and " + c.workerName(static_cast<std::uint32_t>(it->thread)) + " resumed it " + formatDuration(it->start - e.time) + " later";
    }
    if (c.epoll()) return make(text, "Poller::poll()", kPoller, i);
    return make(text, "completionsToReady()", kDriver, i);
}

Explanation explainCancelRequest(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    if (e.arg[1])
        return make("cancellation of " + c.fiber(e.arg[0]) + " was requested (requestCancel()); its operation is " +
                        c.words().in_flight + " of " + c.workerNamed(e.arg[1] - 1) +
                        (c.epoll() ? ", so the request goes to its mailbox and an eventfd write wakes it"
                                   : ", so a MSG_RING carries the request there"),
                    "requestCancel()", kCancel, i);
    return make("cancellation of " + c.fiber(e.arg[0]) +
                    " was requested (requestCancel()); nothing of it is in flight, so it gets Canceled at its next cancellation point",
                "requestCancel()", kCancel, i);
}

Explanation explainCancelDelivered(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    const std::string worker = c.workerName(e.thread);
    // A fiber waiting on a Mutex or a Condition has nothing in a ring:
    // the canceler itself unlinked it (requestCancel(), cancel.cpp).
    if (const FiberLane* fl = findFiber(c.tl, e.arg[0])) {
        const auto& iv = fl->lane.intervals;
        std::size_t k = intervalAt(fl->lane, e.time);
        // The record and the ready interval it starts share a time: look
        // at the wait just before it.
        for (int steps = 0; k != kNone && steps < 3 && iv[k].state != State::Waiting && iv[k].start >= e.time; ++steps)
            k = k > 0 ? k - 1 : kNone;
        if (k != kNone && iv[k].state == State::Waiting &&
            (iv[k].reason == WaitReason::Mutex || iv[k].reason == WaitReason::Condition)) {
            const bool mutex = iv[k].reason == WaitReason::Mutex;
            return make(thread + " took " + c.fiber(e.arg[0]) + " off the " + (mutex ? "mutex's" : "condition's") +
                            " wait list under its spin lock and made it ready: " +
                            (mutex ? "Mutex::lock()" : "Condition::wait()") +
                            " returns Canceled (requestCancel(); a wake-up that took it first would have won, leaving the cancel pending)",
                        "requestCancel()", kCancel, i);
        }
    }
    if (c.epoll())
        return make(worker + " found the request to cancel " + c.fiber(e.arg[0]) +
                        " in its mailbox and unparked it with -ECANCELED (Poller::poll())",
                    "Poller::poll()", kPoller, i);
    return make(worker + " received the request to cancel " + c.fiber(e.arg[0]) +
                    " and submitted IORING_OP_ASYNC_CANCEL for its in-flight operation (completionsToReady())",
                "completionsToReady()", kDriver, i);
}

Explanation explainMutexContended(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    return make(c.fiber(e.arg[0]) + " found mutex " + c.object(e.arg[1], e.time) +
                    " locked and switches away to wait (Mutex::lockSlow()); the unlocking fiber will hand the mutex to it directly",
                "Mutex::lockSlow()", kMutex, i);
}

Explanation explainMutexHandoff(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    // An unlock switches straight to the new owner; the unlock inside
    // Condition::wait (the waiter has switched away already) queues it.
    const std::uint32_t next = c.neighbour(i, EventKind::Switch, 1, 2);
    if (next != kNoEvent && c.event(next).small == static_cast<std::uint8_t>(SwitchReason::Handoff))
        return make(c.fiber(e.arg[0]) + " unlocked mutex " + c.object(e.arg[2], e.time) + " by handing it to waiting " + c.fiber(e.arg[1]) +
                        " and switching straight to it (Mutex::unlockSlow()); it goes back to a ready queue itself",
                    "Mutex::unlockSlow()", kMutex, i);
    return make(c.fiber(e.arg[0]) + " released mutex " + c.object(e.arg[2], e.time) + " as it began to wait on a condition, handing it "
                    "to waiting " + c.fiber(e.arg[1]) + ", which now holds it and is queued to run (conditionEnqueue())",
                "conditionEnqueue()", kCondition, i);
}

Explanation explainConditionWait(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    return make(c.fiber(e.arg[0]) + " waits on condition " + c.object(e.arg[1], e.time) +
                    " (Condition::wait()): conditionEnqueue() queues it and only then releases its mutex",
                "Condition::wait()", kCondition, i);
}

Explanation explainConditionWake(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    if (e.small == static_cast<std::uint8_t>(trace::ConditionWakeHow::TimedOut))
        return make("The Timeout of " + c.fiber(e.arg[0]) + "'s wait on condition " + c.object(e.arg[1], e.time) +
                        " passed: its thread's idle loop (SyncTimers::expire()) took it off the waiters and passed "
                        "it to schedule(); Condition::wait() returns TimedOut",
                    "SyncTimers::expire()", "runtime/src/sync/timers.cpp", i);
    if (e.small == static_cast<std::uint8_t>(trace::ConditionWakeHow::Broadcast))
        return make("Condition::broadcast() woke every waiter on condition " + c.object(e.arg[1], e.time) + " (one record each, " +
                        c.fiber(e.arg[0]) + " among them) and passed them to schedule() together",
                    "Condition::broadcast()", kCondition, i);
    return make("Condition::signal() woke " + c.fiber(e.arg[0]) + ", the oldest waiter on condition " + c.object(e.arg[1], e.time) +
                    ", and passed it to schedule()",
                "Condition::signal()", kCondition, i);
}

Explanation explainAwait(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    std::string text = c.fiber(e.arg[0]) + " awaits " + c.fiber(e.arg[1]) + " (Future::await() -> awaitFiber())";
    const FiberLane* target = findFiber(c.tl, e.arg[1]);
    if (target && target->finished() >= 0 && target->finished() <= e.time)
        text += "; it had already finished, so the awaiter is rescheduled at once";
    else text += " and switches away until it finishes";
    return make(text, "awaitFiber()", kFiber, i);
}

Explanation explainGroupOp(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string group = "group " + c.object(e.arg[0], e.time);
    switch (e.small) {
    case 0:
        return make(c.fiber(e.arg[1]) + " joined " + group + " (Group::add()), which will await it", "Group::add()", kGroup, i);
    case 1:
        return make(c.fiber(e.arg[1]) + " waits for every member of " + group + " (Group::wait())", "Group::wait()", kGroup, i);
    default:
        return make(c.fiber(e.arg[1]) + " canceled " + group + ": every member gets a cancellation request, then it waits for them (Group::cancel())",
                    "Group::cancel()", kGroup, i);
    }
}

Explanation explainQueueOp(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string queue = "queue " + c.object(e.arg[0], e.time);
    const std::string who = c.fiber(e.arg[1]);
    switch (e.small) {
    case 0: return make(who + " put a value into " + queue + " (Queue::put())", "Queue::put()", kQueue, i);
    case 1: return make(who + " took a value from " + queue + " (Queue::get())", "Queue::get()", kQueue, i);
    case 2: return make(who + " found " + queue + " full and blocks in Queue::put() until a get() makes room", "Queue::put()", kQueue, i);
    case 3: return make(who + " found " + queue + " empty and blocks in Queue::get() until a put()", "Queue::get()", kQueue, i);
    default: return make(who + " closed " + queue + " (Queue::close()): blocked and later put()s fail, get()s drain what is left", "Queue::close()", kQueue, i);
    }
}

Explanation explainSemaphoreOp(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string semaphore = "semaphore " + c.object(e.arg[0], e.time);
    const std::string who = c.fiber(e.arg[1]);
    switch (static_cast<trace::SemaphoreOp>(e.small)) {
    case trace::SemaphoreOp::Take: return make(who + " took a permit from " + semaphore + " (Semaphore::wait())", "Semaphore::waitImpl()", kSemaphore, i);
    case trace::SemaphoreOp::Blocked:
        return make(who + " found no permit in " + semaphore + " and waits on its condition until a post() (Semaphore::wait())",
                    "Semaphore::waitImpl()", kSemaphore, i);
    case trace::SemaphoreOp::GaveUp:
        return make(who + " stopped waiting for a permit of " + semaphore + " without one: canceled or timed out (Semaphore::wait())",
                    "Semaphore::waitImpl()", kSemaphore, i);
    default:
        return make(who + " posted " + plural(e.arg[2], "permit", "permits") + " to " + semaphore +
                        ", waking up to as many waiters (Semaphore::post())",
                    "Semaphore::post()", kSemaphore, i);
    }
}

Explanation explainRwLockOp(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string rwlock = "rwlock " + c.object(e.arg[0], e.time);
    const std::string who = c.fiber(e.arg[1]);
    switch (static_cast<trace::RwLockOp>(e.small)) {
    case trace::RwLockOp::ReadLocked:
        return make(who + " holds " + rwlock + " shared now, beside any other readers (RwLock::lockShared())", "RwLock::lockSharedImpl()", kRwLock, i);
    case trace::RwLockOp::WriteLocked:
        return make(who + " holds " + rwlock + " exclusively now (RwLock::lock())", "RwLock::lockImpl()", kRwLock, i);
    case trace::RwLockOp::ReadBlocked:
        return make(who + " waits to read " + rwlock + ": a writer holds it or waits for it, and writers go first (RwLock::lockShared())",
                    "RwLock::lockSharedImpl()", kRwLock, i);
    case trace::RwLockOp::WriteBlocked:
        return make(who + " waits to write " + rwlock + " until its holders release it (RwLock::lock())", "RwLock::lockImpl()", kRwLock, i);
    case trace::RwLockOp::GaveUp:
        return make(who + " stopped waiting for " + rwlock + " without it: canceled or timed out", "RwLock::lockImpl()", kRwLock, i);
    case trace::RwLockOp::ReadUnlock:
        return make(who + " released its shared hold of " + rwlock + "; the last reader out wakes a waiting writer (RwLock::unlockShared())",
                    "RwLock::unlockShared()", kRwLock, i);
    default:
        return make(who + " released " + rwlock + ": the readers waiting are admitted together, else one writer is woken (RwLock::unlock())",
                    "RwLock::unlock()", kRwLock, i);
    }
}

Explanation explainObjectName(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    return make("The program named object " + objectLabel(e.arg[0]) + " \"" + c.tr.string(e.arg[1]) +
                    "\" (setObjectName): the tools call it so from here on (a part of a named primitive is NAME.part)",
                "setObjectName()", kObjectName, i);
}

Explanation explainEventOp(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string event = "event " + c.object(e.arg[0], e.time);
    const std::string who = c.fiber(e.arg[1]);
    switch (static_cast<trace::EventOp>(e.small)) {
    case trace::EventOp::Set:
        return make(who + " set " + event + ": every fiber waiting on it is woken with one broadcast, and later waits return at once (Event::set())",
                    "Event::set()", kEvent, i);
    case trace::EventOp::Reset:
        return make(who + " reset " + event + ": later waits wait for the next set() (Event::reset())", "Event::reset()", kEvent, i);
    case trace::EventOp::Blocked:
        return make(who + " found " + event + " clear and waits on its condition until a set() (Event::waitSlow())", "Event::waitSlow()", kEvent, i);
    case trace::EventOp::Returned:
        return make(who + "'s wait on " + event + " returns: it was set (Event::waitSlow())", "Event::waitSlow()", kEvent, i);
    default:
        return make(who + " stopped waiting on " + event + " before it was set: canceled or timed out (Event::waitSlow())",
                    "Event::waitSlow()", kEvent, i);
    }
}

Explanation explainMark(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    const std::uint64_t running = runningFiber(c.tl, e.thread, e.time);
    return make("mark '" + c.tr.string(e.arg[0]) + "' on " + thread + " while " + c.fiber(running) + " ran (trace::mark())",
                "trace::mark()", kTraceApi, i);
}

Explanation explainZoneBegin(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    const std::uint64_t running = runningFiber(c.tl, e.thread, e.time);
    std::string text = "zone '" + c.tr.string(e.arg[0]) + "' began on " + c.fiber(running) + " (trace::Zone)";
    const std::vector<Zone>* zones = nullptr;
    if (running) {
        if (const FiberLane* fl = findFiber(c.tl, running)) zones = &fl->zones();
    } else if (const ThreadLane* tl = findThread(c.tl, e.thread)) {
        zones = &tl->zones;
    }
    if (zones)
        for (const Zone& z : *zones)
            if (z.begin_event == i && z.end_event != kNoEvent) text += " and lasted " + formatDuration(z.end - z.start);
    return make(text, "trace::Zone", kTraceApi, i);
}

Explanation explainZoneEnd(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    const std::uint64_t running = runningFiber(c.tl, e.thread, e.time);
    return make("the innermost open zone of " + c.fiber(running) + " ended (trace::Zone's destructor)", "trace::Zone::~Zone()", kTraceApi, i);
}

Explanation explainLostEvents(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    return make(plural(e.arg[0], "record", "records") + " of " + thread +
                    " were dropped here: the trace writer fell behind and the recorder's buffer cap was reached, so decisions around this point may be missing",
                "the trace recorder", "tracer/src/thread_buffer.cpp", i);
}

Explanation explainStringDef(const Ctx&, std::uint32_t i) {
    return make("a string definition for the trace's string table", "the trace recorder", "tracer/src/thread_buffer.cpp", i);
}

Explanation explainCpuSample(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    return make("the trace writer read trace thread " + std::to_string(e.arg[0]) + "'s kernel scheduler statistics: since its last sample it ran " +
                    formatDuration(static_cast<std::int64_t>(e.arg[1])) + " on a CPU and waited " +
                    formatDuration(static_cast<std::int64_t>(e.arg[2])) + " on a runqueue for one",
                "/proc/self/task/TID/schedstat", "tracer/src/writer.cpp", i);
}

Explanation explainSourceLocation(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    const std::string thread = c.thread(e.thread);
    return make("the " + thread + " record before this one was made at " + c.tr.string(e.arg[0]) + ":" + std::to_string(e.arg[1]) +
                    " (std::source_location, taken by trace::mark() and trace::Zone)",
                "trace::mark()", kTraceApi, i);
}

// One entry per record kind (a kind the record table names and this table
// lacks fails to compile: everyKindExplained below). Each function words
// its policy and backend variants from the trace (Ctx::scaling, Ctx::epoll).
using Explainer = Explanation (*)(const Ctx&, std::uint32_t);
constexpr std::pair<EventKind, Explainer> kExplainers[] = {
    {EventKind::ThreadStart, explainThreadStart},
    {EventKind::ThreadStop, explainThreadStop},
    {EventKind::FiberCreate, explainFiberCreate},
    {EventKind::FiberFinish, explainFiberFinish},
    {EventKind::FiberRecycle, explainFiberRecycle},
    {EventKind::FiberName, explainFiberName},
    {EventKind::Switch, explainSwitch},
    {EventKind::Schedule, explainSchedule},
    {EventKind::Steal, explainSteal},
    {EventKind::StealOne, explainStealOne},
    {EventKind::WakeupBounced, explainWakeupBounced},
    {EventKind::MutexTaken, explainMutexTaken},
    {EventKind::Overflow, explainOverflow},
    {EventKind::Truth, explainTruth},
    {EventKind::StealHalf, explainStealHalf},
    {EventKind::WakeupSent, explainWakeupSent},
    {EventKind::WakeupReceived, explainWakeupReceived},
    {EventKind::Search, explainSearch},
    {EventKind::Park, explainPark},
    {EventKind::Unpark, explainUnpark},
    {EventKind::Submit, explainSubmit},
    {EventKind::Complete, explainComplete},
    {EventKind::CancelRequest, explainCancelRequest},
    {EventKind::CancelDelivered, explainCancelDelivered},
    {EventKind::MutexContended, explainMutexContended},
    {EventKind::MutexHandoff, explainMutexHandoff},
    {EventKind::ConditionWait, explainConditionWait},
    {EventKind::ConditionWake, explainConditionWake},
    {EventKind::Await, explainAwait},
    {EventKind::GroupOp, explainGroupOp},
    {EventKind::QueueOp, explainQueueOp},
    {EventKind::SemaphoreOp, explainSemaphoreOp},
    {EventKind::RwLockOp, explainRwLockOp},
    {EventKind::ObjectName, explainObjectName},
    {EventKind::EventOp, explainEventOp},
    {EventKind::Mark, explainMark},
    {EventKind::ZoneBegin, explainZoneBegin},
    {EventKind::ZoneEnd, explainZoneEnd},
    {EventKind::LostEvents, explainLostEvents},
    {EventKind::StringDef, explainStringDef},
    {EventKind::CpuSample, explainCpuSample},
    {EventKind::SourceLocation, explainSourceLocation},
};

constexpr std::array<Explainer, 256> kExplainerOf = [] {
    std::array<Explainer, 256> of{};
    for (const auto& [kind, explainer] : kExplainers) of[static_cast<std::uint8_t>(kind)] = explainer;
    return of;
}();

constexpr bool everyKindExplained() {
    for (unsigned k = 0; k < 256; ++k)
        if (trace::recordKind(static_cast<EventKind>(k)).name && !kExplainerOf[k]) return false;
    return true;
}
constexpr bool eachKindOnce() {
    for (std::size_t i = 0; i < std::size(kExplainers); ++i)
        for (std::size_t j = i + 1; j < std::size(kExplainers); ++j)
            if (kExplainers[i].first == kExplainers[j].first) return false;
    return true;
}
static_assert(everyKindExplained(), "every record kind in the record table has an explanation in kExplainers");
static_assert(eachKindOnce(), "a record kind is listed twice in kExplainers");

Explanation explainEvent(const Ctx& c, std::uint32_t i) {
    const Event& e = c.event(i);
    if (const Explainer explainer = kExplainerOf[static_cast<std::uint8_t>(e.kind)]) return explainer(c, i);
    return make(std::string("a ") + trace::eventKindName(e.kind) + " record on " + c.thread(e.thread), "", "", i);
}

} // namespace

Explanation explain(const Timeline& timeline, const trace::Trace& trace, std::uint32_t event) {
    if (event >= trace.events.size()) return {};
    return explainEvent(Ctx{timeline, trace}, event);
}

Explanation explainThreadInterval(const Timeline& timeline, const trace::Trace& trace, std::size_t lane, std::size_t interval) {
    if (lane >= timeline.threads.size() || interval >= timeline.threads[lane].lane.intervals.size()) return {};
    const Ctx c{timeline, trace};
    const ThreadLane& tl = timeline.threads[lane];
    const auto& iv = tl.lane.intervals;
    const Interval& in = iv[interval];
    const std::string thread = c.thread(tl.thread);
    const std::string dur = formatDuration(in.duration());
    Interval following; // lane intervals are read as values (lane.hpp)
    const Interval* next = interval + 1 < iv.size() ? &(following = iv[interval + 1]) : nullptr;
    switch (in.state) {
    case State::Running: {
        std::string began = "it was already running when the thread's recording began";
        if (c.valid(in.cause) && c.event(in.cause).kind == EventKind::Switch) {
            const Event& sw = c.event(in.cause);
            if (sw.arg[0] == 0) began = "yield() switched to it from the idle loop, which found it ready";
            else began = "yield() switched to it when " + c.fiber(sw.arg[0]) + " " + leavePhrase(c, in.cause).text;
        }
        std::string ended = "it was still running when the thread's recording ended";
        if (next && c.valid(next->cause) && c.event(next->cause).kind == EventKind::Switch)
            ended = "then it " + leavePhrase(c, next->cause).text;
        return make(thread + " ran " + c.fiber(in.fiber) + " for " + dur + ": " + began + "; " + ended, "yield()", kSwitch, in.cause);
    }
    case State::Idle: {
        std::string text = thread + " spent " + dur +
                           " in its idle loop (idle()), looking for work with findReadyFiber(): its own ready queue first, then other workers' queues to steal";
        if (next && next->state == State::Running) text += "; it found " + c.fiber(next->fiber);
        else if (next && next->state == State::Parked) text += "; it found nothing and parked";
        return make(text, "idle()", kThread, in.cause);
    }
    case State::Parked: {
        const trace::BackendWords& words = c.words();
        std::string text = thread + " was parked in " + words.park_call + " for " + dur +
                           ": findReadyFiber() found nothing to run, so idle() waited in the kernel for " + words.park_waits_for;
        if (next && c.valid(next->cause) && c.event(next->cause).kind == EventKind::Unpark) {
            text += c.epoll() ? "; it woke having made " + plural(c.event(next->cause).arg[0], "fiber", "fibers") + " ready"
                              : "; it woke with " + plural(c.event(next->cause).arg[0], "completion", "completions");
            const std::uint32_t wake = c.neighbour(next->cause, EventKind::WakeupReceived, -1, 64, bit(EventKind::Park));
            if (wake != kNoEvent)
                text += std::string(", including ") + (c.epoll() ? "an " : "a ") + words.wake + " wake-up from " +
                        c.workerNamed(c.event(wake).arg[0]);
        }
        return make(text, "idle()", kThread, in.cause);
    }
    default: break;
    }
    return make(thread + " was " + stateName(in.state) + " for " + dur, "", "", in.cause);
}

Explanation explainFiberInterval(const Timeline& timeline, const trace::Trace& trace, std::size_t lane, std::size_t interval) {
    if (lane >= timeline.fibers.size() || interval >= timeline.fibers[lane].lane.intervals.size()) return {};
    const Ctx c{timeline, trace};
    const FiberLane& fl = timeline.fibers[lane];
    const auto& iv = fl.lane.intervals;
    const Interval& in = iv[interval];
    const std::string fiber = c.fiber(fl.fiber());
    const std::string dur = formatDuration(in.duration());
    Interval following; // lane intervals are read as values (lane.hpp)
    const Interval* next = interval + 1 < iv.size() ? &(following = iv[interval + 1]) : nullptr;
    const auto on = [&](std::int32_t thread) { return thread >= 0 ? c.thread(static_cast<std::uint32_t>(thread)) : std::string("an unknown thread"); };
    switch (in.state) {
    case State::Ready: {
        std::string text = fiber + " was ready to run for " + dur;
        if (c.valid(in.cause) && c.event(in.cause).kind == EventKind::Schedule && in.thread >= 0)
            text += " in " + on(in.thread) + "'s ready queue";
        const std::string why = readyWhy(c, fl.fiber(), in.start);
        if (!why.empty()) text += " because " + why;
        if (next && next->state == State::Running) text += "; then " + on(next->thread) + " switched to it";
        return make(text, "schedule()", kSchedule, in.cause);
    }
    case State::Running: {
        std::string text = fiber + " ran on " + on(in.thread) + " for " + dur;
        Phrase leave{"", "yield()", kSwitch};
        if (next && c.valid(next->cause) && c.event(next->cause).kind == EventKind::Switch) {
            leave = leavePhrase(c, next->cause);
            text += "; then it " + leave.text;
        } else if (!next) {
            text += " until the end of the trace";
        }
        return make(text, leave.function, leave.file, in.cause);
    }
    case State::Waiting: {
        std::string what;
        const char* function = "yield()";
        const char* file = kSwitch; // yield()
        if (c.valid(in.cause) && c.event(in.cause).kind == EventKind::Switch) {
            const Phrase leave = leavePhrase(c, in.cause);
            function = leave.function;
            file = leave.file;
        }
        switch (in.reason) {
        case WaitReason::Io:
        case WaitReason::Timer: {
            const std::uint32_t s = c.valid(in.cause) ? c.neighbour(in.cause, EventKind::Submit, -1, 4) : kNoEvent;
            what = s != kNoEvent ? operationText(c.words(), c.event(s).small, c.event(s).signedArg(1))
                                 : std::string(in.reason == WaitReason::Timer ? "a timer" : c.epoll() ? "an operation" : "a ring operation");
            what += c.epoll() ? " started by execute(); the idle loop's Poller::poll() makes it ready when epoll reports it ready, "
                                "its deadline passes or its pool job finishes"
                              : " submitted by execute(); the idle loop's completionsToReady() makes it ready when the completion arrives";
            break;
        }
        case WaitReason::Await: {
            const std::uint32_t a = c.valid(in.cause) ? c.neighbour(in.cause, EventKind::Await, -1, 4) : kNoEvent;
            what = (a != kNoEvent ? c.fiber(c.event(a).arg[1]) : std::string("another fiber")) + " to finish (awaitFiber())";
            break;
        }
        case WaitReason::Select: what = "the first of several fibers to finish (selectFibers())"; break;
        case WaitReason::Mutex: what = "a contended mutex (Mutex::lockSlow()), which its owner hands over on unlock"; break;
        case WaitReason::Condition: what = "a condition to be signalled (Condition::wait())"; break;
        case WaitReason::Exit: what = "the event loop to shut down (EventLoop::~EventLoop())"; break;
        case WaitReason::None: what = "something the trace does not say"; break;
        }
        std::string text = fiber + " waited " + dur + " on " + on(in.thread) + " for " + what;
        if (next && next->state == State::Ready) {
            const std::string why = readyWhy(c, fl.fiber(), next->start);
            if (!why.empty()) text += "; it became ready because " + why;
        }
        return make(text, function, file, in.cause);
    }
    case State::Finished: {
        std::string text = fiber + " finished at " + formatTime(in.start) + " on " + on(in.thread) +
                           ": its function returned and finishFiber() switched away for good";
        if (fl.awaitedBy()) text += "; " + c.fiber(fl.awaitedBy()) + " awaited it";
        return make(text, "finishFiber()", kFiber, in.cause);
    }
    default: break;
    }
    return make(fiber + " was " + stateName(in.state) + " for " + dur, "", "", in.cause);
}

Explanation explainZone(const Timeline& timeline, const trace::Trace& trace, const Zone& zone, std::uint64_t fiber) {
    const Ctx c{timeline, trace};
    std::string text = "zone '" + trace.string(zone.label) + "' on " + c.fiber(fiber) + " lasted " + formatDuration(zone.end - zone.start);
    if (zone.end_event == kNoEvent) text += " (it was never closed; it ends where the fiber or the trace ends)";
    if (zone.depth) text += ", nested " + std::to_string(zone.depth) + " deep";
    return make(text + " (trace::Zone)", "trace::Zone", kTraceApi, zone.begin_event);
}

Explanation explain(const Timeline& timeline, const trace::Trace& trace, const Hit& hit, bool fiber_lane) {
    switch (hit.kind) {
    case HitKind::None: return {};
    case HitKind::Instant: return explain(timeline, trace, hit.event);
    case HitKind::Interval:
        return fiber_lane ? explainFiberInterval(timeline, trace, hit.lane, hit.index)
                          : explainThreadInterval(timeline, trace, hit.lane, hit.index);
    case HitKind::Zone:
        if (fiber_lane && hit.lane < timeline.fibers.size() && hit.index < timeline.fibers[hit.lane].zones().size())
            return explainZone(timeline, trace, timeline.fibers[hit.lane].zones()[hit.index], timeline.fibers[hit.lane].fiber());
        if (!fiber_lane && hit.lane < timeline.threads.size() && hit.index < timeline.threads[hit.lane].zones.size())
            return explainZone(timeline, trace, timeline.threads[hit.lane].zones[hit.index], 0);
        return {};
    }
    return {};
}

} // namespace fiberscope::viewer
