/* The Vulkan backend's primitives: activations, softmax, and the elementwise maths and log-softmax
 * of imported graphs. Each unpacks its tensors into bindings and push constants and records
 * dispatches of a shader family (shaders/<family>.comp); shapes were checked by the layer; what
 * only this backend limits (sizes past 32-bit indexing, dtypes a shader lacks) is refused with
 * LITHE_ERR_UNSUPPORTED. The table: table.c. */
#include "ops.h"

/* ---- activations, softmax ---- */

static void act_push(lithe__vk_push *p, const lithe__act *a, int64_t n) {
    p->u[0] = (uint32_t)n;
    p->u[1] = (uint32_t)a->kind;
    p->f[0] = a->slope;
    p->f[1] = a->offset;
    p->f[2] = a->min_val;
    p->f[3] = a->max_val;
    p->f[4] = a->threshold;
}

lithe_status vk_act(lithe_backend *be, const lithe__act *a, const lithe_tensor *X, lithe_tensor *Y) {
    LITHE__TRY(need_f32("act", Y));
    if ((unsigned)a->kind >= LITHE__ACT_COUNT)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "vulkan act: unknown activation kind %d", (int)a->kind);
    lithe__vk_push p = {{0}, {0}};
    act_push(&p, a, Y->numel);
    return DISPATCH("act", "act", SPEC0, &p, groups_for(Y->numel), 1, Y, X);
}

lithe_status vk_act_backward(lithe_backend *be, const lithe__act *a, const lithe_tensor *dY,
                                    const lithe_tensor *X, const lithe_tensor *Y, lithe_tensor *dX) {
    LITHE__TRY(need_f32("act_backward", dX));
    if ((unsigned)a->kind >= LITHE__ACT_COUNT)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "vulkan act_backward: unknown activation kind %d", (int)a->kind);
    lithe__vk_push p = {{0}, {0}};
    act_push(&p, a, dX->numel);
    p.u[2] = X != NULL;
    p.u[3] = Y != NULL;
    return DISPATCH("act_backward", "act", SPEC1, &p, groups_for(dX->numel), 1, dX, dY, X, Y);
}

lithe_status vk_softmax(lithe_backend *be, const lithe_tensor *X, float temperature, lithe_tensor *Y) {
    LITHE__TRY(need_f32("softmax", Y));
    lithe__vk_push p = {.u = {(uint32_t)X->shape[0], (uint32_t)X->shape[1]}, .f = {temperature}};
    uint32_t g = X->shape[0] > (int64_t)MAX_GROUPS ? MAX_GROUPS : (uint32_t)X->shape[0];
    return DISPATCH("softmax", "softmax", SPEC0, &p, g, 1, Y, X);
}

lithe_status vk_softmax_backward(lithe_backend *be, const lithe_tensor *Y, const lithe_tensor *dY,
                                        float temperature, lithe_tensor *dX) {
    LITHE__TRY(need_f32("softmax_backward", dX));
    lithe__vk_push p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1]}, .f = {temperature}};
    uint32_t g = Y->shape[0] > (int64_t)MAX_GROUPS ? MAX_GROUPS : (uint32_t)Y->shape[0];
    return DISPATCH("softmax_backward", "softmax", SPEC1, &p, g, 1, dX, Y, dY);
}
/* ---- elementwise maths and log-softmax of imported graphs (shaders/graph.comp) ---- */

lithe_status vk_unary(lithe_backend *be, int op, const lithe_tensor *X, lithe_tensor *Y) {
    LITHE__TRY(need_f32_dense("unary", X));
    LITHE__TRY(need_f32_dense("unary", Y));
    if (op < 0 || op >= LITHE__UN_COUNT) return lithe__fail(LITHE_ERR_VALUE, "vulkan unary: op %d", op);
    if (!X->numel) return LITHE_OK;
    lithe__vk_push p = {.u = {(uint32_t)op, (uint32_t)X->numel}};
    return DISPATCH("unary", "graph", SPEC0, &p, groups_for(X->numel), 1, Y, X);
}

lithe_status vk_unary_backward(lithe_backend *be, int op, const lithe_tensor *X, const lithe_tensor *Y,
                                      const lithe_tensor *dY, lithe_tensor *dX) {
    const lithe_tensor *fs[] = {X, Y, dY, dX};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++) LITHE__TRY(need_f32_dense("unary_backward", fs[i]));
    if (op < 0 || op >= LITHE__UN_COUNT) return lithe__fail(LITHE_ERR_VALUE, "vulkan unary_backward: op %d", op);
    if (!X->numel) return LITHE_OK;
    lithe__vk_push p = {.u = {(uint32_t)op, (uint32_t)X->numel}};
    return DISPATCH("unary_backward", "graph", SPEC1, &p, groups_for(X->numel), 1, dX, X, Y, dY);
}

lithe_status vk_log_softmax(lithe_backend *be, const lithe_tensor *X, lithe_tensor *Y) {
    LITHE__TRY(need_f32_dense("log_softmax", X));
    LITHE__TRY(need_f32_dense("log_softmax", Y));
    if (!X->numel) return LITHE_OK;
    lithe__vk_push p = {.u = {(uint32_t)X->shape[0], (uint32_t)X->shape[1]}};
    return DISPATCH("log_softmax", "graph", SPEC2, &p, groups_for(X->shape[0]), 1, Y, X);
}

lithe_status vk_log_softmax_backward(lithe_backend *be, const lithe_tensor *Y, const lithe_tensor *dY,
                                            lithe_tensor *dX) {
    LITHE__TRY(need_f32_dense("log_softmax_backward", Y));
    LITHE__TRY(need_f32_dense("log_softmax_backward", dY));
    LITHE__TRY(need_f32_dense("log_softmax_backward", dX));
    if (!Y->numel) return LITHE_OK;
    static const uint32_t SPEC3[LITHE__VK_SPEC] = {3};
    lithe__vk_push p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1]}};
    return DISPATCH("log_softmax_backward", "graph", SPEC3, &p, groups_for(Y->shape[0]), 1, dX, Y, dY);
}
