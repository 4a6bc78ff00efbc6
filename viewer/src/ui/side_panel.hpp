// The side panel's tabs, one table: the name `screenshot --panel NAME`
// takes, and the tab's title. The tabs are drawn in the table's order
// (app.cpp); a panel is asked for by its enum, never by a bare number.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace fiberscope::viewer {

enum class SidePanel { Lesson, State, Selection, Events, Legend };

struct SidePanelInfo {
    SidePanel panel;
    const char* name;  // on the command line: "state"
    const char* title; // on the tab: "Scheduler state"
};

inline constexpr std::array<SidePanelInfo, 5> kSidePanels = {{
    {SidePanel::Lesson, "lesson", "Lesson"},
    {SidePanel::State, "state", "Scheduler state"},
    {SidePanel::Selection, "selection", "Selection"},
    {SidePanel::Events, "events", "Events"},
    {SidePanel::Legend, "legend", "Legend"},
}};

// The names, in the table's order (for a parser's list of choices).
inline std::vector<std::string> sidePanelNames() {
    std::vector<std::string> names;
    for (const SidePanelInfo& p : kSidePanels) names.emplace_back(p.name);
    return names;
}

} // namespace fiberscope::viewer
