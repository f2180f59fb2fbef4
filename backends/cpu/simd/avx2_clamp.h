/* gemm.h's store clamp (lithe__sgemm_ukparams' clamp, lo, hi: LITHE__SGEMM_CLAMP_*) on eight lanes,
 * with the act kernel's bits: maxps / minps return their second operand when either is NaN or both
 * are zeros, so relu = max(+0, t) + 0 (NaN stays NaN, -0 -> +0); clip = max(lo, min(hi, t + 0));
 * HardSwish (mobilenet's) t * (max(0, min(6, t + 3)) / 6), NaN kept by the order, h / 6 as
 * q = h·(1/6), q + (h − 6q)·(1/6) with FMAs: the correctly rounded quotient for every h it sees
 * (+0, NaN and [2^-22, 6]: t + 3 is a multiple of 2^-22 where it is small; checked against vdivps
 * for all 2^32 floats, it differs only where the quotient underflows and at h = -0, which max(0, ·)
 * never returns), without a vdivps per vector (it was the pointwise tile's bottleneck at short K).
 * For the AVX2 + FMA files that clamp in their stores (gemm_avx2.c, conv/qconv_avx2.c,
 * conv/pointwise_avx2.c). Include after <immintrin.h> in a
 * file compiled with -mavx2 -mfma. */
#ifndef LITHE_CPU_SIMD_AVX2_CLAMP_H
#define LITHE_CPU_SIMD_AVX2_CLAMP_H

typedef struct lithe__avx2_clampv {
    int cl; /* LITHE__SGEMM_CLAMP_*, 0: none */
    __m256 lo, hi;
} lithe__avx2_clampv;

static inline __attribute__((always_inline)) lithe__avx2_clampv lithe__avx2_clamp_of(int cl, float lo, float hi) {
    return (lithe__avx2_clampv){cl, _mm256_set1_ps(lo), _mm256_set1_ps(hi)};
}

static inline __attribute__((always_inline)) __m256 lithe__avx2_clamp(__m256 t, lithe__avx2_clampv cv) {
    if (cv.cl == LITHE__SGEMM_CLAMP_RELU) return _mm256_add_ps(_mm256_max_ps(_mm256_setzero_ps(), t), _mm256_setzero_ps());
    if (cv.cl == LITHE__SGEMM_CLAMP_HSWISH) {
        const __m256 six = _mm256_set1_ps(6.0f), r6 = _mm256_set1_ps(1.0f / 6.0f);
        __m256 h = _mm256_max_ps(_mm256_setzero_ps(), _mm256_min_ps(six, _mm256_add_ps(t, _mm256_set1_ps(3.0f))));
        __m256 q = _mm256_mul_ps(h, r6);
        return _mm256_mul_ps(t, _mm256_fmadd_ps(_mm256_fnmadd_ps(q, six, h), r6, q));
    }
    return _mm256_max_ps(cv.lo, _mm256_min_ps(cv.hi, _mm256_add_ps(t, _mm256_setzero_ps())));
}

#endif
