/* The WebGPU backend's recurrent, attention and similarity primitives: the LSTM scan and its
 * backward (shaders lstm_mat.wgsl, lstm_cell.wgsl), ParametricAttention and CauchySimilarity
 * (attention.wgsl); ports of backends/vulkan's recur.comp. The LSTM's host walks the T steps and
 * queues each step's dispatches (the queue orders a step after the one before); every sum runs in
 * the CPU's order, so only exp differs from libm in the last bits. */
#include "ops_rest.h"

static lithe_status all_dense(const char *op, const lithe_tensor *const *ts, size_t n) {
    for (size_t i = 0; i < n; i++) LITHE__TRY(lithe__wg_dense(op, ts[i]));
    return LITHE_OK;
}
#define ALL_DENSE(op, ...)                                                                               \
    all_dense(op, (const lithe_tensor *const[]){__VA_ARGS__},                                            \
              sizeof((const lithe_tensor *const[]){__VA_ARGS__}) / sizeof(const lithe_tensor *))

/* size_at_t (T,) int32, read on the host, into steps (T,) and row starts (T,). */
static lithe_status lstm_steps(const char *op, const lithe_tensor *size_at_t, int32_t **steps, int64_t **start) {
    int64_t T = size_at_t->numel;
    *steps = NULL;
    *start = NULL;
    if (size_at_t->dtype != LITHE_I32)
        return lithe__fail(LITHE_ERR_DTYPE, "webgpu %s: size_at_t must be int32, got %s", op,
                           lithe_dtype_name(size_at_t->dtype));
    *steps = lithe__malloc((size_t)T * 4 + 4);
    *start = lithe__malloc((size_t)T * 8 + 8);
    if (!*steps || !*start) return lithe__oom(op, (size_t)T * 12);
    if (T) LITHE__TRY(lithe_tensor_read(size_at_t, *steps, (size_t)T * 4));
    int64_t s = 0;
    for (int64_t t = 0; t < T; t++) {
        (*start)[t] = s;
        s += (*steps)[t];
        if ((*steps)[t] < 0 || s >= (1 << 28))
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: step size %d at %lld", op, (*steps)[t], (long long)t);
    }
    return LITHE_OK;
}

/* Step t's parameters (lstm_mat.wgsl): H, rows, first row, the previous step's first row and how
 * many rows have a previous step (l2r: t - 1, all rows; r2l: t + 1, its size). */
static lithe__wg_params lstm_step(int64_t T, int64_t H, const int32_t *steps, const int64_t *start, bool reverse, int64_t t) {
    int64_t pt = reverse ? t + 1 : t - 1;
    bool has = pt >= 0 && pt < T;
    int64_t np = !has ? 0 : reverse ? (steps[pt] < steps[t] ? steps[pt] : steps[t]) : steps[t];
    lithe__wg_params p = {.u = {(uint32_t)H, (uint32_t)steps[t], (uint32_t)start[t], has ? (uint32_t)start[pt] : 0u,
                                (uint32_t)np}};
    return p;
}

lithe_status wg_lstm_scan(lithe_backend *be, const lithe_tensor *Wh, const lithe_tensor *bx, const lithe_tensor *bh,
                          const lithe_tensor *h0, const lithe_tensor *c0, const lithe_tensor *size_at_t, bool reverse,
                          lithe_tensor *G, lithe_tensor *C, lithe_tensor *Y) {
    LITHE__TRY(ALL_DENSE("lstm_scan", Wh, bx, bh, h0, c0, G, C, Y));
    int32_t *steps = NULL;
    int64_t *start = NULL, T = size_at_t->numel, H = C->shape[1];
    lithe_status s = lstm_steps("lstm_scan", size_at_t, &steps, &start);
    for (int64_t k = 0; s == LITHE_OK && k < T && H; k++) {
        int64_t t = reverse ? T - 1 - k : k;
        if (!steps[t]) continue;
        lithe__wg_params p = lstm_step(T, H, steps, start, reverse, t), p2 = p;
        s = WG_DISPATCH("lstm_scan", lstm_mat, 0, &p, 1u, lithe__wg_groups(steps[t] * 4 * H), 1, G, Wh, bx, bh, Y, h0);
        if (s == LITHE_OK)
            s = WG_DISPATCH("lstm_scan", lstm_cell, 0, &p2, 7u, lithe__wg_groups(steps[t] * H), 1, G, C, Y, c0, NULL, NULL);
    }
    lithe__free(steps);
    lithe__free(start);
    return s;
}

