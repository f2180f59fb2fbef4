/* Per-element and per-row bodies that the CPU's scalar kernels (backends/cpu/scalar/graph.c,
 * elementwise.c, norm.c, lstm.c, backends/cpu/elem.c) and the CUDA kernels (backends/cuda/graph.cu,
 * act.cu, norm.cu, seq.cu: one thread per element or row, walking it in the CPU's order) share, so the
 * two do the same arithmetic by construction. Include after core/internal.h (the op enums). */
#ifndef LITHE_BACKENDS_COMMON_ROWS_H
#define LITHE_BACKENDS_COMMON_ROWS_H

#include <math.h>
#include <stdint.h>

#include "hd.h"

/* An imported graph's numpy-broadcast binary op on one pair. */
static LITHE_HD inline float lithe__bin_fwd(int op, float a, float b) {
    switch (op) {
    case LITHE__BIN_ADD: return a + b;
    case LITHE__BIN_SUB: return a - b;
    case LITHE__BIN_MUL: return a * b;
    case LITHE__BIN_DIV: return a / b;
    case LITHE__BIN_LESS: return a < b ? 1.0f : 0.0f;
    case LITHE__BIN_GREATER: return a > b ? 1.0f : 0.0f;
    case LITHE__BIN_EQUAL: return a == b ? 1.0f : 0.0f;
    default: return powf(a, b);
    }
}

/* An imported graph's unary op (lithe__unary_op) on one element, and its gradient added into *dx
 * (y: the forward's output, g: dY). */
static LITHE_HD inline float lithe__unary_fwd(int op, float x) {
    switch (op) {
    case LITHE__UN_EXP: return expf(x);
    case LITHE__UN_LOG: return logf(x);
    case LITHE__UN_SQRT: return sqrtf(x);
    case LITHE__UN_NEG: return -x;
    case LITHE__UN_ERF: return erff(x);
    case LITHE__UN_ABS: return fabsf(x);
    case LITHE__UN_FLOOR: return floorf(x);
    case LITHE__UN_CEIL: return ceilf(x);
    case LITHE__UN_ROUND: return rintf(x); /* the default rounding mode: half to even */
    /* through double sin / cos, rounded once (as accurate as sinf / cosf, and the WebAssembly core
     * already links them for core/rng.c: sinf / cosf would add 1.3 KB) */
    case LITHE__UN_SIN: return (float)sin((double)x);
    case LITHE__UN_COS: return (float)cos((double)x);
    default: return 1.0f / x;
    }
}
static LITHE_HD inline void lithe__unary_bwd(int op, float x, float y, float g, float *dx) {
    switch (op) {
    case LITHE__UN_EXP: *dx += g * y; break;
    case LITHE__UN_LOG: *dx += g / x; break;
    case LITHE__UN_SQRT: *dx += g * 0.5f / y; break;
    case LITHE__UN_NEG: *dx -= g; break;
    case LITHE__UN_ERF: *dx += g * 1.12837916709551257f * expf(-x * x); break; /* 2 / sqrt(pi) */
    case LITHE__UN_ABS: *dx += x > 0.0f ? g : x < 0.0f ? -g : 0.0f; break;
    case LITHE__UN_FLOOR: case LITHE__UN_CEIL: case LITHE__UN_ROUND: break; /* zero almost everywhere */
    case LITHE__UN_SIN: *dx += g * (float)cos((double)x); break;
    case LITHE__UN_COS: *dx -= g * (float)sin((double)x); break;
    default: *dx -= g * y * y; break;
    }
}

/* softmax(x / temperature) of one row of N, the sum in double. */
static LITHE_HD inline void lithe__softmax_row(int64_t N, const float *x, float temperature, float *y) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < N; j++) {
        float v = temperature == 1.0f ? x[j] : x[j] / temperature;
        if (v > mx) mx = v;
    }
    double sum = 0.0;
    for (int64_t j = 0; j < N; j++) {
        float v = temperature == 1.0f ? x[j] : x[j] / temperature;
        y[j] = expf(v - mx);
        sum += y[j];
    }
    float inv = (float)sum;
    for (int64_t j = 0; j < N; j++) y[j] /= inv;
}
/* Its backward: dx = y * g - y * sum(y * g), g = dy / temperature. */
static LITHE_HD inline void lithe__softmax_backward_row(int64_t N, const float *y, const float *dy, float temperature,
                                                        float *dx) {
    double s = 0.0;
    for (int64_t j = 0; j < N; j++) {
        float g = temperature == 1.0f ? dy[j] : dy[j] / temperature;
        s += (double)y[j] * g;
    }
    for (int64_t j = 0; j < N; j++) {
        float g = temperature == 1.0f ? dy[j] : dy[j] / temperature;
        dx[j] = y[j] * g - y[j] * (float)s;
    }
}

/* log_softmax of one row of N: y = x - (max + log(sum exp(x - max))), the sum in double. */
static LITHE_HD inline void lithe__log_softmax_row(int64_t N, const float *x, float *y) {
    float mx = -INFINITY;
    for (int64_t j = 0; j < N; j++) mx = x[j] > mx ? x[j] : mx;
    double s = 0.0;
    for (int64_t j = 0; j < N; j++) s += exp((double)x[j] - mx);
    float lse = mx + (float)log(s);
    for (int64_t j = 0; j < N; j++) y[j] = x[j] - lse;
}
/* Its backward, added into dx: g - exp(y) * sum(g). */
static LITHE_HD inline void lithe__log_softmax_backward_row(int64_t N, const float *y, const float *g, float *dx) {
    double s = 0.0;
    for (int64_t j = 0; j < N; j++) s += g[j];
    for (int64_t j = 0; j < N; j++) dx[j] += g[j] - expf(y[j]) * (float)s;
}

