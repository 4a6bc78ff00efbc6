// objectStateAt (issue 14, "Object state"): mutex owners and waiters,
// condition waiters, queue depths and blocked fibers, pending wake-ups and
// cancels, and timers with the deadline read from their -ETIME completion,
// on hand-built traces (each rule alone), against a plain replay with no
// snapshots (the snapshots change nothing), and on lessons 8 and 9 (the state
// at the lesson's checkpoints is what the lesson says), on both backends.
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include <fiberscope/analysis/object_state.hpp>
#include <fiberscope/analysis/timeline.hpp>
#include <fiberscope/trace_reader.hpp>
#include <fiberscope/trace_vocabulary.hpp>

#include "decoded_trace.hpp"

namespace {

namespace analysis = fiberscope::analysis;
namespace trace = fiberscope::trace;
using trace::EventKind;
using test::ev;
using U = std::vector<std::uint64_t>;

std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }
std::uint8_t qop(trace::QueueOp op) { return static_cast<std::uint8_t>(op); }
std::uint8_t wake(trace::ConditionWakeHow h) { return static_cast<std::uint8_t>(h); }

analysis::ObjectState at(const trace::Trace& t, std::int64_t time) {
    const analysis::Timeline tl = analysis::buildTimeline(t);
    return analysis::objectStateAt(t, tl, time);
}

const analysis::MutexState* mutexOf(const analysis::ObjectState& s, std::uint64_t m) {
    for (const auto& x : s.mutexes)
        if (x.mutex == m) return &x;
    return nullptr;
}
const analysis::QueueState* queueOf(const analysis::ObjectState& s, std::uint64_t q) {
    for (const auto& x : s.queues)
        if (x.queue == q) return &x;
    return nullptr;
}

} // namespace

TEST_CASE("object state: a mutex's owner and waiters after contended and hand-off records", "[analysis][objects]") {
    // Main (1) holds 0xA0 (locked without a record); 2 then 3 find it locked;
    // main hands it to the most recent waiter, 3, which hands it to 2.
    const trace::Trace t = test::makeTrace(1, {
                                                  ev(10, 0, EventKind::MutexContended, 2, 0xA0),
                                                  ev(11, 0, EventKind::MutexContended, 3, 0xA0),
                                                  ev(20, 0, EventKind::MutexHandoff, 1, 3, 0xA0),
                                                  ev(30, 0, EventKind::MutexHandoff, 3, 2, 0xA0),
                                              });
    CHECK(at(t, 5).mutexes.empty());
    const auto s15 = at(t, 15);
    REQUIRE(mutexOf(s15, 0xA0));
    CHECK(mutexOf(s15, 0xA0)->owner == 1); // read from the hand-off that ended the waiting
    CHECK(mutexOf(s15, 0xA0)->owner_since == -1);
    CHECK(mutexOf(s15, 0xA0)->waiters == U{3, 2}); // the next to get it first
    const auto s25 = at(t, 25);
    CHECK(mutexOf(s25, 0xA0)->owner == 3);
    CHECK(mutexOf(s25, 0xA0)->owner_since == 20);
    CHECK(mutexOf(s25, 0xA0)->waiters == U{2});
    const auto s20 = at(t, 20); // at the hand-off's own instant, it has happened
    CHECK(mutexOf(s20, 0xA0)->owner == 3);
    const auto s35 = at(t, 35);
    CHECK(mutexOf(s35, 0xA0)->owner == 2);
    CHECK(mutexOf(s35, 0xA0)->waiters.empty());
}

TEST_CASE("object state: a canceled mutex waiter leaves, and its holder is unknown without a hand-off", "[analysis][objects]") {
    const trace::Trace t = test::makeTrace(1, {
                                                  ev(10, 0, EventKind::MutexContended, 2, 0xA0),
                                                  ev(12, 0, EventKind::CancelRequest, 2, 1),
                                                  ev(14, 0, EventKind::CancelDelivered, 2),
                                              });
    CHECK(mutexOf(at(t, 11), 0xA0)->owner == 0);
    CHECK(mutexOf(at(t, 11), 0xA0)->waiters == U{2});
    CHECK(mutexOf(at(t, 15), 0xA0)->waiters.empty());
}

