/* The CPU backend: host memory and the scalar kernels behind the primitive table. Each entry
 * unpacks tensors into pointers and sizes and calls the kernel chosen for this machine (today
 * the scalar twin everywhere; SIMD variants slot in here). Shapes were checked by the layer. The GEMM
 * entries (float32, compact, prepared, batched, int8) are in cpu_gemm.c. */
#include "kernels.h"
#include "simd/simd.h"
#include "gemm/gemm.h"
#include "threadpool.h"

#include <math.h>
#include <stdlib.h>

static lithe_status cpu_alloc(lithe_backend *be, size_t nbytes, void **out) {
    (void)be;
    *out = lithe__cpu_cache_alloc(nbytes);
    return *out ? LITHE_OK : lithe__oom("cpu backend", nbytes);
}
static void cpu_free(lithe_backend *be, void *p) {
    (void)be;
    lithe__cpu_cache_free(p);
}
static lithe_status cpu_upload(lithe_backend *be, void *dst, size_t off, const void *src, size_t n) {
    (void)be;
    if (n) memcpy((char *)dst + off, src, n);
    return LITHE_OK;
}
static lithe_status cpu_download(lithe_backend *be, void *dst, const void *src, size_t off, size_t n) {
    (void)be;
    if (n) memcpy(dst, (const char *)src + off, n);
    return LITHE_OK;
}
static lithe_status cpu_sync(lithe_backend *be) {
    (void)be;
    return LITHE_OK;
}

#define F(t) lithe__f32(t)
#define N(t) ((t)->numel)

static lithe_status cpu_fill(lithe_backend *be, lithe_tensor *Y, float value) {
    (void)be;
    if (value == 0.0f) {
        memset(lithe__tdata(Y), 0, (size_t)N(Y) * lithe_dtype_size(Y->dtype));
        return LITHE_OK;
    }
    if (Y->dtype != LITHE_F32) return lithe__fail(LITHE_ERR_DTYPE, "fill: non-zero fill needs float32");
    float *y = F(Y);
    for (int64_t i = 0; i < N(Y); i++) y[i] = value;
    return LITHE_OK;
}

/* Elementwise copy between two tensors of equal numel and dtype, either of them a strided view:
 * both are walked in row-major order of their own shapes. */
/* A contiguous 4-byte Y from an X of its shape whose last axis is strided and whose axis a has
 * stride 1 (a Transpose that moves the last axis, as attention's K -> Kᵀ): per index of the other
 * axes, the (a, last) plane in 16 x 16 tiles, so the strided reads of one tile share 16 cache lines
 * rather than touching one line per element. Returns false (nothing copied) for any other X. */
static bool copy_tiled_transpose(lithe_tensor *Y, const lithe_tensor *X) {
    int nd = X->ndim, a = -1;
    if (lithe_dtype_size(X->dtype) != 4 || nd < 2 || X->strides[nd - 1] == 1 || X->shape[nd - 1] < 16) return false;
    for (int d = 0; d < nd - 1; d++)
        if (X->strides[d] == 1 && X->shape[d] >= 16) a = d;
    if (a < 0) return false;
    int64_t ys[LITHE_MAX_DIMS], acc = 1, ix[LITHE_MAX_DIMS] = {0};
    for (int d = nd - 1; d >= 0; d--) {
        ys[d] = acc;
        acc *= Y->shape[d];
    }
    const uint32_t *xb = (const uint32_t *)lithe__tdata(X);
    uint32_t *yb = (uint32_t *)lithe__tdata(Y);
    const int64_t A = X->shape[a], L = X->shape[nd - 1], xl = X->strides[nd - 1], ya = ys[a];
    for (int64_t n = 0; n < N(X); n += A * L) {
        int64_t ox = 0, oy = 0;
        for (int d = 0; d < nd; d++) {
            ox += ix[d] * X->strides[d];
            oy += ix[d] * ys[d];
        }
        for (int64_t i0 = 0; i0 < A; i0 += 16)
            for (int64_t j0 = 0; j0 < L; j0 += 16) {
                int64_t ie = i0 + 16 < A ? i0 + 16 : A, je = j0 + 16 < L ? j0 + 16 : L;
                for (int64_t i = i0; i < ie; i++)
                    for (int64_t j = j0; j < je; j++) yb[oy + i * ya + j] = xb[ox + i + j * xl];
            }
        for (int d = nd - 2; d >= 0; d--) { /* the next index of the axes but a and the last */
            if (d == a) continue;
            if (++ix[d] < X->shape[d]) break;
            ix[d] = 0;
        }
    }
    return true;
}

