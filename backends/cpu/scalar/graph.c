/* Scalar kernels for imported graphs (core/graph/): broadcast elementwise ops and their adjoints,
 * unary maths, log-softmax, 2-D convolution and pooling. Broadcasting is expressed by strides in
 * the output's index space (0 along a broadcast axis), computed by the backend wrapper, so one
 * odometer loop serves every rank up to LITHE_MAX_DIMS. Backward kernels accumulate (+=). */
#include "../kernels.h"
#include "../../common/rows.h"

#include <math.h>

/* Advances the multi-index i over shape (nd axes) and the offsets of up to three operands. */
static inline void odo_step(int nd, const int64_t *shape, int64_t *i, int k, int64_t *off, const int64_t *const *str) {
    for (int d = nd - 1; d >= 0; d--) {
        for (int o = 0; o < k; o++) off[o] += str[o][d];
        if (++i[d] < shape[d]) return;
        for (int o = 0; o < k; o++) off[o] -= str[o][d] * shape[d];
        i[d] = 0;
    }
}

static inline int64_t numel_of(int nd, const int64_t *shape) {
    int64_t n = 1;
    for (int d = 0; d < nd; d++) n *= shape[d];
    return n;
}

void lithe_f32_bcast_binary__scalar(int op, int nd, const int64_t *shape, const float *A, const int64_t *as,
                                    const float *B, const int64_t *bs, float *Y) {
    int64_t n = numel_of(nd, shape), i[LITHE_MAX_DIMS] = {0}, off[2] = {0, 0};
    const int64_t *str[2] = {as, bs};
    for (int64_t k = 0; k < n; k++) {
        Y[k] = lithe__bin_fwd(op, A[off[0]], B[off[1]]);
        odo_step(nd, shape, i, 2, off, str);
    }
}

void lithe_f32_bcast_binary_backward__scalar(int op, int nd, const int64_t *shape, const float *A, const int64_t *as,
                                             const float *B, const int64_t *bs, const float *Y, const float *dY,
                                             float *dA, float *dB) {
    int64_t n = numel_of(nd, shape), i[LITHE_MAX_DIMS] = {0}, off[2] = {0, 0};
    const int64_t *str[2] = {as, bs};
    for (int64_t k = 0; k < n; k++) {
        float a = A[off[0]], b = B[off[1]], y = Y ? Y[k] : 0.0f, g = dY[k], da, db;
        switch (op) {
        case LITHE__BIN_ADD: da = g; db = g; break;
        case LITHE__BIN_SUB: da = g; db = -g; break;
        case LITHE__BIN_MUL: da = g * b; db = g * a; break;
        case LITHE__BIN_DIV: da = g / b; db = -g * y / b; break;
        case LITHE__BIN_LESS: case LITHE__BIN_GREATER: case LITHE__BIN_EQUAL: da = db = 0.0f; break;
        default: /* pow: d/da = b a^(b-1); d/db = a^b log a (0 where a <= 0, as torch masks a == 0) */
            da = g * b * powf(a, b - 1.0f);
            db = a > 0.0f ? g * y * logf(a) : 0.0f;
            break;
        }
        if (dA) dA[off[0]] += da;
        if (dB) dB[off[1]] += db;
        odo_step(nd, shape, i, 2, off, str);
    }
}

void lithe_f32_bcast_where__scalar(int nd, const int64_t *shape, const float *C, const int64_t *cs, const float *A,
                                   const int64_t *as, const float *B, const int64_t *bs, float *Y) {
    int64_t n = numel_of(nd, shape), i[LITHE_MAX_DIMS] = {0}, off[3] = {0, 0, 0};
    const int64_t *str[3] = {cs, as, bs};
    for (int64_t k = 0; k < n; k++) {
        Y[k] = C[off[0]] != 0.0f ? A[off[1]] : B[off[2]]; /* a select: the other side's inf or NaN never leaks */
        odo_step(nd, shape, i, 3, off, str);
    }
}

