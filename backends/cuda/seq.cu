/* Sequences, recurrence, attention and similarity: Ragged reductions and their backprops,
 * seq2col, ParametricAttention, CauchySimilarity and the LSTM scan (backends/cpu/scalar/seq.c,
 * lstm.c). Lengths and size_at_t are host int32 (or on this device): the host turns them into
 * row starts and row -> sequence maps, uploaded as scratch. Sums run in the CPU's order: one
 * thread owns each output and walks its inputs as the CPU's loop does. */
#include "common.cuh"
#include "../common/rows.h"

/* Reads a host (or this device's) tensor's bytes into dst. */
static lithe_status read_small(lc_ctx *c, const lithe_tensor *t, void *dst, size_t n) {
    if (!n) return LITHE_OK;
    if (t->storage->backend->host_memory) {
        memcpy(dst, lc_host_ptr(t), n);
        return LITHE_OK;
    }
    return lc_d2h(c, dst, lc_ptr(t), n);
}

lithe_status lc_seq_index(lc_ctx *c, const lithe_tensor *lengths, int64_t **starts, int32_t **row_seq, int64_t *N) {
    *starts = NULL;
    if (row_seq) *row_seq = NULL;
    int64_t B = lengths->numel;
    int32_t *len = (int32_t *)LC_MALLOC((size_t)(B ? B : 1) * 4);
    int64_t *st = (int64_t *)LC_MALLOC((size_t)(B + 1) * 8);
    int32_t *rs = NULL;
    lithe_status s = !len || !st ? LC_FAIL(LITHE_ERR_OOM, "cuda: sequence index of %lld lengths", (long long)B)
                                 : read_small(c, lengths, len, (size_t)B * 4);
    int64_t n = 0;
    for (int64_t b = 0; s == LITHE_OK && b < B; b++) {
        st[b] = n;
        n += len[b] > 0 ? len[b] : 0;
    }
    if (s == LITHE_OK) {
        st[B] = n;
        *N = n;
        if (row_seq) {
            rs = (int32_t *)LC_MALLOC((size_t)(n ? n : 1) * 4);
            if (!rs) s = LC_FAIL(LITHE_ERR_OOM, "cuda: row map of %lld rows", (long long)n);
            for (int64_t b = 0; s == LITHE_OK && b < B; b++)
                for (int64_t r = st[b]; r < st[b + 1]; r++) rs[r] = (int32_t)b;
        }
    }
    if (s == LITHE_OK) s = lc_upload_scratch(c, st, (size_t)(B + 1) * 8, (void **)starts);
    if (s == LITHE_OK && row_seq) {
        s = lc_upload_scratch(c, rs, (size_t)(n ? n : 1) * 4, (void **)row_seq);
        if (s != LITHE_OK) {
            lc_free(c, *starts);
            *starts = NULL;
        }
    }
    LC_FREE(len);
    LC_FREE(st);
    LC_FREE(rs);
    return s;
}

/* ---- Ragged reductions ---- */

static LC_HD inline float inv_len(int64_t n) { return n ? (float)(1.0 / (double)n) : 0.0f; }

