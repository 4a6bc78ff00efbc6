// Lanes: the rows of intervals the timeline draws (one per thread, one per
// fiber), and what is precomputed on them once so frames stay cheap.
//
// Design: a lane is a sorted vector of non-overlapping intervals, plus
//   * levels of detail (lod.hpp): for granularities g = 1, 8, 64, ... ns,
//     the runs of consecutive intervals whose starts fall in the same g-ns
//     bucket, merged into one Block. Only runs of two or more intervals are
//     stored (an interval alone in its bucket is read from `intervals`), and a
//     level whose runs equal the previous level's is not stored at all, so the
//     memory stays near the size of the lane itself;
//   * per-state time prefix sums every kPrefixStride intervals, so the time a
//     lane spent in each state over any range costs O(log n + stride).
// Plain structs; the functions that fill and query them live in lod.hpp (and
// the viewer's range statistics, viewer/src/model/range_stats.hpp, read the
// prefix sums).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fiberscope::analysis {

// What a lane is doing during an interval. Thread lanes use Running (a fiber
// runs), Idle (the idle loop runs: looking for work, not in the kernel) and
// Parked (waiting in io_uring_enter). Fiber lanes use Ready (runnable, not
// running), Running (on `Interval::thread`), Waiting (see WaitReason) and
// Finished (from the moment its function returned to the end of the trace).
enum class State : std::uint8_t { Running, Idle, Parked, Ready, Waiting, Finished };
inline constexpr int kStateCount = 6;

// Why a fiber waits (State::Waiting only; None otherwise).
enum class WaitReason : std::uint8_t {
    None,
    Io,        // a ring operation (read, write, accept, ...)
    Timer,     // IORING_OP_TIMEOUT (sleep, deadlines)
    Mutex,     // Mutex::lock found it locked
    Condition, // Condition::wait
    Await,     // Future::await of another fiber
    Select,    // waiting for the first of several fibers
    Exit,      // the main fiber waiting for the loop to shut down
};

inline constexpr std::uint32_t kNoEvent = UINT32_MAX; // "no event" index
inline constexpr std::size_t kNone = SIZE_MAX;        // "nothing found" index

struct Interval {
    std::int64_t start = 0; // ns since the recording started
    std::int64_t end = 0;   // exclusive; end >= start (zero-length intervals exist)
    std::uint64_t fiber = 0; // thread lane: the fiber running (0: none); fiber lane: the fiber itself
    std::uint32_t cause = kNoEvent; // index in Trace::events of the event that began the interval
    std::int32_t thread = -1;       // trace thread number: the lane's thread (thread lanes), the thread
                                    // running it / whose ready queue holds it / it waited on (fiber lanes)
    State state = State::Idle;
    WaitReason reason = WaitReason::None;

    std::int64_t duration() const noexcept { return end - start; }
};

// A run of consecutive intervals drawn as one: what visibleBlocks returns, and
// what the levels of detail store. A block of one interval has count 1.
struct Block {
    std::int64_t start = 0;       // the first member's start
    std::int64_t end = 0;         // the last member's end
    std::int64_t busy = 0;        // sum of the members' durations
    std::int64_t dominant_ns = 0; // (approximate) time of the dominant fiber/state among the members
    std::uint64_t fiber = 0;      // the dominant member's fiber
    std::uint32_t first = 0;      // index of the first member in Lane::intervals
    std::uint32_t count = 0;      // number of member intervals
    std::int32_t thread = -1;     // the dominant member's thread
    State state = State::Idle;    // the dominant member's state
    WaitReason reason = WaitReason::None;
};

struct LodLevel {
    std::int64_t granularity = 1; // ns: members' starts share floor(start / granularity)
    std::vector<Block> runs;      // the runs of >= 2 intervals, by `first`
};

inline constexpr std::size_t kPrefixStride = 64;

struct Lane {
    std::vector<Interval> intervals;  // sorted by start, non-overlapping
    std::vector<LodLevel> levels;     // by granularity; empty for short lanes
    // prefix[k][s]: time intervals [0, k * kPrefixStride) spent in state s
    // (only for lanes longer than kPrefixStride).
    std::vector<std::array<std::int64_t, kStateCount>> prefix;
};

const char* stateName(State state) noexcept;
const char* waitReasonName(WaitReason reason) noexcept;

// The interval the lane is in at `time`: the last one starting at or before
// it, if `time` is before its end (or it is the lane's last interval and
// `time` is its end). Ties resolve to the state after all events at `time`.
std::size_t intervalAt(const Lane& lane, std::int64_t time) noexcept;

} // namespace fiberscope::analysis
