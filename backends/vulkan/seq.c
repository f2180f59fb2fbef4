/* The Vulkan backend's primitives: sequences (Ragged reductions, seq2col), sparse inputs,
 * recurrent, attention and similarity. Each unpacks its tensors into bindings and push constants
 * and records dispatches of a shader family (shaders/<family>.comp); shapes were checked by the
 * layer; what only this backend limits (sizes past 32-bit indexing, dtypes a shader lacks) is
 * refused with LITHE_ERR_UNSUPPORTED. The table: table.c. */
#include "ops.h"

/* ---- sequences (Ragged rows grouped by host-side lengths) ---- */

/* Uploads what seq.comp needs from the host lengths (B,) int32: starts (B + 1) then B scales
 * (1 / length computed as the CPU's kernels do). Lengths may also live on this device. */
static lithe_status seq_meta(lithe_backend *be, const char *op, const lithe_tensor *lengths, bool with_scales,
                             int64_t *rows, lithe_tensor **out) {
    *out = NULL;
    if (lengths->dtype != LITHE_I32)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan %s: lengths must be int32, got %s", op, lithe_dtype_name(lengths->dtype));
    int64_t B = lengths->numel;
    if (B >= INT32_MAX / 2) return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: %lld sequences", op, (long long)B);
    size_t words = (size_t)(B + 1) + (with_scales ? (size_t)B : 0);
    int32_t *meta = lithe__malloc(words * 4 + (size_t)B * 4 + 4);
    if (!meta) return lithe__oom(op, words * 4);
    int32_t *len = meta + words;
    lithe_status s = lithe_tensor_read(lengths, len, (size_t)B * 4);
    int64_t start = 0;
    for (int64_t b = 0; s == LITHE_OK && b < B; b++) {
        meta[b] = (int32_t)start;
        start += len[b];
        if (len[b] < 0 || start > INT32_MAX)
            s = lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: length %d of sequence %lld (or the total) outside 32 bits",
                            op, len[b], (long long)b);
        if (with_scales) {
            float sc = len[b] ? (float)(1.0 / len[b]) : 0.0f;
            memcpy(&meta[B + 1 + b], &sc, 4);
        }
    }
    if (s == LITHE_OK) {
        meta[B] = (int32_t)start;
        *rows = start;
        s = lithe__vk_scratch(be, words * 4, out);
    }
    if (s == LITHE_OK) s = be->ops->upload(be, (*out)->storage->data, 0, meta, words * 4);
    lithe__free(meta);
    if (s != LITHE_OK) {
        lithe_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

static lithe_status seq_run(lithe_backend *be, const char *op, uint32_t which_op, const lithe_tensor *lengths,
                            int64_t O, int64_t nW, bool mean, int64_t items_per_row, lithe_tensor *out,
                            const lithe_tensor *in, const lithe_tensor *which) {
    LITHE__TRY(need_f32(op, out));
    LITHE__TRY(need_f32(op, in));
    lithe_tensor *meta = NULL;
    int64_t N = 0, B = lengths->numel;
    LITHE__TRY(seq_meta(be, op, lengths, true, &N, &meta));
    lithe__vk_push p = {.u = {(uint32_t)B, (uint32_t)O, (uint32_t)nW, mean}};
    uint32_t spec[LITHE__VK_SPEC] = {which_op};
    int64_t items = items_per_row > 0 ? N * items_per_row : B * O;
    lithe_status s = lithe__vk_dispatch(be, op, "seq", spec, &p, (const lithe_tensor *const[]){out, in, meta, which}, 4,
                                        groups_for(items), 1);
    lithe_tensor_release(meta);
    return s;
}

lithe_status vk_reduce_sum(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *lengths, bool mean,
                                  lithe_tensor *Y) {
    return seq_run(be, "reduce_sum", 0, lengths, Y->shape[1], 0, mean, 0, Y, X, NULL);
}
lithe_status vk_reduce_sum_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *lengths,
                                           bool mean, lithe_tensor *dX) {
    return seq_run(be, "reduce_sum_backward", 1, lengths, dY->shape[1], 0, mean, 0, dX, dY, NULL);
}
lithe_status vk_reduce_max(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *lengths, lithe_tensor *Y,
                                  lithe_tensor *which) {
    return seq_run(be, "reduce_max", 2, lengths, Y->shape[1], 0, false, 0, Y, X, which);
}
lithe_status vk_reduce_max_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *which,
                                           const lithe_tensor *lengths, lithe_tensor *dX) {
    return seq_run(be, "reduce_max_backward", 3, lengths, dY->shape[1], 0, false, 0, dX, dY, which);
}
lithe_status vk_seq2col(lithe_backend *be, const lithe_tensor *X, int64_t nW, const lithe_tensor *lengths,
                               lithe_tensor *Y) {
    if (nW < 0 || nW > 1 << 20) return lithe__fail(LITHE_ERR_VALUE, "vulkan seq2col: window %lld", (long long)nW);
    return seq_run(be, "seq2col", 4, lengths, X->shape[1], nW, false, (2 * nW + 1) * X->shape[1], Y, X, NULL);
}
lithe_status vk_seq2col_backward(lithe_backend *be, const lithe_tensor *dY, int64_t nW,
                                        const lithe_tensor *lengths, lithe_tensor *dX) {
    if (nW < 0 || nW > 1 << 20) return lithe__fail(LITHE_ERR_VALUE, "vulkan seq2col_backward: window %lld", (long long)nW);
    return seq_run(be, "seq2col_backward", 5, lengths, dX->shape[1], nW, false, dX->shape[1], dX, dY, NULL);
}

