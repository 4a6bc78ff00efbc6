#!/usr/bin/env bash
# A lesson and the trace tools under small resource limits (ulimit -n, -v):
# each run must end by itself (no abort, no signal, no hang), print a few
# clear lines at most (no flood: a limit is said once, not once per try), and
# a program keep working on the threads and fibers it could get.
# Usage: resource_limits.sh FIBERSCOPE LESSON_PROGRAM
set -uo pipefail
fiberscope=$1 lesson=$2
# The limits below count descriptors from 3 up: close whatever the caller
# (ctest, a terminal) left open beyond stdin, stdout and stderr.
for fd in $(ls /proc/$$/fd); do
  [ "$fd" -gt 2 ] && eval "exec $fd>&-" 2>/dev/null
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

# The program a command line runs: past `env` and its VAR=value words.
programName() {
  local a
  for a in "$@"; do
    case $a in env | *=*) continue ;; esac
    basename "$a"
    return
  done
}

# check NAME MAX_STDERR_LINES EXPECT(0|nonzero|any) -- COMMAND...: runs COMMAND
# in a subshell whose limits were set by the caller through LIMITS.
check() {
  local name=$1 max_lines=$2 expect=$3
  shift 4
  # timeout first, then the limit: timeout itself must still load.
  timeout 60 sh -c "$LIMITS"'; exec "$@"' limited "$@" >"$work/out" 2>"$work/err"
  local rc=$? lines
  lines=$(wc -l <"$work/err")
  local why=""
  if [ "$rc" -eq 124 ]; then why="did not finish in 60 s"
  elif [ "$rc" -ge 128 ]; then why="died of signal $((rc - 128))"
  elif [ "$expect" = 0 ] && [ "$rc" -ne 0 ]; then why="exited $rc, expected 0"
  elif [ "$expect" = nonzero ] && [ "$rc" -eq 0 ]; then why="succeeded, expected a clean failure"
  elif [ "$lines" -gt "$max_lines" ]; then why="printed $lines lines on stderr (at most $max_lines)"
  elif grep -qv "^\\(fiberscope: \\|warning: \\|$(programName "$@"): \\)" "$work/err"; then
    why="printed a line that names no source ('fiberscope: ', 'warning: ' or the program's name)"
  fi
  if [ -n "$why" ]; then
    echo "FAIL: $name [$LIMITS]: $why"
    head -n 8 "$work/err" | sed 's/^/    stderr: /'
    failures=$((failures + 1))
  else
    echo "ok:   $name [$LIMITS] (exit $rc, $lines stderr lines)"
  fi
}

# A trace to read, recorded without limits.
FIBERSCOPE_TRACE="$work/t.fstrace" FIBERSCOPE_BACKEND=uring "$lesson" --threads 4 >/dev/null 2>&1 ||
  { echo "FAIL: the lesson does not run without limits"; exit 1; }

# The runtime: too few descriptors for every worker's ring (or eventfd), too
# little address space for every stack. It says so once and carries on.
for backend in uring epoll; do
  LIMITS="ulimit -n 5"
  check "lesson on $backend, 16 threads wanted" 3 0 -- env FIBERSCOPE_BACKEND=$backend "$lesson" --threads 16
  LIMITS="ulimit -n 4"
  check "traced lesson on $backend, too few descriptors for the trace and a loop" 3 any -- \
    env FIBERSCOPE_BACKEND=$backend FIBERSCOPE_TRACE="$work/limited.fstrace" "$lesson" --threads 16
  LIMITS="ulimit -v 250000"
  check "lesson on $backend in 250 MB of address space" 3 0 -- env FIBERSCOPE_BACKEND=$backend "$lesson" --threads 16
done

# The tools: few descriptors (the dynamic loader needs one, so a tool always
# gets to run), little memory to read a trace with.
LIMITS="ulimit -n 4"
for command in stats timeline; do
  check "fiberscope $command with one free descriptor" 1 0 -- "$fiberscope" "$command" "$work/t.fstrace"
done
check "fiberscope export with one free descriptor" 1 any -- "$fiberscope" export --format chrome "$work/t.fstrace" -o "$work/t.json"
LIMITS="ulimit -n 8"
check "fiberscope screenshot with too few descriptors for its Xvfb" 2 any -- env DISPLAY= "$fiberscope" screenshot "$work/t.fstrace" -o "$work/t.png"
LIMITS="ulimit -v 60000"
for command in stats timeline; do
  check "fiberscope $command in 60 MB of address space" 2 any -- "$fiberscope" "$command" "$work/t.fstrace"
done
LIMITS="ulimit -v 20000"
check "fiberscope stats in 20 MB of address space" 2 any -- "$fiberscope" stats "$work/t.fstrace"

if [ "$failures" -ne 0 ]; then
  echo "$failures resource-limit case(s) failed"
  exit 1
fi
echo "every resource-limit case ended cleanly"
