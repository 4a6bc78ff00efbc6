// A virtual X display for headless rendering: when DISPLAY is unset, start
// Xvfb on a free display number and point DISPLAY at it for the lifetime of
// this object. With a display already present it does nothing.
//
// The Xvfb dies with this process however it ends, a crash or SIGKILL
// included (PR_SET_PDEATHSIG). The kernel ties that to the thread that
// called ensure(): call it from a thread that lives as long as the display
// is needed (the main thread, as the screenshot and the benchmark do).
#pragma once

#include <string>
#include <sys/types.h>

namespace fiberscope::viewer {

class VirtualDisplay {
public:
    VirtualDisplay() = default;
    ~VirtualDisplay();
    VirtualDisplay(const VirtualDisplay&) = delete;
    VirtualDisplay& operator=(const VirtualDisplay&) = delete;

    // Ensures a display exists. false with `error` set when none is present
    // and Xvfb cannot be started.
    bool ensure(std::string& error);
    bool started() const noexcept { return pid_ > 0; }

private:
    pid_t pid_ = -1;
};

} // namespace fiberscope::viewer
