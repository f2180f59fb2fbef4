/* The WebGPU backend's optional cce_stats op (core/backend.h): the cross-entropy loss's range
 * check, Thinc's loss and the cross-entropy in one workgroup (shaders/cce.wgsl, OP 1), so that a
 * training step reads its loss back once (core/train/loss_device.c). */
#include "webgpu_internal.h"

lithe_status lithe__wg_cce_stats(lithe_backend *be, const lithe_tensor *G, const lithe_tensor *labels,
                                 const lithe_tensor *D, float smoothing, bool has_missing, int64_t missing,
                                 lithe_tensor *out) {
    LITHE__TRY(lithe__wg_dense("cce_stats", G));
    LITHE__TRY(lithe__wg_dense("cce_stats", D));
    LITHE__TRY(lithe__wg_dense("cce_stats", out));
    if (labels->dtype != LITHE_I32 && labels->dtype != LITHE_I64)
        return lithe__fail(LITHE_ERR_DTYPE, "webgpu cce_stats: labels must be int32 or int64, got %s",
                           lithe_dtype_name(labels->dtype));
    int64_t B = G->shape[0], C = G->shape[1];
    float off = C > 1 ? smoothing / (float)(C - 1) : 0.0f, on = 1.0f - smoothing;
    uint64_t mu = (uint64_t)missing;
    lithe__wg_params p = {.u = {(uint32_t)B, (uint32_t)C, labels->dtype == LITHE_I64, has_missing, (uint32_t)mu,
                                (uint32_t)(mu >> 32)},
                          .f = {on, off}};
    return WG_DISPATCH("cce_stats", cce, 1, &p, 1u, 1, 1, out, G, labels, D);
}
