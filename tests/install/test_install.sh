#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs a user's
# program against it twice: with CMake's find_package and with pkg-config.
set -euo pipefail
build=$1 source=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
mkdir "$work/user"
cp "$source/user_program.cpp" "$work/user/"
cp "$source/CMakeLists.txt.in" "$work/user/CMakeLists.txt"
cmake -S "$work/user" -B "$work/user/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/user/build" >/dev/null
[ "$("$work/user/build/user_program")" = 42 ] || { echo "CMake-built user program failed"; exit 1; }
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
c++ -std=c++20 "$source/user_program.cpp" -o "$work/user/pc_program" $(pkg-config --cflags --libs --static fiberscope)
[ "$("$work/user/pc_program")" = 42 ] || { echo "pkg-config-built user program failed"; exit 1; }
echo "installed Fiberscope works from find_package and pkg-config"
