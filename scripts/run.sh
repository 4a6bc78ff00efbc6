#!/usr/bin/env bash
# The main job: install dependencies, build, run lesson 1 in the viewer.
# With no display it prints the lesson's text timeline and writes a PNG.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build
exec build/viewer/fiberscope lesson 1 "$@"
