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
#define QTILE_STEP(c, a, w) c = vdotq_s32(c, a, w)
#define QTILE_NAME void lithe__q8_tile_neondot
#include "qgemm_neon_tile.h"
#else
typedef int lithe__q8_neondot_empty; /* other targets: nothing (ISO C wants a declaration) */
#endif
