/* The WebGPU backend's convolution and pooling of imported graphs (shaders/conv.wgsl,
 * shaders/pool.wgsl: direct, one invocation per output element; conv2d_backward's three gradients
 * in one dispatch; ports of backends/vulkan's conv.comp). conv2d's fused activation runs in the same
 * dispatch (act_fns.wgsl: the act primitive's function, so the bits equal conv2d then act).
 * Shapes were checked by the graph layer; what only this backend limits (32-bit indexing) is
 * refused with LITHE_ERR_UNSUPPORTED. */
#include "webgpu_internal.h"

/* The geometry: u0..u9 and f0..f5 (small ints as exact floats); refused past 32-bit indexing. */
static lithe_status geometry(const char *op, int64_t N, int64_t C, int64_t H, int64_t W, int64_t M, int64_t KH,
                             int64_t KW, int64_t OH, int64_t OW, int64_t u9, const int64_t *stride, const int64_t *pad,
                             const int64_t *dil, lithe__wg_params *p) {
    int64_t chans = C > M ? C : M, area = H * W > OH * OW ? H * W : OH * OW;
    if (N * chans * area >= INT32_MAX || M * C * KH * KW >= INT32_MAX || stride[0] <= 0 || stride[1] <= 0 ||
        dil[0] <= 0 || dil[1] <= 0 || pad[0] > (1 << 24) || pad[1] > (1 << 24) || stride[0] > (1 << 24) ||
        stride[1] > (1 << 24) || dil[0] > (1 << 24) || dil[1] > (1 << 24))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu %s: the geometry exceeds 32-bit indexing", op);
    memset(p, 0, sizeof *p);
    const int64_t u[10] = {N, C, H, W, M, KH, KW, OH, OW, u9};
    for (int i = 0; i < 10; i++) p->u[i] = (uint32_t)u[i];
    const int64_t f[6] = {stride[0], stride[1], pad[0], pad[1], dil[0], dil[1]};
    for (int i = 0; i < 6; i++) p->f[i] = (float)f[i];
    return LITHE_OK;
}

static lithe_status all_dense(const char *op, const lithe_tensor *const *ts, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (ts[i]) LITHE__TRY(lithe__wg_dense(op, ts[i]));
    return LITHE_OK;
}

/* A 2-D view (rows, cols) with row stride ld over t's storage from element off: for the GEMM's
 * operands, never released (it holds no reference; t outlives it). */
static lithe_tensor view2(const lithe_tensor *t, int64_t off, int64_t rows, int64_t cols, int64_t ld) {
    lithe_tensor v = *t;
    v.refcount = 1;
    v.ndim = 2;
    v.shape[0] = rows, v.shape[1] = cols;
    v.strides[0] = ld, v.strides[1] = 1;
    v.offset = off;
    v.numel = rows * cols;
    return v;
}

/* On adapters that run on the CPU: a 1x1, stride-1, unpadded, ungrouped convolution is a GEMM per
 * image, Y_n (M, HW) = act(W (M, C) X_n (C, HW) + b per row), through the barrier-free vec4 kernel
 * (gemm_v4.wgsl, 4 x 4 outputs per invocation: the direct kernel's one output per invocation loads
 * W and X once per multiply-add). X_n's rows go through a copy with a row stride rounded up to 4
 * when HW is not a multiple of 4 (7 x 7 maps). Answers LITHE_ERR_UNSUPPORTED when the operands do
 * not align (C or the offsets not in 4s): the caller takes the direct kernel. */
static lithe_status conv1x1_gemm(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X, const lithe_tensor *W,
                                 const lithe_tensor *b, const lithe__act *a, lithe_tensor *Y) {
    int64_t C = g->C, M = g->M, HW = g->H * g->W, HW4 = (HW + 3) / 4 * 4;
    if (C % 4 || W->offset % 4 || X->offset % 4 || HW4 > (1 << 24))
        return LITHE_ERR_UNSUPPORTED;
    lithe_tensor w = view2(W, W->offset, M, C, C), *pad = NULL;
    if (HW4 != HW) LITHE__TRY(lithe__wg_scratch(be, (size_t)(C * HW4), &pad));
    lithe_status s = LITHE_OK;
    for (int64_t n = 0; s == LITHE_OK && n < g->N; n++) {
        lithe_tensor x = view2(X, X->offset + n * C * HW, C, HW, HW), y = view2(Y, Y->offset + n * M * HW, M, HW, HW);
        lithe_tensor xp = x;
        if (pad) {
            xp = view2(pad, 0, C, HW, HW4);
            s = lithe__op_copy(be, &xp, &x);
        }
        if (s == LITHE_OK) s = lithe__wg_gemm_v4_rowbias(be, "conv2d", &w, &xp, b, a, &y);
    }
    lithe_tensor_release(pad);
    return s;
}

