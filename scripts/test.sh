#!/usr/bin/env bash
# The whole test suite: install dependencies, build twice (plain, and
# AddressSanitizer + UndefinedBehaviorSanitizer), run every test in both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
jobs=$(nproc)

echo "== plain build (build/) =="
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFIBERSCOPE_WERROR=ON >/dev/null
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j 1

echo "== ASan + UBSan build (build-asan/) =="
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFIBERSCOPE_SANITIZE=ON >/dev/null
cmake --build build-asan -j "$jobs"
# Sanitized runs are slower: the stress tests scale their sizes down by 10.
FIBERSCOPE_TEST_SCALE=10 ASAN_OPTIONS=detect_leaks=1:allow_user_segv_handler=1 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan --output-on-failure -j 1
