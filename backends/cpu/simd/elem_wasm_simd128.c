/* simd/elem.c for wasm_simd128 (16-byte vectors); CMakeLists.txt gives this file the ISA's flags. */
#if defined(__wasm_simd128__) && !defined(LITHE_NO_SIMD)
#define LITHE_SIMD_ISA wasm_simd128
#define LITHE_SIMD_BYTES 16
#include "elem.c"
#else
typedef int lithe__simd_elem_wasm_simd128_unused; /* ISO C: no empty translation unit */
#endif
