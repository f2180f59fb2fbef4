/* The Vulkan backend's primitives: convolution, pooling and the broadcasting ops of imported
 * graphs. Each unpacks its tensors into bindings and push constants and records dispatches of a
 * shader family (shaders/<family>.comp); shapes were checked by the layer; what only this backend
 * limits (sizes past 32-bit indexing, dtypes a shader lacks) is refused with
 * LITHE_ERR_UNSUPPORTED. The table: table.c. */
#include "ops.h"

/* ---- 2-D convolution of imported graphs (shaders/conv.comp) ---- */

/* The geometry as conv.comp reads it; refused when an index could pass 32 bits. */
static lithe_status conv_push(const char *op, const lithe__conv2d *g, bool bias, lithe__vk_push *p) {
    int64_t big = g->N * (g->C > g->M ? g->C : g->M) * (g->H * g->W > g->OH * g->OW ? g->H * g->W : g->OH * g->OW);
    if (big >= INT32_MAX || g->M * g->C * g->KH * g->KW >= INT32_MAX || g->group <= 0)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: the convolution exceeds 32-bit indexing", op);
    memset(p, 0, sizeof *p);
    const int64_t u[10] = {g->N, g->C, g->H, g->W, g->M, g->KH, g->KW, g->OH, g->OW, g->group};
    for (int i = 0; i < 10; i++) p->u[i] = (uint32_t)u[i];
    const int32_t f[7] = {(int32_t)g->stride[0], (int32_t)g->stride[1], (int32_t)g->pad[0], (int32_t)g->pad[1],
                          (int32_t)g->dil[0], (int32_t)g->dil[1], bias};
    memcpy(p->f, f, sizeof f); /* ints carried as float bits */
    return LITHE_OK;
}

lithe_status vk_conv2d(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X, const lithe_tensor *W,
                              const lithe_tensor *b, const lithe__act *a, lithe_tensor *Y) {
    LITHE__TRY(need_f32("conv2d", X));
    LITHE__TRY(need_f32("conv2d", W));
    LITHE__TRY(need_f32("conv2d", Y));
    if (b) LITHE__TRY(need_f32("conv2d", b));
    if (!Y->numel) return LITHE_OK;
    lithe__vk_push p;
    LITHE__TRY(conv_push("conv2d", g, b != NULL, &p));
    LITHE__TRY(DISPATCH("conv2d", "conv", SPEC0, &p, groups_for(Y->numel), 1, Y, X, W, b));
    /* the fused activation: the act primitive over Y in place (Conv then Relu / Clip's bits) */
    return a ? vk_act(be, a, Y, Y) : LITHE_OK;
}

lithe_status vk_conv2d_backward(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X,
                                       const lithe_tensor *W, const lithe_tensor *dY, lithe_tensor *dX,
                                       lithe_tensor *dW, lithe_tensor *db) {
    const lithe_tensor *fs[] = {X, W, dY, dX, dW, db};
    for (size_t i = 0; i < sizeof fs / sizeof *fs; i++)
        if (fs[i]) LITHE__TRY(need_f32("conv2d_backward", fs[i]));
    lithe__vk_push p;
    LITHE__TRY(conv_push("conv2d_backward", g, false, &p));
    static const uint32_t SPEC3[LITHE__VK_SPEC] = {3};
    lithe_status s = LITHE_OK;
    if (dX && dX->numel) s = DISPATCH("conv2d_backward", "conv", SPEC1, &p, groups_for(dX->numel), 1, dX, dY, W);
    if (s == LITHE_OK && dW && dW->numel)
        s = DISPATCH("conv2d_backward", "conv", SPEC2, &p, groups_for(dW->numel), 1, dW, dY, X);
    if (s == LITHE_OK && db && db->numel)
        s = DISPATCH("conv2d_backward", "conv", SPEC3, &p, groups_for(db->numel), 1, db, dY);
    return s;
}

/* Pooling geometry as conv.comp reads it (u9: 1 = max, 2 = count_include_pad). */
static lithe_status pool_push(const char *op, const lithe__pool2d *g, lithe__vk_push *p) {
    int64_t big = g->N * g->C * (g->H * g->W > g->OH * g->OW ? g->H * g->W : g->OH * g->OW);
    if (big >= INT32_MAX)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: the pooling exceeds 32-bit indexing", op);
    memset(p, 0, sizeof *p);
    const int64_t u[10] = {g->N, g->C, g->H, g->W, g->C, g->KH, g->KW, g->OH, g->OW,
                           (g->max ? 1 : 0) | (g->count_include_pad ? 2 : 0)};
    for (int i = 0; i < 10; i++) p->u[i] = (uint32_t)u[i];
    const int32_t f[6] = {(int32_t)g->stride[0], (int32_t)g->stride[1], (int32_t)g->pad[0], (int32_t)g->pad[1],
                          (int32_t)g->dil[0], (int32_t)g->dil[1]};
    memcpy(p->f, f, sizeof f);
    return LITHE_OK;
}

