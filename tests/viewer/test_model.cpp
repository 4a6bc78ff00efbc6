// The viewer's model: lanes, levels of detail, hit testing, explanations,
// scheduler state, range statistics and filters.
//
// Three kinds of input: small hand-built traces with answers worked out by
// hand; traces from a small scheduler simulator that also logs the true
// queue / ring state (stateAt is checked against a brute-force replay of that
// log at many random times); and a real trace recorded from the runtime,
// checked for invariants. A 2M-event synthetic trace smoke-tests scale.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <string>

#include <fiberscope/fiberscope.hpp>
#include <fiberscope/trace.hpp>
#include <fiberscope/trace_reader.hpp>

#include "../support/decoded_trace.hpp"
#include "fiberscope/analysis/lod.hpp"
#include "fiberscope/analysis/state_at.hpp"
#include "fiberscope/analysis/timeline.hpp"
#include "model/cpu_samples.hpp"
#include "model/describe.hpp"
#include "model/filter.hpp"
#include "model/explain.hpp"
#include "model/range_stats.hpp"
#include "model/source_location.hpp"
#include "model/time_view.hpp"

using namespace fiberscope;
using namespace fiberscope::viewer;
using trace::Event;
using trace::EventKind;
using trace::ScheduleHow;
using trace::SwitchReason;
using Trace = fiberscope::trace::Trace;

namespace {

constexpr std::uint8_t kRead = 22; // IORING_OP_READ

using test::ev;
std::uint8_t sw(SwitchReason r) { return static_cast<std::uint8_t>(r); }
std::uint8_t how(ScheduleHow h) { return static_cast<std::uint8_t>(h); }
std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }

using test::makeTrace;

struct Expected {
    std::int64_t start, end;
    State state;
    std::uint64_t fiber;
};

void checkLane(const Lane& lane, const std::vector<Expected>& expected) {
    REQUIRE(lane.intervals.size() == expected.size());
    for (std::size_t k = 0; k < expected.size(); ++k) {
        INFO("interval " << k);
        CHECK(lane.intervals[k].start == expected[k].start);
        CHECK(lane.intervals[k].end == expected[k].end);
        CHECK(lane.intervals[k].state == expected[k].state);
        CHECK(lane.intervals[k].fiber == expected[k].fiber);
    }
}

// One main fiber doing a read, one child fiber, a second worker parked.
Trace smallTrace() {
    return makeTrace(2,
                     {
                         ev(0, 0, EventKind::ThreadStart, 0, 0),
                         ev(10, 0, EventKind::FiberCreate, 2, 1, 0),
                         ev(10, 0, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::OwnQueue)),
                         ev(20, 0, EventKind::Submit, 1, u(5), 0, kRead),
                         ev(20, 0, EventKind::Switch, 1, 2, 0, sw(SwitchReason::IoWait)),
                         ev(30, 1, EventKind::ThreadStart, 1, 0),
                         ev(30, 1, EventKind::Park),
                         ev(40, 0, EventKind::Switch, 2, 0, 0, sw(SwitchReason::Finish)),
                         ev(40, 0, EventKind::FiberFinish, 2),
                         ev(45, 0, EventKind::Park),
                         ev(50, 0, EventKind::Complete, 1, u(4096), 0, kRead),
                         ev(50, 0, EventKind::Unpark, 1),
                         ev(55, 0, EventKind::Switch, 0, 1, 0, sw(SwitchReason::Idle)),
                         ev(60, 1, EventKind::Unpark, 0),
                         ev(70, 0, EventKind::Mark, 1),
                     },
                     {"done"});
}

// ---------------------------------------------------------------------------
// A small scheduler simulator: emits a consistent trace and logs the true
// ready queues, in-flight operations and thread states.

struct TruthOp {
    enum Kind { Enqueue, Dequeue, MoveAll, Submit, Complete, Run, Park, Unpark } kind;
    std::int64_t time;
    std::uint32_t thread; // Enqueue/MoveAll(to)/Submit/Run/Park/Unpark
    std::uint32_t other;  // MoveAll: from
    std::uint64_t fiber;  // Enqueue/Dequeue/Submit/Complete/Run
    std::int64_t fd;
    std::uint8_t opcode;
};

struct TruthState {
    std::vector<std::uint64_t> running;
    std::vector<bool> parked;
    std::vector<std::multiset<std::uint64_t>> ready;
    std::vector<std::multiset<std::tuple<std::uint64_t, std::uint8_t, std::int64_t>>> in_flight;
};

class Simulator {
public:
    Simulator(unsigned threads, std::uint64_t seed, bool log) : n_(threads), rng_(seed), log_(log) {
        running_.assign(n_, 0);
        parked_.assign(n_, false);
        queue_.resize(n_);
        in_flight_.resize(n_);
        wakeups_.resize(n_);
        trace_.header.complete = true;
        for (unsigned i = 0; i < n_; ++i) {
            trace::ThreadInfo info;
            info.number = i;
            info.worker = i;
            info.name = "worker " + std::to_string(i);
            trace_.threads.push_back(info);
        }
        trace_.strings = {"", "tick", "job"};
        running_[0] = 1; // the main fiber
        for (unsigned i = 0; i < n_; ++i) emit(i, EventKind::ThreadStart, i, 0);
    }

    void run(std::size_t events) {
        trace_.events.reserve(events + 64);
        while (trace_.events.size() < events) step();
        trace_.header.duration_ns = now_;
    }

    Trace trace_;
    std::vector<TruthOp> truth;

    TruthState truthAt(std::int64_t t) const {
        TruthState s;
        s.running.assign(n_, 0);
        s.running[0] = 1;
        s.parked.assign(n_, false);
        s.ready.resize(n_);
        s.in_flight.resize(n_);
        for (const TruthOp& op : truth) {
            if (op.time > t) break;
            switch (op.kind) {
            case TruthOp::Enqueue: s.ready[op.thread].insert(op.fiber); break;
            case TruthOp::Dequeue:
                for (auto& r : s.ready)
                    if (auto it = r.find(op.fiber); it != r.end()) {
                        r.erase(it);
                        break;
                    }
                break;
            case TruthOp::MoveAll:
                s.ready[op.thread].insert(s.ready[op.other].begin(), s.ready[op.other].end());
                s.ready[op.other].clear();
                break;
            case TruthOp::Submit: s.in_flight[op.thread].insert({op.fiber, op.opcode, op.fd}); break;
            case TruthOp::Complete:
                for (auto& f : s.in_flight)
                    for (auto it = f.begin(); it != f.end(); ++it)
                        if (std::get<0>(*it) == op.fiber) {
                            f.erase(it);
                            goto done;
                        }
            done:
                break;
            case TruthOp::Run: s.running[op.thread] = op.fiber; break;
            case TruthOp::Park: s.parked[op.thread] = true; break;
            case TruthOp::Unpark: s.parked[op.thread] = false; break;
            }
        }
        return s;
    }

private:
    unsigned n_;
    std::mt19937_64 rng_;
    bool log_;
    std::int64_t now_ = 0;
    std::uint64_t next_fiber_ = 2;
    std::size_t live_ = 1;
    std::vector<std::uint64_t> running_;
    std::vector<bool> parked_;
    std::vector<std::deque<std::uint64_t>> queue_;
    std::vector<std::vector<std::pair<std::uint64_t, std::uint8_t>>> in_flight_;
    std::vector<std::vector<std::uint32_t>> wakeups_; // senders of pending MSG_RINGs

    std::uint64_t rand(std::uint64_t n) { return rng_() % n; }

    void emit(std::uint32_t thread, EventKind kind, std::uint64_t a0 = 0, std::uint64_t a1 = 0, std::uint64_t a2 = 0,
              std::uint8_t small = 0, bool same_time = false) {
        if (!same_time && rand(10) != 0) now_ += 1 + static_cast<std::int64_t>(rand(200)); // 10%: a tie with the previous record
        trace_.events.push_back(ev(now_, thread, kind, a0, a1, a2, small));
    }
    void log(TruthOp op) {
        op.time = now_;
        if (log_) truth.push_back(op);
    }
    void run(std::uint32_t t, std::uint64_t from, std::uint64_t to, SwitchReason reason) {
        emit(t, EventKind::Switch, from, to, 0, sw(reason));
        if (to) log({TruthOp::Dequeue, 0, t, 0, to, 0, 0});
        log({TruthOp::Run, 0, t, 0, to, 0, 0});
        running_[t] = to;
    }
    // The seed's queue word is a stack: a schedule record's list goes on
    // top, its head first, and the owner pops the top (the front).
    void enqueue(std::uint32_t t, std::uint64_t f) { enqueue(t, std::vector<std::uint64_t>{f}); }
    void enqueue(std::uint32_t t, const std::vector<std::uint64_t>& list) {
        queue_[t].insert(queue_[t].begin(), list.begin(), list.end());
        for (std::uint64_t f : list) log({TruthOp::Enqueue, 0, t, 0, f, 0, 0});
    }

    void step() {
        const auto t = static_cast<std::uint32_t>(rand(n_));
        if (parked_[t]) {
            if (in_flight_[t].empty() && wakeups_[t].empty() && rand(4) != 0) return;
            for (std::uint32_t sender : wakeups_[t]) emit(t, EventKind::WakeupReceived, sender);
            wakeups_[t].clear();
            std::vector<std::uint64_t> done;
            auto& ops = in_flight_[t];
            std::shuffle(ops.begin(), ops.end(), rng_);
            const std::size_t k = ops.empty() ? 0 : 1 + rand(ops.size());
            for (std::size_t i = 0; i < k; ++i) {
                emit(t, EventKind::Complete, ops.back().first, 8, 0, ops.back().second);
                log({TruthOp::Complete, 0, t, 0, ops.back().first, 0, 0});
                done.push_back(ops.back().first);
                ops.pop_back();
            }
            emit(t, EventKind::Unpark, done.size());
            log({TruthOp::Unpark, 0, t, 0, 0, 0, 0});
            parked_[t] = false;
            if (done.size() >= 2) {
                emit(t, EventKind::Schedule, done[1], done.size() - 1, t, how(ScheduleHow::OwnQueue));
                enqueue(t, std::vector<std::uint64_t>(done.begin() + 1, done.end()));
            }
            if (!done.empty()) run(t, 0, done[0], SwitchReason::Idle);
            return;
        }
        const std::uint64_t f = running_[t];
        if (f == 0) {
            if (!queue_[t].empty()) {
                const std::uint64_t next = queue_[t].front();
                queue_[t].pop_front();
                run(t, 0, next, SwitchReason::Idle);
                return;
            }
            std::vector<std::uint32_t> victims;
            for (std::uint32_t v = 0; v < n_; ++v)
                if (v != t && !queue_[v].empty()) victims.push_back(v);
            if (!victims.empty() && rand(3) != 0) {
                const std::uint32_t v = victims[rand(victims.size())];
                const std::uint64_t head = queue_[v].front();
                emit(t, EventKind::Steal, head, v);
                for (std::uint64_t q : queue_[v]) queue_[t].push_back(q);
                queue_[v].clear();
                log({TruthOp::MoveAll, 0, t, v, 0, 0, 0});
                queue_[t].pop_front();
                run(t, 0, head, SwitchReason::Idle);
                return;
            }
            emit(t, EventKind::Park);
            log({TruthOp::Park, 0, t, 0, 0, 0, 0});
            parked_[t] = true;
            return;
        }
        const std::uint64_t r = rand(100);
        const std::uint64_t spawn_limit = live_ > 200 ? 5 : 30;
        if (r < spawn_limit) {
            const std::uint64_t g = next_fiber_++;
            ++live_;
            emit(t, EventKind::FiberCreate, g, f, 0);
            std::vector<std::uint32_t> idle;
            for (std::uint32_t w = 0; w < n_; ++w)
                if (w != t && parked_[w] && queue_[w].empty() && wakeups_[w].empty()) idle.push_back(w);
            if (!idle.empty() && rand(2)) {
                const std::uint32_t w = idle[rand(idle.size())];
                emit(t, EventKind::Schedule, g, 1, w, how(ScheduleHow::IdleHandoff));
                emit(t, EventKind::WakeupSent, w, 0, 0, 0, true);
                enqueue(w, g);
                wakeups_[w].push_back(t);
            } else {
                emit(t, EventKind::Schedule, g, 1, t, how(ScheduleHow::OwnQueue));
                enqueue(t, g);
            }
        } else if (r < 50 || (r >= 90 && r < 100)) {
            const bool timer = r >= 90;
            const std::uint8_t opcode = timer ? 11 : kRead;
            const std::int64_t fd = timer ? -1 : static_cast<std::int64_t>(f % 7);
            emit(t, EventKind::Submit, f, u(fd), 0, opcode);
            log({TruthOp::Submit, 0, t, 0, f, fd, opcode});
            in_flight_[t].push_back({f, opcode});
            std::uint64_t next = 0;
            if (!queue_[t].empty() && rand(2)) {
                next = queue_[t].front();
                queue_[t].pop_front();
            }
            run(t, f, next, SwitchReason::IoWait);
        } else if (r < 65 || (r < 80 && f == 1)) {
            run(t, f, 0, SwitchReason::Yield);
            emit(t, EventKind::Schedule, f, 1, t, how(ScheduleHow::OwnQueue));
            enqueue(t, f);
        } else if (r < 80) {
            run(t, f, 0, SwitchReason::Finish);
            emit(t, EventKind::FiberFinish, f);
            --live_;
        } else {
            emit(t, EventKind::Mark, 1 + rand(2));
        }
    }
};

std::vector<std::uint64_t> sortedFibers(const std::vector<ReadyEntry>& ready) {
    std::vector<std::uint64_t> out;
    for (const auto& r : ready) out.push_back(r.fiber);
    std::sort(out.begin(), out.end());
    return out;
}

void compareStateAt(const Timeline& tl, const Simulator& sim, std::int64_t time) {
    const SchedulerState state = stateAt(tl, time);
    const TruthState truth = sim.truthAt(time);
    REQUIRE(state.threads.size() == truth.running.size());
    for (const ThreadState& ts : state.threads) {
        INFO("time " << time << ", thread " << ts.thread);
        const std::uint32_t t = ts.thread;
        CHECK(ts.running == truth.running[t]);
        const State expected = truth.parked[t] ? State::Parked : (truth.running[t] ? State::Running : State::Idle);
        CHECK(ts.state == expected);
        CHECK(sortedFibers(ts.ready) == std::vector<std::uint64_t>(truth.ready[t].begin(), truth.ready[t].end()));
        std::multiset<std::tuple<std::uint64_t, std::uint8_t, std::int64_t>> ops;
        for (const auto& op : ts.in_flight) ops.insert({op.fiber, op.opcode, op.fd});
        CHECK(ops == truth.in_flight[t]);
        CHECK((std::find(state.parked.begin(), state.parked.end(), t) != state.parked.end()) == truth.parked[t]);
    }
}