TEST_CASE("object state: a finish takes its fiber off every list; finishes of fibers never listed are not indexed", "[analysis][objects]") {
    // 2 waits on a mutex, 3 on a condition, 4 is blocked putting into a
    // queue, 5 has a cancel pending: each finishes. 6..9 never wait and
    // finish too (most fibers of a busy program): their finishes change no
    // object, so the index leaves them out (issue 13: it is kept while viewing).
    const trace::Trace t = test::makeTrace(1, {
                                                  ev(10, 0, EventKind::MutexContended, 2, 0xA0),
                                                  ev(11, 0, EventKind::ConditionWait, 3, 0xB0),
                                                  ev(12, 0, EventKind::QueueOp, 0xC0, 4, 0, qop(trace::QueueOp::PutBlocked)),
                                                  ev(13, 0, EventKind::CancelRequest, 5, 1),
                                                  ev(14, 0, EventKind::FiberFinish, 6),
                                                  ev(15, 0, EventKind::FiberFinish, 7),
                                                  ev(20, 0, EventKind::FiberFinish, 2),
                                                  ev(21, 0, EventKind::FiberFinish, 3),
                                                  ev(22, 0, EventKind::FiberFinish, 4),
                                                  ev(23, 0, EventKind::FiberFinish, 5),
                                                  ev(24, 0, EventKind::FiberFinish, 8),
                                                  ev(25, 0, EventKind::FiberFinish, 9),
                                                  ev(30, 0, EventKind::MutexContended, 2, 0xA1), // (a damaged trace: 2 again)
                                                  ev(31, 0, EventKind::FiberFinish, 2),
                                              });
    const analysis::Timeline tl = analysis::buildTimeline(t);
    const analysis::ObjectIndex index = analysis::buildObjectIndex(t, tl);
    CHECK(index.records.size() == 14 - 4); // all but the finishes of 6, 7, 8 and 9
    for (std::uint32_t id : index.records)
        if (t.events[id].kind == EventKind::FiberFinish) CHECK((t.events[id].arg[0] >= 2 && t.events[id].arg[0] <= 5));
    const auto s16 = analysis::objectStateAt(t, index, 16);
    CHECK(mutexOf(s16, 0xA0)->waiters == U{2});
    REQUIRE(s16.conditions.size() == 1);
    CHECK(s16.conditions[0].waiters == U{3});
    CHECK(queueOf(s16, 0xC0)->producers == U{4});
    CHECK(s16.cancels.size() == 1);
    const auto s26 = analysis::objectStateAt(t, index, 26);
    CHECK(mutexOf(s26, 0xA0)->waiters.empty());
    CHECK(s26.conditions.empty());
    CHECK(queueOf(s26, 0xC0)->producers.empty());
    CHECK(s26.cancels.empty());
    CHECK(mutexOf(analysis::objectStateAt(t, index, 30), 0xA1)->waiters == U{2});
    CHECK(mutexOf(analysis::objectStateAt(t, index, 32), 0xA1)->waiters.empty());
}

TEST_CASE("object state: condition waiters after wait, signal, broadcast and time-out", "[analysis][objects]") {
    // A version-6 file: a broadcast's one record names the first waiter and wakes every one.
    trace::Trace t = test::makeTrace(1, {
                                                  ev(10, 0, EventKind::ConditionWait, 4, 0xC0),
                                                  ev(11, 0, EventKind::ConditionWait, 5, 0xC0),
                                                  ev(12, 0, EventKind::ConditionWait, 9, 0xC8),
                                                  ev(20, 0, EventKind::ConditionWake, 4, 0xC0, 0, wake(trace::ConditionWakeHow::Signal)),
                                                  ev(22, 0, EventKind::ConditionWake, 9, 0xC8, 0, wake(trace::ConditionWakeHow::TimedOut)),
                                                  ev(28, 0, EventKind::ConditionWait, 6, 0xC0),
                                                  ev(30, 0, EventKind::ConditionWake, 5, 0xC0, 0, wake(trace::ConditionWakeHow::Broadcast)),
                                              });
    t.header.version = 6;
    const auto s15 = at(t, 15);
    REQUIRE(s15.conditions.size() == 2);
    CHECK(s15.conditions[0].condition == 0xC0);
    CHECK(s15.conditions[0].waiters == U{4, 5});
    CHECK(s15.conditions[1].waiters == U{9});
    const auto s25 = at(t, 25);
    REQUIRE(s25.conditions.size() == 1);
    CHECK(s25.conditions[0].waiters == U{5});
    CHECK(at(t, 29).conditions[0].waiters == U{5, 6});
    CHECK(at(t, 30).conditions.empty()); // the broadcast woke both
    // Since version 7 each fiber a broadcast wakes has its record: one alone
    // wakes its fiber only.
    t.header.version = 7;
    CHECK(at(t, 30).conditions[0].waiters == U{6});
    std::vector<trace::Event> both;
    for (std::size_t k = 0; k < t.events.size(); ++k) both.push_back(t.events[k]);
    both.push_back(ev(30, 0, EventKind::ConditionWake, 6, 0xC0, 0, wake(trace::ConditionWakeHow::Broadcast)));
    trace::Trace t7 = test::makeTrace(1, both);
    t7.header.version = 7;
    CHECK(at(t7, 30).conditions.empty());
}