static const uint32_t SPEC4[LITHE__VK_SPEC] = {4}, SPEC5[LITHE__VK_SPEC] = {5};

lithe_status vk_pool2d(lithe_backend *be, const lithe__pool2d *g, const lithe_tensor *X, lithe_tensor *Y,
                              lithe_tensor *which) {
    LITHE__TRY(need_f32("pool2d", X));
    LITHE__TRY(need_f32("pool2d", Y));
    if (g->max && which && which->dtype != LITHE_I32)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan pool2d: max pooling's which must be int32, got %s",
                           lithe_dtype_name(which->dtype));
    if (!Y->numel) return LITHE_OK;
    lithe__vk_push p;
    LITHE__TRY(pool_push("pool2d", g, &p));
    if (g->max && !which) p.u[9] |= 4u; /* inference: the shader writes Y only */
    return DISPATCH("pool2d", "conv", SPEC4, &p, groups_for(Y->numel), 1, Y, X, NULL, NULL, g->max ? which : NULL);
}

lithe_status vk_pool2d_backward(lithe_backend *be, const lithe__pool2d *g, const lithe_tensor *dY,
                                       const lithe_tensor *which, lithe_tensor *dX) {
    LITHE__TRY(need_f32("pool2d_backward", dY));
    LITHE__TRY(need_f32("pool2d_backward", dX));
    if (g->max && (!which || which->dtype != LITHE_I32))
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan pool2d_backward: max pooling needs an int32 which");
    if (!dX->numel) return LITHE_OK;
    lithe__vk_push p;
    LITHE__TRY(pool_push("pool2d_backward", g, &p));
    return DISPATCH("pool2d_backward", "conv", SPEC5, &p, groups_for(dX->numel), 1, dX, dY, NULL, NULL,
                    g->max ? which : NULL);
}
/* ---- broadcasting ops of imported graphs (shaders/bcast.comp) ---- */

/* Operand t's element strides in the index space `shape` (nd axes), as the CPU's bcast_strides:
 * aligned at the last axis, 0 along an axis t broadcasts (extent 1, or missing). */
static void bcast_strides(const lithe_tensor *t, int nd, const int64_t *shape, int32_t *out) {
    int64_t s = 1;
    for (int d = nd - 1, k = t->ndim - 1; d >= 0; d--, k--) {
        if (k < 0) {
            out[d] = 0;
            continue;
        }
        out[d] = t->shape[k] == 1 && shape[d] != 1 ? 0 : (int32_t)s;
        s *= t->shape[k];
    }
}

/* Uploads bcast.comp's layout [nd, shape[8], s0[8], s1[8], s2[8]] for up to three operands. */
static lithe_status bcast_layout(lithe_backend *be, const char *op, int nd, const int64_t *shape,
                                 const lithe_tensor *const ops3[3], lithe_tensor **out) {
    *out = NULL;
    if (nd > 8) return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: %d axes", op, nd);
    int32_t lay[33] = {nd};
    for (int d = 0; d < nd; d++) lay[1 + d] = (int32_t)shape[d];
    for (int o = 0; o < 3; o++) {
        if (!ops3[o]) continue;
        LITHE__TRY(need_f32(op, ops3[o]));
        if (!lithe_tensor_is_contiguous(ops3[o]))
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan %s: strided tensors are not supported", op);
        bcast_strides(ops3[o], nd, shape, lay + 9 + 8 * o);
    }
    LITHE__TRY(lithe__vk_scratch(be, sizeof lay, out));
    lithe_status s = be->ops->upload(be, (*out)->storage->data, 0, lay, sizeof lay);
    if (s != LITHE_OK) {
        lithe_tensor_release(*out);
        *out = NULL;
    }
    return s;
}

static const uint32_t SPEC_B0[LITHE__VK_SPEC] = {0}, SPEC_B1[LITHE__VK_SPEC] = {1}, SPEC_B2[LITHE__VK_SPEC] = {2},
                      SPEC_B3[LITHE__VK_SPEC] = {3}, SPEC_B4[LITHE__VK_SPEC] = {4};

