// Crafted traces, each a pattern a hostile (or merely unusual) file can
// repeat N times: N operations in flight on one fiber, N fibers ready between
// two parks, N waiters on one condition, N threads, N nested zones, N fibers
// blocked on one Queue... Every
// tool must load each in time and memory linear in N (test_scaling.cpp), and
// survive each whatever N is (test_corpus.cpp, the fuzzer's seeds).
#pragma once

#include <cerrno>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "../../tracer/include/fiberscope/trace_reader.hpp"
#include "../../tracer/include/fiberscope/trace_vocabulary.hpp"
#include "../support/trace_builder.hpp"

namespace fiberscope::testing {

// Writes records of one chunk with fiber fields given as absolute ids (the
// builder takes the raw zigzag deltas the format stores).
class ChunkWriter {
public:
    ChunkWriter(TraceBuilder& b, std::uint32_t thread) : b_(b) { b_.chunk(thread); }
    std::uint64_t f(std::uint64_t fiber) {
        const std::uint64_t raw = TraceBuilder::zigzag(static_cast<std::int64_t>(fiber - prev_));
        prev_ = fiber;
        return raw;
    }
    ChunkWriter& rec(trace::EventKind kind, std::initializer_list<std::uint64_t> fields, std::uint64_t delta = 1) {
        b_.record(kind, delta, fields);
        return *this;
    }

private:
    TraceBuilder& b_;
    std::uint64_t prev_ = 0;
};

struct HostilePattern {
    const char* name;
    std::function<std::vector<std::uint8_t>(std::size_t n)> make;
    // The smaller size test_scaling.cpp times the viewer's load at, against
    // 8x it: large enough for a quadratic step to dominate, small enough
    // that one fails in seconds rather than hangs (for a pattern whose
    // quadratic step is a slow one).
    std::size_t viewer_n = 3000;
};

// Many fibers waiting at once, on each kind of object the state panel shows
// (a mutex, a condition, a Queue's producers and consumers, timers), as a
// program makes them, then released; and the shapes that once made the
// object replay (analysis/object_state.cpp) quadratic. Issue 35: 100,000
// fibers blocked on one Queue took minutes to open in the viewer, though
// every tool read them in a second.
inline std::vector<HostilePattern> waiterPatterns() {
    using K = trace::EventKind;
    using B = TraceBuilder;
    constexpr std::uint64_t kMutex = 0x5000, kCondition = 0x6000, kQueue = 0x7000, kNotEmpty = 0x7010, kNotFull = 0x7020;
    constexpr std::uint64_t kTimeout = trace::kOpTimeout;
    // The main fiber (1) runs on worker 0.
    auto start = [](ChunkWriter& w) {
        w.rec(K::ThreadStart, {0, 0});
        w.rec(K::Switch, {w.f(0), w.f(1), 9});
    };
    // Main spawns `fiber` and switches to it; `block` writes what it waits
    // on; it switches back for `reason` (kSwitchReasonNames).
    auto spawnAndBlock = [](ChunkWriter& w, std::uint64_t fiber, std::uint64_t reason, auto&& block) {
        w.rec(K::FiberCreate, {w.f(fiber), w.f(1), 0});
        w.rec(K::Switch, {w.f(1), w.f(fiber), 1});
        block();
        w.rec(K::Switch, {w.f(fiber), w.f(1), reason});
    };
    // `fiber` runs again, finishes, and main runs.
    auto finish = [](ChunkWriter& w, std::uint64_t fiber) {
        w.rec(K::Switch, {w.f(1), w.f(fiber), 1});
        w.rec(K::FiberFinish, {w.f(fiber)});
        w.rec(K::Switch, {w.f(fiber), w.f(1), 7});
    };
    return {
        {"N fibers blocked on one mutex, handed it in turn",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w);
             for (std::size_t i = 0; i < n; ++i)
                 spawnAndBlock(w, 2 + i, 5, [&] { w.rec(K::MutexContended, {w.f(2 + i), kMutex}); });
             std::uint64_t holder = 1;
             for (std::size_t i = n; i-- > 0;) { // a stack: the newest waiter first
                 w.rec(K::MutexHandoff, {w.f(holder), w.f(2 + i), kMutex});
                 finish(w, 2 + i);
                 holder = 2 + i;
             }
             return b.bytes();
         }},
        {"N fibers waiting on one condition, signalled oldest first, every other one timing out",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w);
             for (std::size_t i = 0; i < n; ++i)
                 spawnAndBlock(w, 2 + i, 6, [&] { w.rec(K::ConditionWait, {w.f(2 + i), kCondition}); });
             for (std::size_t i = 0; i < n; ++i) {
                 w.rec(K::ConditionWake, {w.f(2 + i), kCondition, i % 2 ? 2u : 0u});
                 finish(w, 2 + i);
             }
             return b.bytes();
         }},
        {"N consumers blocked on one Queue, then closed",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w);
             for (std::size_t i = 0; i < n; ++i)
                 spawnAndBlock(w, 2 + i, 6, [&] {
                     w.rec(K::QueueOp, {3, kQueue, w.f(2 + i)});
                     w.rec(K::ConditionWait, {w.f(2 + i), kNotEmpty});
                 });
             w.rec(K::QueueOp, {4, kQueue, w.f(1)});
             if (n) w.rec(K::ConditionWake, {w.f(2), kNotEmpty, 1}); // a broadcast names the head
             for (std::size_t i = 0; i < n; ++i) finish(w, 2 + i);
             return b.bytes();
         }},
        {"N producers blocked on a full Queue, let in one by one",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w);
             for (std::size_t i = 0; i < n; ++i)
                 spawnAndBlock(w, 2 + i, 6, [&] {
                     w.rec(K::QueueOp, {2, kQueue, w.f(2 + i)});
                     w.rec(K::ConditionWait, {w.f(2 + i), kNotFull});
                 });
             for (std::size_t i = 0; i < n; ++i) {
                 w.rec(K::QueueOp, {1, kQueue, w.f(1)});
                 w.rec(K::ConditionWake, {w.f(2 + i), kNotFull, 0});
                 w.rec(K::Switch, {w.f(1), w.f(2 + i), 1});
                 w.rec(K::QueueOp, {0, kQueue, w.f(2 + i)});
                 w.rec(K::FiberFinish, {w.f(2 + i)});
                 w.rec(K::Switch, {w.f(2 + i), w.f(1), 7});
             }
             return b.bytes();
         }},
        {"N fibers sleeping on timers, firing newest first",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w);
             for (std::size_t i = 0; i < n; ++i)
                 spawnAndBlock(w, 2 + i, 4, [&] { w.rec(K::Submit, {w.f(2 + i), kTimeout, B::zigzag(-1)}); });
             for (std::size_t i = n; i-- > 0;) {
                 w.rec(K::Complete, {w.f(2 + i), kTimeout, B::zigzag(-ETIME)}); // it fired
                 finish(w, 2 + i);
             }
             return b.bytes();
         }},
        {"N fibers each blocked on a mutex of its own, canceled",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w);
             for (std::size_t i = 0; i < n; ++i)
                 spawnAndBlock(w, 2 + i, 5, [&] { w.rec(K::MutexContended, {w.f(2 + i), kMutex + 16 * i}); });
             for (std::size_t i = 0; i < n; ++i) w.rec(K::CancelRequest, {w.f(2 + i), 0});
             for (std::size_t i = 0; i < n; ++i) {
                 w.rec(K::Switch, {w.f(1), w.f(2 + i), 1});
                 w.rec(K::CancelDelivered, {w.f(2 + i)});
                 w.rec(K::FiberFinish, {w.f(2 + i)});
                 w.rec(K::Switch, {w.f(2 + i), w.f(1), 7});
             }
             return b.bytes();
         },
         500},
        {"one fiber blocked in N queues, then waiting and woken N times",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::QueueOp, {3, kQueue + 16 * i, w.f(1)});
             for (std::size_t i = 0; i < n; ++i) {
                 w.rec(K::ConditionWait, {w.f(1), kNotEmpty});
                 w.rec(K::ConditionWake, {w.f(1), kNotEmpty, 0});
             }
             return b.bytes();
         },
         500},
        {"N timers in flight on one fiber",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::Submit, {w.f(1), kTimeout, B::zigzag(-1)});
             for (std::size_t i = 0; i < n; ++i) w.rec(K::Complete, {w.f(1), kTimeout, B::zigzag(-ETIME)});
             return b.bytes();
         }},
        {"N wake-ups sent to N workers, none received",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::WakeupSent, {1 + i % 65536});
             return b.bytes();
         }},
    };
}

