/* simd/elem.c for avx512 (64-byte vectors); CMakeLists.txt gives this file the ISA's flags. */
#if defined(__x86_64__) && !defined(LITHE_NO_SIMD)
#define LITHE_SIMD_ISA avx512
#define LITHE_SIMD_BYTES 64
#include "elem.c"
#else
typedef int lithe__simd_elem_avx512_unused; /* ISO C: no empty translation unit */
#endif