TEST_CASE("object state: a semaphore and an rwlock appear as themselves, their mutex and conditions as their parts", "[analysis][objects]") {
    using trace::RwLockOp;
    using trace::SemaphoreOp;
    const auto sop = [](SemaphoreOp o) { return static_cast<std::uint8_t>(o); };
    const auto rop = [](RwLockOp o) { return static_cast<std::uint8_t>(o); };
    constexpr std::uint64_t kSem = 0x500, kSemMutex = 0x508, kSemCond = 0x510;
    constexpr std::uint64_t kLock = 0x600, kLockMutex = 0x608, kReaders = 0x610;
    const trace::Trace t = test::makeTrace(1, {
        // Fiber 2 finds no permit and sleeps on the semaphore's condition;
        // fiber 3 contends for its mutex while 2 releases it in its wait.
        ev(10, 0, EventKind::SemaphoreOp, kSem, 2, 0, sop(SemaphoreOp::Blocked)),
        ev(11, 0, EventKind::MutexContended, 3, kSemMutex),
        ev(12, 0, EventKind::ConditionWait, 2, kSemCond),
        ev(13, 0, EventKind::MutexHandoff, 2, 3, kSemMutex),
        ev(14, 0, EventKind::SemaphoreOp, kSem, 3, 1, sop(SemaphoreOp::Post)),
        ev(15, 0, EventKind::ConditionWake, 2, kSemCond, 0, wake(trace::ConditionWakeHow::Signal)),
        ev(16, 0, EventKind::SemaphoreOp, kSem, 2, 0, sop(SemaphoreOp::Take)),
        // Fiber 4 writes; 5 waits to read, on the rwlock's readers condition.
        ev(20, 0, EventKind::RwLockOp, kLock, 4, 0, rop(RwLockOp::WriteLocked)),
        ev(21, 0, EventKind::RwLockOp, kLock, 5, 0, rop(RwLockOp::ReadBlocked)),
        ev(22, 0, EventKind::ConditionWait, 5, kReaders),
        ev(23, 0, EventKind::MutexContended, 5, kLockMutex),
        ev(24, 0, EventKind::MutexHandoff, 4, 5, kLockMutex),
        ev(30, 0, EventKind::RwLockOp, kLock, 4, 0, rop(RwLockOp::WriteUnlock)),
        ev(31, 0, EventKind::ConditionWake, 5, kReaders, 0, wake(trace::ConditionWakeHow::Broadcast)),
        ev(32, 0, EventKind::RwLockOp, kLock, 5, 0, rop(RwLockOp::ReadLocked)),
        ev(40, 0, EventKind::RwLockOp, kLock, 5, 0, rop(RwLockOp::ReadUnlock)),
        // An unrelated mutex stays a mutex.
        ev(50, 0, EventKind::MutexContended, 6, 0x700),
        // Fiber 7 waits for an event fiber 8 sets.
        ev(60, 0, EventKind::EventOp, 0x800, 7, 0, static_cast<std::uint8_t>(trace::EventOp::Blocked)),
        ev(61, 0, EventKind::ConditionWait, 7, 0x810),
        ev(62, 0, EventKind::EventOp, 0x800, 8, 0, static_cast<std::uint8_t>(trace::EventOp::Set)),
        ev(63, 0, EventKind::ConditionWake, 7, 0x810, 0, wake(trace::ConditionWakeHow::Broadcast)),
        ev(64, 0, EventKind::EventOp, 0x800, 7, 0, static_cast<std::uint8_t>(trace::EventOp::Returned)),
        ev(70, 0, EventKind::EventOp, 0x800, 8, 0, static_cast<std::uint8_t>(trace::EventOp::Reset)),
    });
    const auto s12 = at(t, 12);
    REQUIRE(s12.semaphores.size() == 1);
    CHECK(s12.semaphores[0].semaphore == kSem);
    CHECK(s12.semaphores[0].waiters == U{2});
    CHECK(s12.conditions.empty()); // its condition is the semaphore's
    const auto s13 = at(t, 13);
    CHECK(s13.mutexes.empty()); // and so is its mutex, once a fiber inside it named it
    CHECK(at(t, 14).semaphores[0].posted == 1);
    CHECK(at(t, 14).semaphores[0].taken == 0);
    CHECK(at(t, 16).semaphores[0].waiters.empty());
    CHECK(at(t, 16).semaphores[0].taken == 1);
    const auto s22 = at(t, 22);
    REQUIRE(s22.rwlocks.size() == 1);
    CHECK(s22.rwlocks[0].writer == 4);
    CHECK(s22.rwlocks[0].writer_since == 20);
    CHECK(s22.rwlocks[0].waiting_readers == U{5});
    CHECK(s22.rwlocks[0].waiting_writers.empty());
    CHECK(s22.conditions.empty());
    const auto s32 = at(t, 32);
    CHECK(s32.rwlocks[0].writer == 0);
    CHECK(s32.rwlocks[0].readers == U{5});
    CHECK(s32.rwlocks[0].waiting_readers.empty());
    CHECK(at(t, 40).rwlocks[0].readers.empty());
    const auto s50 = at(t, 50);
    REQUIRE(s50.mutexes.size() == 1);
    CHECK(s50.mutexes[0].mutex == 0x700);
    CHECK(s50.events.empty());
    const auto s61 = at(t, 61);
    REQUIRE(s61.events.size() == 1);
    CHECK(s61.events[0].set == 0);
    CHECK(s61.events[0].waiters == U{7});
    CHECK(s61.conditions.empty());
    CHECK(at(t, 62).events[0].set == 1);
    CHECK(at(t, 64).events[0].waiters.empty());
    CHECK(at(t, 70).events[0].set == 0);
}

