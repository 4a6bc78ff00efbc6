# The `fiberscope` command line, run as a CTest script:
#   cmake -DFIBERSCOPE=path -DPROGRAM=lesson -DWORK_DIR=dir -P test_cli.cmake
# Checks exit codes (0 ok, 1 bad file, 2 usage) and that errors are one line,
# then records a lesson program and runs every tool on its trace.

foreach(var FIBERSCOPE PROGRAM WORK_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "test_cli.cmake needs -D${var}=...")
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")


# run(<expected exit code> <args...>): runs fiberscope, leaving its output in
# `out` and `err` and counting a failure if the exit code differs.
function(run expected)
  execute_process(COMMAND "${FIBERSCOPE}" ${ARGN}
    RESULT_VARIABLE code OUTPUT_VARIABLE stdout ERROR_VARIABLE stderr)
  set(out "${stdout}" PARENT_SCOPE)
  set(err "${stderr}" PARENT_SCOPE)
  if(NOT code STREQUAL "${expected}")
    message(SEND_ERROR "fiberscope ${ARGN}: exit code ${code}, expected ${expected}\nstdout: ${stdout}\nstderr: ${stderr}")
  endif()
endfunction()

# expect_one_line(<text> <must contain>): an error message of exactly one line.
function(expect_one_line text needle)
  string(REGEX MATCHALL "\n" newlines "${text}")
  list(LENGTH newlines count)
  if(NOT count EQUAL 1)
    message(SEND_ERROR "expected a one-line message, got ${count} lines: '${text}'")
  endif()
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    message(SEND_ERROR "expected '${needle}' in: '${text}'")
  endif()
endfunction()

function(expect_contains text needle)
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    message(SEND_ERROR "expected '${needle}' in: '${text}'")
  endif()
endfunction()

# Bad files: exit 1, one line naming the file.
set(missing "${WORK_DIR}/no-such-trace.fstrace")
run(1 stats "${missing}")
expect_one_line("${err}" "${missing}")
if(NOT out STREQUAL "")
  message(SEND_ERROR "stats on a missing file printed to stdout: '${out}'")
endif()
run(1 timeline "${missing}")
expect_one_line("${err}" "${missing}")
file(WRITE "${WORK_DIR}/junk.fstrace" "this is not a trace at all, just some text\n")
run(1 stats "${WORK_DIR}/junk.fstrace")
expect_one_line("${err}" "junk.fstrace")

# Usage errors: exit 2, one line.
run(2 frobnicate)
expect_one_line("${err}" "unknown command 'frobnicate'")
run(2 --frobnicate)
expect_one_line("${err}" "unknown option '--frobnicate'")
run(2 stats)
expect_one_line("${err}" "no trace file given")
run(2 stats --frobnicate "${missing}")
expect_one_line("${err}" "unknown option '--frobnicate'")
run(2 timeline "${missing}" --rows zero)
expect_one_line("${err}" "--rows")
run(2 export --format svg "${missing}" -o "${WORK_DIR}/out.svg")
expect_one_line("${err}" "unknown format 'svg'")
run(2 record -o "${WORK_DIR}/x.fstrace")
expect_one_line("${err}" "no program to run")
# The viewer without a display: a one-line error pointing at screenshot.
run(1)
expect_one_line("${err}" "fiberscope screenshot")
run(1 view "${missing}")
expect_one_line("${err}" "${missing}")
run(2 view --frobnicate)
expect_one_line("${err}" "unknown option '--frobnicate'")
run(2 lesson)
expect_one_line("${err}" "which lesson")
run(2 lesson 999)
expect_one_line("${err}" "no lesson 999")
run(2 lesson 1 --threads 0)
expect_one_line("${err}" "--threads")
run(2 lesson 1 --backend kqueue)
expect_one_line("${err}" "--backend")
run(2 screenshot "${missing}")
expect_one_line("${err}" "-o out.png")
run(0 lessons)
expect_contains("${out}" "Hello")

# Help.
foreach(command record stats export timeline view screenshot lesson lessons)
  run(0 ${command} --help)
  expect_contains("${out}" "usage: fiberscope ${command}")
endforeach()
run(0 --help)
expect_contains("${out}" "commands:")

# A real recording, and every tool on it.
set(trace "${WORK_DIR}/lesson.fstrace")
run(0 record -o "${trace}" -- "${PROGRAM}" --threads 2)
expect_contains("${err}" "trace written to ${trace}")
run(0 stats "${trace}")
expect_contains("${out}" "Threads")
expect_contains("${out}" "Schedule-to-run latency")
run(0 timeline "${trace}" --rows 10)
expect_contains("${out}" "w0 = worker 0")
run(0 export --format chrome "${trace}" -o "${WORK_DIR}/lesson.json")
file(READ "${WORK_DIR}/lesson.json" json LIMIT 64)
string(FIND "${json}" "{\"traceEvents\":[" at)
if(NOT at EQUAL 0)
  message(SEND_ERROR "the export does not start with {\"traceEvents\":[ but '${json}'")
endif()

# The program's exit status passes through; a program that writes no trace
# (here: it rejects its arguments before starting a loop) is reported.
run(2 record -o "${WORK_DIR}/none.fstrace" -- "${PROGRAM}" --no-such-flag)
expect_contains("${err}" "wrote no trace")
run(127 record -o "${WORK_DIR}/none.fstrace" -- "${WORK_DIR}/no-such-program")
expect_contains("${err}" "cannot run")