static lithe_status cpu_copy(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *X) {
    (void)be;
    size_t es = lithe_dtype_size(X->dtype);
    if (lithe_tensor_is_contiguous(X) && lithe_tensor_is_contiguous(Y)) {
        memcpy(lithe__tdata(Y), lithe__tdata(X), (size_t)N(X) * es);
        return LITHE_OK;
    }
    if (lithe_tensor_is_contiguous(Y) && lithe__same_shape(X, Y) && copy_tiled_transpose(Y, X)) return LITHE_OK;
    if (lithe_tensor_is_contiguous(Y)) return lithe_tensor_read(X, lithe__tdata(Y), (size_t)N(Y) * es);
    int64_t ix[LITHE_MAX_DIMS] = {0}, iy[LITHE_MAX_DIMS] = {0};
    const char *xb = lithe__tdata(X);
    char *yb = lithe__tdata(Y);
    /* a strided Y of X's shape with unit-stride rows on both sides (the graph's Slice backward writes
     * into a slice of its input's shape): one memcpy a row (the last axis stays at index 0) */
    bool rows = X->ndim == Y->ndim && X->ndim > 0 && X->strides[X->ndim - 1] == 1 && Y->strides[Y->ndim - 1] == 1;
    for (int d = 0; rows && d < X->ndim; d++) rows = X->shape[d] == Y->shape[d];
    const int64_t run = rows ? X->shape[X->ndim - 1] : 1;
    for (int64_t n = 0; n < N(X); n += run) {
        int64_t ox = 0, oy = 0;
        for (int d = 0; d < X->ndim; d++) ox += ix[d] * X->strides[d];
        for (int d = 0; d < Y->ndim; d++) oy += iy[d] * Y->strides[d];
        memcpy(yb + oy * (int64_t)es, xb + ox * (int64_t)es, (size_t)run * es);
        for (int d = X->ndim - 1 - rows; d >= 0 && ++ix[d] == X->shape[d]; d--) ix[d] = 0;
        for (int d = Y->ndim - 1 - rows; d >= 0 && ++iy[d] == Y->shape[d]; d--) iy[d] = 0;
    }
    return LITHE_OK;
}

static lithe_status cpu_cast(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *X) {
    (void)be;
    lithe_cast__scalar(Y->dtype, lithe__tdata(Y), X->dtype, lithe__tdata(X), N(X));
    return LITHE_OK;
}

