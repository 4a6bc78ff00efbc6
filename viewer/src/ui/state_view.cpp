// The scheduler's state at one instant, drawn as a diagram: one card per
// worker thread with what it runs, how it found it (the steps of
// findReadyFiber, the one its last decision took lit: model/found_by.hpp),
// its ready queue (as a row of fiber chips), the operations in flight in
// its ring, and whether it is parked in the kernel. This is the picture the lessons teach with. Below them, one
// small card per object the runtime's fibers meet at that instant (issue 14):
// each mutex's holder and waiters, each condition's waiters, each Queue's
// depth and blocked fibers, each Semaphore's and RwLock's holders and
// waiters, each Event's state and waiters, and the wake-ups and cancels on their way. The
// object replay's index (object_state.hpp) is built once per loaded trace
// and kept in App::panels, so a hover frame costs a binary search and a
// short replay.
#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fiberscope/analysis/object_state.hpp"
#include "fiberscope/analysis/state_at.hpp"
#include "model/cpu_samples.hpp"
#include "model/describe.hpp"
#include "model/found_by.hpp"
#include "model/state_motion.hpp"
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
    return f ? f->name() : "#" + std::to_string(fiber);
}

// The object index of the trace on screen, rebuilt when another trace is
// loaded or a followed trace grows.
const ObjectIndex& objectIndex(App& app, const trace::Trace& trace, const Timeline& tl) {
    std::unique_ptr<ObjectIndexCache>& cached = app.panels.objects;
    if (!cached || cached->trace != trace.serial || cached->timeline != tl.serial || cached->events != trace.events.size() || cached->end != tl.end_time) {
        auto fresh = std::make_unique<ObjectIndexCache>();
        fresh->trace = trace.serial;
        fresh->timeline = tl.serial;
        fresh->events = trace.events.size();
        fresh->end = tl.end_time;
        fresh->index = buildObjectIndex(trace, tl);
        cached = std::move(fresh);
    }
    return cached->index;
}

// One object card: a title, then rows of a dim label and fiber chips (or a
// dim note when the list is empty). Chips that do not fit say "+N more".
struct CardRow {
    std::string label;
    std::vector<std::uint64_t> fibers;
    std::string note;  // drawn after the chips (or alone)
};

void drawObjectCard(ImDrawList* dl, const Timeline& tl, Color accent, const std::string& title, const std::string& aside,
                    const std::vector<CardRow>& rows) {
    const float width = ImGui::GetContentRegionAvail().x;
    const float line = ImGui::GetTextLineHeight();
    const ImVec2 top = ImGui::GetCursorScreenPos();
    const float height = 8 + (1 + static_cast<float>(rows.size())) * (line + 6);
    dl->AddRectFilled(top, ImVec2(top.x + width, top.y + height), palette::lane_alt, 5.0f);
    dl->AddRectFilled(top, ImVec2(top.x + 4, top.y + height), accent, 5.0f, ImDrawFlags_RoundCornersLeft);
    float y = top.y + 4;
    dl->AddText(ImVec2(top.x + 12, y), palette::text, title.c_str());
    if (!aside.empty()) dl->AddText(ImVec2(top.x + 20 + ImGui::CalcTextSize(title.c_str()).x, y), palette::text_dim, aside.c_str());
    y += line + 6;
    for (const CardRow& row : rows) {
        dl->AddText(ImVec2(top.x + 12, y), palette::text_dim, row.label.c_str());
        float x = top.x + (row.label.empty() ? 12 : 110);
        std::size_t shown = 0;
        for (std::uint64_t fiber : row.fibers) {
            if (x > top.x + width - 70) {
                char more[32];
                std::snprintf(more, sizeof more, "+%zu more", row.fibers.size() - shown);
                dl->AddText(ImVec2(x, y), palette::text_dim, more);
                x += ImGui::CalcTextSize(more).x + 6;
                break;
            }
            // Its name and number ("teller 3 #5"); an unnamed one's name is already "fiber #7".
            std::string name = shortName(tl, fiber);
            if (name.find('#') == std::string::npos) name += " #" + std::to_string(fiber);
            x += drawChip(dl, ImVec2(x, y - 2), fiber, name, 140) + 4;
            ++shown;
        }
        if (!row.note.empty()) dl->AddText(ImVec2(x + (row.fibers.empty() ? 0 : 4), y), palette::text_dim, row.note.c_str());
        y += line + 6;
    }
    ImGui::Dummy(ImVec2(width, height + 4));
}