TEST_CASE("object state: a queue's depth and its blocked producers and consumers", "[analysis][objects]") {
    using trace::QueueOp;
    const trace::Trace t = test::makeTrace(1, {
                                                  ev(5, 0, EventKind::QueueOp, 0xB0, 8, 0, qop(QueueOp::GetBlocked)),
                                                  ev(10, 0, EventKind::QueueOp, 0xB0, 7, 0, qop(QueueOp::Put)),
                                                  ev(11, 0, EventKind::QueueOp, 0xB0, 8, 0, qop(QueueOp::Get)),
                                                  ev(12, 0, EventKind::QueueOp, 0xB0, 7, 0, qop(QueueOp::Put)),
                                                  ev(13, 0, EventKind::QueueOp, 0xB0, 7, 0, qop(QueueOp::Put)),
                                                  ev(14, 0, EventKind::QueueOp, 0xB0, 7, 0, qop(QueueOp::PutBlocked)),
                                                  ev(15, 0, EventKind::ConditionWait, 7, 0xD0), // its not-full condition
                                                  ev(16, 0, EventKind::ConditionWake, 7, 0xD0, 0, wake(trace::ConditionWakeHow::Signal)),
                                                  ev(17, 0, EventKind::ConditionWait, 7, 0xD0), // still full: waits again
                                                  ev(19, 0, EventKind::ConditionWake, 7, 0xD0, 0, wake(trace::ConditionWakeHow::Broadcast)),
                                                  ev(20, 0, EventKind::QueueOp, 0xB0, 8, 0, qop(QueueOp::Get)),
                                                  ev(21, 0, EventKind::QueueOp, 0xB0, 7, 0, qop(QueueOp::Put)),
                                                  ev(30, 0, EventKind::QueueOp, 0xB0, 1, 0, qop(QueueOp::Close)),
                                              });
    CHECK(queueOf(at(t, 6), 0xB0)->depth == 0);
    CHECK(queueOf(at(t, 6), 0xB0)->consumers == U{8});
    CHECK(queueOf(at(t, 11), 0xB0)->consumers.empty());
    const auto s15 = at(t, 15);
    CHECK(queueOf(s15, 0xB0)->depth == 2);
    CHECK(queueOf(s15, 0xB0)->producers == U{7});
    CHECK(queueOf(at(t, 16), 0xB0)->producers.empty()); // signaled: it retries
    CHECK(queueOf(at(t, 16), 0xB0)->woken == U{7});
    CHECK(queueOf(at(t, 17), 0xB0)->producers == U{7}); // blocked again
    CHECK(queueOf(at(t, 17), 0xB0)->woken.empty());
    CHECK(queueOf(at(t, 20), 0xB0)->depth == 1);
    CHECK(queueOf(at(t, 20), 0xB0)->producers.empty());
    CHECK(queueOf(at(t, 20), 0xB0)->woken == U{7}); // by the broadcast, not yet put
    CHECK(queueOf(at(t, 25), 0xB0)->depth == 2);
    CHECK(queueOf(at(t, 25), 0xB0)->producers.empty());
    CHECK(queueOf(at(t, 25), 0xB0)->woken.empty());
    CHECK_FALSE(queueOf(at(t, 25), 0xB0)->closed);
    CHECK(queueOf(at(t, 31), 0xB0)->closed);
}

// Lesson 3's golden trace: worker 0 handed work to worker 1 before worker 1
// had started (that MSG_RING bounced), and again just after; worker 1
// received the second 12 ms later, and worker 0 read the bounce after that.
// First come, first answered would pair the receipt with the first send (a
// false arrow) and leave the second pending; the target's thread-start says
// which was which (wakeup_pairing.hpp).
TEST_CASE("wake-ups: a send before its target started is the one that bounced, though its bounce is read last",
          "[analysis][objects][flows]") {
    const trace::Trace t = test::makeTrace(2, {
                                                  ev(0, 0, EventKind::ThreadStart, 0, 0),
                                                  ev(10, 0, EventKind::WakeupSent, 1),
                                                  ev(20, 1, EventKind::ThreadStart, 1, 0),
                                                  ev(30, 0, EventKind::WakeupSent, 1),
                                                  ev(40, 1, EventKind::WakeupReceived, 0),
                                                  ev(50, 0, EventKind::WakeupBounced, 1, static_cast<std::uint64_t>(-77)),
                                              });
    const auto s45 = at(t, 45);
    REQUIRE(s45.wakeups.size() == 1);
    CHECK(s45.wakeups[0].sent == 10); // the one still on its way back
    CHECK(at(t, 55).wakeups.empty());
    const analysis::Timeline tl = analysis::buildTimeline(t);
    std::vector<analysis::Flow> wakes;
    for (const analysis::Flow& f : analysis::flowsOf(tl))
        if (f.kind == analysis::FlowKind::Wakeup) wakes.push_back(f);
    REQUIRE(wakes.size() == 1);
    CHECK(wakes[0].from.time == 30);
    CHECK(wakes[0].to.time == 40);
    CHECK(wakes[0].to.thread == 1);
}