/* ---- sparse, hashed and string inputs ---- */

lithe_status vk_sparse_linear(lithe_backend *be, const lithe_tensor *keys, const lithe_tensor *values,
                                     const lithe_tensor *lengths, const lithe_tensor *W, int64_t length, bool v1,
                                     lithe_tensor *Y) {
    LITHE__TRY(need_f32("sparse_linear", Y));
    LITHE__TRY(check_size("sparse_linear", W));
    if (length <= 0 || length > UINT32_MAX)
        return lithe__fail(LITHE_ERR_VALUE, "vulkan sparse_linear: length %lld", (long long)length);
    lithe_tensor *meta = NULL;
    int64_t N = 0;
    LITHE__TRY(seq_meta(be, "sparse_linear", lengths, false, &N, &meta));
    lithe__vk_push p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1], (uint32_t)length, v1}};
    lithe_status s = lithe__vk_dispatch(be, "sparse_linear", "sparse", SPEC0, &p,
                                        (const lithe_tensor *const[]){Y, keys, values, W, meta}, 5,
                                        groups_for(Y->numel), 1);
    lithe_tensor_release(meta);
    return s;
}

lithe_status vk_sparse_linear_backward(lithe_backend *be, const lithe_tensor *keys, const lithe_tensor *values,
                                              const lithe_tensor *lengths, const lithe_tensor *dY, int64_t length,
                                              bool v1, lithe_tensor *dW) {
    LITHE__TRY(need_f32("sparse_linear_backward", dW));
    if (length <= 0 || length > UINT32_MAX)
        return lithe__fail(LITHE_ERR_VALUE, "vulkan sparse_linear_backward: length %lld", (long long)length);
    lithe_tensor *meta = NULL;
    int64_t N = 0;
    LITHE__TRY(seq_meta(be, "sparse_linear_backward", lengths, false, &N, &meta));
    lithe__vk_push p = {.u = {(uint32_t)dY->shape[0], (uint32_t)dY->shape[1], (uint32_t)length, v1}};
    lithe_status s = lithe__vk_dispatch(be, "sparse_linear_backward", "sparse", SPEC1, &p,
                                        (const lithe_tensor *const[]){dW, keys, values, dY, meta}, 5,
                                        v1 ? 1 : groups_for(dY->shape[1]), 1);
    lithe_tensor_release(meta);
    return s;
}
/* ---- recurrent, attention and similarity (shaders/recur.comp) ---- */

