// The legend: what every colour, glyph and arrow means, and the controls.
#include <imgui.h>

#include <string>

#include "model/describe.hpp"
#include "ui/app.hpp"
#include "ui/colors.hpp"

namespace fiberscope::viewer {

void drawLegend(App& app) {
    // The words of the trace's backend: what a park, a wake-up and a submit are there.
    const trace::BackendWords& words = backendWords(*app.trace);
    const bool epoll = words.backend == trace::Backend::Epoll;
    const std::string parked = std::string("parked: waiting in ") + words.park_call + " for " + words.park_waits_for;
    const std::string wakeup = std::string("wake-up: ") + (epoll ? "an eventfd write" : "a MSG_RING") + " sent to an idle thread, and received";
    ImDrawList* dl = ImGui::GetWindowDrawList();
    auto swatch = [&](Color c, const char* text) {
        const ImVec2 at = ImGui::GetCursorScreenPos();
        const float h = ImGui::GetTextLineHeight();
        dl->AddRectFilled(ImVec2(at.x, at.y + 2), ImVec2(at.x + 26, at.y + h - 2), c, 2.0f);
        ImGui::Dummy(ImVec2(30, h));
        ImGui::SameLine();
        ImGui::TextUnformatted(text);
    };
    ImGui::TextUnformatted("Thread lanes");
    swatch(fiberColor(7), "a fiber running (one stable colour per fiber; its name when it fits)");
    swatch(palette::idle, "the idle loop: the thread looks for work (findReadyFiber, steals)");
    swatch(palette::parked, parked.c_str());
    ImGui::Spacing();
    ImGui::TextUnformatted("Fiber lanes");
    swatch(palette::ready, "ready: in a ready queue, waiting for a thread");
    swatch(palette::waiting, "waiting: on I/O, a timer, a mutex, a condition or another fiber");
    ImGui::Spacing();
    ImGui::TextUnformatted("Glyphs and arrows");
    swatch(palette::schedule, "schedule(): fibers made ready (hand-off, new worker, own queue)");
    swatch(palette::steal, "steal: an idle thread took another's ready queue");
    swatch(palette::wakeup, wakeup.c_str());
    swatch(palette::submit, epoll ? "submit: an operation a fiber started (a readiness wait, a syscall, a timer, a pool job)"
                                  : "submit: an io_uring operation queued by a fiber");
    swatch(palette::complete, "complete: its completion arrived");
    swatch(palette::cancel, "cancel requested / delivered; arrow: request to delivery");
    swatch(palette::canceled, "canceled: delivery to the -ECANCELED completion / resume");
    swatch(palette::mark, "a mark (trace::mark, lesson checkpoints)");
    swatch(palette::spawn, "spawn: parent fiber to child's first run");
    swatch(palette::await, "await chain: finish to the awaiter; mutex, condition records");
    swatch(palette::mutex_handoff, "mutex hand-off: the unlocking fiber to the new owner");
    swatch(palette::condition_wake, "condition wake: the signaling fiber to the woken one");
    ImGui::Spacing();
    ImGui::TextUnformatted("Controls");
    ImGui::BulletText("Mouse wheel: zoom at the pointer.  Drag: pan.  F: fit.");
    ImGui::BulletText("Shift+drag: select a range (Selection tab).");
    ImGui::BulletText("Click: pin the scheduler state at that instant; Esc unpins.");
    ImGui::BulletText("Hover anything for what the runtime did and why.");
    ImGui::BulletText("Ctrl+O or drop a file on the window: open another trace.");
}

} // namespace fiberscope::viewer
