/* The WebGPU backend's primitives on ids and masks: dropout's Philox mask, maxout, row gathers
 * and scatter-adds, hashed ids and strings, and the int8 GEMM of compact weights (shaders
 * ids.wgsl, maxout.wgsl, sparse.wgsl, gemm_q8.wgsl; ports of backends/vulkan's shaders). Shapes
 * were checked by the layer; what only this backend limits (dtypes, sizes past 32-bit indexing)
 * is refused with LITHE_ERR_UNSUPPORTED naming it. */
#include "ops_rest.h"

/* A device scratch tensor holding `bytes` bytes of host data (meta-data the shaders read). */
lithe_status lithe__wg_upload_scratch(lithe_backend *be, const void *data, size_t bytes, lithe_tensor **out) {
    LITHE__TRY(lithe__wg_scratch(be, (bytes + 3) / 4, out));
    lithe_status s = bytes ? be->ops->upload(be, (*out)->storage->data, 0, data, bytes) : LITHE_OK;
    if (s != LITHE_OK) {
        lithe_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

static lithe_status small(const char *op, const lithe_tensor *t) {
    if ((uint64_t)t->numel * lithe_dtype_size(t->dtype) + (uint64_t)t->offset * lithe_dtype_size(t->dtype) >= (1u << 30))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: a tensor of %lld elements exceeds the buffer limit", op,
                           (long long)t->numel);
    if (!lithe_tensor_is_contiguous(t))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: strided tensors are not supported yet", op);
    return LITHE_OK;
}

lithe_status wg_dropout_mask(lithe_backend *be, uint64_t key, uint64_t counter, float rate, lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("dropout_mask", Y));
    if (!Y->numel) return LITHE_OK;
    lithe__wg_params p = {.u = {(uint32_t)key, (uint32_t)(key >> 32), (uint32_t)counter, (uint32_t)(counter >> 32),
                                (uint32_t)Y->numel},
                          .f = {rate, 1.0f / (1.0f - rate)}};
    return WG_DISPATCH("dropout_mask", ids, 0, &p, 1u, lithe__wg_groups((Y->numel + 3) / 4), 1, Y, NULL, NULL);
}

lithe_status wg_maxout(lithe_backend *be, const lithe_tensor *X, lithe_tensor *Y, lithe_tensor *which) {
    LITHE__TRY(lithe__wg_dense("maxout", X));
    LITHE__TRY(lithe__wg_dense("maxout", Y));
    LITHE__TRY(small("maxout", which));
    int64_t R = X->shape[0] * X->shape[1], P = X->shape[2];
    if (!R) return LITHE_OK;
    if (P < 1) return lithe__fail(LITHE_ERR_SHAPE, "webgpu maxout: %lld pieces", (long long)P);
    lithe__wg_params p = {.u = {(uint32_t)R, (uint32_t)P}};
    return WG_DISPATCH("maxout", maxout, 0, &p, 3u, lithe__wg_groups(R), 1, Y, which, X);
}

lithe_status wg_maxout_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *which, lithe_tensor *dX) {
    LITHE__TRY(lithe__wg_dense("maxout_backward", dX));
    LITHE__TRY(lithe__wg_dense("maxout_backward", dY));
    LITHE__TRY(small("maxout_backward", which));
    int64_t R = dX->shape[0] * dX->shape[1], P = dX->shape[2];
    if (!R) return LITHE_OK;
    lithe__wg_params p = {.u = {(uint32_t)R, (uint32_t)P}};
    return WG_DISPATCH("maxout_backward", maxout, 1, &p, 3u, lithe__wg_groups(R), 1, dX, which, dY);
}

static lithe_status ids_kind(const char *op, const lithe_tensor *ids, uint32_t *wide) {
    if (ids->dtype == LITHE_I32) *wide = 0;
    else if (ids->dtype == LITHE_I64 || ids->dtype == LITHE_U64) *wide = 1;
    else return lithe__fail(LITHE_ERR_DTYPE, "webgpu %s: ids must be int32, int64 or uint64, got %s", op,
                            lithe_dtype_name(ids->dtype));
    return small(op, ids);
}

