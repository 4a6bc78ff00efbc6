// The validator (validate.hpp): a replay of each fiber's and each thread's
// state, record by record in time order, with one check per rule. (The
// model's own replay, timeline_replay.cpp, reads the same records to build
// what the tools and the viewer show; this one checks them.)
//
// [SECTION] The rules (kRules: FORMAT.md "Validation rules" quotes them)
// [SECTION] The replayed state
// [SECTION] check(): is this record consistent with the state before it?
// [SECTION] apply(): the record's effect on the state
// [SECTION] The pass: ties between threads, the report
//
// Why check and apply are apart: records of different threads stamped with
// the same time have no causal order in the file (the reader breaks ties
// by thread number), so a record whose check fails is tried again after the
// other records of its instant; only one that fails whatever the order at
// its instant is a violation. check() is therefore pure.
//
// What the replay knows of each fiber: where it is (made ready and not yet
// placed "woken" on a thread, in a thread's queue word, deque, ring or
// run_next, in the loop's overflow list, running on a thread, waiting for
// something, finished), and for a wait, what ends it. Fibers that existed
// before the recording began are "unknown" until a record says where they
// are: their first record is believed.
#include "fiberscope/analysis/validate.hpp"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "fiberscope/analysis/state_at.hpp"
#include "fiberscope/analysis/timeline.hpp"
#include "fiberscope/trace_vocabulary.hpp"

namespace fiberscope::analysis {

using trace::Event;
using trace::EventKind;
using trace::SwitchReason;

// [SECTION] The rules ---------------------------------------------------------

const RuleInfo kRules[kRuleCount] = {
    {Rule::SwitchFrom, "switch-from", "A switch's `from` is the fiber its thread runs (0: its idle loop)."},
    {Rule::RunNotReady, "run-not-ready",
     "A fiber is switched to only after a record made it ready (created, scheduled, woken, stolen) and placed it "
     "where this thread takes it from."},
    {Rule::RunQueuedElsewhere, "run-queued-elsewhere",
     "A fiber queued on one thread runs there, or on a thread whose steal record took it first."},
    {Rule::RunTwice, "run-twice", "No fiber runs on two threads at once."},
    {Rule::AfterFinish, "after-finish",
     "After its fiber-finish a fiber is named only by its fiber-recycle and by records about others (await, cancel)."},
    {Rule::CreatedTwice, "created-twice", "A fiber is created once."},
    {Rule::FinishedTwice, "finished-twice", "A fiber finishes once."},
    {Rule::ScheduleNotReady, "schedule-not-ready",
     "A schedule places `count` fibers that records on its thread made ready (created, yielded, woken) and that "
     "no queue holds; a fiber that awaited one whose fiber-finish came first is made ready by a schedule on its "
     "own thread or on the finisher's."},
    {Rule::StealSource, "steal-source",
     "A steal takes fibers from where its record says: the victim's queue word (steal), the older half of its ring "
     "(steal-half), its deque's oldest or its run_next (steal-one)."},
    {Rule::WakeNotWaiting, "wake-not-waiting",
     "A record that ends a wait (complete, condition-wake, mutex-handoff, mutex-taken, cancel-delivered) names a "
     "fiber in that wait."},
    {Rule::WakeupUnmatched, "wakeup-unmatched",
     "A wakeup-received or wakeup-bounced answers an earlier wakeup-sent between the same two workers."},
    {Rule::ParkPairs, "park-pairs",
     "A thread parks from its idle loop, not already parked, and unparks only after it parked."},
    {Rule::SearchPairs, "search-pairs", "A search begins outside a search and ends inside one, on its thread."},
    {Rule::ZonePairs, "zone-pairs", "A zone-end closes a zone the running fiber opened."},
    {Rule::MutexOwner, "mutex-owner",
     "A mutex is handed over by a fiber that holds it: not by the fiber it goes to, nor by one waiting for it."},
    {Rule::RwLockHolds, "rwlock-holds",
     "An rwlock is held by one writer or by readers, never both: write-locked only when no hold is open, "
     "read-locked only when no writer holds it."},
    {Rule::CompleteNoSubmit, "complete-no-submit", "A completion answers an operation its fiber submitted."},
    {Rule::Truth, "truth",
     "Where a truth record says what the runtime knew (a checking recording), the replay agrees: the fiber it took "
     "was in its queues, and its queues were empty when it said so."},
    {Rule::Backdated, "backdated",
     "The runtime never stamps a record earlier than its thread's previous record (the writer would have moved it "
     "later, out of causal order)."},
};

const RuleInfo& ruleInfo(Rule rule) noexcept { return kRules[static_cast<std::size_t>(rule)]; }

namespace {

// [SECTION] The replayed state -----------------------------------------------

constexpr std::uint32_t kNoThread = UINT32_MAX;
constexpr std::uint32_t kNoRecord = UINT32_MAX;

enum class Where : std::uint8_t {
    Unknown,  // not seen yet (or existed before the recording)
    Woken,    // made ready on `thread`, not yet placed in a queue
    Word,     // in `thread`'s queue word (the seed's queue; a scaling worker's first work)
    Deque,    // in `thread`'s deque of new work (scaling)
    Ring,     // in `thread`'s ring of yielders (scaling)
    RunNext,  // in `thread`'s run_next slot (scaling)
    Overflow, // in the loop's overflow list (scaling)
    Running,  // running on `thread`
    Leaving,  // switched away with reason finish: its fiber-finish follows
    Waiting,  // waiting (`wait` says for what)
    Finished,
};

enum class Wait : std::uint8_t { None, Io, Await, Select, Mutex, Condition, Exit };

const char* whereName(Where w) {
    switch (w) {
    case Where::Unknown: return "unknown";
    case Where::Woken: return "made ready";
    case Where::Word: return "in the queue word of";
    case Where::Deque: return "in the deque of";
    case Where::Ring: return "in the ring of";
    case Where::RunNext: return "in run_next of";
    case Where::Overflow: return "in the overflow list";
    case Where::Running: return "running on";
    case Where::Leaving: return "finishing on";
    case Where::Waiting: return "waiting";
    case Where::Finished: return "finished";
    }
    return "?";
}
const char* waitName(Wait w) {
    switch (w) {
    case Wait::None: return "nothing";
    case Wait::Io: return "an operation";
    case Wait::Await: return "another fiber to finish";
    case Wait::Select: return "the first of several fibers";
    case Wait::Mutex: return "a mutex";
    case Wait::Condition: return "a condition";
    case Wait::Exit: return "the loop's shutdown";
    }
    return "?";
}

bool queued(Where w) { return w == Where::Word || w == Where::Deque || w == Where::Ring || w == Where::RunNext; }

struct Op {
    std::uint8_t opcode = 0;
    std::uint32_t thread = kNoThread; // whose ring (or poller) holds it
};

struct FiberState {
    Where where = Where::Unknown;
    Wait wait = Wait::None;
    std::uint32_t thread = kNoThread; // Woken/queued/Running/Waiting: which thread
    std::uint32_t since = kNoRecord;  // the record that put it here
    std::uint64_t object = 0;         // Mutex/Condition: the object; Await: the fiber awaited
    std::uint64_t next_object = 0;    // set by mutex-contended / condition-wait / await before the switch
    std::vector<std::uint64_t> select_targets; // await records before a select switch
    std::vector<Op> ops;              // operations in flight
    bool yielded = false;             // Woken by a yield or hand-off switch (scaling: its ring)
    // Woken by the first finish record of one of the futures it selects
    // on: which finisher's claim won is told only by who then schedules it
    // or switches straight to it (another finisher's, on another thread,
    // may have: its record is stamped before its claim, the first one's
    // finish before its late claim).
    bool select_woken = false;
    std::uint32_t word_entry = 0;     // counts its placements in a queue word (ThreadReplay::word)
    bool early_complete = false;      // an operation completed on another thread while it ran
    bool created = false;             // a fiber-create named it
    bool finished = false;
    std::uint32_t finish_record = kNoRecord;
    // Waiting for a fiber (await or select) whose fiber-finish came first:
    // the threads whose schedule ends the wait. The finisher records
    // fiber-finish before the exchange that publishes "finished", so an
    // awaiter that registers between the two is scheduled by the finisher's
    // finish task, on the finisher's thread; one that registers after it
    // by its own handler, on its own thread. Which, only that schedule says.
    std::vector<std::uint32_t> wake_threads;
};

struct ThreadReplay {
    std::int64_t worker = -1;
    bool known = false;        // `running` is known (after the first switch, park or unpark)
    std::uint64_t running = 0; // fiber, 0 = the idle loop
    bool parked = false;
    bool searching = false;
    bool stopped = false;
    std::uint32_t counts[5] = {}; // fibers in Word, Deque, Ring, RunNext (by Where - Word)
    // The queue word's fibers, top (next to pop) first: (fiber, its
    // word_entry when placed); an entry whose fiber has moved on since is
    // stale and skipped (wordEntryLive).
    std::deque<std::pair<std::uint64_t, std::uint32_t>> word;
    std::vector<std::uint64_t> pending; // fibers woken here, in order (stale entries skipped; compacted)
    std::size_t pending_compact_at = 1024; // pending's size that triggers its next compaction
    std::uint64_t run_next = 0;         // the fiber in its run_next slot (0: none)
    std::uint32_t last_switch = kNoRecord; // its latest switch record
};

struct Replay {
    const trace::Trace& trace;
    bool scaling = false;
    bool old_format = false; // version 6 or older: some rules are looser (FORMAT.md)
    bool epoll = false;
    std::unordered_map<std::uint64_t, FiberState> fibers;
    std::vector<ThreadReplay> threads;
    std::unordered_map<std::int64_t, std::uint32_t> thread_of_worker;
    std::map<std::pair<std::int64_t, std::int64_t>, std::deque<std::uint32_t>> wakeups; // (sender, target) -> sends
    std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> zones;  // fiber (or ~thread for idle) -> open zones
    // A condition's waiters in order of waiting, with entries whose fiber
    // no longer waits on it (signaled, canceled, timed out) left stale and
    // counted: dropped at a broadcast, or once they are half the list.
    struct ConditionWaiters {
        std::vector<std::uint64_t> fibers;
        std::size_t stale = 0;
    };
    std::unordered_map<std::uint64_t, ConditionWaiters> condition_waiters;
    std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> awaiting;          // fiber -> fibers awaiting it
    std::uint64_t overflow = 0;
    // Each rwlock's open holds, as its records say (a hold from before the
    // recording is not known: its unlock finds none, and is believed).
    struct RwLockHolds {
        std::uint64_t writer = 0;
        std::uint32_t writer_record = kNoRecord;
        std::uint64_t readers = 0;
        std::uint32_t reader_record = kNoRecord; // the latest read-locked
    };
    std::unordered_map<std::uint64_t, RwLockHolds> rwlocks;