static lithe_status cpu_add_row(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *b) {
    (void)be;
    lithe__cpu_add_row(Y->shape[0], Y->shape[1], F(Y), F(b));
    return LITHE_OK;
}
static lithe_status cpu_sum_rows(lithe_backend *be, const lithe_tensor *X, float beta, lithe_tensor *y) {
    (void)be;
    lithe__cpu_sum_rows(X->shape[0], X->shape[1], F(X), beta, F(y));
    return LITHE_OK;
}
static lithe_status cpu_axpby(lithe_backend *be, float alpha, const lithe_tensor *X, float beta, lithe_tensor *Y) {
    (void)be;
    lithe__cpu_axpby(N(Y), alpha, F(X), beta, F(Y));
    return LITHE_OK;
}
static lithe_status cpu_mul(lithe_backend *be, const lithe_tensor *A, const lithe_tensor *B, lithe_tensor *Y) {
    (void)be;
    lithe__cpu_mul(N(Y), F(A), F(B), F(Y));
    return LITHE_OK;
}
static lithe_status cpu_sum_squares(lithe_backend *be, const lithe_tensor *X, double *out) {
    (void)be;
    *out = lithe__cpu_sum_squares(N(X), F(X));
    return LITHE_OK;
}
/* Thinc's per-parameter clip decision: the factor G is scaled by (1: left as it is). */
static float clip_scale(const lithe_tensor *G, double threshold) {
    float norm = (float)sqrt(lithe__cpu_sum_squares(N(G), F(G)));
    return norm >= (float)threshold ? (float)(threshold / norm) : 1.0f;
}
static lithe_status cpu_clip_gradient(lithe_backend *be, lithe_tensor *G, double threshold) {
    (void)be;
    float s = clip_scale(G, threshold);
    if (s != 1.0f) lithe__cpu_axpby(N(G), 0.0f, F(G), s, F(G));
    return LITHE_OK;
}
static lithe_status cpu_act(lithe_backend *be, const lithe__act *a, const lithe_tensor *X, lithe_tensor *Y) {
    (void)be;
    lithe__cpu_act(a, N(Y), F(X), F(Y));
    return LITHE_OK;
}
static lithe_status cpu_act_backward(lithe_backend *be, const lithe__act *a, const lithe_tensor *dY,
                                     const lithe_tensor *X, const lithe_tensor *Y, lithe_tensor *dX) {
    (void)be;
    lithe__cpu_act_backward(a, N(dX), F(dY), X ? F(X) : NULL, Y ? F(Y) : NULL, F(dX));
    return LITHE_OK;
}
static lithe_status cpu_softmax(lithe_backend *be, const lithe_tensor *X, float temperature, lithe_tensor *Y) {
    (void)be;
    lithe__cpu_softmax(X->shape[0], X->shape[1], F(X), temperature, F(Y));
    return LITHE_OK;
}
static lithe_status cpu_softmax_backward(lithe_backend *be, const lithe_tensor *Y, const lithe_tensor *dY,
                                         float temperature, lithe_tensor *dX) {
    (void)be;
    lithe__cpu_softmax_backward(Y->shape[0], Y->shape[1], F(Y), F(dY), temperature, F(dX));
    return LITHE_OK;
}
static lithe_status cpu_dropout_mask(lithe_backend *be, uint64_t key, uint64_t counter, float rate,
                                     lithe_tensor *Y) {
    (void)be;
    lithe__cpu_dropout_mask(key, counter, rate, N(Y), F(Y));
    return LITHE_OK;
}
static lithe_status cpu_adam(lithe_backend *be, lithe_tensor *W, const lithe_tensor *G, lithe_tensor *m1,
                             lithe_tensor *m2, float beta1, float beta2, float eps, float lr) {
    (void)be;
    lithe__cpu_adam(N(W), F(W), F(G), F(m1), F(m2), beta1, beta2, eps, lr);
    return LITHE_OK;
}
static lithe_status cpu_radam(lithe_backend *be, lithe_tensor *W, const lithe_tensor *G, lithe_tensor *m1,
                              lithe_tensor *m2, float beta1, float omb1, float beta2, float omb2, float eps, float coef,
                              bool rectified) {
    (void)be;
    lithe__cpu_radam(N(W), F(W), F(G), F(m1), F(m2), beta1, omb1, beta2, omb2, eps, coef, rectified);
    return LITHE_OK;
}
static lithe_status cpu_update_averages(lithe_backend *be, lithe_tensor *ema, const lithe_tensor *W, float decay) {
    (void)be;
    lithe__cpu_update_averages(N(W), F(ema), F(W), decay);
    return LITHE_OK;
}
static lithe_status cpu_adam_step(lithe_backend *be, lithe_tensor *W, lithe_tensor *G, lithe_tensor *m1, lithe_tensor *m2,
                                  lithe_tensor *avg, double grad_clip, float beta1, float beta2, float eps, float lr,
                                  float wscale, float decay) {
    (void)be;
    /* clip_gradient's decision, its scale applied inside the one pass instead of scaling G first
     * (0 g + s g = s g: the same bits) */
    float gscale = grad_clip > 0.0 ? clip_scale(G, grad_clip) : 1.0f;
    lithe__cpu_adam_step(N(W), F(W), F(G), F(m1), F(m2), avg ? F(avg) : NULL, gscale, beta1, beta2, eps, lr, wscale,
                         decay);
    return LITHE_OK;
}
static lithe_status cpu_cce_labels(lithe_backend *be, const lithe_tensor *G, const lithe_tensor *labels,
                                   float smoothing, bool has_missing, int64_t missing, float divisor,
                                   lithe_tensor *D) {
    (void)be;
    bool i64 = labels->dtype == LITHE_I64;
    lithe_f32_cce_labels__scalar(G->shape[0], G->shape[1], F(G), i64 ? NULL : (const int32_t *)lithe__tdata(labels),
                                 i64 ? (const int64_t *)lithe__tdata(labels) : NULL, smoothing, has_missing,
                                 missing, divisor, F(D));
    return LITHE_OK;
}
static lithe_status cpu_any_outside(lithe_backend *be, const lithe_tensor *X, float lo, float hi, int *out) {
    (void)be;
    *out = lithe_f32_any_outside__scalar(N(X), F(X), lo, hi);
    return LITHE_OK;
}
static lithe_status cpu_maxout(lithe_backend *be, const lithe_tensor *X, lithe_tensor *Y, lithe_tensor *which) {
    (void)be;
    lithe__cpu_maxout(X->shape[0], X->shape[1], X->shape[2], F(X), F(Y), (int32_t *)lithe__tdata(which));
    return LITHE_OK;
}
static lithe_status cpu_maxout_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *which,
                                        lithe_tensor *dX) {
    (void)be;
    lithe_f32_maxout_backward__scalar(dX->shape[0], dX->shape[1], dX->shape[2], F(dY),
                                      (const int32_t *)lithe__tdata(which), F(dX));
    return LITHE_OK;
}
static lithe_status cpu_layernorm(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *G,
                                  const lithe_tensor *b, float eps, lithe_tensor *Y, lithe_tensor *mean,
                                  lithe_tensor *inv_std) {
    (void)be;
    lithe__cpu_layernorm(X->shape[0], X->shape[1], F(X), F(G), F(b), eps, F(Y), F(mean), F(inv_std));
    return LITHE_OK;
}
static lithe_status cpu_layernorm_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *X,
                                           const lithe_tensor *G, const lithe_tensor *mean,
                                           const lithe_tensor *inv_std, lithe_tensor *dX, lithe_tensor *dG,
                                           lithe_tensor *db) {
    (void)be;
    lithe__cpu_layernorm_backward(X->shape[0], X->shape[1], F(dY), F(X), F(G), F(mean), F(inv_std),
                                         F(dX), F(dG), F(db));
    return LITHE_OK;
}
static const int32_t *ids32(const lithe_tensor *ids) {
    return ids->dtype == LITHE_I32 ? (const int32_t *)lithe__tdata(ids) : NULL;
}
static const uint64_t *ids64(const lithe_tensor *ids) {
    return ids->dtype == LITHE_I32 ? NULL : (const uint64_t *)lithe__tdata(ids);
}
static lithe_status cpu_gather_rows(lithe_backend *be, const lithe_tensor *table, const lithe_tensor *ids,
                                    lithe_tensor *Y) {
    (void)be;
    lithe__cpu_gather_rows(Y->shape[0], Y->shape[1], F(table), ids32(ids), ids64(ids), F(Y));
    return LITHE_OK;
}
static lithe_status cpu_scatter_add_rows(lithe_backend *be, lithe_tensor *table, const lithe_tensor *ids,
                                         const lithe_tensor *X) {
    (void)be;
    lithe__cpu_scatter_add_rows(X->shape[0], X->shape[1], F(table), ids32(ids), ids64(ids), F(X));
    return LITHE_OK;
}
static lithe_status cpu_hash_ids(lithe_backend *be, const lithe_tensor *ids, uint32_t seed, lithe_tensor *out) {
    (void)be;
    lithe_u64_hash_ids__scalar(N(ids), (const uint64_t *)lithe__tdata(ids), seed, (uint32_t *)lithe__tdata(out));
    return LITHE_OK;
}

