/* Part of simd/elem.c, compiled once per ISA with it (no standalone header): 2x2 stride-2 max pooling rows. */

/* One output row of 2x2 stride-2 max pooling without padding: y[o] = the first maximum of r0[2o],
 * r0[2o + 1], r1[2o], r1[2o + 1] (the twin's tap order, `>` so the first wins and a NaN is never
 * taken after the first tap), which[o] = its index in the plane, base (= 2·oh·W) + 2o + 0 | 1 | W | W + 1;
 * which NULL (inference): y only, no index arithmetic. Eight and then four columns at a time (pooled
 * maps are narrow: 14, 7), deinterleaving pairs with shuffles, selecting without branches (random
 * data mispredicts them); the last columns rerun a block ending at the row's end (overlapping the
 * one before it, writing the same values again: padded copies cost more than the pooling on 7- and
 * 14-wide rows), rows under 4 wide one column at a time. Bit-identical to the twin. */
#define MAXPOOL_BLOCK(NL, EVEN, ODD, R0, R1, O, Y, WHICH, KEEP)                                                    \
    do {                                                                                                          \
        typedef float vfl __attribute__((vector_size(4 * (NL))));                                                  \
        typedef int32_t vil __attribute__((vector_size(4 * (NL))));                                                \
        vfl a0, a1, b0, b1;                                                                                       \
        memcpy(&a0, (R0), sizeof a0), memcpy(&a1, (R0) + (NL), sizeof a1);                                        \
        memcpy(&b0, (R1), sizeof b0), memcpy(&b1, (R1) + (NL), sizeof b1);                                        \
        vfl t[4] = {__builtin_shufflevector(a0, a1, EVEN), __builtin_shufflevector(a0, a1, ODD),                  \
                    __builtin_shufflevector(b0, b1, EVEN), __builtin_shufflevector(b0, b1, ODD)};                 \
        int32_t d[4] = {0, 1, (int32_t)W, (int32_t)W + 1};                                                        \
        vfl best = t[0];                                                                                          \
        vil off = (vil){0};                                                                                       \
        for (int q = 1; q < 4; q++) {                                                                             \
            vil gt = t[q] > best;                                                                                 \
            best = (vfl)((gt & (vil)t[q]) | (~gt & (vil)best));                                                   \
            if (KEEP) off = (gt & ((vil){0} + d[q])) | (~gt & off);                                               \
        }                                                                                                         \
        memcpy((Y), &best, sizeof best);                                                                          \
        if (KEEP) {                                                                                               \
            vil idx;                                                                                              \
            for (int l = 0; l < (NL); l++) idx[l] = base + 2 * (int32_t)((O) + l);                                \
            idx += off;                                                                                           \
            memcpy((WHICH), &idx, sizeof idx);                                                                    \
        }                                                                                                         \
    } while (0)
#define EVEN8 0, 2, 4, 6, 8, 10, 12, 14
#define ODD8 1, 3, 5, 7, 9, 11, 13, 15
#define EVEN4 0, 2, 4, 6
#define ODD4 1, 3, 5, 7
static inline __attribute__((always_inline)) void maxpool_row_impl(int64_t n, const float *r0, const float *r1,
                                                                   int64_t W, int32_t base, float *y,
                                                                   int32_t *which, const bool keep) {
    int64_t o = 0;
    int32_t sink[8]; /* !keep: the blocks' index stores (dead code) go here, never through NULL */
#define MP8(O) MAXPOOL_BLOCK(8, EVEN8, ODD8, r0 + 2 * (O), r1 + 2 * (O), (O), y + (O), keep ? which + (O) : sink, keep)
#define MP4(O) MAXPOOL_BLOCK(4, EVEN4, ODD4, r0 + 2 * (O), r1 + 2 * (O), (O), y + (O), keep ? which + (O) : sink, keep)
    for (; o + 8 <= n; o += 8) MP8(o);
    if (o < n && n >= 8 && n - o > 4) { /* the last block overlaps the one before: same values again */
        MP8(n - 8);
        o = n;
    }
    for (; o + 4 <= n; o += 4) MP4(o);
    if (o < n && n >= 4) {
        MP4(n - 4);
        o = n;
    }
#undef MP8
#undef MP4
    for (; o < n; o++) { /* rows narrower than 4 */
        const float t[4] = {r0[2 * o], r0[2 * o + 1], r1[2 * o], r1[2 * o + 1]};
        const int32_t d[4] = {0, 1, (int32_t)W, (int32_t)W + 1};
        float best = t[0];
        int32_t off = 0;
        for (int q = 1; q < 4; q++) {
            const bool gt = t[q] > best;
            best = gt ? t[q] : best;
            off = gt ? d[q] : off;
        }
        y[o] = best;
        if (keep) which[o] = base + 2 * (int32_t)o + off;
    }
}
#if VB == 64 && defined(__AVX512F__)
/* AVX-512: sixteen columns per block from masked loads of the rows' 2m floats (m <= 16 columns;
 * masked-off lanes are not read), deinterleaved by two-source permutes, the four taps selected in
 * the twin's order (maxps(v, best) = v > best ? v : best: best kept on ties and NaN; with which,
 * the same selection by a `>` compare mask) and m columns stored: one block for LeNet's 14- and
 * 7-wide rows, where the 8- and 4-wide blocks above ran two overlapping ones (training, with
 * which; inference pools whole ranges through maxpool2x2_rows below). */
