/* The CPU backend's 2-D pooling, forward and backward. */
#include "conv.h"
#if defined(__x86_64__) || defined(_M_X64)
#include "pointwise.h"
#endif

/* ---- pooling: the scalar twins' loops, split over (image, channel) planes; 2x2 stride-2 max
 * pooling without padding (LeNet's) has its own loop with the twin's tap order and first-maximum
 * rule (the SIMD table's maxpool2x2_row, or at inference maxpool2x2_rows over a whole range of
 * planes when their heights are even, several short rows per vector); other pooling whose windows all lie inside the plane (no padding: GlobalAveragePool, most
 * AveragePools) runs eight planes side by side, each plane's window summed or maxed in the twin's
 * tap order, so eight independent chains run where the twin has one (GlobalAveragePool on AVX2:
 * pool_avx2.c, the planes in the lanes). Selections and per-window sums in the twin's order:
 * bit-identical. which NULL (inference): no indices are written. The 2x2 max pooling's backward
 * scatters 8 outputs a vector where the CPU has AVX2 (pool_avx2.c, the twin's bits). ---- */

typedef struct pool_job {
    const lithe__pool2d *g;
    const float *X, *dY;
    float *Y, *dX;
    int32_t *which;
    const int32_t *cwhich;
} pool_job;

static bool is_max2x2(const lithe__pool2d *g) {
    return g->max && g->KH == 2 && g->KW == 2 && g->stride[0] == 2 && g->stride[1] == 2 && !g->pad[0] &&
           !g->pad[1] && g->dil[0] == 1 && g->dil[1] == 1 && 2 * g->OH <= g->H && 2 * g->OW <= g->W;
}

/* Every window's taps inside the plane (no padding, ceil_mode not reaching past the edge). */
static bool pool_inbounds(const lithe__pool2d *g) {
    return !g->pad[0] && !g->pad[1] && g->OH > 0 && g->OW > 0 &&
           (g->OH - 1) * g->stride[0] + (g->KH - 1) * g->dil[0] < g->H &&
           (g->OW - 1) * g->stride[1] + (g->KW - 1) * g->dil[1] < g->W;
}

/* Eight planes of an in-bounds pooling: the twin's sum from 0.0f over taps kh, kw ascending, or its
 * first maximum (the first tap taken as it is, then `>`), divided by KH·KW (every tap counts). */
enum { POOL_PLANES = 8 };
static void pool_planes8(const lithe__pool2d *g, const float *x, float *y, int32_t *which) {
    const int64_t HW = g->H * g->W, OP = g->OH * g->OW;
    const float div = (float)(g->KH * g->KW);
    for (int64_t oh = 0; oh < g->OH; oh++)
        for (int64_t ow = 0; ow < g->OW; ow++) {
            const int64_t o = oh * g->OW + ow, base = oh * g->stride[0] * g->W + ow * g->stride[1];
            float acc[POOL_PLANES];
            int32_t arg[POOL_PLANES];
            for (int l = 0; l < POOL_PLANES; l++) {
                acc[l] = g->max ? x[l * HW + base] : 0.0f;
                arg[l] = (int32_t)base;
            }
            for (int64_t kh = 0; kh < g->KH; kh++) {
                const float *row = x + base + kh * g->dil[0] * g->W;
                for (int64_t kw = 0; kw < g->KW; kw++) {
                    const int64_t t = kw * g->dil[1];
                    if (g->max) {
                        const int32_t at = (int32_t)(row - x + t);
                        for (int l = 0; l < POOL_PLANES; l++) {
                            const float v = row[l * HW + t];
                            const bool gt = v > acc[l];
                            acc[l] = gt ? v : acc[l];
                            arg[l] = gt ? at : arg[l];
                        }
                    } else {
                        for (int l = 0; l < POOL_PLANES; l++) acc[l] += row[l * HW + t];
                    }
                }
            }
            for (int l = 0; l < POOL_PLANES; l++) {
                y[l * OP + o] = g->max ? acc[l] : acc[l] / div;
                if (which) which[l * OP + o] = arg[l];
            }
        }
}

#if defined(__x86_64__) || defined(_M_X64) /* (only the AVX2 planes kernel asks) */
/* GlobalAveragePool (one window over the whole plane, every tap in order): the taps are the plane's
 * floats in memory order */
static bool is_global_avg(const lithe__pool2d *g) {
    return !g->max && g->OH == 1 && g->OW == 1 && g->KH == g->H && g->KW == g->W && g->dil[0] == 1 &&
           g->dil[1] == 1 && pool_inbounds(g);
}
#endif

/* relu (a Relu's backward folded into the indices, core/backend.h): the index -1 where the output
 * is <= 0 (NaN keeps its index, as the Relu's backward passes dY where its output is NaN) */
static void relu_indices(const float *y, int32_t *which, int64_t n) {
    for (int64_t i = 0; i < n; i++) which[i] = y[i] <= 0.0f ? -1 : which[i];
}

static void pool_planes_y(const pool_job *j, int64_t p0, int64_t p1);
static void pool_planes(void *ctx, int64_t p0, int64_t p1) {
    const pool_job *j = ctx;
    const int64_t OP = j->g->OH * j->g->OW;
    if (!j->which || !j->g->relu) {
        pool_planes_y(j, p0, p1);
    } else if (is_max2x2(j->g)) { /* a plane at a time (its loop's unit), the outputs still in L1 */
        for (int64_t p = p0; p < p1; p++) {
            pool_planes_y(j, p, p + 1);
            relu_indices(j->Y + p * OP, j->which + p * OP, OP);
        }
    } else { /* the range at once (eight planes side by side) */
        pool_planes_y(j, p0, p1);
        relu_indices(j->Y + p0 * OP, j->which + p0 * OP, (p1 - p0) * OP);
    }
}

