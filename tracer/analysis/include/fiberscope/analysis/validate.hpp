// The validator: replays a trace's records against the rules of the
// runtime's state machine and reports every record that contradicts what
// came before it (a fiber run before anything made it ready, a fiber on two
// threads at once, a steal of a fiber that was not where the record says, a
// wake-up received that nobody sent, a mutex handed over by a fiber that
// did not hold it...). Go's internal/trace validator is the anchor.
//
// It is a second, independent reading of the format: it shares nothing with
// the model (timeline.hpp) but the reader, so a record the model believes
// wrongly is caught here, and the tests run it on every trace they record.
// Each rule is one row of kRules (its name and the sentence FORMAT.md's
// "Validation rules" section gives it); a violation names its rule, its
// time, thread and fiber, the record that broke it and the record that
// contradicts it.
//
// Ground truth: a trace recorded with FIBERSCOPE_TRACE_CHECK=1 carries
// `truth` records, in which the runtime says what it knows at a decision
// point (the fiber it just took from its own queues, that its queues are
// empty as it parks). The replay checks its state against each, and
// checkModelAgainstTruth holds the model (stateAt) to the same records: the
// model must never disagree with the runtime about where a fiber is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fiberscope/trace_reader.hpp"

namespace fiberscope::analysis {

struct Timeline;

enum class Rule : std::uint8_t {
    SwitchFrom,        // a switch's `from` is not what the thread runs
    RunNotReady,       // a fiber runs without a record having made it ready
    RunQueuedElsewhere,// a fiber runs on one thread while queued on another
    RunTwice,          // a fiber runs on two threads at once
    AfterFinish,       // a record names a fiber after its finish
    CreatedTwice,      // fiber-create for a fiber that exists already
    FinishedTwice,     // fiber-finish for a fiber that finished already
    ScheduleNotReady,  // a schedule names a fiber that nothing made ready
    StealSource,       // a steal names a fiber that was not where it says
    WakeNotWaiting,    // a record ends a wait the fiber was not in
    WakeupUnmatched,   // a wake-up received or bounced that nobody sent
    ParkPairs,         // park inside park, unpark without park, park while running a fiber
    SearchPairs,       // a search end without its begin, or a begin inside one
    ZonePairs,         // a zone-end with no zone open on the running fiber
    MutexOwner,        // a mutex handed over by a fiber that did not hold it
    RwLockHolds,       // an rwlock taken while a conflicting hold was open
    CompleteNoSubmit,  // a completion with no operation in flight
    Truth,             // the replay disagrees with a truth record
    Backdated,         // the runtime wrote a record stamped before its thread's previous one
};
inline constexpr std::size_t kRuleCount = static_cast<std::size_t>(Rule::Backdated) + 1;

struct RuleInfo {
    Rule rule;
    const char* name;     // "run-not-ready"
    const char* sentence; // FORMAT.md's text for it
};
extern const RuleInfo kRules[kRuleCount];
const RuleInfo& ruleInfo(Rule rule) noexcept;

struct Violation {
    Rule rule{};
    std::int64_t time = 0;
    std::uint32_t thread = 0;      // trace thread of the offending record
    std::uint64_t fiber = 0;       // the fiber it concerns (0: none)
    std::uint32_t event = 0;       // index in trace.events of the offending record
    std::uint32_t related = UINT32_MAX; // the record it contradicts, if one (UINT32_MAX: none)
    std::string what;              // one sentence, naming the fibers and threads
};

struct ValidationOptions {
    std::size_t max_kept = 1000; // violations kept in full (all are counted)
    // Records of different threads closer than this have no known order:
    // two CPUs' clocks can disagree by a few hundred nanoseconds (measured
    // on a 2-vCPU VM: 650 TSC ticks), so such records are tried in either
    // order before one is called a violation.
    std::int64_t clock_slack_ns = 1000;
};

struct ValidationReport {
    std::vector<Violation> violations; // the first max_kept, in trace order
    std::size_t count = 0;             // all of them
    std::size_t by_rule[kRuleCount] = {};
    std::size_t truth_records = 0;     // truth records checked (0: not a checking recording)
    bool ok() const noexcept { return count == 0; }
};

ValidationReport validateTrace(const trace::Trace& trace, const ValidationOptions& options = {});

// Holds the model to the runtime's truth records: at each, the thread's
// ready queue in stateAt must hold the fiber the runtime took from it
// (`queued`), or nothing (`empty`). Violations use Rule::Truth.
void checkModelAgainstTruth(const trace::Trace& trace, const Timeline& timeline, ValidationReport& report,
                            const ValidationOptions& options = {});

// One line for a violation: "12.345 ms thread 1 (worker 1) fiber 7: run-not-ready: ... [records 123, 120]".
std::string describeViolation(const trace::Trace& trace, const Violation& v);

} // namespace fiberscope::analysis