void lithe_f32_broadcast_to__scalar(int nd, const int64_t *shape, const float *X, const int64_t *xs, float alpha,
                                    float beta, float *Y) {
    int64_t n = numel_of(nd, shape), i[LITHE_MAX_DIMS] = {0}, off[1] = {0};
    const int64_t *str[1] = {xs};
    for (int64_t k = 0; k < n; k++) {
        Y[k] = (beta == 0.0f ? 0.0f : beta * Y[k]) + alpha * X[off[0]];
        odo_step(nd, shape, i, 1, off, str);
    }
}

void lithe_f32_reduce_to__scalar(int nd, const int64_t *xshape, const float *X, int64_t ny, const int64_t *ys,
                                 float alpha, float beta, float *Y) {
    for (int64_t k = 0; k < ny; k++) Y[k] = beta == 0.0f ? 0.0f : beta * Y[k];
    int64_t n = numel_of(nd, xshape), i[LITHE_MAX_DIMS] = {0}, off[1] = {0};
    const int64_t *str[1] = {ys};
    for (int64_t k = 0; k < n; k++) {
        Y[off[0]] += alpha * X[k];
        odo_step(nd, xshape, i, 1, off, str);
    }
}

void lithe_f32_unary__scalar(int op, int64_t n, const float *X, float *Y) {
    for (int64_t k = 0; k < n; k++) Y[k] = lithe__unary_fwd(op, X[k]);
}

void lithe_f32_unary_backward__scalar(int op, int64_t n, const float *X, const float *Y, const float *dY, float *dX) {
    for (int64_t k = 0; k < n; k++) lithe__unary_bwd(op, X[k], Y[k], dY[k], &dX[k]);
}

void lithe_f32_log_softmax__scalar(int64_t M, int64_t N, const float *X, float *Y) {
    for (int64_t r = 0; r < M; r++) lithe__log_softmax_row(N, X + r * N, Y + r * N);
}

void lithe_f32_log_softmax_backward__scalar(int64_t M, int64_t N, const float *Y, const float *dY, float *dX) {
    for (int64_t r = 0; r < M; r++) lithe__log_softmax_backward_row(N, Y + r * N, dY + r * N, dX + r * N);
}

/* Input row / column of output position o and kernel tap k, or outside [0, extent). */
static inline int64_t src_at(int64_t o, int64_t k, int64_t stride, int64_t pad, int64_t dil) {
    return o * stride - pad + k * dil;
}

void lithe_f32_conv2d__scalar(const lithe__conv2d *g, const float *X, const float *W, const float *b, float *Y) {
    int64_t Cg = g->C / g->group, Mg = g->M / g->group;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t m = 0; m < g->M; m++) {
            int64_t c0 = (m / Mg) * Cg;
            float *y = Y + (n * g->M + m) * g->OH * g->OW;
            for (int64_t oh = 0; oh < g->OH; oh++)
                for (int64_t ow = 0; ow < g->OW; ow++) {
                    float acc = b ? b[m] : 0.0f;
                    for (int64_t c = 0; c < Cg; c++) {
                        const float *x = X + (n * g->C + c0 + c) * g->H * g->W;
                        const float *w = W + (m * Cg + c) * g->KH * g->KW;
                        for (int64_t kh = 0; kh < g->KH; kh++) {
                            int64_t h = src_at(oh, kh, g->stride[0], g->pad[0], g->dil[0]);
                            if (h < 0 || h >= g->H) continue;
                            for (int64_t kw = 0; kw < g->KW; kw++) {
                                int64_t ww = src_at(ow, kw, g->stride[1], g->pad[1], g->dil[1]);
                                if (ww < 0 || ww >= g->W) continue;
                                acc += x[h * g->W + ww] * w[kh * g->KW + kw];
                            }
                        }
                    }
                    y[oh * g->OW + ow] = acc;
                }
        }
}