#define I32(t) ((const int32_t *)lithe__tdata(t))
/* reduce_sum / reduce_mean and their backprops on the SIMD table, through its bit-identical entries
 * (sum_rows; axpby with beta 1 is y += scale * x, with beta 0 y = scale * x): the scalar twins' bits
 * (lithe_f32_reduce_sum__scalar adds each row in order, the mean's scaled), for any table and thread
 * count. */
static lithe_status cpu_reduce_sum(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *lengths, bool mean,
                                   lithe_tensor *Y) {
    (void)be;
    int64_t B = Y->shape[0], O = Y->shape[1];
    const int32_t *len = I32(lengths);
    const float *x = F(X);
    float *y = F(Y);
    for (int64_t b = 0; b < B; b++, y += O) {
        if (!mean) lithe__cpu_sum_rows(len[b], O, x, 0.0f, y);
        else {
            float scale = len[b] ? (float)(1.0 / len[b]) : 0.0f; /* Thinc multiplies by 1/length */
            memset(y, 0, (size_t)O * sizeof *y);
            for (int32_t i = 0; i < len[b]; i++) lithe__cpu_axpby(O, scale, x + i * O, 1.0f, y);
        }
        x += len[b] * O;
    }
    return LITHE_OK;
}
static lithe_status cpu_reduce_sum_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *lengths,
                                            bool mean, lithe_tensor *dX) {
    (void)be;
    int64_t B = dY->shape[0], O = dY->shape[1];
    const int32_t *len = I32(lengths);
    const float *dy = F(dY);
    float *dx = F(dX);
    for (int64_t b = 0; b < B; b++, dy += O) {
        float scale = len[b] ? (float)(1.0 / len[b]) : 0.0f;
        for (int32_t i = 0; i < len[b]; i++, dx += O) {
            if (mean) lithe__cpu_axpby(O, scale, dy, 0.0f, dx);
            else memcpy(dx, dy, (size_t)O * sizeof *dx);
        }
    }
    return LITHE_OK;
}
static lithe_status cpu_reduce_max(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *lengths,
                                   lithe_tensor *Y, lithe_tensor *which) {
    (void)be;
    lithe_f32_reduce_max__scalar(Y->shape[0], Y->shape[1], I32(lengths), F(X), F(Y), (int32_t *)lithe__tdata(which));
    return LITHE_OK;
}
static lithe_status cpu_reduce_max_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *which,
                                            const lithe_tensor *lengths, lithe_tensor *dX) {
    (void)be;
    lithe_f32_reduce_max_backward__scalar(dY->shape[0], dY->shape[1], I32(lengths), F(dY), I32(which), F(dX));
    return LITHE_OK;
}
static lithe_status cpu_seq2col(lithe_backend *be, const lithe_tensor *X, int64_t nW, const lithe_tensor *lengths,
                                lithe_tensor *Y) {
    (void)be;
    lithe_f32_seq2col__scalar(lengths->shape[0], X->shape[1], nW, I32(lengths), F(X), F(Y));
    return LITHE_OK;
}
static lithe_status cpu_seq2col_backward(lithe_backend *be, const lithe_tensor *dY, int64_t nW,
                                         const lithe_tensor *lengths, lithe_tensor *dX) {
    (void)be;
    lithe_f32_seq2col_backward__scalar(lengths->shape[0], dX->shape[1], nW, I32(lengths), F(dY), F(dX));
    return LITHE_OK;
}

static lithe_status cpu_sparse_linear(lithe_backend *be, const lithe_tensor *keys, const lithe_tensor *values,
                                      const lithe_tensor *lengths, const lithe_tensor *W, int64_t length, bool v1,
                                      lithe_tensor *Y) {
    (void)be;
    lithe_f32_sparse_linear__scalar(Y->shape[0], Y->shape[1], I32(lengths), (const uint64_t *)lithe__tdata(keys),
                                    F(values), F(W), length, v1, F(Y));
    return LITHE_OK;
}
static lithe_status cpu_sparse_linear_backward(lithe_backend *be, const lithe_tensor *keys, const lithe_tensor *values,
                                               const lithe_tensor *lengths, const lithe_tensor *dY, int64_t length,
                                               bool v1, lithe_tensor *dW) {
    (void)be;
    lithe_f32_sparse_linear_backward__scalar(dY->shape[0], dY->shape[1], I32(lengths),
                                             (const uint64_t *)lithe__tdata(keys), F(values), F(dY), length, v1, F(dW));
    return LITHE_OK;
}
static lithe_status cpu_hash_strings(lithe_backend *be, const lithe_tensor *bytes, const lithe_tensor *offsets,
                                     uint32_t seed, lithe_tensor *out) {
    (void)be;
    lithe_u64_hash_strings__scalar(N(out), (const uint8_t *)lithe__tdata(bytes), (const int64_t *)lithe__tdata(offsets),
                                   seed, (uint64_t *)lithe__tdata(out));
    return LITHE_OK;
}

