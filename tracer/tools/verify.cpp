// verifyTrace: the validator, and the model held to a checking recording's
// truth records (analysis/validate.hpp).
#include "trace_tools.hpp"

namespace fiberscope::trace {

analysis::ValidationReport verifyTrace(const Trace& trace, const analysis::Timeline* timeline,
                                       const analysis::ValidationOptions& options) {
    analysis::ValidationReport report = analysis::validateTrace(trace, options);
    if (report.truth_records == 0) return report;
    if (timeline) {
        analysis::checkModelAgainstTruth(trace, *timeline, report, options);
    } else {
        const analysis::Timeline built = analysis::buildTimeline(trace);
        analysis::checkModelAgainstTruth(trace, built, report, options);
    }
    return report;
}

std::string verificationWarning(const Trace& trace, const analysis::ValidationReport& report) {
    if (report.ok() || report.violations.empty()) return {};
    return "this trace contradicts itself in " + std::to_string(report.count) + (report.count == 1 ? " place" : " places") +
           ", first: " + terminalSafe(analysis::describeViolation(trace, report.violations.front())) +
           " (run 'fiberscope verify' for all)";
}

} // namespace fiberscope::trace