LC_KERNEL(k_reduce_sum, (const lc_thread &t, int64_t B, int64_t O, const int64_t *st, const float *X, bool mean, float *Y)) {
    LC_FOR(t, q, B * O) {
        int64_t b = q / O, j = q % O;
        float scale = inv_len(st[b + 1] - st[b]), y = 0.0f;
        for (int64_t r = st[b]; r < st[b + 1]; r++) y += mean ? X[r * O + j] * scale : X[r * O + j];
        Y[q] = y;
    }
}
LC_KERNEL(k_reduce_sum_backward, (const lc_thread &t, int64_t N, int64_t O, const int64_t *st, const int32_t *rs,
                                  const float *dY, bool mean, float *dX)) {
    LC_FOR(t, q, N * O) {
        int64_t r = q / O, j = q % O, b = rs[r];
        float scale = inv_len(st[b + 1] - st[b]);
        dX[q] = mean ? dY[b * O + j] * scale : dY[b * O + j];
    }
}
LC_KERNEL(k_reduce_max, (const lc_thread &t, int64_t B, int64_t O, const int64_t *st, const float *X, float *Y, int32_t *which)) {
    LC_FOR(t, q, B * O) {
        int64_t b = q / O, j = q % O;
        float y = X[st[b] * O + j];
        int32_t w = 0;
        for (int64_t r = st[b] + 1; r < st[b + 1]; r++)
            if (X[r * O + j] > y) {
                y = X[r * O + j];
                w = (int32_t)(r - st[b]);
            }
        Y[q] = y;
        which[q] = w;
    }
}
LC_KERNEL(k_reduce_max_backward, (const lc_thread &t, int64_t N, int64_t O, const int64_t *st, const int32_t *rs,
                                  const float *dY, const int32_t *which, float *dX)) {
    LC_FOR(t, q, N * O) {
        int64_t r = q / O, j = q % O, b = rs[r];
        dX[q] = which[b * O + j] == (int32_t)(r - st[b]) ? dY[b * O + j] : 0.0f;
    }
}

lithe_status cu_reduce_sum(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *lengths, bool mean,
                                  lithe_tensor *Y) {
    lc_ctx *c = lc_of(be);
    int64_t *st = NULL, N = 0;
    LITHE__TRY(lc_seq_index(c, lengths, &st, NULL, &N));
    lithe_status s = lc_launch<k_reduce_sum>(c, Y->numel, Y->shape[0], Y->shape[1], (const int64_t *)st,
                                             (const float *)lc_f(X), mean, lc_f(Y));
    lc_free(c, st);
    return s;
}
lithe_status cu_reduce_sum_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *lengths,
                                           bool mean, lithe_tensor *dX) {
    lc_ctx *c = lc_of(be);
    int64_t *st = NULL, N = 0;
    int32_t *rs = NULL;
    LITHE__TRY(lc_seq_index(c, lengths, &st, &rs, &N));
    int64_t O = dY->shape[1];
    lithe_status s = lc_launch<k_reduce_sum_backward>(c, N * O, N, O, (const int64_t *)st, (const int32_t *)rs,
                                                      (const float *)lc_f(dY), mean, lc_f(dX));
    lc_free(c, st);
    lc_free(c, rs);
    return s;
}
lithe_status cu_reduce_max(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *lengths, lithe_tensor *Y,
                                  lithe_tensor *which) {
    lc_ctx *c = lc_of(be);
    int64_t *st = NULL, N = 0;
    LITHE__TRY(lc_seq_index(c, lengths, &st, NULL, &N));
    lithe_status s = lc_launch<k_reduce_max>(c, Y->numel, Y->shape[0], Y->shape[1], (const int64_t *)st,
                                             (const float *)lc_f(X), lc_f(Y), (int32_t *)lc_ptr(which));
    lc_free(c, st);
    return s;
}
lithe_status cu_reduce_max_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *which,
                                           const lithe_tensor *lengths, lithe_tensor *dX) {
    lc_ctx *c = lc_of(be);
    int64_t *st = NULL, N = 0;
    int32_t *rs = NULL;
    LITHE__TRY(lc_seq_index(c, lengths, &st, &rs, &N));
    int64_t O = dY->shape[1];
    lithe_status s = lc_launch<k_reduce_max_backward>(c, N * O, N, O, (const int64_t *)st, (const int32_t *)rs,
                                                      (const float *)lc_f(dY), (const int32_t *)lc_ptr(which), lc_f(dX));
    lc_free(c, st);
    lc_free(c, rs);
    return s;
}

/* ---- seq2col ---- */

LC_KERNEL(k_seq2col, (const lc_thread &t, int64_t N, int64_t I, int64_t nW, const int64_t *st, const int32_t *rs,
                      const float *X, float *Y)) {
    int64_t nF = 2 * nW + 1;
    LC_FOR(t, q, N * nF * I) {
        int64_t j = q / (nF * I), f = (q / I) % nF, k = q % I, b = rs[j];
        int64_t src = j - nW + f;
        Y[q] = src >= st[b] && src < st[b + 1] ? X[src * I + k] : 0.0f;
    }
}
/* dX[dst] = sum over the window slots it was copied into, in the CPU's order: source rows j
 * ascending, i.e. slots f = dst + nW - j descending */