    explicit Replay(const trace::Trace& t) : trace(t) {
        threads.resize(t.threads.size());
        for (std::uint32_t i = 0; i < t.threads.size(); ++i) {
            threads[i].worker = t.threads[i].worker;
            if (t.threads[i].worker >= 0) thread_of_worker.try_emplace(t.threads[i].worker, i);
        }
        old_format = t.header.version <= 6;
        epoll = t.header.backend == "epoll";
        scaling = trace::ranScalingPolicy(t);
    }

    FiberState* find(std::uint64_t fiber) {
        auto it = fibers.find(fiber);
        return it == fibers.end() ? nullptr : &it->second;
    }
    const FiberState* find(std::uint64_t fiber) const {
        auto it = fibers.find(fiber);
        return it == fibers.end() ? nullptr : &it->second;
    }
    FiberState& at(std::uint64_t fiber) { return fibers[fiber]; }
    std::uint32_t threadOf(std::int64_t worker) const {
        auto it = thread_of_worker.find(worker);
        return it == thread_of_worker.end() ? kNoThread : it->second;
    }

    // Moves `f` to `where` on `thread`, keeping the queue counts.
    void place(std::uint64_t id, FiberState& f, Where where, std::uint32_t thread, std::uint32_t record) {
        if (queued(f.where) && f.thread < threads.size()) --threads[f.thread].counts[static_cast<int>(f.where) - static_cast<int>(Where::Word)];
        if (f.where == Where::RunNext && f.thread < threads.size() && threads[f.thread].run_next == id) threads[f.thread].run_next = 0;
        if (f.where == Where::Overflow && overflow) --overflow;
        f.where = where;
        f.thread = thread;
        f.since = record;
        if (where != Where::Waiting) f.wait = Wait::None, f.wake_threads.clear();
        if (queued(where) && thread < threads.size())
            ++threads[thread].counts[static_cast<int>(where) - static_cast<int>(Where::Word)];
        if (where == Where::Overflow) ++overflow;
        if (where == Where::RunNext && thread < threads.size()) threads[thread].run_next = id;
        if (where == Where::Woken && thread < threads.size()) {
            ThreadReplay& th = threads[thread];
            th.pending.push_back(id);
            // Entries whose fiber has moved on are dropped now and then:
            // amortized O(1) a push, and the scan in scheduleMembers stays short.
            if (th.pending.size() >= th.pending_compact_at) {
                std::vector<std::uint64_t> live;
                std::unordered_set<std::uint64_t> seen;
                for (std::size_t k = th.pending.size(); k-- > 0;) {
                    const FiberState* g = find(th.pending[k]);
                    if (g && g->where == Where::Woken && g->thread == thread && seen.insert(th.pending[k]).second)
                        live.push_back(th.pending[k]);
                }
                std::reverse(live.begin(), live.end());
                th.pending.swap(live);
                th.pending_compact_at = std::max<std::size_t>(1024, 2 * th.pending.size());
            }
        }
        if (where != Where::Woken) f.yielded = false, f.select_woken = false;
    }
    bool wordEntryLive(const std::pair<std::uint64_t, std::uint32_t>& entry, std::uint32_t thread) const {
        const FiberState* f = find(entry.first);
        return f && f->where == Where::Word && f->thread == thread && f->word_entry == entry.second;
    }
    // Puts `ids` on top of `thread`'s word, the first on top.
    void pushWord(std::uint32_t thread, const std::vector<std::uint64_t>& ids, std::uint32_t record) {
        std::vector<std::pair<std::uint64_t, std::uint32_t>> entries;
        for (std::uint64_t id : ids) {
            FiberState& f = at(id);
            place(id, f, Where::Word, thread, record);
            entries.emplace_back(id, ++f.word_entry);
        }
        auto& word = threads[thread].word;
        word.insert(word.begin(), entries.begin(), entries.end());
        compactWord(thread);
    }
    // Drops the word's stale entries once they outnumber the live ones
    // (fibers popped, stolen or moved on leave theirs behind): a steal's
    // search and the word itself stay proportional to what it holds.
    void compactWord(std::uint32_t thread) {
        auto& word = threads[thread].word;
        const std::size_t live = threads[thread].counts[0];
        if (word.size() < 2 * live + 64) return;
        std::erase_if(word, [&](const auto& entry) { return !wordEntryLive(entry, thread); });
    }
    void wake(std::uint64_t id, FiberState& f, std::uint32_t thread, std::uint32_t record, bool yielded = false) {
        place(id, f, Where::Woken, thread, record);
        f.yielded = yielded;
    }
};

std::int64_t ticksToNs(const Replay& r, std::uint64_t ticks) {
    const double per_second = static_cast<double>(r.trace.header.ticks_per_second ? r.trace.header.ticks_per_second : 1'000'000'000);
    return static_cast<std::int64_t>(static_cast<double>(ticks) * 1e9 / per_second);
}

std::string fiberText(std::uint64_t fiber) { return fiber == 0 ? std::string("the idle loop") : "fiber " + std::to_string(fiber); }

std::string threadText(const Replay& r, std::uint32_t thread) {
    if (thread >= r.threads.size()) return "thread ?";
    const std::int64_t w = r.threads[thread].worker;
    return w >= 0 ? "worker " + std::to_string(w) : "trace thread " + std::to_string(thread);
}

// Where a fiber is, in words: "in the queue word of worker 1", "waiting for a mutex".
std::string placeText(const Replay& r, const FiberState& f) {
    std::string s = whereName(f.where);
    if (f.where == Where::Waiting) return s + " for " + waitName(f.wait) + (f.thread != kNoThread ? " (it left " + threadText(r, f.thread) + ")" : "");
    if (f.where == Where::Woken) return s + " on " + threadText(r, f.thread);
    if (queued(f.where) || f.where == Where::Running || f.where == Where::Leaving) return s + " " + threadText(r, f.thread);
    return s;
}

// [SECTION] check() ---------------------------------------------------------------

struct Finding {
    bool found = false;
    Rule rule{};
    std::uint64_t fiber = 0;
    std::uint32_t related = kNoRecord;
    std::string what;
};
Finding finding(Rule rule, std::uint64_t fiber, std::string what, std::uint32_t related = kNoRecord) {
    return Finding{true, rule, fiber, related, std::move(what)};
}

// A fiber named by a record that acts on it (runs it, queues it, wakes it) must not have finished.
Finding afterFinish(const Replay& r, std::uint64_t fiber, const char* what) {
    const FiberState* f = r.find(fiber);
    if (f && f->finished)
        return finding(Rule::AfterFinish, fiber, fiberText(fiber) + " finished, then " + what, f->finish_record);
    return {};
}

// Can thread `t` run fiber `to` now (a switch)?
Finding checkRun(const Replay& r, std::uint32_t t, std::uint64_t from, std::uint64_t to, SwitchReason reason) {
    if (to == 0) return {};
    const FiberState* f = r.find(to);
    if (!f || f->where == Where::Unknown) return {};
    if (Finding x = afterFinish(r, to, "it was switched to"); x.found) return x;
    const std::string who = fiberText(to) + " ran on " + threadText(r, t);
    switch (f->where) {
    case Where::Running:
    case Where::Leaving:
        if (f->thread == t) return {}; // (a switch to itself)
        return finding(Rule::RunTwice, to, who + " while it was running on " + threadText(r, f->thread), f->since);
    case Where::Woken:
        if (f->thread == t) return {};
        // A finisher of its select, on another thread, won the claim and
        // switched straight to it (FiberState::select_woken).
        if (f->select_woken && reason == SwitchReason::Finish &&
            std::find(f->select_targets.begin(), f->select_targets.end(), from) != f->select_targets.end())
            return {};
        return finding(Rule::RunNotReady, to,
                       who + " but was made ready on " + threadText(r, f->thread) + " and no record placed it here",
                       f->since);
    case Where::Word:
    case Where::Deque:
    case Where::Ring:
    case Where::RunNext:
        if (f->thread == t) return {};
        return finding(Rule::RunQueuedElsewhere, to, who + " while it was " + placeText(r, *f) + " (no steal took it)",
                       f->since);
    case Where::Overflow:
        return finding(Rule::RunQueuedElsewhere, to, who + " while it was in the overflow list (no record took it)", f->since);
    case Where::Waiting:
        // A finishing fiber hands its thread straight to its awaiter.
        if (reason == SwitchReason::Finish && (f->wait == Wait::Await || f->wait == Wait::Select)) {
            if (f->wait == Wait::Select && f->select_targets.empty()) return {};
            if (f->wait == Wait::Await && f->object == from) return {};
            if (f->wait == Wait::Select &&
                std::find(f->select_targets.begin(), f->select_targets.end(), from) != f->select_targets.end())
                return {};
        }
        if (f->wait == Wait::Exit) return {};
        return finding(Rule::RunNotReady, to, who + " while it was waiting for " + std::string(waitName(f->wait)) +
                                                   " and no record ended that wait",
                       f->since);
    default: return {};
    }
}

// Is `fiber` ready to be placed by a schedule record on thread `t`?
Finding checkSchedulable(const Replay& r, std::uint32_t t, std::uint64_t fiber) {
    const FiberState* f = r.find(fiber);
    if (!f || f->where == Where::Unknown) return {};
    if (Finding x = afterFinish(r, fiber, "a schedule placed it"); x.found) return x;
    if (f->where == Where::Woken) return {};
    // A fiber the spawner displaced from run_next goes on its queue.
    if (f->where == Where::RunNext && f->thread == t) return {};
    if (f->where == Where::Waiting && f->wait == Wait::Select && f->select_targets.empty()) return {}; // (targets unrecorded)
    // Its wait's target had finished: its own handler or the finisher's finish task schedules it.
    if (f->where == Where::Waiting && std::find(f->wake_threads.begin(), f->wake_threads.end(), t) != f->wake_threads.end())
        return {};
    std::string why = placeText(r, *f);
    return finding(Rule::ScheduleNotReady, fiber,
                   "a schedule on " + threadText(r, t) + " placed " + fiberText(fiber) + " while it was " + why, f->since);
}

// The fibers a schedule record on thread `t` places: its head, then the
// next count - 1 fibers woken on `t` after it.
bool scheduleMembers(const Replay& r, std::uint32_t t, std::uint64_t head, std::uint64_t count,
                     std::vector<std::uint64_t>& out) {
    out.clear();
    out.push_back(head);
    if (count <= 1) return true;
    const auto& pending = r.threads[t].pending;
    // The head's latest entry: earlier ones are stale (it was woken before).
    std::size_t k = pending.size();
    while (k > 0 && pending[k - 1] != head) --k;
    if (k == 0) return false;
    --k;
    std::unordered_set<std::uint64_t> seen{head};
    for (++k; k < pending.size() && out.size() < count; ++k) {
        const std::uint64_t id = pending[k];
        const FiberState* f = r.find(id);
        if (!f || f->where != Where::Woken || f->thread != t || !seen.insert(id).second) continue;
        out.push_back(id);
    }
    return out.size() == count;
}

Finding check(const Replay& r, const Event& e, std::uint32_t i) {
    (void)i;
    const std::uint32_t t = e.thread;
    const ThreadReplay& th = r.threads[t];
    switch (e.kind) {
    case EventKind::Switch: {
        const std::uint64_t from = e.arg[0], to = e.arg[1];
        if (th.known && th.running != from)
            return finding(Rule::SwitchFrom, from,
                           "a switch on " + threadText(r, t) + " says it left " + fiberText(from) + ", but it ran " +
                               fiberText(th.running));
        return checkRun(r, t, from, to, static_cast<SwitchReason>(e.small));
    }
    case EventKind::FiberCreate:
        if (const FiberState* f = r.find(e.arg[0]); f && (f->created || f->where != Where::Unknown))
            return finding(Rule::CreatedTwice, e.arg[0], fiberText(e.arg[0]) + " was created again (it was " + placeText(r, *f) + ")", f->since);
        return {};
    case EventKind::FiberFinish:
        if (const FiberState* f = r.find(e.arg[0]); f && f->finished)
            return finding(Rule::FinishedTwice, e.arg[0], fiberText(e.arg[0]) + " finished twice", f->finish_record);
        return {};
    case EventKind::Schedule: {
        if (Finding x = checkSchedulable(r, t, e.arg[0]); x.found) return x;
        std::vector<std::uint64_t> members;
        if (!scheduleMembers(r, t, e.arg[0], e.arg[1], members))
            return finding(Rule::ScheduleNotReady, e.arg[0],
                           "a schedule on " + threadText(r, t) + " placed " + std::to_string(e.arg[1]) + " fibers from " +
                               fiberText(e.arg[0]) + " on, but only " + std::to_string(members.size()) +
                               " were made ready here and not yet placed");
        if (e.small != static_cast<std::uint8_t>(trace::ScheduleHow::OwnQueue) &&
            e.small != static_cast<std::uint8_t>(trace::ScheduleHow::RunNext) && r.threadOf(static_cast<std::int64_t>(e.arg[2])) == kNoThread &&
            r.trace.header.complete)
            return finding(Rule::ScheduleNotReady, e.arg[0],
                           "a schedule on " + threadText(r, t) + " gave fibers to worker " + std::to_string(e.arg[2]) +
                               ", which never recorded anything");
        return {};
    }
    case EventKind::Steal: {
        const std::uint32_t victim = r.threadOf(static_cast<std::int64_t>(e.arg[1]));
        const FiberState* f = r.find(e.arg[0]);
        if (!f || f->where == Where::Unknown) return {};
        if (f->where != Where::Word || f->thread != victim)
            return finding(Rule::StealSource, e.arg[0],
                           threadText(r, t) + " stole worker " + std::to_string(e.arg[1]) + "'s queue word headed by " +
                               fiberText(e.arg[0]) + ", which was " + placeText(r, *f),
                           f->since);
        return {};
    }
    case EventKind::StealHalf: {
        const std::uint32_t victim = r.threadOf(static_cast<std::int64_t>(e.arg[1]));
        const FiberState* f = r.find(e.arg[0]);
        if (!f || f->where == Where::Unknown) return {};
        // Version 5 and 6 files wrote steal-half for a deque's oldest fiber too.
        const bool from_ring = f->where == Where::Ring || (r.old_format && f->where == Where::Deque);
        if (!from_ring || f->thread != victim)
            return finding(Rule::StealSource, e.arg[0],
                           threadText(r, t) + " took " + fiberText(e.arg[0]) + " from worker " + std::to_string(e.arg[1]) +
                               "'s ring (steal-half), but it was " + placeText(r, *f),
                           f->since);
        return {};
    }
    case EventKind::StealOne: {
        const std::uint32_t victim = r.threadOf(static_cast<std::int64_t>(e.arg[1]));
        const FiberState* f = r.find(e.arg[0]);
        if (!f || f->where == Where::Unknown) return {};
        const Where expected = e.small == static_cast<std::uint8_t>(trace::StealOneFrom::RunNext) ? Where::RunNext : Where::Deque;
        if (f->where != expected || f->thread != victim)
            return finding(Rule::StealSource, e.arg[0],
                           threadText(r, t) + " took " + fiberText(e.arg[0]) + " from worker " + std::to_string(e.arg[1]) +
                               "'s " + (expected == Where::RunNext ? "run_next" : "deque") + ", but it was " + placeText(r, *f),
                           f->since);
        return {};
    }
    case EventKind::Overflow: {
        const FiberState* f = r.find(e.arg[0]);
        if (!f || f->where == Where::Unknown) return {};
        if (e.small == static_cast<std::uint8_t>(trace::OverflowOp::Put)) {
            if ((f->where == Where::Ring || f->where == Where::Deque || f->where == Where::Woken) && f->thread == t) return {};
            return finding(Rule::StealSource, e.arg[0],
                           threadText(r, t) + " moved " + fiberText(e.arg[0]) + " to the overflow list, but it was " + placeText(r, *f),
                           f->since);
        }
        if (f->where != Where::Overflow)
            return finding(Rule::StealSource, e.arg[0],
                           threadText(r, t) + " took " + fiberText(e.arg[0]) + " from the overflow list, but it was " + placeText(r, *f),
                           f->since);
        return {};
    }
    case EventKind::WakeupReceived: {
        const auto key = std::make_pair(static_cast<std::int64_t>(e.arg[0]), th.worker);
        auto it = r.wakeups.find(key);
        if (it != r.wakeups.end() && !it->second.empty()) return {};
        // Old epoll files name a sender only as a hint (FORMAT.md).
        if (r.old_format && r.epoll) return {};
        return finding(Rule::WakeupUnmatched, 0,
                       threadText(r, t) + " received a wake-up from worker " + std::to_string(e.arg[0]) +
                           " that worker had not sent (or that was already received)");
    }
    case EventKind::WakeupBounced: {
        const auto key = std::make_pair(th.worker, static_cast<std::int64_t>(e.arg[0]));
        auto it = r.wakeups.find(key);
        if (it != r.wakeups.end() && !it->second.empty()) return {};
        return finding(Rule::WakeupUnmatched, 0,
                       threadText(r, t) + " says its wake-up to worker " + std::to_string(e.arg[0]) +
                           " bounced, but it had none on the way");
    }
    case EventKind::Park:
        if (th.parked) return finding(Rule::ParkPairs, 0, threadText(r, t) + " parked while parked");
        if (th.known && th.running != 0)
            return finding(Rule::ParkPairs, th.running, threadText(r, t) + " parked while it ran " + fiberText(th.running));
        return {};
    case EventKind::Unpark:
        if (th.known && !th.parked) return finding(Rule::ParkPairs, 0, threadText(r, t) + " unparked without having parked");
        return {};
    case EventKind::Search:
        if (e.small == static_cast<std::uint8_t>(trace::SearchOp::Begin) ? th.searching : !th.searching)
            return finding(Rule::SearchPairs, 0,
                           threadText(r, t) + (th.searching ? " began a search inside a search" : " ended a search it had not begun"));
        return {};
    case EventKind::ZoneEnd: {
        const std::uint64_t key = th.running ? th.running : ~static_cast<std::uint64_t>(t);
        auto it = r.zones.find(key);
        if (th.known && (it == r.zones.end() || it->second.empty()))
            return finding(Rule::ZonePairs, th.running, "a zone-end on " + threadText(r, t) + " with no zone open on " + fiberText(th.running));
        return {};
    }
    case EventKind::Complete: {
        const FiberState* f = r.find(e.arg[0]);
        if (!f || f->where == Where::Unknown) return {};
        if (Finding x = afterFinish(r, e.arg[0], "an operation of it completed"); x.found) return x;
        if (f->ops.empty())
            return finding(Rule::CompleteNoSubmit, e.arg[0],
                           "an operation (" + std::string(trace::opcodeName(e.small)) + ") of " + fiberText(e.arg[0]) +
                               " completed on " + threadText(r, t) + " with none in flight");
        return {};
    }
    case EventKind::Submit:
        return afterFinish(r, e.arg[0], "it submitted an operation");
    case EventKind::MutexHandoff: {
        const std::uint64_t from = e.arg[0], to = e.arg[1], mutex = e.arg[2];
        if (from == to && from != 0)
            return finding(Rule::MutexOwner, from, fiberText(from) + " handed a mutex to itself");
        if (const FiberState* g = r.find(from); g && g->where == Where::Waiting && g->wait == Wait::Mutex && g->object == mutex)
            return finding(Rule::MutexOwner, from, fiberText(from) + " handed over a mutex it was itself waiting for", g->since);
        const FiberState* f = r.find(to);
        if (!f || f->where == Where::Unknown) return {};
        if (Finding x = afterFinish(r, to, "a mutex was handed to it"); x.found) return x;
        if (f->where != Where::Waiting || f->wait != Wait::Mutex || f->object != mutex)
            return finding(Rule::WakeNotWaiting, to,
                           fiberText(from) + " handed a mutex to " + fiberText(to) + ", which was " + placeText(r, *f) +
                               (f->where == Where::Waiting && f->wait == Wait::Mutex ? " (another mutex)" : ""),
                           f->since);
        return {};
    }
    case EventKind::RwLockOp: {
        const auto op = static_cast<trace::RwLockOp>(e.small);
        if (op != trace::RwLockOp::ReadLocked && op != trace::RwLockOp::WriteLocked) return {};
        const auto it = r.rwlocks.find(e.arg[0]);
        if (it == r.rwlocks.end()) return {};
        const Replay::RwLockHolds& h = it->second;
        const char* how = op == trace::RwLockOp::WriteLocked ? " took an rwlock exclusively while " : " took an rwlock shared while ";
        if (h.writer)
            return finding(Rule::RwLockHolds, e.arg[1], fiberText(e.arg[1]) + how + fiberText(h.writer) + " held it exclusively",
                           h.writer_record);
        if (op == trace::RwLockOp::WriteLocked && h.readers)
            return finding(Rule::RwLockHolds, e.arg[1],
                           fiberText(e.arg[1]) + how + std::to_string(h.readers) + (h.readers == 1 ? " reader" : " readers") +
                               " held it shared",
                           h.reader_record);
        return {};
    }
    case EventKind::MutexTaken: {
        const FiberState* f = r.find(e.arg[0]);
        if (!f || f->where == Where::Unknown) return {};
        if (f->where != Where::Waiting || f->wait != Wait::Mutex || f->object != e.arg[1])
            return finding(Rule::WakeNotWaiting, e.arg[0],
                           fiberText(e.arg[0]) + " took a mutex it had found locked, but it was " + placeText(r, *f), f->since);
        return {};
    }
    case EventKind::ConditionWake: {
        const FiberState* f = r.find(e.arg[0]);
        if (!f || f->where == Where::Unknown) return {};
        if (Finding x = afterFinish(r, e.arg[0], "a condition woke it"); x.found) return x;
        if (f->where != Where::Waiting || f->wait != Wait::Condition || f->object != e.arg[1])
            return finding(Rule::WakeNotWaiting, e.arg[0],
                           "a condition woke " + fiberText(e.arg[0]) + ", which was " + placeText(r, *f), f->since);
        return {};
    }
    case EventKind::Truth: {
        const auto what = static_cast<trace::TruthOp>(e.small);
        if (what == trace::TruthOp::Backdated)
            return finding(Rule::Backdated, 0,
                           threadText(r, t) + " wrote a record stamped " + trace::formatDuration(ticksToNs(r, e.arg[1])) +
                               " before its previous one (its time was moved later)");
        if (what == trace::TruthOp::Queued) {
            const FiberState* f = r.find(e.arg[0]);
            if (!f || f->where == Where::Unknown) return {};
            if ((queued(f->where) || f->where == Where::Woken) && f->thread == t) return {};
            if (f->where == Where::Overflow) return {};
            return finding(Rule::Truth, e.arg[0],
                           threadText(r, t) + " took " + fiberText(e.arg[0]) + " from its own queues, but the records had it " +
                               placeText(r, *f),
                           f->since);
        }
        if (what == trace::TruthOp::Empty) {
            std::uint32_t held = 0;
            for (std::uint32_t c : th.counts) held += c;
            if (held == 0) return {};
            // Name one of them.
            std::uint64_t one = 0;
            for (const auto& [id, f] : r.fibers)
                if (queued(f.where) && f.thread == t) {
                    one = id;
                    break;
                }
            return finding(Rule::Truth, one,
                           threadText(r, t) + " found its queues empty, but the records had " + std::to_string(held) +
                               " fiber(s) in them (" + fiberText(one) + ")");
        }
        return {};
    }
    default:
        return {};
    }
}

// [SECTION] apply() ---------------------------------------------------------------

void applySwitch(Replay& r, const Event& e, std::uint32_t i) {
    const std::uint32_t t = e.thread;
    ThreadReplay& th = r.threads[t];
    th.last_switch = i;
    const std::uint64_t from = e.arg[0], to = e.arg[1];
    const auto reason = static_cast<SwitchReason>(e.small);
    if (from != 0 && from != to) {
        FiberState& f = r.at(from);
        if (!f.finished) {
            switch (reason) {
            case SwitchReason::Yield:
            case SwitchReason::Handoff:
            case SwitchReason::Start:
            case SwitchReason::Idle: r.wake(from, f, t, i, /*yielded=*/reason == SwitchReason::Yield || reason == SwitchReason::Handoff); break;
            case SwitchReason::Finish: r.place(from, f, Where::Leaving, t, i); break;
            default: {
                Wait w = Wait::Io;
                if (reason == SwitchReason::Await) w = Wait::Await;
                else if (reason == SwitchReason::Select) w = Wait::Select;
                else if (reason == SwitchReason::Mutex) w = Wait::Mutex;
                else if (reason == SwitchReason::Condition) w = Wait::Condition;
                else if (reason == SwitchReason::Exit) w = Wait::Exit;
                if (w == Wait::Io && f.early_complete) {
                    f.early_complete = false;
                    r.wake(from, f, t, i);
                    break;
                }
                r.place(from, f, Where::Waiting, t, i);
                f.wait = w;
                f.object = f.next_object;
                // Awaiting a fiber that finished already: a schedule, by its
                // own handler or by the finisher's finish task, ends the wait
                // (FiberState::wake_threads).
                // The finisher's thread only while its finish task may still
                // run: it runs right after the finish switch, before that
                // thread switches again.
                const auto finishedTarget = [&](std::uint64_t target) {
                    const FiberState* g = r.find(target);
                    if (!g || !g->finished) return false;
                    if (f.wake_threads.empty()) f.wake_threads.push_back(t);
                    if (g->finish_record < r.trace.events.size()) {
                        const std::uint32_t ft = r.trace.events[g->finish_record].thread;
                        if (ft < r.threads.size() &&
                            (r.threads[ft].last_switch == kNoRecord || r.threads[ft].last_switch < g->finish_record))
                            f.wake_threads.push_back(ft);
                    }
                    return true;
                };
                if (w == Wait::Await && f.object && !finishedTarget(f.object)) r.awaiting[f.object].push_back(from);
                if (w == Wait::Select)
                    // Every finished target's finisher may hold the winning
                    // claim; one that finishes later may still win it.
                    for (std::uint64_t target : f.select_targets)
                        if (!finishedTarget(target)) r.awaiting[target].push_back(from);
                if (w == Wait::Condition && f.object) r.condition_waiters[f.object].fibers.push_back(from);
                break;
            }
            }
        }
        f.next_object = 0;
        if (reason != SwitchReason::Select && reason != SwitchReason::Await) f.select_targets.clear();
    }
    if (to != 0) {
        FiberState& f = r.at(to);
        if (!f.finished) {
            r.place(to, f, Where::Running, t, i);
            f.select_targets.clear();
        }
    }
    th.running = to;
    th.known = true;
}

void applySchedule(Replay& r, const Event& e, std::uint32_t i) {
    const std::uint32_t t = e.thread;
    std::vector<std::uint64_t> members;
    scheduleMembers(r, t, e.arg[0], e.arg[1], members);
    const auto how = static_cast<trace::ScheduleHow>(e.small);
    std::uint32_t target = t;
    if (how == trace::ScheduleHow::IdleHandoff || how == trace::ScheduleHow::NewWorker) target = r.threadOf(static_cast<std::int64_t>(e.arg[2]));
    std::vector<std::uint64_t> placed;
    for (std::uint64_t id : members) {
        FiberState& f = r.at(id);
        if (f.finished) continue;
        Where where = Where::Word;
        if (how == trace::ScheduleHow::RunNext) where = Where::RunNext;
        else if (how == trace::ScheduleHow::OwnQueue && r.scaling) where = f.yielded ? Where::Ring : Where::Deque;
        // A run-next record is written before the exchange that displaces
        // the fiber in the slot: that one stays there in the replay until
        // its own-queue schedule record (or a searcher's steal-one, which
        // may take it before the exchange) moves it.
        if (where == Where::Word && target < r.threads.size()) placed.push_back(id);
        else r.place(id, f, where, target, i);
    }
    // The seed's word is a stack: the list goes on top, its head first.
    if (!placed.empty()) r.pushWord(target, placed, i);
}

void finishFiber(Replay& r, std::uint64_t id, std::uint32_t t, std::uint32_t i) {
    FiberState& f = r.at(id);
    r.place(id, f, Where::Finished, t, i);
    f.finished = true;
    f.finish_record = i;
    auto it = r.awaiting.find(id);
    if (it == r.awaiting.end()) return;
    for (std::uint64_t waiter : it->second) {
        FiberState* w = r.find(waiter);
        if (!w || w->where != Where::Waiting) continue;
        if (w->wait == Wait::Await && w->object == id) r.wake(waiter, *w, t, i);
        else if (w->wait == Wait::Select) r.wake(waiter, *w, t, i), w->select_woken = true;
    }
    r.awaiting.erase(it);
}

void apply(Replay& r, const Event& e, std::uint32_t i) {
    const std::uint32_t t = e.thread;
    ThreadReplay& th = r.threads[t];
    switch (e.kind) {
    case EventKind::ThreadStart:
        th.stopped = false;
        if (th.worker < 0) {
            th.worker = static_cast<std::int64_t>(e.arg[0]);
            r.thread_of_worker.try_emplace(th.worker, t);
        }
        return;
    case EventKind::ThreadStop: th.stopped = true; return;
    case EventKind::Switch: applySwitch(r, e, i); return;
    case EventKind::FiberCreate: {
        FiberState& f = r.at(e.arg[0]);
        f.created = true;
        r.wake(e.arg[0], f, t, i);
        return;
    }
    case EventKind::FiberFinish: finishFiber(r, e.arg[0], t, i); return;
    case EventKind::Schedule: applySchedule(r, e, i); return;
    case EventKind::Steal: {
        // The word from its head (as the record names it) down: the fibers
        // above it were popped by the owner, which runs them next.
        const std::uint32_t victim = r.threadOf(static_cast<std::int64_t>(e.arg[1]));
        if (victim == kNoThread) return;
        auto& word = r.threads[victim].word;
        auto at = std::find_if(word.begin(), word.end(),
                               [&](const auto& entry) { return entry.first == e.arg[0] && r.wordEntryLive(entry, victim); });
        std::vector<std::uint64_t> taken;
        for (auto it = at; it != word.end(); ++it)
            if (r.wordEntryLive(*it, victim)) taken.push_back(it->first);
        word.erase(at, word.end());
        if (taken.empty()) taken.push_back(e.arg[0]); // (a fiber seen first here)
        r.pushWord(t, taken, i);
        return;
    }
    case EventKind::StealHalf: {
        FiberState& f = r.at(e.arg[0]);
        if (!f.finished) r.place(e.arg[0], f, Where::Ring, t, i);
        return;
    }
    case EventKind::StealOne: {
        FiberState& f = r.at(e.arg[0]);
        if (!f.finished) r.place(e.arg[0], f, Where::Deque, t, i);
        return;
    }
    case EventKind::Overflow: {
        FiberState& f = r.at(e.arg[0]);
        if (f.finished) return;
        if (e.small == static_cast<std::uint8_t>(trace::OverflowOp::Put)) r.place(e.arg[0], f, Where::Overflow, kNoThread, i);
        else r.place(e.arg[0], f, Where::Ring, t, i);
        return;
    }
    case EventKind::WakeupSent: r.wakeups[{th.worker, static_cast<std::int64_t>(e.arg[0])}].push_back(i); return;
    case EventKind::WakeupReceived: {
        auto& q = r.wakeups[{static_cast<std::int64_t>(e.arg[0]), th.worker}];
        if (!q.empty()) q.pop_front();
        else if (r.old_format && r.epoll)
            for (auto& [key, sends] : r.wakeups)
                if (key.second == th.worker && !sends.empty()) {
                    sends.pop_front();
                    break;
                }
        return;
    }
    case EventKind::WakeupBounced: {
        auto& q = r.wakeups[{th.worker, static_cast<std::int64_t>(e.arg[0])}];
        if (!q.empty()) q.pop_front();
        return;
    }
    case EventKind::Park:
        th.parked = true;
        th.running = 0;
        th.known = true;
        return;
    case EventKind::Unpark:
        th.parked = false;
        th.running = 0;
        th.known = true;
        return;
    case EventKind::Search: th.searching = e.small == static_cast<std::uint8_t>(trace::SearchOp::Begin); return;
    case EventKind::ZoneBegin: r.zones[th.running ? th.running : ~static_cast<std::uint64_t>(t)].push_back(e.arg[0]); return;
    case EventKind::ZoneEnd: {
        auto& stack = r.zones[th.running ? th.running : ~static_cast<std::uint64_t>(t)];
        if (!stack.empty()) stack.pop_back();
        return;
    }
    case EventKind::Submit: {
        // A fiber submits its own operations, running: one first seen here
        // (the main fiber, before any switch) runs on this thread.
        FiberState& f = r.at(e.arg[0]);
        if (f.where == Where::Unknown) {
            r.place(e.arg[0], f, Where::Running, t, i);
            if (!th.known) {
                th.running = e.arg[0];
                th.known = true;
            }
        }
        f.ops.push_back(Op{e.small, t});
        return;
    }
    case EventKind::Complete: {
        FiberState& f = r.at(e.arg[0]);
        std::uint32_t ring = t;
        if (!f.ops.empty()) {
            auto it = std::find_if(f.ops.begin(), f.ops.end(), [&](const Op& op) { return op.opcode == e.small; });
            if (it == f.ops.end()) it = f.ops.begin();
            ring = it->thread;
            f.ops.erase(it);
        }
        if (f.where == Where::Waiting && f.wait == Wait::Io) r.wake(e.arg[0], f, ring, i);
        else if (f.where == Where::Running && f.thread != t) f.early_complete = true; // a pool thread, while it ran
        return;
    }
    case EventKind::CancelDelivered: {
        FiberState& f = r.at(e.arg[0]);
        if (f.where == Where::Waiting && (f.wait == Wait::Mutex || f.wait == Wait::Condition || f.wait == Wait::Select)) {
            if (f.wait == Wait::Condition) ++r.condition_waiters[f.object].stale;
            r.wake(e.arg[0], f, t, i); // (its entry among the condition's waiters is now stale)
        }
        return;
    }
    case EventKind::MutexContended: r.at(e.arg[0]).next_object = e.arg[1]; return;
    case EventKind::MutexHandoff: {
        if (!e.arg[1]) return;
        FiberState& f = r.at(e.arg[1]);
        if (!f.finished) r.wake(e.arg[1], f, t, i);
        return;
    }
    case EventKind::MutexTaken: {
        FiberState& f = r.at(e.arg[0]);
        if (!f.finished) r.wake(e.arg[0], f, t, i);
        return;
    }
    case EventKind::RwLockOp: {
        Replay::RwLockHolds& h = r.rwlocks[e.arg[0]];
        switch (static_cast<trace::RwLockOp>(e.small)) {
        case trace::RwLockOp::ReadLocked: ++h.readers, h.reader_record = i; break;
        case trace::RwLockOp::WriteLocked: h.writer = e.arg[1], h.writer_record = i; break;
        case trace::RwLockOp::ReadUnlock: h.readers -= h.readers > 0; break;
        case trace::RwLockOp::WriteUnlock: h.writer = 0, h.writer_record = kNoRecord; break;
        default: break;
        }
        return;
    }
    case EventKind::ConditionWait: r.at(e.arg[0]).next_object = e.arg[1]; return;
    case EventKind::ConditionWake: {
        auto& waiters = r.condition_waiters[e.arg[1]];
        const bool broadcast = e.small == static_cast<std::uint8_t>(trace::ConditionWakeHow::Broadcast);
        std::vector<std::uint64_t> woken{e.arg[0]};
        if (broadcast && r.old_format) {
            // Before version 7 a broadcast's record named the first waiter
            // and woke every other: the head first, then the rest in order.
            for (std::uint64_t w : waiters.fibers)
                if (w != e.arg[0]) woken.push_back(w);
            waiters.fibers.clear();
            waiters.stale = 0;
        } else if (++waiters.stale > 32 && 2 * waiters.stale > waiters.fibers.size()) {
            std::erase_if(waiters.fibers, [&](std::uint64_t w) {
                const FiberState* g = r.find(w);
                return w == e.arg[0] || !(g && g->where == Where::Waiting && g->wait == Wait::Condition && g->object == e.arg[1]);
            });
            waiters.stale = 0;
        }
        for (std::uint64_t w : woken) {
            FiberState& f = r.at(w);
            if (f.finished) continue;
            if (w != e.arg[0] && !(f.where == Where::Waiting && f.wait == Wait::Condition && f.object == e.arg[1])) continue;
            r.wake(w, f, t, i);
        }
        return;
    }
    case EventKind::Truth:
        // The runtime took the fiber from this thread's queues: it runs here next.
        if (e.small == static_cast<std::uint8_t>(trace::TruthOp::Queued)) {
            FiberState& f = r.at(e.arg[0]);
            if (!f.finished && f.where != Where::Running) r.place(e.arg[0], f, Where::Woken, t, i);
        }
        return;
    case EventKind::Await: {
        FiberState& f = r.at(e.arg[0]);
        f.next_object = e.arg[1];
        f.select_targets.push_back(e.arg[1]);
        return;
    }
    default: return;
    }
}

// [SECTION] The pass --------------------------------------------------------------

void report(ValidationReport& out, const ValidationOptions& options, const trace::Trace& trace, std::uint32_t i, Finding f) {
    ++out.count;
    ++out.by_rule[static_cast<std::size_t>(f.rule)];
    if (out.violations.size() >= options.max_kept) return;
    const Event e = trace.events[i];
    out.violations.push_back(Violation{f.rule, e.time, e.thread, f.fiber, i, f.related, std::move(f.what)});
}

} // namespace

ValidationReport validateTrace(const trace::Trace& trace, const ValidationOptions& options) {
    ValidationReport out;
    Replay r(trace);
    const std::size_t n = trace.events.size();
    // Records of different threads closer than the clocks' slack have no
    // known order: one whose check fails waits (with the records of its
    // thread after it) until the others of its moment are applied, and is
    // a violation only if it still fails once the replay is past its time
    // plus the slack.
    const std::int64_t slack = options.clock_slack_ns;
    std::vector<std::uint32_t> deferred;                 // in trace order
    std::vector<std::uint32_t> blocked(trace.threads.size(), 0); // deferred records per thread
    const auto applyOne = [&](std::uint32_t i, const Event& e) {
        if (e.kind == EventKind::Truth) ++out.truth_records;
        apply(r, e, i);
    };
    // Applies every deferred record whose check now passes (and the ones
    // after it on its thread, in order), until none does.
    const auto retry = [&] {
        for (bool progress = true; progress && !deferred.empty();) {
            progress = false;
            std::vector<bool> held(trace.threads.size(), false);
            for (std::size_t k = 0; k < deferred.size();) {
                const std::uint32_t i = deferred[k];
                const Event e = trace.events[i];
                if (!held[e.thread] && !check(r, e, i).found) {
                    applyOne(i, e);
                    --blocked[e.thread];
                    deferred.erase(deferred.begin() + static_cast<std::ptrdiff_t>(k));
                    progress = true;
                    continue;
                }
                held[e.thread] = true;
                ++k;
            }
        }
    };
    // Reports and applies the deferred records whose moment has passed.
    const auto expire = [&](std::int64_t now) {
        while (!deferred.empty()) {
            const std::uint32_t i = deferred.front();
            const Event e = trace.events[i];
            if (now - e.time <= slack) break;
            if (Finding f = check(r, e, i); f.found) report(out, options, trace, i, std::move(f));
            applyOne(i, e);
            --blocked[e.thread];
            deferred.erase(deferred.begin());
            retry();
        }
    };
    for (std::size_t k = 0; k < n; ++k) {
        const auto i = static_cast<std::uint32_t>(k);
        const Event e = trace.events[i];
        expire(e.time);
        if (blocked[e.thread] == 0 && !check(r, e, i).found) {
            applyOne(i, e);
            if (!deferred.empty()) retry();
            continue;
        }
        deferred.push_back(i);
        ++blocked[e.thread];
    }
    expire(INT64_MAX);
    return out;
}

void checkModelAgainstTruth(const trace::Trace& trace, const Timeline& timeline, ValidationReport& report,
                            const ValidationOptions& options) {
    // Each check is a stateAt (O(log n + a checkpoint's span)): a recording
    // with very many truth records is checked at kMostChecks of them, evenly
    // spread, so that verifying stays linear in the trace.
    constexpr std::size_t kMostChecks = 50'000;
    const std::size_t n = trace.events.size();
    std::vector<std::uint32_t> truths;
    for (std::size_t i = 0; i < n; ++i)
        if (trace.events.kind(i) == EventKind::Truth) truths.push_back(static_cast<std::uint32_t>(i));
    const std::size_t stride = truths.size() > kMostChecks ? (truths.size() + kMostChecks - 1) / kMostChecks : 1;
    for (std::size_t k = 0; k < truths.size(); k += stride) {
        const std::size_t i = truths[k];
        const Event e = trace.events[i];
        const auto what = static_cast<trace::TruthOp>(e.small);
        if (what != trace::TruthOp::Queued && what != trace::TruthOp::Empty) continue;
        // The state just before the record: a queued fiber is taken at it.
        const SchedulerState state = stateAt(timeline, e.time - 1);
        const ThreadState* mine = nullptr;
        for (const ThreadState& ts : state.threads)
            if (ts.thread == e.thread) mine = &ts;
        if (!mine) continue;
        std::string problem;
        std::uint64_t fiber = 0;
        if (what == trace::TruthOp::Queued) {
            fiber = e.arg[0];
            const bool there = std::any_of(mine->ready.begin(), mine->ready.end(), [&](const ReadyEntry& r) { return r.fiber == fiber; });
            if (!there) problem = "the model's ready queue of this thread lacks " + fiberText(fiber) + ", which the runtime took from it";
        } else if (!mine->ready.empty()) {
            fiber = mine->ready.front().fiber;
            problem = "the model shows " + std::to_string(mine->ready.size()) + " fiber(s) ready on this thread (" +
                      fiberText(fiber) + ") where the runtime found its queues empty";
        }
        // Another thread's record at the same instant may have come first:
        // records of different threads at one instant have no order (a
        // 62.5 MHz clock's 16 ns tick holds a schedule on one thread and the
        // pop on another). The model is not wrong if such a record handed
        // the fiber to this thread (queued), or took from this thread every
        // fiber the model has here (empty).
        if (!problem.empty()) {
            const std::int64_t worker = e.thread < trace.threads.size() ? trace.threads[e.thread].worker : -1;
            std::unordered_set<std::uint64_t> stolen; // from this thread, at this instant, by another
            bool word_stolen = false;
            for (std::size_t j = firstEventAt(trace, e.time); j < n && trace.events.time(j) == e.time; ++j) {
                const Event other = trace.events[j];
                if (other.thread == e.thread || worker < 0) continue;
                // Queued: another thread handed it to this one (idle-handoff, new-worker).
                if (what == trace::TruthOp::Queued && other.kind == EventKind::Schedule && other.arg[0] == fiber &&
                    static_cast<std::int64_t>(other.arg[2]) == worker)
                    problem.clear();
                // Empty: another thread took what the model has here.
                if ((other.kind == EventKind::Steal || other.kind == EventKind::StealHalf || other.kind == EventKind::StealOne) &&
                    static_cast<std::int64_t>(other.arg[1]) == worker) {
                    stolen.insert(other.arg[0]);
                    word_stolen |= other.kind == EventKind::Steal;
                }
            }
            if (what == trace::TruthOp::Empty &&
                (word_stolen || std::all_of(mine->ready.begin(), mine->ready.end(), [&](const ReadyEntry& r) { return stolen.count(r.fiber) > 0; })))
                problem.clear();
        }
        if (problem.empty()) continue;
        ++report.count;
        ++report.by_rule[static_cast<std::size_t>(Rule::Truth)];
        if (report.violations.size() < options.max_kept)
            report.violations.push_back(Violation{Rule::Truth, e.time, e.thread, fiber, static_cast<std::uint32_t>(i), kNoRecord, "model: " + problem});
    }
}

std::string describeViolation(const trace::Trace& trace, const Violation& v) {
    std::string line = trace::formatDuration(v.time);
    line += " thread " + std::to_string(v.thread);
    if (v.thread < trace.threads.size() && trace.threads[v.thread].worker >= 0)
        line += " (worker " + std::to_string(trace.threads[v.thread].worker) + ")";
    if (v.fiber) line += " fiber " + std::to_string(v.fiber);
    line += ": ";
    line += ruleInfo(v.rule).name;
    line += ": " + v.what;
    line += " [record " + std::to_string(v.event);
    if (v.related != kNoRecord) line += ", contradicting record " + std::to_string(v.related);
    line += "]";
    return line;
}

} // namespace fiberscope::analysis
