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

/* lanes [0, k) set (k <= 8): the masked loads and stores of a row's last k < 8 values */
static inline __m256i tail_mask(int64_t k) {
    static const int32_t ones[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
    return _mm256_loadu_si256((const __m256i *)(ones + 8 - k));
}

static inline __attribute__((always_inline)) void store_row(const lithe__qconv *c, int64_t m, int64_t p, __m256i acc,
                                                            lithe__avx2_clampv cv) {
    if (m >= c->M) return;
    __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(acc), _mm256_set1_ps(c->scale[m]));
    if (c->b) v = _mm256_add_ps(v, _mm256_set1_ps(c->b[m]));
    if (cv.cl) v = lithe__avx2_clamp(v, cv);
    float *y = c->Y + m * c->P + p;
    if (p + 8 <= c->P) {
        _mm256_storeu_ps(y, v);
    } else { /* the row's last P - p < 8 pixels: a masked store (no write past them) */
        _mm256_maskstore_ps(y, tail_mask(c->P - p), v);
    }
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
            if (act) lithe__qconv_act_rows(c, m, p, 16);
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
            if (act) lithe__qconv_act_rows(c, m, p, 8);
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
    if (i < n) { /* masked: the same operations on the last n - i < 8 */
        const __m256i k = tail_mask(n - i);
        _mm256_maskstore_ps(y + i, k, qv8(_mm256_maskload_ps(x + i, k), s, lo, hi));
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
    if (i < n) { /* masked: the same operations on the last n - i < 8 pairs */
        const __m256i k = tail_mask(n - i);
        __m256i a = _mm256_cvtps_epi32(qv8(_mm256_maskload_ps(x0 + i, k), s, lo, hi));
        __m256i b = _mm256_cvtps_epi32(qv8(_mm256_maskload_ps(x1 + i, k), s, lo, hi));
        __m256i v = _mm256_or_si256(_mm256_slli_epi32(b, 16), _mm256_and_si256(a, _mm256_set1_epi32(0xFFFF)));
        _mm256_maskstore_epi32((int *)(d + 2 * i), k, v);
    }
}

static void epi(const lithe__qconv *c, int64_t r0, int64_t rows, int64_t n, float *y) {
    const lithe__avx2_clampv cv = lithe__avx2_clamp_of(c->clamp, c->lo, c->hi);
    const __m256i tail = tail_mask(n % 8);
    const int64_t n8 = n / 8 * 8;
    for (int64_t r = r0; r < r0 + rows; r++, y += n) {
        const int64_t m = r % c->M;
        const __m256 sc = _mm256_set1_ps(c->scale[m]), b = _mm256_set1_ps(c->b ? c->b[m] : 0.0f);
        for (int64_t i = 0; i < n8; i += 8) {
            __m256 v = _mm256_mul_ps(_mm256_loadu_ps(y + i), sc);
            if (c->b) v = _mm256_add_ps(v, b);
            _mm256_storeu_ps(y + i, cv.cl ? lithe__avx2_clamp(v, cv) : v);
        }
        if (n8 < n) { /* masked: the same operations on the last n % 8 */
            __m256 v = _mm256_mul_ps(_mm256_maskload_ps(y + n8, tail), sc);
            if (c->b) v = _mm256_add_ps(v, b);
            _mm256_maskstore_ps(y + n8, tail, cv.cl ? lithe__avx2_clamp(v, cv) : v);
        }
        if (!cv.cl && c->act) c->act_fn(c->act, n, y, y);
    }
}

/* u = qv - lo as int32 lanes (0..255) */
static inline __m256i u8v(const float *x, __m256 s, __m256 lo, __m256 hi) {
    return _mm256_cvtps_epi32(_mm256_sub_ps(qv8(_mm256_loadu_ps(x), s, lo, hi), lo));
}

static void quant_u8(int64_t n, const float *x, const lithe__qx *q, uint8_t *y) {
    const __m256 s = _mm256_set1_ps(q->scale), lo = _mm256_set1_ps(q->lo), hi = _mm256_set1_ps(q->hi);
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i a = u8v(x + i, s, lo, hi), b = u8v(x + i + 8, s, lo, hi), c = u8v(x + i + 16, s, lo, hi),
                d = u8v(x + i + 24, s, lo, hi);
        /* packs / packus work per 128-bit lane: a0 b0 c0 d0 a1 b1 c1 d1 (4-byte groups), permuted back */
        __m256i v = _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
        v = _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)(y + i), v);
    }
    if (i < n) lithe__qconv_aux_ref.quant_u8(n - i, x + i, q, y + i);
}

/* 8 pixels of a quad (the first k of them: the rest of the lanes unread, and 0): row j's u in byte j
 * of each 32-bit lane, 0 for j >= nrows */
static inline __m256i quad8(const float *x, int64_t stride, int nrows, __m256i k, __m256 s, __m256 lo, __m256 hi) {
    __m256i v = _mm256_setzero_si256();
    for (int j = 0; j < nrows; j++) {
        __m256i u = _mm256_cvtps_epi32(_mm256_sub_ps(qv8(_mm256_maskload_ps(x + j * stride, k), s, lo, hi), lo));
        v = _mm256_or_si256(v, _mm256_slli_epi32(u, 8 * j));
    }
    return v;
}