LC_KERNEL(k_seq2col_backward, (const lc_thread &t, int64_t N, int64_t I, int64_t nW, const int64_t *st, const int32_t *rs,
                               const float *dY, float *dX)) {
    int64_t nF = 2 * nW + 1;
    LC_FOR(t, q, N * I) {
        int64_t dst = q / I, k = q % I, b = rs[dst];
        float acc = 0.0f;
        for (int64_t f = nF - 1; f >= 0; f--) {
            int64_t j = dst + nW - f;
            if (j < st[b] || j >= st[b + 1]) continue;
            acc += dY[j * nF * I + f * I + k];
        }
        dX[q] = acc;
    }
}
lithe_status cu_seq2col(lithe_backend *be, const lithe_tensor *X, int64_t nW, const lithe_tensor *lengths,
                               lithe_tensor *Y) {
    lc_ctx *c = lc_of(be);
    int64_t *st = NULL, N = 0;
    int32_t *rs = NULL;
    LITHE__TRY(lc_seq_index(c, lengths, &st, &rs, &N));
    int64_t I = X->shape[1];
    lithe_status s = lc_launch<k_seq2col>(c, N * (2 * nW + 1) * I, N, I, nW, (const int64_t *)st, (const int32_t *)rs,
                                          (const float *)lc_f(X), lc_f(Y));
    lc_free(c, st);
    lc_free(c, rs);
    return s;
}
lithe_status cu_seq2col_backward(lithe_backend *be, const lithe_tensor *dY, int64_t nW,
                                        const lithe_tensor *lengths, lithe_tensor *dX) {
    lc_ctx *c = lc_of(be);
    int64_t *st = NULL, N = 0;
    int32_t *rs = NULL;
    LITHE__TRY(lc_seq_index(c, lengths, &st, &rs, &N));
    int64_t I = dX->shape[1];
    lithe_status s = lc_launch<k_seq2col_backward>(c, N * I, N, I, nW, (const int64_t *)st, (const int32_t *)rs,
                                                   (const float *)lc_f(dY), lc_f(dX));
    lc_free(c, st);
    lc_free(c, rs);
    return s;
}

/* ---- ParametricAttention ---- */

/* A[r] = exp(clip(X[r] · Q, -20, 20)) */
LC_KERNEL(k_att_scores, (const lc_thread &t, int64_t N, int64_t O, const float *X, const float *Q, float *A)) {
    LC_FOR(t, r, N) {
        float s = 0.0f;
        for (int64_t j = 0; j < O; j++) s += X[r * O + j] * Q[j];
        s = s < -20.0f ? -20.0f : s > 20.0f ? 20.0f : s;
        A[r] = expf(s);
    }
}
/* per sequence: sum of v[r] (or of A[r] * v[r] when A is given), rows in order, in float */
LC_KERNEL(k_seq_sums, (const lc_thread &t, int64_t B, const int64_t *st, const float *A, const float *v, float *out)) {
    LC_FOR(t, b, B) {
        float s = 0.0f;
        for (int64_t r = st[b]; r < st[b + 1]; r++) s += A ? A[r] * v[r] : v[r];
        out[b] = s;
    }
}
LC_KERNEL(k_att_apply, (const lc_thread &t, int64_t N, int64_t O, const int32_t *rs, const float *sums, const float *X,
                        float *A, float *Y)) {
    LC_FOR(t, r, N) {
        float a = A[r] / sums[rs[r]];
        A[r] = a;
        for (int64_t j = 0; j < O; j++) Y[r * O + j] = X[r * O + j] * a;
    }
}
lithe_status cu_para_attention(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *Q,
                                      const lithe_tensor *lengths, lithe_tensor *A, lithe_tensor *Y) {
    lc_ctx *c = lc_of(be);
    int64_t *st = NULL, N = 0, B = lengths->numel, O = X->shape[1];
    int32_t *rs = NULL;
    void *sums = NULL;
    LITHE__TRY(lc_seq_index(c, lengths, &st, &rs, &N));
    lithe_status s = lc_alloc(c, (size_t)(B ? B : 1) * 4, &sums);
    if (s == LITHE_OK) s = lc_launch<k_att_scores>(c, N, N, O, (const float *)lc_f(X), (const float *)lc_f(Q), lc_f(A));
    if (s == LITHE_OK)
        s = lc_launch<k_seq_sums>(c, B, B, (const int64_t *)st, (const float *)NULL, (const float *)lc_f(A), (float *)sums);
    if (s == LITHE_OK)
        s = lc_launch<k_att_apply>(c, N, N, O, (const int32_t *)rs, (const float *)sums, (const float *)lc_f(X), lc_f(A),
                                   lc_f(Y));
    lc_free(c, sums);
    lc_free(c, st);
    lc_free(c, rs);
    return s;
}

