/* Memory and elementwise primitives: fill, copy (strided views), cast, row broadcasts and sums,
 * axpby, mul, the reductions read back by the host (sum_squares, any_outside), the optimizers'
 * updates, dropout masks (Philox, the CPU's stream) and the categorical cross-entropy gradient.
 * One thread per element (or per column where a sum runs down the rows, in the CPU's order). */
#include "common.cuh"
#include "../common/rows.h"

/* ---- fill, copy, cast ---- */

LC_KERNEL(k_fill, (const lc_thread &t, float *y, int64_t n, float v)) {
    LC_FOR(t, i, n) y[i] = v;
}

struct lc_strided {
    int nx, ny;
    int64_t xshape[LITHE_MAX_DIMS], xs[LITHE_MAX_DIMS], yshape[LITHE_MAX_DIMS], ys[LITHE_MAX_DIMS];
};
static LC_HD inline int64_t strided_off(int nd, const int64_t *shape, const int64_t *st, int64_t i) {
    int64_t o = 0;
    for (int d = nd - 1; d >= 0; d--) {
        o += (i % shape[d]) * st[d];
        i /= shape[d];
    }
    return o;
}
/* Y[row-major i] = X[row-major i], each walked in its own shape and strides; es bytes each. */
LC_KERNEL(k_copy_strided, (const lc_thread &t, char *y, const char *x, int64_t n, int es, lc_strided g)) {
    LC_FOR(t, i, n) {
        int64_t ox = strided_off(g.nx, g.xshape, g.xs, i), oy = strided_off(g.ny, g.yshape, g.ys, i);
        switch (es) {
        case 1: ((uint8_t *)y)[oy] = ((const uint8_t *)x)[ox]; break;
        case 2: ((uint16_t *)y)[oy] = ((const uint16_t *)x)[ox]; break;
        case 4: ((uint32_t *)y)[oy] = ((const uint32_t *)x)[ox]; break;
        default: ((uint64_t *)y)[oy] = ((const uint64_t *)x)[ox]; break;
        }
    }
}

static LC_HD inline uint32_t f32_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return u;
}
static LC_HD inline float bits_f32(uint32_t u) {
    float x;
    memcpy(&x, &u, 4);
    return x;
}
/* Round-to-nearest-even on the bits, as backends/cpu/scalar/cast.c. */
static LC_HD inline uint16_t f32_to_f16(float x) {
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t exp = (u >> 23) & 0xFFu, man = u & 0x7FFFFFu;
    if (exp == 0xFF) return (uint16_t)(sign | 0x7C00u | (man ? 0x200u | (man >> 13) : 0u));
    int32_t e = (int32_t)exp - 127 + 15;
    if (e >= 31) return (uint16_t)(sign | 0x7C00u);
    if (e <= 0) {
        if (e < -10) return sign;
        uint32_t full = man | 0x800000u, shift = (uint32_t)(14 - e);
        uint32_t m = full >> shift, rem = full & ((1u << shift) - 1u), half = 1u << (shift - 1u);
        if (rem > half || (rem == half && (m & 1u))) m++;
        return (uint16_t)(sign | m);
    }
    uint32_t m = man >> 13, rem = man & 0x1FFFu, h = ((uint32_t)e << 10) | m;
    if (rem > 0x1000u || (rem == 0x1000u && (m & 1u))) h++;
    return (uint16_t)(sign | h);
}
static LC_HD inline float f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
    if (exp == 0x1F) return bits_f32(sign | 0x7F800000u | (man << 13));
    if (exp == 0) {
        float v = (float)man * 0x1p-24f;
        return sign ? -v : v;
    }
    return bits_f32(sign | ((exp - 15 + 127) << 23) | (man << 13));
}
static LC_HD inline uint16_t f32_to_bf16(float x) {
    uint32_t u = f32_bits(x);
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu)) return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
static LC_HD inline double sat(float x, double lo, double hi) {
    if (x != x) return 0.0;
    double d = trunc((double)x);
    return d < lo ? lo : d > hi ? hi : d;
}
LC_KERNEL(k_cast, (const lc_thread &t, void *Y, int to, const void *X, int from, int64_t n)) {
    LC_FOR(t, i, n) {
        if (from == LITHE_F32) {
            float x = ((const float *)X)[i];
            switch (to) {
            case LITHE_F16: ((uint16_t *)Y)[i] = f32_to_f16(x); break;
            case LITHE_BF16: ((uint16_t *)Y)[i] = f32_to_bf16(x); break;
            case LITHE_I32: ((int32_t *)Y)[i] = (int32_t)sat(x, -2147483648.0, 2147483647.0); break;
            case LITHE_I64: ((int64_t *)Y)[i] = (int64_t)sat(x, -0x1p63, 0x1p63 - 0x1p39); break;
            case LITHE_U8: ((uint8_t *)Y)[i] = (uint8_t)sat(x, 0.0, 255.0); break;
            case LITHE_I8: ((int8_t *)Y)[i] = (int8_t)sat(x, -128.0, 127.0); break;
            default: ((float *)Y)[i] = x; break;
            }
        } else {
            float *y = (float *)Y;
            switch (from) {
            case LITHE_F16: y[i] = f16_to_f32(((const uint16_t *)X)[i]); break;
            case LITHE_BF16: y[i] = bits_f32((uint32_t)((const uint16_t *)X)[i] << 16); break;
            case LITHE_I32: y[i] = (float)((const int32_t *)X)[i]; break;
            case LITHE_I64: y[i] = (float)((const int64_t *)X)[i]; break;
            case LITHE_U8: y[i] = (float)((const uint8_t *)X)[i]; break;
            case LITHE_I8: y[i] = (float)((const int8_t *)X)[i]; break;
            default: break;
            }
        }
    }
}