lithe_status wg_lstm_scan_backward(lithe_backend *be, const lithe_tensor *Wh, const lithe_tensor *h0,
                                   const lithe_tensor *c0, const lithe_tensor *size_at_t, bool reverse,
                                   const lithe_tensor *G, const lithe_tensor *C, const lithe_tensor *Y, lithe_tensor *dY,
                                   lithe_tensor *dC, lithe_tensor *dG, lithe_tensor *dWh) {
    LITHE__TRY(ALL_DENSE("lstm_scan_backward", Wh, h0, c0, G, C, Y, dY, dC, dG, dWh));
    int32_t *steps = NULL;
    int64_t *start = NULL, T = size_at_t->numel, H = C->shape[1];
    lithe_status s = lstm_steps("lstm_scan_backward", size_at_t, &steps, &start);
    if (s == LITHE_OK) s = wg_fill(be, dC, 0.0f);
    /* the reverse of processing order, as the CPU walks it */
    for (int64_t k = T - 1; s == LITHE_OK && k >= 0 && H; k--) {
        int64_t t = reverse ? T - 1 - k : k;
        if (!steps[t]) continue;
        lithe__wg_params p = lstm_step(T, H, steps, start, reverse, t), p2 = p, p3 = p;
        s = WG_DISPATCH("lstm_scan_backward", lstm_cell, 1, &p, 7u, lithe__wg_groups(steps[t] * H), 1, dG, dC, dY, c0, G,
                        C);
        if (s == LITHE_OK && p.u[4])
            s = WG_DISPATCH("lstm_scan_backward", lstm_mat, 1, &p2, 1u, lithe__wg_groups((int64_t)p.u[4] * H), 1, dY, Wh,
                            dG, NULL, NULL, NULL);
        if (s == LITHE_OK)
            s = WG_DISPATCH("lstm_scan_backward", lstm_mat, 2, &p3, 1u, lithe__wg_groups(4 * H * H), 1, dWh, NULL, dG,
                            NULL, Y, h0);
    }
    lithe__free(steps);
    lithe__free(start);
    return s;
}

lithe_status wg_para_attention(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *Q,
                               const lithe_tensor *lengths, lithe_tensor *A, lithe_tensor *Y) {
    LITHE__TRY(ALL_DENSE("para_attention", X, Q, A, Y));
    lithe_tensor *st = NULL, *Tot = NULL;
    int64_t N = 0, B = lengths->numel, O = X->shape[1];
    LITHE__TRY(lithe__wg_seq_starts(be, "para_attention", lengths, &N, &st));
    lithe_status s = N ? lithe__wg_scratch(be, (size_t)B, &Tot) : LITHE_OK;
    lithe__wg_params p[4];
    for (int i = 0; i < 4; i++) p[i] = (lithe__wg_params){.u = {(uint32_t)B, (uint32_t)O, (uint32_t)N, 0}};
    /* A = exp(clip(X · Q)); Tot = each sequence's sum; A /= Tot; Y = X * A */
    if (s == LITHE_OK && N) s = WG_DISPATCH("para_attention", attention, 0, &p[0], 1u, lithe__wg_groups(N), 1, A, X, Q, NULL, NULL, NULL);
    if (s == LITHE_OK && N)
        s = WG_DISPATCH("para_attention", attention, 1, &p[1], 1u, lithe__wg_groups(B), 1, Tot, A, NULL, NULL, NULL, st);
    if (s == LITHE_OK && N)
        s = WG_DISPATCH("para_attention", attention, 2, &p[2], 1u, lithe__wg_groups(N), 1, A, Tot, NULL, NULL, NULL, st);
    if (s == LITHE_OK && N && O)
        s = WG_DISPATCH("para_attention", attention, 3, &p[3], 1u, lithe__wg_groups(N * O), 1, Y, X, A, NULL, NULL, NULL);
    lithe_tensor_release(Tot);
    lithe_tensor_release(st);
    return s;
}

