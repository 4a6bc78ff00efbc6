// test::BusyCompetitor: a process that keeps a CPU busy while a test runs
// beside it (the runtime's race tests, the lessons' loaded runs).
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace test {

// A process that keeps one CPU busy while it lives (a competitor for the
// cores, so that a race between two worker threads gets the preemptions
// that widen it, as on a loaded laptop). Killed and reaped on destruction.
class BusyCompetitor {
public:
    BusyCompetitor() {
        pid_ = ::fork();
        if (pid_ == 0) {
            // Dies with the test program, however that ends (an abort is
            // what some of these tests catch): never an orphan spinning on.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() == 1) ::_exit(0);
            for (;;) asm volatile("" ::: "memory"); // spins until killed
        }
    }
    ~BusyCompetitor() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
    BusyCompetitor(const BusyCompetitor&) = delete;
    BusyCompetitor& operator=(const BusyCompetitor&) = delete;

private:
    pid_t pid_ = -1;
};

} // namespace test
