/* The Vulkan backend's primitives: ids (gather, scatter, hashing) and hashed strings. Each unpacks
 * its tensors into bindings and push constants and records dispatches of a shader family
 * (shaders/<family>.comp); shapes were checked by the layer; what only this backend limits (sizes
 * past 32-bit indexing, dtypes a shader lacks) is refused with LITHE_ERR_UNSUPPORTED. The table:
 * table.c. */
#include "ops.h"

/* ---- ids ---- */

static lithe_status ids_kind(const char *op, const lithe_tensor *ids, uint32_t *wide) {
    if (ids->dtype == LITHE_I32) *wide = 0;
    else if (ids->dtype == LITHE_I64 || ids->dtype == LITHE_U64) *wide = 1;
    else return lithe__fail(LITHE_ERR_DTYPE, "vulkan %s: ids must be int32, int64 or uint64, got %s", op,
                            lithe_dtype_name(ids->dtype));
    return check_size(op, ids);
}

lithe_status vk_gather_rows(lithe_backend *be, const lithe_tensor *table, const lithe_tensor *ids,
                                   lithe_tensor *Y) {
    LITHE__TRY(need_f32("gather_rows", table));
    uint32_t wide = 0;
    LITHE__TRY(ids_kind("gather_rows", ids, &wide));
    lithe__vk_push p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1], wide}};
    return DISPATCH("gather_rows", "index", SPEC0, &p, groups_for(Y->numel), 1, Y, table, ids);
}

lithe_status vk_scatter_add_rows(lithe_backend *be, lithe_tensor *table, const lithe_tensor *ids,
                                        const lithe_tensor *X) {
    LITHE__TRY(need_f32("scatter_add_rows", table));
    uint32_t wide = 0;
    LITHE__TRY(ids_kind("scatter_add_rows", ids, &wide));
    lithe__vk_push p = {.u = {(uint32_t)X->shape[0], (uint32_t)X->shape[1], wide}};
    return DISPATCH("scatter_add_rows", "index", SPEC1, &p, groups_for(X->shape[1]), 1, table, X, ids);
}

lithe_status vk_hash_ids(lithe_backend *be, const lithe_tensor *ids, uint32_t seed, lithe_tensor *out) {
    LITHE__TRY(check_size("hash_ids", out));
    if (ids->dtype != LITHE_U64 && ids->dtype != LITHE_I64)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan hash_ids: ids must be uint64, got %s", lithe_dtype_name(ids->dtype));
    lithe__vk_push p = {.u = {(uint32_t)ids->numel, seed}};
    return DISPATCH("hash_ids", "hash", SPEC0, &p, groups_for(ids->numel), 1, out, ids);
}
/* Strings live in host memory (a STRINGS value's bytes and offsets): uploaded, then hashed on
 * the device so the keys land where the model computes. */
lithe_status vk_hash_strings(lithe_backend *be, const lithe_tensor *bytes, const lithe_tensor *offsets,
                                    uint32_t seed, lithe_tensor *out) {
    LITHE__TRY(check_size("hash_strings", out));
    int64_t n = out->numel, nb = bytes->numel;
    if (!n) return LITHE_OK;
    if (nb >= INT32_MAX || offsets->numel != n + 1 || offsets->dtype != LITHE_I64 || bytes->dtype != LITHE_U8)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan hash_strings: %lld bytes, %lld offsets (%s)", (long long)nb,
                           (long long)offsets->numel, lithe_dtype_name(offsets->dtype));
    int64_t *off64 = lithe__malloc((size_t)(n + 1) * 8);
    int32_t *off32 = lithe__malloc((size_t)(n + 1) * 4);
    uint8_t *raw = lithe__malloc((size_t)nb + 4);
    lithe_tensor *O = NULL, *Bt = NULL;
    lithe_status s = off64 && off32 && raw ? LITHE_OK : lithe__oom("hash_strings", (size_t)(n + 1) * 12 + (size_t)nb);
    if (s == LITHE_OK) s = lithe_tensor_read(offsets, off64, (size_t)(n + 1) * 8);
    if (s == LITHE_OK) s = lithe_tensor_read(bytes, raw, (size_t)nb);
    for (int64_t i = 0; s == LITHE_OK && i <= n; i++) off32[i] = (int32_t)off64[i]; /* < nb < 2^31 */
    if (s == LITHE_OK) s = lithe__vk_scratch(be, (size_t)(n + 1) * 4, &O);
    if (s == LITHE_OK) s = lithe__vk_scratch(be, (size_t)nb + 4, &Bt);
    if (s == LITHE_OK) s = be->ops->upload(be, O->storage->data, 0, off32, (size_t)(n + 1) * 4);
    if (s == LITHE_OK && nb) s = be->ops->upload(be, Bt->storage->data, 0, raw, (size_t)nb);
    lithe__vk_push p = {.u = {(uint32_t)n, 0, 0, 0, seed}};
    if (s == LITHE_OK)
        s = lithe__vk_dispatch(be, "hash_strings", "sparse", SPEC2, &p,
                               (const lithe_tensor *const[]){out, Bt, NULL, NULL, O}, 5, groups_for(n), 1);
    lithe_tensor_release(O);
    lithe_tensor_release(Bt);
    lithe__free(off64);
    lithe__free(off32);
    lithe__free(raw);
    return s;
}