/* da[r] = X[r] · dY[r] */
LC_KERNEL(k_att_da, (const lc_thread &t, int64_t N, int64_t O, const float *X, const float *dY, float *da)) {
    LC_FOR(t, r, N) {
        float s = 0.0f;
        for (int64_t j = 0; j < O; j++) s += X[r * O + j] * dY[r * O + j];
        da[r] = s;
    }
}
/* ds[r] = A da - A tot (overwrites da) */
LC_KERNEL(k_att_ds, (const lc_thread &t, int64_t N, const int32_t *rs, const float *A, const float *tot, float *da)) {
    LC_FOR(t, r, N) da[r] = A[r] * da[r] - A[r] * tot[rs[r]];
}
LC_KERNEL(k_att_dx, (const lc_thread &t, int64_t N, int64_t O, const float *A, const float *ds, const float *Q,
                     const float *dY, float *dX)) {
    LC_FOR(t, q, N * O) {
        int64_t r = q / O, j = q % O;
        dX[q] = dY[q] * A[r] + ds[r] * Q[j];
    }
}
LC_KERNEL(k_att_dq, (const lc_thread &t, int64_t N, int64_t O, const float *X, const float *ds, float *dQ)) {
    LC_FOR(t, j, O) {
        float acc = dQ[j];
        for (int64_t r = 0; r < N; r++) acc += X[r * O + j] * ds[r];
        dQ[j] = acc;
    }
}
lithe_status cu_para_attention_backward(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *Q,
                                               const lithe_tensor *A, const lithe_tensor *lengths,
                                               const lithe_tensor *dY, lithe_tensor *dX, lithe_tensor *dQ) {
    lc_ctx *c = lc_of(be);
    int64_t *st = NULL, N = 0, B = lengths->numel, O = X->shape[1];
    int32_t *rs = NULL;
    void *tot = NULL, *da = NULL;
    LITHE__TRY(lc_seq_index(c, lengths, &st, &rs, &N));
    lithe_status s = lc_alloc(c, (size_t)(B ? B : 1) * 4, &tot);
    if (s == LITHE_OK) s = lc_alloc(c, (size_t)(N ? N : 1) * 4, &da);
    if (s == LITHE_OK)
        s = lc_launch<k_att_da>(c, N, N, O, (const float *)lc_f(X), (const float *)lc_f(dY), (float *)da);
    if (s == LITHE_OK)
        s = lc_launch<k_seq_sums>(c, B, B, (const int64_t *)st, (const float *)lc_f(A), (const float *)da, (float *)tot);
    if (s == LITHE_OK)
        s = lc_launch<k_att_ds>(c, N, N, (const int32_t *)rs, (const float *)lc_f(A), (const float *)tot, (float *)da);
    if (s == LITHE_OK)
        s = lc_launch<k_att_dq>(c, O, N, O, (const float *)lc_f(X), (const float *)da, lc_f(dQ));
    if (s == LITHE_OK)
        s = lc_launch<k_att_dx>(c, N * O, N, O, (const float *)lc_f(A), (const float *)da, (const float *)lc_f(Q),
                                (const float *)lc_f(dY), lc_f(dX));
    lc_free(c, tot);
    lc_free(c, da);
    lc_free(c, st);
    lc_free(c, rs);
    return s;
}