lithe_status wg_gather_rows(lithe_backend *be, const lithe_tensor *table, const lithe_tensor *ids, lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("gather_rows", table));
    LITHE__TRY(lithe__wg_dense("gather_rows", Y));
    uint32_t wide = 0;
    LITHE__TRY(ids_kind("gather_rows", ids, &wide));
    if (!Y->numel) return LITHE_OK;
    lithe__wg_params p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1], wide}};
    return WG_DISPATCH("gather_rows", ids, 1, &p, 1u, lithe__wg_groups(Y->numel), 1, Y, table, ids);
}

/* Deterministic, no atomics: one invocation per column walks the rows in order, so duplicate
 * ids accumulate in the CPU's order (the same bits). */
lithe_status wg_scatter_add_rows(lithe_backend *be, lithe_tensor *table, const lithe_tensor *ids, const lithe_tensor *X) {
    LITHE__TRY(lithe__wg_dense("scatter_add_rows", table));
    LITHE__TRY(lithe__wg_dense("scatter_add_rows", X));
    uint32_t wide = 0;
    LITHE__TRY(ids_kind("scatter_add_rows", ids, &wide));
    if (!X->numel) return LITHE_OK;
    lithe__wg_params p = {.u = {(uint32_t)X->shape[0], (uint32_t)X->shape[1], wide}};
    return WG_DISPATCH("scatter_add_rows", ids, 2, &p, 1u, lithe__wg_groups(X->shape[1]), 1, table, X, ids);
}

lithe_status wg_hash_ids(lithe_backend *be, const lithe_tensor *ids, uint32_t seed, lithe_tensor *out) {
    if (ids->dtype != LITHE_U64 && ids->dtype != LITHE_I64)
        return lithe__fail(LITHE_ERR_DTYPE, "webgpu hash_ids: ids must be uint64, got %s", lithe_dtype_name(ids->dtype));
    LITHE__TRY(small("hash_ids", ids));
    LITHE__TRY(small("hash_ids", out));
    if (!ids->numel) return LITHE_OK;
    lithe__wg_params p = {.u = {(uint32_t)ids->numel, seed}};
    return WG_DISPATCH("hash_ids", ids, 3, &p, 1u, lithe__wg_groups(ids->numel), 1, out, ids, NULL);
}

/* Strings live in host memory (a STRINGS value's bytes and offsets): uploaded, then hashed on the
 * device so the keys land where the model computes. */
lithe_status wg_hash_strings(lithe_backend *be, const lithe_tensor *bytes, const lithe_tensor *offsets, uint32_t seed,
                             lithe_tensor *out) {
    LITHE__TRY(small("hash_strings", out));
    int64_t n = out->numel, nb = bytes->numel;
    if (!n) return LITHE_OK;
    if (nb >= (1 << 30) || offsets->numel != n + 1 || offsets->dtype != LITHE_I64 || bytes->dtype != LITHE_U8)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu hash_strings: %lld bytes, %lld offsets (%s)", (long long)nb,
                           (long long)offsets->numel, lithe_dtype_name(offsets->dtype));
    int64_t *off64 = lithe__malloc((size_t)(n + 1) * 8);
    int32_t *off32 = lithe__malloc((size_t)(n + 1) * 4);
    uint8_t *raw = lithe__calloc((size_t)nb + 4, 1);
    lithe_tensor *O = NULL, *Bt = NULL;
    lithe_status s = off64 && off32 && raw ? LITHE_OK : lithe__oom("hash_strings", (size_t)(n + 1) * 12 + (size_t)nb);
    if (s == LITHE_OK) s = lithe_tensor_read(offsets, off64, (size_t)(n + 1) * 8);
    if (s == LITHE_OK) s = lithe_tensor_read(bytes, raw, (size_t)nb);
    for (int64_t i = 0; s == LITHE_OK && i <= n; i++) {
        if (off64[i] < 0 || off64[i] > nb || (i && off64[i] <= off64[i - 1]))
            s = lithe__fail(LITHE_ERR_VALUE, "webgpu hash_strings: offset %lld of string %lld", (long long)off64[i],
                            (long long)i);
        else off32[i] = (int32_t)off64[i];
    }
    if (s == LITHE_OK) s = lithe__wg_upload_scratch(be, off32, (size_t)(n + 1) * 4, &O);
    if (s == LITHE_OK) s = lithe__wg_upload_scratch(be, raw, ((size_t)nb + 3) & ~(size_t)3, &Bt);
    lithe__wg_params p = {.u = {(uint32_t)n, 0, 0, 0, seed}};
    if (s == LITHE_OK)
        s = WG_DISPATCH("hash_strings", sparse, 2, &p, 1u, lithe__wg_groups(n), 1, out, Bt, NULL, NULL, O);
    lithe_tensor_release(O);
    lithe_tensor_release(Bt);
    lithe__free(off64);
    lithe__free(off32);
    lithe__free(raw);
    return s;
}

