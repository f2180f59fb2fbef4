/* The int8 GEMM's AVX2 microkernel (qgemm.h): u7 activations × s8 weights, 32 bytes a step:
 * vpmaddubsw (pairs into int16, exact for u7 × s8) then vpmaddwd by ones (into int32), 4 x 2
 * tiles, a horizontal sum per element at the end. Built with -mavx2; chosen only where the CPU
 * has AVX2. */
#include "qgemm.h"

#if defined(__AVX2__)
#include <immintrin.h>

static inline int32_t hsum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

#define STEP(c, a, w) c = _mm256_add_epi32(c, _mm256_madd_epi16(_mm256_maddubs_epi16(a, w), ones))

static void tile_avx2(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw,
                      int32_t *acc) {
    const __m256i ones = _mm256_set1_epi16(1);
    const size_t kfull = kw / 32 * 32;
    /* the last partial chunk of w's rows, zero-padded (a is zero there already) */
    int8_t tail[LITHE__Q8_NR][32] = {{0}};
    for (size_t j = 0; j < nr && kfull < kw; j++)
        for (size_t k = kfull; k < kw; k++) tail[j][k - kfull] = w[j * ldw + k];
    if (mr == 4 && nr == 2) {
        __m256i c00 = _mm256_setzero_si256(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
                c31 = c00;
        for (size_t k = 0; k < kw; k += 32) {
            const bool full = k < kfull;
            __m256i w0 = _mm256_loadu_si256((const __m256i *)(full ? w + k : tail[0])),
                    w1 = _mm256_loadu_si256((const __m256i *)(full ? w + ldw + k : tail[1]));
            __m256i a0 = _mm256_loadu_si256((const __m256i *)(a + k));
            STEP(c00, a0, w0);
            STEP(c01, a0, w1);
            __m256i a1 = _mm256_loadu_si256((const __m256i *)(a + lda + k));
            STEP(c10, a1, w0);
            STEP(c11, a1, w1);
            __m256i a2 = _mm256_loadu_si256((const __m256i *)(a + 2 * lda + k));
            STEP(c20, a2, w0);
            STEP(c21, a2, w1);
            __m256i a3 = _mm256_loadu_si256((const __m256i *)(a + 3 * lda + k));
            STEP(c30, a3, w0);
            STEP(c31, a3, w1);
        }
        acc[0] = hsum(c00), acc[1] = hsum(c01), acc[2] = hsum(c10), acc[3] = hsum(c11);
        acc[4] = hsum(c20), acc[5] = hsum(c21), acc[6] = hsum(c30), acc[7] = hsum(c31);
        return;
    }
    for (size_t i = 0; i < mr; i++) /* edge tiles: one dot product at a time */
        for (size_t j = 0; j < nr; j++) {
            __m256i c = _mm256_setzero_si256();
            for (size_t k = 0; k < kw; k += 32) {
                __m256i wv = _mm256_loadu_si256((const __m256i *)(k < kfull ? w + j * ldw + k : tail[j]));
                STEP(c, _mm256_loadu_si256((const __m256i *)(a + i * lda + k)), wv);
            }
            acc[i * LITHE__Q8_NR + j] = hsum(c);
        }
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