/* ---- CauchySimilarity ---- */

LC_KERNEL(k_cauchy, (const lc_thread &t, int64_t B, int64_t I, const float *X1, const float *X2, const float *W, float *sim)) {
    LC_FOR(t, b, B) {
        float tot = 0.0f;
        for (int64_t j = 0; j < I; j++) {
            float d = X1[b * I + j] - X2[b * I + j];
            tot += W[j] * (d * d);
        }
        sim[b] = 1.0f / (1.0f + tot);
    }
}
LC_KERNEL(k_cauchy_dx, (const lc_thread &t, int64_t B, int64_t I, const float *X1, const float *X2, const float *W,
                        const float *sim, const float *dsim, float *dX1, float *dX2)) {
    LC_FOR(t, q, B * I) {
        int64_t b = q / I, j = q % I;
        float inv = sim[b], dt = dsim[b] * (-(inv * inv)), d = X1[q] - X2[q];
        float dd = 2.0f * (W[j] * dt) * d;
        dX1[q] = dd;
        dX2[q] = -dd;
    }
}
LC_KERNEL(k_cauchy_dw, (const lc_thread &t, int64_t B, int64_t I, const float *X1, const float *X2, const float *sim,
                        const float *dsim, float *dW)) {
    LC_FOR(t, j, I) {
        float acc = dW[j];
        for (int64_t b = 0; b < B; b++) {
            float inv = sim[b], dt = dsim[b] * (-(inv * inv)), d = X1[b * I + j] - X2[b * I + j];
            acc += dt * (d * d);
        }
        dW[j] = acc;
    }
}
lithe_status cu_cauchy_similarity(lithe_backend *be, const lithe_tensor *X1, const lithe_tensor *X2,
                                         const lithe_tensor *W, lithe_tensor *sim) {
    return lc_launch<k_cauchy>(lc_of(be), X1->shape[0], X1->shape[0], X1->shape[1], (const float *)lc_f(X1),
                               (const float *)lc_f(X2), (const float *)lc_f(W), lc_f(sim));
}
lithe_status cu_cauchy_similarity_backward(lithe_backend *be, const lithe_tensor *X1, const lithe_tensor *X2,
                                                  const lithe_tensor *W, const lithe_tensor *sim,
                                                  const lithe_tensor *dsim, lithe_tensor *dX1, lithe_tensor *dX2,
                                                  lithe_tensor *dW) {
    lc_ctx *c = lc_of(be);
    int64_t B = X1->shape[0], I = X1->shape[1];
    LITHE__TRY(lc_launch<k_cauchy_dw>(c, I, B, I, (const float *)lc_f(X1), (const float *)lc_f(X2),
                                      (const float *)lc_f(sim), (const float *)lc_f(dsim), lc_f(dW)));
    return lc_launch<k_cauchy_dx>(c, B * I, B, I, (const float *)lc_f(X1), (const float *)lc_f(X2), (const float *)lc_f(W),
                                  (const float *)lc_f(sim), (const float *)lc_f(dsim), lc_f(dX1), lc_f(dX2));
}

/* ---- LSTM: one timestep at a time (the recurrence is sequential), each step a few launches
 * over its rows. Row r = start[t] + b; the previous step's row p as in scalar/lstm.c. ---- */

static LC_HD inline float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

