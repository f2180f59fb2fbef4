/* The WebGPU backend's layer normalisation, Ragged reductions and cast (shaders/layernorm*.wgsl,
 * seqreduce.wgsl, cast.wgsl; ports of backends/vulkan's layernorm.comp, seq.comp, cast.comp).
 * Shapes were checked by the layer; what only this backend limits is refused with
 * LITHE_ERR_UNSUPPORTED. */
#include "webgpu_internal.h"

static uint32_t row_groups(int64_t M) { return M > 65535 ? 65535u : (uint32_t)(M ? M : 1); }

lithe_status wg_layernorm(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *G, const lithe_tensor *b,
                          float eps, lithe_tensor *Y, lithe_tensor *mean, lithe_tensor *inv_std) {
    const lithe_tensor *ts[6] = {X, G, b, Y, mean, inv_std};
    for (int i = 0; i < 6; i++) LITHE__TRY(lithe__wg_dense("layernorm", ts[i]));
    int64_t M = X->shape[0];
    if (!M) return LITHE_OK;
    lithe__wg_params p = {.u = {(uint32_t)M, (uint32_t)X->shape[1]}, .f = {eps}};
    if (lithe__wg_of(be)->cpu_rows) /* a CPU adapter: one invocation per row, no barrier */
        return WG_DISPATCH("layernorm", layernorm_cpu, 0, &p, 1u | 16u | 32u, lithe__wg_row_groups(M), 1, Y, X, G, b, mean,
                           inv_std);
    return WG_DISPATCH("layernorm", layernorm, 0, &p, 1u | 16u | 32u, row_groups(M), 1, Y, X, G, b, mean, inv_std);
}

lithe_status wg_layernorm_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *X, const lithe_tensor *G,
                                   const lithe_tensor *mean, const lithe_tensor *inv_std, lithe_tensor *dX,
                                   lithe_tensor *dG, lithe_tensor *db) {
    const lithe_tensor *ts[8] = {dY, X, G, mean, inv_std, dX, dG, db};
    for (int i = 0; i < 8; i++) LITHE__TRY(lithe__wg_dense("layernorm_backward", ts[i]));
    int64_t M = X->shape[0], N = X->shape[1];
    if (!M || !N) return LITHE_OK;
    lithe__wg_params p = {.u = {(uint32_t)M, (uint32_t)N}};
    /* dG and db first: dX may overwrite dY */
    LITHE__TRY(WG_DISPATCH("layernorm_backward", layernorm_dg, 0, &p, 1u | 2u, lithe__wg_groups(N), 1, dG, db, dY, X,
                           mean, inv_std));
    if (lithe__wg_of(be)->cpu_rows)
        return WG_DISPATCH("layernorm_backward", layernorm_dx_cpu, 0, &p, 1u, lithe__wg_row_groups(M), 1, dX, dY, X, G, mean,
                           inv_std);
    return WG_DISPATCH("layernorm_backward", layernorm_dx, 0, &p, 1u, row_groups(M), 1, dX, dY, X, G, mean, inv_std);
}

/* ---- Ragged reductions (shaders/seqreduce.wgsl) ---- */

/* A device buffer of what seqreduce.wgsl reads from the host lengths (B,) int32: starts (B + 1)
 * then B scales (1 / length as the CPU's kernels compute it). */