#define RECUR(op, code, p, groups, ...)                                                            \
    lithe__vk_dispatch(be, op, "recur", (const uint32_t[LITHE__VK_SPEC]){code}, p,                \
                       (const lithe_tensor *const[]){__VA_ARGS__},                                 \
                       sizeof((const lithe_tensor *const[]){__VA_ARGS__}) / sizeof(const lithe_tensor *), groups, 1)

/* size_at_t (T,) int32, read on the host, into steps (T,) and row starts (T,); T = 0 allowed. */
static lithe_status lstm_steps(const char *op, const lithe_tensor *size_at_t, int32_t **steps, int64_t **start) {
    int64_t T = size_at_t->numel;
    *steps = NULL;
    *start = NULL;
    if (size_at_t->dtype != LITHE_I32)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan %s: size_at_t must be int32, got %s", op,
                           lithe_dtype_name(size_at_t->dtype));
    *steps = lithe__malloc((size_t)T * 4 + 4);
    *start = lithe__malloc((size_t)T * 8 + 8);
    if (!*steps || !*start) return lithe__oom(op, (size_t)T * 12);
    LITHE__TRY(lithe_tensor_read(size_at_t, *steps, (size_t)T * 4));
    int64_t s = 0;
    for (int64_t t = 0; t < T; t++) {
        (*start)[t] = s;
        s += (*steps)[t];
        if ((*steps)[t] < 0 || s > INT32_MAX)
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: step size %d at %lld", op, (*steps)[t], (long long)t);
    }
    return LITHE_OK;
}

/* The push block of step t (see recur.comp): H, rows, first row, previous step's first row and
 * how many rows have a previous step (l2r: t - 1, all rows; r2l: t + 1, its size). */
static lithe__vk_push lstm_step_push(int64_t T, int64_t H, const int32_t *steps, const int64_t *start, bool reverse,
                                     int64_t t) {
    int64_t pt = reverse ? t + 1 : t - 1;
    bool has = pt >= 0 && pt < T;
    int64_t np = !has ? 0 : reverse ? (steps[pt] < steps[t] ? steps[pt] : steps[t]) : steps[t];
    lithe__vk_push p = {.u = {(uint32_t)H, (uint32_t)steps[t], (uint32_t)start[t], has ? (uint32_t)start[pt] : 0u,
                              (uint32_t)np}};
    return p;
}

lithe_status vk_lstm_scan(lithe_backend *be, const lithe_tensor *Wh, const lithe_tensor *bx,
                                 const lithe_tensor *bh, const lithe_tensor *h0, const lithe_tensor *c0,
                                 const lithe_tensor *size_at_t, bool reverse, lithe_tensor *G, lithe_tensor *C,
                                 lithe_tensor *Y) {
    const lithe_tensor *fs[] = {Wh, bx, bh, h0, c0, G, C, Y};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32("lstm_scan", fs[i]));
    int32_t *steps = NULL;
    int64_t *start = NULL, T = size_at_t->numel, H = C->shape[1];
    lithe_status s = lstm_steps("lstm_scan", size_at_t, &steps, &start);
    for (int64_t k = 0; s == LITHE_OK && k < T; k++) {
        int64_t t = reverse ? T - 1 - k : k;
        if (!steps[t]) continue;
        lithe__vk_push p = lstm_step_push(T, H, steps, start, reverse, t);
        s = RECUR("lstm_scan", 0u, &p, groups_for(steps[t] * 4 * H), G, Wh, bx, bh, Y, h0);
        if (s == LITHE_OK) s = RECUR("lstm_scan", 1u, &p, groups_for(steps[t] * H), G, C, Y, c0);
    }
    lithe__free(steps);
    lithe__free(start);
    return s;
}

