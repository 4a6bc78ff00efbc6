#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds every C++ snippet of
# the README (each is a whole program) against it twice, with CMake's
# find_package and with plain `pkg-config --cflags --libs`, and runs each. A
# snippet that records a trace has it read back by the installed
# `fiberscope stats`. So the README's examples are what a user can build.
set -euo pipefail
build=$1 source=$2 readme=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"

# The snippets: every ```cpp block of the README, in order.
mkdir "$work/user"
awk -v dir="$work/user" '
  /^```cpp$/ { n++; file = sprintf("%s/snippet%d.cpp", dir, n); inside = 1; next }
  /^```$/ && inside { inside = 0; close(file); next }
  inside { print > file }' "$readme"
cp "$source/user_program.cpp" "$work/user/"
programs=$(cd "$work/user" && ls *.cpp | sed 's/\.cpp$//')
[ "$(echo "$programs" | wc -l)" -ge 3 ] || { echo "found no C++ snippets in $readme"; exit 1; }
{
  echo 'cmake_minimum_required(VERSION 3.25)'
  echo 'project(fiberscope_user CXX)'
  echo 'find_package(fiberscope REQUIRED)'
  for p in $programs; do
    echo "add_executable($p $p.cpp)"
    echo "target_link_libraries($p PRIVATE fiberscope::runtime)"
  done
} > "$work/user/CMakeLists.txt"
cmake -S "$work/user" -B "$work/user/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/user/build" >/dev/null

for p in $programs; do
  c++ -std=c++20 "$work/user/$p.cpp" -o "$work/user/$p-pc" $(pkg-config --cflags --libs fiberscope) ||
    { echo "$p: does not build with 'pkg-config --cflags --libs fiberscope'"; exit 1; }
  for binary in "$work/user/build/$p" "$work/user/$p-pc"; do
    run=$(mktemp -d -p "$work")
    (cd "$run" && "$binary" >out.txt 2>&1) || { echo "$binary failed:"; cat "$run/out.txt"; exit 1; }
    if [ -e "$run/out.fstrace" ]; then
      "$work/prefix/bin/fiberscope" stats "$run/out.fstrace" >"$run/stats.txt" 2>&1 ||
        { echo "$p: fiberscope stats could not read its trace:"; cat "$run/stats.txt"; exit 1; }
      grep -q "worker 7" "$run/stats.txt" || { echo "$p: the trace lacks the fiber it named:"; cat "$run/stats.txt"; exit 1; }
    fi
  done
done
[ "$("$work/user/build/user_program")" = 42 ] || { echo "CMake-built user program failed"; exit 1; }
echo "installed Fiberscope builds and runs every README snippet ($(echo $programs)) from find_package and pkg-config"