/* The int8 GEMM: W's bytes on the device, its scales and zero points (host-side, W's storage's
 * quant) uploaded next to them; dequantized in the shader. */
lithe_status wg_gemm_q8(lithe_backend *be, const lithe_tensor *A, const lithe_tensor *W, const lithe_tensor *b,
                        const lithe__act *a, lithe_tensor *Z, lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("gemm_q8", A));
    LITHE__TRY(lithe__wg_dense("gemm_q8", Y));
    if (Z) LITHE__TRY(lithe__wg_dense("gemm_q8", Z));
    if (b) LITHE__TRY(lithe__wg_dense("gemm_q8", b));
    const lithe__quant *q = W->storage->quant;
    if (W->dtype != LITHE_I8 || !q || W->ndim != 2)
        return lithe__fail(LITHE_ERR_DTYPE, "webgpu gemm_q8: W must be a 2-D int8 tensor with quantization parameters, "
                           "got %s%s", lithe_dtype_name(W->dtype), q ? "" : " without them");
    LITHE__TRY(small("gemm_q8", W));
    int64_t M = Y->shape[0], N = Y->shape[1], K = A->shape[1];
    if (W->shape[0] != N || W->shape[1] != K || (q->n != 1 && q->n != N))
        return lithe__fail(LITHE_ERR_SHAPE, "webgpu gemm_q8: W (%lld, %lld) with %lld scales for Y (%lld, %lld), K %lld",
                           (long long)W->shape[0], (long long)W->shape[1], (long long)q->n, (long long)M, (long long)N,
                           (long long)K);
    if (a && (unsigned)a->kind >= LITHE__ACT_COUNT)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "webgpu gemm_q8: unknown activation kind %d", (int)a->kind);
    if (!M || !N) return LITHE_OK;
    size_t nq = (size_t)q->n;
    uint32_t *qp = lithe__malloc(nq * 8);
    if (!qp) return lithe__oom("gemm_q8", nq * 8);
    memcpy(qp, q->scale, nq * 4);
    memcpy(qp + nq, q->zero, nq * 4);
    lithe_tensor *Q = NULL;
    lithe_status s = lithe__wg_upload_scratch(be, qp, nq * 8, &Q);
    lithe__free(qp);
    if (s != LITHE_OK) return s;
    lithe__wg_params p = {.u = {(uint32_t)M, (uint32_t)N, (uint32_t)K, (uint32_t)(W->offset % 4),
                                (b ? 1u : 0u) | (a ? 2u : 0u) | (Z ? 4u : 0u), a ? (uint32_t)a->kind : 0u, nq == (size_t)N && N > 1}};
    if (a) {
        p.f[8] = a->slope;
        p.f[9] = a->offset;
        p.f[10] = a->min_val;
        p.f[11] = a->max_val;
        p.f[12] = a->threshold;
    }
    s = WG_DISPATCH("gemm_q8", gemm_q8, 0, &p, 3u, lithe__wg_groups(M * N), 1, Y, Z, A, W, b, Q);
    lithe_tensor_release(Q);
    return s;
}