// Pointers to `items`, those `busy` says fibers wait at or hold first (in
// their order), then the others.
template <class T, class Busy>
std::vector<const T*> busyFirst(const std::vector<T>& items, Busy busy) {
    std::vector<const T*> out;
    for (const T& item : items)
        if (busy(item)) out.push_back(&item);
    for (const T& item : items)
        if (!busy(item)) out.push_back(&item);
    return out;
}

std::string fibersText(const std::vector<std::uint64_t>& fibers) {
    std::string out;
    for (std::uint64_t f : fibers) out += (out.empty() ? "#" : ", #") + std::to_string(f);
    return out;
}

void drawObjects(const App& app, const Timeline& tl, const ObjectState& objects, std::int64_t time) {
    const trace::BackendWords& words = backendWords(*app.trace);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const auto threadName = [&](std::uint32_t thread) { return threadLabel(tl, thread); };
    std::size_t shown = 0;
    ImGui::Spacing();
    ImGui::TextUnformatted("Objects");
    ImGui::SameLine();
    ImGui::TextDisabled("(what fibers wait on; what is on its way)");
    // A big program has many objects: at most kCards of each kind, the ones
    // with fibers waiting first; the rest are counted.
    constexpr std::size_t kCards = 8;
    const auto more = [](std::size_t hidden, const char* what) {
        if (hidden) ImGui::TextDisabled("... and %zu more %s", hidden, what);
    };
    std::vector<const MutexState*> mutexes;
    for (const MutexState& m : objects.mutexes)
        if (!m.waiters.empty()) mutexes.push_back(&m);
    {
        // Of those nobody waits for, the two handed over last.
        std::vector<const MutexState*> idle;
        for (const MutexState& m : objects.mutexes)
            if (m.waiters.empty() && m.owner) idle.push_back(&m);
        std::sort(idle.begin(), idle.end(), [](const MutexState* a, const MutexState* b) { return a->owner_since > b->owner_since; });
        for (std::size_t i = 0; i < idle.size() && i < 2; ++i) mutexes.push_back(idle[i]);
    }
    for (std::size_t i = 0; i < mutexes.size() && i < kCards; ++i) {
        const MutexState& m = *mutexes[i];
        // A mutex nobody waits for is free, or held by a fiber that locked it
        // without a record: show only what the trace knows.
        std::vector<CardRow> rows;
        std::string aside;
        if (m.waiters.empty()) {
            if (m.owner == 0) continue;
            rows.push_back({"last handed to", {m.owner}, "at " + formatTime(m.owner_since) + " (a free unlock is not recorded)"});
            aside = "nobody waiting";
        } else {
            if (m.owner) rows.push_back({"held by", {m.owner}, m.owner_since >= 0 ? "since its hand-off " + formatDuration(time - m.owner_since) + " ago" : ""});
            else rows.push_back({"held by", {}, "a fiber that locked it without waiting (not recorded)"});
            rows.push_back({"waiting", m.waiters, "(next first)"});
            aside = "held by " + (m.owner ? "#" + std::to_string(m.owner) : std::string("?")) + ", waiting: " + fibersText(m.waiters);
        }
        drawObjectCard(dl, tl, palette::mutex_handoff, "mutex " + objectLabel(tl, m.mutex, time), aside, rows);
        ++shown;
    }
    more(mutexes.size() > kCards ? mutexes.size() - kCards : 0, "mutexes");
    for (std::size_t i = 0; i < objects.conditions.size() && i < kCards; ++i) {
        const ConditionState& c = objects.conditions[i];
        drawObjectCard(dl, tl, palette::condition_wake, "condition " + objectLabel(tl, c.condition, time),
                       std::to_string(c.waiters.size()) + (c.waiters.size() == 1 ? " waiter" : " waiters"),
                       {{"waiting", c.waiters, "(signal wakes the first)"}});
        ++shown;
    }
    more(objects.conditions.size() > kCards ? objects.conditions.size() - kCards : 0, "conditions");
    const std::vector<const QueueState*> queues = busyFirst(
        objects.queues, [](const QueueState& q) { return !q.producers.empty() || !q.consumers.empty() || !q.woken.empty(); });
    for (std::size_t i = 0; i < queues.size() && i < kCards; ++i) {
        const QueueState& q = *queues[i];
        char depth[64];
        std::snprintf(depth, sizeof depth, "%lld item%s%s", static_cast<long long>(q.depth), q.depth == 1 ? "" : "s",
                      q.closed ? ", closed" : "");
        drawObjectCard(dl, tl, palette::schedule, "queue " + objectLabel(tl, q.queue, time), depth,
                       {{"producers", q.producers, q.producers.empty() ? "none blocked" : "blocked: full"},
                        {"consumers", q.consumers, q.consumers.empty() ? "none blocked" : "blocked: empty"},
                        {"woken", q.woken, q.woken.empty() ? "none" : "signaled"}});
        ++shown;
    }
    more(queues.size() > kCards ? queues.size() - kCards : 0, "queues");
    // A Semaphore, an RwLock and an Event, as themselves (their inner mutex and
    // conditions are not listed above): the ones with fibers waiting first.
    const std::vector<const SemaphoreState*> semaphores =
        busyFirst(objects.semaphores, [](const SemaphoreState& m) { return !m.waiters.empty(); });
    for (std::size_t i = 0; i < semaphores.size() && i < kCards; ++i) {
        const SemaphoreState& m = *semaphores[i];
        // Its initial count is not recorded: what was taken and posted since.
        char counts[96];
        std::snprintf(counts, sizeof counts, "%llu taken, %llu posted", static_cast<unsigned long long>(m.taken),
                      static_cast<unsigned long long>(m.posted));
        drawObjectCard(dl, tl, palette::condition_wake, "semaphore " + objectLabel(tl, m.semaphore, time), counts,
                       {{"waiting", m.waiters, m.waiters.empty() ? "none blocked" : "(no permit)"}});
        ++shown;
    }
    more(semaphores.size() > kCards ? semaphores.size() - kCards : 0, "semaphores");
    const std::vector<const RwLockState*> rwlocks = busyFirst(objects.rwlocks, [](const RwLockState& r) {
        return r.writer || !r.readers.empty() || !r.waiting_writers.empty() || !r.waiting_readers.empty();
    });
    for (std::size_t i = 0; i < rwlocks.size() && i < kCards; ++i) {
        const RwLockState& r = *rwlocks[i];
        const std::string held = r.writer                ? "held exclusively by #" + std::to_string(r.writer)
                                 : !r.readers.empty() ? std::to_string(r.readers.size()) + (r.readers.size() == 1 ? " reader" : " readers")
                                                      : "free";
        std::vector<CardRow> rows;
        if (r.writer) rows.push_back({"writer", {r.writer}, r.writer_since >= 0 ? "since " + formatDuration(time - r.writer_since) + " ago" : ""});
        else rows.push_back({"readers", r.readers, r.readers.empty() ? "none" : "holding it shared"});
        rows.push_back({"writers wait", r.waiting_writers, r.waiting_writers.empty() ? "none" : "(first first)"});
        rows.push_back({"readers wait", r.waiting_readers, r.waiting_readers.empty() ? "none" : "(admitted together)"});
        drawObjectCard(dl, tl, palette::mutex_handoff, "rwlock " + objectLabel(tl, r.rwlock, time), held, rows);
        ++shown;
    }
    more(rwlocks.size() > kCards ? rwlocks.size() - kCards : 0, "rwlocks");
    const std::vector<const SyncEventState*> events =
        busyFirst(objects.events, [](const SyncEventState& v) { return !v.waiters.empty(); });
    for (std::size_t i = 0; i < events.size() && i < kCards; ++i) {
        const SyncEventState& v = *events[i];
        const char* state = v.set == 1 ? "set" : v.set == 0 ? "clear" : "not known yet (no set or reset recorded)";
        drawObjectCard(dl, tl, palette::condition_wake, "event " + objectLabel(tl, v.event, time), state,
                       {{"waiting", v.waiters, v.waiters.empty() ? "none blocked" : "(until set())"}});
        ++shown;
    }
    more(events.size() > kCards ? events.size() - kCards : 0, "events");
    for (std::size_t i = 0; i < objects.wakeups.size() && i < kCards; ++i) {
        const PendingWakeup& w = objects.wakeups[i];
        drawObjectCard(dl, tl, palette::wakeup, std::string("wake-up (") + words.wake + ")",
                       threadName(w.thread) + " -> " + trace::threadDisplayName(w.target, 0),
                       {{"sent", {}, formatDuration(time - w.sent) + " ago, not yet received"}});
        ++shown;
    }
    more(objects.wakeups.size() > kCards ? objects.wakeups.size() - kCards : 0, "wake-ups");
    for (std::size_t i = 0; i < objects.cancels.size() && i < kCards; ++i) {
        const PendingCancel& c = objects.cancels[i];
        drawObjectCard(dl, tl, palette::cancel, "cancel", "requested on " + threadName(c.thread) + ", " + formatDuration(time - c.requested) + " ago",
                       {{"of", {c.fiber}, "not yet delivered"}});
        ++shown;
    }
    more(objects.cancels.size() > kCards ? objects.cancels.size() - kCards : 0, "cancels");
    if (!objects.timers.empty()) {
        // Timers by when they fire (known only for one that fired: its
        // -ETIME completion; a canceled or unfinished one has no deadline).
        std::vector<TimerState> timers = objects.timers;
        std::stable_sort(timers.begin(), timers.end(), [](const TimerState& a, const TimerState& b) {
            return (a.fires < 0 ? INT64_MAX : a.fires) < (b.fires < 0 ? INT64_MAX : b.fires);
        });
        std::vector<CardRow> rows;
        for (std::size_t i = 0; i < timers.size() && i < 6; ++i) {
            const TimerState& timer = timers[i];
            rows.push_back({"", {timer.fiber},
                            timer.fires >= 0 ? "fires at " + formatTime(timer.fires) + " (in " + formatDuration(timer.fires - time) + ")"
                                             : "set " + formatDuration(time - timer.since) + " ago; deadline not recorded (canceled, or pending at the end)"});
        }
        if (timers.size() > 6) rows.push_back({"", {}, "... and " + std::to_string(timers.size() - 6) + " more"});
        drawObjectCard(dl, tl, palette::submit, std::to_string(timers.size()) + (timers.size() == 1 ? " timer" : " timers"),
                       std::string(words.in_flight) + ", soonest first", rows);
        ++shown;
    }
    if (shown == 0) ImGui::TextDisabled("none at this instant");
}

} // namespace