/* ---- recurrent, attention and similarity (scalar/lstm.c) ---- */
static lithe_status cpu_lstm_scan(lithe_backend *be, const lithe_tensor *Wh, const lithe_tensor *bx,
                                  const lithe_tensor *bh, const lithe_tensor *h0, const lithe_tensor *c0,
                                  const lithe_tensor *size_at_t, bool reverse, lithe_tensor *G, lithe_tensor *C,
                                  lithe_tensor *Y) {
    (void)be;
    int64_t T = size_at_t->shape[0];
    int64_t *start = lithe__malloc((size_t)(T ? T : 1) * sizeof *start);
    if (!start) return lithe__oom("lstm_scan", (size_t)T * sizeof *start);
    lithe_f32_lstm_scan__scalar(T, C->shape[1], I32(size_at_t), start, F(Wh), F(bx), F(bh), F(h0), F(c0), reverse,
                                F(G), F(C), F(Y));
    lithe__free(start);
    return LITHE_OK;
}
static lithe_status cpu_lstm_scan_backward(lithe_backend *be, const lithe_tensor *Wh, const lithe_tensor *h0,
                                           const lithe_tensor *c0, const lithe_tensor *size_at_t, bool reverse,
                                           const lithe_tensor *G, const lithe_tensor *C, const lithe_tensor *Y,
                                           lithe_tensor *dY, lithe_tensor *dC, lithe_tensor *dG, lithe_tensor *dWh) {
    (void)be;
    int64_t T = size_at_t->shape[0];
    int64_t *start = lithe__malloc((size_t)(T ? T : 1) * sizeof *start);
    if (!start) return lithe__oom("lstm_scan_backward", (size_t)T * sizeof *start);
    lithe_f32_lstm_scan_backward__scalar(T, C->shape[1], I32(size_at_t), start, F(Wh), F(h0), F(c0), reverse, F(G),
                                         F(C), F(Y), F(dY), F(dC), F(dG), F(dWh));
    lithe__free(start);
    return LITHE_OK;
}
static lithe_status cpu_para_attention(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *Q,
                                       const lithe_tensor *lengths, lithe_tensor *A, lithe_tensor *Y) {
    (void)be;
    lithe_f32_para_attention__scalar(lengths->shape[0], X->shape[1], I32(lengths), F(X), F(Q), F(A), F(Y));
    return LITHE_OK;
}
static lithe_status cpu_para_attention_backward(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *Q,
                                                const lithe_tensor *A, const lithe_tensor *lengths,
                                                const lithe_tensor *dY, lithe_tensor *dX, lithe_tensor *dQ) {
    (void)be;
    lithe_f32_para_attention_backward__scalar(lengths->shape[0], X->shape[1], I32(lengths), F(X), F(Q), F(A), F(dY),
                                              F(dX), F(dQ));
    return LITHE_OK;
}
static lithe_status cpu_cauchy_similarity(lithe_backend *be, const lithe_tensor *X1, const lithe_tensor *X2,
                                          const lithe_tensor *W, lithe_tensor *sim) {
    (void)be;
    lithe_f32_cauchy_similarity__scalar(X1->shape[0], X1->shape[1], F(X1), F(X2), F(W), F(sim));
    return LITHE_OK;
}
static lithe_status cpu_cauchy_similarity_backward(lithe_backend *be, const lithe_tensor *X1, const lithe_tensor *X2,
                                                   const lithe_tensor *W, const lithe_tensor *sim,
                                                   const lithe_tensor *dsim, lithe_tensor *dX1, lithe_tensor *dX2,
                                                   lithe_tensor *dW) {
    (void)be;
    lithe_f32_cauchy_similarity_backward__scalar(X1->shape[0], X1->shape[1], F(X1), F(X2), F(W), F(sim), F(dsim),
                                                 F(dX1), F(dX2), F(dW));
    return LITHE_OK;
}

/* ---- imported graphs: broadcast strides in the output's index space ---- */

/* Strides of `t` (contiguous) as seen from an index space of nd axes `shape`, aligned at the last
 * axis: 0 where t's extent is 1 or missing. */
static void bcast_strides(const lithe_tensor *t, int nd, const int64_t *shape, int64_t *out) {
    int64_t s = 1;
    for (int d = nd - 1, k = t->ndim - 1; d >= 0; d--, k--) {
        if (k < 0) {
            out[d] = 0;
            continue;
        }
        out[d] = t->shape[k] == 1 && shape[d] != 1 ? 0 : s;
        s *= t->shape[k];
    }
}

