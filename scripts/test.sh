#!/usr/bin/env bash
# The whole test suite: install dependencies, build twice (plain, and
# AddressSanitizer + UndefinedBehaviorSanitizer), run every test in both; then
# the runtime suite under ThreadSanitizer, the trace reader's fuzzer, and the
# runtime suite cross-built for aarch64 under qemu-user (scripts/test_aarch64.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh clang libclang-rt-14-dev
jobs=$(nproc)
# Each stage says how long it took, so a slow CI run shows where its time went.
stage_start=$(date +%s)
stage_name=""
stage() {
  local now; now=$(date +%s)
  [ -n "$stage_name" ] && echo "-- $stage_name: $((now - stage_start)) s"
  stage_name=$1; stage_start=$now
  [ -n "$1" ] && echo "== $1 =="
  return 0
}

stage "plain build (build/)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFIBERSCOPE_WERROR=ON >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j 1

stage "ASan + UBSan build (build-asan/)"
# -O1 -g1 (line tables: reports still name file and line): the sanitized
# tree compiles in about half the time of -O2 -g, which was most of CI's time.
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFIBERSCOPE_SANITIZE=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" >/dev/null
cmake --build build-asan -j "$jobs"
# Sanitized runs are slower: the stress tests scale their sizes down by 10.
FIBERSCOPE_TEST_SCALE=10 ASAN_OPTIONS=detect_leaks=1:allow_user_segv_handler=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j 1

stage "ThreadSanitizer build (build-tsan/): the runtime suite on both backends, and the load that builds the model beside the read"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFIBERSCOPE_TSAN=ON >/dev/null
cmake --build build-tsan -j "$jobs" --target test_runtime test_analysis
# The model's build runs beside the reader's merge on a second thread
# (tracer/analysis/load.cpp): its test, on recorded and hostile files.
TSAN_OPTIONS=halt_on_error=1 build-tsan/tests/test_analysis "[load]"
# TSan tracks each fiber like a thread and allows about 8000 at once: the
# stress tests scale down by 50 (skynet to 10k fibers). Any race fails the
# run (halt_on_error).
FIBERSCOPE_TEST_SCALE=50 TSAN_OPTIONS=halt_on_error=1:die_after_fork=0:report_signal_unsafe=0 \
  ctest --test-dir build-tsan --output-on-failure -j 1 -R '^runtime'

stage "trace fuzzing: the reader and every consumer (clang libFuzzer, bounded)"
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DFIBERSCOPE_FUZZ=ON >/dev/null
cmake --build build-fuzz --target fuzz_trace_reader fuzz_seed_corpus -j "$jobs"
# Seeds: a trace recorded from every lesson (plain build), the crafted
# hostile patterns, and the regression corpus of past findings.
corpus=$(mktemp -d)
trap 'rm -rf "$corpus"' EXIT
for lesson in build/lessons/lesson[0-9][0-9]-*; do
  [ -x "$lesson" ] || continue
  FIBERSCOPE_TRACE="$corpus/$(basename "$lesson").fstrace" FIBERSCOPE_BACKEND=uring \
    timeout 60 "$lesson" --threads 2 >/dev/null 2>&1 || echo "fuzz seeds: $(basename "$lesson") exited with $? (seed kept if written)"
done
build-fuzz/tests/fuzz_seed_corpus "$corpus"
cp assets/traces/*.fstrace tests/fuzz/corpus/*.fstrace "$corpus"/
echo "fuzz seeds: $(ls "$corpus" | wc -l) files"
# A finding (crash, UB, leak, >4 GB, or an input slower than 30 s) exits
# non-zero and fails the run; the input is left in fuzz-findings/ to commit
# to tests/fuzz/corpus once fixed.
mkdir -p fuzz-findings
if ! build-fuzz/tests/fuzz_trace_reader -max_total_time="${FIBERSCOPE_FUZZ_SECONDS:-60}" -rss_limit_mb=4096 -timeout=30 \
     -artifact_prefix=fuzz-findings/ -print_final_stats=1 "$corpus" >build-fuzz/fuzz.log 2>&1; then
  tail -n 60 build-fuzz/fuzz.log
  echo "fuzzing: a finding (the input is in fuzz-findings/); see the report above" >&2
  exit 1
fi
tail -n 3 build-fuzz/fuzz.log
echo "fuzzing: no finding"

stage ""
# aarch64: the runtime suite cross-built and run under qemu-user (bounded; one
# line and no failure where the arm64 packages cannot be installed).
scripts/test_aarch64.sh