lithe_status cu_fill(lithe_backend *be, lithe_tensor *Y, float value) {
    lc_ctx *c = lc_of(be);
    /* contiguous, as the CPU's (a zero fill of any dtype is a memset) */
    if (value == 0.0f) return lc_memset0(c, lc_ptr(Y), (size_t)Y->numel * lc_dsize(Y->dtype));
    if (Y->dtype != LITHE_F32) return LC_FAIL(LITHE_ERR_DTYPE, "fill: non-zero fill needs float32");
    return lc_launch<k_fill>(c, Y->numel, lc_f(Y), Y->numel, value);
}

lithe_status cu_copy(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *X) {
    lc_ctx *c = lc_of(be);
    size_t es = lc_dsize(X->dtype);
    if (lc_contiguous(X) && lc_contiguous(Y)) return lc_d2d(c, lc_ptr(Y), lc_ptr(X), (size_t)X->numel * es);
    lc_strided g;
    memset(&g, 0, sizeof g);
    g.nx = X->ndim;
    g.ny = Y->ndim;
    for (int d = 0; d < X->ndim; d++) g.xshape[d] = X->shape[d], g.xs[d] = X->strides[d];
    for (int d = 0; d < Y->ndim; d++) g.yshape[d] = Y->shape[d], g.ys[d] = Y->strides[d];
    return lc_launch<k_copy_strided>(c, X->numel, (char *)lc_ptr(Y), (const char *)lc_ptr(X), X->numel, (int)es, g);
}

lithe_status cu_cast(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *X) {
    if (X->dtype == Y->dtype) return lc_d2d(lc_of(be), lc_ptr(Y), lc_ptr(X), (size_t)X->numel * lc_dsize(X->dtype));
    return lc_launch<k_cast>(lc_of(be), X->numel, lc_ptr(Y), (int)Y->dtype, (const void *)lc_ptr(X), (int)X->dtype,
                             X->numel);
}

/* ---- rows ---- */