// Interval invariants every lane must satisfy.
void checkLaneShape(const Lane& lane) {
    for (std::size_t k = 0; k < lane.intervals.size(); ++k) {
        const Interval& iv = lane.intervals[k];
        REQUIRE(iv.end >= iv.start);
        if (k) REQUIRE(lane.intervals[k - 1].end <= iv.start);
    }
}

// visibleBlocks' contract, checked against the intervals directly.
void checkBlocks(const Lane& lane, std::int64_t t0, std::int64_t t1, double ns_per_pixel) {
    std::vector<Block> blocks;
    visibleBlocks(lane, t0, t1, ns_per_pixel, blocks);
    std::size_t first = 0, count = 0;
    std::int64_t busy = 0;
    for (std::size_t k = 0; k < lane.intervals.size(); ++k) {
        const Interval& iv = lane.intervals[k];
        if (iv.start <= t1 && iv.end >= t0) {
            if (count == 0) first = k;
            ++count;
            busy += iv.duration();
        }
    }
    INFO("view [" << t0 << ", " << t1 << "] at " << ns_per_pixel << " ns/px");
    std::uint64_t counted = 0;
    std::int64_t covered = 0;
    std::int64_t last_pixel = -1;
    std::size_t next_first = first;
    for (const Block& b : blocks) {
        REQUIRE(b.count >= 1);
        REQUIRE(b.first == next_first); // consecutive runs of intervals, in order, none skipped
        next_first = b.first + b.count;
        REQUIRE(b.start == lane.intervals[b.first].start);
        REQUIRE(b.end >= lane.intervals[b.first + b.count - 1].end);
        const auto pixel = static_cast<std::int64_t>(std::floor(static_cast<double>(std::max(b.start, t0) - t0) / ns_per_pixel));
        REQUIRE(pixel > last_pixel); // never two blocks starting in one pixel
        last_pixel = pixel;
        bool dominant_is_member = false;
        for (std::uint32_t k = b.first; k < b.first + b.count; ++k)
            dominant_is_member |= lane.intervals[k].fiber == b.fiber && lane.intervals[k].state == b.state;
        REQUIRE(dominant_is_member);
        counted += b.count;
        covered += b.busy;
    }
    REQUIRE(counted == count);
    REQUIRE(covered == busy);
    const double pixels = static_cast<double>(t1 - t0) / ns_per_pixel;
    REQUIRE(static_cast<double>(blocks.size()) <= pixels + 2);
}

std::string tempTrace(const char* name) {
    return "/tmp/fiberscope-viewer-" + std::to_string(getpid()) + "-" + name + ".fstrace";
}

long tree(EventLoop& loop, long depth) {
    if (depth == 0) return 1;
    std::vector<Future<long>> children;
    for (int i = 0; i < 3; ++i) children.push_back(loop.async([&loop, depth] { return tree(loop, depth - 1); }));
    long sum = 0;
    for (auto& c : children) sum += c.await();
    return sum;
}

// Records a program that makes every kind of decision the runtime traces.
Trace recordRealTrace() {
    const std::string path = tempTrace("model");
    {
        trace::Recorder recorder(path);
        REQUIRE(recorder.ok());
        auto loop = EventLoop::create({.threads = 4}).value();
        auto total = loop->async([&] {
            setFiberName("root");
            trace::mark("tree start");
            trace::Zone zone("building the tree");
            return tree(*loop, 4);
        });
        REQUIRE(total.await() == 81);
        // File I/O: submit/complete with fds.
        const std::string file = tempTrace("data");
        auto io = loop->async([&] {
            auto f = loop->createFile(file, {.read = true});
            REQUIRE(f);
            std::vector<std::byte> buffer(4096, std::byte{7});
            REQUIRE(loop->pwrite(*f, buffer, 0).value() == 4096);
            REQUIRE(loop->pread(*f, buffer, 0).value() == 4096);
            REQUIRE(loop->close(*f));
        });
        io.await();
        unlink(file.c_str());
        // A canceled sleeper and a timer.
        auto sleeper = loop->async([&] { return loop->sleep(std::chrono::seconds(30)); });
        (void)loop->sleep(std::chrono::milliseconds(2));
        REQUIRE(sleeper.cancel().error() == Errc::Canceled);
        // Mutex contention and hand-offs, a condition, a queue, a group.
        Mutex mutex;
        Condition condition;
        int stage = 0;
        std::vector<Future<void>> lockers;
        mutex.lockUncancelable(); // held while the lockers start: they must contend, and unlock hands it over
        for (int i = 0; i < 6; ++i)
            lockers.push_back(loop->async([&] {
                for (int r = 0; r < 10; ++r) {
                    std::lock_guard lock(mutex);
                    loop->yield();
                }
            }));
        (void)loop->sleep(std::chrono::milliseconds(5));
        mutex.unlock();
        for (auto& l : lockers) l.await();
        auto waiter = loop->async([&] {
            std::unique_lock lock(mutex);
            while (stage == 0) (void)condition.wait(lock);
        });
        (void)loop->sleep(std::chrono::milliseconds(5));
        {
            std::lock_guard lock(mutex);
            stage = 1;
        }
        condition.broadcast();
        waiter.await();
        Queue<int> queue(2);
        auto producer = loop->async([&] {
            for (int i = 0; i < 10; ++i) (void)queue.put(i);
            queue.close();
        });
        int got = 0;
        while (queue.get()) ++got;
        producer.await();
        REQUIRE(got == 10);
        Group group(*loop);
        for (int i = 0; i < 4; ++i) group.async([&] { loop->yield(); });
        REQUIRE(group.wait());
    }
    Trace trace;
    trace::ReadError error;
    const bool read = trace::readTrace(path, trace, error, {.strict = true});
    INFO(error.text());
    REQUIRE(read);
    unlink(path.c_str());
    return trace;
}

} // namespace

// ---------------------------------------------------------------------------

TEST_CASE("thread and fiber lanes of a hand-built trace", "[viewer]") {
    const Trace trace = smallTrace();
    const Timeline tl = buildTimeline(trace);
    REQUIRE(tl.threads.size() == 2);
    CHECK(tl.threads[0].worker == 0);
    CHECK(tl.threads[1].worker == 1);
    CHECK(tl.end_time == 70);
    checkLane(tl.threads[0].lane, {
                                      {0, 20, State::Running, 1},
                                      {20, 40, State::Running, 2},
                                      {40, 45, State::Idle, 0},
                                      {45, 50, State::Parked, 0},
                                      {50, 55, State::Idle, 0},
                                      {55, 70, State::Running, 1},
                                  });
    // Worker 1 never stopped: it stays idle to the trace's end.
    checkLane(tl.threads[1].lane, {
                                      {30, 30, State::Idle, 0},
                                      {30, 60, State::Parked, 0},
                                      {60, 70, State::Idle, 0},
                                  });
    CHECK(tl.threads[1].alive_ns == 40);
    CHECK(tl.threads[1].alive_end == 70);
    REQUIRE(tl.fibers.size() == 2);
    const FiberLane& main = tl.fibers[0];
    CHECK(main.fiber() == 1);
    CHECK(main.name() == "main");
    checkLane(main.lane, {
                             {0, 20, State::Running, 1},
                             {20, 50, State::Waiting, 1},
                             {50, 55, State::Ready, 1},
                             {55, 70, State::Running, 1},
                         });
    CHECK(main.lane.intervals[1].reason == WaitReason::Io);
    const FiberLane& child = tl.fibers[1];
    CHECK(child.fiber() == 2);
    CHECK(child.name() == "fiber #2");
    CHECK(child.parent() == 1);
    CHECK(child.created() == 10);
    CHECK(child.finished() == 40);
    checkLane(child.lane, {
                              {10, 20, State::Ready, 2},
                              {20, 40, State::Running, 2},
                              {40, 70, State::Finished, 2},
                          });
    CHECK(child.lane.intervals[0].thread == 0); // queued on worker 0

    // Flows: the spawn and the read's completion.
    std::map<FlowKind, std::vector<Flow>> flows;
    for (const Flow& f : analysis::flowsOf(tl)) flows[f.kind].push_back(f);
    REQUIRE(flows[FlowKind::Spawn].size() == 1);
    CHECK(flows[FlowKind::Spawn][0].from.time == 10);
    CHECK(flows[FlowKind::Spawn][0].from.fiber == 1);
    CHECK(flows[FlowKind::Spawn][0].to.time == 20);
    CHECK(flows[FlowKind::Spawn][0].to.fiber == 2);
    // The spawn is read back from fiber 2's lane (FlowStore), with the records at its ends.
    CHECK(tl.flows.refs.size() == 1);
    CHECK(tl.flows.stored.size() == 1);
    CHECK(trace.events[flows[FlowKind::Spawn][0].from.event].kind == EventKind::FiberCreate);
    CHECK(flows[FlowKind::Spawn][0].from.thread == 0);
    CHECK(trace.events[flows[FlowKind::Spawn][0].to.event].kind == EventKind::Switch);
    CHECK(trace.events[flows[FlowKind::Spawn][0].to.event].time == 20);
    REQUIRE(flows[FlowKind::Completion].size() == 1);
    CHECK(flows[FlowKind::Completion][0].from.time == 20);
    CHECK(flows[FlowKind::Completion][0].to.time == 55);
    CHECK(flows[FlowKind::Completion][0].to.fiber == 1);

    // Instants: everything but switches, parks and unparks, with the mark's label.
    const auto& instants = tl.threads[0].instants;
    REQUIRE(!instants.empty());
    CHECK(instantKind(trace, instants.back()) == EventKind::Mark);
    CHECK(trace.string(instantLabel(trace, instants.back())) == "done");
    // An instant's fiber: the one its record names (the create names fiber 2),
    // else the one running on the thread (the mark at 70: fiber 1, from 55).
    for (std::size_t k = 0; k < instants.size(); ++k)
        if (instantKind(trace, instants[k]) == EventKind::FiberCreate) CHECK(instantFiber(trace, tl.threads[0], k) == 2);
    CHECK(instantFiber(trace, tl.threads[0], instants.size() - 1) == 1);
    for (const Instant& i : instants) CHECK(instantKind(trace, i) != EventKind::Switch);

    // Latencies: fiber 2 waited 10 ns to run, fiber 1 5 ns after its completion.
    const auto latencies = analysis::latenciesOf(tl);
    REQUIRE(latencies.size() == 2);
    CHECK(latencies[0].fiber == 2);
    CHECK(latencies[0].run - latencies[0].ready == 10);
    CHECK(latencies[1].fiber == 1);
    CHECK(latencies[1].run - latencies[1].ready == 5);
    CHECK(tl.latencies.refs.size() == 2); // both read back from the lanes' Ready and Running intervals
}

TEST_CASE("a latency sample past a lane reference's 128 intervals is kept as a value, and reads back the same", "[viewer]") {
    // Fiber 2 yields 80 times: its lane grows by a Ready and a Running
    // interval each time, so its Running intervals pass index 127.
    std::vector<trace::Event> events = {ev(0, 0, EventKind::ThreadStart, 0, 0), ev(10, 0, EventKind::FiberCreate, 2, 1, 0),
                                        ev(11, 0, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::OwnQueue)),
                                        ev(12, 0, EventKind::Switch, 0, 2, 0, sw(SwitchReason::Idle))};
    std::int64_t t = 20;
    for (int k = 0; k < 80; ++k, t += 10) {
        events.push_back(ev(t, 0, EventKind::Switch, 2, 0, 0, sw(SwitchReason::Yield)));
        events.push_back(ev(t + 4, 0, EventKind::Switch, 0, 2, 0, sw(SwitchReason::Idle)));
    }
    const Trace trace = makeTrace(1, events, {});
    const Timeline tl = buildTimeline(trace);
    const analysis::FiberLane* fl = analysis::findFiber(tl, 2);
    REQUIRE(fl);
    const auto latencies = analysis::latenciesOf(tl);
    REQUIRE(latencies.size() == 81);
    CHECK(latencies[0].ready == 10);
    CHECK(latencies[0].run == 12);
    for (std::size_t k = 1; k < latencies.size(); ++k) {
        INFO("sample " << k);
        CHECK(latencies[k].fiber == 2);
        CHECK(latencies[k].ready == 10 + 10 * static_cast<std::int64_t>(k));
        CHECK(latencies[k].run == latencies[k].ready + 4);
    }
    // The Running intervals are at 1, 3, 5, ...: those up to 127 are lane
    // references (64 of them), the rest values.
    CHECK(tl.latencies.refs.size() == 64);
    CHECK(tl.latencies.stored.size() == 81 - 64);
}