static lithe_status seq_meta(lithe_backend *be, const char *op, const lithe_tensor *lengths, lithe_tensor **out) {
    *out = NULL;
    if (lengths->dtype != LITHE_I32)
        return lithe__fail(LITHE_ERR_DTYPE, "webgpu %s: lengths must be int32, got %s", op, lithe_dtype_name(lengths->dtype));
    int64_t B = lengths->numel;
    if (B >= INT32_MAX / 4) return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: %lld sequences", op, (long long)B);
    size_t words = (size_t)(2 * B + 1);
    int32_t *meta = lithe__malloc(words * 4 + (size_t)B * 4 + 4);
    if (!meta) return lithe__oom(op, words * 4);
    int32_t *len = meta + words;
    lithe_status s = B ? lithe_tensor_read(lengths, len, (size_t)B * 4) : LITHE_OK;
    int64_t start = 0;
    for (int64_t b = 0; s == LITHE_OK && b < B; b++) {
        meta[b] = (int32_t)start;
        start += len[b];
        if (len[b] < 0 || start > INT32_MAX)
            s = lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: length %d of sequence %lld (or the total) outside 32 bits",
                            op, len[b], (long long)b);
        float sc = len[b] ? (float)(1.0 / len[b]) : 0.0f;
        memcpy(&meta[B + 1 + b], &sc, 4);
    }
    if (s == LITHE_OK) {
        meta[B] = (int32_t)start;
        s = lithe__wg_scratch(be, words, out);
    }
    if (s == LITHE_OK) s = be->ops->upload(be, (*out)->storage->data, 0, meta, words * 4);
    lithe__free(meta);
    if (s != LITHE_OK) {
        lithe_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

static lithe_status seq_run(lithe_backend *be, const char *op, uint32_t which_op, const lithe_tensor *lengths, int64_t O,
                            bool mean, lithe_tensor *out, const lithe_tensor *in, const lithe_tensor *which) {
    LITHE__TRY(lithe__wg_dense(op, out));
    LITHE__TRY(lithe__wg_dense(op, in));
    if (which && (which->dtype != LITHE_I32 || !lithe_tensor_is_contiguous(which)))
        return lithe__fail(LITHE_ERR_DTYPE, "webgpu %s: which must be contiguous int32", op);
    int64_t B = lengths->numel;
    if (!B || !O) return LITHE_OK;
    lithe_tensor *meta = NULL;
    LITHE__TRY(seq_meta(be, op, lengths, &meta));
    lithe__wg_params p = {.u = {(uint32_t)B, (uint32_t)O, 0, mean}};
    const lithe_tensor *wo = which_op == 2 ? which : NULL, *wi = which_op == 3 ? which : NULL;
    lithe_status s = lithe__wg_dispatch_(be, op, LITHE__WG_SH_seqreduce, which_op, &p,
                                         (const lithe_tensor *const[]){out, in, meta, wo, wi}, 5, 1u | 8u,
                                         lithe__wg_groups(B * O), 1);
    lithe_tensor_release(meta);
    return s;
}

lithe_status wg_reduce_sum(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *lengths, bool mean,
                           lithe_tensor *Y) {
    return seq_run(be, "reduce_sum", 0, lengths, Y->shape[1], mean, Y, X, NULL);
}
lithe_status wg_reduce_sum_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *lengths, bool mean,
                                    lithe_tensor *dX) {
    return seq_run(be, "reduce_sum_backward", 1, lengths, dY->shape[1], mean, dX, dY, NULL);
}
lithe_status wg_reduce_max(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *lengths, lithe_tensor *Y,
                           lithe_tensor *which) {
    return seq_run(be, "reduce_max", 2, lengths, Y->shape[1], false, Y, X, which);
}
lithe_status wg_reduce_max_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *which,
                                    const lithe_tensor *lengths, lithe_tensor *dX) {
    return seq_run(be, "reduce_max_backward", 3, lengths, dY->shape[1], false, dX, dY, which);
}

/* ---- cast (shaders/cast.wgsl) ---- */

static bool cast_dtype(lithe_dtype dt) {
    return dt == LITHE_F32 || dt == LITHE_F16 || dt == LITHE_BF16 || dt == LITHE_I32 || dt == LITHE_I64 || dt == LITHE_U8;
}

lithe_status wg_cast(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *X) {
    if (!lithe_tensor_is_contiguous(X) || !lithe_tensor_is_contiguous(Y))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu cast: strided tensors are not supported yet");
    size_t xo = (size_t)X->offset * lithe_dtype_size(X->dtype), yo = (size_t)Y->offset * lithe_dtype_size(Y->dtype);
    size_t es = lithe_dtype_size(Y->dtype);
    if ((uint64_t)X->numel * 8 + xo >= (1u << 30) || (uint64_t)Y->numel * 8 + yo >= (1u << 30))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu cast: %lld elements exceed the buffer limit", (long long)X->numel);
    if (!X->numel) return LITHE_OK;
    if (X->dtype == Y->dtype) return lithe__op_copy(be, Y, X);
    if (!cast_dtype(X->dtype) || !cast_dtype(Y->dtype) || (X->dtype != LITHE_F32 && Y->dtype != LITHE_F32))
        return lithe__fail(LITHE_ERR_DTYPE, "webgpu cast: %s to %s is not a conversion lithe makes",
                           lithe_dtype_name(X->dtype), lithe_dtype_name(Y->dtype));
    lithe__wg_params p = {.u = {(uint32_t)X->dtype, (uint32_t)Y->dtype, (uint32_t)X->numel, (uint32_t)xo, (uint32_t)yo}};
    int64_t items = es < 4 ? (int64_t)(((size_t)X->numel * es + 7) / 4) : X->numel;
    return WG_DISPATCH("cast", cast, 0, &p, 1u, lithe__wg_groups(items), 1, Y, X);
}