LC_KERNEL(k_add_row, (const lc_thread &t, float *Y, const float *b, int64_t M, int64_t N)) {
    LC_FOR(t, i, M * N) Y[i] += b[i % N];
}
/* one thread per column, rows in order: the CPU's sums, bit for bit */
LC_KERNEL(k_sum_rows, (const lc_thread &t, const float *X, float beta, float *y, int64_t M, int64_t N)) {
    LC_FOR(t, j, N) {
        float acc = beta == 0.0f ? 0.0f : beta * y[j];
        for (int64_t i = 0; i < M; i++) acc += X[i * N + j];
        y[j] = acc;
    }
}
LC_KERNEL(k_axpby, (const lc_thread &t, int64_t n, float alpha, const float *X, float beta, float *Y)) {
    LC_FOR(t, i, n) {
        if (beta == 1.0f) Y[i] += alpha * X[i];
        else if (beta == 0.0f) Y[i] = alpha * X[i];
        else Y[i] = alpha * X[i] + beta * Y[i];
    }
}
LC_KERNEL(k_mul, (const lc_thread &t, int64_t n, const float *A, const float *B, float *Y)) {
    LC_FOR(t, i, n) Y[i] = A[i] * B[i];
}

lithe_status cu_add_row(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *b) {
    return lc_launch<k_add_row>(lc_of(be), Y->numel, lc_f(Y), (const float *)lc_f(b), Y->shape[0], Y->shape[1]);
}
lithe_status cu_sum_rows(lithe_backend *be, const lithe_tensor *X, float beta, lithe_tensor *y) {
    return lc_launch<k_sum_rows>(lc_of(be), X->shape[1], (const float *)lc_f(X), beta, lc_f(y), X->shape[0],
                                 X->shape[1]);
}
lithe_status cu_axpby(lithe_backend *be, float alpha, const lithe_tensor *X, float beta, lithe_tensor *Y) {
    return lc_launch<k_axpby>(lc_of(be), Y->numel, Y->numel, alpha, (const float *)lc_f(X), beta, lc_f(Y));
}
lithe_status cu_mul(lithe_backend *be, const lithe_tensor *A, const lithe_tensor *B, lithe_tensor *Y) {
    return lc_launch<k_mul>(lc_of(be), Y->numel, Y->numel, (const float *)lc_f(A), (const float *)lc_f(B), lc_f(Y));
}

/* ---- reductions the host reads: each thread folds its grid-stride slice into a partial, the
 * host adds the partials (in double) ---- */

LC_KERNEL(k_sum_squares, (const lc_thread &t, const float *X, int64_t n, double *part)) {
    double s = 0.0;
    LC_FOR(t, i, n) s += (double)X[i] * X[i];
    part[t.first()] = s;
}
LC_KERNEL(k_any_outside, (const lc_thread &t, const float *X, int64_t n, float lo, float hi, int *part)) {
    int any = 0;
    LC_FOR(t, i, n) if (!(X[i] >= lo && X[i] <= hi)) any = 1;
    part[t.first()] = any;
}

/* Second stage: FOLD threads each fold a strided slice of the first stage's partials, so the host
 * reads FOLD values, not one per thread of the grid (half a million on an H100). */
#define FOLD 256
LC_KERNEL(k_fold_sum, (const lc_thread &t, const double *part, int64_t n, double *out)) {
    LC_FOR(t, i, FOLD) {
        double s = 0.0;
        for (int64_t k = i; k < n; k += FOLD) s += part[k];
        out[i] = s;
    }
}
LC_KERNEL(k_fold_any, (const lc_thread &t, const int *part, int64_t n, int *out)) {
    LC_FOR(t, i, FOLD) {
        int any = 0;
        for (int64_t k = i; k < n; k += FOLD) any |= part[k];
        out[i] = any;
    }
}

static int64_t n_threads(lc_ctx *c, int64_t n) {
    int64_t g = (n + LC_BLOCK - 1) / LC_BLOCK;
    if (g > c->max_grid) g = c->max_grid;
    return g * LC_BLOCK;
}