TEST_CASE("object state: pending wake-ups and cancels", "[analysis][objects]") {
    const trace::Trace t = test::makeTrace(2, {
                                                  ev(0, 0, EventKind::ThreadStart, 0, 0),
                                                  ev(1, 1, EventKind::ThreadStart, 1, 0),
                                                  ev(10, 0, EventKind::WakeupSent, 1),
                                                  ev(12, 0, EventKind::CancelRequest, 2, 0),
                                                  ev(14, 1, EventKind::WakeupReceived, 0),
                                                  ev(16, 0, EventKind::CancelRequest, 3, 0),
                                                  ev(20, 0, EventKind::CancelDelivered, 2),
                                                  ev(24, 0, EventKind::FiberFinish, 3),
                                              });
    const auto s13 = at(t, 13);
    REQUIRE(s13.wakeups.size() == 1);
    CHECK(s13.wakeups[0].thread == 0);
    CHECK(s13.wakeups[0].target == 1);
    CHECK(s13.wakeups[0].sent == 10);
    REQUIRE(s13.cancels.size() == 1);
    CHECK(s13.cancels[0].fiber == 2);
    CHECK(s13.cancels[0].requested == 12);
    CHECK(at(t, 14).wakeups.empty());
    const auto s18 = at(t, 18);
    REQUIRE(s18.cancels.size() == 2);
    CHECK(s18.cancels[1].fiber == 3);
    REQUIRE(at(t, 22).cancels.size() == 1); // 2's was delivered
    CHECK(at(t, 25).cancels.empty());       // 3 finished first
}

TEST_CASE("object state: a timer's deadline is its -ETIME completion; a canceled or unfinished one has none", "[analysis][objects]") {
    const std::uint8_t timeout = trace::kOpTimeout;
    const trace::Trace t = test::makeTrace(1, {
                                                  ev(10, 0, EventKind::Submit, 2, u(-1), 0, timeout),
                                                  ev(11, 0, EventKind::Submit, 3, u(-1), 0, timeout),
                                                  ev(12, 0, EventKind::Submit, 4, u(5), 0, 22), // a read: no timer
                                                  ev(30, 0, EventKind::Complete, 3, u(-ECANCELED), 0, timeout),
                                                  ev(40, 0, EventKind::Submit, 5, u(-1), 0, timeout),
                                                  ev(50, 0, EventKind::Complete, 2, u(-ETIME), 0, timeout),
                                                  ev(60, 0, EventKind::Submit, 2, u(-1), 0, timeout),
                                                  ev(75, 0, EventKind::Complete, 2, u(-ETIME), 0, timeout),
                                              });
    const auto s20 = at(t, 20);
    REQUIRE(s20.timers.size() == 2);
    CHECK(s20.timers[0].fiber == 2);
    CHECK(s20.timers[0].since == 10);
    CHECK(s20.timers[0].fires == 50);
    CHECK(s20.timers[1].fiber == 3);
    CHECK(s20.timers[1].fires == -1); // canceled at 30
    const auto s45 = at(t, 45);
    REQUIRE(s45.timers.size() == 2);
    CHECK(s45.timers[1].fiber == 5);
    CHECK(s45.timers[1].fires == -1); // still pending at the end
    const auto s65 = at(t, 65);
    REQUIRE(s65.timers.size() == 2);
    CHECK(s65.timers[1].fiber == 2);
    CHECK(s65.timers[1].fires == 75); // its second timer, paired in order
    CHECK(at(t, 50).timers.size() == 1);
}

TEST_CASE("object state: the runs-next head of a ready stack", "[analysis][objects]") {
    const trace::Trace t = test::makeTrace(1, {
                                                  ev(5, 0, EventKind::Schedule, 3, 2, 0, 2),
                                              });
    // Two fibers queued by the one schedule: the record names 3 as the head.
    std::vector<analysis::ReadyEntry> ready{{1, 2, analysis::kNoEvent}, {4, 5, 0}, {3, 5, 0}};
    CHECK(analysis::readyHead(t, ready) == 2);
    std::swap(ready[1], ready[2]);
    CHECK(analysis::readyHead(t, ready) == 1);
    ready.resize(1);
    CHECK(analysis::readyHead(t, ready) == 0);
    CHECK(analysis::readyHead(t, {}) == analysis::kNone);
}

