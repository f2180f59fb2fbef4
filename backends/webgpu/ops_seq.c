/* The WebGPU backend's primitives over Ragged sequences: seq2col and its backward, Thinc's
 * SparseLinear and its backward (shaders seq2col.wgsl, sparse.wgsl). The host lengths become a
 * starts table (B + 1 ints) uploaded for the shader; every sum runs in the CPU's order, so the
 * results carry the CPU's bits. */
#include "ops_rest.h"

/* starts (B + 1) from the host lengths (B,) int32 (a read-back if they live on a device), as a
 * device scratch tensor; *rows = their sum. */
lithe_status lithe__wg_seq_starts(lithe_backend *be, const char *op, const lithe_tensor *lengths, int64_t *rows,
                                  lithe_tensor **out) {
    *out = NULL;
    if (lengths->dtype != LITHE_I32)
        return lithe__fail(LITHE_ERR_DTYPE, "webgpu %s: lengths must be int32, got %s", op, lithe_dtype_name(lengths->dtype));
    int64_t B = lengths->numel;
    if (B >= (1 << 28)) return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: %lld sequences", op, (long long)B);
    int32_t *st = lithe__malloc((size_t)(2 * B + 1) * 4);
    if (!st) return lithe__oom(op, (size_t)(2 * B + 1) * 4);
    int32_t *len = st + B + 1;
    lithe_status s = B ? lithe_tensor_read(lengths, len, (size_t)B * 4) : LITHE_OK;
    int64_t start = 0;
    for (int64_t b = 0; s == LITHE_OK && b < B; b++) {
        st[b] = (int32_t)start;
        start += len[b];
        if (len[b] < 0 || start >= (1 << 30))
            s = lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: length %d of sequence %lld (or the total) outside 30 bits",
                            op, len[b], (long long)b);
    }
    if (s == LITHE_OK) {
        st[B] = (int32_t)start;
        *rows = start;
        s = lithe__wg_upload_scratch(be, st, (size_t)(B + 1) * 4, out);
    }
    lithe__free(st);
    return s;
}

static lithe_status seq2col_run(lithe_backend *be, const char *op, uint32_t which, const lithe_tensor *lengths,
                                int64_t O, int64_t nW, lithe_tensor *out, const lithe_tensor *in) {
    LITHE__TRY(lithe__wg_dense(op, out));
    LITHE__TRY(lithe__wg_dense(op, in));
    if (nW < 0 || nW > (1 << 20)) return lithe__fail(LITHE_ERR_VALUE, "webgpu %s: window %lld", op, (long long)nW);
    lithe_tensor *st = NULL;
    int64_t N = 0;
    LITHE__TRY(lithe__wg_seq_starts(be, op, lengths, &N, &st));
    lithe_status s = LITHE_OK;
    int64_t items = which == 0 ? N * (2 * nW + 1) * O : N * O;
    if (items) {
        lithe__wg_params p = {.u = {(uint32_t)lengths->numel, (uint32_t)O, (uint32_t)nW}};
        s = WG_DISPATCH(op, seq2col, which, &p, 1u, lithe__wg_groups(items), 1, out, in, st);
    }
    lithe_tensor_release(st);
    return s;
}

lithe_status wg_seq2col(lithe_backend *be, const lithe_tensor *X, int64_t nW, const lithe_tensor *lengths, lithe_tensor *Y) {
    return seq2col_run(be, "seq2col", 0, lengths, X->shape[1], nW, Y, X);
}
lithe_status wg_seq2col_backward(lithe_backend *be, const lithe_tensor *dY, int64_t nW, const lithe_tensor *lengths,
                                 lithe_tensor *dX) {
    return seq2col_run(be, "seq2col_backward", 1, lengths, dX->shape[1], nW, dX, dY);
}

static lithe_status sparse_check(const char *op, const lithe_tensor *keys, const lithe_tensor *values, int64_t length,
                                 bool v1) {
    if (keys->dtype != LITHE_U64 && keys->dtype != LITHE_I64)
        return lithe__fail(LITHE_ERR_DTYPE, "webgpu %s: keys must be uint64, got %s", op, lithe_dtype_name(keys->dtype));
    LITHE__TRY(lithe__wg_dense(op, values));
    if (!lithe_tensor_is_contiguous(keys))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: strided keys are not supported yet", op);
    if (length <= 0 || length > (int64_t)UINT32_MAX)
        return lithe__fail(LITHE_ERR_VALUE, "webgpu %s: length %lld", op, (long long)length);
    return LITHE_OK;
}

lithe_status wg_sparse_linear(lithe_backend *be, const lithe_tensor *keys, const lithe_tensor *values,
                              const lithe_tensor *lengths, const lithe_tensor *W, int64_t length, bool v1, lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("sparse_linear", Y));
    LITHE__TRY(lithe__wg_dense("sparse_linear", W));
    LITHE__TRY(sparse_check("sparse_linear", keys, values, length, v1));
    lithe_tensor *st = NULL;
    int64_t N = 0;
    LITHE__TRY(lithe__wg_seq_starts(be, "sparse_linear", lengths, &N, &st));
    lithe__wg_params p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1], (uint32_t)length, v1}};
    lithe_status s = Y->numel ? WG_DISPATCH("sparse_linear", sparse, 0, &p, 1u, lithe__wg_groups(Y->numel), 1, Y, keys,
                                            values, W, st)
                              : LITHE_OK;
    lithe_tensor_release(st);
    return s;
}

/* Deterministic, no atomics: v2's classes own disjoint parts of dW (one invocation per class walks
 * every key in order); v1's overlap (Thinc's bug #752), so one invocation does them all. */
lithe_status wg_sparse_linear_backward(lithe_backend *be, const lithe_tensor *keys, const lithe_tensor *values,
                                       const lithe_tensor *lengths, const lithe_tensor *dY, int64_t length, bool v1,
                                       lithe_tensor *dW) {
    LITHE__TRY(lithe__wg_dense("sparse_linear_backward", dW));
    LITHE__TRY(lithe__wg_dense("sparse_linear_backward", dY));
    LITHE__TRY(sparse_check("sparse_linear_backward", keys, values, length, v1));
    lithe_tensor *st = NULL;
    int64_t N = 0;
    LITHE__TRY(lithe__wg_seq_starts(be, "sparse_linear_backward", lengths, &N, &st));
    lithe__wg_params p = {.u = {(uint32_t)dY->shape[0], (uint32_t)dY->shape[1], (uint32_t)length, v1}};
    lithe_status s = N && dY->numel ? WG_DISPATCH("sparse_linear_backward", sparse, 1, &p, 1u,
                                                  v1 ? 1u : lithe__wg_groups(dY->shape[1]), 1, dW, keys, values, dY, st)
                                    : LITHE_OK;
    lithe_tensor_release(st);
    return s;
}
