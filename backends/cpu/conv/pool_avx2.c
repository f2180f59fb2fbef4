/* GlobalAveragePool's eight planes with AVX2 (compiled with -mavx2 on x86-64 only; chosen at run time
 * by pool.c): the planes in the lanes. Eight runs of eight floats, one from each plane, are
 * transposed in registers, so each lane adds its plane's floats one at a time in order from 0.0f:
 * the twin's chain (lithe_f32_pool2d__scalar's sum over kh, kw), then its division, bit for bit.
 * The portable loop read the eight planes a float at a time (about 4.7 instructions per float). */
#include "pointwise.h"

#if defined(__x86_64__) && defined(__AVX2__)
#include <immintrin.h>

#include "../simd/avx2_transpose.h"

void lithe__pool_gap8_avx2(const float *x, int64_t HW, float div, float *y, int64_t ys) {
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= HW; i += 8) {
        __m256 r[8];
        for (int l = 0; l < 8; l++) r[l] = _mm256_loadu_ps(x + l * HW + i);
        lithe__avx2_transpose8(r);
        for (int j = 0; j < 8; j++) acc = _mm256_add_ps(acc, r[j]);
    }
    for (; i < HW; i++)
        acc = _mm256_add_ps(acc, _mm256_setr_ps(x[i], x[HW + i], x[2 * HW + i], x[3 * HW + i], x[4 * HW + i],
                                                x[5 * HW + i], x[6 * HW + i], x[7 * HW + i]));
    float out[8];
    _mm256_storeu_ps(out, _mm256_div_ps(acc, _mm256_set1_ps(div)));
    for (int l = 0; l < 8; l++) y[l * ys] = out[l];
}

/* 2x2 stride-2 max pooling's backward, one plane (pool.c's is_max2x2 geometry): dx[which[o]] += dy[o]
 * (assign: rows 0 .. 2·OH - 1 of dx written from zeros, no loads; false, the plane left to the caller,
 * where an index lies outside its window),
 * o = oh·OW + ow, each index one of its window's four taps (2oh·W + 2ow, + 1, + W, + W + 1: the windows
 * do not overlap, so each dx element gets at most one term and the order does not matter). Eight outputs
 * at a time: per tap an integer compare of the indices with the tap's, each of the two rows' sixteen
 * floats as dx + dy (dy doubled into pairs) blended in where their tap was chosen: one rounded add like
 * the twin's, and an element no output chose keeps its bits (-0 stays -0); a negative index (pool2d's
 * relu) chooses none. The row's last OW % 8 outputs and an index outside the window (none from the
 * forward) by the twin's loop. The twin's scatter was
 * ~2 % of the LeNet CNN's training step on Zen 5. */
static inline __m256 pairs_lo(__m256 a, __m256 b) { /* a0 b0 a1 b1 a2 b2 a3 b3 */
    return _mm256_permute2f128_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b), 0x20);
}
static inline __m256 pairs_hi(__m256 a, __m256 b) { /* a4 b4 ... a7 b7 */
    return _mm256_permute2f128_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b), 0x31);
}

/* which of a window's four taps (b, b + 1, b + W, b + W + 1 per lane) each index names; the lanes
 * naming one of them or none (a negative index, pool2d's relu: nothing routed, as in the twin) */
static inline __m256 tap_masks(__m256i idx, __m256i b, __m256i wv, __m256 *m00, __m256 *m01, __m256 *m10,
                               __m256 *m11) {
    const __m256i one = _mm256_set1_epi32(1), bw = _mm256_add_epi32(b, wv);
    *m00 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(idx, b));
    *m01 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(idx, _mm256_add_epi32(b, one)));
    *m10 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(idx, bw));
    *m11 = _mm256_castsi256_ps(_mm256_cmpeq_epi32(idx, _mm256_add_epi32(bw, one)));
    const __m256 none = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_setzero_si256(), idx));
    return _mm256_or_ps(_mm256_or_ps(_mm256_or_ps(*m00, *m01), _mm256_or_ps(*m10, *m11)), none);
}