TEST_CASE("object state: snapshots change nothing (random records, every instant)", "[analysis][objects]") {
    std::mt19937_64 rng(14);
    for (int round = 0; round < 8; ++round) {
        std::vector<trace::Event> events;
        std::int64_t time = 0;
        const EventKind kinds[] = {EventKind::MutexContended, EventKind::MutexHandoff, EventKind::ConditionWait, EventKind::ConditionWake,
                                   EventKind::QueueOp,        EventKind::CancelRequest, EventKind::CancelDelivered, EventKind::FiberFinish,
                                   EventKind::WakeupSent,     EventKind::WakeupReceived, EventKind::Submit,       EventKind::Complete};
        for (int i = 0; i < 600; ++i) {
            time += static_cast<std::int64_t>(rng() % 3);
            const EventKind k = kinds[rng() % std::size(kinds)];
            std::uint8_t small = 0;
            if (k == EventKind::ConditionWake) small = static_cast<std::uint8_t>(rng() % 3);
            if (k == EventKind::QueueOp) small = static_cast<std::uint8_t>(rng() % 5);
            if (k == EventKind::Submit || k == EventKind::Complete) small = rng() % 2 ? trace::kOpTimeout : 22;
            const std::uint64_t a1 = k == EventKind::Complete ? (rng() % 2 ? u(-ETIME) : u(-ECANCELED)) : 0xA0 + rng() % 3;
            events.push_back(ev(time, static_cast<std::uint32_t>(rng() % 2), k, 1 + rng() % 6, a1, 0xA0 + rng() % 3, small));
        }
        const trace::Trace t = test::makeTrace(2, events);
        const analysis::Timeline tl = analysis::buildTimeline(t);
        const analysis::ObjectIndex dense = analysis::buildObjectIndex(t, tl, 3);
        const analysis::ObjectIndex plain = analysis::buildObjectIndex(t, tl, 1u << 30);
        REQUIRE(dense.snapshots.size() > 4);
        REQUIRE(plain.snapshots.size() == 1);
        for (const analysis::ObjectSnapshot& snapshot : dense.snapshots) // the size kept as it changed is the size
            CHECK(snapshot.state.size() == snapshot.state.recount());
        for (std::int64_t at = -1; at <= time + 1; ++at) {
            const auto a = analysis::objectStateAt(t, dense, at);
            const auto b = analysis::objectStateAt(t, plain, at);
            INFO("round " << round << " at " << at);
            REQUIRE(a.mutexes.size() == b.mutexes.size());
            for (std::size_t i = 0; i < a.mutexes.size(); ++i) {
                CHECK(a.mutexes[i].owner == b.mutexes[i].owner);
                CHECK(a.mutexes[i].waiters == b.mutexes[i].waiters);
            }
            REQUIRE(a.conditions.size() == b.conditions.size());
            for (std::size_t i = 0; i < a.conditions.size(); ++i) CHECK(a.conditions[i].waiters == b.conditions[i].waiters);
            REQUIRE(a.queues.size() == b.queues.size());
            for (std::size_t i = 0; i < a.queues.size(); ++i) {
                CHECK(a.queues[i].depth == b.queues[i].depth);
                CHECK(a.queues[i].producers == b.queues[i].producers);
                CHECK(a.queues[i].consumers == b.queues[i].consumers);
                CHECK(a.queues[i].woken == b.queues[i].woken);
            }
            CHECK(a.wakeups.size() == b.wakeups.size());
            CHECK(a.cancels.size() == b.cancels.size());
            REQUIRE(a.timers.size() == b.timers.size());
            for (std::size_t i = 0; i < a.timers.size(); ++i) CHECK(a.timers[i].fires == b.timers[i].fires);
        }
    }
}

TEST_CASE("object state: a waiter list keeps its joining order through moves, leaves and compactions", "[analysis][objects]") {
    // Against a plain vector (what the list replaced), over random joins
    // (a listed fiber moves to the back) and leaves, in bursts long enough
    // to compact the list many times over and to empty it.
    std::mt19937_64 rng(35);
    analysis::FiberList list;
    U model;
    for (int round = 0; round < 200; ++round) {
        const bool growing = round % 3 != 2;
        const std::uint64_t fibers = 1 + rng() % 300;
        for (int op = 0; op < 400; ++op) {
            const std::uint64_t f = rng() % fibers;
            const auto at = std::find(model.begin(), model.end(), f);
            if (growing ? rng() % 4 != 0 : rng() % 8 == 0) {
                CHECK(list.pushBack(f) == (at == model.end()));
                if (at != model.end()) model.erase(at);
                model.push_back(f);
            } else {
                CHECK(list.erase(f) == (at != model.end()));
                if (at != model.end()) model.erase(at);
            }
            CHECK(list.contains(f) == (std::find(model.begin(), model.end(), f) != model.end()));
        }
        INFO("round " << round);
        REQUIRE(list.size() == model.size());
        REQUIRE(list.fibers() == model);
        const analysis::FiberList copy = list;
        REQUIRE(copy.fibers() == model);
    }
    list.clear();
    CHECK(list.empty());
    CHECK(list.fibers().empty());
}