lithe_status vk_bcast_binary(lithe_backend *be, int op, const lithe_tensor *A, const lithe_tensor *B,
                                    lithe_tensor *Y) {
    LITHE__TRY(need_f32_dense("bcast_binary", Y));
    if (!Y->numel) return LITHE_OK;
    lithe_tensor *L = NULL;
    LITHE__TRY(bcast_layout(be, "bcast_binary", Y->ndim, Y->shape, (const lithe_tensor *const[3]){A, B, NULL}, &L));
    lithe__vk_push p = {.u = {(uint32_t)op, (uint32_t)Y->numel}};
    lithe_status s = DISPATCH("bcast_binary", "bcast", SPEC_B0, &p, groups_for(Y->numel), 1, Y, A, B, NULL, NULL, L);
    lithe_tensor_release(L);
    return s;
}

lithe_status vk_bcast_binary_backward(lithe_backend *be, int op, const lithe_tensor *A, const lithe_tensor *B,
                                             const lithe_tensor *Y, const lithe_tensor *dY, lithe_tensor *dA,
                                             lithe_tensor *dB) {
    LITHE__TRY(need_f32_dense("bcast_binary_backward", dY));
    if (Y) LITHE__TRY(need_f32_dense("bcast_binary_backward", Y));
    if (!dY->numel) return LITHE_OK;
    lithe_tensor *L = NULL;
    LITHE__TRY(bcast_layout(be, "bcast_binary_backward", dY->ndim, dY->shape,
                            (const lithe_tensor *const[3]){A, B, NULL}, &L));
    lithe_status s = LITHE_OK;
    lithe_tensor *grads[2] = {dA, dB};
    for (uint32_t side = 0; side < 2 && s == LITHE_OK; side++) {
        lithe_tensor *g = grads[side];
        if (!g || !g->numel) continue;
        s = need_f32_dense("bcast_binary_backward", g);
        lithe__vk_push p = {.u = {(uint32_t)op, (uint32_t)g->numel, side, Y != NULL}};
        if (s == LITHE_OK)
            s = DISPATCH("bcast_binary_backward", "bcast", SPEC_B4, &p, groups_for(g->numel), 1, g, A, B, Y, dY, L);
    }
    lithe_tensor_release(L);
    return s;
}

lithe_status vk_bcast_where(lithe_backend *be, const lithe_tensor *C, const lithe_tensor *A,
                                   const lithe_tensor *B, lithe_tensor *Y) {
    LITHE__TRY(need_f32_dense("bcast_where", Y));
    if (!Y->numel) return LITHE_OK;
    lithe_tensor *L = NULL;
    LITHE__TRY(bcast_layout(be, "bcast_where", Y->ndim, Y->shape, (const lithe_tensor *const[3]){C, A, B}, &L));
    lithe__vk_push p = {.u = {0, (uint32_t)Y->numel}};
    lithe_status s = DISPATCH("bcast_where", "bcast", SPEC_B1, &p, groups_for(Y->numel), 1, Y, C, A, B, NULL, L);
    lithe_tensor_release(L);
    return s;
}

lithe_status vk_broadcast_to(lithe_backend *be, const lithe_tensor *X, float alpha, float beta,
                                    lithe_tensor *Y) {
    LITHE__TRY(need_f32_dense("broadcast_to", Y));
    if (!Y->numel) return LITHE_OK;
    lithe_tensor *L = NULL;
    LITHE__TRY(bcast_layout(be, "broadcast_to", Y->ndim, Y->shape, (const lithe_tensor *const[3]){X, NULL, NULL}, &L));
    lithe__vk_push p = {.u = {0, (uint32_t)Y->numel}, .f = {alpha, beta}};
    lithe_status s = DISPATCH("broadcast_to", "bcast", SPEC_B2, &p, groups_for(Y->numel), 1, Y, X, NULL, NULL, NULL, L);
    lithe_tensor_release(L);
    return s;
}

lithe_status vk_reduce_to(lithe_backend *be, const lithe_tensor *X, float alpha, float beta, lithe_tensor *Y) {
    LITHE__TRY(need_f32_dense("reduce_to", X));
    if (!Y->numel) return LITHE_OK;
    lithe_tensor *L = NULL;
    LITHE__TRY(bcast_layout(be, "reduce_to", X->ndim, X->shape, (const lithe_tensor *const[3]){Y, NULL, NULL}, &L));
    lithe__vk_push p = {.u = {0, (uint32_t)Y->numel}, .f = {alpha, beta}};
    lithe_status s = DISPATCH("reduce_to", "bcast", SPEC_B3, &p, groups_for(Y->numel), 1, Y, X, NULL, NULL, NULL, L);
    lithe_tensor_release(L);
    return s;
}
