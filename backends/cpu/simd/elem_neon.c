/* simd/elem.c for neon (16-byte vectors); CMakeLists.txt gives this file the ISA's flags. */
#if defined(__aarch64__) && !defined(LITHE_NO_SIMD)
#define LITHE_SIMD_ISA neon
#define LITHE_SIMD_BYTES 16
#include "elem.c"
#else
typedef int lithe__simd_elem_neon_unused; /* ISO C: no empty translation unit */
#endif
