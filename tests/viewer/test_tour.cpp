// The narrated tour (viewer/src/lessons/tour.hpp): every lesson.md's
// sentences that name a checkpoint or records, resolved through the record
// table; its record snippets checked against that table; and on each
// lesson's reference run, the records its stops name found in their
// checkpoint's stretch of the trace.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "lessons/tour.hpp"

using namespace fiberscope;
using namespace fiberscope::viewer;

namespace {

std::string readFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// Each lesson folder's slug ("04-work-stealing").
std::vector<std::string> lessonSlugs() {
    std::vector<std::string> slugs;
    for (const auto& entry : std::filesystem::directory_iterator(FIBERSCOPE_LESSONS_DIR)) {
        const std::string slug = entry.path().filename().string();
        if (entry.is_directory() && slug.size() > 3 && slug[2] == '-') slugs.push_back(slug);
    }
    std::sort(slugs.begin(), slugs.end());
    return slugs;
}

} // namespace

TEST_CASE("a tour's stops: sentences naming checkpoints and records", "[viewer][tour]") {
    const std::string md = "# Lesson\n\nIntro with `schedule` before the section is not a stop.\n\n"
                           "## What to look for\n\n"
                           "**After `checkpoint: first burst`.** The spawner calls `async` twelve times. The "
                           "`schedule` records tell what happened, e.g. a `how=idle-handoff` followed by "
                           "`wakeup-sent target=N`.\n\n"
                           "- `own-queue`: every thread is busy.\n"
                           "- Nothing named here.\n\n"
                           "```\nschedule fiber=F how=own-queue\n```\n\n"
                           "Then `steal victim=2` and `complete result=-62` happen.\n\n"
                           "A `cancel-request target=1` goes to worker 1's ring, a `cancel-request target=none` to none.\n\n"
                           "**From `checkpoint: arrivals` to `checkpoint: main unlocks`.** Each `mutex-contended` queues.\n\n"
                           "## Try this\n\n- `--threads 2`: a `steal` every turn (another run: not a stop).\n";
    const std::vector<tour::Stop> stops = tour::parseTour(md);
    REQUIRE(stops.size() == 7); // (none from "Try this")
    CHECK(stops[0].sentence == "After checkpoint: first burst.");
    CHECK(stops[0].checkpoint == "checkpoint: first burst");
    CHECK(stops[0].records.empty());
    // "The `schedule` records ... e.g. a ..." is one sentence: "e.g." does not end it.
    REQUIRE(stops[1].records.size() == 3);
    CHECK(stops[1].records[0].kind == trace::EventKind::Schedule);
    CHECK(stops[1].records[0].fields.empty());
    CHECK(stops[1].records[1].kind == trace::EventKind::Schedule);
    REQUIRE(stops[1].records[1].fields.size() == 1);
    CHECK(stops[1].records[1].fields[0].value == static_cast<std::uint64_t>(trace::ScheduleHow::IdleHandoff));
    CHECK(stops[1].records[2].kind == trace::EventKind::WakeupSent);
    CHECK(stops[1].records[2].fields.empty()); // target=N is a placeholder
    CHECK(stops[1].checkpoint == "checkpoint: first burst");
    // A bare value that one kind's field has.
    REQUIRE(stops[2].records.size() == 1);
    CHECK(stops[2].records[0].kind == trace::EventKind::Schedule);
    CHECK(stops[2].line == 9);
    // Numbers and signed values match as the reader stores them.
    REQUIRE(stops[3].records.size() == 2);
    trace::Event steal{};
    steal.kind = trace::EventKind::Steal;
    steal.arg[1] = 2;
    CHECK(tour::matches(stops[3].records[0], steal));
    steal.arg[1] = 3;
    CHECK_FALSE(tour::matches(stops[3].records[0], steal));
    trace::Event complete{};
    complete.kind = trace::EventKind::Complete;
    complete.arg[1] = static_cast<std::uint64_t>(std::int64_t{-62});
    CHECK(tour::matches(stops[3].records[1], complete));
    // A cancel-request's target is stored as 1 + the worker; the text names the worker, as `records` prints it.
    REQUIRE(stops[4].records.size() == 2);
    trace::Event request{};
    request.kind = trace::EventKind::CancelRequest;
    request.arg[1] = 2; // worker 1
    CHECK(tour::matches(stops[4].records[0], request));
    CHECK_FALSE(tour::matches(stops[4].records[1], request));
    request.arg[1] = 0; // no ring
    CHECK(tour::matches(stops[4].records[1], request));
    CHECK_FALSE(tour::matches(stops[4].records[0], request));
    // "From A to B" is A's story, and so are the sentences after it.
    CHECK(stops[5].checkpoint == "checkpoint: arrivals");
    CHECK(stops[6].checkpoint == "checkpoint: arrivals");
}

