/* The int8 GEMM's aarch64 dot-product tile (qgemm_neon.c chooses it where the CPU reports
 * HWCAP_ASIMDDP): sdot sums four u7 x s8 products into each int32 lane, 16 bytes of K a step,
 * 4 x 2 tiles. This file alone is built with -march=armv8.2-a+dotprod (CMakeLists.txt), so nothing
 * else in the library can use the extension on a CPU without it. */
#include "qgemm.h"

#if defined(__aarch64__) && defined(__ARM_FEATURE_DOTPROD)
#include <arm_neon.h>

void lithe__q8_tile_neondot(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw,
                            int32_t *acc);

/* a's codes are u7: as s8 they are the same numbers */
#define LA(p) vreinterpretq_s8_u8(vld1q_u8(p))

void lithe__q8_tile_neondot(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw,
                            int32_t *acc) {
    const size_t kfull = kw / 16 * 16;
    int8_t tail[LITHE__Q8_NR][16] = {{0}};
    for (size_t j = 0; j < nr && kfull < kw; j++)
        for (size_t k = kfull; k < kw; k++) tail[j][k - kfull] = w[j * ldw + k];
    if (mr == 4 && nr == 2) {
        int32x4_t c00 = vdupq_n_s32(0), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
        for (size_t k = 0; k < kw; k += 16) {
            const bool full = k < kfull;
            int8x16_t w0 = vld1q_s8(full ? w + k : tail[0]), w1 = vld1q_s8(full ? w + ldw + k : tail[1]);
            int8x16_t a0 = LA(a + k), a1 = LA(a + lda + k), a2 = LA(a + 2 * lda + k), a3 = LA(a + 3 * lda + k);
            c00 = vdotq_s32(c00, a0, w0), c01 = vdotq_s32(c01, a0, w1);
            c10 = vdotq_s32(c10, a1, w0), c11 = vdotq_s32(c11, a1, w1);
            c20 = vdotq_s32(c20, a2, w0), c21 = vdotq_s32(c21, a2, w1);
            c30 = vdotq_s32(c30, a3, w0), c31 = vdotq_s32(c31, a3, w1);
        }
        acc[0] = vaddvq_s32(c00), acc[1] = vaddvq_s32(c01), acc[2] = vaddvq_s32(c10), acc[3] = vaddvq_s32(c11);
        acc[4] = vaddvq_s32(c20), acc[5] = vaddvq_s32(c21), acc[6] = vaddvq_s32(c30), acc[7] = vaddvq_s32(c31);
        return;
    }
    for (size_t i = 0; i < mr; i++) { /* edge tiles: a row at a time, both columns from one load of a */
        const uint8_t *ai = a + i * lda;
        int32x4_t c0 = vdupq_n_s32(0), c1 = c0;
        for (size_t k = 0; k < kw; k += 16) {
            const bool full = k < kfull;
            int8x16_t av = LA(ai + k), w0 = vld1q_s8(full ? w + k : tail[0]);
            c0 = vdotq_s32(c0, av, w0);
            if (nr == 2) {
                int8x16_t w1 = vld1q_s8(full ? w + ldw + k : tail[1]);
                c1 = vdotq_s32(c1, av, w1);
            }
        }
        acc[i * LITHE__Q8_NR] = vaddvq_s32(c0);
        if (nr == 2) acc[i * LITHE__Q8_NR + 1] = vaddvq_s32(c1);
    }
}
#else
typedef int lithe__q8_neondot_empty; /* other targets: nothing (ISO C wants a declaration) */
#endif