TEST_CASE("spawn flows and latency samples read back from their lanes keep every item's place and fields", "[viewer]") {
    // 150 children of the main fiber on two threads, each created, queued and
    // run; every third one submits a read that completes before it runs again.
    // Spawns (kept as lane indices) and completions (kept packed) interleave
    // over several 64-flow words; child 7 is created twice (two spawns, to its
    // one first run: its lane gives back neither, so both stay packed).
    std::vector<trace::Event> events = {ev(0, 0, EventKind::ThreadStart, 0, 0), ev(0, 1, EventKind::ThreadStart, 1, 0)};
    std::int64_t t = 10;
    std::size_t expected_completions = 0;
    for (std::uint64_t child = 2; child < 152; ++child, t += 10) {
        const std::uint32_t th = child % 2;
        events.push_back(ev(t, th, EventKind::FiberCreate, child, 1, 0));
        if (child == 7) events.push_back(ev(t + 1, th, EventKind::FiberCreate, child, 1, 0));
        events.push_back(ev(t + 2, th, EventKind::Schedule, child, 1, th, how(ScheduleHow::OwnQueue)));
        events.push_back(ev(t + 3, th, EventKind::Switch, 0, child, 0, sw(SwitchReason::Idle)));
        if (child % 3 == 0) {
            events.push_back(ev(t + 4, th, EventKind::Submit, child, u(5), 0, kRead));
            events.push_back(ev(t + 4, th, EventKind::Switch, child, 0, 0, sw(SwitchReason::IoWait)));
            events.push_back(ev(t + 5, th, EventKind::Complete, child, u(1), 0, kRead));
            events.push_back(ev(t + 6, th, EventKind::Switch, 0, child, 0, sw(SwitchReason::Idle)));
            ++expected_completions;
        }
        events.push_back(ev(t + 7, th, EventKind::Switch, child, 0, 0, sw(SwitchReason::Finish)));
        events.push_back(ev(t + 7, th, EventKind::FiberFinish, child));
    }
    const Trace trace = makeTrace(2, events, {});
    const Timeline tl = buildTimeline(trace);
    const auto flows = analysis::flowsOf(tl);
    std::size_t spawns = 0, completions = 0;
    std::int64_t last = INT64_MIN;
    for (std::size_t k = 0; k < flows.size(); ++k) {
        INFO("flow " << k);
        const Flow f = flows[k];
        CHECK(f.from.time >= last); // the one order, by from.time
        last = f.from.time;
        REQUIRE(f.from.event < trace.events.size());
        REQUIRE(f.to.event < trace.events.size());
        const trace::Event from = trace.events[f.from.event], to = trace.events[f.to.event];
        CHECK(from.time == f.from.time);
        CHECK(to.time == f.to.time);
        CHECK(trace.threads[from.thread].number == f.from.thread);
        CHECK(trace.threads[to.thread].number == f.to.thread);
        CHECK(to.kind == EventKind::Switch);
        CHECK(to.arg[1] == f.to.fiber);
        if (f.kind == FlowKind::Spawn) {
            ++spawns;
            CHECK(from.kind == EventKind::FiberCreate);
            CHECK(from.arg[0] == f.to.fiber);
            CHECK(f.from.fiber == 1);
            CHECK(f.to.time == 10 * static_cast<std::int64_t>(f.to.fiber - 1) + 3);
        } else {
            REQUIRE(f.kind == FlowKind::Completion);
            ++completions;
        }
    }
    CHECK(spawns == 151);
    CHECK(completions == expected_completions);
    CHECK(tl.flows.refs.size() == 149); // all but child 7's
    CHECK(tl.flows.stored.size() == completions + 2);
    // The latency samples, read back from the lanes: each child waited 3 ns
    // from its create to its first run (child 7 from its first create) and
    // 1 ns from its read's completion.
    const auto latencies = analysis::latenciesOf(tl);
    REQUIRE(latencies.size() == 150 + expected_completions);
    std::int64_t last_run = INT64_MIN;
    for (std::size_t k = 0; k < latencies.size(); ++k) {
        INFO("sample " << k);
        const analysis::LatencySample x = latencies[k];
        CHECK(x.run >= last_run);
        last_run = x.run;
        const std::int64_t created = 10 * static_cast<std::int64_t>(x.fiber - 1);
        if (x.run == created + 3) CHECK(x.ready == created);
        else CHECK((x.run == created + 6 && x.ready == created + 5));
    }
    CHECK(tl.latencies.refs.size() + tl.latencies.stored.size() == latencies.size());
    CHECK(tl.latencies.stored.empty()); // every one is (child 7's lane turned Ready at its first create); flows above mix both
    // A copy reads the same; a flow appended by hand after them reads back last.
    Timeline copy = tl;
    for (std::size_t k = 0; k < latencies.size(); ++k) {
        const analysis::LatencySample a = analysis::latencyAt(copy, k), b = latencies[k];
        REQUIRE((a.ready == b.ready && a.run == b.run && a.fiber == b.fiber));
    }
    for (std::size_t k = 0; k < flows.size(); ++k) REQUIRE(analysis::flowAt(copy, k) == flows[k]);
    const Flow extra{FlowKind::Wakeup, {t, 0, 0, 0}, {t + 1, 0, 1, 1}};
    copy.flows.push_back(extra);
    REQUIRE(copy.flows.size() == flows.size() + 1);
    CHECK(analysis::flowAt(copy, flows.size()) == extra);
    CHECK(analysis::flowAt(copy, flows.size() - 1) == flows[flows.size() - 1]);
}

TEST_CASE("stateAt on a hand-built trace", "[viewer]") {
    const Trace trace = smallTrace();
    const Timeline tl = buildTimeline(trace);
    SchedulerState s = stateAt(tl, 15);
    CHECK(s.threads[0].state == State::Running);
    CHECK(s.threads[0].running == 1);
    REQUIRE(s.threads[0].ready.size() == 1);
    CHECK(s.threads[0].ready[0].fiber == 2);
    CHECK_FALSE(s.threads[1].alive);

    s = stateAt(tl, 25);
    CHECK(s.threads[0].running == 2);
    CHECK(s.threads[0].ready.empty());
    REQUIRE(s.threads[0].in_flight.size() == 1);
    CHECK(s.threads[0].in_flight[0].fiber == 1);
    CHECK(s.threads[0].in_flight[0].opcode == kRead);
    CHECK(s.threads[0].in_flight[0].fd == 5);

    s = stateAt(tl, 47);
    CHECK(s.threads[0].state == State::Parked);
    CHECK(s.threads[1].state == State::Parked);
    CHECK(s.parked.size() == 2);
    CHECK(s.threads[0].in_flight.size() == 1);

    s = stateAt(tl, 50); // after the completion at 50
    CHECK(s.threads[0].state == State::Idle);
    CHECK(s.threads[0].in_flight.empty());
    CHECK(s.parked == std::vector<std::uint32_t>{1});
}

TEST_CASE("steals, hand-offs and wake-ups", "[viewer]") {
    // Main (fiber 1) on worker 0 spawns 2, 3, 4 onto its own queue; worker 1
    // steals the queue (head 4), runs 4; main hands fiber 5 to idle worker 2.
    const Trace trace = makeTrace(3, {
                                         ev(0, 0, EventKind::ThreadStart, 0, 0),
                                         ev(0, 1, EventKind::ThreadStart, 1, 0),
                                         ev(0, 2, EventKind::ThreadStart, 2, 0),
                                         ev(1, 1, EventKind::Park),
                                         ev(1, 2, EventKind::Park),
                                         ev(10, 0, EventKind::FiberCreate, 2, 1, 0),
                                         ev(10, 0, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::OwnQueue)),
                                         ev(11, 0, EventKind::FiberCreate, 3, 1, 0),
                                         ev(11, 0, EventKind::Schedule, 3, 1, 0, how(ScheduleHow::OwnQueue)),
                                         ev(12, 0, EventKind::FiberCreate, 4, 1, 0),
                                         ev(12, 0, EventKind::Schedule, 4, 1, 0, how(ScheduleHow::OwnQueue)),
                                         ev(20, 1, EventKind::Unpark, 0),
                                         ev(21, 1, EventKind::Steal, 4, 0),
                                         ev(21, 1, EventKind::Switch, 0, 4, 0, sw(SwitchReason::Idle)),
                                         ev(30, 0, EventKind::FiberCreate, 5, 1, 0),
                                         ev(30, 0, EventKind::Schedule, 5, 1, 2, how(ScheduleHow::IdleHandoff)),
                                         ev(30, 0, EventKind::WakeupSent, 2),
                                         ev(35, 2, EventKind::WakeupReceived, 0),
                                         ev(35, 2, EventKind::Unpark, 1),
                                         ev(36, 2, EventKind::Switch, 0, 5, 0, sw(SwitchReason::Idle)),
                                         ev(40, 1, EventKind::Switch, 4, 3, 0, sw(SwitchReason::Yield)),
                                         ev(40, 1, EventKind::Schedule, 4, 1, 1, how(ScheduleHow::OwnQueue)),
                                         ev(48, 0, EventKind::Switch, 1, 0, 0, sw(SwitchReason::Await)),
                                         ev(50, 0, EventKind::Mark, 0),
                                     });
    const Timeline tl = buildTimeline(trace);
    SchedulerState s = stateAt(tl, 15);
    CHECK(sortedFibers(s.threads[0].ready) == std::vector<std::uint64_t>{2, 3, 4});
    s = stateAt(tl, 25);
    CHECK(s.threads[0].ready.empty());
    CHECK(sortedFibers(s.threads[1].ready) == std::vector<std::uint64_t>{2, 3});
    CHECK(s.threads[1].running == 4);
    s = stateAt(tl, 32);
    CHECK(sortedFibers(s.threads[2].ready) == std::vector<std::uint64_t>{5});
    CHECK(s.threads[2].state == State::Parked);
    s = stateAt(tl, 45);
    CHECK(s.threads[1].running == 3);
    CHECK(sortedFibers(s.threads[1].ready) == std::vector<std::uint64_t>{2, 4});
    CHECK(s.threads[2].running == 5);

    std::map<FlowKind, std::vector<Flow>> flows;
    for (const Flow& f : analysis::flowsOf(tl)) flows[f.kind].push_back(f);
    REQUIRE(flows[FlowKind::Steal].size() == 1);
    const Flow& steal = flows[FlowKind::Steal][0];
    CHECK(steal.from.time == 12); // when fiber 4 was queued on worker 0
    CHECK(steal.from.thread == 0);
    CHECK(steal.to.time == 21);
    CHECK(steal.to.thread == 1);
    CHECK(steal.to.fiber == 4);
    REQUIRE(flows[FlowKind::Wakeup].size() == 1);
    const Flow& wake = flows[FlowKind::Wakeup][0];
    CHECK(wake.from.time == 30);
    CHECK(wake.from.thread == 0);
    CHECK(wake.from.fiber == 1);
    CHECK(wake.to.time == 35);
    CHECK(wake.to.thread == 2);
    CHECK(wake.to.fiber == 5);
    CHECK(flows[FlowKind::Spawn].size() == 3); // fiber 2 never ran
    std::vector<std::uint32_t> in_view;
    flowsInRange(tl, 33, 34, in_view);
    CHECK(in_view.size() == 3); // spawns of 3 (11 -> 40) and 5 (30 -> 36), the wake-up (30 -> 35)
    flowsInRange(tl, 33, 34, in_view, 1u << static_cast<unsigned>(FlowKind::Wakeup));
    REQUIRE(in_view.size() == 1);
    CHECK(analysis::flowAt(tl, in_view[0]).kind == FlowKind::Wakeup);
    flowsInRange(tl, 0, 100, in_view);
    CHECK(in_view.size() == tl.flows.size());
    flowsInRange(tl, 0, 100, in_view, ~0u, 2);
    CHECK(in_view.size() == 2);

    // Explanations name what happened and the function that did it.
    const auto find = [&](EventKind kind) {
        for (std::uint32_t i = 0; i < trace.events.size(); ++i)
            if (trace.events[i].kind == kind) return i;
        return kNoEvent;
    };
    const Explanation stole = explain(tl, trace, find(EventKind::Steal));
    CHECK(stole.text == "worker 1 found its ready queue empty and stole fiber #4 from worker 0 in findReadyFiber(): it took that "
                        "worker's whole ready queue and runs its head first");
    CHECK(stole.function == "findReadyFiber()");
    std::uint32_t handoff = kNoEvent;
    for (std::uint32_t i = 0; i < trace.events.size(); ++i)
        if (trace.events[i].kind == EventKind::Schedule && trace.events[i].small == how(ScheduleHow::IdleHandoff)) handoff = i;
    const Explanation handed = explain(tl, trace, handoff);
    CHECK(handed.text.rfind("schedule() handed fiber #5 to idle worker 2 and woke it with MSG_RING", 0) == 0);
    CHECK(handed.text.find("just created") != std::string::npos);
}

TEST_CASE("a schedule record written after the new worker already ran the fiber (a version 6 file)", "[viewer]") {
    // Before format version 7, schedule() recorded NewWorker after starting
    // the thread; the thread may run the fiber (here: until it waits for a
    // read) before that record.
    Trace trace = makeTrace(2, {
                                         ev(0, 0, EventKind::ThreadStart, 0, 0),
                                         ev(10, 0, EventKind::FiberCreate, 2, 1, 0),
                                         ev(12, 1, EventKind::ThreadStart, 1, 0),
                                         ev(15, 1, EventKind::Switch, 0, 2, 0, sw(SwitchReason::Idle)),
                                         ev(20, 1, EventKind::Submit, 2, 3, 0, kRead),
                                         ev(20, 1, EventKind::Switch, 2, 0, 0, sw(SwitchReason::IoWait)),
                                         ev(25, 1, EventKind::Park),
                                         ev(30, 0, EventKind::Schedule, 2, 1, 1, how(ScheduleHow::NewWorker)),
                                         ev(40, 0, EventKind::Switch, 1, 0, 0, sw(SwitchReason::Await)),
                                     });
    trace.header.version = 6;
    const Timeline tl = buildTimeline(trace);
    const FiberLane* f = findFiber(tl, 2);
    REQUIRE(f);
    checkLane(f->lane, {{10, 15, State::Ready, 2}, {15, 20, State::Running, 2}, {20, 40, State::Waiting, 2}});
    CHECK(stateAt(tl, 35).threads[1].ready.empty());
    const Explanation x = explain(tl, trace, 7);
    REQUIRE(trace.events[7].kind == EventKind::Schedule);
    CHECK(x.text.find("started worker 1 (spawnWorker())") != std::string::npos);
    CHECK(x.text.find("just created") != std::string::npos);
}

// A bounced wake-up draws no arrow; hovering its send says so, and one
// received says when (wakeup_pairing.hpp pairs them: the send before the
// target's start is the bounced one).
TEST_CASE("a wake-up's send says whether it was received or bounced", "[viewer]") {
    const trace::Trace trace = test::makeTrace(2, {
                                                      ev(0, 0, EventKind::ThreadStart, 0, 0),
                                                      ev(10, 0, EventKind::WakeupSent, 1),
                                                      ev(20, 1, EventKind::ThreadStart, 1, 0),
                                                      ev(30, 0, EventKind::WakeupSent, 1),
                                                      ev(1040, 1, EventKind::WakeupReceived, 0),
                                                      ev(2050, 0, EventKind::WakeupBounced, 1, static_cast<std::uint64_t>(-77)),
                                                  });
    const Timeline tl = buildTimeline(trace);
    REQUIRE(trace.events[1].kind == EventKind::WakeupSent);
    const std::string bounced = explain(tl, trace, 1).text;
    INFO(bounced);
    CHECK(bounced.find("it bounced (result -77") != std::string::npos);
    CHECK(bounced.find("2.04 us later") != std::string::npos);
    const std::string received = explain(tl, trace, 3).text;
    INFO(received);
    CHECK(received.find("worker 1 received it 1.01 us later") != std::string::npos);
    CHECK(received.find("bounced") == std::string::npos);
}

TEST_CASE("a cancel delivered to a fiber waiting on a condition or a mutex is explained as the unlinking",
          "[viewer]") {
    for (const bool mutex : {false, true}) {
        INFO((mutex ? "mutex" : "condition"));
        const Trace trace = makeTrace(2, {
                                             ev(0, 0, EventKind::ThreadStart, 0, 0),
                                             ev(1, 1, EventKind::ThreadStart, 1, 0),
                                             ev(10, 0, EventKind::FiberCreate, 2, 1, 0),
                                             ev(10, 0, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::OwnQueue)),
                                             ev(20, 0, EventKind::Switch, 1, 2, 0, sw(SwitchReason::Await)),
                                             mutex ? ev(25, 0, EventKind::MutexContended, 2, 0x1000)
                                                   : ev(25, 0, EventKind::ConditionWait, 2, 0x1000),
                                             ev(25, 0, EventKind::Switch, 2, 0, 0,
                                                sw(mutex ? SwitchReason::Mutex : SwitchReason::Condition)),
                                             ev(40, 1, EventKind::CancelRequest, 2, 0),
                                             ev(40, 1, EventKind::CancelDelivered, 2),
                                             ev(40, 1, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::IdleHandoff)),
                                             ev(50, 0, EventKind::Switch, 0, 2, 0, sw(SwitchReason::Idle)),
                                         });
        const Timeline tl = buildTimeline(trace);
        REQUIRE(trace.events[8].kind == EventKind::CancelDelivered);
        const Explanation x = explain(tl, trace, 8);
        CHECK(x.function == "requestCancel()");
        CHECK(x.text.find(mutex ? "off the mutex's wait list" : "off the condition's wait list") != std::string::npos);
        CHECK(x.text.find(mutex ? "Mutex::lock() returns Canceled" : "Condition::wait() returns Canceled") !=
              std::string::npos);
    }
}