/* g[r, j] += Wh[j] · h_prev + (bx[j] + bh[j]) for the step's rows (b < n) */
LC_KERNEL(k_lstm_pre, (const lc_thread &t, int64_t n, int64_t H, int64_t r0, int64_t p0, int64_t np, const float *Wh,
                       const float *bx, const float *bh, const float *h0, const float *Y, float *G)) {
    LC_FOR(t, q, n * 4 * H) {
        int64_t b = q / (4 * H), j = q % (4 * H);
        const float *hp = p0 >= 0 && b < np ? Y + (p0 + b) * H : h0, *w = Wh + j * H;
        float acc = 0.0f;
        for (int64_t k = 0; k < H; k++) acc += w[k] * hp[k];
        G[(r0 + b) * 4 * H + j] += acc + (bx[j] + bh[j]);
    }
}
LC_KERNEL(k_lstm_gates, (const lc_thread &t, int64_t n, int64_t H, int64_t r0, int64_t p0, int64_t np, const float *c0,
                         float *G, float *C, float *Y)) {
    LC_FOR(t, q, n * H) {
        int64_t b = q / H, h = q % H, r = r0 + b;
        const float *cp = p0 >= 0 && b < np ? C + (p0 + b) * H : c0;
        float *g = G + r * 4 * H;
        float f = sigm(g[h]), i = sigm(g[H + h]), o = sigm(g[2 * H + h]), cc = tanhf(g[3 * H + h]);
        float cv = f * cp[h] + i * cc;
        g[h] = f, g[H + h] = i, g[2 * H + h] = o, g[3 * H + h] = cc;
        C[r * H + h] = cv;
        Y[r * H + h] = tanhf(cv) * o;
    }
}

/* The previous step's first row and how many of this step's rows have one. */
static void prev_of(int64_t T, const int32_t *sz, const int64_t *start, bool reverse, int64_t t, int64_t *p0,
                    int64_t *np) {
    if (!reverse) {
        *p0 = t > 0 ? start[t - 1] : -1;
        *np = t > 0 ? sz[t] : 0; /* size_at_t is non-increasing: every row of step t has one */
    } else {
        *p0 = t + 1 < T ? start[t + 1] : -1;
        *np = t + 1 < T ? sz[t + 1] : 0;
    }
}

static lithe_status lstm_steps(lc_ctx *c, const lithe_tensor *size_at_t, int32_t **sz, int64_t **start, int64_t *T) {
    *T = size_at_t->numel;
    *sz = (int32_t *)LC_MALLOC((size_t)(*T ? *T : 1) * 4);
    *start = (int64_t *)LC_MALLOC((size_t)(*T ? *T : 1) * 8);
    if (!*sz || !*start) return LC_FAIL(LITHE_ERR_OOM, "cuda lstm: %lld steps", (long long)*T);
    lithe_status s = read_small(c, size_at_t, *sz, (size_t)*T * 4);
    int64_t acc = 0;
    for (int64_t t = 0; s == LITHE_OK && t < *T; t++) {
        (*start)[t] = acc;
        acc += (*sz)[t];
    }
    return s;
}

lithe_status cu_lstm_scan(lithe_backend *be, const lithe_tensor *Wh, const lithe_tensor *bx, const lithe_tensor *bh,
                                 const lithe_tensor *h0, const lithe_tensor *c0, const lithe_tensor *size_at_t,
                                 bool reverse, lithe_tensor *G, lithe_tensor *C, lithe_tensor *Y) {
    lc_ctx *c = lc_of(be);
    int32_t *sz = NULL;
    int64_t *start = NULL, T = 0, H = C->shape[1];
    lithe_status s = lstm_steps(c, size_at_t, &sz, &start, &T);
    for (int64_t k = 0; s == LITHE_OK && k < T; k++) {
        int64_t t = reverse ? T - 1 - k : k, p0, np;
        prev_of(T, sz, start, reverse, t, &p0, &np);
        s = lc_launch<k_lstm_pre>(c, (int64_t)sz[t] * 4 * H, (int64_t)sz[t], H, start[t], p0, np, (const float *)lc_f(Wh),
                                  (const float *)lc_f(bx), (const float *)lc_f(bh), (const float *)lc_f(h0),
                                  (const float *)lc_f(Y), lc_f(G));
        if (s == LITHE_OK)
            s = lc_launch<k_lstm_gates>(c, (int64_t)sz[t] * H, (int64_t)sz[t], H, start[t], p0, np,
                                        (const float *)lc_f(c0), lc_f(G), lc_f(C), lc_f(Y));
    }
    LC_FREE(sz);
    LC_FREE(start);
    return s;
}