TEST_CASE("object state: a hover on a big trace is a binary search and a bounded replay", "[analysis][objects]") {
    // 2M records: 64 fibers contending for 8 mutexes, a queue, timers.
    std::vector<trace::Event> events;
    events.reserve(2'000'000);
    std::mt19937_64 rng(8);
    std::int64_t time = 0;
    std::vector<std::uint64_t> sleeping;
    while (events.size() < 2'000'000) {
        time += 1 + static_cast<std::int64_t>(rng() % 5);
        const std::uint64_t fiber = 2 + rng() % 64, mutex = 0xA0 + rng() % 8;
        switch (rng() % 6) {
        case 0: events.push_back(ev(time, 0, EventKind::MutexContended, fiber, mutex)); break;
        case 1: events.push_back(ev(time, 0, EventKind::MutexHandoff, 1 + rng() % 64, fiber, mutex)); break;
        case 2: events.push_back(ev(time, 0, EventKind::QueueOp, 0xB0, fiber, 0, static_cast<std::uint8_t>(rng() % 4))); break;
        case 3: // a fiber sleeps: at most one timer per fiber, as a sleep is
            if (std::find(sleeping.begin(), sleeping.end(), fiber) == sleeping.end()) {
                sleeping.push_back(fiber);
                events.push_back(ev(time, 0, EventKind::Submit, fiber, u(-1), 0, trace::kOpTimeout));
            }
            break;
        case 4:
            if (!sleeping.empty()) {
                const std::size_t k = rng() % sleeping.size();
                events.push_back(ev(time, 0, EventKind::Complete, sleeping[k], u(-ETIME), 0, trace::kOpTimeout));
                sleeping.erase(sleeping.begin() + static_cast<std::ptrdiff_t>(k));
            }
            break;
        default: events.push_back(ev(time, 0, EventKind::Switch, 1, fiber, 0, 1)); break;
        }
    }
    const trace::Trace t = test::makeTrace(1, std::move(events));
    const analysis::Timeline tl = analysis::buildTimeline(t);
    const auto t0 = std::chrono::steady_clock::now();
    const analysis::ObjectIndex index = analysis::buildObjectIndex(t, tl);
    const auto t1 = std::chrono::steady_clock::now();
    for (int i = 0; i < 200; ++i) (void)analysis::objectStateAt(t, index, static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(time)));
    const auto t2 = std::chrono::steady_clock::now();
    const double build_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const double hover_ms = std::chrono::duration<double, std::milli>(t2 - t1).count() / 200;
    WARN("buildObjectIndex of " << t.events.size() << " events: " << build_ms << " ms, " << index.snapshots.size()
                                << " snapshots; objectStateAt: " << hover_ms << " ms each");
    CHECK(hover_ms < 20); // a frame's budget, with room for a loaded machine and sanitizers
}

// ---------------------------------------------------------------------------
// Lessons 8 and 9, recorded on both backends.

namespace {

trace::Trace recordLesson(const std::string& name, const char* backend) {
    const char* dir = std::getenv("TMPDIR");
    const std::string path = std::string(dir && *dir ? dir : "/tmp") + "/fiberscope-objects-" + std::to_string(getpid()) + "-" + name +
                             (*backend ? "-" : "") + backend + ".fstrace";
    const std::string command = "FIBERSCOPE_TRACE='" + path + "' FIBERSCOPE_BACKEND=auto timeout 60 '" FIBERSCOPE_LESSON_BIN_DIR "/" + name +
                                "'" + (*backend ? std::string(" --backend ") + backend : "") + " > /dev/null 2>&1";
    INFO(command);
    REQUIRE(std::system(command.c_str()) == 0);
    trace::Trace t;
    trace::ReadError error;
    const bool read = trace::readTrace(path, t, error);
    unlink(path.c_str());
    INFO(error.text());
    REQUIRE(read);
    return t;
}

// The time of the mark labelled `label`, else -1.
std::int64_t markTime(const trace::Trace& t, const std::string& label) {
    for (const trace::Event& e : t.events)
        if (e.kind == EventKind::Mark && e.arg[0] < t.strings.size() && t.strings[e.arg[0]] == label) return e.time;
    return -1;
}

std::int64_t firstOf(const trace::Trace& t, EventKind kind, std::size_t nth = 0) {
    for (const trace::Event& e : t.events)
        if (e.kind == kind && nth-- == 0) return e.time;
    return -1;
}

} // namespace

