// `fiberscope records TRACE`: the records themselves, one a line, with every
// field by its name (trace_tools.hpp, writeRecords).

#include <algorithm>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "trace_tools.hpp"
#include "commands/command.hpp"

namespace fiberscope::commands {

namespace {

// Every kind's name, for --help.
std::string kindNames() {
    std::string known, line;
    for (unsigned k = 1; k <= fiberscope::trace::kMaxEventKind; ++k) {
        const auto& info = fiberscope::trace::kRecordKinds[k];
        if (!info.name || info.special) continue;
        if (line.size() + std::strlen(info.name) > 76) known += line + "\n", line.clear();
        line += (line.empty() ? "  " : " ") + std::string(info.name);
    }
    return known + line;
}

// ", did you mean 'steal'?" for a name a letter or two from a kind's, else "".
std::string nearestKind(const std::string& name) {
    const auto distance = [](const std::string& a, const std::string& b) {
        std::vector<std::size_t> row(b.size() + 1);
        for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
        for (std::size_t i = 1; i <= a.size(); ++i) {
            std::size_t diagonal = row[0];
            row[0] = i;
            for (std::size_t j = 1; j <= b.size(); ++j) {
                const std::size_t up = row[j];
                row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
                diagonal = up;
            }
        }
        return row[b.size()];
    };
    std::string best;
    std::size_t best_distance = 3;
    for (unsigned k = 1; k <= fiberscope::trace::kMaxEventKind; ++k) {
        const auto& info = fiberscope::trace::kRecordKinds[k];
        if (!info.name || info.special || name.size() > 64) continue;
        if (const std::size_t d = distance(name, info.name); d < best_distance) best_distance = d, best = info.name;
    }
    return best.empty() ? "" : ", did you mean '" + best + "'?";
}

} // namespace

Command addRecords(CLI::App& top) {
    struct Options {
        std::string path;
        std::int64_t from = INT64_MIN, to = INT64_MAX;
        std::vector<std::string> kinds;
        std::int64_t fiber = -1;
        std::int64_t worker = fiberscope::trace::kAnyWorker;
        std::int64_t limit = 0;
    };
    auto options = std::make_shared<Options>();
    CLI::App* app = addCommand(top, "records", "print the records themselves, every field by name",
                               "Prints the trace's records in time order, one a line: the time since the\n"
                               "recording began, the thread, the record's kind and each of its fields by the\n"
                               "name FORMAT.md and the lessons use, e.g.\n"
                               "      1012.291 us  worker 0  schedule fiber=7(conn 3) count=1 target=1 how=idle-handoff\n"
                               "A fiber is shown with its name, an opcode with its name: opcode=26(send).\n"
                               "Times take a unit: ns, us, ms (a bare number) or s. The kinds (FORMAT.md):\n" +
                                   kindNames());
    app->add_option("FILE", options->path, "the trace")->type_name("");
    cli::addParsedOption<std::int64_t>(*app, "--from", options->from, timeValue(cli::TimeSign::non_negative),
                                       "only records at or after this time, e.g. 1.5ms", "TIME");
    cli::addParsedOption<std::int64_t>(*app, "--to", options->to, timeValue(cli::TimeSign::non_negative),
                                       "only records at or before this time", "TIME");
    app->add_option("--kind", options->kinds, "only records of these kinds, e.g. --kind schedule,wakeup-sent")
        ->delimiter(',')
        ->type_name("KIND");
    cli::addParsedOption<std::int64_t>(*app, "--fiber", options->fiber, wholeNumber(0, INT64_MAX),
                                       "only records naming this fiber (by number) in a fiber field", "N");
    cli::addParsedOption<std::int64_t>(*app, "--worker", options->worker, wholeNumber(0, 1'000'000),
                                       "only records written by this worker's thread", "N");
    cli::addParsedOption<std::int64_t>(*app, "--limit", options->limit, wholeNumber(1, INT64_MAX),
                                       "at most N lines, then how many more match (default: all)", "N");
    auto run = [app, options]() -> int {
        if (const std::string complaint = cli::leftoverComplaint(*app, "one trace file at a time"); !complaint.empty())
            return usageError("records", complaint);
        if (options->path.empty()) return usageError("records", "no trace file given");
        fiberscope::trace::RecordsOptions records;
        for (const std::string& name : options->kinds) {
            const auto* info = fiberscope::trace::recordKindNamed(name);
            if (!info)
                return usageError("records", "no record kind is named '" + fiberscope::trace::terminalSafe(name) + "'" +
                                                 nearestKind(name));
            records.kinds.push_back(info->kind);
        }
        if (options->from != INT64_MIN && options->to != INT64_MAX && options->to < options->from)
            return usageError("records", "--to is before --from");
        Trace trace;
        if (!loadTrace(options->path, trace)) return kBadFile;
        records.from = options->from;
        records.to = options->to;
        records.fiber = options->fiber;
        records.worker = options->worker;
        records.limit = static_cast<std::size_t>(std::max<std::int64_t>(0, options->limit));
        const std::size_t matched = fiberscope::trace::writeRecords(trace, std::cout, records);
        std::cout.flush();
        if (matched == 0) std::cerr << "fiberscope records: no record matches in " << options->path << '\n';
        warnIfInconsistent(options->path, trace);
        return kOk;
    };
    return {app, run, [options] { return "printing the records of " + options->path; }};
}

} // namespace fiberscope::commands