/* Whether strides st over axes [p, nd) of shape walk a contiguous block (1) or one value (0), or neither (-1). */
static int block_kind(int p, int nd, const int64_t *shape, const int64_t *st) {
    bool zero = true, contig = true;
    int64_t want = 1;
    for (int d = nd - 1; d >= p; d--) {
        zero = zero && (st[d] == 0 || shape[d] == 1);
        contig = contig && (st[d] == want || shape[d] == 1);
        want *= shape[d];
    }
    return contig ? 1 : zero ? 0 : -1;
}
/* Whether axes [0, p) of shape step through an operand by one row stride (written to *ld). */
static bool rows_collapse(int p, const int64_t *shape, const int64_t *st, int64_t *ld) {
    *ld = 0;
    int64_t want = -1; /* the stride of the next outer non-unit axis, once one is seen */
    for (int d = p - 1; d >= 0; d--) {
        if (shape[d] == 1) continue;
        if (want < 0) *ld = st[d];
        else if (st[d] != want) return false;
        want = st[d] * shape[d];
    }
    return true;
}
/* The common broadcasts as rows of a vector kernel: Y (R, n) where each operand's inner block is
 * a contiguous row or one value, and its rows one stride apart (same shapes, a bias row, a
 * per-row statistic, a scalar). False: the odometer loop handles it. */
static bool binary_rows(int op, const lithe_tensor *Y, const float *A, const int64_t *as, const float *B,
                        const int64_t *bs) {
    int nd = Y->ndim, p = nd;
    while (p > 0 && block_kind(p - 1, nd, Y->shape, as) >= 0 && block_kind(p - 1, nd, Y->shape, bs) >= 0) p--;
    if (p == nd) return false; /* no inner block (or a 0-D tensor): not worth a special case */
    int64_t n = 1, R = 1, lda = 0, ldb = 0;
    for (int d = p; d < nd; d++) n *= Y->shape[d];
    for (int d = 0; d < p; d++) R *= Y->shape[d];
    if (!rows_collapse(p, Y->shape, as, &lda) || !rows_collapse(p, Y->shape, bs, &ldb)) return false;
    lithe__cpu_binary_rows(op, R, n, A, lda, block_kind(p, nd, Y->shape, as) == 0, B, ldb,
                           block_kind(p, nd, Y->shape, bs) == 0, F(Y));
    return true;
}

static lithe_status cpu_bcast_binary(lithe_backend *be, int op, const lithe_tensor *A, const lithe_tensor *B,
                                     lithe_tensor *Y) {
    (void)be;
    int64_t as[LITHE_MAX_DIMS], bs[LITHE_MAX_DIMS];
    bcast_strides(A, Y->ndim, Y->shape, as);
    bcast_strides(B, Y->ndim, Y->shape, bs);
    if (op <= LITHE__BIN_DIV && binary_rows(op, Y, F(A), as, F(B), bs)) return LITHE_OK;
    lithe_f32_bcast_binary__scalar(op, Y->ndim, Y->shape, F(A), as, F(B), bs, F(Y));
    return LITHE_OK;
}

/* The adjoint of add / sub / mul where each operand is dY's shape or one row repeated over dY's
 * rows (a bias, a scale): row by row, element by element, each gradient element receiving its terms
 * in the odometer loop's order (rows ascending) and the same values (g, -g, g·b, g·a), so the
 * twin's bits; loops the compiler vectorizes in place of the odometer's per-element stride walk
 * (the transformer's residual adds and attention scales). False: the odometer handles it. */
static bool binary_backward_rows(int op, const lithe_tensor *dY, const float *A, const int64_t *as, const float *B,
                                 const int64_t *bs, float *dA, float *dB) {
    int nd = dY->ndim, p = nd;
    if (op == LITHE__BIN_DIV && !dB && block_kind(0, nd, dY->shape, bs) == 0 && block_kind(0, nd, dY->shape, as) == 1) {
        /* A / a scalar constant (attention's q / sqrt(d)): dA += g / b, the scalar kernel's sums */
        const float *g = F(dY), b = B[0];
        for (int64_t i = 0; dA && i < N(dY); i++) dA[i] += g[i] / b;
        return true;
    }
    if (op != LITHE__BIN_ADD && op != LITHE__BIN_SUB && op != LITHE__BIN_MUL) return false;
    while (p > 0 && block_kind(p - 1, nd, dY->shape, as) == 1 && block_kind(p - 1, nd, dY->shape, bs) == 1) p--;
    if (p == nd) return false;
    int64_t n = 1, R = 1, lda = 0, ldb = 0;
    for (int d = p; d < nd; d++) n *= dY->shape[d];
    for (int d = 0; d < p; d++) R *= dY->shape[d];
    if (!rows_collapse(p, dY->shape, as, &lda) || !rows_collapse(p, dY->shape, bs, &ldb)) return false;
    if ((R > 1 && lda != 0 && lda != n) || (R > 1 && ldb != 0 && ldb != n)) return false;
    const float *g = F(dY);
    for (int64_t r = 0; r < R; r++, g += n) {
        const float *a = A + r * lda, *b = B + r * ldb;
        float *da = dA ? dA + r * lda : NULL, *db = dB ? dB + r * ldb : NULL;
        if (op == LITHE__BIN_MUL) {
            if (da)
                for (int64_t i = 0; i < n; i++) da[i] += g[i] * b[i];
            if (db)
                for (int64_t i = 0; i < n; i++) db[i] += g[i] * a[i];
            continue;
        }
        if (da)
            for (int64_t i = 0; i < n; i++) da[i] += g[i];
        if (db && op == LITHE__BIN_ADD)
            for (int64_t i = 0; i < n; i++) db[i] += g[i];
        else if (db)
            for (int64_t i = 0; i < n; i++) db[i] += -g[i];
    }
    return true;
}

