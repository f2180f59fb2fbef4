/* The int8 GEMM's aarch64 4 x 2 tile, written once for its two instruction sets: included by
 * qgemm_neon.c (QTILE_STEP: smull / smlal2 / sadalp) and qgemm_neondot.c (QTILE_STEP: sdot, the one
 * file built with -march=armv8.2-a+dotprod). The includer defines QTILE_NAME (the function, with
 * its linkage) and QTILE_STEP(c, a, w): c (int32x4) += the products of a's 16 u7 codes (read as s8)
 * and w's 16 s8 weights, summed within each lane's four bytes. 16 bytes of K a step, a horizontal
 * sum per element at the end; w's last partial chunk through a zeroed copy (a is zero past kw
 * already). */
#define QTILE_LA(p) vreinterpretq_s8_u8(vld1q_u8(p))

QTILE_NAME(size_t mr, size_t nr, size_t kw, const uint8_t *a, size_t lda, const int8_t *w, size_t ldw, int32_t *acc) {
    const size_t kfull = kw / 16 * 16;
    int8_t tail[LITHE__Q8_NR][16] = {{0}};
    for (size_t j = 0; j < nr && kfull < kw; j++)
        for (size_t k = kfull; k < kw; k++) tail[j][k - kfull] = w[j * ldw + k];
    if (mr == 4 && nr == 2) {
        int32x4_t c00 = vdupq_n_s32(0), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
        for (size_t k = 0; k < kw; k += 16) {
            const bool full = k < kfull;
            int8x16_t w0 = vld1q_s8(full ? w + k : tail[0]), w1 = vld1q_s8(full ? w + ldw + k : tail[1]);
            int8x16_t a0 = QTILE_LA(a + k), a1 = QTILE_LA(a + lda + k);
            QTILE_STEP(c00, a0, w0);
            QTILE_STEP(c01, a0, w1);
            QTILE_STEP(c10, a1, w0);
            QTILE_STEP(c11, a1, w1);
            int8x16_t a2 = QTILE_LA(a + 2 * lda + k), a3 = QTILE_LA(a + 3 * lda + k);
            QTILE_STEP(c20, a2, w0);
            QTILE_STEP(c21, a2, w1);
            QTILE_STEP(c30, a3, w0);
            QTILE_STEP(c31, a3, w1);
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
            int8x16_t av = QTILE_LA(ai + k), w0 = vld1q_s8(full ? w + k : tail[0]);
            QTILE_STEP(c0, av, w0);
            if (nr == 2) {
                int8x16_t w1 = vld1q_s8(full ? w + ldw + k : tail[1]);
                QTILE_STEP(c1, av, w1);
            }
        }
        acc[i * LITHE__Q8_NR] = vaddvq_s32(c0);
        if (nr == 2) acc[i * LITHE__Q8_NR + 1] = vaddvq_s32(c1);
    }
}
#undef QTILE_LA
