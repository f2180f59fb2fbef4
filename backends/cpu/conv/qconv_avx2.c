/* The int8 convolution's AVX2 kernel (qconv.h): MR = 4 filters × 16 (or 8) pixels a tile, per K
 * pair one vpmaddwd of the pixels' int16 pairs by the filter's broadcast pair (exact int32), the
 * epilogue (float)acc · scale (+ b) as the scalar twin computes it (mul then add, no FMA), stored
 * straight into Y's rows (a partial last vector through a buffer), the activation clamped in
 * the store or the act kernel over the tile's rows in L1. Built with -mavx2 -mfma. */
#include "qconv.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#include <string.h>

#include "../simd/avx2_clamp.h"

static inline __attribute__((always_inline)) void store_row(const lithe__qconv *c, int64_t m, int64_t p, __m256i acc,
                                                            lithe__avx2_clampv cv) {
    if (m >= c->M) return;
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(c->scale[m]));
    if (c->b) v = _mm256_add_ps(v, _mm256_set1_ps(c->b[m]));
    if (cv.cl) v = lithe__avx2_clamp(v, cv);
    float *y = c->Y + m * c->P + p;
    if (p + 8 <= c->P) {
        _mm256_storeu_ps(y, v);
    } else {
        float t[8];
        _mm256_storeu_ps(t, v);
        memcpy(y, t, (size_t)(c->P - p) * sizeof *t);
    }
}

/* an act the store does not clamp: the act kernel over the tile's rows [m, m + MR) at pixels
 * [p, p + n), in L1 (an elementwise kernel: the bits of its pass over Y) */
static void act_rows(const lithe__qconv *c, int64_t m, int64_t p, int64_t n) {
    if (p + n > c->P) n = c->P - p;
    for (int64_t r = m; r < m + LITHE__QC_MR && r < c->M; r++) c->act_fn(c->act, n, c->Y + r * c->P + p, c->Y + r * c->P + p);
}

#define MADD(acc, x, w) acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x, w))

void lithe__qconv_avx2(const lithe__qconv *c, int64_t m0, int64_t m1) {
    const int64_t Kp = c->Kp, P8 = c->P8;
    const lithe__avx2_clampv cv = lithe__avx2_clamp_of(c->clamp, c->lo, c->hi);
    const bool act = !c->clamp && c->act;
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
            store_row(c, m, p, a00, cv), store_row(c, m, p + 8, a01, cv);
            store_row(c, m + 1, p, a10, cv), store_row(c, m + 1, p + 8, a11, cv);
            store_row(c, m + 2, p, a20, cv), store_row(c, m + 2, p + 8, a21, cv);
            store_row(c, m + 3, p, a30, cv), store_row(c, m + 3, p + 8, a31, cv);
            if (act) act_rows(c, m, p, 16);
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
            store_row(c, m, p, a0, cv), store_row(c, m + 1, p, a1, cv), store_row(c, m + 2, p, a2, cv);
            store_row(c, m + 3, p, a3, cv);
            if (act) act_rows(c, m, p, 8);
        }
    }
}
/* ---- the passes (qconv.h's lithe__qconv_aux), the twins' operations eight lanes at a time ---- */

/* qconv.c's qv: t = x / scale (vdivps: the IEEE quotient), t > hi ? hi : t (minps(hi, t) keeps a
 * NaN), t >= lo ? t : lo (maxps(t, lo): NaN to lo; t == lo gives lo, the same value, and -0 / +0
 * both round to +0 below), then round half to even by ± 1.5·2^23 */
static inline __m256 qv8(__m256 x, __m256 s, __m256 lo, __m256 hi) {
    const __m256 r = _mm256_set1_ps(12582912.0f);
    __m256 t = _mm256_max_ps(_mm256_min_ps(hi, _mm256_div_ps(x, s)), lo);
    return _mm256_sub_ps(_mm256_add_ps(t, r), r);
}

