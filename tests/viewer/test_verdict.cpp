// The verdict banner (issue 35): a trace that contradicts itself is shown
// under a dark red band naming its first contradiction and their count, a
// consistent one under none, and a click on the band goes there: the cursor
// at the record's time, the view around it, the record selected in the
// Events panel. Headless: `fiberscope screenshot` for the pictures, and a
// window of the test's own under Xvfb for the click (Window::setPointer).
// A trace still being recorded is judged once it is complete, not before.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "contradicting_trace.hpp"
#include "growing_trace.hpp"
#include "platform/virtual_display.hpp"
#include "platform/window.hpp"
#include "screenshot_support.hpp"
#include "ui/app.hpp"
#include "ui/colors.hpp"

using namespace fiberscope::viewer;

namespace {

const std::string kTool = FIBERSCOPE_TOOL;
// A consistent trace: every golden trace verifies (tests/lessons).
const std::string kConsistent = std::string(FIBERSCOPE_GOLDEN_TRACES) + "/lesson02-context-switch.fstrace";

std::string scratch(const std::string& what) { return "/tmp/fiberscope-verdict-" + std::to_string(getpid()) + "-" + what; }

// The rows of an RGBA picture that are mostly banner: half their width or
// more in the banner's colour. Its text breaks the band only here and
// there; a fiber block of a red darkened that far never fills half a row.
std::vector<int> bannerRows(const unsigned char* pixels, int width, int height) {
    const Color c = palette::violation;
    std::vector<int> rows;
    for (int y = 0; y < height; ++y) {
        int n = 0;
        for (int x = 0; x < width; ++x) {
            const unsigned char* p = pixels + (static_cast<long>(y) * width + x) * 4;
            n += std::abs(p[0] - static_cast<int>(c & 0xFF)) <= 2 && std::abs(p[1] - static_cast<int>((c >> 8) & 0xFF)) <= 2 &&
                 std::abs(p[2] - static_cast<int>((c >> 16) & 0xFF)) <= 2;
        }
        if (2 * n >= width) rows.push_back(y);
    }
    return rows;
}

std::vector<int> bannerRowsOf(const std::string& png) {
    test::Image image;
    REQUIRE(image.load(png));
    return bannerRows(image.pixels, image.width, image.height);
}

std::vector<int> screenshotBannerRows(const std::string& trace, const std::string& png, const std::string& extra = {}) {
    const test::CommandRun shot = test::runCommand(kTool + " screenshot " + trace + " -o " + png + " --size 1280x720" + extra);
    INFO(shot.output);
    REQUIRE(shot.status == 0);
    return bannerRowsOf(png);
}

} // namespace

TEST_CASE("a trace that contradicts itself is shown under a banner naming its first contradiction", "[viewer][screenshot][verdict]") {
    const std::string bad = scratch("bad.fstrace");
    REQUIRE(test::writeContradictingTrace(bad));
    // The verdict the load judged: the count, and the first in full.
    App app;
    REQUIRE(loadTrace(app, bad));
    CHECK(app.verdict.checked);
    CHECK(app.verdict.violations == test::kContradictions);
    CHECK(app.verdict.first.rule == fiberscope::analysis::Rule::WakeupUnmatched);
    CHECK(app.verdict.first.time == test::kFirstContradictionNs);
    INFO(app.verdict.line);
    CHECK(app.verdict.line.find("contradicts itself in 2 places") != std::string::npos);
    CHECK(app.verdict.line.find("20.00 us thread 1 (worker 1): wakeup-unmatched: ") != std::string::npos);
    App consistent;
    REQUIRE(loadTrace(consistent, kConsistent));
    CHECK(consistent.verdict.checked);
    CHECK(consistent.verdict.violations == 0);
    CHECK(consistent.verdict.line.empty());

    // The pictures: a band across the window under the toolbar (its text
    // wraps to two lines at 1280 pixels), and none on the consistent trace.
    const std::vector<int> rows = screenshotBannerRows(bad, scratch("bad.png"));
    INFO("banner rows: " << rows.size() << (rows.empty() ? "" : " from " + std::to_string(rows.front()) + " to " + std::to_string(rows.back())));
    CHECK(rows.size() >= 25);
    REQUIRE(!rows.empty());
    CHECK(rows.front() > 30);  // under the menu and the toolbar
    CHECK(rows.back() < 120);  // above the timeline
    CHECK(screenshotBannerRows(kConsistent, scratch("good.png")).empty());
    // A compared run that contradicts itself gets a band of its own.
    CHECK(screenshotBannerRows(kConsistent, scratch("compared.png"), " --compare " + bad).size() >= 25);
    for (const char* file : {"bad.fstrace", "bad.png", "good.png", "compared.png"}) std::remove(scratch(file).c_str());
}