TEST_CASE("explanations follow the backend the trace was recorded on", "[viewer]") {
    // The same shape on the epoll backend: a readiness wait (POLL_ADD) on
    // fd 7, woken readable, then the recv done at one instant; an eventfd
    // wake-up of worker 1.
    constexpr std::uint8_t kPollAdd = 6, kRecv = 27;
    const Trace trace = makeTrace(2,
                                  {
                                      ev(0, 0, EventKind::ThreadStart, 0, 0),
                                      ev(1, 0, EventKind::Mark, 1),
                                      ev(10, 0, EventKind::Submit, 1, u(7), 0, kPollAdd),
                                      ev(10, 0, EventKind::Switch, 1, 0, 0, sw(SwitchReason::IoWait)),
                                      ev(12, 0, EventKind::WakeupSent, 1),
                                      ev(15, 0, EventKind::Park),
                                      ev(30, 0, EventKind::Complete, 1, u(1), 0, kPollAdd),
                                      ev(30, 0, EventKind::Unpark, 1),
                                      ev(35, 0, EventKind::Switch, 0, 1, 0, sw(SwitchReason::Idle)),
                                      ev(36, 0, EventKind::Submit, 1, u(7), 0, kRecv),
                                      ev(36, 0, EventKind::Complete, 1, u(64), 0, kRecv),
                                      ev(40, 1, EventKind::ThreadStart, 1, 0),
                                      ev(41, 1, EventKind::WakeupReceived, 0),
                                  },
                                  {"backend: epoll"});
    Trace epoll = trace;
    epoll.header.backend = "epoll"; // the header names the backend; the mark is the loop's note of it
    const Timeline tl = buildTimeline(epoll);
    auto text = [&](std::uint32_t i) { return explain(tl, epoll, i).text; };
    CHECK(text(2).find("got EAGAIN, parked on worker 0's wait queue for fd 7") != std::string::npos);
    CHECK(text(4).find("eventfd of idle worker 1") != std::string::npos);
    CHECK(text(5).find("epoll_pwait2") != std::string::npos);
    CHECK(text(6).find("as ready (readable)") != std::string::npos);
    CHECK(text(7).find("returned from epoll_pwait2 having made 1 fiber ready") != std::string::npos);
    CHECK(text(9).find("non-blocking syscall") != std::string::npos);
    CHECK(text(12).find("eventfd woke its epoll_pwait2") != std::string::npos);
    // Recorded on io_uring, the same records read as io_uring.
    Trace uring = trace;
    uring.strings[1] = "backend: io_uring";
    uring.header.backend = "io_uring";
    const Timeline tl2 = buildTimeline(uring);
    CHECK(explain(tl2, uring, 5).text.find("io_uring_enter") != std::string::npos);
    CHECK(explain(tl2, uring, 4).text.find("MSG_RING") != std::string::npos);
}

TEST_CASE("explanations follow the scheduler policy the trace was recorded under", "[viewer]") {
    // A scaling trace (its mark after the backend's): a spawn into run_next,
    // two queued fibers and the wake-up to search the first causes, and a
    // steal-half of both by worker 1, the second of which it runs.
    const Trace trace = makeTrace(2,
                                  {
                                      ev(0, 0, EventKind::ThreadStart, 0, 0),
                                      ev(1, 0, EventKind::Mark, 1),
                                      ev(1, 0, EventKind::Mark, 2),
                                      ev(5, 1, EventKind::ThreadStart, 1, 0),
                                      ev(6, 1, EventKind::Park),
                                      ev(10, 0, EventKind::FiberCreate, 2, 1, 0),
                                      ev(10, 0, EventKind::Schedule, 2, 1, 0, how(ScheduleHow::RunNext)),
                                      ev(11, 0, EventKind::FiberCreate, 3, 1, 0),
                                      ev(11, 0, EventKind::Schedule, 3, 1, 0, how(ScheduleHow::OwnQueue)),
                                      ev(11, 0, EventKind::WakeupSent, 1),
                                      ev(12, 0, EventKind::FiberCreate, 4, 1, 0),
                                      ev(12, 0, EventKind::Schedule, 4, 1, 0, how(ScheduleHow::OwnQueue)),
                                      ev(20, 1, EventKind::WakeupReceived, 0),
                                      ev(20, 1, EventKind::Unpark, 0),
                                      ev(21, 1, EventKind::StealHalf, 3, 0),
                                      ev(21, 1, EventKind::StealHalf, 4, 0),
                                      ev(21, 1, EventKind::Switch, 0, 4, 0, sw(SwitchReason::Idle)),
                                      // Fiber 4 finishes; worker 1 searches 10 us and gives up.
                                      ev(25, 1, EventKind::Switch, 4, 0, 0, sw(SwitchReason::Finish)),
                                      ev(25, 1, EventKind::FiberFinish, 4),
                                      ev(26, 1, EventKind::Search, 1, 0, 0, static_cast<std::uint8_t>(trace::SearchOp::Begin)),
                                      ev(10026, 1, EventKind::Search, 0, 0, 0, static_cast<std::uint8_t>(trace::SearchOp::GaveUp)),
                                  },
                                  {"backend: io_uring", "scheduler: scaling"});
    const Timeline tl = buildTimeline(trace);
    auto text = [&](std::uint32_t i) { return explain(tl, trace, i).text; };
    INFO(text(6));
    CHECK(text(6).find("run_next slot (the scaling policy, Go's runnext)") != std::string::npos);
    CHECK(explain(tl, trace, 6).function == "scheduleSpawned()");
    INFO(text(8));
    CHECK(text(8).find("the scaling policy hands no thread work") != std::string::npos);
    INFO(text(9));
    CHECK(text(9).find("to search for work") != std::string::npos);
    CHECK(explain(tl, trace, 9).function == "wakeToSearch()");
    INFO(text(14) << " / " << text(15));
    CHECK(text(14).find("took fiber #3 from worker 0's ready queue in stealHalf()") != std::string::npos);
    CHECK(text(14).find("it waits in this thread's queue") != std::string::npos);
    CHECK(text(15).find("runs the newest of them now") != std::string::npos);
    INFO(text(16));
    CHECK(text(16).find("after taking the older half of worker 0's ready queue") != std::string::npos);
    // Woken to search, not handed work; the search and its end.
    INFO(text(12));
    CHECK(text(12).find("to search for work (wakeToSearch())") != std::string::npos);
    INFO(text(19) << " / " << text(20));
    CHECK(explain(tl, trace, 19).function == "searchBeforePark()");
    CHECK(text(19).find("1 thread searches now") != std::string::npos);
    CHECK(text(20).find("found nothing") != std::string::npos);
    CHECK(text(20).find("no other thread still searching") != std::string::npos);
    // Two steal flows, one per fiber moved.
    std::size_t steals = 0;
    for (const auto& f : analysis::flowsOf(tl)) steals += f.kind == FlowKind::Steal;
    CHECK(steals == 2);
    // The same records without the policy's mark read as the seed's.
    Trace seed = trace;
    seed.strings[2] = "tree start";
    const Timeline tl2 = buildTimeline(seed);
    CHECK(explain(tl2, seed, 8).text.find("found no idle worker") != std::string::npos);
}

namespace {
// The words a sentence about an epoll trace must never use: io_uring, its
// MSG_RING, or "ring" as a word (IORING_OP_POLL_ADD is the opcode's name on
// both backends, and no word "ring").
bool namesIoUring(const std::string& text) {
    static const std::regex ring("\\bring\\b", std::regex::icase);
    return text.find("io_uring") != std::string::npos || text.find("MSG_RING") != std::string::npos ||
           std::regex_search(text, ring);
}
} // namespace

TEST_CASE("describing an epoll trace never names io_uring, an io_uring trace does", "[viewer][backend]") {
    // Worker 0 submits a readiness wait (on epoll; a poll on io_uring) and a
    // timer, wakes worker 1, parks, unparks with the completion; a
    // cancellation of a fiber in flight on worker 0; a blocking-pool thread.
    constexpr std::uint8_t kPollAdd = 6;
    const Trace base = makeTrace(3,
                                 {
                                     ev(0, 0, EventKind::ThreadStart, 0, 0),
                                     ev(10, 0, EventKind::Submit, 1, u(7), 0, kPollAdd),
                                     ev(10, 0, EventKind::Switch, 1, 0, 0, sw(SwitchReason::IoWait)),
                                     ev(12, 0, EventKind::Schedule, 2, 1, 1, how(ScheduleHow::IdleHandoff)),
                                     ev(12, 0, EventKind::WakeupSent, 1),
                                     ev(14, 0, EventKind::CancelRequest, 1, 1),
                                     ev(15, 0, EventKind::Park),
                                     ev(30, 0, EventKind::Complete, 1, u(1), 0, kPollAdd),
                                     ev(30, 0, EventKind::Unpark, 1),
                                     ev(35, 0, EventKind::Switch, 0, 1, 0, sw(SwitchReason::Idle)),
                                     ev(40, 1, EventKind::ThreadStart, 1, 0),
                                     ev(41, 1, EventKind::WakeupReceived, 0),
                                     ev(42, 1, EventKind::Park),
                                     ev(50, 1, EventKind::Unpark, 0),
                                     ev(60, 2, EventKind::ThreadStart, 2000, 0),
                                 });
    // Event indices of what is checked (makeTrace sorts by time, stably).
    const std::vector<std::uint32_t> described = {1, 3, 4, 5, 6, 7, 8, 11, 12, 13, 14};
    auto sentences = [&](const Trace& trace) {
        const Timeline tl = buildTimeline(trace);
        std::vector<std::string> out;
        for (std::uint32_t i : described) out.push_back(explain(tl, trace, i).text);
        // Worker 0's parked interval, and the state panel's words.
        const ThreadLane* lane = findThread(tl, 0);
        REQUIRE(lane);
        for (std::size_t k = 0; k < lane->lane.intervals.size(); ++k)
            if (lane->lane.intervals[k].state == State::Parked) out.push_back(explainThreadInterval(tl, trace, tl.lane_of_thread[0], k).text);
        const trace::BackendWords& words = backendWords(trace);
        for (const char* word : {words.park_call, words.park_waits_for, words.wake, words.in_flight, words.in_flight_short,
                                 words.completions})
            out.push_back(word);
        return out;
    };
    Trace epoll = base;
    epoll.header.backend = "epoll";
    for (const std::string& text : sentences(epoll)) {
        INFO(text);
        CHECK_FALSE(namesIoUring(text));
    }
    Trace uring = base;
    uring.header.backend = "io_uring";
    const std::vector<std::string> on_uring = sentences(uring);
    auto any = [&](const char* word) {
        return std::any_of(on_uring.begin(), on_uring.end(), [&](const std::string& t) { return t.find(word) != std::string::npos; });
    };
    CHECK(any("io_uring_enter"));
    CHECK(any("MSG_RING"));
    CHECK(std::any_of(on_uring.begin(), on_uring.end(), [](const std::string& t) { return namesIoUring(t); }));
    // A poll on io_uring is no epoll readiness wait.
    const Timeline utl = buildTimeline(uring);
    CHECK(explain(utl, uring, 1).text.find("epoll") == std::string::npos);
    const Timeline etl = buildTimeline(epoll);
    CHECK(explain(etl, epoll, 6).text.find("parked in epoll_pwait2") != std::string::npos);
    CHECK(explain(etl, epoll, 4).text.find("eventfd") != std::string::npos);
}

TEST_CASE("a blocking-pool thread is 'blocking pool thread N' everywhere, never 'worker 2000'", "[viewer][backend]") {
    Trace trace = makeTrace(2, {
                                   ev(0, 0, EventKind::ThreadStart, 0, 0),
                                   ev(5, 0, EventKind::Submit, 1, u(5), 0, kRead),
                                   ev(5, 0, EventKind::Switch, 1, 0, 0, sw(SwitchReason::IoWait)),
                                   ev(6, 0, EventKind::Park),
                                   ev(8, 1, EventKind::ThreadStart, 2001, 0),
                                   ev(9, 1, EventKind::Complete, 1, u(4), 0, kRead),
                                   ev(10, 0, EventKind::Unpark, 1),
                                   ev(12, 0, EventKind::Switch, 0, 1, 0, sw(SwitchReason::Idle)),
                               });
    trace.header.backend = "epoll";
    trace.threads[1].worker = 2001;
    trace.threads[1].name = "blocking pool 1"; // as the runtime records it
    CHECK(trace::threadDisplayName(2001, 1) == "blocking pool thread 1");
    CHECK(trace::threadDisplayName(3, 3) == "worker 3");
    CHECK(trace::threadDisplayName(-1, 5) == "thread 5");
    const Timeline tl = buildTimeline(trace);
    const ThreadLane* pool = findThread(tl, 1);
    REQUIRE(pool);
    CHECK(pool->name == "blocking pool thread 1");          // the lane, the stats, the text timeline
    CHECK(threadLabel(tl, 1) == "blocking pool thread 1");      // tooltips, the state panel
    CHECK(workerLabel(2001) == "blocking pool thread 1");    // the selection statistics
    for (std::uint32_t i = 0; i < trace.events.size(); ++i) {
        const std::string text = explain(tl, trace, i).text;
        INFO(text);
        CHECK(text.find("worker 2001") == std::string::npos);
        CHECK(text.find("2001") == std::string::npos);
    }
    CHECK(explain(tl, trace, 4).text.find("blocking pool thread 1") != std::string::npos);
}

TEST_CASE("explanations of I/O, switches and intervals", "[viewer]") {
    const Trace trace = smallTrace();
    const Timeline tl = buildTimeline(trace);
    std::set<EventKind> kinds;
    for (std::uint32_t i = 0; i < trace.events.size(); ++i) {
        const Explanation x = explain(tl, trace, i);
        INFO(trace::eventKindName(trace.events[i].kind));
        CHECK(!x.text.empty());
        CHECK(!x.function.empty());
        CHECK(x.event == i);
        kinds.insert(trace.events[i].kind);
    }
    const auto text = [&](EventKind kind) {
        for (std::uint32_t i = 0; i < trace.events.size(); ++i)
            if (trace.events[i].kind == kind) return explain(tl, trace, i).text;
        return std::string();
    };
    CHECK(text(EventKind::Submit).rfind("the main fiber (#1) submitted IORING_OP_READ on fd 5 and switched away (io-wait)", 0) == 0);
    CHECK(text(EventKind::Complete).rfind("worker 0's ring completed the main fiber (#1)'s read with result 4096; the idle loop made it ready", 0) == 0);
    CHECK(text(EventKind::Complete).find("resumed it 5 ns later") != std::string::npos);
    // The io-wait switch names the operation and execute().
    const Explanation io = explain(tl, trace, 4);
    REQUIRE(trace.events[4].kind == EventKind::Switch);
    CHECK(io.function == "execute()");
    CHECK(io.text.find("IORING_OP_READ on fd 5") != std::string::npos);
    // Every interval of every lane has an explanation.
    for (std::size_t l = 0; l < tl.threads.size(); ++l)
        for (std::size_t k = 0; k < tl.threads[l].lane.intervals.size(); ++k)
            CHECK(!explainThreadInterval(tl, trace, l, k).text.empty());
    for (std::size_t l = 0; l < tl.fibers.size(); ++l)
        for (std::size_t k = 0; k < tl.fibers[l].lane.intervals.size(); ++k)
            CHECK(!explainFiberInterval(tl, trace, l, k).text.empty());
    const Explanation parked = explainThreadInterval(tl, trace, 0, 3);
    CHECK(parked.text.find("parked in io_uring_enter for 5 ns") != std::string::npos);
    CHECK(parked.text.find("woke with 1 completion") != std::string::npos);
    const Explanation waited = explainFiberInterval(tl, trace, 0, 1);
    CHECK(waited.text.rfind("the main fiber (#1) waited 30 ns on worker 0 for IORING_OP_READ on fd 5", 0) == 0);
}

