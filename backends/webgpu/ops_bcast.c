/* The WebGPU backend's broadcasting and elementwise-maths primitives of imported graphs
 * (shaders/bcast.wgsl, shaders/unary.wgsl; ports of backends/vulkan's bcast.comp and graph.comp):
 * bcast_binary(_backward), bcast_where, broadcast_to, reduce_to, unary(_backward),
 * log_softmax(_backward). The broadcast layout travels in the parameter block (no upload, so no
 * extra submit): the index space with adjacent axes of one broadcast pattern merged, and each
 * operand's broadcast axes as a bit mask. Shapes were checked by the graph layer. */
#include "webgpu_internal.h"

/* The layout of up to three operands in the index space (nd, shape): u4 = nd', u5 = masks,
 * extents in u6..u9 and f8..f11 (webgpu's shaders/bcast.wgsl). */
static lithe_status layout(const char *op, int nd, const int64_t *shape, const lithe_tensor *const ops3[3],
                           lithe__wg_params *p) {
    uint32_t mask[LITHE_MAX_DIMS] = {0}; /* per axis: bit o set when operand o broadcasts along it */
    for (int o = 0; o < 3; o++) {
        const lithe_tensor *t = ops3[o];
        if (!t) continue;
        LITHE__TRY(lithe__wg_dense(op, t));
        for (int d = nd - 1, k = t->ndim - 1; d >= 0; d--, k--)
            if (k < 0 || (t->shape[k] == 1 && shape[d] != 1)) mask[d] |= 1u << o;
    }
    /* drop unit axes, merge neighbours of one pattern (the odometer order is kept) */
    int64_t ext[LITHE_MAX_DIMS];
    uint32_t m2[LITHE_MAX_DIMS];
    int n = 0;
    for (int d = 0; d < nd; d++) {
        if (shape[d] == 1) continue;
        if (n > 0 && m2[n - 1] == mask[d]) {
            ext[n - 1] *= shape[d];
            continue;
        }
        ext[n] = shape[d];
        m2[n++] = mask[d];
    }
    if (n == 0) {
        ext[0] = 1;
        m2[n++] = 0;
    }
    if (n > 8) return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: %d broadcast axes (at most 8)", op, n);
    p->u[4] = (uint32_t)n;
    p->u[5] = 0;
    for (int d = 0; d < n; d++) {
        for (int o = 0; o < 3; o++)
            if (m2[d] >> o & 1) p->u[5] |= 1u << (8 * o + d);
        if (d < 4) {
            p->u[6 + d] = (uint32_t)ext[d];
        } else {
            if (ext[d] >= (1 << 24))
                return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: an extent of %lld past the 4th axis", op,
                                   (long long)ext[d]);
            p->f[4 + d] = (float)ext[d];
        }
    }
    return LITHE_OK;
}

lithe_status wg_bcast_binary(lithe_backend *be, int op, const lithe_tensor *A, const lithe_tensor *B, lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("bcast_binary", Y));
    if ((unsigned)op >= LITHE__BIN_COUNT) return lithe__fail(LITHE_ERR_INVALID_ARG, "webgpu bcast_binary: op %d", op);
    if (!Y->numel) return LITHE_OK;
    lithe__wg_params p = {.u = {(uint32_t)op, (uint32_t)Y->numel}};
    LITHE__TRY(layout("bcast_binary", Y->ndim, Y->shape, (const lithe_tensor *const[3]){A, B, NULL}, &p));
    return WG_DISPATCH("bcast_binary", bcast, 0, &p, 1u, lithe__wg_groups(Y->numel), 1, Y, A, B, NULL, NULL);
}

lithe_status wg_bcast_binary_backward(lithe_backend *be, int op, const lithe_tensor *A, const lithe_tensor *B,
                                      const lithe_tensor *Y, const lithe_tensor *dY, lithe_tensor *dA, lithe_tensor *dB) {
    LITHE__TRY(lithe__wg_dense("bcast_binary_backward", dY));
    if (Y) LITHE__TRY(lithe__wg_dense("bcast_binary_backward", Y));
    if ((unsigned)op >= LITHE__BIN_COUNT)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "webgpu bcast_binary_backward: op %d", op);
    if (!dY->numel) return LITHE_OK;
    lithe__wg_params base = {.u = {(uint32_t)op, 0, 0, Y != NULL}};
    LITHE__TRY(layout("bcast_binary_backward", dY->ndim, dY->shape, (const lithe_tensor *const[3]){A, B, NULL}, &base));
    lithe_tensor *grads[2] = {dA, dB};
    for (uint32_t side = 0; side < 2; side++) {
        lithe_tensor *g = grads[side];
        if (!g || !g->numel) continue;
        LITHE__TRY(lithe__wg_dense("bcast_binary_backward", g));
        lithe__wg_params p = base;
        p.u[1] = (uint32_t)g->numel;
        p.u[2] = side;
        LITHE__TRY(WG_DISPATCH("bcast_binary_backward", bcast, 4, &p, 1u, lithe__wg_groups(g->numel), 1, g, A, B, Y, dY));
    }
    return LITHE_OK;
}