TEST_CASE("a click on the verdict banner goes to the first contradiction and selects its record", "[viewer][xvfb][verdict]") {
    const std::string bad = scratch("click.fstrace");
    REQUIRE(test::writeContradictingTrace(bad));
    VirtualDisplay display;
    std::string error;
    REQUIRE(display.ensure(error));
    Window window;
    REQUIRE(window.open({.width = 1280, .height = 720, .visible = false, .title = "verdict"}, error));
    App app;
    app.headless = true;
    REQUIRE(loadTrace(app, bad));
    // The record that contradicts: the first wake-up received. A mark
    // follows it at its instant, so the table's row for the cursor's time
    // alone would be the mark's.
    const fiberscope::trace::Trace& trace = *app.trace;
    std::uint32_t record = kNoEvent;
    for (std::uint32_t i = 0; i < trace.events.size() && record == kNoEvent; ++i)
        if (trace.events[i].kind == fiberscope::trace::EventKind::WakeupReceived) record = i;
    REQUIRE(record == app.verdict.first.event);
    REQUIRE(record + 1 < trace.events.size());
    REQUIRE(trace.events[record + 1].time == trace.events[record].time);

    const auto frames = [&](int n) {
        for (int i = 0; i < n; ++i) {
            window.frame([&] { drawApp(app, window.fonts()); });
            window.present();
        }
    };
    const Window::Pointer away{640, 712, false}; // on the status bar
    window.setPointer(away);
    frames(3);
    int width = 0, height = 0;
    const std::vector<unsigned char> before = window.readPixels(width, height);
    const std::vector<int> rows = bannerRows(before.data(), width, height);
    REQUIRE(rows.size() >= 25);
    CHECK(app.cursor == -1);
    CHECK(app.selected_event == kNoEvent);

    // Press and release on the band.
    const float x = static_cast<float>(width) * 0.3f, y = static_cast<float>(rows.front() + rows.back()) / 2;
    window.setPointer(Window::Pointer{x, y, false});
    frames(1);
    window.setPointer(Window::Pointer{x, y, true});
    frames(1);
    window.setPointer(Window::Pointer{x, y, false});
    frames(1);
    CHECK(app.cursor == test::kFirstContradictionNs);
    CHECK(app.selected_event == record);
    const double at = static_cast<double>(test::kFirstContradictionNs);
    CHECK(comfortablyInView(app.view, TimeRange{at, at}));

    // Then the Events panel shows its row as the cursor's: the wake-up's,
    // not the mark's after it.
    window.setPointer(away);
    frames(4);
    CHECK(app.table_cursor_event == record);
    const std::string png = scratch("clicked.png");
    REQUIRE(window.writePng(png, error));
    CHECK(bannerRowsOf(png).size() >= 25); // (still there: the trace is no better for being looked at)
    std::remove(png.c_str());
    std::remove(bad.c_str());
}

TEST_CASE("the compared run's banner moves the cursor to its first contradiction", "[viewer][verdict][compare]") {
    const std::string bad = scratch("compare.fstrace");
    REQUIRE(test::writeContradictingTrace(bad));
    App app;
    REQUIRE(loadTrace(app, kConsistent));
    CHECK_FALSE(revealComparedViolation(app)); // nothing compared
    CHECK_FALSE(revealViolation(app));         // the trace is consistent
    LoadedTrace other;
    std::string error;
    REQUIRE(readModelAndJudge(bad, other, error));
    adoptCompared(app, std::move(other), "the run in compare.fstrace");
    REQUIRE(app.compare_verdict.violations == test::kContradictions);
    REQUIRE(revealComparedViolation(app));
    CHECK(app.cursor == test::kFirstContradictionNs);
    CHECK(app.selected_event == kNoEvent); // the table lists the first run's records, not the compared run's
    std::remove(bad.c_str());
}

TEST_CASE("a trace being recorded is judged once its recording is complete, not before", "[viewer][live][verdict]") {
    // The contradicting trace with every record written but its header not
    // yet marked complete, as a recording that has not stopped.
    const test::Bytes bytes = test::contradictingTraceBytes();
    const test::Bytes unfinished = test::unfinishedHeader(bytes);
    test::GrowingFile file(scratch("live.fstrace"));
    test::Bytes growing = bytes;
    std::copy(unfinished.begin(), unfinished.end(), growing.begin());
    file.append(growing.data(), growing.size());
    App app;
    app.headless = true;
    followFile(app, file.path());
    const auto pollUntil = [&](auto&& done) {
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (!done() && std::chrono::steady_clock::now() < deadline) {
            pollLive(app);
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return done();
    };
    // Every record is shown; the follower polls on (50 ms apart) and
    // judges nothing: no banner while the recording may still be missing
    // the causes of its newest records.
    std::size_t records = 0; // in the finished file
    {
        const std::string finished = scratch("finished.fstrace");
        REQUIRE(test::writeContradictingTrace(finished));
        fiberscope::trace::Trace trace;
        fiberscope::trace::ReadError error;
        REQUIRE(fiberscope::trace::readTrace(finished, trace, error));
        records = trace.events.size();
        std::remove(finished.c_str());
    }
    REQUIRE(pollUntil([&] { return app.trace && app.trace->events.size() == records; }));
    const auto quiet_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    pollUntil([&] { return std::chrono::steady_clock::now() > quiet_until; });
    CHECK_FALSE(app.verdict.checked);
    CHECK(app.verdict.violations == 0);
    // The recording stops (the header is rewritten complete; no record is
    // added): now it is judged.
    file.rewrite(test::Bytes(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(unfinished.size())), 0);
    REQUIRE(pollUntil([&] { return app.verdict.checked; }));
    CHECK(app.verdict.violations == test::kContradictions);
    CHECK(app.verdict.first.time == test::kFirstContradictionNs);
    CHECK(app.trace->header.complete);
}
