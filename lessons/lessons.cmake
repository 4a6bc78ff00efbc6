# The course's lessons, in order: the one list. Each NN-name is a folder
# here (main.cpp, lesson.md, checks.md) built as lessonNN-name; the lessons'
# CMakeLists builds and installs them, and tests/CMakeLists gives the lesson
# tests each program (LESSONNN) from this list. lessons/README.md says how
# to add one.
set(FIBERSCOPE_LESSONS
  01-hello-fibers
  02-context-switch
  03-waking-idle-threads
  04-work-stealing
  05-io-completions
  06-timers
  07-select-and-cancel
  08-mutex-handoff
  09-producer-consumer
  10-blocking-mistake
  11-structured-concurrency
  12-echo-server
  13-two-backends
  14-read-mostly-cache
  15-two-threads-slower
  16-scaling-decisions
  17-find-the-problem
)
