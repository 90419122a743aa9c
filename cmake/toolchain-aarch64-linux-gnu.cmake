# SPDX-License-Identifier: MIT
# Cross-compile for aarch64 with Debian's gcc-aarch64-linux-gnu and
# g++-aarch64-linux-gnu (libc6-dev-arm64-cross provides the target libc in
# /usr/aarch64-linux-gnu); tests run under qemu-user (package qemu-user):
#
#   cmake -S . -B build-aarch64 \
#         -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64-linux-gnu.cmake
#
# `make check-aarch64` does this and runs the unit tests.  CTest prefixes
# every test whose command is a target with CMAKE_CROSSCOMPILING_EMULATOR;
# tests/bench.cmake and tests/torture.cmake pass it on to the programs they
# start themselves.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(SK_CROSS_TRIPLE aarch64-linux-gnu)
set(SK_CROSS_SYSROOT /usr/${SK_CROSS_TRIPLE})
set(CMAKE_C_COMPILER ${SK_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${SK_CROSS_TRIPLE}-g++)

# Libraries and headers of the target only; programs (nm, pkg-config) of
# the host.
set(CMAKE_FIND_ROOT_PATH ${SK_CROSS_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config must not hand the host's libraries (the bench peers) to the
# target's linker: only the target's multiarch .pc files.
set(ENV{PKG_CONFIG_LIBDIR}
  "/usr/lib/${SK_CROSS_TRIPLE}/pkgconfig:${SK_CROSS_SYSROOT}/lib/pkgconfig")

# -L: where qemu finds the target's dynamic loader and libraries.
find_program(SK_QEMU_AARCH64 qemu-aarch64)
if(SK_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${SK_QEMU_AARCH64} -L ${SK_CROSS_SYSROOT})
endif()