lithe_status cu_sum_squares(lithe_backend *be, const lithe_tensor *X, double *out) {
    lc_ctx *c = lc_of(be);
    *out = 0.0;
    if (X->numel == 0) return LITHE_OK;
    int64_t nt = n_threads(c, X->numel);
    void *part = NULL;
    double host[FOLD];
    lithe_status s = lc_alloc(c, (size_t)(nt + FOLD) * sizeof(double), &part);
    double *p1 = (double *)part, *p2 = p1 + nt;
    if (s == LITHE_OK) s = lc_launch<k_sum_squares>(c, X->numel, (const float *)lc_f(X), X->numel, p1);
    if (s == LITHE_OK) s = lc_launch<k_fold_sum>(c, FOLD, (const double *)p1, nt, p2);
    if (s == LITHE_OK) s = lc_d2h(c, host, p2, sizeof host);
    if (s == LITHE_OK)
        for (int i = 0; i < FOLD; i++) *out += host[i];
    lc_free(c, part);
    return s;
}

/* Gradient clipping without a read-back: sum_squares' two stages, then one thread adds the FOLD
 * partials in the order the host does (so |G| is the bits cu_sum_squares would give) and writes
 * {factor, apply}; the scaling pass reads them (apply == 0: G untouched) and scales as k_axpby
 * does with alpha 0, beta = factor. */
LC_KERNEL(k_clip_factor, (const lc_thread &t, const double *part, double threshold, float *f)) {
    LC_FOR(t, i, 1) {
        double ss = 0.0;
        for (int k = 0; k < FOLD; k++) ss += part[k];
        float norm = (float)sqrt(ss);
        bool apply = norm >= (float)threshold;
        f[0] = apply ? (float)(threshold / norm) : 1.0f;
        f[1] = apply ? 1.0f : 0.0f;
    }
}
LC_KERNEL(k_clip_scale, (const lc_thread &t, int64_t n, const float *f, float *G)) {
    float beta = f[0];
    if (f[1] == 0.0f) return;
    LC_FOR(t, i, n) {
        if (beta == 1.0f) G[i] += 0.0f * G[i];
        else if (beta == 0.0f) G[i] = 0.0f * G[i];
        else G[i] = 0.0f * G[i] + beta * G[i];
    }
}

/* clip_gradient's decision on the device: {factor, apply} at *f, in *part (the caller frees it
 * with lc_free once the kernels reading *f are queued). */
static lithe_status cu_clip_factor(lithe_backend *be, const lithe_tensor *G, double threshold, void **part,
                                   float **f) {
    lc_ctx *c = lc_of(be);
    int64_t nt = n_threads(c, G->numel);
    *part = NULL;
    lithe_status s = lc_alloc(c, (size_t)(nt + FOLD + 1) * sizeof(double), part);
    if (s != LITHE_OK) return s;
    double *p1 = (double *)*part, *p2 = p1 + nt;
    *f = (float *)(p2 + FOLD);
    s = lc_launch<k_sum_squares>(c, G->numel, (const float *)lc_f(G), G->numel, p1);
    if (s == LITHE_OK) s = lc_launch<k_fold_sum>(c, FOLD, (const double *)p1, nt, p2);
    if (s == LITHE_OK) s = lc_launch<k_clip_factor>(c, 1, (const double *)p2, threshold, *f);
    return s;
}

lithe_status cu_clip_gradient(lithe_backend *be, lithe_tensor *G, double threshold) {
    if (G->numel == 0) return LITHE_OK;
    void *part = NULL;
    float *f = NULL;
    lithe_status s = cu_clip_factor(be, G, threshold, &part, &f);
    if (s == LITHE_OK) s = lc_launch<k_clip_scale>(lc_of(be), G->numel, G->numel, (const float *)f, lc_f(G));
    lc_free(lc_of(be), part); /* safe: a later kernel reusing it is queued after these on the stream */
    return s;
}