lithe_status wg_bcast_where(lithe_backend *be, const lithe_tensor *C, const lithe_tensor *A, const lithe_tensor *B,
                            lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("bcast_where", Y));
    if (!Y->numel) return LITHE_OK;
    lithe__wg_params p = {.u = {0, (uint32_t)Y->numel}};
    LITHE__TRY(layout("bcast_where", Y->ndim, Y->shape, (const lithe_tensor *const[3]){C, A, B}, &p));
    return WG_DISPATCH("bcast_where", bcast, 1, &p, 1u, lithe__wg_groups(Y->numel), 1, Y, C, A, B, NULL);
}

lithe_status wg_broadcast_to(lithe_backend *be, const lithe_tensor *X, float alpha, float beta, lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("broadcast_to", Y));
    if (!Y->numel) return LITHE_OK;
    lithe__wg_params p = {.u = {0, (uint32_t)Y->numel}, .f = {alpha, beta}};
    LITHE__TRY(layout("broadcast_to", Y->ndim, Y->shape, (const lithe_tensor *const[3]){X, NULL, NULL}, &p));
    return WG_DISPATCH("broadcast_to", bcast, 2, &p, 1u, lithe__wg_groups(Y->numel), 1, Y, X, NULL, NULL, NULL);
}

lithe_status wg_reduce_to(lithe_backend *be, const lithe_tensor *X, float alpha, float beta, lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("reduce_to", X));
    if (!Y->numel) return LITHE_OK;
    lithe__wg_params p = {.u = {0, (uint32_t)Y->numel}, .f = {alpha, beta}};
    LITHE__TRY(layout("reduce_to", X->ndim, X->shape, (const lithe_tensor *const[3]){Y, NULL, NULL}, &p));
    return WG_DISPATCH("reduce_to", bcast, 3, &p, 1u, lithe__wg_groups(Y->numel), 1, Y, X, NULL, NULL, NULL);
}

/* ---- elementwise maths, log-softmax (shaders/unary.wgsl) ---- */

lithe_status wg_unary(lithe_backend *be, int op, const lithe_tensor *X, lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("unary", X));
    LITHE__TRY(lithe__wg_dense("unary", Y));
    if ((unsigned)op >= LITHE__UN_COUNT) return lithe__fail(LITHE_ERR_INVALID_ARG, "webgpu unary: op %d", op);
    if (!Y->numel) return LITHE_OK;
    lithe__wg_params p = {.u = {(uint32_t)op, (uint32_t)Y->numel}};
    return WG_DISPATCH("unary", unary, 0, &p, 1u, lithe__wg_groups(Y->numel), 1, Y, X, NULL, NULL);
}

lithe_status wg_unary_backward(lithe_backend *be, int op, const lithe_tensor *X, const lithe_tensor *Y,
                               const lithe_tensor *dY, lithe_tensor *dX) {
    const lithe_tensor *ts[4] = {X, Y, dY, dX};
    for (int i = 0; i < 4; i++)
        if (ts[i]) LITHE__TRY(lithe__wg_dense("unary_backward", ts[i]));
    if ((unsigned)op >= LITHE__UN_COUNT) return lithe__fail(LITHE_ERR_INVALID_ARG, "webgpu unary_backward: op %d", op);
    if (!dX->numel) return LITHE_OK;
    lithe__wg_params p = {.u = {(uint32_t)op, (uint32_t)dX->numel}};
    return WG_DISPATCH("unary_backward", unary, 1, &p, 1u, lithe__wg_groups(dX->numel), 1, dX, X, Y, dY);
}

/* rows of the last axis: M rows of N */
static void rows_of(const lithe_tensor *t, uint32_t *M, uint32_t *N) {
    int64_t n = t->ndim ? t->shape[t->ndim - 1] : 1;
    *N = (uint32_t)n;
    *M = n ? (uint32_t)(t->numel / n) : 0;
}

lithe_status wg_log_softmax(lithe_backend *be, const lithe_tensor *X, lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("log_softmax", X));
    LITHE__TRY(lithe__wg_dense("log_softmax", Y));
    if (!Y->numel) return LITHE_OK;
    lithe__wg_params p = {{0}, {0}};
    rows_of(X, &p.u[0], &p.u[1]);
    return WG_DISPATCH("log_softmax", unary, 2, &p, 1u, lithe__wg_groups(p.u[0]), 1, Y, X, NULL, NULL);
}

lithe_status wg_log_softmax_backward(lithe_backend *be, const lithe_tensor *Y, const lithe_tensor *dY, lithe_tensor *dX) {
    LITHE__TRY(lithe__wg_dense("log_softmax_backward", Y));
    LITHE__TRY(lithe__wg_dense("log_softmax_backward", dY));
    LITHE__TRY(lithe__wg_dense("log_softmax_backward", dX));
    if (!dX->numel) return LITHE_OK;
    lithe__wg_params p = {{0}, {0}};
    rows_of(Y, &p.u[0], &p.u[1]);
    return WG_DISPATCH("log_softmax_backward", unary, 3, &p, 1u, lithe__wg_groups(p.u[0]), 1, dX, Y, dY, NULL);
}
