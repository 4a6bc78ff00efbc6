// Crafted traces, each a pattern a hostile (or merely unusual) file can
// repeat N times: N operations in flight on one fiber, N fibers ready between
// two parks, N waiters on one condition, N threads, N nested zones... Every
// tool must load each in time and memory linear in N (test_scaling.cpp), and
// survive each whatever N is (test_corpus.cpp, the fuzzer's seeds).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "../../tracer/include/fiberscope/trace_reader.hpp"
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
};

inline std::vector<HostilePattern> hostilePatterns() {
    using K = trace::EventKind;
    auto start = [](ChunkWriter& w, std::uint64_t worker) {
        w.rec(K::ThreadStart, {worker, 0});
        w.rec(K::Switch, {w.f(0), w.f(1), 9});
    };
    return {
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
