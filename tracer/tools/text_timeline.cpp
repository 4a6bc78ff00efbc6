// `fiberscope timeline`: a terminal map of which fiber ran where, in the
// spirit of `perf sched map`. One column per thread, one row per time bucket.
// The cells are read off the trace's model (fiberscope/analysis): a column
// is a thread lane, so the map shows what the viewer's thread lanes show.
#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <set>

#include "trace_tools.hpp"

namespace fiberscope::trace {

namespace {

// What one thread did during one bucket.
struct Cell {
    std::map<std::uint64_t, std::int64_t> run_ns; // by fiber
    std::int64_t idle_ns = 0;
    std::int64_t parked_ns = 0;
    bool alive = false;
};

// The smallest 1, 2 or 5 times a power of ten that is >= ns.
std::int64_t niceBucket(std::int64_t ns) {
    std::int64_t scale = 1;
    for (;;) {
        for (std::int64_t step : {1, 2, 5})
            if (step * scale >= ns) return step * scale;
        if (scale > INT64_MAX / 100) return ns;
        scale *= 10;
    }
}

// Fills the cells of one column from its thread lane. Empty idle and parked
// intervals carry nothing (an empty run is still a run).
void fillColumn(const analysis::ThreadLane& thread, std::int64_t bucket, std::vector<Cell>& cells) {
    using analysis::State;
    const auto rows = static_cast<std::int64_t>(cells.size());
    for (const analysis::Interval& span : thread.lane.intervals) {
        if (span.state != State::Running && span.duration() == 0) continue;
        const std::int64_t begin = std::max<std::int64_t>(0, span.start);
        const std::int64_t end = std::max(begin, span.end);
        const std::int64_t first = std::min(begin / bucket, rows - 1);
        const std::int64_t last = std::min(end > begin ? (end - 1) / bucket : first, rows - 1);
        for (std::int64_t row = first; row <= last; ++row) {
            Cell& cell = cells[static_cast<std::size_t>(row)];
            cell.alive = true;
            const std::int64_t overlap = std::min(end, (row + 1) * bucket) - std::max(begin, row * bucket);
            switch (span.state) {
            case State::Running:
                // Even an instant run is a run: it shows if nothing longer ran.
                cell.run_ns[span.fiber] += std::max<std::int64_t>(0, overlap);
                break;
            case State::Parked: cell.parked_ns += std::max<std::int64_t>(0, overlap); break;
            default: cell.idle_ns += std::max<std::int64_t>(0, overlap); break;
            }
        }
    }
}

// The text of one cell: the fiber that ran longest ("+" if others ran
// too), else "." (idle) or "_" (parked), or blank if the thread was not alive.
std::string cellText(const Cell& cell, std::set<std::uint64_t>& ran) {
    if (!cell.run_ns.empty()) {
        auto longest = cell.run_ns.begin();
        for (auto it = cell.run_ns.begin(); it != cell.run_ns.end(); ++it) {
            ran.insert(it->first);
            if (it->second > longest->second) longest = it;
        }
        return std::to_string(longest->first) + (cell.run_ns.size() > 1 ? "+" : "");
    }
    if (!cell.alive) return "";
    return cell.parked_ns > cell.idle_ns ? "_" : ".";
}

struct TimeUnit {
    const char* name;
    std::int64_t ns;
    int decimals; // enough to show every bucket start exactly (up to 3)
};

TimeUnit unitFor(std::int64_t bucket) {
    TimeUnit unit = bucket >= 100000 ? TimeUnit{"ms", 1000000, 0} : bucket >= 100 ? TimeUnit{"us", 1000, 0} : TimeUnit{"ns", 1, 0};
    for (std::int64_t step = unit.ns; bucket % step != 0 && unit.decimals < 3; step /= 10) ++unit.decimals;
    return unit;
}

std::string columnHeader(const analysis::ThreadLane& t) {
    // A blocking-pool thread "p0" (worker 2000: trace::threadDisplayName), never "w2000".
    if (trace::isBlockingPoolWorker(t.worker)) return "p" + std::to_string(t.worker - trace::kBlockingPoolWorkerBase);
    return t.worker >= 0 ? "w" + std::to_string(t.worker) : "t" + std::to_string(t.thread);
}

// Names the fibers that ran (those with a name; the others are counted).
void writeLegend(const analysis::Timeline& timeline, const std::set<std::uint64_t>& ran, std::size_t limit, std::ostream& out) {
    std::vector<std::string> named;
    std::size_t unnamed = 0;
    for (std::uint64_t fiber : ran) {
        const analysis::FiberLane* lane = analysis::findFiber(timeline, fiber);
        if (lane && (lane->named() || fiber == 1)) named.push_back(std::to_string(fiber) + " = " + terminalSafe(lane->name()));
        else ++unnamed;
    }
    if (named.size() > limit) {
        const std::size_t more = named.size() - limit;
        named.resize(limit);
        named.push_back("... " + std::to_string(more) + " more named");
    }
    // "Fibers: 1 = main, 2 = root, ..." wrapped at about 100 columns.
    out << "\n";
    std::string line = "Fibers:";
    if (named.empty()) line += " none named";
    bool line_has_entries = false;
    for (std::size_t i = 0; i < named.size(); ++i) {
        const std::string entry = named[i] + (i + 1 < named.size() ? "," : "");
        if (line_has_entries && line.size() + 1 + entry.size() > 100) {
            out << line << "\n";
            line = "       ";
        }
        line += " " + entry;
        line_has_entries = true;
    }
    out << line << "\n";
    if (unnamed) out << "        and " << unnamed << " unnamed fiber" << (unnamed == 1 ? "" : "s") << ", shown by id\n";
}

} // namespace

void writeTextTimeline(const Trace& trace, std::ostream& out, TimelineOptions options) {
    writeTextTimeline(trace, analysis::buildTimeline(trace), out, options);
}

void writeTextTimeline(const Trace& trace, const analysis::Timeline& timeline, std::ostream& out, TimelineOptions options) {
    // The thread lanes (in the model's order: by worker index, then the
    // threads of unknown worker by number) that have intervals.
    std::vector<const analysis::ThreadLane*> columns;
    for (const analysis::ThreadLane& t : timeline.threads)
        if (!t.lane.intervals.empty()) columns.push_back(&t);
    const std::int64_t end = timeline.end_time;
    if (columns.empty() || end <= 0) {
        out << "The trace has no thread activity to show.\n";
        return;
    }

    // A terminal shows a few dozen columns; a trace may hold 65536 threads.
    // Past kColumnLimit the rest are named in one line, so that memory (rows x
    // columns cells) stays bounded whatever the file claims.
    constexpr std::size_t kColumnLimit = 64;
    std::size_t hidden_columns = 0;
    if (columns.size() > kColumnLimit) {
        hidden_columns = columns.size() - kColumnLimit;
        columns.resize(kColumnLimit);
    }

    const int max_rows = std::max(1, options.max_rows);
    constexpr std::int64_t kRowLimit = 10000;
    std::int64_t bucket = options.bucket_ns > 0 ? options.bucket_ns : niceBucket((end + max_rows - 1) / max_rows);
    bucket = std::max(bucket, (end + kRowLimit - 1) / kRowLimit);
    const std::int64_t rows = std::max<std::int64_t>(1, (end + bucket - 1) / bucket);

    std::vector<std::vector<std::string>> marks(static_cast<std::size_t>(rows));
    for (std::size_t i = analysis::nextOfKind(timeline, trace, EventKind::Mark, 0); i < trace.events.size();
         i = analysis::nextOfKind(timeline, trace, EventKind::Mark, i + 1)) {
        const Event& e = trace.events[i];
        if (e.time >= 0)
            marks[static_cast<std::size_t>(std::min(e.time / bucket, rows - 1))].push_back(terminalSafe(trace.string(e.arg[0])));
    }

    // Texts first, to size the columns.
    std::set<std::uint64_t> ran;
    std::vector<std::vector<std::string>> texts(columns.size());
    std::size_t width = 3;
    for (std::size_t c = 0; c < columns.size(); ++c) {
        width = std::max(width, columnHeader(*columns[c]).size());
        std::vector<Cell> cells(static_cast<std::size_t>(rows)); // one column's at a time
        fillColumn(*columns[c], bucket, cells);
        texts[c].reserve(cells.size());
        for (const Cell& cell : cells) {
            texts[c].push_back(cellText(cell, ran));
            width = std::max(width, texts[c].back().size());
        }
    }

    const TimeUnit unit = unitFor(bucket);
    char stamp[64];
    std::snprintf(stamp, sizeof stamp, "time (%s)", unit.name);
    const std::size_t time_width = std::max<std::size_t>(
        std::string(stamp).size(), std::to_string(end / unit.ns).size() + 1 +
                                       static_cast<std::size_t>(unit.decimals));

    out << "Timeline: " << formatDuration(end) << " in " << rows << " rows of " << formatDuration(bucket) << "\n";
    out << "Each cell: the fiber that ran longest in the row's time (+ if others ran too); . idle, _ parked, blank: not alive\n";
    out << "Columns:";
    for (std::size_t c = 0; c < columns.size(); ++c)
        out << (c ? ", " : " ") << columnHeader(*columns[c]) << " = " << terminalSafe(columns[c]->name) << " (thread "
            << columns[c]->thread << ")";
    out << "\n";
    if (hidden_columns)
        out << "(" << hidden_columns << " more thread" << (hidden_columns == 1 ? "" : "s")
            << " not shown: a terminal has room for " << kColumnLimit << "; 'fiberscope stats' lists them all)\n";
    // Threads that recorded but never switched, parked or unparked (the
    // epoll backend's blocking pool) run no fibers: named, not drawn.
    std::size_t laneless = 0;
    std::string laneless_names;
    for (const analysis::ThreadLane& t : timeline.threads) {
        if (t.record_count == 0 || !t.lane.intervals.empty()) continue;
        // Not the trace writer's pseudo thread of cpu-samples (FORMAT.md, "CPU samples").
        std::uint64_t records = 0;
        for (std::uint32_t n : t.records) records += n;
        if (records == t.records[static_cast<std::size_t>(EventKind::CpuSample)]) continue;
        if (++laneless <= 8) laneless_names += (laneless > 1 ? ", " : "") + terminalSafe(t.name) + " (thread " + std::to_string(t.thread) + ")";
    }
    if (laneless)
        out << "Not drawn (no fiber ever ran there): " << laneless_names << (laneless > 8 ? ", ... " + std::to_string(laneless - 8) + " more" : "")
            << "\n";
    out << "\n";

    auto pad = [](std::string text, std::size_t n) {
        if (text.size() < n) text.append(n - text.size(), ' ');
        return text;
    };
    std::string line = pad(std::string(time_width - std::min(time_width, std::string(stamp).size()), ' ') + stamp, time_width) + " |";
    for (const analysis::ThreadLane* t : columns) line += " " + pad(columnHeader(*t), width);
    while (line.back() == ' ') line.pop_back();
    out << line << "\n";
    out << std::string(time_width + 1, '-') << "+" << std::string(columns.size() * (width + 1), '-') << "\n";
    for (std::int64_t row = 0; row < rows; ++row) {
        std::snprintf(stamp, sizeof stamp, "%*.*f", static_cast<int>(time_width), unit.decimals,
                      static_cast<double>(row * bucket) / static_cast<double>(unit.ns));
        line = std::string(stamp) + " |";
        for (std::size_t c = 0; c < columns.size(); ++c) line += " " + pad(texts[c][static_cast<std::size_t>(row)], width);
        const auto& row_marks = marks[static_cast<std::size_t>(row)];
        if (!row_marks.empty()) {
            line += "  <- mark" + std::string(row_marks.size() > 1 ? "s" : "") + ": ";
            for (std::size_t i = 0; i < row_marks.size(); ++i) line += (i ? ", " : "") + row_marks[i];
        } else {
            while (!line.empty() && line.back() == ' ') line.pop_back();
        }
        out << line << "\n";
    }
    writeLegend(timeline, ran, options.legend_limit, out);
}

} // namespace fiberscope::trace
