/* The int8 GEMM's AVX2 microkernel (qgemm.h): u7 activations × s8 weights, 32 bytes a step:
 * vpmaddubsw (pairs into int16, exact for u7 × s8) then vpmaddwd by ones (into int32), 4 x 2
 * tiles, a horizontal sum per element at the end. Built with -mavx2; chosen only where the CPU
 * has AVX2. */
#include "qgemm.h"

#if defined(__AVX2__)
#include <immintrin.h>
#include <string.h>

static inline int32_t hsum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

/* the eight sums of c[0..8) at once: [Σc0, ..., Σc7] (three rounds of vphaddd, then the two
 * 128-bit halves added; integer sums, exact in any order) */
static inline void hsum8(const __m256i *c, int32_t *out) {
    __m256i h01 = _mm256_hadd_epi32(c[0], c[1]), h23 = _mm256_hadd_epi32(c[2], c[3]);
    __m256i h45 = _mm256_hadd_epi32(c[4], c[5]), h67 = _mm256_hadd_epi32(c[6], c[7]);
    __m256i q0 = _mm256_hadd_epi32(h01, h23), q1 = _mm256_hadd_epi32(h45, h67);
    __m256i s = _mm256_add_epi32(_mm256_permute2x128_si256(q0, q1, 0x20), _mm256_permute2x128_si256(q0, q1, 0x31));
    _mm256_storeu_si256((__m256i *)out, s);
}

#define STEP(c, a, w) c = _mm256_add_epi32(c, _mm256_madd_epi16(_mm256_maddubs_epi16(a, w), ones))

/* The last partial chunk (kw % 32 != 0, kw >= 32) without a copy: the 32 bytes ending at kw, read
 * from w (all below kw: in the row) and from a with the bytes below kfull (already summed) zeroed
 * by amask: their products are 0. Smaller kw: w's chunk through a zeroed copy. */
static void tile_avx2(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw,
                      int32_t *acc) {
    const __m256i ones = _mm256_set1_epi16(1);
    const size_t kfull = kw / 32 * 32;
    int8_t tail[LITHE__Q8_NR][32];
    const int8_t *w1 = w + (nr == 2 ? ldw : 0); /* (nr 1: read as column 0, never stored) */
    const int8_t *t0 = w + kfull, *t1 = w1 + kfull;
    size_t kt = kfull; /* where the last chunk starts */
    __m256i amask = _mm256_set1_epi8(-1);
    if (kfull < kw && kw >= 32) {
        kt = kw - 32;
        t0 = w + kt, t1 = w1 + kt;
        const __m256i idx = _mm256_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                                             21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31);
        amask = _mm256_cmpgt_epi8(idx, _mm256_set1_epi8((char)(kfull - kt - 1)));
    } else if (kfull < kw) {
        memset(tail, 0, sizeof tail);
        memcpy(tail[0], w + kfull, kw - kfull);
        memcpy(tail[1], w1 + kfull, kw - kfull);
        t0 = tail[0], t1 = tail[1];
    }
#define LOADA(p) _mm256_loadu_si256((const __m256i *)(p))
    if (mr == 4 && nr == 2) { /* named accumulators: an array of eight spilled in gcc 12's loop */
        __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
        const uint8_t *a0p = a, *a1p = a + lda, *a2p = a + 2 * lda, *a3p = a + 3 * lda;
#define BODY4x2(W0, W1, A0, A1, A2, A3)                                                                              \
    do {                                                                                                           \
        __m256i w0 = W0, wb = W1, av = A0;                                                                         \
        STEP(c0, av, w0);                                                                                          \
        STEP(c1, av, wb);                                                                                          \
        av = A1;                                                                                                   \
        STEP(c2, av, w0);                                                                                          \
        STEP(c3, av, wb);                                                                                          \
        av = A2;                                                                                                   \
        STEP(c4, av, w0);                                                                                          \
        STEP(c5, av, wb);                                                                                          \
        av = A3;                                                                                                   \
        STEP(c6, av, w0);                                                                                          \
        STEP(c7, av, wb);                                                                                          \
    } while (0)
        for (size_t k = 0; k < kfull; k += 32)
            BODY4x2(LOADA(w + k), LOADA(w1 + k), LOADA(a0p + k), LOADA(a1p + k), LOADA(a2p + k), LOADA(a3p + k));
        if (kfull < kw)
            BODY4x2(LOADA(t0), LOADA(t1), _mm256_and_si256(LOADA(a0p + kt), amask), _mm256_and_si256(LOADA(a1p + kt), amask),
                    _mm256_and_si256(LOADA(a2p + kt), amask), _mm256_and_si256(LOADA(a3p + kt), amask));
#undef BODY4x2
        const __m256i c[8] = {c0, c1, c2, c3, c4, c5, c6, c7};
        hsum8(c, acc);
        return;
    }
    for (size_t i = 0; i < mr; i++) /* edge tiles: one dot product at a time */
        for (size_t j = 0; j < nr; j++) {
            const int8_t *wj = j ? w1 : w;
            __m256i c = _mm256_setzero_si256();
            for (size_t k = 0; k < kfull; k += 32) STEP(c, LOADA(a + i * lda + k), LOADA(wj + k));
            if (kfull < kw) STEP(c, _mm256_and_si256(LOADA(a + i * lda + kt), amask), LOADA(j ? t1 : t0));
            acc[i * LITHE__Q8_NR + j] = hsum(c);
        }
#undef LOADA
}