lithe_status vk_lstm_scan_backward(lithe_backend *be, const lithe_tensor *Wh, const lithe_tensor *h0,
                                          const lithe_tensor *c0, const lithe_tensor *size_at_t, bool reverse,
                                          const lithe_tensor *G, const lithe_tensor *C, const lithe_tensor *Y,
                                          lithe_tensor *dY, lithe_tensor *dC, lithe_tensor *dG, lithe_tensor *dWh) {
    const lithe_tensor *fs[] = {Wh, h0, c0, G, C, Y, dY, dC, dG, dWh};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32("lstm_scan_backward", fs[i]));
    int32_t *steps = NULL;
    int64_t *start = NULL, T = size_at_t->numel, H = C->shape[1];
    lithe_status s = lstm_steps("lstm_scan_backward", size_at_t, &steps, &start);
    if (s == LITHE_OK) s = vk_fill(be, dC, 0.0f);
    /* the reverse of processing order, as the CPU walks it */
    for (int64_t k = T - 1; s == LITHE_OK && k >= 0; k--) {
        int64_t t = reverse ? T - 1 - k : k;
        if (!steps[t]) continue;
        lithe__vk_push p = lstm_step_push(T, H, steps, start, reverse, t);
        s = RECUR("lstm_scan_backward", 2u, &p, groups_for(steps[t] * H), dG, G, C, c0, dY, dC);
        if (s == LITHE_OK && p.u[4])
            s = RECUR("lstm_scan_backward", 3u, &p, groups_for((int64_t)p.u[4] * H), dY, dG, Wh);
        if (s == LITHE_OK) s = RECUR("lstm_scan_backward", 4u, &p, groups_for(4 * H * H), dWh, dG, Y, h0);
    }
    lithe__free(steps);
    lithe__free(start);
    return s;
}

lithe_status vk_para_attention(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *Q,
                                      const lithe_tensor *lengths, lithe_tensor *A, lithe_tensor *Y) {
    const lithe_tensor *fs[] = {X, Q, A, Y};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32("para_attention", fs[i]));
    lithe_tensor *meta = NULL, *Tot = NULL;
    int64_t N = 0, B = lengths->numel, O = X->shape[1];
    LITHE__TRY(seq_meta(be, "para_attention", lengths, false, &N, &meta));
    if (!N) {
        lithe_tensor_release(meta);
        return LITHE_OK;
    }
    lithe__vk_push p = {.u = {(uint32_t)B, (uint32_t)O, (uint32_t)N, 0}};
    /* Tot (B,): each sequence's sum of exponentials */
    lithe_status s = lithe__vk_scratch(be, (size_t)B * 4 + 4, &Tot);
    if (s == LITHE_OK) s = RECUR("para_attention", 5u, &p, groups_for(N), A, X, Q, NULL, NULL, meta);
    if (s == LITHE_OK) s = RECUR("para_attention", 13u, &p, groups_for(B), Tot, A, NULL, NULL, NULL, meta);
    if (s == LITHE_OK) s = RECUR("para_attention", 14u, &p, groups_for(N), A, Tot, NULL, NULL, NULL, meta);
    if (s == LITHE_OK && O) s = RECUR("para_attention", 6u, &p, groups_for(N * O), Y, X, A, NULL, NULL, meta);
    lithe_tensor_release(Tot);
    lithe_tensor_release(meta);
    return s;
}