namespace {

// --- Thread cards, and their fiber chips in motion (model/state_motion.hpp).

// A chip's width for its label, at most `max_width`.
float chipWidth(const std::string& label, float max_width) { return std::min(ImGui::CalcTextSize(label.c_str()).x + 12, max_width); }

// A chip of a motion frame: faded by its alpha, scaled about its centre.
void drawMovingChip(ImDrawList* dl, ImVec2 at, const ChipFrame& f, const std::string& label) {
    const float h = ImGui::GetTextLineHeight() + 4;
    const float alpha = std::clamp(f.alpha, 0.0f, 1.0f), scale = std::clamp(f.scale, 0.05f, 1.0f);
    const auto fade = [alpha](Color c) { return (c & 0x00FFFFFF) | (static_cast<Color>(alpha * static_cast<float>(c >> 24)) << 24); };
    const ImVec2 mid(at.x + f.width / 2, at.y + h / 2);
    const ImVec2 a(mid.x - f.width / 2 * scale, mid.y - h / 2 * scale), b(mid.x + f.width / 2 * scale, mid.y + h / 2 * scale);
    const Color c = fiberColor(f.fiber);
    dl->AddRectFilled(a, b, fade(c), 4.0f * scale);
    dl->PushClipRect(a, ImVec2(b.x - 3 * scale, b.y), true);
    dl->AddText(ImGui::GetFont(), ImGui::GetFontSize() * scale, ImVec2(a.x + 6 * scale, a.y + 2 * scale), fade(textOn(c)), label.c_str());
    dl->PopClipRect();
}

// The steps a thread tries to find its next fiber, in order (the seed's
// three; the scaling policy's five), each a box, the one its last decision
// took lit; below them, what it took and from where. Returns that text.
constexpr FindStep kSeedSteps[] = {FindStep::OwnQueue, FindStep::Steal, FindStep::Park};
constexpr FindStep kScalingSteps[] = {FindStep::RunNext, FindStep::OwnQueue, FindStep::Steal, FindStep::Search, FindStep::Park};

std::string drawFoundBy(ImDrawList* dl, const Timeline& tl, const trace::Trace& trace, const std::optional<FoundBy>& found,
                        bool scaling, ImVec2 at, float width) {
    const std::span<const FindStep> steps = scaling ? std::span<const FindStep>(kScalingSteps) : std::span<const FindStep>(kSeedSteps);
    const float h = ImGui::GetTextLineHeight() + 2;
    float x = at.x;
    for (FindStep step : steps) {
        const char* name = step == FindStep::OwnQueue && scaling ? "own queues" : findStepName(step);
        const float w = ImGui::CalcTextSize(name).x + 10;
        const bool lit = found && found->step == step;
        if (lit) dl->AddRectFilled(ImVec2(x, at.y - 1), ImVec2(x + w, at.y - 1 + h), palette::cursor, 3.0f);
        else dl->AddRect(ImVec2(x, at.y - 1), ImVec2(x + w, at.y - 1 + h), palette::grid, 3.0f);
        dl->AddText(ImVec2(x + 5, at.y), lit ? palette::background : palette::text_dim, name);
        x += w + 4;
    }
    std::string said;
    if (found) {
        const std::string fiber = found->fiber ? shortName(tl, found->fiber) : "";
        switch (found->step) {
        case FindStep::Direct: {
            const trace::Event sw = trace.events[found->decision];
            said = fiber + ": handed over by " + (sw.arg[0] ? shortName(tl, sw.arg[0]) : std::string("its idle loop"));
            break;
        }
        case FindStep::RunNext: said = fiber + " from its run_next"; break;
        case FindStep::OwnQueue: said = fiber + (scaling ? " from its own queues" : " popped from its queue"); break;
        case FindStep::Steal: {
            const trace::Event st = trace.events[found->evidence];
            said = fiber + " stolen from " + workerLabel(static_cast<std::int64_t>(st.arg[1])) + (found->searched ? " (a search)" : "");
            break;
        }
        case FindStep::Search: said = "searching the others"; break;
        case FindStep::Park: said = found->fiber ? fiber + ", woken from the kernel" : "asleep"; break;
        }
    }
    // On the row below the steps.
    if (!said.empty()) {
        const float below = at.y + ImGui::GetTextLineHeight() + 8;
        dl->PushClipRect(ImVec2(at.x, below - 2), ImVec2(at.x + width, below + h), true);
        dl->AddText(ImVec2(at.x, below), palette::text, said.c_str());
        dl->PopClipRect();
    }
    return said;
}

// Draws one card per worker thread from `origin` (screen), `width` wide,
// into `dl`, except the fiber chips: their places go to `chips` (in content
// coordinates, screen minus `base`), drawn afterwards in motion. Returns the
// cards' height. Names the blocking-pool threads (no card) in `pool_threads`.
float drawThreadCards(const App& app, const Timeline& tl, const SchedulerState& state, const ObjectState& objects, std::int64_t time,
                      ImDrawList* dl, ImVec2 origin, float width, ImVec2 base, std::vector<ChipPlace>& chips, std::string& pool_threads) {
    const trace::BackendWords& words = backendWords(*app.trace);
    const std::string parked_in = std::string("PARKED in ") + words.park_call;
    const float line = ImGui::GetTextLineHeight();
    const float gap = 8 + ImGui::GetStyle().ItemSpacing.y;
    const auto chip = [&](float x, float y, std::uint64_t fiber, float max_width) {
        const float w = chipWidth(shortName(tl, fiber), max_width);
        chips.push_back({fiber, x - base.x, y - base.y, w});
        return w;
    };
    float total = 0;
    for (const ThreadState& t : state.threads) {
        // The trace writer's CPU-sample pseudo thread runs no fiber: no card.
        if (const ThreadLane* lane = findThread(tl, t.thread); lane && isCpuSamplerLane(*lane)) continue;
        if (trace::isBlockingPoolWorker(t.worker)) {
            pool_threads += (pool_threads.empty() ? "" : ", ") + workerLabel(t.worker);
            continue;
        }
        const ImVec2 top(origin.x, origin.y + total);
        const bool parked = t.state == State::Parked;
        // Title, runs, found by (two rows), ready, and one row per operation in flight (at least one).
        const float rows = 5 + static_cast<float>(std::max<std::size_t>(1, std::min<std::size_t>(t.in_flight.size(), 4)));
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
        if (t.state == State::Running) chip(top.x + 90, y - 2, t.running, width - 100);
        else dl->AddText(ImVec2(top.x + 90, y), palette::text_dim, parked ? "nothing (asleep in the kernel)" : "its idle loop");
        y += line + 8;
        // How it found what it runs (or what it does out of work).
        dl->AddText(ImVec2(top.x + 10, y), palette::text_dim, "found by");
        drawFoundBy(dl, tl, *app.trace, t.alive ? foundBy(tl, *app.trace, t.thread, time) : std::nullopt,
                    trace::ranScalingPolicy(*app.trace), ImVec2(top.x + 90, y), width - 100);
        y += 2 * (line + 8);
        // Ready queue.
        dl->AddText(ImVec2(top.x + 10, y), palette::text_dim, "ready");
        float x = top.x + 90;
        if (t.ready.empty()) dl->AddText(ImVec2(x, y), palette::text_dim, "empty");
        // In the order they will run: the stack's head first (LIFO: the
        // newest, readyHead), then the others newest first.
        std::vector<std::size_t> order;
        if (const std::size_t head = readyHead(*app.trace, t.ready); head != kNone) {
            order.push_back(head);
            for (std::size_t i = t.ready.size(); i-- > 0;)
                if (i != head) order.push_back(i);
        }
        std::size_t shown = 0;
        for (std::size_t i : order) {
            const ReadyEntry& r = t.ready[i];
            if (x > top.x + width - 60) {
                char more[32];
                std::snprintf(more, sizeof more, "+%zu more", t.ready.size() - shown);
                dl->AddText(ImVec2(x, y), palette::text_dim, more);
                break;
            }
            x += chip(x, y - 2, r.fiber, 110) + 4;
            if (shown == 0) {
                const char* next = order.size() > 1 ? "runs next, then" : "runs next";
                dl->AddText(ImVec2(x + 2, y), palette::text_dim, next);
                x += ImGui::CalcTextSize(next).x + 10;
            }
            ++shown;
        }
        y += line + 8;
        // In flight: in its ring (io_uring) or registered with its epoll;
        // each row begins with its fiber's chip (a submit slides it here).
        dl->AddText(ImVec2(top.x + 10, y), palette::text_dim, words.in_flight_short);
        if (t.in_flight.empty()) dl->AddText(ImVec2(top.x + 90, y), palette::text_dim, "nothing in flight");
        for (std::size_t i = 0; i < t.in_flight.size() && i < 4; ++i) {
            const InFlightOp& op = t.in_flight[i];
            char text[160];
            char fd[32] = "";
            if (op.fd >= 0) std::snprintf(fd, sizeof fd, " (fd %lld)", static_cast<long long>(op.fd));
            std::snprintf(text, sizeof text, "%s%s, %s so far", opcodeNoun(op.opcode).c_str(), fd, formatDuration(time - op.since).c_str());
            std::string row = text;
            if (op.opcode == trace::kOpTimeout) {
                // The trace does not record a timer's deadline, but one that
                // fired completed with -ETIME then (object_state.hpp).
                std::int64_t fires = -1;
                for (const TimerState& timer : objects.timers)
                    if (timer.event == op.event) fires = timer.fires;
                row += fires >= 0 ? "; fires in " + formatDuration(fires - time) : "; deadline not recorded";
            }
            dl->AddCircleFilled(ImVec2(top.x + 94, y + line / 2), 3, palette::submit);
            const float w = chip(top.x + 102, y - 2, op.fiber, 100);
            dl->AddText(ImVec2(top.x + 102 + w + 6, y), palette::text, row.c_str());
            y += line + 8;
        }
        if (t.in_flight.size() > 4) {
            char more[48];
            std::snprintf(more, sizeof more, "... and %zu more", t.in_flight.size() - 4);
            dl->AddText(ImVec2(top.x + 102, y - line - 8 + line), palette::text_dim, more);
        }
        total += height + gap;
    }
    return total;
}

} // namespace

