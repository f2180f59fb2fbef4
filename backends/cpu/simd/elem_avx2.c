/* simd/elem.c for avx2 (32-byte vectors); CMakeLists.txt gives this file the ISA's flags. */
#if defined(__x86_64__) && !defined(LITHE_NO_SIMD)
#define LITHE_SIMD_ISA avx2
#define LITHE_SIMD_BYTES 32
#include "elem.c"
#else
typedef int lithe__simd_elem_avx2_unused; /* ISO C: no empty translation unit */
#endif
