// The legend: what every colour, glyph and arrow means, and the controls.
#include <imgui.h>

#include <string>

#include "model/describe.hpp"
#include "model/flow_select.hpp"
#include "ui/app.hpp"
#include "ui/colors.hpp"
#include "ui/glyphs.hpp"

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
        ImGui::TextWrapped("%s", text); // wrapped, never clipped at the panel's edge
    };
    ImGui::TextUnformatted("Thread lanes");
    swatch(fiberColor(7), "a fiber running (one stable colour per fiber; its name when it fits)");
    swatch(palette::idle, "the idle loop: the thread looks for work (findReadyFiber, steals)");
    swatch(palette::parked, parked.c_str());
    swatch(cpuWaitColor(0), "the CPU strip under a lane (the OS's samples): the thread ran whenever it was ready");
    swatch(cpuWaitColor(0.25), "... it waited, ready, on a kernel runqueue for part of the interval (preempted)");
    swatch(cpuWaitColor(1), "... for half of it or more: red, another program had its CPU");
    swatch(darker(fiberColor(7), 0.8f),
           "ready queue (under a worker's lane): each fiber waiting in it, from its schedule to its run, in the "
           "order they came (View > Ready queues)");
    swatch(darker(palette::steal, 0.8f), "... an orange end: a steal moved the whole queue to another worker, where the chip goes on");
    ImGui::Spacing();
    ImGui::TextUnformatted("Fiber lanes");
    swatch(palette::ready, "ready: in a ready queue, waiting for a thread");
    swatch(palette::waiting, "waiting: on I/O, a timer, a mutex, a condition or another fiber");
    ImGui::Spacing();
    // Each record kind with the glyph the thread lanes draw for it.
    auto glyph = [&](trace::EventKind kind, const char* text) {
        const ImVec2 at = ImGui::GetCursorScreenPos();
        const float h = ImGui::GetTextLineHeight();
        const float y = kind == trace::EventKind::Mark ? at.y + h - 2 : at.y + h / 2;
        dl->AddRectFilled(ImVec2(at.x, at.y), ImVec2(at.x + 26, at.y + h), palette::lane_alt, 2.0f);
        drawRecordGlyph(dl, kind, at.x + 13, y);
        ImGui::Dummy(ImVec2(30, h));
        ImGui::SameLine();
        ImGui::TextWrapped("%s", text);
    };
    // Each flow kind: its switch, the arrow as the timeline draws it, what it joins.
    auto arrow = [&](FlowKind kind, const char* text) {
        ImGui::PushID(static_cast<int>(kind));
        ImGui::CheckboxFlags("##on", &app.flow_kinds, flowBit(kind));
        if (ImGui::IsItemHovered()) ImGui::SetTooltip("draw %s arrows", flowKindName(kind));
        ImGui::PopID();
        ImGui::SameLine();
        const ImVec2 at = ImGui::GetCursorScreenPos();
        const float h = ImGui::GetFrameHeight();
        drawFlowSample(dl, kind, ImVec2(at.x + 2, at.y + h * 0.3f), ImVec2(at.x + 44, at.y + h * 0.7f),
                       (app.flow_kinds & flowBit(kind)) != 0);
        ImGui::Dummy(ImVec2(50, h));
        ImGui::SameLine();
        ImGui::AlignTextToFramePadding();
        ImGui::TextWrapped("%s", text);
    };
    ImGui::TextUnformatted("Glyphs (under each thread lane)");
    glyph(trace::EventKind::Schedule, "schedule(): fibers made ready (hand-off, new worker, own queue)");
    glyph(trace::EventKind::Steal, "steal: an idle thread took another's whole ready queue (queue word)");
    glyph(trace::EventKind::StealHalf, "steal-half: an idle thread took the older half of another's ring of yielders (scaling policy)");
    glyph(trace::EventKind::StealOne, "steal-one: an idle thread took the oldest of another's new work, or its run_next fiber (scaling policy)");
    glyph(trace::EventKind::WakeupSent, wakeup.c_str());
    glyph(trace::EventKind::Search, "search: a thread out of work searches the others' queues before parking, then stops (scaling policy)");
    glyph(trace::EventKind::Submit, epoll ? "submit: an operation a fiber started (a readiness wait, a syscall, a timer, a pool job)"
                                          : "submit: an io_uring operation queued by a fiber");
    glyph(trace::EventKind::Complete, "complete: its completion arrived");
    glyph(trace::EventKind::CancelRequest, "cancel requested / delivered");
    glyph(trace::EventKind::FiberCreate, "spawn: a fiber created");
    glyph(trace::EventKind::MutexContended, "mutex: a lock contended, or handed to a waiter");
    glyph(trace::EventKind::ConditionWait, "condition: a wait, or a signal / broadcast waking one");
    glyph(trace::EventKind::Mark, "a mark (trace::mark, lesson checkpoints)");
    ImGui::Spacing();
    ImGui::TextUnformatted("Arrows: cause -> effect (tick to show; * only when zoomed in)");
    arrow(FlowKind::Steal, "steal: where the fiber was queued on the victim -> the thief");
    arrow(FlowKind::Wakeup, "wake-up: sent -> received by the idle thread");
    arrow(FlowKind::Cancel, "cancel: request -> delivery to the fiber (dashed)");
    arrow(FlowKind::Canceled, "canceled: delivery -> the -ECANCELED completion, or the wait's resume (dashed)");
    arrow(FlowKind::Completion, "* completion: submit -> the fiber resumed after it completed (dotted)");
    arrow(FlowKind::Spawn, "* spawn: the parent's create -> the child's first run");
    arrow(FlowKind::AwaitChain, "* await: the awaited fiber's finish -> the awaiter's resume");
    arrow(FlowKind::MutexHandoff, "* mutex hand-off: the unlocking fiber -> the new owner's resume");
    arrow(FlowKind::ConditionWake, "* condition wake: the signaling fiber -> the woken fiber's resume");
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::TextWrapped("An arrow whose other end is outside the view ends in a ring at the view's edge.");
    ImGui::PopStyleColor();
    ImGui::Spacing();
    ImGui::TextUnformatted("Controls");
    ImGui::BulletText("Mouse wheel: zoom at the pointer.  Drag: pan.  F: fit.");
    ImGui::BulletText("Shift+drag: select a range (Selection tab).");
    ImGui::BulletText("Click: pin the scheduler state at that instant; Esc unpins.");
    ImGui::BulletText("Hover anything for what the runtime did and why.");
    ImGui::BulletText("Ctrl+O or drop a file on the window: open another trace.");
}

} // namespace fiberscope::viewer