static inline __attribute__((always_inline)) void maxpool_row16(int64_t n, const float *r0, const float *r1,
                                                                int64_t W, int32_t base, float *y, int32_t *which) {
    const __m512i ev = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i od = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    const __m512i lane2 = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    for (int64_t o = 0; o < n; o += 16) {
        int64_t m = n - o < 16 ? n - o : 16, f = 2 * m; /* columns, floats per row */
        __mmask16 lo = f >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << f) - 1);
        __mmask16 hi = f >= 32 ? (__mmask16)0xFFFF : f <= 16 ? (__mmask16)0 : (__mmask16)((1u << (f - 16)) - 1);
        __mmask16 sm = m >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << m) - 1);
        const float *p0 = r0 + 2 * o, *p1 = r1 + 2 * o;
        __m512 a0 = _mm512_maskz_loadu_ps(lo, p0), a1 = _mm512_maskz_loadu_ps(hi, p0 + 16);
        __m512 b0 = _mm512_maskz_loadu_ps(lo, p1), b1 = _mm512_maskz_loadu_ps(hi, p1 + 16);
        __m512 t1 = _mm512_permutex2var_ps(a0, od, a1), t2 = _mm512_permutex2var_ps(b0, ev, b1);
        __m512 t3 = _mm512_permutex2var_ps(b0, od, b1), best = _mm512_permutex2var_ps(a0, ev, a1);
        if (!which) {
            best = _mm512_max_ps(t1, best);
            best = _mm512_max_ps(t2, best);
            best = _mm512_max_ps(t3, best);
        } else {
            __m512i off = _mm512_setzero_si512();
            __mmask16 gt = _mm512_cmp_ps_mask(t1, best, _CMP_GT_OQ);
            best = _mm512_mask_mov_ps(best, gt, t1), off = _mm512_mask_mov_epi32(off, gt, _mm512_set1_epi32(1));
            gt = _mm512_cmp_ps_mask(t2, best, _CMP_GT_OQ);
            best = _mm512_mask_mov_ps(best, gt, t2), off = _mm512_mask_mov_epi32(off, gt, _mm512_set1_epi32((int)W));
            gt = _mm512_cmp_ps_mask(t3, best, _CMP_GT_OQ);
            best = _mm512_mask_mov_ps(best, gt, t3);
            off = _mm512_mask_mov_epi32(off, gt, _mm512_set1_epi32((int)W + 1));
            __m512i idx = _mm512_add_epi32(_mm512_set1_epi32(base + 2 * (int32_t)o), _mm512_add_epi32(lane2, off));
            _mm512_mask_storeu_epi32(which + o, sm, idx);
        }
        _mm512_mask_storeu_ps(y + o, sm, best);
    }
}
/* R output rows at once (simd.h's maxpool2x2_rows, inference): rows at most 8 wide share a block,
 * G = 16 / n of them side by side in the lanes (each input row's 2n floats merged into two
 * registers by masked loads from its start moved back by its lane), so the evens and odds of a
 * block are those of its G rows in order, and their n·G outputs, adjacent in y, go out in one
 * store; rows 9-16 wide one block each, their masks computed once; wider rows by maxpool_row16.
 * LeNet's two pools at batch 32 (1 thread, Zen 4): 50 + 43 -> 22 + 21 us min in the model. */
/* The 16 outputs of a block from its top (t0, t1) and bottom (b0, b1) 32 floats: the evens and
 * odds by in-lane shuffles (each 128-bit lane: 2 columns of t0's lane, then 2 of t1's), the taps
 * selected in the twin's order lane by lane, one permute (fix) putting the columns in order. */
