// judgeTrace: the validator's report, kept to its first violation (verdict.hpp).
#include "model/verdict.hpp"

#include "trace_tools.hpp"

namespace fiberscope::viewer {

Verdict judgeTrace(const trace::Trace& trace, const analysis::Timeline& timeline) {
    analysis::ValidationOptions options;
    options.max_kept = 1; // the banner names the first; the rest are counted (`fiberscope verify` lists them)
    const analysis::ValidationReport report = trace::verifyTrace(trace, &timeline, options);
    Verdict verdict;
    verdict.checked = true;
    verdict.violations = report.count;
    if (!report.violations.empty()) {
        verdict.first = report.violations.front();
        verdict.line = trace::verificationWarning(trace, report); // (terminalSafe: a trace's text reaches the screen escaped)
    }
    return verdict;
}

} // namespace fiberscope::viewer
