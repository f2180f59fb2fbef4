# Cross-compiling to WebAssembly + WASI (preview 1) with Debian's clang, wasi-libc and
# libclang-rt-14-dev-wasm32: the `wasi` preset builds tools/lithe into lithe.wasm, which any WASI
# runtime runs (tools/lithe/run-wasi.mjs runs it under Node's node:wasi).
set(CMAKE_SYSTEM_NAME Generic) # CMake 3.25 has no WASI platform module; Generic + the target below
set(CMAKE_SYSTEM_PROCESSOR wasm32)
set(CMAKE_C_COMPILER clang)
set(CMAKE_C_COMPILER_TARGET wasm32-wasi)
set(CMAKE_EXECUTABLE_SUFFIX ".wasm")
# Only the sysroot's libraries: a host zlib or cmocka must not be picked up for a wasm link.
set(CMAKE_FIND_ROOT_PATH /usr/lib/wasm32-wasi /usr/include/wasm32-wasi)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# dlpack.h is a header-only host package; headers are allowed from the host too.
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
# A 1 MiB stack (the default is 64 KiB; the layers keep small arrays on it) and a growable heap.
add_link_options(-Wl,-z,stack-size=1048576 -Wl,--initial-memory=16777216)
# No DWARF in the module: Debian's wasi-libc objects carry theirs, which was 228 KB of lithe.wasm's
# 806 KB (the Release build's own objects have none).
add_link_options(-Wl,--strip-debug)
