/* The int8 GEMM's aarch64 microkernels (qgemm.h), chosen at run time:
 *  - "neondot": the dot-product extension (armv8.2-a+dotprod, sdot: four u7 x s8 products summed
 *    into each int32 lane in one instruction), where the kernel reports HWCAP_ASIMDDP; its loop is
 *    qgemm_neondot.c, the one file built with -march=armv8.2-a+dotprod;
 *  - "neon": every aarch64 CPU: smull / smlal2 (u7 x s8 products, two summed into int16: at most
 *    2 * 127 * 127 < 2^15, exact) then sadalp into int32.
 * 4 x 2 tiles, 16 bytes of K a step, a horizontal sum per element at the end; w's last partial
 * chunk through a zeroed copy (a is zero past kw already). */
#include "qgemm.h"

#if defined(__aarch64__) && defined(__ARM_NEON)
#include <arm_neon.h>
#if defined(__linux__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
#endif

/* c += the pairwise int16 sums of a[0..15] * w[0..15] (a's codes are u7, so s8 reads them) */
#define STEP(c, a, w) c = vpadalq_s16(c, vmlal_high_s8(vmull_s8(vget_low_s8(a), vget_low_s8(w)), a, w))

static void tile_neon(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw,
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
            int8x16_t a0 = vreinterpretq_s8_u8(vld1q_u8(a + k)), a1 = vreinterpretq_s8_u8(vld1q_u8(a + lda + k));
            STEP(c00, a0, w0);
            STEP(c01, a0, w1);
            STEP(c10, a1, w0);
            STEP(c11, a1, w1);
            int8x16_t a2 = vreinterpretq_s8_u8(vld1q_u8(a + 2 * lda + k)),
                      a3 = vreinterpretq_s8_u8(vld1q_u8(a + 3 * lda + k));
            STEP(c20, a2, w0);
            STEP(c21, a2, w1);
            STEP(c30, a3, w0);
            STEP(c31, a3, w1);
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
            int8x16_t av = vreinterpretq_s8_u8(vld1q_u8(ai + k)), w0 = vld1q_s8(full ? w + k : tail[0]);
            STEP(c0, av, w0);
            if (nr == 2) {
                int8x16_t w1 = vld1q_s8(full ? w + ldw + k : tail[1]);
                STEP(c1, av, w1);
            }
        }
        acc[i * LITHE__Q8_NR] = vaddvq_s32(c0);
        if (nr == 2) acc[i * LITHE__Q8_NR + 1] = vaddvq_s32(c1);
    }
}

static const lithe__q8_kernel neon_kernel = {"neon", tile_neon, LITHE__Q8_A_S8};
const lithe__q8_kernel *lithe__q8_kernel_neon(void) { return &neon_kernel; }

void lithe__q8_tile_neondot(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw,
                            int32_t *acc); /* qgemm_neondot.c */
static const lithe__q8_kernel neondot_kernel = {"neondot", lithe__q8_tile_neondot, LITHE__Q8_A_S8};
const lithe__q8_kernel *lithe__q8_kernel_neondot(void) {
#if defined(__linux__)
    return getauxval(AT_HWCAP) & HWCAP_ASIMDDP ? &neondot_kernel : NULL;
#elif defined(__ARM_FEATURE_DOTPROD)
    return &neondot_kernel; /* the build targets dotprod CPUs */
#else
    return NULL; /* no portable way to ask: the plain NEON kernel */
#endif
}
#else
const lithe__q8_kernel *lithe__q8_kernel_neon(void) { return 0; }
const lithe__q8_kernel *lithe__q8_kernel_neondot(void) { return 0; }
#endif