lithe_status cu_any_outside(lithe_backend *be, const lithe_tensor *X, float lo, float hi, int *out) {
    lc_ctx *c = lc_of(be);
    *out = 0;
    if (X->numel == 0) return LITHE_OK;
    int64_t nt = n_threads(c, X->numel);
    void *part = NULL;
    int host[FOLD];
    lithe_status s = lc_alloc(c, (size_t)(nt + FOLD) * sizeof(int), &part);
    int *p1 = (int *)part, *p2 = p1 + nt;
    if (s == LITHE_OK) s = lc_launch<k_any_outside>(c, X->numel, (const float *)lc_f(X), X->numel, lo, hi, p1);
    if (s == LITHE_OK) s = lc_launch<k_fold_any>(c, FOLD, (const int *)p1, nt, p2);
    if (s == LITHE_OK) s = lc_d2h(c, host, p2, sizeof host);
    if (s == LITHE_OK)
        for (int i = 0; i < FOLD; i++) *out |= host[i];
    lc_free(c, part);
    return s;
}

/* ---- optimizers (Thinc's order of operations, as backends/cpu/scalar/elementwise.c) ---- */

LC_KERNEL(k_adam, (const lc_thread &t, int64_t n, float *W, const float *G, float *m1, float *m2, float beta1,
                   float beta2, float eps, float lr)) {
    float omb1 = 1.0f - beta1, omb2 = 1.0f - beta2;
    LC_FOR(t, i, n) {
        float g = G[i], a = m1[i] * beta1, b = m2[i] * beta2;
        a += g * omb1;
        b += omb2 * (g * g);
        m1[i] = a;
        m2[i] = b;
        float step = a / (sqrtf(b) + eps);
        W[i] += -lr * step;
    }
}
LC_KERNEL(k_radam, (const lc_thread &t, int64_t n, float *W, const float *G, float *m1, float *m2, float beta1,
                    float omb1, float beta2, float omb2, float eps, float coef, bool rectified)) {
    LC_FOR(t, i, n) {
        float g = G[i], b = m2[i] * beta2, a = m1[i] * beta1;
        b += omb2 * (g * g);
        a += omb1 * g;
        m2[i] = b;
        m1[i] = a;
        if (rectified) W[i] += coef * (a / (sqrtf(b) + eps));
        else if (coef != 0.0f) W[i] += coef * a;
    }
}
LC_KERNEL(k_update_averages, (const lc_thread &t, int64_t n, float *ema, const float *W, float decay)) {
    float omd = 1.0f - decay;
    LC_FOR(t, i, n) ema[i] -= omd * (ema[i] - W[i]);
}

/* adam_step (primitives.def): Adam on gscale * G, G = 0, W *= wscale (unless 1), the averages;
 * clip (NULL: none) is clip_gradient's decision {factor, apply}: gscale is the factor when applied */
LC_KERNEL(k_adam_step, (const lc_thread &t, int64_t n, float *W, float *G, float *m1, float *m2, float *avg,
                        const float *clip, float beta1, float beta2, float eps, float lr, float wscale, float decay)) {
    float omb1 = 1.0f - beta1, omb2 = 1.0f - beta2, omd = 1.0f - decay;
    float gscale = clip && clip[1] != 0.0f ? clip[0] : 1.0f;
    LC_FOR(t, i, n) {
        lithe__adam_elem(i, W, G, m1, m2, avg, gscale, beta1, beta2, eps, lr, wscale, omb1, omb2, omd);
    }
}

