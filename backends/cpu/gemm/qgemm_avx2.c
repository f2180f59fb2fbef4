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
    if (mr == 4 && nr == 2) {
        __m256i c[8];
        for (int e = 0; e < 8; e++) c[e] = _mm256_setzero_si256();
        for (size_t k = 0; k < kfull; k += 32) {
            __m256i w0 = LOADA(w + k), wb = LOADA(w1 + k);
            __m256i a0 = LOADA(a + k);
            STEP(c[0], a0, w0);
            STEP(c[1], a0, wb);
            __m256i a1 = LOADA(a + lda + k);
            STEP(c[2], a1, w0);
            STEP(c[3], a1, wb);
            __m256i a2 = LOADA(a + 2 * lda + k);
            STEP(c[4], a2, w0);
            STEP(c[5], a2, wb);
            __m256i a3 = LOADA(a + 3 * lda + k);
            STEP(c[6], a3, w0);
            STEP(c[7], a3, wb);
        }
        if (kfull < kw) {
            __m256i w0 = LOADA(t0), wb = LOADA(t1);
            for (int i = 0; i < 4; i++) {
                __m256i ai = _mm256_and_si256(LOADA(a + i * lda + kt), amask);
                STEP(c[2 * i], ai, w0);
                STEP(c[2 * i + 1], ai, wb);
            }
        }
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

static const lithe__q8_kernel avx2_kernel = {"avx2", tile_avx2, LITHE__Q8_A_U7};
const lithe__q8_kernel *lithe__q8_kernel_avx2(void) {
    return __builtin_cpu_supports("avx2") ? &avx2_kernel : NULL;
}
#else
const lithe__q8_kernel *lithe__q8_kernel_avx2(void) { return 0; }
#endif
