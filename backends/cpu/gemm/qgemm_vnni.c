/* The int8 GEMM's AVX-512 VNNI microkernel (qgemm.h): vpdpbusd multiplies u8 × s8 and adds each
 * group of four into int32 in one instruction (no int16 step), 64 bytes a step, 4 x 2 tiles, a
 * horizontal sum per element at the end. Built with -mavx512f -mavx512vnni; chosen only where the
 * CPU has both. */
#include "qgemm.h"

#if defined(__AVX512F__) && defined(__AVX512VNNI__)
#include <immintrin.h>

#define STEP(c, a, w) c = _mm512_dpbusd_epi32(c, a, w)

static void tile_vnni(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw,
                      int32_t *acc) {
    const size_t kfull = kw / 64 * 64;
    int8_t tail[LITHE__Q8_NR][64] = {{0}}; /* the last partial chunk of w's rows, zero-padded */
    for (size_t j = 0; j < nr && kfull < kw; j++)
        for (size_t k = kfull; k < kw; k++) tail[j][k - kfull] = w[j * ldw + k];
    if (mr == 4 && nr == 2) {
        __m512i c00 = _mm512_setzero_si512(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00,
                c31 = c00;
        for (size_t k = 0; k < kw; k += 64) {
            const bool full = k < kfull;
            __m512i w0 = _mm512_loadu_si512(full ? (const void *)(w + k) : (const void *)tail[0]),
                    w1 = _mm512_loadu_si512(full ? (const void *)(w + ldw + k) : (const void *)tail[1]);
            __m512i a0 = _mm512_loadu_si512(a + k), a1 = _mm512_loadu_si512(a + lda + k);
            STEP(c00, a0, w0);
            STEP(c01, a0, w1);
            STEP(c10, a1, w0);
            STEP(c11, a1, w1);
            __m512i a2 = _mm512_loadu_si512(a + 2 * lda + k), a3 = _mm512_loadu_si512(a + 3 * lda + k);
            STEP(c20, a2, w0);
            STEP(c21, a2, w1);
            STEP(c30, a3, w0);
            STEP(c31, a3, w1);
        }
        acc[0] = _mm512_reduce_add_epi32(c00), acc[1] = _mm512_reduce_add_epi32(c01);
        acc[2] = _mm512_reduce_add_epi32(c10), acc[3] = _mm512_reduce_add_epi32(c11);
        acc[4] = _mm512_reduce_add_epi32(c20), acc[5] = _mm512_reduce_add_epi32(c21);
        acc[6] = _mm512_reduce_add_epi32(c30), acc[7] = _mm512_reduce_add_epi32(c31);
        return;
    }
    for (size_t i = 0; i < mr; i++)
        for (size_t j = 0; j < nr; j++) {
            __m512i c = _mm512_setzero_si512();
            for (size_t k = 0; k < kw; k += 64) {
                __m512i wv = _mm512_loadu_si512(k < kfull ? (const void *)(w + j * ldw + k) : (const void *)tail[j]);
                STEP(c, _mm512_loadu_si512(a + i * lda + k), wv);
            }
            acc[i * LITHE__Q8_NR + j] = _mm512_reduce_add_epi32(c);
        }
}

static const lithe__q8_kernel vnni_kernel = {"avx512vnni", tile_vnni, LITHE__Q8_A_U8, lithe__q8_epilogue_avx2, lithe__q8_quant_avx2};
const lithe__q8_kernel *lithe__q8_kernel_vnni(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vnni") ? &vnni_kernel : NULL;
}
#else
const lithe__q8_kernel *lithe__q8_kernel_vnni(void) { return 0; }
#endif