lithe_status vk_para_attention_backward(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *Q,
                                               const lithe_tensor *A, const lithe_tensor *lengths,
                                               const lithe_tensor *dY, lithe_tensor *dX, lithe_tensor *dQ) {
    const lithe_tensor *fs[] = {X, Q, A, dY, dX, dQ};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32("para_attention_backward", fs[i]));
    lithe_tensor *meta = NULL, *S = NULL, *Tot = NULL;
    int64_t N = 0, B = lengths->numel, O = X->shape[1];
    LITHE__TRY(seq_meta(be, "para_attention_backward", lengths, false, &N, &meta));
    if (!N) {
        lithe_tensor_release(meta);
        return LITHE_OK;
    }
    lithe__vk_push p = {.u = {(uint32_t)B, (uint32_t)O, (uint32_t)N, 1}};
    /* S (N,): da per row, then ds; Tot (B,): each sequence's sum of A * da */
    lithe_status s = lithe__vk_scratch(be, (size_t)N * 4, &S);
    if (s == LITHE_OK) s = lithe__vk_scratch(be, (size_t)B * 4 + 4, &Tot);
    if (s == LITHE_OK) s = RECUR("para_attention_backward", 7u, &p, groups_for(N), S, X, NULL, dY, NULL, meta);
    if (s == LITHE_OK) s = RECUR("para_attention_backward", 13u, &p, groups_for(B), Tot, A, S, NULL, NULL, meta);
    if (s == LITHE_OK) s = RECUR("para_attention_backward", 15u, &p, groups_for(N), S, Tot, A, NULL, NULL, meta);
    if (s == LITHE_OK && O)
        s = RECUR("para_attention_backward", 8u, &p, groups_for(N * O), dX, dY, A, S, Q, meta);
    if (s == LITHE_OK && O) s = RECUR("para_attention_backward", 9u, &p, groups_for(O), dQ, X, S);
    lithe_tensor_release(Tot);
    lithe_tensor_release(S);
    lithe_tensor_release(meta);
    return s;
}

lithe_status vk_cauchy_similarity(lithe_backend *be, const lithe_tensor *X1, const lithe_tensor *X2,
                                         const lithe_tensor *W, lithe_tensor *sim) {
    const lithe_tensor *fs[] = {X1, X2, W, sim};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32("cauchy_similarity", fs[i]));
    int64_t B = X1->shape[0], I = X1->shape[1];
    if (!B) return LITHE_OK;
    lithe__vk_push p = {.u = {(uint32_t)B, (uint32_t)I}};
    return RECUR("cauchy_similarity", 10u, &p, groups_for(B), sim, X1, X2, W);
}

lithe_status vk_cauchy_similarity_backward(lithe_backend *be, const lithe_tensor *X1, const lithe_tensor *X2,
                                                  const lithe_tensor *W, const lithe_tensor *sim,
                                                  const lithe_tensor *dsim, lithe_tensor *dX1, lithe_tensor *dX2,
                                                  lithe_tensor *dW) {
    const lithe_tensor *fs[] = {X1, X2, W, sim, dsim, dX1, dX2, dW};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32("cauchy_similarity_backward", fs[i]));
    int64_t B = X1->shape[0], I = X1->shape[1];
    if (!B) return LITHE_OK;
    if (!lithe_tensor_is_contiguous(sim) || !lithe_tensor_is_contiguous(dsim))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan cauchy_similarity_backward: strided sim / dsim");
    /* sim then dsim in one scratch (B * 2,): the shader has six bindings */
    lithe_tensor *SD = NULL;
    LITHE__TRY(lithe__vk_scratch(be, (size_t)B * 8, &SD));
    lithe_status s = lithe__vk_copy_bytes(be, lithe__vk_mem(SD), byte_offset(SD), lithe__vk_mem(sim), byte_offset(sim),
                                          (size_t)B * 4);
    if (s == LITHE_OK)
        s = lithe__vk_copy_bytes(be, lithe__vk_mem(SD), byte_offset(SD) + (size_t)B * 4, lithe__vk_mem(dsim),
                                 byte_offset(dsim), (size_t)B * 4);
    lithe__vk_push p = {.u = {(uint32_t)B, (uint32_t)I}};
    if (s == LITHE_OK && I)
        s = RECUR("cauchy_similarity_backward", 11u, &p, groups_for(B * I), dX1, dX2, X1, X2, W, SD);
    if (s == LITHE_OK && I)
        s = RECUR("cauchy_similarity_backward", 12u, &p, groups_for(I), dW, X1, X2, NULL, NULL, SD);
    lithe_tensor_release(SD);
    return s;
}