/* qgemm.h's lithe__q8_pairs_fit, 32 codes a step: the positive parts and the magnitudes of the
 * negative ones (abs of min(w, 0): -128 gives 0x80, 128 as unsigned) summed in pairs by vpmaddubsw
 * against ones (at most 256: exact), each compared with 128 */
bool lithe__q8_pairs_fit_avx2(int64_t N, int64_t K, const int8_t *W, int64_t ldw) {
    const __m256i zero = _mm256_setzero_si256(), ones = _mm256_set1_epi8(1), lim = _mm256_set1_epi16(128);
    const int64_t kfull = K / 32 * 32;
    for (int64_t j = 0; j < N; j++) {
        const int8_t *w = W + j * ldw;
        __m256i bad = zero;
        for (int64_t kk = 0; kk < kfull; kk += 32) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(w + kk));
            __m256i ps = _mm256_maddubs_epi16(_mm256_max_epi8(v, zero), ones);
            __m256i ns = _mm256_maddubs_epi16(_mm256_abs_epi8(_mm256_min_epi8(v, zero)), ones);
            bad = _mm256_or_si256(bad, _mm256_or_si256(_mm256_cmpgt_epi16(ps, lim), _mm256_cmpgt_epi16(ns, lim)));
        }
        if (!_mm256_testz_si256(bad, bad)) return false;
        for (int64_t kk = kfull; kk < K; kk += 2) {
            int a = w[kk], b = kk + 1 < K ? w[kk + 1] : 0;
            if ((a > 0 ? a : 0) + (b > 0 ? b : 0) > 128 || (a < 0 ? -a : 0) + (b < 0 ? -b : 0) > 128) return false;
        }
    }
    return true;
}

/* qgemm.h's epilogue, 8 columns a step: the same operations in the same order as
 * lithe__q8_epilogue_ref (vpmulld, vcvtdq2ps and two vmulps, vaddps: each rounded alone), the last
 * n % 8 columns by the twin itself */
void lithe__q8_epilogue_avx2(size_t n, const int32_t *acc, int32_t za, const int32_t *wsum, float sa, const float *sw,
                              bool per_col, const float *bias, float *y) {
    const __m256i zv = _mm256_set1_epi32(za);
    const __m256 sav = _mm256_set1_ps(sa), s0 = _mm256_set1_ps(sa * sw[0]);
    size_t c = 0;
    for (; c + 8 <= n; c += 8) {
        __m256i d = _mm256_sub_epi32(_mm256_loadu_si256((const __m256i *)(acc + c)),
                                     _mm256_mullo_epi32(zv, _mm256_loadu_si256((const __m256i *)(wsum + c))));
        __m256 s = per_col ? _mm256_mul_ps(sav, _mm256_loadu_ps(sw + c)) : s0;
        __m256 t = _mm256_mul_ps(_mm256_cvtepi32_ps(d), s);
        if (bias) t = _mm256_add_ps(t, _mm256_loadu_ps(bias + c));
        _mm256_storeu_ps(y + c, t);
    }
    if (c < n) lithe__q8_epilogue_ref(n - c, acc + c, za, wsum + c, sa, per_col ? sw + c : sw, per_col, bias ? bias + c : NULL, y + c);
}

/* qgemm.h's quantize pass, 32 codes a step: vdivps (the IEEE quotient), minps(hi, t) (keeps a NaN),
 * maxps(t, lo) (NaN to lo), ± 1.5·2^23 (round half to even), + off, then vcvtps2dq (exact: an
 * integer in [0, 255]) and packs to bytes; the last n % 32 by the twin */
static inline __m256i u32v(const float *x, __m256 s, __m256 lo, __m256 hi, __m256 off) {
    const __m256 r = _mm256_set1_ps(12582912.0f);
    __m256 t = _mm256_max_ps(_mm256_min_ps(hi, _mm256_div_ps(_mm256_loadu_ps(x), s)), lo);
    return _mm256_cvtps_epi32(_mm256_add_ps(_mm256_sub_ps(_mm256_add_ps(t, r), r), off));
}
void lithe__q8_quant_avx2(size_t n, const float *x, const lithe__q8_qx *q, uint8_t *u) {
    const __m256 s = _mm256_set1_ps(q->scale), lo = _mm256_set1_ps(q->lo), hi = _mm256_set1_ps(q->hi),
                 off = _mm256_set1_ps(q->off);
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i a = u32v(x + i, s, lo, hi, off), b = u32v(x + i + 8, s, lo, hi, off),
                c = u32v(x + i + 16, s, lo, hi, off), d = u32v(x + i + 24, s, lo, hi, off);
        /* packs / packus work per 128-bit lane: a0 b0 c0 d0 a1 b1 c1 d1 (4-byte groups), permuted back */
        __m256i v = _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
        _mm256_storeu_si256((__m256i *)(u + i), _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7)));
    }
    if (i < n) lithe__q8_quant_ref(n - i, x + i, q, u + i);
}

static const lithe__q8_kernel avx2_kernel = {"avx2", tile_avx2, LITHE__Q8_A_U7, lithe__q8_epilogue_avx2,
                                             lithe__q8_quant_avx2, NULL};
const lithe__q8_kernel *lithe__q8_kernel_avx2(void) {
    return __builtin_cpu_supports("avx2") ? &avx2_kernel : NULL;
}
#else
const lithe__q8_kernel *lithe__q8_kernel_avx2(void) { return 0; }
#endif
