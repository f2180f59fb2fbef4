/* The int8 GEMM's aarch64 microkernels (qgemm.h), chosen at run time:
 *  - "neondot": the dot-product extension (armv8.2-a+dotprod, sdot: four u7 x s8 products summed
 *    into each int32 lane in one instruction), where the kernel reports HWCAP_ASIMDDP; its loop is
 *    qgemm_neondot.c, the one file built with -march=armv8.2-a+dotprod;
 *  - "neon": every aarch64 CPU: smull / smlal2 (u7 x s8 products, two summed into int16: at most
 *    2 * 127 * 127 < 2^15, exact) then sadalp into int32.
 * Both are the one tile of qgemm_neon_tile.h. */
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
#define QTILE_STEP(c, a, w) c = vpadalq_s16(c, vmlal_high_s8(vmull_s8(vget_low_s8(a), vget_low_s8(w)), a, w))
#define QTILE_NAME static void tile_neon
#include "qgemm_neon_tile.h"

static const lithe__q8_kernel neon_kernel = {"neon", tile_neon, LITHE__Q8_A_S8, NULL, NULL};
const lithe__q8_kernel *lithe__q8_kernel_neon(void) { return &neon_kernel; }

void lithe__q8_tile_neondot(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw,
                            int32_t *acc); /* qgemm_neondot.c */
static const lithe__q8_kernel neondot_kernel = {"neondot", lithe__q8_tile_neondot, LITHE__Q8_A_S8, NULL, NULL};
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