static lithe_status cpu_bcast_binary_backward(lithe_backend *be, int op, const lithe_tensor *A, const lithe_tensor *B,
                                              const lithe_tensor *Y, const lithe_tensor *dY, lithe_tensor *dA,
                                              lithe_tensor *dB) {
    (void)be;
    int64_t as[LITHE_MAX_DIMS], bs[LITHE_MAX_DIMS];
    bcast_strides(A, dY->ndim, dY->shape, as);
    bcast_strides(B, dY->ndim, dY->shape, bs);
    if (binary_backward_rows(op, dY, F(A), as, F(B), bs, dA ? F(dA) : NULL, dB ? F(dB) : NULL)) return LITHE_OK;
    lithe_f32_bcast_binary_backward__scalar(op, dY->ndim, dY->shape, F(A), as, F(B), bs, Y ? F(Y) : NULL, F(dY),
                                            dA ? F(dA) : NULL, dB ? F(dB) : NULL);
    return LITHE_OK;
}

static lithe_status cpu_bcast_where(lithe_backend *be, const lithe_tensor *C, const lithe_tensor *A, const lithe_tensor *B,
                                    lithe_tensor *Y) {
    (void)be;
    int64_t cs[LITHE_MAX_DIMS], as[LITHE_MAX_DIMS], bs[LITHE_MAX_DIMS];
    bcast_strides(C, Y->ndim, Y->shape, cs);
    bcast_strides(A, Y->ndim, Y->shape, as);
    bcast_strides(B, Y->ndim, Y->shape, bs);
    lithe_f32_bcast_where__scalar(Y->ndim, Y->shape, F(C), cs, F(A), as, F(B), bs, F(Y));
    return LITHE_OK;
}

static lithe_status cpu_broadcast_to(lithe_backend *be, const lithe_tensor *X, float alpha, float beta,
                                     lithe_tensor *Y) {
    (void)be;
    int64_t xs[LITHE_MAX_DIMS];
    bcast_strides(X, Y->ndim, Y->shape, xs);
    lithe_f32_broadcast_to__scalar(Y->ndim, Y->shape, F(X), xs, alpha, beta, F(Y));
    return LITHE_OK;
}

static lithe_status cpu_reduce_to(lithe_backend *be, const lithe_tensor *X, float alpha, float beta, lithe_tensor *Y) {
    (void)be;
    int64_t ys[LITHE_MAX_DIMS];
    bcast_strides(Y, X->ndim, X->shape, ys);
    lithe_f32_reduce_to__scalar(X->ndim, X->shape, F(X), N(Y), ys, alpha, beta, F(Y));
    return LITHE_OK;
}

static lithe_status cpu_unary(lithe_backend *be, int op, const lithe_tensor *X, lithe_tensor *Y) {
    (void)be;
    lithe__cpu_unary(op, N(X), F(X), F(Y));
    return LITHE_OK;
}

static lithe_status cpu_unary_backward(lithe_backend *be, int op, const lithe_tensor *X, const lithe_tensor *Y,
                                       const lithe_tensor *dY, lithe_tensor *dX) {
    (void)be;
    lithe__cpu_unary_backward(op, N(X), F(X), F(Y), F(dY), F(dX));
    return LITHE_OK;
}

static lithe_status cpu_log_softmax(lithe_backend *be, const lithe_tensor *X, lithe_tensor *Y) {
    (void)be;
    lithe__cpu_log_softmax(X->shape[0], X->shape[1], F(X), F(Y));
    return LITHE_OK;
}

static lithe_status cpu_log_softmax_backward(lithe_backend *be, const lithe_tensor *Y, const lithe_tensor *dY,
                                             lithe_tensor *dX) {
    (void)be;
    lithe__cpu_log_softmax_backward(Y->shape[0], Y->shape[1], F(Y), F(dY), F(dX));
    return LITHE_OK;
}

static lithe_status cpu_conv2d(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X, const lithe_tensor *W,
                               const lithe_tensor *b, const lithe__act *a, lithe_tensor *Y) {
    return lithe__cpu_conv2d(be, g, F(X), F(W), b ? F(b) : NULL, a, F(Y));
}

static lithe_status cpu_conv2d_backward(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X,
                                        const lithe_tensor *W, const lithe_tensor *dY, lithe_tensor *dX,
                                        lithe_tensor *dW, lithe_tensor *db) {
    (void)be;
    return lithe__cpu_conv2d_backward(be, g, F(X), F(W), F(dY), dX ? F(dX) : NULL, dW ? F(dW) : NULL,
                                      db ? F(db) : NULL);
}

