# SPDX-License-Identifier: MIT
# Build 32-bit x86 programs with the host's gcc -m32 (Debian packages
# gcc-12-multilib, g++-12-multilib); they run natively:
#
#   cmake -S . -B build-m32 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-i686-m32.cmake
#
# `make check-m32` does this and runs the unit tests.
# A cross build as far as CMake is concerned: where the kernel runs no
# 32-bit programs, make check-m32 passes an emulator
# (-DCMAKE_CROSSCOMPILING_EMULATOR=/usr/bin/qemu-i386).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR i686)
set(CMAKE_C_COMPILER gcc)
set(CMAKE_CXX_COMPILER g++)
set(CMAKE_C_FLAGS_INIT -m32)
set(CMAKE_CXX_FLAGS_INIT -m32)

# The kernel's <asm/*.h> live in /usr/include/x86_64-linux-gnu/asm, which
# gcc -m32 does not search; Debian's gcc-multilib adds the link
# /usr/include/asm to them, but gcc-multilib conflicts with every cross
# compiler (gcc-aarch64-linux-gnu).  Search that directory last instead:
# those headers serve both word sizes.
set(sk_m32_asm /usr/include/x86_64-linux-gnu)
if(NOT EXISTS /usr/include/asm AND EXISTS ${sk_m32_asm}/asm)
  string(APPEND CMAKE_C_FLAGS_INIT " -idirafter ${sk_m32_asm}")
  string(APPEND CMAKE_CXX_FLAGS_INIT " -idirafter ${sk_m32_asm}")
endif()

# pkg-config must not hand 64-bit libraries (the bench peers) to the
# 32-bit linker: only the i386 .pc files.
set(ENV{PKG_CONFIG_LIBDIR}
  "/usr/lib/i386-linux-gnu/pkgconfig:/usr/lib32/pkgconfig")