TEST_CASE("a tour's stops know the backend their section is about", "[viewer][tour]") {
    const std::string md = "## What to look for\n\n### On io_uring: completions\n\nA `submit opcode=27` waits.\n\n"
                           "### On epoll: readiness\n\nA `submit opcode=6` waits.\n\n### Both\n\nEach `complete` ends one.\n";
    const std::vector<tour::Stop> stops = tour::parseTour(md);
    REQUIRE(stops.size() == 3);
    CHECK(stops[0].backend == "io_uring");
    CHECK(stops[1].backend == "epoll");
    CHECK(stops[2].backend.empty());
}

TEST_CASE("a snippet naming a field or value its record does not have is a finding", "[viewer][tour]") {
    const std::string md = "`schedule head=F count=1 how=idle-handof`\n\n```\nswitch from=1 to=2 reason=io-wait\nswitch "
                           "reason=nap\n```\n`FIBERSCOPE_TRACE=1` and `target=N` are not snippets.\n";
    const std::vector<std::string> findings = tour::snippetFindings(md, "x.md");
    INFO(Catch::Detail::stringify(findings));
    REQUIRE(findings.size() == 3);
    CHECK(findings[0] == "x.md:1: schedule has no field 'head' (its fields: fiber, count, target, how)");
    CHECK(findings[1].find("x.md:1: schedule's how is never 'idle-handof'") == 0);
    CHECK(findings[2].find("x.md:5: switch's reason is never 'nap'") == 0);
}

// Every lesson spells its records as the record table does (a renamed
// field, or `head=` for `fiber=`, fails here, naming the line).
TEST_CASE("every lesson's record snippets name fields and values their records have", "[viewer][tour]") {
    const auto slugs = lessonSlugs();
    REQUIRE(slugs.size() >= 17);
    for (const std::string& slug : slugs) {
        const std::string file = slug + "/lesson.md";
        const auto findings = tour::snippetFindings(readFile(std::string(FIBERSCOPE_LESSONS_DIR) + "/" + file), file);
        for (const std::string& f : findings) FAIL_CHECK(f);
    }
}

// On each reference run, most of a lesson's stops that name records light
// some (in their checkpoint's stretch, else anywhere): the tour shows what it
// says. Not all: a sentence may say a record does not happen, and lesson 15's
// reference run is the seed's, where its scaling paragraph's records are not.
TEST_CASE("a lesson's tour lights the records it names on its reference run", "[viewer][tour]") {
    for (const std::string& slug : lessonSlugs()) {
        const std::string md = readFile(std::string(FIBERSCOPE_LESSONS_DIR) + "/" + slug + "/lesson.md");
        const std::vector<tour::Stop> stops = tour::parseTour(md);
        INFO(slug);
        CHECK(stops.size() >= 4);
        trace::Trace trace;
        trace::ReadError error;
        REQUIRE(trace::readTrace(std::string(FIBERSCOPE_GOLDEN_TRACES) + "/lesson" + slug + ".fstrace", trace, error));
        // Checkpoint marks by label, in order.
        std::vector<std::pair<std::string, std::size_t>> marks;
        for (std::size_t i = 0; i < trace.events.size(); ++i)
            if (trace.events[i].kind == trace::EventKind::Mark && trace.string(trace.events[i].arg[0]).rfind("checkpoint: ", 0) == 0)
                marks.emplace_back(trace.string(trace.events[i].arg[0]), i);
        int with_records = 0, lit = 0;
        std::string dark;
        for (const tour::Stop& stop : stops) {
            if (stop.records.empty()) continue;
            ++with_records;
            std::size_t first = 0, last = trace.events.size();
            for (std::size_t m = 0; m < marks.size(); ++m)
                if (marks[m].first == stop.checkpoint) {
                    first = marks[m].second;
                    last = m + 1 < marks.size() ? marks[m + 1].second : trace.events.size();
                    break;
                }
            if (!tour::recordsOf(stop, trace, first, last, 1).empty() || !tour::recordsOf(stop, trace, 0, trace.events.size(), 1).empty())
                ++lit;
            else
                dark += "\n  line " + std::to_string(stop.line) + ": " + stop.sentence;
        }
        INFO("stops naming records that the reference run does not have:" << dark);
        CHECK(lit * 3 >= with_records * 2);
    }
}