void lithe_f32_conv2d_backward__scalar(const lithe__conv2d *g, const float *X, const float *W, const float *dY,
                                       float *dX, float *dW, float *db) {
    int64_t Cg = g->C / g->group, Mg = g->M / g->group;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t m = 0; m < g->M; m++) {
            int64_t c0 = (m / Mg) * Cg;
            const float *gy = dY + (n * g->M + m) * g->OH * g->OW;
            for (int64_t oh = 0; oh < g->OH; oh++)
                for (int64_t ow = 0; ow < g->OW; ow++) {
                    float gv = gy[oh * g->OW + ow];
                    if (db) db[m] += gv;
                    for (int64_t c = 0; c < Cg; c++) {
                        int64_t xo = (n * g->C + c0 + c) * g->H * g->W, wo = (m * Cg + c) * g->KH * g->KW;
                        for (int64_t kh = 0; kh < g->KH; kh++) {
                            int64_t h = src_at(oh, kh, g->stride[0], g->pad[0], g->dil[0]);
                            if (h < 0 || h >= g->H) continue;
                            for (int64_t kw = 0; kw < g->KW; kw++) {
                                int64_t ww = src_at(ow, kw, g->stride[1], g->pad[1], g->dil[1]);
                                if (ww < 0 || ww >= g->W) continue;
                                if (dX) dX[xo + h * g->W + ww] += gv * W[wo + kh * g->KW + kw];
                                if (dW) dW[wo + kh * g->KW + kw] += gv * X[xo + h * g->W + ww];
                            }
                        }
                    }
                }
        }
}

void lithe_f32_pool2d__scalar(const lithe__pool2d *g, const float *X, float *Y, int32_t *which) {
    for (int64_t nc = 0; nc < g->N * g->C; nc++) {
        const float *x = X + nc * g->H * g->W;
        for (int64_t oh = 0; oh < g->OH; oh++)
            for (int64_t ow = 0; ow < g->OW; ow++) {
                float best = -INFINITY, sum = 0.0f;
                int64_t arg = -1, count = 0;
                for (int64_t kh = 0; kh < g->KH; kh++) {
                    int64_t h = src_at(oh, kh, g->stride[0], g->pad[0], g->dil[0]);
                    for (int64_t kw = 0; kw < g->KW; kw++) {
                        int64_t w = src_at(ow, kw, g->stride[1], g->pad[1], g->dil[1]);
                        if (h < 0 || h >= g->H || w < 0 || w >= g->W) continue;
                        float v = x[h * g->W + w];
                        count++;
                        sum += v;
                        if (arg < 0 || v > best) {
                            best = v;
                            arg = h * g->W + w;
                        }
                    }
                }
                int64_t o = nc * g->OH * g->OW + oh * g->OW + ow;
                if (g->max) {
                    Y[o] = best;
                    if (which) which[o] = (int32_t)arg;
                } else {
                    int64_t div = g->count_include_pad ? g->KH * g->KW : count;
                    Y[o] = div ? sum / (float)div : 0.0f;
                }
            }
    }
}

void lithe_f32_pool2d_backward__scalar(const lithe__pool2d *g, const float *dY, const int32_t *which, float *dX) {
    for (int64_t nc = 0; nc < g->N * g->C; nc++) {
        float *dx = dX + nc * g->H * g->W;
        for (int64_t oh = 0; oh < g->OH; oh++)
            for (int64_t ow = 0; ow < g->OW; ow++) {
                int64_t o = nc * g->OH * g->OW + oh * g->OW + ow;
                if (g->max) {
                    if (which[o] >= 0) dx[which[o]] += dY[o];
                    continue;
                }
                int64_t count = 0;
                for (int pass = 0; pass < 2; pass++) {
                    float share = 0.0f;
                    if (pass == 1) {
                        int64_t div = g->count_include_pad ? g->KH * g->KW : count;
                        if (!div) break;
                        share = dY[o] / (float)div;
                    }
                    for (int64_t kh = 0; kh < g->KH; kh++) {
                        int64_t h = src_at(oh, kh, g->stride[0], g->pad[0], g->dil[0]);
                        for (int64_t kw = 0; kw < g->KW; kw++) {
                            int64_t w = src_at(ow, kw, g->stride[1], g->pad[1], g->dil[1]);
                            if (h < 0 || h >= g->H || w < 0 || w >= g->W) continue;
                            if (pass == 0) count++;
                            else dx[h * g->W + w] += share;
                        }
                    }
                }
            }
    }
}