TEST_CASE("object state on lesson 8: main holds the mutex with four tellers stacked; each hand-off pops the stack", "[analysis][objects][lessons]") {
    for (const char* backend : {"", "epoll"}) {
        INFO("backend " << (*backend ? backend : "default"));
        const trace::Trace t = recordLesson("lesson08-mutex-handoff", backend);
        const analysis::Timeline tl = analysis::buildTimeline(t);
        const analysis::ObjectIndex index = analysis::buildObjectIndex(t, tl);
        const std::int64_t unlocks = markTime(t, "checkpoint: main unlocks");
        REQUIRE(unlocks >= 0);
        const auto before = analysis::objectStateAt(t, index, unlocks);
        REQUIRE(before.mutexes.size() == 1);
        const analysis::MutexState& m = before.mutexes[0];
        CHECK(m.owner == 1);              // main locked it first (no record) and holds it
        CHECK(m.waiters == U{5, 4, 3, 2}); // teller 3 (fiber 5) arrived last and gets it next
        const std::int64_t first = firstOf(t, EventKind::MutexHandoff);
        const auto after = analysis::objectStateAt(t, index, first);
        CHECK(after.mutexes[0].owner == 5);
        CHECK(after.mutexes[0].owner_since == first);
        CHECK(after.mutexes[0].waiters == U{4, 3, 2});
        const auto second = analysis::objectStateAt(t, index, firstOf(t, EventKind::MutexHandoff, 1));
        CHECK(second.mutexes[0].owner == 4); // teller 2, the next on the stack
        const U& rest = second.mutexes[0].waiters;
        CHECK(std::find(rest.begin(), rest.end(), 4) == rest.end());
        CHECK(std::find(rest.begin(), rest.end(), 3) != rest.end());
        CHECK(std::find(rest.begin(), rest.end(), 2) != rest.end());
        const std::int64_t done = markTime(t, "checkpoint: tellers done");
        REQUIRE(done >= 0);
        CHECK(analysis::objectStateAt(t, index, done).mutexes[0].waiters.empty());
        // Its one-millisecond sleeps are timers that fired: each has its deadline.
        const std::int64_t start = markTime(t, "checkpoint: tellers start");
        bool timer_seen = false;
        for (const trace::Event& e : t.events)
            if (e.kind == EventKind::Submit && e.small == trace::kOpTimeout && e.time > start && e.time < unlocks) {
                for (const auto& timer : analysis::objectStateAt(t, index, e.time).timers)
                    if (timer.since == e.time) {
                        timer_seen = true;
                        CHECK(timer.fires > e.time);
                    }
            }
        CHECK(timer_seen);
    }
}

TEST_CASE("object state on lesson 9: two consumers wait at the gate; the queue never holds more than its capacity", "[analysis][objects][lessons]") {
    for (const char* backend : {"", "epoll"}) {
        INFO("backend " << (*backend ? backend : "default"));
        const trace::Trace t = recordLesson("lesson09-producer-consumer", backend);
        const analysis::Timeline tl = analysis::buildTimeline(t);
        const analysis::ObjectIndex index = analysis::buildObjectIndex(t, tl);
        const std::int64_t gate = markTime(t, "checkpoint: gate opens");
        REQUIRE(gate >= 0);
        const auto at_gate = analysis::objectStateAt(t, index, gate);
        std::size_t waiting = 0;
        for (const auto& c : at_gate.conditions) waiting += c.waiters.size();
        CHECK(waiting == 2); // kConsumers, both at the gate
        // Every instant a queue record is at: depth within [0, kCapacity]; the
        // producer is seen blocked on a full queue.
        std::int64_t max_depth = 0;
        bool producer_blocked_when_full = false;
        for (const trace::Event& e : t.events) {
            if (e.kind != EventKind::QueueOp) continue;
            const auto s = analysis::objectStateAt(t, index, e.time);
            REQUIRE(s.queues.size() == 1);
            max_depth = std::max(max_depth, s.queues[0].depth);
            if (!s.queues[0].producers.empty() && s.queues[0].depth == 4) producer_blocked_when_full = true;
        }
        CHECK(max_depth == 4);
        CHECK(producer_blocked_when_full);
        const std::int64_t closed = markTime(t, "checkpoint: queue closed");
        REQUIRE(closed >= 0);
        // Drained: both consumers blocked on the empty queue, until close() lets them go.
        const auto drained = analysis::objectStateAt(t, index, closed);
        CHECK(drained.queues[0].depth == 0);
        CHECK(drained.queues[0].consumers.size() == 2);
        CHECK_FALSE(drained.queues[0].closed);
        std::int64_t close_time = -1;
        for (const trace::Event& e : t.events)
            if (e.kind == EventKind::QueueOp && e.small == static_cast<std::uint8_t>(trace::QueueOp::Close)) close_time = e.time;
        REQUIRE(close_time >= closed);
        const auto end = analysis::objectStateAt(t, index, close_time);
        CHECK(end.queues[0].closed);
        CHECK(end.queues[0].consumers.empty());
        CHECK(end.queues[0].producers.empty());
    }
}