void drawSchedulerState(App& app, const Fonts& fonts) {
    const Timeline& tl = *app.timeline;
    const std::int64_t time = stateTime(app);
    const SchedulerState state = stateAt(tl, time);
    const ObjectState objects = objectStateAt(*app.trace, objectIndex(app, *app.trace, tl), time);
    const trace::BackendWords& words = backendWords(*app.trace);
    ImGui::Text("At %s", formatTime(time).c_str());
    ImGui::SameLine();
    ImGui::TextDisabled(app.cursor >= 0 ? "(pinned: click the timeline to move, Esc to follow the pointer)"
                                        : "(following the pointer; click to pin)");
    ImGui::Spacing();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float width = ImGui::GetContentRegionAvail().x;
    const ImVec2 origin = ImGui::GetCursorScreenPos();
    // Content coordinates: a scroll of the panel is not a move of a chip.
    const ImVec2 base(ImGui::GetWindowPos().x - ImGui::GetScrollX(), ImGui::GetWindowPos().y - ImGui::GetScrollY());
    std::string pool_threads; // blocking-pool threads run jobs, never fibers: named below, no card
    std::vector<ChipPlace> chips;
    const float cards = drawThreadCards(app, tl, state, objects, time, dl, origin, width, base, chips, pool_threads);

    // The chips: still, or sliding from where the last decision left them.
    ChipMotion& motion = app.panels.motion; // between frames: the layout shown, and a move under way
    std::vector<ChipFrame> frames;
    if (app.motion_fraction >= 0) {
        // Test hook: the move into this instant from the one before, frozen.
        const SchedulerState before = stateAt(tl, time - 1);
        const ObjectState before_objects = objectStateAt(*app.trace, objectIndex(app, *app.trace, tl), time - 1);
        ImDrawList scratch(ImGui::GetDrawListSharedData()); // laid out, not drawn
        scratch._ResetForNewFrame();
        scratch.PushTextureID(ImGui::GetIO().Fonts->TexID);
        scratch.PushClipRectFullScreen();
        std::vector<ChipPlace> old_chips;
        std::string unused;
        drawThreadCards(app, tl, before, before_objects, time - 1, &scratch, origin, width, base, old_chips, unused);
        frames = interpolateChips(old_chips, chips, app.motion_fraction);
    } else {
        frames = motion.frame(&tl, *app.trace, time, app.cursor >= 0 ? app.step_event : kNoEvent, chips, ImGui::GetTime());
    }
    for (const ChipFrame& f : frames) // the leaving ones first (under), then the others
        if (f.leaving) drawMovingChip(dl, ImVec2(f.x + base.x, f.y + base.y), f, shortName(tl, f.fiber));
    for (const ChipFrame& f : frames)
        if (!f.leaving) drawMovingChip(dl, ImVec2(f.x + base.x, f.y + base.y), f, shortName(tl, f.fiber));
    ImGui::Dummy(ImVec2(width, std::max(1.0f, cards - ImGui::GetStyle().ItemSpacing.y)));

    (void)fonts;
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    if (!pool_threads.empty())
        ImGui::TextWrapped("%s: run%s blocking jobs (a regular file on epoll, a name lookup) for fibers parked on a worker; no fibers, "
                           "no ready queue",
                           pool_threads.c_str(), pool_threads.find(',') == std::string::npos ? "s" : "");
    if (!state.parked.empty())
        ImGui::TextWrapped("%zu thread(s) parked in %s: woken by %s", state.parked.size(), words.park_call, words.park_waits_for);
    ImGui::PopStyleColor();
    drawObjects(app, tl, objects, time);
}

} // namespace fiberscope::viewer
