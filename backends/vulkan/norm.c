/* The Vulkan backend's primitives: maxout and layernorm. Each unpacks its tensors into bindings
 * and push constants and records dispatches of a shader family (shaders/<family>.comp); shapes
 * were checked by the layer; what only this backend limits (sizes past 32-bit indexing, dtypes a
 * shader lacks) is refused with LITHE_ERR_UNSUPPORTED. The table: table.c. */
#include "ops.h"

/* ---- maxout, layernorm ---- */

lithe_status vk_maxout(lithe_backend *be, const lithe_tensor *X, lithe_tensor *Y, lithe_tensor *which) {
    LITHE__TRY(need_f32("maxout", X));
    int64_t R = X->shape[0] * X->shape[1];
    lithe__vk_push p = {.u = {(uint32_t)R, (uint32_t)X->shape[2]}};
    return DISPATCH("maxout", "maxout", SPEC0, &p, groups_for(R), 1, Y, which, X);
}

lithe_status vk_maxout_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *which,
                                       lithe_tensor *dX) {
    LITHE__TRY(need_f32("maxout_backward", dX));
    int64_t R = dX->shape[0] * dX->shape[1];
    lithe__vk_push p = {.u = {(uint32_t)R, (uint32_t)dX->shape[2]}};
    return DISPATCH("maxout_backward", "maxout", SPEC1, &p, groups_for(R), 1, dX, which, dY);
}

lithe_status vk_layernorm(lithe_backend *be, const lithe_tensor *X, const lithe_tensor *G,
                                 const lithe_tensor *b, float eps, lithe_tensor *Y, lithe_tensor *mean,
                                 lithe_tensor *inv_std) {
    LITHE__TRY(need_f32("layernorm", X));
    int64_t M = X->shape[0];
    lithe__vk_push p = {.u = {(uint32_t)M, (uint32_t)X->shape[1]}, .f = {eps}};
    uint32_t g = M > (int64_t)MAX_GROUPS ? MAX_GROUPS : (uint32_t)M;
    return DISPATCH("layernorm", "layernorm", SPEC0, &p, g, 1, Y, X, G, b, mean, inv_std);
}

lithe_status vk_layernorm_backward(lithe_backend *be, const lithe_tensor *dY, const lithe_tensor *X,
                                          const lithe_tensor *G, const lithe_tensor *mean, const lithe_tensor *inv_std,
                                          lithe_tensor *dX, lithe_tensor *dG, lithe_tensor *db) {
    LITHE__TRY(need_f32("layernorm_backward", X));
    int64_t M = X->shape[0], N = X->shape[1];
    lithe__vk_push p = {.u = {(uint32_t)M, (uint32_t)N}};
    /* dG and db first: dX may overwrite dY */
    LITHE__TRY(DISPATCH("layernorm_backward", "layernorm", SPEC2, &p, groups_for(N), 1, dG, dY, X, db, mean, inv_std));
    uint32_t g = M > (int64_t)MAX_GROUPS ? MAX_GROUPS : (uint32_t)M;
    return DISPATCH("layernorm_backward", "layernorm", SPEC1, &p, g, 1, dX, dY, X, G, mean, inv_std);
}