static void pool_planes_y(const pool_job *j, int64_t p0, int64_t p1) {
    const lithe__pool2d *g = j->g;
    int64_t HW = g->H * g->W, OP = g->OH * g->OW;
    if (!is_max2x2(g)) {
#if defined(__x86_64__) || defined(_M_X64)
        lithe__pool_gap8_fn gap = is_global_avg(g) && !j->which ? lithe__pool_gap8_best() : NULL;
        if (gap)
            for (; p0 + POOL_PLANES <= p1; p0 += POOL_PLANES) gap(j->X + p0 * HW, HW, (float)(g->KH * g->KW), j->Y + p0, 1);
#endif
        if (pool_inbounds(g))
            for (; p0 + POOL_PLANES <= p1; p0 += POOL_PLANES)
                pool_planes8(g, j->X + p0 * HW, j->Y + p0 * OP, j->which ? j->which + p0 * OP : NULL);
        if (p0 == p1) return;
        lithe__pool2d sub = *g;
        sub.N = 1;
        sub.C = p1 - p0;
        lithe_f32_pool2d__scalar(&sub, j->X + p0 * HW, j->Y + p0 * OP, j->which ? j->which + p0 * OP : NULL);
        return;
    }
    const lithe__simd_kernels *k = lithe__simd_conv();
    if (!j->which) { /* inference: whole planes, or the range at once when its planes' row pairs follow */
        if (g->H == 2 * g->OH) k->maxpool2x2_rows((p1 - p0) * g->OH, g->OW, j->X + p0 * HW, g->W, j->Y + p0 * OP);
        else
            for (int64_t nc = p0; nc < p1; nc++) k->maxpool2x2_rows(g->OH, g->OW, j->X + nc * HW, g->W, j->Y + nc * OP);
        return;
    }
    for (int64_t nc = p0; nc < p1; nc++) {
        const float *x = j->X + nc * HW;
        for (int64_t oh = 0; oh < g->OH; oh++)
            k->maxpool2x2_row(g->OW, x + 2 * oh * g->W, x + (2 * oh + 1) * g->W, g->W, (int32_t)(2 * oh * g->W),
                              j->Y + nc * OP + oh * g->OW, j->which ? j->which + nc * OP + oh * g->OW : NULL);
    }
}

lithe_status lithe__cpu_pool2d(const lithe__pool2d *g, const float *X, float *Y, int32_t *which) {
    pool_job j = {.g = g, .X = X, .Y = Y, .which = which};
    int64_t per = g->OH * g->OW * g->KH * g->KW;
    lithe__pool_for(lithe__cpu_pool(), g->N * g->C, per > 0 ? (1 << 15) / per + 1 : 1, pool_planes, &j);
    return LITHE_OK;
}

static void pool_back_planes(void *ctx, int64_t p0, int64_t p1) {
    const pool_job *j = ctx;
    lithe__pool2d sub = *j->g;
    int64_t HW = sub.H * sub.W, OP = sub.OH * sub.OW;
#if defined(__x86_64__) || defined(_M_X64)
    lithe__pool_max2x2_back_fn mb = is_max2x2(j->g) && j->cwhich ? lithe__pool_max2x2_back_best() : NULL;
    if (mb) { /* the twin's scatter with its bits, 8 outputs a vector (pool_avx2.c); assign: dx written
               * without loads, where the windows cover every row (else zeroed first, then added) */
        bool as = sub.assign && sub.H == 2 * sub.OH;
        for (int64_t p = p0; p < p1; p++) {
            float *dx = j->dX + p * HW;
            if (sub.assign && !as) memset(dx, 0, (size_t)HW * sizeof(float));
            if (!mb(sub.OH, sub.OW, sub.W, j->dY + p * OP, j->cwhich + p * OP, as, dx)) { /* an index outside its window */
                memset(dx, 0, (size_t)HW * sizeof(float));
                mb(sub.OH, sub.OW, sub.W, j->dY + p * OP, j->cwhich + p * OP, false, dx);
            }
        }
        return;
    }
#endif
    /* assign: the range's planes zeroed here, while they stay in cache for the adds (the graph's
     * zeroing of the whole gradient was a pass over memory of its own) */
    if (sub.assign) memset(j->dX + p0 * HW, 0, (size_t)((p1 - p0) * HW) * sizeof(float));
    sub.N = 1;
    sub.C = p1 - p0;
    lithe_f32_pool2d_backward__scalar(&sub, j->dY + p0 * OP, j->cwhich ? j->cwhich + p0 * OP : NULL, j->dX + p0 * HW);
}

lithe_status lithe__cpu_pool2d_backward(const lithe__pool2d *g, const float *dY, const int32_t *which, float *dX) {
    pool_job j = {.g = g, .dY = dY, .dX = dX, .cwhich = which};
    int64_t per = g->OH * g->OW * g->KH * g->KW;
    lithe__pool_for(lithe__cpu_pool(), g->N * g->C, per > 0 ? (1 << 15) / per + 1 : 1, pool_back_planes, &j);
    return LITHE_OK;
}
