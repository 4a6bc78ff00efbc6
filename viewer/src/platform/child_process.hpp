// Starting a program to record: `fiberscope record`, `view --live` and
// `record --view` all run it the same way, with FIBERSCOPE_TRACE naming the
// file its runtime records into.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace fiberscope::viewer {

// Forks and execs `program` (searched on PATH) with FIBERSCOPE_TRACE set to
// `trace_path`. Returns its pid, or -1 with a one-line reason in `error`
// ("cannot run 'prog': No such file or directory"): a failed exec is
// reported here, through a close-on-exec pipe, not as exit status 127.
// `not_run`, if given, is set when the program itself could not be executed
// (not found, not executable), as against a pipe or fork that failed.
pid_t spawnTraced(const std::vector<std::string>& program, const std::string& trace_path, std::string& error,
                  bool* not_run = nullptr);

// "exited with status 3", "was killed by signal 9 (Killed)", from a waitpid status.
std::string describeExit(int status);
// The exit code a shell would report for that status (128 + signal when killed).
int exitCode(int status);

} // namespace fiberscope::viewer
