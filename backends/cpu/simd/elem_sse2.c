/* simd/elem.c for sse2 (16-byte vectors); CMakeLists.txt gives this file the ISA's flags. */
#if defined(__x86_64__) && !defined(LITHE_NO_SIMD)
#define LITHE_SIMD_ISA sse2
#define LITHE_SIMD_BYTES 16
#include "elem.c"
#else
typedef int lithe__simd_elem_sse2_unused; /* ISO C: no empty translation unit */
#endif