/* Maxout of one unit's P pieces: the first maximum wins (argmax); its index. Thinc's rule
 * (NumpyOps.maxout, cpu_kernels.hh): a loop keeping x[p] when x[p] > the best so far, except for
 * P = 3, where its unrolled argmax compares (x1, x2) first and the winner against x0. The two
 * agree on every ordered input and differ only where a candidate is NaN: [a, NaN, c] gives a
 * there, max(a, c) by the loop. */
static LITHE_HD inline int32_t lithe__maxout_row(int64_t P, const float *x) {
    if (P == 3) {
        int32_t b = x[2] > x[1] ? 2 : 1;
        return x[b] > x[0] ? b : 0;
    }
    int32_t best = 0;
    for (int64_t p = 1; p < P; p++)
        if (x[p] > x[best]) best = (int32_t)p;
    return best;
}

/* Layer normalisation of one row of N: statistics in double (rows of any width keep float32
 * accuracy), y = xhat * G + b. */
static LITHE_HD inline void lithe__layernorm_row(int64_t N, const float *x, const float *G, const float *b, float eps,
                                                 float *y, float *mean, float *inv_std) {
    double mu = 0.0, var = 0.0;
    for (int64_t j = 0; j < N; j++) mu += x[j];
    mu /= (double)N;
    for (int64_t j = 0; j < N; j++) var += ((double)x[j] - mu) * ((double)x[j] - mu);
    var /= (double)N;
    double is = 1.0 / sqrt(var + (double)eps);
    *mean = (float)mu;
    *inv_std = (float)is;
    for (int64_t j = 0; j < N; j++) y[j] = (float)(((double)x[j] - mu) * is) * G[j] + b[j];
}
/* Its dX for one row: inv_std * (g - mean(g) - xhat * mean(g * xhat)), g = dy * G. dx may alias
 * dy (the row reads all of dy before writing). */
static LITHE_HD inline void lithe__layernorm_dx_row(int64_t N, const float *x, const float *dy, const float *G,
                                                    double mu, double is, float *dx) {
    double sum_g = 0.0, sum_gx = 0.0;
    for (int64_t j = 0; j < N; j++) {
        double xhat = ((double)x[j] - mu) * is, g = (double)dy[j] * G[j];
        sum_g += g;
        sum_gx += g * xhat;
    }
    double mg = sum_g / (double)N, mgx = sum_gx / (double)N;
    for (int64_t j = 0; j < N; j++) {
        double xhat = ((double)x[j] - mu) * is;
        dx[j] = (float)(is * ((double)dy[j] * G[j] - mg - xhat * mgx));
    }
}

/* LSTM backward at one (row, unit h): the gates' gradients into dg (the row's 4H, Thinc's order
 * f, i, o, c), from the row's gates g, the previous cell cp_h, this cell c_h, dy and the cell
 * gradient carried so far dc_in; returns dc (dC of the previous row gets dc * f). */
static LITHE_HD inline float lithe__lstm_dgates(int64_t H, int64_t h, const float *g, float cp_h, float c_h, float dy,
                                                float dc_in, float *dg) {
    float f = g[h], i = g[H + h], o = g[2 * H + h], cc = g[3 * H + h];
    float tc = tanhf(c_h);
    float dc = dc_in + dy * o * (1.0f - tc * tc);
    dg[h] = dc * cp_h * f * (1.0f - f);
    dg[H + h] = dc * cc * i * (1.0f - i);
    dg[2 * H + h] = dy * tc * o * (1.0f - o);
    dg[3 * H + h] = dc * i * (1.0f - cc * cc);
    return dc;
}


/* One element of adam_step (primitives.def), shared by the CPU's scalar twin and the CUDA kernel:
 * lithe_optimizer_step's passes in their order — the clip scale (gscale, applied as 0 * g +
 * gscale * g is, which equals gscale * g), Adam's moments and step, G = 0, weight decay (wscale,
 * unless 1) and the parameter average. omb1 = 1 - beta1, omb2 = 1 - beta2, omd = 1 - decay. */
static inline LITHE_HD void lithe__adam_elem(int64_t i, float *W, float *G, float *m1, float *m2, float *avg,
                                             float gscale, float beta1, float beta2, float eps, float lr,
                                             float wscale, float omb1, float omb2, float omd) {
    float g = gscale == 1.0f ? G[i] : gscale * G[i];
    float a = m1[i] * beta1, b = m2[i] * beta2;
    a += g * omb1;
    b += omb2 * (g * g);
    m1[i] = a;
    m2[i] = b;
    float step = a / (sqrtf(b) + eps);
    float w = W[i] + -lr * step;
    G[i] = 0.0f;
    if (wscale != 1.0f) w = wscale * w;
    W[i] = w;
    if (avg) avg[i] -= omd * (avg[i] - w);
}

#endif