lithe_status wg_para_attention_backward(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *Q,
                                        const lithe_tensor *A, const lithe_tensor *lengths, const lithe_tensor *dY,
                                        lithe_tensor *dX, lithe_tensor *dQ) {
    LITHE__TRY(ALL_DENSE("para_attention_backward", X, Q, A, dY, dX, dQ));
    lithe_tensor *st = NULL, *S = NULL, *Tot = NULL;
    int64_t N = 0, B = lengths->numel, O = X->shape[1];
    LITHE__TRY(lithe__wg_seq_starts(be, "para_attention_backward", lengths, &N, &st));
    if (!N) {
        lithe_tensor_release(st);
        return LITHE_OK;
    }
    /* S (N,): da per row, then ds; Tot (B,): each sequence's sum of A * da */
    lithe_status s = lithe__wg_scratch(be, (size_t)N, &S);
    if (s == LITHE_OK) s = lithe__wg_scratch(be, (size_t)B, &Tot);
    lithe__wg_params p[5];
    for (int i = 0; i < 5; i++) p[i] = (lithe__wg_params){.u = {(uint32_t)B, (uint32_t)O, (uint32_t)N, 1}};
    const char *op = "para_attention_backward";
    if (s == LITHE_OK) s = WG_DISPATCH(op, attention, 4, &p[0], 1u, lithe__wg_groups(N), 1, S, X, NULL, dY, NULL, NULL);
    if (s == LITHE_OK) s = WG_DISPATCH(op, attention, 1, &p[1], 1u, lithe__wg_groups(B), 1, Tot, A, S, NULL, NULL, st);
    if (s == LITHE_OK) s = WG_DISPATCH(op, attention, 5, &p[2], 1u, lithe__wg_groups(N), 1, S, Tot, A, NULL, NULL, st);
    if (s == LITHE_OK && O) s = WG_DISPATCH(op, attention, 6, &p[3], 1u, lithe__wg_groups(N * O), 1, dX, dY, A, S, Q, NULL);
    if (s == LITHE_OK && O) s = WG_DISPATCH(op, attention, 7, &p[4], 1u, lithe__wg_groups(O), 1, dQ, X, S, NULL, NULL, NULL);
    lithe_tensor_release(Tot);
    lithe_tensor_release(S);
    lithe_tensor_release(st);
    return s;
}

lithe_status wg_cauchy_similarity(lithe_backend *be, const lithe_tensor *X1, const lithe_tensor *X2,
                                  const lithe_tensor *W, lithe_tensor *sim) {
    LITHE__TRY(ALL_DENSE("cauchy_similarity", X1, X2, W, sim));
    int64_t B = X1->shape[0], I = X1->shape[1];
    if (!B) return LITHE_OK;
    lithe__wg_params p = {.u = {(uint32_t)B, (uint32_t)I}};
    return WG_DISPATCH("cauchy_similarity", attention, 8, &p, 1u, lithe__wg_groups(B), 1, sim, X1, X2, W, NULL, NULL);
}

lithe_status wg_cauchy_similarity_backward(lithe_backend *be, const lithe_tensor *X1, const lithe_tensor *X2,
                                           const lithe_tensor *W, const lithe_tensor *sim, const lithe_tensor *dsim,
                                           lithe_tensor *dX1, lithe_tensor *dX2, lithe_tensor *dW) {
    LITHE__TRY(ALL_DENSE("cauchy_similarity_backward", X1, X2, W, sim, dsim, dX1, dX2, dW));
    int64_t B = X1->shape[0], I = X1->shape[1];
    if (!B || !I) return LITHE_OK;
    /* sim then dsim in one scratch (2B,): six bindings at most */
    lithe_tensor *SD = NULL;
    LITHE__TRY(lithe__wg_scratch(be, (size_t)B * 2, &SD));
    size_t off = (size_t)SD->offset * 4;
    lithe__wg_copy(lithe__wg_mem(sim)->id, (uint32_t)(sim->offset * 4), lithe__wg_mem(SD)->id, (uint32_t)off,
                   (uint32_t)B * 4);
    lithe__wg_copy(lithe__wg_mem(dsim)->id, (uint32_t)(dsim->offset * 4), lithe__wg_mem(SD)->id,
                   (uint32_t)(off + (size_t)B * 4), (uint32_t)B * 4);
    lithe__wg_params p[3];
    for (int i = 0; i < 3; i++) p[i] = (lithe__wg_params){.u = {(uint32_t)B, (uint32_t)I}, .f = {1.0f}};
    p[1].f[0] = -1.0f;
    const char *op = "cauchy_similarity_backward";
    lithe_status s = WG_DISPATCH(op, attention, 9, &p[0], 1u, lithe__wg_groups(B * I), 1, dX1, X1, X2, W, NULL, SD);
    if (s == LITHE_OK) s = WG_DISPATCH(op, attention, 9, &p[1], 1u, lithe__wg_groups(B * I), 1, dX2, X1, X2, W, NULL, SD);
    if (s == LITHE_OK) s = WG_DISPATCH(op, attention, 10, &p[2], 1u, lithe__wg_groups(I), 1, dW, X1, X2, NULL, NULL, SD);
    lithe_tensor_release(SD);
    return s;
}