inline std::vector<HostilePattern> hostilePatterns() {
    using K = trace::EventKind;
    auto start = [](ChunkWriter& w, std::uint64_t worker) {
        w.rec(K::ThreadStart, {worker, 0});
        w.rec(K::Switch, {w.f(0), w.f(1), 9});
    };
    std::vector<HostilePattern> patterns = {
        {"N operations in flight on one fiber, completed with another opcode",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w, 0);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::Submit, {w.f(1), 22, TraceBuilder::zigzag(5)});
             for (std::size_t i = 0; i < n; ++i) w.rec(K::Complete, {w.f(1), 23, TraceBuilder::zigzag(0)});
             return b.bytes();
         }},
        {"N fibers ready between parks, scheduled newest first",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w, 0);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::FiberCreate, {w.f(2 + i), w.f(1), 0});
             for (std::size_t i = 0; i < n; ++i) w.rec(K::Complete, {w.f(2 + i), 22, TraceBuilder::zigzag(0)});
             for (std::size_t i = n; i-- > 0;) w.rec(K::Schedule, {w.f(2 + i), 1, 0, 2});
             for (std::size_t i = 0; i < n; ++i) w.rec(K::Schedule, {w.f(900000 + i), 3, 0, 2}); // never ready
             return b.bytes();
         }},
        {"N waiters on one condition, woken newest first",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w, 0);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::ConditionWait, {w.f(2 + i), 77});
             for (std::size_t i = n; i-- > 0;) w.rec(K::ConditionWake, {w.f(2 + i), 77, 0});
             return b.bytes();
         }},
        {"N awaiters of one fiber",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w, 0);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::Await, {w.f(3 + i), w.f(2)});
             w.rec(K::FiberFinish, {w.f(2)});
             return b.bytes();
         }},
        {"N nested zones on one fiber",
         [=](std::size_t n) {
             TraceBuilder b;
             b.chunk(0).string(1, "zone");
             ChunkWriter w(b, 0);
             start(w, 0);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::ZoneBegin, {1});
             for (std::size_t i = 0; i < n; ++i) w.rec(K::ZoneEnd, {});
             return b.bytes();
         }},
        {"N marks at one instant",
         [=](std::size_t n) {
             TraceBuilder b;
             b.chunk(0).string(1, "mark");
             ChunkWriter w(b, 0);
             start(w, 0);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::Mark, {1}, 0);
             return b.bytes();
         }},
        {"N wake-ups sent before any is received",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w, 0);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::WakeupSent, {1});
             ChunkWriter r(b, 1);
             r.rec(K::ThreadStart, {1, 0}, std::uint64_t{n} + 10);
             for (std::size_t i = 0; i < n; ++i) r.rec(K::WakeupReceived, {0});
             return b.bytes();
         }},
        {"N steals back and forth",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w, 0);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::Schedule, {w.f(2 + i), 1, 0, 2});
             ChunkWriter t(b, 1);
             t.rec(K::ThreadStart, {1, 0});
             for (std::size_t i = 0; i < n; ++i) t.rec(K::Steal, {t.f(2 + i), 0});
             return b.bytes();
         }},
        {"N mutex waiters handed off in turn",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w, 0);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::MutexContended, {w.f(2 + i), 55});
             for (std::size_t i = 0; i < n; ++i) w.rec(K::MutexHandoff, {w.f(1 + i), w.f(2 + i), 55});
             return b.bytes();
         }},
        {"N queue operations and group spawns",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w, 0);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::QueueOp, {2, 66, w.f(2 + i)});
             for (std::size_t i = 0; i < n; ++i) w.rec(K::GroupOp, {0, 44, w.f(2 + i)});
             return b.bytes();
         }},
        {"N fibers with huge, sparse ids switched in and out",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w, 0);
             for (std::size_t i = 0; i < n; ++i) {
                 const std::uint64_t id = (std::uint64_t{1} << 62) + i * 1'000'003;
                 w.rec(K::FiberCreate, {w.f(id), w.f(1), 0});
                 w.rec(K::Switch, {w.f(1), w.f(id), 0});
                 w.rec(K::Switch, {w.f(id), w.f(1), 1});
             }
             return b.bytes();
         }},
        {"N threads of one record each",
         [=](std::size_t n) {
             TraceBuilder b;
             for (std::size_t i = 0; i < std::min<std::size_t>(n, 65536); ++i) {
                 ChunkWriter w(b, static_cast<std::uint32_t>(i));
                 w.rec(K::ThreadStart, {i % 65536, 0}, i);
                 w.rec(K::Switch, {w.f(0), w.f(1), 9});
             }
             return b.bytes();
         }},
        {"N chunks of one thread, a record each",
         [=](std::size_t n) {
             TraceBuilder b;
             {
                 ChunkWriter w(b, 0);
                 start(w, 0);
             }
             for (std::size_t i = 0; i < n; ++i) {
                 b.chunk(0, 10 + i);
                 b.record(K::Mark, 0, {0});
             }
             return b.bytes();
         }},
        {"N cancel requests for one fiber",
         [=](std::size_t n) {
             TraceBuilder b;
             ChunkWriter w(b, 0);
             start(w, 0);
             for (std::size_t i = 0; i < n; ++i) w.rec(K::CancelRequest, {w.f(2), 1});
             for (std::size_t i = 0; i < n; ++i) w.rec(K::CancelDelivered, {w.f(2)});
             return b.bytes();
         }},
    };
    for (HostilePattern& pattern : waiterPatterns()) patterns.push_back(std::move(pattern));
    return patterns;
}

// Calls f(trace, pattern name) for each pattern made `sizes` times over that
// the reader accepts (a pattern may be refused by design at some size).
template <class F>
void forEachHostileTrace(std::initializer_list<std::size_t> sizes, F&& f) {
    for (const auto& pattern : hostilePatterns())
        for (std::size_t n : sizes) {
            const std::vector<std::uint8_t> bytes = pattern.make(n);
            trace::Trace trace;
            trace::ReadError error;
            if (trace::parseTrace(bytes, trace, error)) f(trace, pattern.name);
        }
}

} // namespace fiberscope::testing
