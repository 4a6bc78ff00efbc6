// `fiberscope verify TRACE...`: does the trace contradict what the runtime did?

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

#include "fiberscope/analysis/validate.hpp"
#include "trace_tools.hpp"
#include "commands/command.hpp"

namespace fiberscope::commands {

Command addVerify(CLI::App& top) {
    struct Options {
        std::vector<std::string> paths;
        bool summary = false;
        std::int64_t max = 20;
        std::int64_t slack = 1000;
    };
    auto options = std::make_shared<Options>();
    CLI::App* app = addCommand(top, "verify", "check that a trace contradicts nothing the runtime did",
                               "Replays each trace against the rules of the scheduler's state machine\n"
                               "(tracer/FORMAT.md, \"Validation rules\") and prints one line per record that\n"
                               "breaks one: its time, thread, fiber, the rule and the records involved.\n"
                               "A trace recorded with FIBERSCOPE_TRACE_CHECK=1 also carries what the runtime\n"
                               "knew at its decisions; the replay and the viewer's model are held to it.\n"
                               "Exit status: 0 every trace is consistent, 1 a violation or an unreadable\n"
                               "file, 2 a usage error.");
    app->add_option("FILE", options->paths, "the traces")->type_name("");
    app->add_flag("--summary", options->summary, "print only each trace's count of violations by rule");
    cli::addParsedOption<std::int64_t>(*app, "--max", options->max, wholeNumber(1, 1'000'000),
                                       "violations printed per trace (default: 20; all are counted)", "N");
    cli::addParsedOption<std::int64_t>(*app, "--slack", options->slack, timeValue(cli::TimeSign::non_negative),
                                       "records of two threads closer than this are unordered (default: 1us, what two "
                                       "CPUs' clocks may differ by)",
                                       "TIME");
    auto run = [app, options]() -> int {
        if (const std::string complaint = cli::leftoverComplaint(*app, "trace files only"); !complaint.empty())
            return usageError("verify", complaint);
        if (options->paths.empty()) return usageError("verify", "no trace file given");
        int status = kOk;
        for (const std::string& path : options->paths) {
            Trace trace;
            if (!loadTrace(path, trace)) {
                status = kBadFile;
                continue;
            }
            fiberscope::analysis::ValidationOptions validation;
            validation.clock_slack_ns = options->slack;
            const fiberscope::analysis::ValidationReport report = fiberscope::trace::verifyTrace(trace, nullptr, validation);
            const std::string name = cli::printable(path, 4096);
            if (report.ok()) {
                std::printf("%s: consistent (%s records%s)\n", name.c_str(), std::to_string(trace.events.size()).c_str(),
                            report.truth_records ? (", " + std::to_string(report.truth_records) + " truth records checked").c_str() : "");
                continue;
            }
            status = kBadFile;
            std::printf("%s: %zu violation%s\n", name.c_str(), report.count, report.count == 1 ? "" : "s");
            if (options->summary) {
                for (std::size_t r = 0; r < fiberscope::analysis::kRuleCount; ++r)
                    if (report.by_rule[r])
                        std::printf("  %-22s %zu\n", fiberscope::analysis::kRules[r].name, report.by_rule[r]);
                continue;
            }
            std::size_t shown = 0;
            for (const auto& v : report.violations) {
                if (shown++ == static_cast<std::size_t>(options->max)) break;
                std::printf("  %s\n", fiberscope::trace::terminalSafe(fiberscope::analysis::describeViolation(trace, v)).c_str());
            }
            if (report.count > shown)
                std::printf("  ... and %zu more (--max N shows more, --summary counts them by rule)\n", report.count - std::min(shown, report.count));
        }
        return status;
    };
    return {app, run, [options] { return "verifying " + (options->paths.empty() ? std::string() : options->paths.front()); }};
}

} // namespace fiberscope::commands