TEST_CASE("hit testing", "[viewer]") {
    const Trace trace = smallTrace();
    const Timeline tl = buildTimeline(trace);
    const Lane& lane = tl.threads[0].lane;
    CHECK(hitInterval(lane, 30, 1.0) == 1);
    CHECK(hitInterval(lane, 20, 1.0) == 1); // a boundary belongs to the interval starting there
    CHECK(hitInterval(lane, 70, 1.0) == 5); // the lane's end
    CHECK(hitInterval(lane, 73, 1.0, 2.0) == kNone);
    CHECK(hitInterval(lane, 73, 2.0, 2.0) == 5); // within 4 ns of the end
    CHECK(hitInterval(lane, -3, 1.0, 5.0) == 0);
    const auto& instants = tl.threads[0].instants;
    const std::size_t mark = hitInstant(trace, instants, 68, 1.0, 3.0);
    REQUIRE(mark != kNone);
    CHECK(instantKind(trace, instants[mark]) == EventKind::Mark);
    CHECK(hitInstant(trace, instants, 65, 1.0, 3.0) == kNone);
    const std::size_t first = hitInstant(trace, instants, 10, 1.0, 1.0);
    REQUIRE(first != kNone);
    CHECK(instantKind(trace, instants[first]) == EventKind::FiberCreate); // the first of the records at 10

    Hit hit = hitThreadLane(tl, trace, 0, 69, 1.0, 2.0);
    CHECK(hit.kind == HitKind::Instant);
    hit = hitThreadLane(tl, trace, 0, 47, 1.0, 1.0);
    REQUIRE(hit.kind == HitKind::Interval);
    CHECK(hit.index == 3);
    CHECK(explain(tl, trace, hit, false).function == "idle()");
    hit = hitFiberLane(tl, 1, 60, 1.0);
    REQUIRE(hit.kind == HitKind::Interval);
    CHECK(tl.fibers[1].lane.intervals[hit.index].state == State::Finished);

    std::vector<Zone> zones = {{0, 100, 0, kNoEvent, kNoEvent, 0, 0}, {10, 20, 0, kNoEvent, kNoEvent, 0, 1}, {30, 40, 0, kNoEvent, kNoEvent, 0, 1}};
    CHECK(hitZone(zones, 15) == 1);
    CHECK(hitZone(zones, 25) == 0);
    CHECK(hitZone(zones, 150) == kNone);

    std::vector<Block> blocks;
    visibleBlocks(lane, 0, 70, 10.0, blocks);
    const std::size_t b = hitBlock(blocks, 42, 10.0);
    REQUIRE(b != kNone);
    CHECK(blocks[b].start <= 42);
    CHECK(42 < blocks[b].end);
}

TEST_CASE("levels of detail merge per pixel and keep counts and time", "[viewer][lod]") {
    // A lane by hand: 4 intervals in pixel 0 at 10 ns/px, then one long one.
    Lane lane;
    lane.intervals = {
        {0, 2, 7, kNoEvent, 0, State::Running, WaitReason::None},
        {2, 3, 0, kNoEvent, 0, State::Idle, WaitReason::None},
        {3, 8, 8, kNoEvent, 0, State::Running, WaitReason::None},
        {8, 9, 0, kNoEvent, 0, State::Idle, WaitReason::None},
        {9, 100, 9, kNoEvent, 0, State::Running, WaitReason::None},
    };
    buildLaneIndex(lane);
    std::vector<Block> blocks;
    visibleBlocks(lane, 0, 100, 10.0, blocks);
    REQUIRE(blocks.size() == 1); // everything starts in pixel 0
    CHECK(blocks[0].count == 5);
    CHECK(blocks[0].fiber == 9); // 91 ns of fiber 9 dominates
    CHECK(blocks[0].busy == 100);
    visibleBlocks(lane, 0, 100, 1.0, blocks);
    CHECK(blocks.size() == 5);
    visibleBlocks(lane, 0, 100, 4.0, blocks);
    REQUIRE(blocks.size() == 2); // pixels 0 (starts 0, 2, 3) and 2 (starts 8, 9)
    CHECK(blocks[0].count == 3);
    CHECK(blocks[0].fiber == 8);
    CHECK(blocks[0].end == 8);
    CHECK(blocks[1].count == 2);
    CHECK(blocks[1].fiber == 9);
    visibleBlocks(lane, 50, 60, 1.0, blocks);
    REQUIRE(blocks.size() == 1);
    CHECK(blocks[0].first == 4);

    // Random lanes long enough to have stored levels, checked in many views.
    std::mt19937_64 rng(42);
    for (int round = 0; round < 6; ++round) {
        Lane random;
        std::int64_t t = static_cast<std::int64_t>(rng() % 1000);
        const std::size_t n = 2000 + rng() % 20000;
        for (std::size_t k = 0; k < n; ++k) {
            // Durations over many scales, some zero, with gaps now and then.
            const int scale = static_cast<int>(rng() % 20);
            const std::int64_t d = rng() % 8 == 0 ? 0 : static_cast<std::int64_t>(rng() % (std::uint64_t{1} << scale));
            if (rng() % 16 == 0) t += static_cast<std::int64_t>(rng() % 5000);
            Interval iv;
            iv.start = t;
            iv.end = t + d;
            iv.fiber = rng() % 5;
            iv.state = static_cast<State>(rng() % 3);
            random.intervals.push_back(iv);
            t += d;
        }
        buildLaneIndex(random);
        REQUIRE(!random.levels().empty());
        const std::int64_t begin = random.intervals.front().start, end = random.intervals.back().end;
        checkBlocks(random, begin, end, static_cast<double>(end - begin) / 2000.0);
        checkBlocks(random, begin, end, 1.0);
        for (int view = 0; view < 60; ++view) {
            std::int64_t a = begin + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(end - begin + 1));
            std::int64_t b = begin + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(end - begin + 1));
            if (a > b) std::swap(a, b);
            const double width = 10.0 + static_cast<double>(rng() % 3000);
            checkBlocks(random, a, b + 1, std::max(0.25, static_cast<double>(b + 1 - a) / width));
        }
    }
}

TEST_CASE("stateAt matches a brute-force replay at random times", "[viewer][state]") {
    for (std::uint64_t seed : {1, 2, 3}) {
        Simulator sim(4, seed, true);
        sim.run(20000);
        const Trace& trace = sim.trace_;
        Timeline tl = buildTimeline(trace);
        std::int64_t lo = 0, hi = INT64_MAX;
        for (const ThreadLane& lane : tl.threads) {
            lo = std::max(lo, lane.first_time);
            hi = std::min(hi, lane.last_time);
        }
        REQUIRE(lo < hi);
        std::mt19937_64 rng(seed);
        for (int round = 0; round < 2; ++round) {
            if (round == 1) buildReplayIndex(tl, 16); // many checkpoints
            for (int q = 0; q < 150; ++q) compareStateAt(tl, sim, lo + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(hi - lo)));
            for (int q = 0; q < 50; ++q) {
                const std::int64_t at = trace.events[rng() % trace.events.size()].time; // exactly at records (and their ties)
                if (at >= lo && at <= hi) compareStateAt(tl, sim, at);
            }
        }
        CHECK(tl.replay.checkpoints.size() > 10);
    }
}

TEST_CASE("range statistics", "[viewer][stats]") {
    SECTION("hand-built") {
        const Trace trace = smallTrace();
        const Timeline tl = buildTimeline(trace);
        const RangeStats s = rangeStats(tl, trace, 0, 70);
        CHECK(s.switches == 3);
        CHECK(s.completions == 1);
        CHECK(s.steals == 0);
        CHECK(s.events == trace.events.size());
        REQUIRE(s.threads.size() == 2);
        CHECK(s.threads[0].running_ns == 55);
        CHECK(s.threads[0].idle_ns == 10);
        CHECK(s.threads[0].parked_ns == 5);
        CHECK(s.threads[0].running == Approx(55.0 / 70.0));
        CHECK(s.threads[1].parked_ns == 30);
        CHECK(s.latency_samples == 2);
        CHECK(s.latency_p50 == 5);
        CHECK(s.latency_p90 == 10);
        CHECK(s.latency_max == 10);
        CHECK(s.latency_mean == Approx(7.5));
        std::uint64_t histogram = 0;
        for (const auto& b : s.latency_histogram) histogram += b.count;
        CHECK(histogram == 2);
        const RangeStats part = rangeStats(tl, trace, 42, 52);
        CHECK(part.threads[0].idle_ns == 3 + 2);
        CHECK(part.threads[0].parked_ns == 5);
        CHECK(part.completions == 1);
        CHECK(part.switches == 0);
        CHECK(part.latency_samples == 0);
    }
    SECTION("simulated, against brute force") {
        Simulator sim(3, 7, false);
        sim.run(30000);
        const Trace& trace = sim.trace_;
        const Timeline tl = buildTimeline(trace);
        std::mt19937_64 rng(9);
        for (int q = 0; q < 40; ++q) {
            std::int64_t a = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(tl.end_time));
            std::int64_t b = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(tl.end_time));
            if (a > b) std::swap(a, b);
            const RangeStats s = rangeStats(tl, trace, a, b);
            std::uint64_t switches = 0;
            for (const trace::Event& e : trace.events)
                if (e.time >= a && e.time <= b && e.kind == EventKind::Switch) ++switches;
            CHECK(s.switches == switches);
            for (std::size_t l = 0; l < tl.threads.size(); ++l) {
                std::int64_t running = 0, parked = 0;
                for (const Interval& iv : tl.threads[l].lane.intervals) {
                    const std::int64_t d = std::max<std::int64_t>(0, std::min(iv.end, b) - std::max(iv.start, a));
                    if (iv.state == State::Running) running += d;
                    if (iv.state == State::Parked) parked += d;
                }
                CHECK(s.threads[l].running_ns == running);
                CHECK(s.threads[l].parked_ns == parked);
            }
            std::vector<std::int64_t> lat;
            for (const LatencySample& x : analysis::latenciesOf(tl))
                if (x.run >= a && x.run <= b) lat.push_back(x.run - x.ready);
            std::sort(lat.begin(), lat.end());
            CHECK(s.latency_samples == lat.size());
            if (!lat.empty()) {
                CHECK(s.latency_p50 == lat[(lat.size() + 1) / 2 - 1]);
                CHECK(s.latency_max == lat.back());
                std::uint64_t histogram = 0;
                for (const auto& bucket : s.latency_histogram) {
                    CHECK(bucket.lo < bucket.hi);
                    histogram += bucket.count;
                }
                CHECK(histogram == lat.size());
            }
        }
    }
}

TEST_CASE("filters, search and stepping", "[viewer][filter]") {
    Trace trace = smallTrace();
    trace.strings.push_back("Worker Seven");
    trace.events.insert(trace.events.begin() + 3, ev(15, 0, EventKind::FiberName, 2, trace.strings.size() - 1));
    const Timeline tl = buildTimeline(trace);
    CHECK(tl.fibers[1].name() == "Worker Seven");
    CHECK(findFibers(tl, "seven") == std::vector<std::uint64_t>{2});
    CHECK(findFibers(tl, "MAIN") == std::vector<std::uint64_t>{1});
    CHECK(findFibers(tl, "").size() == 2);
    CHECK(fiberLabel(tl, 2) == "fiber 'Worker Seven' (#2)");

    EventFilter f;
    f.any_fiber = false;
    f.fiber = 2;
    std::vector<std::uint32_t> out;
    filterEvents(tl, trace, f, out);
    std::vector<EventKind> kinds;
    for (std::uint32_t i : out) kinds.push_back(trace.events[i].kind);
    CHECK(kinds == std::vector<EventKind>{EventKind::FiberCreate, EventKind::Schedule, EventKind::FiberName, EventKind::Switch,
                                          EventKind::Switch, EventKind::FiberFinish});
    f = EventFilter{};
    f.kinds = kindBit(EventKind::Park) | kindBit(EventKind::Unpark);
    f.thread = 1;
    filterEvents(tl, trace, f, out);
    CHECK(out.size() == 2);
    f.t0 = 40;
    CHECK(countEvents(tl, trace, f) == 1);
    f = EventFilter{};
    f.kinds = kindBit(EventKind::Mark);
    f.any_fiber = false;
    f.fiber = 1; // a mark names no fiber: it matches the fiber running then
    CHECK(countEvents(tl, trace, f) == 1);
    filterEvents(tl, trace, EventFilter{}, out, 3);
    CHECK(out == std::vector<std::uint32_t>{0, 1, 2});
    // The event table lists the mark, not its source location.
    {
        Trace located = trace;
        std::size_t mark = 0;
        while (located.events[mark].kind != EventKind::Mark) ++mark;
        const trace::Event m = located.events[mark];
        located.events.insert(located.events.begin() + static_cast<std::ptrdiff_t>(mark) + 1,
                              ev(m.time, m.thread, EventKind::SourceLocation, 0, 12));
        const Timeline ltl = buildTimeline(located);
        EventFilter all;
        CHECK(countEvents(ltl, located, all) == located.events.size());
        CHECK(countEvents(ltl, located, listedEvents(all)) == located.events.size() - 1);
        all.kinds = kindBit(EventKind::Mark);
        CHECK(countEvents(ltl, located, listedEvents(all)) == 1);
    }

    const std::uint32_t next = nextEvent(tl, trace, EventKind::Switch, 20);
    REQUIRE(next != kNoEvent);
    CHECK(trace.events[next].time == 40);
    const std::uint32_t prev = previousEvent(tl, trace, EventKind::Switch, 40);
    REQUIRE(prev != kNoEvent);
    CHECK(trace.events[prev].time == 20);
    CHECK(nextEvent(tl, trace, EventKind::Switch, 55) == kNoEvent);
    CHECK(previousEvent(tl, trace, EventKind::Park, 50, 1) != kNoEvent);
    CHECK(nextEvent(tl, trace, EventKind::Park, 0, 1) != kNoEvent);
    CHECK(nextEvent(tl, trace, EventKind::Steal, 0) == kNoEvent);
}

