# Cross-compiling for 64-bit Arm Linux with Debian's gcc-aarch64-linux-gnu (the `aarch64` preset),
# so the NEON kernels build and their tests run on every CI run under qemu-user's qemu-aarch64.
# The target libraries come from two places: the cross sysroot /usr/aarch64-linux-gnu (libc,
# libm, pthreads) and Debian's multiarch arm64 packages in /usr/lib/aarch64-linux-gnu
# (libcmocka-dev:arm64; scripts/setup.sh adds the arm64 architecture and installs it).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# ctest runs every test binary through the emulator. At run time the arm64 loader and libraries
# are the multiarch ones (libc6:arm64 comes with libcmocka0:arm64): /lib/ld-linux-aarch64.so.1
# and /usr/lib/aarch64-linux-gnu. Not `-L /usr/aarch64-linux-gnu`: that mixes the cross
# package's ld.so with the multiarch libc.so.6 (another Debian revision), and processes hang
# before main.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# Libraries: the sysroot, then the multiarch directory only (never the host's x86-64 ones).
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(CMAKE_LIBRARY_PATH /usr/lib/aarch64-linux-gnu)
set(CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu)
# Headers: the sysroot's, plus the architecture-independent host packages (cmocka.h, dlpack.h).
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
