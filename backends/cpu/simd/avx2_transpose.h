/* An 8x8 float transpose in AVX2 registers: r[i] holds row i on entry, column i on return. For the
 * AVX2 files that read eight rows a vector at a time and need them lane-wise (gemm_avx2.c's M = 1
 * GEMV and tap packing, conv/pool_avx2.c's GlobalAveragePool planes). Include after <immintrin.h>
 * in a file compiled with -mavx2. */
#ifndef LITHE_CPU_SIMD_AVX2_TRANSPOSE_H
#define LITHE_CPU_SIMD_AVX2_TRANSPOSE_H

static inline __attribute__((always_inline)) void lithe__avx2_transpose8(__m256 r[8]) {
    __m256 t[8], u[8];
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    for (int h = 0; h < 8; h += 4) {
        u[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
        u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
        u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
        u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
    }
    for (int i = 0; i < 4; i++) {
        r[i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x20);
        r[4 + i] = _mm256_permute2f128_ps(u[i], u[4 + i], 0x31);
    }
}

#endif
