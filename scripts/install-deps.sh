#!/usr/bin/env bash
# Installs the Debian 12 packages Fiberscope builds with. Idempotent: skips
# apt-get entirely when everything is already installed.
# Usage: scripts/install-deps.sh [extra-package ...]
set -euo pipefail
# Runtime and tracer: liburing, Catch2. Viewer: GLFW, Dear ImGui (its static
# lib needs stb), md4c (lesson narratives), OpenGL, and Xvfb + Mesa (llvmpipe) to render without a display.
# The `fiberscope` command line: CLI11 (header-only).
packages=(build-essential cmake ninja-build pkg-config liburing-dev catch2
          libglfw3-dev libimgui-dev libstb-dev libmd4c-dev libgl-dev libgl1-mesa-dri xvfb libcli11-dev "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to apt-get install: ${missing[*]}" >&2; exit 1; }
  sudo=sudo
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
