# Cross build for aarch64 (AAPCS64) on a Debian 12 x86_64 host, run under
# qemu-user: the only way this repository checks its aarch64 context switch
# (context_switch_aarch64.hpp, context_entry_aarch64.S) without an ARM machine.
#
# Why it is built this way: Debian's cross compiler g++-aarch64-linux-gnu
# brings its own libc and libstdc++ under /usr/aarch64-linux-gnu, and also
# searches the multiarch directories (/usr/lib/aarch64-linux-gnu), where
# `liburing-dev:arm64` installs. So no sysroot is set for the compiler, and
# pkg-config is pointed at the arm64 multiarch .pc files only. Catch2 v2 is
# header-only: the host's (amd64) package is used as is. CTest runs every test
# through CMAKE_CROSSCOMPILING_EMULATOR; `-L` gives qemu the cross libc's
# dynamic loader and libraries. qemu-user refuses io_uring_setup, so the
# runtime falls back to epoll there.
#
#   cmake -S . -B build-aarch64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake
#   cmake --build build-aarch64 --target test_runtime && ctest --test-dir build-aarch64
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_ASM_COMPILER aarch64-linux-gnu-gcc)

set(FIBERSCOPE_AARCH64_SYSROOT /usr/aarch64-linux-gnu CACHE PATH "The cross libc qemu-user loads programs with")
find_program(FIBERSCOPE_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static REQUIRED)
# LD_LIBRARY_PATH: liburing-dev:arm64 brings the multiarch libc6:arm64 too,
# and the host's ld.so.cache (which qemu falls back to) names its libc.so.6;
# loaded with the cross libc's ld.so (a different build), pthread_create spins
# forever. The cross libc's own directory first keeps loader and libc one build.
set(CMAKE_CROSSCOMPILING_EMULATOR ${FIBERSCOPE_QEMU_AARCH64} -L ${FIBERSCOPE_AARCH64_SYSROOT}
    -E LD_LIBRARY_PATH=${FIBERSCOPE_AARCH64_SYSROOT}/lib)

# pkg-config (liburing): the arm64 multiarch files, never the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# Only the runtime, the tracer and test_runtime: the viewer and the lessons
# need arm64 GLFW/ImGui/Mesa, which this check has no use for.
set(FIBERSCOPE_BUILD_VIEWER OFF CACHE BOOL "Build the viewer, the lessons and the tests that need them")