bool lithe__pool_max2x2_back_avx2(int64_t OH, int64_t OW, int64_t W, const float *dy, const int32_t *which, bool assign,
                                  float *dx) {
    const __m256i two = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const __m256i wv = _mm256_set1_epi32((int)W);
    const __m256 z = _mm256_setzero_ps();
    for (int64_t oh = 0; oh < OH; oh++) {
        float *r0 = dx + 2 * oh * W, *r1 = r0 + W;
        const float *g = dy + oh * OW;
        const int32_t *ix = which + oh * OW;
        int64_t ow = 0;
        for (; ow + 8 <= OW; ow += 8) {
            __m256i idx = _mm256_loadu_si256((const __m256i *)(const void *)(ix + ow));
            __m256 m00, m01, m10, m11;
            __m256 any = tap_masks(idx, _mm256_add_epi32(_mm256_set1_epi32((int)(2 * oh * W + 2 * ow)), two), wv,
                                   &m00, &m01, &m10, &m11);
            if (_mm256_movemask_ps(any) != 0xFF) { /* an index outside its window: the twin's loop */
                if (assign) return false;
                break;
            }
            __m256 gv = _mm256_loadu_ps(g + ow), glo = pairs_lo(gv, gv), ghi = pairs_hi(gv, gv);
            float *d0 = r0 + 2 * ow, *d1 = r1 + 2 * ow;
            __m256 x;
            x = assign ? z : _mm256_loadu_ps(d0), _mm256_storeu_ps(d0, _mm256_blendv_ps(x, _mm256_add_ps(x, glo), pairs_lo(m00, m01)));
            x = assign ? z : _mm256_loadu_ps(d0 + 8), _mm256_storeu_ps(d0 + 8, _mm256_blendv_ps(x, _mm256_add_ps(x, ghi), pairs_hi(m00, m01)));
            x = assign ? z : _mm256_loadu_ps(d1), _mm256_storeu_ps(d1, _mm256_blendv_ps(x, _mm256_add_ps(x, glo), pairs_lo(m10, m11)));
            x = assign ? z : _mm256_loadu_ps(d1 + 8), _mm256_storeu_ps(d1 + 8, _mm256_blendv_ps(x, _mm256_add_ps(x, ghi), pairs_hi(m10, m11)));
        }
        if (assign && ow < OW) { /* the last OW - ow < 8 outputs as above, lanes past them masked off */
            int rem = (int)(OW - ow);
            __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), valid = _mm256_cmpgt_epi32(_mm256_set1_epi32(rem), lane);
            __m256i idx = _mm256_maskload_epi32(ix + ow, valid);
            __m256 m00, m01, m10, m11;
            __m256 any = tap_masks(idx, _mm256_add_epi32(_mm256_set1_epi32((int)(2 * oh * W + 2 * ow)), two), wv,
                                   &m00, &m01, &m10, &m11);
            if ((_mm256_movemask_ps(any) | ~((1 << rem) - 1)) != -1) return false; /* an index outside its window */
            __m256 gv = _mm256_maskload_ps(g + ow, valid), glo = pairs_lo(gv, gv), ghi = pairs_hi(gv, gv);
            __m256i two_rem = _mm256_set1_epi32(2 * rem);
            __m256i slo = _mm256_cmpgt_epi32(two_rem, lane), shi = _mm256_cmpgt_epi32(two_rem, _mm256_add_epi32(lane, _mm256_set1_epi32(8)));
            float *d0 = r0 + 2 * ow, *d1 = r1 + 2 * ow;
            __m256 v0 = _mm256_blendv_ps(z, _mm256_add_ps(z, glo), pairs_lo(m00, m01));
            __m256 v1 = _mm256_blendv_ps(z, _mm256_add_ps(z, ghi), pairs_hi(m00, m01));
            __m256 v2 = _mm256_blendv_ps(z, _mm256_add_ps(z, glo), pairs_lo(m10, m11));
            __m256 v3 = _mm256_blendv_ps(z, _mm256_add_ps(z, ghi), pairs_hi(m10, m11));
            if (ow == 0 && W == 2 * OW && OW >= 4 && oh + 1 < OH) {
                /* whole rows of 8 .. 14 floats (LeNet's 7-wide pool): plain stores, in order; each
                 * spill past a row lands on the next row's start, which a later store writes (the
                 * maskstore of AMD's cores is slow) */
                _mm256_storeu_ps(d0, v0), _mm256_storeu_ps(d0 + 8, v1), _mm256_storeu_ps(d1, v2), _mm256_storeu_ps(d1 + 8, v3);
            } else {
                _mm256_maskstore_ps(d0, slo, v0), _mm256_maskstore_ps(d0 + 8, shi, v1);
                _mm256_maskstore_ps(d1, slo, v2), _mm256_maskstore_ps(d1 + 8, shi, v3);
            }
            ow = OW;
        }
        for (; ow < OW; ow++)
            if (ix[ow] >= 0) dx[ix[ow]] += g[ow];
        for (int64_t c = 2 * OW; assign && c < W; c++) r0[c] = r1[c] = 0.0f; /* an odd width's last column */
    }
    return true;
}

#elif defined(__x86_64__)
#error "pool_avx2.c must be compiled with -mavx2"
#endif