TEST_CASE("a recorded trace: lane invariants, finishes, explanations", "[viewer][recorded]") {
    const Trace trace = recordRealTrace();
    REQUIRE(trace.lost_events == 0);
    const Timeline tl = buildTimeline(trace);
    REQUIRE(tl.threads.size() >= 2);
    // The trace writer's CPU samples come on a pseudo thread of their own
    // (FORMAT.md, "CPU samples"), the last lane: no worker, no states.
    std::size_t workers = tl.threads.size();
    while (workers > 0 && isCpuSamplerLane(tl.threads[workers - 1])) --workers;
    for (std::size_t l = 1; l < workers; ++l) CHECK(tl.threads[l - 1].worker < tl.threads[l].worker);

    // Each thread's intervals: sorted, non-overlapping, covering its life
    // (its first record to its thread-stop) without gaps.
    for (const ThreadLane& lane : tl.threads) {
        if (isCpuSamplerLane(lane)) continue;
        INFO(lane.name);
        const auto& iv = lane.lane.intervals;
        REQUIRE(!iv.empty());
        CHECK(lane.stopped);
        CHECK(iv.front().start == lane.first_time);
        CHECK(iv.back().end == lane.alive_end);
        CHECK(lane.alive_end <= lane.last_time);
        for (std::size_t k = 0; k < iv.size(); ++k) {
            REQUIRE(iv[k].end >= iv[k].start);
            if (k) REQUIRE(iv[k - 1].end == iv[k].start);
        }
        std::vector<Block> blocks;
        visibleBlocks(lane.lane, lane.first_time, lane.last_time, 1e3, blocks);
        std::uint64_t counted = 0;
        for (const Block& b : blocks) counted += b.count;
        CHECK(counted == iv.size());
    }

    // Fibers: every created fiber has a lane; a finished one exactly one Finished state, its last.
    std::set<std::uint64_t> created, finished;
    for (const trace::Event& e : trace.events) {
        if (e.kind == EventKind::FiberCreate) created.insert(e.arg[0]);
        if (e.kind == EventKind::FiberFinish) finished.insert(e.arg[0]);
    }
    CHECK(finished.size() == created.size());
    for (std::uint64_t id : created) REQUIRE(findFiber(tl, id));
    bool root = false;
    for (const FiberLane& fl : tl.fibers) {
        INFO(fl.name());
        checkLaneShape(fl.lane);
        std::size_t finishes = 0;
        for (const Interval& iv : fl.lane.intervals) finishes += iv.state == State::Finished;
        if (finished.count(fl.fiber())) {
            CHECK(finishes == 1);
            CHECK(fl.lane.intervals.back().state == State::Finished);
            CHECK(fl.finished() >= 0);
        } else {
            CHECK(finishes == 0);
        }
        root |= fl.name() == "root";
        if (fl.name() == "root") {
            // Its own zone, and those of the workers it started (spawnWorker is a zone).
            std::vector<const analysis::Zone*> own;
            for (const auto& z : fl.zones())
                if (trace.string(z.label).rfind("spawnWorker", 0) != 0) own.push_back(&z);
            REQUIRE(own.size() == 1);
            CHECK(trace.string(own[0]->label) == "building the tree");
            CHECK(own[0]->end > own[0]->start);
        }
    }
    CHECK(root);

    // Explanations for every record (and so every kind present) and every interval.
    std::set<EventKind> kinds;
    for (std::uint32_t i = 0; i < trace.events.size(); ++i) {
        const Explanation x = explain(tl, trace, i);
        INFO(trace::eventKindName(trace.events[i].kind));
        REQUIRE(!x.text.empty());
        REQUIRE(!x.function.empty());
        kinds.insert(trace.events[i].kind);
    }
    for (EventKind k : {EventKind::Switch, EventKind::Schedule, EventKind::Submit, EventKind::Complete, EventKind::Park, EventKind::Unpark,
                        EventKind::MutexContended, EventKind::MutexHandoff, EventKind::ConditionWait, EventKind::ConditionWake,
                        EventKind::Await, EventKind::CancelRequest, EventKind::GroupOp, EventKind::QueueOp, EventKind::Mark}) {
        INFO(trace::eventKindName(k));
        CHECK(kinds.count(k));
    }
    for (std::size_t l = 0; l < tl.threads.size(); ++l)
        for (std::size_t k = 0; k < tl.threads[l].lane.intervals.size(); ++k)
            REQUIRE(!explainThreadInterval(tl, trace, l, k).text.empty());
    for (std::size_t l = 0; l < tl.fibers.size(); ++l)
        for (std::size_t k = 0; k < tl.fibers[l].lane.intervals.size(); ++k)
            REQUIRE(!explainFiberInterval(tl, trace, l, k).text.empty());

    // Flows point forward in time; spawns and completions exist.
    std::map<FlowKind, std::size_t> flow_kinds;
    for (const Flow& f : analysis::flowsOf(tl)) {
        ++flow_kinds[f.kind];
        CHECK(f.from.time <= f.to.time + 1000); // cross-thread clocks may disagree by a little
    }
    CHECK(flow_kinds[FlowKind::Spawn] >= created.size() - 1);
    CHECK(flow_kinds[FlowKind::Completion] >= 2);
    CHECK(flow_kinds[FlowKind::AwaitChain] >= 1);

    // The scheduler state agrees with the lanes at random times.
    std::mt19937_64 rng(5);
    for (int q = 0; q < 300; ++q) {
        const std::int64_t t = tl.start_time + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(tl.end_time - tl.start_time + 1));
        const SchedulerState s = stateAt(tl, t);
        for (const ThreadState& ts : s.threads) {
            if (ts.state != State::Running) continue;
            const FiberLane* fl = findFiber(tl, ts.running);
            REQUIRE(fl);
            const std::size_t k = intervalAt(fl->lane, t);
            REQUIRE(k != kNone);
            CHECK(fl->lane.intervals[k].state == State::Running);
            CHECK(fl->lane.intervals[k].thread == static_cast<std::int32_t>(ts.thread));
            for (const ReadyEntry& r : ts.ready) {
                const FiberLane* rl = findFiber(tl, r.fiber);
                REQUIRE(rl);
                const std::size_t j = intervalAt(rl->lane, t);
                REQUIRE(j != kNone);
                CHECK(rl->lane.intervals[j].state == State::Ready);
            }
        }
    }
    const RangeStats all = rangeStats(tl, trace, tl.start_time, tl.end_time);
    CHECK(all.events == trace.events.size());
    CHECK(all.latency_samples > 0);
}

TEST_CASE("records in odd orders and with unknown names do not break the model", "[viewer][robust]") {
    // Valid records (kinds and enumerations in range, as the reader guarantees)
    // with random fibers, workers and threads: the model must stay well-formed.
    std::mt19937_64 rng(3);
    for (int round = 0; round < 20; ++round) {
        std::vector<trace::Event> events;
        std::int64_t t = 0;
        const unsigned threads = 1 + rng() % 4;
        for (int i = 0; i < 3000; ++i) {
            t += static_cast<std::int64_t>(rng() % 3);
            auto kind = static_cast<EventKind>(1 + rng() % trace::kMaxEventKind);
            if (kind == EventKind::StringDef) kind = EventKind::Mark;
            std::uint8_t small = 0;
            switch (kind) {
            case EventKind::Switch: small = static_cast<std::uint8_t>(rng() % (trace::kMaxSwitchReason + 1)); break;
            case EventKind::Schedule: small = static_cast<std::uint8_t>(rng() % 3); break;
            case EventKind::ConditionWake: small = static_cast<std::uint8_t>(rng() % 2); break;
            case EventKind::GroupOp: small = static_cast<std::uint8_t>(rng() % 3); break;
            case EventKind::QueueOp: small = static_cast<std::uint8_t>(rng() % 5); break;
            default: small = static_cast<std::uint8_t>(rng() % 30); break;
            }
            events.push_back(ev(t, static_cast<std::uint32_t>(rng() % (threads + 1)), kind, rng() % 12, rng() % 6, rng() % 5, small));
        }
        const Trace trace = makeTrace(threads, events, {"a", "b", "c", "d"});
        const Timeline tl = buildTimeline(trace);
        for (const ThreadLane& lane : tl.threads) {
            checkLaneShape(lane.lane);
            if (!lane.lane.intervals.empty()) checkBlocks(lane.lane, tl.start_time, tl.end_time, 3.0);
        }
        for (const FiberLane& fl : tl.fibers) {
            checkLaneShape(fl.lane);
            std::size_t finishes = 0;
            for (const Interval& iv : fl.lane.intervals) finishes += iv.state == State::Finished;
            CHECK(finishes <= 1);
        }
        for (std::uint32_t i = 0; i < trace.events.size(); ++i) REQUIRE(!explain(tl, trace, i).text.empty());
        for (std::size_t l = 0; l < tl.threads.size(); ++l)
            for (std::size_t k = 0; k < tl.threads[l].lane.intervals.size(); ++k) (void)explainThreadInterval(tl, trace, l, k);
        for (std::size_t l = 0; l < tl.fibers.size(); ++l)
            for (std::size_t k = 0; k < tl.fibers[l].lane.intervals.size(); ++k) (void)explainFiberInterval(tl, trace, l, k);
        for (std::int64_t q = tl.start_time - 1; q <= tl.end_time + 1; q += 97) {
            const SchedulerState s = stateAt(tl, q);
            CHECK(s.threads.size() == tl.threads.size());
        }
        (void)rangeStats(tl, trace, tl.start_time, tl.end_time);
    }
}