lithe_status wg_conv2d(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X, const lithe_tensor *W,
                       const lithe_tensor *b, const lithe__act *a, lithe_tensor *Y) {
    LITHE__TRY(all_dense("conv2d", (const lithe_tensor *const[]){X, W, b, Y}, 4));
    if (!Y->numel) return LITHE_OK;
    if (g->group <= 0) return lithe__fail(LITHE_ERR_INVALID_ARG, "webgpu conv2d: group %lld", (long long)g->group);
    if (a && (unsigned)a->kind >= LITHE__ACT_COUNT)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "webgpu conv2d: unknown activation kind %d", (int)a->kind);
    if (lithe__wg_of(be)->cpu_gemm && g->KH == 1 && g->KW == 1 && g->group == 1 && g->stride[0] == 1 &&
        g->stride[1] == 1 && !g->pad[0] && !g->pad[1] && !g->pad[2] && !g->pad[3] && g->OH == g->H && g->OW == g->W) {
        lithe_status s = conv1x1_gemm(be, g, X, W, b, a, Y);
        if (s != LITHE_ERR_UNSUPPORTED) return s;
    }
    lithe__wg_params p;
    LITHE__TRY(geometry("conv2d", g->N, g->C, g->H, g->W, g->M, g->KH, g->KW, g->OH, g->OW, g->group, g->stride, g->pad,
                        g->dil, &p));
    p.f[6] = b ? 1.0f : 0.0f;
    if (a) {
        p.f[7] = (float)a->kind + 1.0f;
        p.f[8] = a->slope;
        p.f[9] = a->offset;
        p.f[10] = a->min_val;
        p.f[11] = a->max_val;
        p.f[12] = a->threshold;
    }
    return WG_DISPATCH("conv2d", conv, 0, &p, 1u | 16u | 32u, lithe__wg_groups(Y->numel), 1, Y, X, W, b, NULL, NULL);
}

lithe_status wg_conv2d_backward(lithe_backend *be, const lithe__conv2d *g, const lithe_tensor *X, const lithe_tensor *W,
                                const lithe_tensor *dY, lithe_tensor *dX, lithe_tensor *dW, lithe_tensor *db) {
    LITHE__TRY(all_dense("conv2d_backward", (const lithe_tensor *const[]){X, W, dY, dX, dW, db}, 6));
    if (g->group <= 0) return lithe__fail(LITHE_ERR_INVALID_ARG, "webgpu conv2d_backward: group %lld", (long long)g->group);
    lithe__wg_params p;
    LITHE__TRY(geometry("conv2d_backward", g->N, g->C, g->H, g->W, g->M, g->KH, g->KW, g->OH, g->OW, g->group, g->stride,
                        g->pad, g->dil, &p));
    bool gx = dX && dX->numel, gw = dW && dW->numel, gb = db && db->numel;
    if (!gx && !gw && !gb) return LITHE_OK;
    p.f[6] = (float)((gx ? 1 : 0) | (gw ? 2 : 0) | (gb ? 4 : 0));
    int64_t items = (gx ? dX->numel : 0) + (gw ? dW->numel : 0) + (gb ? db->numel : 0);
    return WG_DISPATCH("conv2d_backward", conv, 1, &p, 1u | 16u | 32u, lithe__wg_groups(items), 1, gx ? dX : NULL, dY, W,
                       X, gw ? dW : NULL, gb ? db : NULL);
}

static lithe_status pool_params(const char *op, const lithe__pool2d *g, lithe__wg_params *p) {
    return geometry(op, g->N, g->C, g->H, g->W, 0, g->KH, g->KW, g->OH, g->OW,
                    (g->max ? 1 : 0) | (g->count_include_pad ? 2 : 0), g->stride, g->pad, g->dil, p);
}

lithe_status wg_pool2d(lithe_backend *be, const lithe__pool2d *g, const lithe_tensor *X, lithe_tensor *Y,
                       lithe_tensor *which) {
    LITHE__TRY(all_dense("pool2d", (const lithe_tensor *const[]){X, Y}, 2));
    if (g->max && which && (which->dtype != LITHE_I32 || !lithe_tensor_is_contiguous(which)))
        return lithe__fail(LITHE_ERR_DTYPE, "webgpu pool2d: max pooling's which must be contiguous int32, got %s",
                           lithe_dtype_name(which->dtype));
    if (!Y->numel) return LITHE_OK;
    lithe__wg_params p;
    LITHE__TRY(pool_params("pool2d", g, &p));
    if (!g->max || !which) p.u[9] |= 4u; /* no which written */
    return WG_DISPATCH("pool2d", pool, 0, &p, 1u | 2u, lithe__wg_groups(Y->numel), 1, Y, g->max ? which : NULL, X, NULL);
}

lithe_status wg_pool2d_backward(lithe_backend *be, const lithe__pool2d *g, const lithe_tensor *dY,
                                const lithe_tensor *which, lithe_tensor *dX) {
    LITHE__TRY(all_dense("pool2d_backward", (const lithe_tensor *const[]){dY, dX}, 2));
    if (g->max && (!which || which->dtype != LITHE_I32 || !lithe_tensor_is_contiguous(which)))
        return lithe__fail(LITHE_ERR_DTYPE, "webgpu pool2d_backward: max pooling needs a contiguous int32 which");
    if (!dX->numel) return LITHE_OK;
    lithe__wg_params p;
    LITHE__TRY(pool_params("pool2d_backward", g, &p));
    return WG_DISPATCH("pool2d_backward", pool, 1, &p, 1u | 2u, lithe__wg_groups(dX->numel), 1, dX, NULL, dY,
                       g->max ? which : NULL);
}
