#!/usr/bin/env bash
# The aarch64 step of scripts/test.sh: cross-build the runtime and its test
# suite (test_runtime only) with Debian 12's g++-aarch64-linux-gnu and run it
# under qemu-user, with both scheduler policies, through ctest
# (cmake/toolchain-aarch64.cmake says how the cross build is put together).
#
# Why a step of its own: it is the only run of the aarch64 context switch
# (context_switch_aarch64.hpp, context_entry_aarch64.S) and its ABI, and it
# needs packages of another architecture (multiarch liburing-dev:arm64), which
# a machine may refuse. Where they cannot be installed it says so in one line
# and succeeds; a test that fails fails it. qemu-user refuses io_uring, so the
# loops take the automatic fallback to epoll; qemu runs the guest's memory
# accesses in the host's (x86) order, so this checks the switch, not the
# orderings (those stay ThreadSanitizer's).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
packages=(g++-aarch64-linux-gnu liburing-dev:arm64 qemu-user)

skip() {
  echo "== aarch64 under qemu-user: SKIPPED: $* =="
  exit 0
}

# Installs what is missing (as scripts/install-deps.sh does, plus the arm64
# architecture for liburing-dev:arm64).
install() {
  local missing=() p sudo=""
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || skip "need root (or sudo) to apt-get install ${missing[*]}"
    sudo=sudo
  fi
  echo "test_aarch64: installing ${missing[*]}"
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    $sudo dpkg --add-architecture arm64 || skip "dpkg refused the arm64 architecture (multiarch)"
  fi
  $sudo apt-get update -qq >/dev/null 2>&1 || skip "apt-get update failed (no network?)"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    skip "apt-get could not install ${missing[*]}"
}

command -v dpkg-query >/dev/null || skip "not a Debian system (no dpkg)"
install

echo "== aarch64 under qemu-user (build-aarch64/): the runtime suite, both policies, epoll and the automatic fallback =="
start=$(date +%s)
cmake -S . -B build-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFIBERSCOPE_WERROR=ON >/dev/null
timeout 1200 cmake --build build-aarch64 -j "$jobs" --target test_runtime
built=$(date +%s)
# Four entries (runtime: backend unset, so the fallback; runtime_epoll; both
# under the default scaling policy, and again under the seed's:
# runtime_seed, runtime_seed_epoll), under qemu-user.
status=0
timeout 1200 ctest --test-dir build-aarch64 --output-on-failure -j 1 -R '^runtime' || status=$?
echo "aarch64: built in $((built - start)) s, ran in $(($(date +%s) - built)) s"
exit "$status"