lithe_status cu_adam(lithe_backend *be, lithe_tensor *W, const lithe_tensor *G, lithe_tensor *m1,
                            lithe_tensor *m2, float beta1, float beta2, float eps, float lr) {
    return lc_launch<k_adam>(lc_of(be), W->numel, W->numel, lc_f(W), (const float *)lc_f(G), lc_f(m1), lc_f(m2), beta1,
                             beta2, eps, lr);
}
lithe_status cu_radam(lithe_backend *be, lithe_tensor *W, const lithe_tensor *G, lithe_tensor *m1,
                             lithe_tensor *m2, float beta1, float omb1, float beta2, float omb2, float eps, float coef,
                             bool rectified) {
    return lc_launch<k_radam>(lc_of(be), W->numel, W->numel, lc_f(W), (const float *)lc_f(G), lc_f(m1), lc_f(m2),
                              beta1, omb1, beta2, omb2, eps, coef, rectified);
}
lithe_status cu_adam_step(lithe_backend *be, lithe_tensor *W, lithe_tensor *G, lithe_tensor *m1, lithe_tensor *m2,
                                 lithe_tensor *avg, double grad_clip, float beta1, float beta2, float eps, float lr,
                                 float wscale, float decay) {
    /* the clipping decided on the device (clip_gradient's decision), its factor read by the one
     * pass as the CPU applies its own: no separate pass scaling G */
    void *part = NULL;
    float *f = NULL;
    lithe_status s = grad_clip > 0.0 && W->numel ? cu_clip_factor(be, G, grad_clip, &part, &f) : LITHE_OK;
    if (s == LITHE_OK)
        s = lc_launch<k_adam_step>(lc_of(be), W->numel, W->numel, lc_f(W), lc_f(G), lc_f(m1), lc_f(m2),
                                   avg ? lc_f(avg) : (float *)NULL, (const float *)f, beta1, beta2, eps, lr, wscale,
                                   decay);
    lc_free(lc_of(be), part); /* safe: a later kernel reusing it is queued after this one on the stream */
    return s;
}
lithe_status cu_update_averages(lithe_backend *be, lithe_tensor *ema, const lithe_tensor *W, float decay) {
    return lc_launch<k_update_averages>(lc_of(be), W->numel, W->numel, lc_f(ema), (const float *)lc_f(W), decay);
}

/* ---- dropout: Philox4x32-10 (core/rng.c), one thread per group of four outputs ---- */

static LC_HD inline void philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1,
                                uint32_t out[4]) {
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0, hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}
LC_KERNEL(k_dropout, (const lc_thread &t, uint64_t key, uint64_t counter, float rate, int64_t n, float *Y)) {
    float keep = 1.0f / (1.0f - rate);
    LC_FOR(t, q, (n + 3) / 4) {
        uint64_t ctr = counter + (uint64_t)q;
        uint32_t r[4];
        philox((uint32_t)ctr, (uint32_t)(ctr >> 32), 0, 0, (uint32_t)key, (uint32_t)(key >> 32), r);
        for (int j = 0; j < 4 && q * 4 + j < n; j++) {
            float u = (float)(r[j] >> 8) * 0x1p-24f;
            Y[q * 4 + j] = u >= rate ? keep : 0.0f;
        }
    }
}
lithe_status cu_dropout_mask(lithe_backend *be, uint64_t key, uint64_t counter, float rate, lithe_tensor *Y) {
    return lc_launch<k_dropout>(lc_of(be), (Y->numel + 3) / 4, key, counter, rate, Y->numel, lc_f(Y));
}

/* ---- categorical cross-entropy with integer labels ---- */

LC_KERNEL(k_cce, (const lc_thread &t, int64_t B, int64_t C, const float *G, const int32_t *l32, const int64_t *l64,
                  float smoothing, bool has_missing, int64_t missing, float divisor, float *D)) {
    float off = C > 1 ? smoothing / (float)(C - 1) : 0.0f, on = 1.0f - smoothing;
    LC_FOR(t, k, B * C) {
        int64_t i = k / C, j = k % C;
        int64_t label = l64 ? l64[i] : l32[i];
        bool masked = has_missing && label == missing;
        float tv = j == label ? on : off;
        float d = masked ? 0.0f : G[k] - tv;
        D[k] = d / divisor;
    }
}
lithe_status cu_cce_labels(lithe_backend *be, const lithe_tensor *G, const lithe_tensor *labels, float smoothing,
                                  bool has_missing, int64_t missing, float divisor, lithe_tensor *D) {
    bool i64 = labels->dtype == LITHE_I64;
    return lc_launch<k_cce>(lc_of(be), G->numel, G->shape[0], G->shape[1], (const float *)lc_f(G),
                            i64 ? (const int32_t *)NULL : (const int32_t *)lc_ptr(labels),
                            i64 ? (const int64_t *)lc_ptr(labels) : (const int64_t *)NULL, smoothing, has_missing,
                            missing, divisor, lc_f(D));
}