static void quant_f32(int64_t n, const float *x, const lithe__qx *q, float *y) {
    const __m256 s = _mm256_set1_ps(q->scale), lo = _mm256_set1_ps(q->lo), hi = _mm256_set1_ps(q->hi);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, qv8(_mm256_loadu_ps(x + i), s, lo, hi));
    if (i < n) {
        float a[8] = {0}, t[8];
        memcpy(a, x + i, (size_t)(n - i) * sizeof *a);
        _mm256_storeu_ps(t, qv8(_mm256_loadu_ps(a), s, lo, hi));
        memcpy(y + i, t, (size_t)(n - i) * sizeof *t);
    }
}

static void quant_i16(int64_t n, const float *x, const lithe__qx *q, int16_t *y) {
    const __m256 s = _mm256_set1_ps(q->scale), lo = _mm256_set1_ps(q->lo), hi = _mm256_set1_ps(q->hi);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i a = _mm256_cvtps_epi32(qv8(_mm256_loadu_ps(x + i), s, lo, hi));
        __m256i b = _mm256_cvtps_epi32(qv8(_mm256_loadu_ps(x + i + 8), s, lo, hi));
        /* packs works per 128-bit lane: a0 b0 a1 b1, back to a0 a1 b0 b1 */
        __m256i v = _mm256_permute4x64_epi64(_mm256_packs_epi32(a, b), 0xD8);
        _mm256_storeu_si256((__m256i *)(y + i), v);
    }
    if (i < n) lithe__qconv_aux_ref.quant_i16(n - i, x + i, q, y + i);
}

static void quant_pairs(int64_t n, const float *x0, const float *x1, const lithe__qx *q, int16_t *d) {
    const __m256 s = _mm256_set1_ps(q->scale), lo = _mm256_set1_ps(q->lo), hi = _mm256_set1_ps(q->hi);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256i a = _mm256_cvtps_epi32(qv8(_mm256_loadu_ps(x0 + i), s, lo, hi));
        __m256i b = _mm256_cvtps_epi32(qv8(_mm256_loadu_ps(x1 + i), s, lo, hi));
        /* int16 of a in the low half of each 32-bit lane, of b in the high: (b << 16) | (a & 0xFFFF) */
        __m256i v = _mm256_or_si256(_mm256_slli_epi32(b, 16), _mm256_and_si256(a, _mm256_set1_epi32(0xFFFF)));
        _mm256_storeu_si256((__m256i *)(d + 2 * i), v);
    }
    if (i < n) { /* the tail as a full vector through copies: the same operations */
        float a[8] = {0}, b[8] = {0};
        int16_t t[16];
        memcpy(a, x0 + i, (size_t)(n - i) * sizeof *a);
        memcpy(b, x1 + i, (size_t)(n - i) * sizeof *b);
        quant_pairs(8, a, b, q, t);
        memcpy(d + 2 * i, t, (size_t)(n - i) * 2 * sizeof *t);
    }
}

static void epi(const lithe__qconv *c, int64_t m, int64_t n, float *y) {
    const lithe__avx2_clampv cv = lithe__avx2_clamp_of(c->clamp, c->lo, c->hi);
    const __m256 sc = _mm256_set1_ps(c->scale[m]), b = _mm256_set1_ps(c->b ? c->b[m] : 0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(y + i), sc);
        if (c->b) v = _mm256_add_ps(v, b);
        if (cv.cl) v = lithe__avx2_clamp(v, cv);
        _mm256_storeu_ps(y + i, v);
    }
    if (i < n) { /* the tail as a full vector through a copy: the same operations */
        float t[8] = {0};
        memcpy(t, y + i, (size_t)(n - i) * sizeof *t);
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(t), sc);
        if (c->b) v = _mm256_add_ps(v, b);
        if (cv.cl) v = lithe__avx2_clamp(v, cv);
        _mm256_storeu_ps(t, v);
        memcpy(y + i, t, (size_t)(n - i) * sizeof *t);
    }
    if (!cv.cl && c->act) c->act_fn(c->act, n, y, y);
}

const lithe__qconv_aux lithe__qconv_aux_avx2 = {quant_f32, quant_i16, quant_pairs, epi};
#endif