static inline __attribute__((always_inline)) __m512 pool4(__m512 t0, __m512 t1, __m512 b0, __m512 b1, __m512i fix) {
    __m512 best = _mm512_shuffle_ps(t0, t1, 0x88);
    best = _mm512_max_ps(_mm512_shuffle_ps(t0, t1, 0xDD), best);
    best = _mm512_max_ps(_mm512_shuffle_ps(b0, b1, 0x88), best);
    best = _mm512_max_ps(_mm512_shuffle_ps(b0, b1, 0xDD), best);
    return _mm512_permutexvar_ps(fix, best);
}
static void maxpool_rows16(int64_t R, int64_t n, const float *x, int64_t W, float *y) {
    if (n > 16) {
        for (int64_t r = 0; r < R; r++) maxpool_row16(n, x + 2 * r * W, x + (2 * r + 1) * W, W, 0, y + r * n, NULL);
        return;
    }
    const __m512i fix = _mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
    if (n > 8) { /* one row per block, its masks once */
        const __mmask16 hi = (__mmask16)((1u << (2 * n - 16)) - 1), sm = (__mmask16)((1u << n) - 1);
        for (int64_t r = 0; r < R; r++) {
            const float *pt = x + 2 * r * W, *pb = pt + W;
            __m512 t0 = _mm512_loadu_ps(pt), t1 = _mm512_maskz_loadu_ps(hi, pt + 16);
            __m512 b0 = _mm512_loadu_ps(pb), b1 = _mm512_maskz_loadu_ps(hi, pb + 16);
            _mm512_mask_storeu_ps(y + r * n, sm, pool4(t0, t1, b0, b1, fix));
        }
        return;
    }
    if (n <= 0) return;
    const int64_t G = 16 / n;
    __mmask16 m0[16], m1[16];
    for (int64_t i = 0; i < G; i++) { /* row i's lanes [2n i, 2n (i + 1)) of the 32 */
        uint32_t lanes = (uint32_t)(((1ull << (2 * n)) - 1) << (2 * n * i));
        m0[i] = (__mmask16)(lanes & 0xFFFF), m1[i] = (__mmask16)(lanes >> 16);
    }
    const __mmask16 full = (__mmask16)((1u << (n * G)) - 1);
    /* row i of a block starts 2W i floats after its first, moved back by its lane 2n i: d apart */
    const int64_t d = 2 * W - 2 * n;
    for (int64_t r = 0; r < R; r += G) {
        const int64_t g = R - r < G ? R - r : G;
        __m512i t0 = _mm512_setzero_si512(), t1 = t0, b0 = t0, b1 = t0;
        uintptr_t t = (uintptr_t)(x + 2 * r * W); /* as integers: moved back, it may precede x */
        for (int64_t i = 0; i < g; i++, t += (uintptr_t)(d * (int64_t)sizeof(float))) {
            /* masked-off lanes are not read, and are 0 for the OR (independent loads, where merging
             * loads would chain them) */
            const float *pt = (const float *)t, *pb = pt + W;
            t0 = _mm512_or_si512(t0, _mm512_maskz_loadu_epi32(m0[i], pt));
            t1 = _mm512_or_si512(t1, _mm512_maskz_loadu_epi32(m1[i], pt + 16));
            b0 = _mm512_or_si512(b0, _mm512_maskz_loadu_epi32(m0[i], pb));
            b1 = _mm512_or_si512(b1, _mm512_maskz_loadu_epi32(m1[i], pb + 16));
        }
        __m512 T0 = _mm512_castsi512_ps(t0), T1 = _mm512_castsi512_ps(t1);
        __m512 B0 = _mm512_castsi512_ps(b0), B1 = _mm512_castsi512_ps(b1);
        _mm512_mask_storeu_ps(y + r * n, g == G ? full : (__mmask16)((1u << (n * g)) - 1), pool4(T0, T1, B0, B1, fix));
    }
}
#endif
static void K(maxpool2x2_rows)(int64_t R, int64_t n, const float *x, int64_t W, float *y) {
#if VB == 64 && defined(__AVX512F__)
    maxpool_rows16(R, n, x, W, y);
#else
    for (int64_t r = 0; r < R; r++) maxpool_row_impl(n, x + 2 * r * W, x + (2 * r + 1) * W, W, 0, y + r * n, NULL, false);
#endif
}
static void K(maxpool2x2_row)(int64_t n, const float *r0, const float *r1, int64_t W, int32_t base, float *y,
                              int32_t *which) {
#if VB == 64 && defined(__AVX512F__)
    maxpool_row16(n, r0, r1, W, base, y, which);
    return;
#endif
    if (which) maxpool_row_impl(n, r0, r1, W, base, y, which, true);
    else maxpool_row_impl(n, r0, r1, W, base, y, NULL, false);
}
#undef EVEN8
#undef ODD8
#undef EVEN4
#undef ODD4
#undef MAXPOOL_BLOCK
