// Compare, side by side (issue 14): with a second run in the compare slot
// (`fiberscope screenshot --compare FILE`, as the lesson panel's Compare
// fills it), the compared run's lanes carry its flow arrows, and the
// Selection panel puts both whole runs' totals side by side.
//
// Two recordings of lesson 3 (work stealing's cousin: waking idle threads)
// with one and with two worker threads: the first has nobody to steal from,
// the second steals (its `fiberscope stats` counts them), so steal-coloured
// arrowheads in the compared lanes can only be the compared run's arrows.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <stb/stb_image.h>

#include "screenshot_support.hpp"
#include "ui/colors.hpp"

namespace {

using Shot = test::CommandRun;
using Picture = test::Image;
Shot run(const std::string& command) { return test::runCommand(command); }

const std::string kTool = FIBERSCOPE_TOOL;

// The timeline's layout (timeline_view.cpp): the label column, and a thread
// lane's height (30), glyph strip (8) and gap (3); the compared run's lanes
// start 16 px under its "COMPARE" title.
constexpr int kLabelColumn = 132;
constexpr int kLanePeriod = 41;
constexpr int kSide = 460; // the side panel at 1600 px

} // namespace

TEST_CASE("a compared run gets its flow arrows and both runs' totals side by side", "[viewer][screenshot][compare]") {
    const std::string base = "/tmp/fiberscope-compare-" + std::to_string(getpid());
    const std::string one = base + "-t1.fstrace", two = base + "-t2.fstrace";
    for (const auto& [file, threads] : {std::pair{one, 1}, std::pair{two, 2}}) {
        const Shot lesson = run(kTool + " lesson 3 --threads " + std::to_string(threads) + " -o " + file + " --no-view");
        INFO(lesson.output);
        REQUIRE(lesson.status == 0);
    }
    // The two-thread run stole (else the picture cannot show a steal arrow).
    const Shot stats = run(kTool + " stats " + two);
    REQUIRE(stats.status == 0);
    using namespace fiberscope::viewer;
    const std::string compared = base + "-compare.png", alone = base + "-alone.png", totals = base + "-totals.png",
                      totals_alone = base + "-totals-alone.png";
    const std::string common = " --size 1600x900 --range 0:60ms";
    for (const auto& [png, extra] : {std::pair{compared, " --compare " + two}, std::pair{alone, std::string()},
                                     std::pair{totals, " --compare " + two + " --panel selection"},
                                     std::pair{totals_alone, std::string(" --panel selection")}}) {
        const Shot shot = run(kTool + " screenshot " + one + " -o " + png + common + extra);
        INFO(shot.output);
        REQUIRE(shot.status == 0);
    }
    Picture with, without;
    REQUIRE(with.load(compared));
    REQUIRE(without.load(alone));
    const int timeline_right = with.width - kSide - 12;
    // The COMPARE title (the cursor's colour in the label column) and the compared lanes under it.
    int title = -1;
    for (int y = 0; y < with.height && title < 0; ++y)
        for (int x = 0; x < kLabelColumn && title < 0; ++x)
            if (with.is(x, y, palette::cursor, 8)) title = y;
    REQUIRE(title > 0);
    CHECK(without.count(0, 0, kLabelColumn, without.height, palette::cursor) == 0); // no title without a compared run
    // Steal-coloured arrowheads at the compared lanes' centres (lane top + 15,
    // away from the glyph strip at + 30..38 where the steal diamonds are).
    long heads = 0;
    for (int lane = 0; lane < 2; ++lane) {
        const int top = title - 2 + 16 + lane * kLanePeriod;
        heads += with.count(kLabelColumn + 8, top + 7, timeline_right, top + 24, palette::steal);
    }
    CHECK(heads > 20);
    // The one-thread run has no steal: nothing steal-coloured above the compared lanes.
    CHECK(with.count(kLabelColumn + 8, 0, timeline_right, title - 4, palette::steal) == 0);
    // The totals table: a busy bar for each run's threads (1 + 2) beside the
    // range's own bars (one thread): more of the running colour in the side
    // panel than without the compared run.
    Picture table, no_table;
    REQUIRE(table.load(totals));
    REQUIRE(no_table.load(totals_alone));
    const long bars = table.count(table.width - kSide, 0, table.width, table.height, palette::schedule);
    const long bars_alone = no_table.count(no_table.width - kSide, 0, no_table.width, no_table.height, palette::schedule);
    INFO("running-colour pixels in the side panel: " << bars << " with the compared run, " << bars_alone << " without");
    CHECK(bars > bars_alone + 200);
    // (and the pictures `lesson --no-view` wrote beside the traces)
    for (const std::string& f : {one, two, compared, alone, totals, totals_alone, base + "-t1.png", base + "-t2.png"}) unlink(f.c_str());
}

// The state panel's motion, frozen (--motion PERCENT, the test hook): on the
// sample trace's first submit (greeter 3's timer goes into the ring while it
// runs), the panel mid-move differs from its start and from its end, and the
// end is exactly the still picture.
TEST_CASE("the state panel's chips move and end exactly at the new state", "[viewer][screenshot][motion]") {
    const std::string base = "/tmp/fiberscope-motion-" + std::to_string(getpid());
    const std::string args = std::string(" --size 1600x900 --range 300us:420us --cursor 363721ns");
    std::vector<std::string> pngs;
    for (const std::string& motion : {std::string(" --motion 0"), std::string(" --motion 50"), std::string(" --motion 100"), std::string()}) {
        pngs.push_back(base + "-" + std::to_string(pngs.size()) + ".png");
        const Shot shot = run(kTool + " screenshot " + FIBERSCOPE_SAMPLE_TRACE + " -o " + pngs.back() + args + motion);
        INFO(shot.output);
        REQUIRE(shot.status == 0);
    }
    Picture start, middle, end, still;
    REQUIRE(start.load(pngs[0]));
    REQUIRE(middle.load(pngs[1]));
    REQUIRE(end.load(pngs[2]));
    REQUIRE(still.load(pngs[3]));
    const auto differing = [](const Picture& a, const Picture& b) {
        long n = 0;
        for (int y = 0; y < a.height; ++y)
            for (int x = a.width - kSide; x < a.width; ++x)
                n += std::memcmp(a.pixels + (static_cast<long>(y) * a.width + x) * 4, b.pixels + (static_cast<long>(y) * b.width + x) * 4, 3) != 0;
        return n;
    };
    CHECK(differing(start, middle) > 100);
    CHECK(differing(middle, end) > 100);
    CHECK(differing(end, still) == 0);
    for (const std::string& png : pngs) unlink(png.c_str());
}