static void quant_quads(int64_t n, const float *x, int64_t stride, int nrows, const lithe__qx *q, uint8_t *d) {
    const __m256 s = _mm256_set1_ps(q->scale), lo = _mm256_set1_ps(q->lo), hi = _mm256_set1_ps(q->hi);
    const __m256i all = _mm256_set1_epi32(-1);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_si256((__m256i *)(d + 4 * i), quad8(x + i, stride, nrows, all, s, lo, hi));
    if (i < n) {
        const __m256i k = tail_mask(n - i);
        _mm256_maskstore_epi32((int *)(d + 4 * i), k, quad8(x + i, stride, nrows, k, s, lo, hi));
    }
}

const lithe__qconv_aux lithe__qconv_aux_avx2 = {quant_f32, quant_i16, quant_pairs, epi, quant_u8,
                                                quant_quads, NULL, NULL, NULL, NULL, NULL, NULL};

/* ---- the u8 x s8 tile (qconv.h: exact where lithe__qconv8_exact held at pack time) ---- */

#define MADD8(acc, x, w) acc = _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(x, w), ones))

static inline __attribute__((always_inline)) __m256i fix(const lithe__qconv *c, int64_t m, __m256i acc) {
    return m < c->M ? _mm256_add_epi32(acc, _mm256_set1_epi32(c->xlo * c->wsum[m])) : acc;
}

void lithe__qconv8_avx2(const lithe__qconv *c, int64_t m0, int64_t m1) {
    const int64_t Kq = c->Kq, P8 = c->P8;
    const lithe__avx2_clampv cv = lithe__avx2_clamp_of(c->clamp, c->lo, c->hi);
    const bool act = !c->clamp && c->act;
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t m = m0; m < m1 && m < c->M; m += LITHE__QC_MR) {
        const int32_t *wp = c->Wb + (m / LITHE__QC_MR) * Kq * LITHE__QC_MR;
        int64_t p = 0;
        for (; p + 16 <= P8; p += 16) {
            __m256i a00 = _mm256_setzero_si256(), a01 = a00, a10 = a00, a11 = a00, a20 = a00, a21 = a00, a30 = a00,
                    a31 = a00;
            const uint8_t *x = c->Xb + p * 4;
            for (int64_t kq = 0; kq < Kq; kq++, x += P8 * 4) {
                const __m256i x0 = _mm256_loadu_si256((const __m256i *)x),
                              x1 = _mm256_loadu_si256((const __m256i *)(x + 32));
                const int32_t *w = wp + kq * LITHE__QC_MR;
                __m256i w0 = _mm256_set1_epi32(w[0]);
                MADD8(a00, x0, w0);
                MADD8(a01, x1, w0);
                __m256i w1 = _mm256_set1_epi32(w[1]);
                MADD8(a10, x0, w1);
                MADD8(a11, x1, w1);
                __m256i w2 = _mm256_set1_epi32(w[2]);
                MADD8(a20, x0, w2);
                MADD8(a21, x1, w2);
                __m256i w3 = _mm256_set1_epi32(w[3]);
                MADD8(a30, x0, w3);
                MADD8(a31, x1, w3);
            }
            store_row(c, m, p, fix(c, m, a00), cv), store_row(c, m, p + 8, fix(c, m, a01), cv);
            store_row(c, m + 1, p, fix(c, m + 1, a10), cv), store_row(c, m + 1, p + 8, fix(c, m + 1, a11), cv);
            store_row(c, m + 2, p, fix(c, m + 2, a20), cv), store_row(c, m + 2, p + 8, fix(c, m + 2, a21), cv);
            store_row(c, m + 3, p, fix(c, m + 3, a30), cv), store_row(c, m + 3, p + 8, fix(c, m + 3, a31), cv);
            if (act) lithe__qconv_act_rows(c, m, p, 16);
        }
        if (p < P8) { /* 8 pixels left */
            __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
            const uint8_t *x = c->Xb + p * 4;
            for (int64_t kq = 0; kq < Kq; kq++, x += P8 * 4) {
                const __m256i x0 = _mm256_loadu_si256((const __m256i *)x);
                const int32_t *w = wp + kq * LITHE__QC_MR;
                MADD8(a0, x0, _mm256_set1_epi32(w[0]));
                MADD8(a1, x0, _mm256_set1_epi32(w[1]));
                MADD8(a2, x0, _mm256_set1_epi32(w[2]));
                MADD8(a3, x0, _mm256_set1_epi32(w[3]));
            }
            store_row(c, m, p, fix(c, m, a0), cv), store_row(c, m + 1, p, fix(c, m + 1, a1), cv);
            store_row(c, m + 2, p, fix(c, m + 2, a2), cv), store_row(c, m + 3, p, fix(c, m + 3, a3), cv);
            if (act) lithe__qconv_act_rows(c, m, p, 8);
        }
    }
}
#endif