TEST_CASE("a 2M-event trace: build, and a full-range frame stays small and fast", "[viewer][scale]") {
    Simulator sim(4, 11, false);
    sim.run(2'000'000);
    const Trace& trace = sim.trace_;
    const auto rss = [] {
        long pages = 0, resident = 0;
        if (FILE* f = std::fopen("/proc/self/statm", "r")) {
            if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
            std::fclose(f);
        }
        return resident * sysconf(_SC_PAGESIZE);
    };
    const long before = rss();
    const auto t0 = std::chrono::steady_clock::now();
    const Timeline tl = buildTimeline(trace);
    const auto t1 = std::chrono::steady_clock::now();
    WARN("timeline memory (resident growth): about " << (rss() - before) / static_cast<long>(trace.events.size()) << " bytes per event");
    WARN("buildTimeline of " << trace.events.size() << " events: "
                             << std::chrono::duration_cast<std::chrono::milliseconds>(t1 - t0).count() << " ms, " << tl.fibers.size()
                             << " fibers");
    std::vector<Block> blocks;
    std::size_t total_intervals = 0;
    for (const ThreadLane& lane : tl.threads) {
        total_intervals += lane.lane.intervals.size();
        const auto a = std::chrono::steady_clock::now();
        visibleBlocks(lane.lane, tl.start_time, tl.end_time, static_cast<double>(tl.end_time - tl.start_time) / 2000.0, blocks);
        const auto b = std::chrono::steady_clock::now();
        const double ms = std::chrono::duration<double, std::milli>(b - a).count();
        INFO(lane.name << ": " << lane.lane.intervals.size() << " intervals -> " << blocks.size() << " blocks in " << ms << " ms");
        std::size_t runs = 0;
        for (const LodLevel& level : lane.lane.levels()) runs += level.runs.size();
        CHECK(runs <= 3 * lane.lane.intervals.size()); // the levels stay near the lane's own size
        if (lane.worker == 0)
            WARN(lane.name << ": " << lane.lane.intervals.size() << " intervals, " << lane.lane.levels().size() << " stored levels with "
                           << runs << " runs -> " << blocks.size() << " blocks in " << ms << " ms");
        CHECK(blocks.size() <= 4000);
        CHECK(ms < 50.0);
        std::uint64_t counted = 0;
        for (const Block& bl : blocks) counted += bl.count;
        CHECK(counted == lane.lane.intervals.size());
        // A zoomed-in frame somewhere in the middle.
        const std::int64_t mid = (tl.start_time + tl.end_time) / 2;
        visibleBlocks(lane.lane, mid, mid + 200'000, 100.0, blocks);
        CHECK(blocks.size() <= 2002);
    }
    CHECK(total_intervals > 500'000);
    // stateAt and range statistics stay quick too.
    const auto a = std::chrono::steady_clock::now();
    for (int q = 0; q < 100; ++q) (void)stateAt(tl, tl.start_time + (tl.end_time - tl.start_time) * q / 100);
    const auto b = std::chrono::steady_clock::now();
    CHECK(std::chrono::duration<double, std::milli>(b - a).count() < 2000.0);
    const RangeStats all = rangeStats(tl, trace, tl.start_time, tl.end_time);
    CHECK(all.events == trace.events.size());
}

// Framing (issue 14): where navigation puts the view, the checkpoint
// windows lessons open on, the zoom history, and mark labels that never
// print over each other. All pure arithmetic, no GUI.

namespace {

TimeView viewOf(double start, double end) {
    TimeView v;
    v.start = start;
    v.end = end;
    return v;
}

} // namespace

TEST_CASE("a jump keeps the view when its target is comfortably in it, else frames the target", "[viewer][framing]") {
    const TimeView wide = viewOf(0, 21e6); // a 21 ms view
    // 10.5 ms, in the middle: the view stays.
    const TimeView same = revealView(wide, TimeRange{10.5e6, 10.5e6}, TimeRange{10.49e6, 10.51e6}, 0, 0, 21e6);
    CHECK(same.start == wide.start);
    CHECK(same.end == wide.end);
    // 0.13 ms: in the outer 10% of the view (where today's cursor "shows
    // nothing"): the view zooms to the window around it, which fills its
    // inner 80%, centred.
    const TimeRange around{0.12e6, 0.14e6};
    const TimeView zoomed = revealView(wide, TimeRange{0.13e6, 0.13e6}, around, 0, 0, 21e6);
    CHECK(zoomed.span() == Approx(around.span() / 0.8));
    CHECK(comfortablyInView(zoomed, around));
    CHECK(zoomed.start == Approx(0.13e6 - zoomed.span() / 2));
    // Off the view entirely (right of it): framed as well.
    const TimeView off = revealView(viewOf(0, 1e6), TimeRange{5e6, 5e6}, TimeRange{4.9e6, 5.1e6}, 0, 0, 21e6);
    CHECK(comfortablyInView(off, TimeRange{5e6, 5e6}));
    CHECK(off.span() == Approx(0.25e6));
    // The outer 10% is not comfortable, the edge of the inner part is.
    CHECK_FALSE(comfortablyInView(viewOf(0, 100), TimeRange{9, 9}));
    CHECK(comfortablyInView(viewOf(0, 100), TimeRange{10, 90}));
    CHECK_FALSE(comfortablyInView(viewOf(0, 100), TimeRange{50, 91}));
    // A range in view but tiny in it (a 0.5% window of a whole-trace view)
    // is zoomed to when the caller asks for a minimum fill.
    const TimeRange story{1e6, 1.1e6};
    const TimeView framed = revealView(wide, story, story, 0.25, 0, 21e6);
    CHECK(framed.span() == Approx(0.1e6 / 0.8));
    // ... and once framed, asking again keeps it.
    const TimeView again = revealView(framed, story, story, 0.25, 0, 21e6);
    CHECK(again.start == framed.start);
    CHECK(again.end == framed.end);
    // A window never narrower than the minimum span.
    const TimeView tiny = revealView(wide, TimeRange{5, 5}, TimeRange{5, 5}, 0, 0, 21e6, 200);
    CHECK(tiny.span() == Approx(200));
    // Near the trace's start the view slides into the trace: it starts no
    // further before it than kTraceEdge of its width (room for a glyph),
    // and the window is still all in view.
    const TimeView start = revealView(wide, TimeRange{100, 100}, TimeRange{0, 1000}, 0, 0, 21e6, 4000);
    CHECK(start.start == Approx(-4000 * kTraceEdge));
    CHECK(start.end == Approx(4000 - 4000 * kTraceEdge));
    CHECK(comfortablyInView(start, TimeRange{0, 1000}, kTraceEdge));
    // A window wider than the trace allows: the whole trace, not more.
    const TimeView whole = revealView(wide, TimeRange{10, 900}, TimeRange{10, 900}, 0, 0, 1000, 200);
    CHECK(whole.start == Approx(-1000 * kTraceEdge / (1 - 2 * kTraceEdge)));
    CHECK(whole.end == Approx(1000 + 1000 * kTraceEdge / (1 - 2 * kTraceEdge)));
}

TEST_CASE("a tooltip only over the timeline, and never about a record outside the view", "[viewer][hover]") {
    TimeView view;
    view.start = 1000;
    view.end = 2000;
    CHECK(hoverShown(view, true, 1500));
    CHECK(hoverShown(view, true, -1)); // a block or a mark: no record's time to check
    CHECK(hoverShown(view, true, 1000));
    CHECK(hoverShown(view, true, 2000));
    // The pointer over the side panel, where a lane's band runs on under it.
    CHECK_FALSE(hoverShown(view, false, 1500));
    CHECK_FALSE(hoverShown(view, false, -1));
    // A glyph just past the view's edge, within the hit tolerance.
    CHECK_FALSE(hoverShown(view, true, 2001));
    CHECK_FALSE(hoverShown(view, true, 999));
}

TEST_CASE("the context of an instant: its neighbouring events, centred", "[viewer][framing]") {
    const std::vector<std::int64_t> times = {0, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 50000};
    auto at = [&](std::size_t i) { return times[i]; };
    const TimeRange r = contextAround(times.size(), at, 500, 2, 0);
    // Two events before 500 (300, 400) and two from it on (500, 600), centred on 500.
    CHECK(r.t0 == Approx(300));
    CHECK(r.t1 == Approx(700));
    // A wide minimum wins over close neighbours.
    const TimeRange wide = contextAround(times.size(), at, 500, 2, 10000);
    CHECK(wide.span() == Approx(10000));
    CHECK((wide.t0 + wide.t1) / 2 == Approx(500));
    // At the ends, and with no events at all.
    CHECK(contextAround(times.size(), at, 0, 2, 0).t1 == Approx(100));
    const TimeRange none = contextAround(0, at, 42, 8, 20);
    CHECK(none.t0 == Approx(32));
    CHECK(none.t1 == Approx(52));
}

TEST_CASE("a checkpoint's window is the burst around its mark, bounded by its neighbours", "[viewer][framing]") {
    // Lesson 1's shape: a burst of spawning around the first checkpoint
    // (10 us), then 5 ms timers, and the second checkpoint at the end.
    std::vector<std::int64_t> times;
    for (std::int64_t t = 850'000; t <= 870'000; t += 1'000) times.push_back(t);
    for (std::int64_t t : {5'000'000, 10'000'000, 15'000'000, 20'000'000, 20'010'000}) times.push_back(t);
    auto at = [&](std::size_t i) { return times[i]; };
    const std::vector<std::int64_t> checkpoints = {862'000, 20'010'000};
    const std::vector<TimeRange> idle_all; // nothing ran: every gap is a pause
    const TimeRange first = checkpointWindow(times.size(), at, checkpoints, 0, 800'000, 20'020'000, idle_all, 0.0005);
    CHECK(first.t0 == Approx(850'000));
    CHECK(first.t1 == Approx(870'000));
    // The second stops at its neighbour checkpoint (the first mark) at most, and at the 5 ms pauses before it.
    const TimeRange last = checkpointWindow(times.size(), at, checkpoints, 1, 800'000, 20'020'000, idle_all, 0.0005);
    CHECK(last.t0 >= 862'000);
    CHECK(last.t1 <= 20'020'000);
    CHECK(last.t0 >= 15'000'000);
    // A minimum width (a fraction of the trace) around a lone mark.
    const std::vector<std::int64_t> lone = {100'000'000};
    const std::vector<std::int64_t> one = {10'000'000};
    auto at_lone = [&](std::size_t i) { return lone[i]; };
    const TimeRange alone = checkpointWindow(1, at_lone, lone, 0, 0, 200'000'000, idle_all, 0.005);
    CHECK(alone.span() == Approx(1'000'000));
    CHECK((alone.t0 + alone.t1) / 2 == Approx(100'000'000));
    (void)one;
    // Lesson 10's shape: a thread blocked 8 ms at a time (no events, but a
    // fiber runs: busy), rounds of it up to the next checkpoint: one burst.
    std::vector<std::int64_t> phase;
    std::vector<TimeRange> busy;
    for (int round = 0; round < 6; ++round) {
        const std::int64_t t = 1'000'000 + round * 8'200'000;
        phase.push_back(t);
        phase.push_back(t + 8'000'000);
        busy.push_back({static_cast<double>(t), static_cast<double>(t + 8'000'000)});
    }
    phase.push_back(60'000'000); // the next checkpoint
    auto at_phase = [&](std::size_t i) { return phase[i]; };
    const std::vector<std::int64_t> marks = {1'000'000, 60'000'000};
    const TimeRange round_trip = checkpointWindow(phase.size(), at_phase, marks, 0, 0, 61'000'000, mergeRanges(busy), 0.005);
    CHECK(round_trip.t0 == Approx(1'000'000));
    CHECK(round_trip.t1 >= 1'000'000 + 5 * 8'200'000 + 8'000'000);
    // The same events with nothing running: the 8 ms gaps are pauses, the window stays at the first event pair.
    const TimeRange paused = checkpointWindow(phase.size(), at_phase, marks, 0, 0, 61'000'000, {}, 0.005);
    CHECK(paused.t1 < 10'000'000);
}

TEST_CASE("a checkpoint's window takes in both ends of the cause -> effect links in it", "[viewer][framing]") {
    const std::vector<TimeRange> idle_all;
    // Lesson 5's shape: an open submitted at 100 us, the thread parked
    // 140 us, its completion and resume at 240 us, the checkpoint just
    // after, the next one 100 us later.
    const std::vector<std::int64_t> times = {0, 2'000, 100'000, 240'000, 240'500, 241'000, 341'000};
    auto at = [&](std::size_t i) { return times[i]; };
    const std::vector<std::int64_t> marks = {241'000, 341'000};
    const TimeRange alone = checkpointWindow(times.size(), at, marks, 0, 0, 620'000, idle_all, 0.005);
    CHECK(alone.t0 > 100'000); // the submit is out of the burst
    const std::vector<TimeRange> open = {{100'000, 240'500}};
    const TimeRange linked = checkpointWindow(times.size(), at, marks, 0, 0, 620'000, idle_all, 0.005, open);
    CHECK(linked.t0 <= 100'000);
    CHECK(linked.t1 <= 341'000);
    // A cause in the window pulls in its effect (lesson 13's sleeps), unless
    // the stretch before the next checkpoint is that one's story.
    const std::vector<std::int64_t> sleeps = {100'000, 150'000, 200'000, 1'200'000, 2'200'000, 2'201'000};
    auto at_sleeps = [&](std::size_t i) { return sleeps[i]; };
    const std::vector<std::int64_t> sleep_marks = {100'000, 2'201'000};
    const std::vector<TimeRange> timers = {{150'000, 1'200'000}, {200'000, 2'200'000}};
    const std::vector<TimeRange> main_runs = {{100'000, 200'000}}; // the main fiber starts the sleepers
    const TimeRange forward = checkpointWindow(sleeps.size(), at_sleeps, sleep_marks, 0, 0, 3'000'000, main_runs, 0.001, timers);
    CHECK(forward.t1 >= 2'200'000);
    const TimeRange held = checkpointWindow(sleeps.size(), at_sleeps, sleep_marks, 0, 0, 3'000'000, main_runs, 0.001, timers, false);
    CHECK(held.t1 < 1'000'000);
    // Too far out to keep the burst readable: a 10 us burst's 20 ms race.
    const std::vector<TimeRange> race = {{0, 20'000'000}};
    const std::vector<std::int64_t> select = {0, 20'000'000, 20'005'000, 20'010'000};
    auto at_select = [&](std::size_t i) { return select[i]; };
    const TimeRange framed = checkpointWindow(select.size(), at_select, {20'010'000}, 0, 0, 20'020'000, idle_all, 0.0001, race);
    CHECK(framed.t0 >= 19'000'000);
    // Records that do not count (CPU samples every 20 ms) bridge no pause.
    const std::vector<std::int64_t> sampled = {0, 1'000, 2'000, 12'000'000, 20'000'000, 40'000'000, 42'000'000, 42'001'000};
    auto at_sampled = [&](std::size_t i) { return sampled[i]; };
    const std::vector<TimeRange> busy = {{0, 12'000'000}};
    const auto sample = [&](std::size_t i) { return i != 4 && i != 5; };
    const TimeRange bridged = checkpointWindow(sampled.size(), at_sampled, {0, 42'001'000}, 0, 0, 42'001'000, busy, 0.005);
    CHECK(bridged.t1 >= 42'000'000);
    const TimeRange burst = checkpointWindow(sampled.size(), at_sampled, {0, 42'001'000}, 0, 0, 42'001'000, busy, 0.005, {}, true, sample);
    CHECK(burst.t1 == Approx(12'000'000));
}

TEST_CASE("a checkpoint's window takes its own I/O's late completions and leaves out a pause at its edge", "[viewer][framing]") {
    // Lesson 12 on a loaded machine: a 50 us burst submits connects at 10
    // and 40 us, both threads wait, and they complete 170 us later; the
    // next checkpoint's story is told "Before" it, so effects stay out,
    // but a story's own I/O is its story.
    const std::vector<std::int64_t> times = {0, 10'000, 40'000, 50'000, 220'000, 221'000, 230'000, 400'000};
    auto at = [&](std::size_t i) { return times[i]; };
    const std::vector<std::int64_t> marks = {0, 400'000};
    const std::vector<TimeRange> busy = {{0, 50'000}, {220'000, 230'000}};
    const std::vector<TimeRange> connects = {{10'000, 220'000}, {40'000, 221'000}};
    const TimeRange held =
        checkpointWindow(times.size(), at, marks, 0, 0, 400'000, busy, 0.005, connects, false, {}, false);
    CHECK(held.t1 < 100'000);
    const TimeRange io =
        checkpointWindow(times.size(), at, marks, 0, 0, 400'000, busy, 0.005, connects, false, {}, false, connects);
    CHECK(io.t1 >= 221'000);
    // A timer's wait is no such thing: given as a link only, it stays out.
    const std::vector<TimeRange> sleep = {{10'000, 220'000}};
    CHECK(checkpointWindow(times.size(), at, marks, 0, 0, 400'000, busy, 0.005, sleep, false, {}, false, {}).t1 < 100'000);

    // trimToStory: lesson 2's game of 7 us, then main busy 60 us before the mark.
    const TimeRange game = trimToStory({0, 70'000}, {{0, 3'000}, {2'000, 7'000}}, 0);
    CHECK(game.t0 == 0);
    CHECK(game.t1 == 7'000);
    // A tail no longer than the story stays (lesson 2 on a quiet machine).
    CHECK(trimToStory({0, 10'000}, {{0, 3'000}, {2'000, 7'000}}, 0).t1 == 10'000);
    // A lead-in longer than the story goes too; a link crossing an edge touches it.
    const TimeRange late = trimToStory({0, 100'000}, {{80'000, 90'000}, {95'000, 150'000}}, 85'000);
    CHECK(late.t0 == 80'000);
    CHECK(late.t1 == 100'000);
    // ...but not past the checkpoint's mark, which stays in the window...
    CHECK(trimToStory({0, 100'000}, {{80'000, 90'000}, {95'000, 150'000}}, 65'000).t0 == 65'000);
    // ...unless the pause after it is longer than the story (lesson 5's
    // main, preempted between its mark and its first spawn): then it goes.
    CHECK(trimToStory({0, 100'000}, {{80'000, 90'000}, {95'000, 150'000}}, 30'000).t0 == 80'000);
    // ...and never where the lesson says the story begins there ("From A to B").
    CHECK(trimToStory({0, 100'000}, {{80'000, 90'000}, {95'000, 150'000}}, 30'000, false).t0 == 30'000);
    // A link begun before the window starts in it where it ends (a fiber
    // spawned before the mark waits until it runs: lesson 2's main,
    // preempted 140 us before it awaits): the lead-in is then dropped.
    CHECK(trimToStory({0, 100'000}, {{-50'000, 80'000}, {80'000, 90'000}}, 0).t0 == 80'000);
    CHECK(trimToStory({0, 100'000}, {{-50'000, 80'000}, {80'000, 90'000}}, 0, false).t0 == 0);
    // A mark after its story always stays (no label strip names a mark after the view).
    CHECK(trimToStory({0, 100'000}, {{0, 5'000}, {3'000, 10'000}}, 15'000).t1 == 15'000);
    CHECK(trimToStory({0, 100'000}, {{0, 5'000}, {3'000, 10'000}}, 60'000).t1 == 60'000);
    // endBeforeWaitUpTo: lesson 3's first burst slowed to 30 ms, then its
    // 30 ms sleep up to `workers parked` (at 60.5 ms): the window ends at the sleep.
    CHECK(endBeforeWaitUpTo({0, 70'000}, {{30'000, 60'000}}, 60'500).t1 == 30'000);
    // A timer that ends long before the next mark is the burst's own (lesson 1's greeters).
    CHECK(endBeforeWaitUpTo({0, 70'000}, {{10'000, 20'000}}, 60'500).t1 == 70'000);
    // One begun outside the window, or ending after the mark, is not this window's.
    CHECK(endBeforeWaitUpTo({0, 20'000}, {{30'000, 60'000}}, 60'500).t1 == 20'000);
    CHECK(endBeforeWaitUpTo({0, 70'000}, {{30'000, 61'000}}, 60'500).t1 == 70'000);
    // waitLeadingTo: the wait that leads up to a mark (lesson 3's 30 ms
    // sleep before `workers parked`), the latest such, begun after `from`.
    REQUIRE(waitLeadingTo({{30'000, 60'000}}, 0, 60'500));
    CHECK(waitLeadingTo({{30'000, 60'000}}, 0, 60'500)->t0 == 30'000);
    CHECK(waitLeadingTo({{10'000, 20'000}, {30'000, 60'000}, {59'000, 60'000}}, 0, 60'100)->t0 == 59'000);
    CHECK_FALSE(waitLeadingTo({{10'000, 20'000}}, 0, 60'500));  // ended long before the mark
    CHECK_FALSE(waitLeadingTo({{30'000, 61'000}}, 0, 60'500));  // ends after it
    CHECK_FALSE(waitLeadingTo({{30'000, 60'000}}, 31'000, 60'500)); // begun before `from`
    // firstLinks: a window of 100 hand-offs, one every 1 us, each a link of
    // 0.5 us, opens on its first 10: up to the 11th's cause. A wake-up read
    // late (a link from 2 us to 90 us) does not widen it.
    std::vector<TimeRange> rounds;
    for (int i = 0; i < 100; ++i) rounds.push_back({1'000.0 * i, 1'000.0 * i + 500});
    rounds.push_back({2'000, 90'000});
    CHECK(firstLinks({0, 100'000}, rounds, 10).t1 == 9'000); // the causes at 0, 1, 2, 2 (the late one), 3 ... 9 us, then 9 us
    CHECK(firstLinks({0, 100'000}, rounds, 200).t1 == 100'000);
    CHECK(firstLinks({50'000, 100'000}, rounds, 10).t1 == 60'000); // only the causes in the window count
    // Warm: a first round followed by a 30 us pause (a woken worker not yet
    // on a CPU) is left out when asked; the 10 rounds after it are shown.
    std::vector<TimeRange> cold = {{0, 500}};
    for (int i = 0; i < 100; ++i) cold.push_back({30'000 + 1'000.0 * i, 30'000 + 1'000.0 * i + 500});
    CHECK(firstLinks({0, 200'000}, cold, 10).t0 == 0);
    CHECK(firstLinks({0, 200'000}, cold, 10).t1 == 39'000);
    CHECK(firstLinks({0, 200'000}, cold, 10, true).t0 == 30'000);
    CHECK(firstLinks({0, 200'000}, cold, 10, true).t1 == 40'000);
    // Rounds evenly spaced have no cold start.
    CHECK(firstLinks({0, 100'000}, rounds, 10, true).t0 == 0);
    // Links touching the window at one instant only measure no story: kept whole.
    const TimeRange touch = trimToStory({0, 100'000}, {{-50'000, 0}}, 0);
    CHECK(touch.t0 == 0);
    CHECK(touch.t1 == 100'000);
    // No link: nothing to measure a pause against.
    CHECK(trimToStory({0, 100'000}, {{200'000, 300'000}}, 0).t1 == 100'000);
}

TEST_CASE("merged ranges", "[viewer][framing]") {
    const auto merged = mergeRanges({{5, 7}, {0, 2}, {1, 3}, {7, 9}, {20, 21}});
    REQUIRE(merged.size() == 3);
    CHECK(merged[0].t0 == 0);
    CHECK(merged[0].t1 == 3);
    CHECK(merged[1].t0 == 5);
    CHECK(merged[1].t1 == 9);
    CHECK(merged[2].t0 == 20);
}

TEST_CASE("the zoom history: commands each, a wheel burst once, back and forward", "[viewer][framing]") {
    ViewHistory history;
    TimeView view = viewOf(0, 100);
    TimeView dummy = view;
    CHECK_FALSE(history.back(dummy));
    // A command (fit, a checkpoint link, zoom to selection) records the view it leaves.
    history.command(view);
    view = viewOf(10, 20);
    // A burst of wheel ticks, 50 ms apart: one entry, the view before the burst.
    double now = 100.0;
    for (int tick = 0; tick < 10; ++tick) {
        history.interactive(view, now);
        view.zoomAt(15, 0.8);
        now += 0.05;
    }
    const TimeView after_wheel = view;
    CHECK(history.size() == 2);
    // A later burst (after a pause) is its own entry.
    now += 2.0;
    history.interactive(view, now);
    view.pan(1);
    CHECK(history.size() == 3);
    // Back walks them in reverse; forward returns.
    REQUIRE(history.back(view));
    CHECK(view.start == Approx(after_wheel.start));
    REQUIRE(history.back(view));
    CHECK(view.start == Approx(10));
    CHECK(view.end == Approx(20));
    REQUIRE(history.back(view));
    CHECK(view.start == Approx(0));
    CHECK(view.end == Approx(100));
    CHECK_FALSE(history.back(view));
    REQUIRE(history.forward(view));
    CHECK(view.start == Approx(10));
    CHECK(history.canForward());
    // A new command drops the forward entries.
    history.command(view);
    view = viewOf(50, 60);
    CHECK_FALSE(history.canForward());
    // The same view twice is one entry.
    const std::size_t before = history.size();
    history.command(view);
    history.command(view);
    CHECK(history.size() == before + 1);
    history.clear();
    CHECK_FALSE(history.canBack());
}

TEST_CASE("mark labels are laid out without overlaps, the ones without room counted", "[viewer][framing]") {
    // Lesson 2's four marks within a few pixels: each label 120 px wide.
    const std::vector<LabelBox> close = {{100, 120}, {104, 120}, {109, 120}, {111, 120}};
    const auto slots = layoutLabels(close, 3, 8, 30);
    REQUIRE(slots.size() == 4);
    CHECK(slots[0].row == 0);
    CHECK(slots[1].row == 1);
    CHECK(slots[2].row == 2);
    CHECK(slots[3].row == -1);              // no fourth row: elided ...
    CHECK(slots[3].elided_into == 2);       // ... into the last row's label,
    CHECK(slots[2].hidden == 1);            // which counts it
    CHECK(slots[2].width == Approx(150));   // and is wider by its badge.
    // Random labels: no two shown labels in a row overlap (badges included),
    // and every label is shown or counted exactly once.
    std::mt19937 rng(14);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<LabelBox> labels;
        const int n = 1 + static_cast<int>(rng() % 40);
        for (int i = 0; i < n; ++i)
            labels.push_back({static_cast<float>(rng() % 1500), static_cast<float>(20 + rng() % 200)});
        std::sort(labels.begin(), labels.end(), [](const LabelBox& a, const LabelBox& b) { return a.x < b.x; });
        const int rows = 1 + static_cast<int>(rng() % 3);
        const auto laid = layoutLabels(labels, rows, 6, 25);
        int shown = 0, counted = 0;
        for (std::size_t i = 0; i < laid.size(); ++i) {
            if (laid[i].row < 0) {
                REQUIRE(laid[i].elided_into >= 0);
                CHECK(laid[static_cast<std::size_t>(laid[i].elided_into)].row == rows - 1);
                continue;
            }
            ++shown;
            counted += laid[i].hidden;
            CHECK(laid[i].row < rows);
            for (std::size_t j = 0; j < i; ++j) {
                if (laid[j].row != laid[i].row) continue;
                const bool apart = labels[i].x >= labels[j].x + laid[j].width || labels[j].x >= labels[i].x + laid[i].width;
                CHECK(apart);
            }
        }
        CHECK(shown + counted == n);
    }
}

// ---------------------------------------------------------------------------
// What the OS did: the cpu-sample strip's data (model/cpu_samples.hpp)

TEST_CASE("cpu samples: each thread's intervals, their wait fraction and the hover sentence", "[viewer][cpu-samples]") {
    // Two worker threads (0, 1) and the writer's pseudo thread (2), whose
    // records name trace threads 0 and 1, as the recorder writes them.
    Trace trace = makeTrace(3, {
        ev(0, 0, EventKind::ThreadStart, 0, 0),
        ev(0, 1, EventKind::ThreadStart, 1, 0),
        ev(1'000'000, 2, EventKind::CpuSample, 0, 500'000, 0),          // thread 0's first: opens its list
        ev(1'000'000, 2, EventKind::CpuSample, 1, 900'000, 10'000),     // thread 1's first
        ev(21'000'000, 2, EventKind::CpuSample, 0, 16'900'000, 3'100'000),
        ev(21'000'000, 2, EventKind::CpuSample, 1, 20'000'000, 0),
        ev(41'000'000, 2, EventKind::CpuSample, 0, 0, 0),
        ev(41'000'000, 2, EventKind::CpuSample, 7, 1, 1),               // a thread the trace has not: ignored
        ev(50'000'000, 0, EventKind::ThreadStop),
        ev(50'000'000, 1, EventKind::ThreadStop),
    });
    trace.threads[2].worker = -1; // the pseudo thread has no thread-start
    trace.threads[2].name = "thread 2";
    const CpuSamples samples = buildCpuSamples(trace);
    REQUIRE(samples.of(2) == nullptr); // the writer itself is not described
    const auto* zero = samples.of(0);
    const auto* one = samples.of(1);
    REQUIRE(zero);
    REQUIRE(one);
    // A thread's first sample counts from its first record (here its thread-start at 0).
    REQUIRE(zero->size() == 3);
    REQUIRE(one->size() == 2);
    CHECK((*zero)[0].start == 0);
    CHECK((*zero)[0].end == 1'000'000);
    CHECK((*zero)[1].start == 1'000'000);
    CHECK((*zero)[1].end == 21'000'000);
    CHECK((*zero)[1].runqueue_wait_ns == 3'100'000);
    CHECK((*zero)[1].waitFraction() == Approx(3.1 / 20));
    CHECK(trace.events[(*zero)[1].event].kind == EventKind::CpuSample);
    CHECK((*zero)[2].start == 21'000'000);
    CHECK((*zero)[2].waitFraction() == 0);
    CHECK((*one)[0].waitFraction() == Approx(0.01));
    CHECK((*one)[1].waitFraction() == 0);

    // Hover: the sample under a time, and its sentence.
    CHECK(cpuSampleAt(*zero, -1) == nullptr);
    CHECK(cpuSampleAt(*zero, 500'000) == &(*zero)[0]);
    CHECK(cpuSampleAt(*zero, 1'000'000) == &(*zero)[1]);
    CHECK(cpuSampleAt(*zero, 20'999'999) == &(*zero)[1]);
    CHECK(cpuSampleAt(*zero, 21'000'000) == &(*zero)[2]);
    CHECK(cpuSampleAt(*zero, 41'000'000) == nullptr);
    const std::string text = describeCpuSample((*zero)[1]);
    INFO(text);
    CHECK(text.find("the kernel ran another thread here") == 0);
    CHECK(text.find("waited 3.10 ms of 20.00 ms for a CPU") != std::string::npos);
    CHECK(describeCpuSample((*one)[1]).find("never waited") != std::string::npos);

    // The analysis and the describe/hit code take the kind in their stride:
    // the pseudo thread is a lane of cpu-samples only, the workers' are not.
    const Timeline tl = buildTimeline(trace);
    std::size_t sampler_lanes = 0;
    for (const ThreadLane& lane : tl.threads) {
        sampler_lanes += isCpuSamplerLane(lane);
        if (isCpuSamplerLane(lane)) CHECK(lane.thread == 2);
    }
    CHECK(sampler_lanes == 1);
    for (std::uint32_t i = 0; i < trace.events.size(); ++i)
        if (trace.events[i].kind == EventKind::CpuSample) CHECK_FALSE(explain(tl, trace, i).text.empty());
}

// Source locations (format version 4): a mark's or zone's file and line is
// the source-location record after it on its thread, read back on demand.
TEST_CASE("sourceLineAt: the running fiber's latest mark or zone says where it is", "[model][source-location]") {
    using K = EventKind;
    // Strings: 1 "a", 2 "b", 3 "c", 4 the lesson's main.cpp, 5 a runtime file.
    const Trace trace = makeTrace(2,
                                  {
                                      ev(0, 0, K::ThreadStart, 0, 0),
                                      ev(0, 1, K::ThreadStart, 1, 0),
                                      ev(10, 0, K::Switch, 0, 1, 0, sw(SwitchReason::Idle)),
                                      ev(20, 0, K::Mark, 1),
                                      ev(20, 1, K::Mark, 3), // another thread's mark at the same time, between them
                                      ev(20, 0, K::SourceLocation, 4, 12),
                                      ev(30, 0, K::ZoneBegin, 2),
                                      ev(30, 0, K::SourceLocation, 4, 15),
                                      ev(40, 0, K::Switch, 1, 2, 0, sw(SwitchReason::Yield)),
                                      ev(50, 0, K::Mark, 3),
                                      ev(50, 0, K::SourceLocation, 5, 99),
                                      ev(60, 0, K::Switch, 2, 1, 0, sw(SwitchReason::Yield)),
                                      ev(70, 0, K::ZoneEnd),
                                      ev(80, 0, K::Switch, 1, 0, 0, sw(SwitchReason::Finish)),
                                      ev(90, 0, K::Mark, 2), // the idle loop's, and without a location
                                  },
                                  {"a", "b", "c", "/src/lessons/01-hello-fibers/main.cpp", "/src/runtime/src/x.cpp"});
    const Timeline tl = buildTimeline(trace);
    const auto at = [&](std::uint32_t thread, std::int64_t time, std::string_view suffix = {}) {
        return sourceLineAt(trace, tl, thread, time, suffix);
    };
    CHECK_FALSE(at(0, 15));                 // fiber 1 runs, but has marked nothing yet
    REQUIRE(at(0, 20));                     // at the mark's own time
    CHECK(at(0, 20)->line == 12);
    CHECK(at(0, 20)->file == "/src/lessons/01-hello-fibers/main.cpp");
    CHECK(at(0, 20)->fiber == 1);
    CHECK(at(0, 25)->line == 12);
    CHECK(at(0, 35)->line == 15);           // the zone-begin is later
    CHECK(at(0, 55)->line == 99);           // fiber 2 runs now: its own mark
    CHECK_FALSE(at(0, 45));                 // fiber 2 before its mark: fiber 1's marks are not its
    CHECK_FALSE(at(0, 55, "/main.cpp"));    // fiber 2 marked only in the runtime
    CHECK(at(0, 65)->line == 15);           // fiber 1 again
    CHECK(at(0, 65, "01-hello-fibers/main.cpp")->line == 15);
    CHECK_FALSE(at(0, 85));                 // the idle loop runs: no fiber
    CHECK_FALSE(at(1, 25));                 // thread 1 runs no fiber
    CHECK(at(kAnyThread, 55)->line == 99);  // any fiber's latest
    CHECK(at(kAnyThread, 55, "/main.cpp")->line == 15);
    CHECK(at(kAnyThread, 95, "/main.cpp")->line == 15); // the last mark has no location: the one before
    // Per record: the mark's location, none for the unlocated one or another kind.
    REQUIRE(sourceLineOf(trace, tl, 3));
    CHECK(sourceLineOf(trace, tl, 3)->line == 12);
    CHECK_FALSE(sourceLineOf(trace, tl, 4)); // thread 1's mark: its thread has no location after it
    CHECK_FALSE(sourceLineOf(trace, tl, 2)); // a switch
    CHECK_FALSE(sourceLineOf(trace, tl, static_cast<std::uint32_t>(trace.events.size() - 1)));
}