static lithe_status cpu_pool2d(lithe_backend *be, const lithe__pool2d *g, const lithe_tensor *X, lithe_tensor *Y,
                               lithe_tensor *which) {
    (void)be;
    return lithe__cpu_pool2d(g, F(X), F(Y), which ? (int32_t *)lithe__tdata(which) : NULL);
}

static lithe_status cpu_pool2d_backward(lithe_backend *be, const lithe__pool2d *g, const lithe_tensor *dY,
                                        const lithe_tensor *which, lithe_tensor *dX) {
    (void)be;
    return lithe__cpu_pool2d_backward(g, F(dY), which ? (const int32_t *)lithe__tdata(which) : NULL, F(dX));
}

/* conv2d with W packed ahead as the GEMM's Wᵀ (conv/gemm.c's pixel rows read it; the same bits). */
static lithe_status cpu_conv2d_prepared(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X,
                                        const lithe_tensor *W, const void *P, const lithe_tensor *b, const lithe__act *a,
                                        lithe_tensor *Y) {
    return lithe__cpu_conv2d_packed(be, g, F(X), F(W), P, b ? F(b) : NULL, a, F(Y));
}

/* A graph's Conv + residual Add (core/graph/fuse.c): the residual in the GEMM's store. */
static lithe_status cpu_conv2d_add(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X,
                                   const lithe_tensor *W, const void *P, const lithe_tensor *b, const lithe_tensor *R,
                                   bool res_first, lithe_tensor *Y) {
    return lithe__cpu_conv2d_add(be, g, F(X), F(W), P, b ? F(b) : NULL, F(R), res_first, F(Y));
}

/* primitives.def's GEMM entries live in cpu_gemm.c; the table below names every primitive cpu_<name> */
#define cpu_gemm lithe__cpu_gemm
#define cpu_gemm_bias_act lithe__cpu_gemm_bias_act
#define cpu_gemm_q8 lithe__cpu_gemm_q8

static const lithe_backend_ops cpu_ops = {
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_upload,
    .download = cpu_download,
    .sync = cpu_sync,
#define LITHE_PRIM(name, params, args) .name = cpu_##name,
#include "../../core/primitives.def"
#undef LITHE_PRIM
    .grad_assign = true, /* conv2d_backward's dX and pool2d_backward write a fresh gradient (conv/pool.c, conv/gemm.c) */
    .relu_pool = true,   /* pool2d's relu indices, pool2d_backward skipping negative ones (conv/pool.c, scalar/graph.c) */
    .prepare_b = lithe__cpu_prepare_b,
    .prepared_free = lithe__cpu_prepared_free,
    .gemm_prepared = lithe__cpu_gemm_prepared,
#ifndef LITHE_IMPORTERS_SEPARATE
    .gemm_batched = lithe__cpu_gemm_batched,
#endif
    .conv2d_prepared = cpu_conv2d_prepared,
    .conv2d_add = cpu_conv2d_add,
    .gemm_q8x = lithe__cpu_gemm_q8x,
    .conv_q8 = lithe__cpu_conv_q8, /* (the npm core module: a hook into the importer module, importers_hooks.c) */
#ifdef LITHE_XNNPACK /* XNNPACK's operators where they measured faster (backends/cpu/xnnpack.c) */
    .prepare_op = lithe__xnn_prepare_op,
    .prepared_op_free = lithe__xnn_prepared_op_free,
    .run_prepared_op = lithe__xnn_run_prepared_op,
#endif
};

extern const lithe_backend_desc lithe__backend_cpu_desc;
static lithe_backend cpu_backend = {"cpu", true, &cpu_ops, NULL, 1 /* kDLCPU */, 0, &lithe__backend_cpu_desc};

lithe_backend *lithe__backend_cpu(void) { return &cpu_backend; }

/* "cpu" (there is one instance; a selector is refused) */
static lithe_status cpu_get(const char *name, lithe_backend **out) {
    *out = NULL;
    if (name && strcmp(name, "cpu"))
        return lithe__fail(LITHE_ERR_NOT_FOUND, "no backend named '%s' (the CPU backend is \"cpu\")", name);
    *out = &cpu_backend;
    return LITHE_OK;
}
static lithe_status cpu_set_threads(lithe_backend *be, int n) {
    (void)be;
    return lithe__cpu_set_threads(n);
}
static int cpu_threads(const lithe_backend *be) {
    (void)be;
    return lithe__cpu_threads();
}

const lithe_backend_desc lithe__backend_cpu_desc = {
    .api_version = LITHE_BACKEND_API_VERSION,
    .name = "cpu",
    .dl_device_type = 1, /* kDLCPU */
    .get = cpu_get,
    .set_threads = cpu_set_threads,
    .threads = cpu_threads,
    .cache_flush = lithe__cpu_cache_flush,
    .memory_stats = lithe__cpu_memory_stats,
    .memory_peak = lithe__cpu_memory_peak,
    .persistent_allocs = lithe__cpu_persistent_allocs,
};