/* dG for the step's rows and dC of their previous rows */
LC_KERNEL(k_lstm_dg, (const lc_thread &t, int64_t n, int64_t H, int64_t r0, int64_t p0, int64_t np, const float *c0,
                      const float *G, const float *C, const float *dY, float *dC, float *dG)) {
    LC_FOR(t, q, n * H) {
        int64_t b = q / H, h = q % H, r = r0 + b;
        bool has_p = p0 >= 0 && b < np;
        const float *g = G + r * 4 * H, *cp = has_p ? C + (p0 + b) * H : c0;
        float *dg = dG + r * 4 * H;
        float dc = lithe__lstm_dgates(H, h, g, cp[h], C[r * H + h], dY[r * H + h], dC[r * H + h], dg);
        if (has_p) dC[(p0 + b) * H + h] = dc * g[h];
    }
}
/* dY[p, h] += sum_j dg[j] Wh[j, h], j ascending (the CPU's order) */
LC_KERNEL(k_lstm_dh, (const lc_thread &t, int64_t np, int64_t H, int64_t r0, int64_t p0, const float *Wh, const float *dG,
                      float *dY)) {
    LC_FOR(t, q, np * H) {
        int64_t b = q / H, h = q % H;
        const float *dg = dG + (r0 + b) * 4 * H;
        float acc = dY[(p0 + b) * H + h];
        for (int64_t j = 0; j < 4 * H; j++) acc += dg[j] * Wh[j * H + h];
        dY[(p0 + b) * H + h] = acc;
    }
}
/* dWh[j, h] += dg[r, j] h_prev[h] over the step's rows in order */
LC_KERNEL(k_lstm_dwh, (const lc_thread &t, int64_t n, int64_t H, int64_t r0, int64_t p0, int64_t np, const float *h0,
                       const float *Y, const float *dG, float *dWh)) {
    LC_FOR(t, q, 4 * H * H) {
        int64_t j = q / H, h = q % H;
        float acc = dWh[q];
        for (int64_t b = 0; b < n; b++) {
            const float *hp = p0 >= 0 && b < np ? Y + (p0 + b) * H : h0;
            acc += dG[(r0 + b) * 4 * H + j] * hp[h];
        }
        dWh[q] = acc;
    }
}

lithe_status cu_lstm_scan_backward(lithe_backend *be, const lithe_tensor *Wh, const lithe_tensor *h0,
                                          const lithe_tensor *c0, const lithe_tensor *size_at_t, bool reverse,
                                          const lithe_tensor *G, const lithe_tensor *C, const lithe_tensor *Y,
                                          lithe_tensor *dY, lithe_tensor *dC, lithe_tensor *dG, lithe_tensor *dWh) {
    lc_ctx *c = lc_of(be);
    int32_t *sz = NULL;
    int64_t *start = NULL, T = 0, H = C->shape[1];
    lithe_status s = lstm_steps(c, size_at_t, &sz, &start, &T);
    if (s == LITHE_OK) s = lc_memset0(c, lc_ptr(dC), (size_t)dC->numel * 4);
    for (int64_t k = T - 1; s == LITHE_OK && k >= 0; k--) {
        int64_t t = reverse ? T - 1 - k : k, p0, np, n = sz[t];
        prev_of(T, sz, start, reverse, t, &p0, &np);
        if (p0 < 0) np = 0;
        s = lc_launch<k_lstm_dg>(c, n * H, n, H, start[t], p0, np, (const float *)lc_f(c0), (const float *)lc_f(G),
                                 (const float *)lc_f(C), (const float *)lc_f(dY), lc_f(dC), lc_f(dG));
        if (s == LITHE_OK && np > 0)
            s = lc_launch<k_lstm_dh>(c, (np < n ? np : n) * H, np < n ? np : n, H, start[t], p0,
                                     (const float *)lc_f(Wh), (const float *)lc_f(dG), lc_f(dY));
        if (s == LITHE_OK && n > 0)
            s = lc_launch<k_lstm_dwh>(c, 4 * H * H, n, H, start[t], p0, np, (const float *)lc_f(h0),
                                      (const float *)lc_f(Y), (const float *)lc_f(dG), lc_f(dWh));
    }
    LC_FREE(sz);
    LC_FREE(start);
    return s;
}

