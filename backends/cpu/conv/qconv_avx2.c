/* The int8 convolution's AVX2 kernel (qconv.h): MR = 4 filters × 16 (or 8) pixels a tile, per K
 * pair one vpmaddwd of the pixels' int16 pairs by the filter's broadcast pair (exact int32), the
 * epilogue (float)acc · scale (+ b) as the scalar twin computes it (mul then add, no FMA), stored
 * straight into Y's rows (a partial last vector through a buffer). Built with -mavx2. */
#include "qconv.h"

#if defined(__AVX2__)
#include <immintrin.h>
#include <string.h>

static inline void store_row(const lithe__qconv *c, int64_t m, int64_t p, __m256i acc) {
    if (m >= c->M) return;
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(c->scale[m]));
    if (c->b) v = _mm256_add_ps(v, _mm256_set1_ps(c->b[m]));
    float *y = c->Y + m * c->P + p;
    if (p + 8 <= c->P) {
        _mm256_storeu_ps(y, v);
    } else {
        float t[8];
        _mm256_storeu_ps(t, v);
        memcpy(y, t, (size_t)(c->P - p) * sizeof *t);
    }
}

#define MADD(acc, x, w) acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x, w))

void lithe__qconv_avx2(const lithe__qconv *c, int64_t m0, int64_t m1) {
    const int64_t Kp = c->Kp, P8 = c->P8;
    for (int64_t m = m0; m < m1 && m < c->M; m += LITHE__QC_MR) {
        const int32_t *wp = c->W + (m / LITHE__QC_MR) * Kp * LITHE__QC_MR;
        int64_t p = 0;
        for (; p + 16 <= P8; p += 16) {
            __m256i a00 = _mm256_setzero_si256(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00,
                    a31 = a00;
            const int16_t *x = c->X + p * 2;
            for (int64_t kp = 0; kp < Kp; kp++, x += P8 * 2) {
                const __m256i x0 = _mm256_loadu_si256((const __m256i *)x),
                              x1 = _mm256_loadu_si256((const __m256i *)(x + 16));
                const int32_t *w = wp + kp * LITHE__QC_MR;
                __m256i w0 = _mm256_set1_epi32(w[0]);
                MADD(a00, x0, w0);
                MADD(a01, x1, w0);
                __m256i w1 = _mm256_set1_epi32(w[1]);
                MADD(a10, x0, w1);
                MADD(a11, x1, w1);
                __m256i w2 = _mm256_set1_epi32(w[2]);
                MADD(a20, x0, w2);
                MADD(a21, x1, w2);
                __m256i w3 = _mm256_set1_epi32(w[3]);
                MADD(a30, x0, w3);
                MADD(a31, x1, w3);
            }
            store_row(c, m, p, a00), store_row(c, m, p + 8, a01);
            store_row(c, m + 1, p, a10), store_row(c, m + 1, p + 8, a11);
            store_row(c, m + 2, p, a20), store_row(c, m + 2, p + 8, a21);
            store_row(c, m + 3, p, a30), store_row(c, m + 3, p + 8, a31);
        }
        if (p < P8) { /* 8 pixels left */
            __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
            const int16_t *x = c->X + p * 2;
            for (int64_t kp = 0; kp < Kp; kp++, x += P8 * 2) {
                const __m256i x0 = _mm256_loadu_si256((const __m256i *)x);
                const int32_t *w = wp + kp * LITHE__QC_MR;
                MADD(a0, x0, _mm256_set1_epi32(w[0]));
                MADD(a1, x0, _mm256_set1_epi32(w[1]));
                MADD(a2, x0, _mm256_set1_epi32(w[2]));
                MADD(a3, x0, _mm256_set1_epi32(w[3]));
            }
            store_row(c, m, p, a0), store_row(c, m + 1, p, a1), store_row(c, m + 2, p, a2), store_row(c, m + 3, p, a3);
        }
    }
}
#endif
