// The scheduler's state at one instant, drawn as a diagram: one card per
// worker thread with what it runs, its ready queue (as a row of fiber
// chips), the operations in flight in its ring, and whether it is parked in
// the kernel. This is the picture the lessons teach with.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "fiberscope/analysis/state_at.hpp"
#include "model/describe.hpp"
#include "ui/app.hpp"
#include "ui/colors.hpp"

namespace fiberscope::viewer {

namespace {

// A rounded chip with a fiber's colour and short name; returns its width.
float drawChip(ImDrawList* dl, ImVec2 at, std::uint64_t fiber, const std::string& label, float max_width) {
    const ImVec2 size = ImGui::CalcTextSize(label.c_str());
    const float w = std::min(size.x + 12, max_width);
    const Color c = fiberColor(fiber);
    dl->AddRectFilled(at, ImVec2(at.x + w, at.y + size.y + 4), c, 4.0f);
    dl->PushClipRect(at, ImVec2(at.x + w - 3, at.y + size.y + 4), true);
    dl->AddText(ImVec2(at.x + 6, at.y + 2), textOn(c), label.c_str());
    dl->PopClipRect();
    return w;
}

std::string shortName(const Timeline& tl, std::uint64_t fiber) {
    const FiberLane* f = findFiber(tl, fiber);
    return f ? f->name : "#" + std::to_string(fiber);
}

} // namespace

void drawSchedulerState(App& app, const Fonts& fonts) {
    const Timeline& tl = *app.timeline;
    const std::int64_t time = stateTime(app);
    const SchedulerState state = stateAt(tl, time);
    const trace::BackendWords& words = backendWords(*app.trace);
    const std::string parked_in = std::string("PARKED in ") + words.park_call;
    ImGui::Text("At %s", formatTime(time).c_str());
    ImGui::SameLine();
    ImGui::TextDisabled(app.cursor >= 0 ? "(pinned: click the timeline to move, Esc to follow the pointer)"
                                        : "(following the pointer; click to pin)");
    ImGui::Spacing();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float width = ImGui::GetContentRegionAvail().x;
    const float line = ImGui::GetTextLineHeight();
    std::string pool_threads; // blocking-pool threads run jobs, never fibers: named below, no card
    for (const ThreadState& t : state.threads) {
        if (trace::isBlockingPoolWorker(t.worker)) {
            pool_threads += (pool_threads.empty() ? "" : ", ") + workerLabel(t.worker);
            continue;
        }
        const ImVec2 top = ImGui::GetCursorScreenPos();
        const bool parked = t.state == State::Parked;
        // Title, runs, ready, and one row per operation in flight (at least one).
        const float rows = 3 + static_cast<float>(std::max<std::size_t>(1, std::min<std::size_t>(t.in_flight.size(), 4)));
        const float height = 12 + rows * (line + 8);
        const Color frame = !t.alive ? palette::grid : parked ? palette::parked : palette::lane_alt;
        dl->AddRectFilled(top, ImVec2(top.x + width, top.y + height), frame, 6.0f);
        dl->AddRect(top, ImVec2(top.x + width, top.y + height),
                    t.state == State::Running ? fiberColor(t.running) : palette::grid, 6.0f, 0, 1.5f);
        float y = top.y + 6;
        const std::string title = threadLabel(tl, t.thread);
        dl->AddText(ImVec2(top.x + 10, y), palette::text, title.c_str());
        const char* what = !t.alive ? "not started / exited" : parked ? parked_in.c_str() :
                           t.state == State::Idle ? "IDLE: looking for work" : "RUNNING";
        dl->AddText(ImVec2(top.x + width - ImGui::CalcTextSize(what).x - 10, y), parked ? palette::text_dim : palette::text, what);
        y += line + 8;
        // Running.
        dl->AddText(ImVec2(top.x + 10, y), palette::text_dim, "runs");
        if (t.state == State::Running) drawChip(dl, ImVec2(top.x + 90, y - 2), t.running, shortName(tl, t.running), width - 100);
        else dl->AddText(ImVec2(top.x + 90, y), palette::text_dim, parked ? "nothing (asleep in the kernel)" : "its idle loop");
        y += line + 8;
        // Ready queue.
        dl->AddText(ImVec2(top.x + 10, y), palette::text_dim, "ready");
        float x = top.x + 90;
        if (t.ready.empty()) dl->AddText(ImVec2(x, y), palette::text_dim, "empty");
        std::size_t shown = 0;
        for (const ReadyEntry& r : t.ready) {
            if (x > top.x + width - 60) {
                char more[32];
                std::snprintf(more, sizeof more, "+%zu more", t.ready.size() - shown);
                dl->AddText(ImVec2(x, y), palette::text_dim, more);
                break;
            }
            x += drawChip(dl, ImVec2(x, y - 2), r.fiber, shortName(tl, r.fiber), 110) + 4;
            ++shown;
        }
        y += line + 8;
        // In flight: in its ring (io_uring) or registered with its epoll.
        dl->AddText(ImVec2(top.x + 10, y), palette::text_dim, words.in_flight_short);
        if (t.in_flight.empty()) dl->AddText(ImVec2(top.x + 90, y), palette::text_dim, "nothing in flight");
        for (std::size_t i = 0; i < t.in_flight.size() && i < 4; ++i) {
            const InFlightOp& op = t.in_flight[i];
            char text[160];
            char fd[32] = "";
            if (op.fd >= 0) std::snprintf(fd, sizeof fd, " (fd %lld)", static_cast<long long>(op.fd));
            std::snprintf(text, sizeof text, "%s%s for %s, %s so far", opcodeNoun(op.opcode).c_str(), fd,
                          shortName(tl, op.fiber).c_str(), formatDuration(time - op.since).c_str());
            dl->AddCircleFilled(ImVec2(top.x + 94, y + line / 2), 3, palette::submit);
            dl->AddText(ImVec2(top.x + 102, y), palette::text, text);
            y += line + 8;
        }
        if (t.in_flight.size() > 4) {
            char more[48];
            std::snprintf(more, sizeof more, "... and %zu more", t.in_flight.size() - 4);
            dl->AddText(ImVec2(top.x + 102, y - line - 8 + line), palette::text_dim, more);
        }
        ImGui::Dummy(ImVec2(width, height + 8));
    }
    (void)fonts;
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    if (!pool_threads.empty())
        ImGui::TextWrapped("%s: run%s blocking jobs (a regular file on epoll, a name lookup) for fibers parked on a worker; no fibers, "
                           "no ready queue",
                           pool_threads.c_str(), pool_threads.find(',') == std::string::npos ? "s" : "");
    if (!state.parked.empty())
        ImGui::TextWrapped("%zu thread(s) parked in %s: woken by %s", state.parked.size(), words.park_call, words.park_waits_for);
    ImGui::PopStyleColor();
}

} // namespace fiberscope::viewer
