/* The WebGPU backend's primitives: fills and copies, rows and elementwise, reductions read back
 * by the host, gradient clipping, the optimizers, the loss gradient, activations and softmax.
 * Each unpacks its tensors into bindings and the parameter block and queues dispatches of a shader
 * family (shaders/<family>.wgsl; backends/vulkan's shaders ported to WGSL); shapes were checked by
 * the layer; what only this backend limits (strided views a shader lacks, dtypes) is refused with
 * LITHE_ERR_UNSUPPORTED naming it. */
#include "webgpu_internal.h"

#define W1 1u   /* binding 0 written */
#define W_OPT 0x1fu

static size_t byte_off(const lithe_tensor *t) { return (size_t)t->offset * lithe_dtype_size(t->dtype); }

lithe_status wg_fill(lithe_backend *be, lithe_tensor *Y, float value) {
    if (value != 0.0f && Y->dtype != LITHE_F32) return lithe__fail(LITHE_ERR_DTYPE, "fill: non-zero fill needs float32");
    if (!Y->numel) return LITHE_OK;
    size_t es = lithe_dtype_size(Y->dtype), n = (size_t)Y->numel * es;
    /* a sub-word tail that ends its storage (int8 / uint8 tensors): the buffer's padding words too */
    if (value == 0.0f && n % 4 && byte_off(Y) + n == Y->storage->nbytes) n = (n + 3) & ~(size_t)3;
    if (!lithe_tensor_is_contiguous(Y) || byte_off(Y) % 4 || n % 4)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "webgpu fill: strided or sub-word tensors are not supported yet");
    if (value == 0.0f) { /* a clear command, not a dispatch (all-zero bits, for any dtype) */
        lithe__wg_clear(lithe__wg_mem(Y)->id, (uint32_t)byte_off(Y), (uint32_t)n);
        return LITHE_OK;
    }
    lithe__wg_params p = {.u = {(uint32_t)(n / 4)}, .f = {value}};
    return WG_DISPATCH("fill", fill, 0, &p, W1, lithe__wg_groups((int64_t)(n / 4)), 1, Y);
}

lithe_status wg_copy(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *X) {
    size_t es = lithe_dtype_size(X->dtype);
    if (!X->numel) return LITHE_OK;
    if (lithe_tensor_is_contiguous(X) && lithe_tensor_is_contiguous(Y)) {
        size_t n = (size_t)X->numel * es;
        if (byte_off(X) % 4 == 0 && byte_off(Y) % 4 == 0 && n % 4 == 0) {
            lithe__wg_copy(lithe__wg_mem(X)->id, (uint32_t)byte_off(X), lithe__wg_mem(Y)->id, (uint32_t)byte_off(Y),
                           (uint32_t)n);
            return LITHE_OK;
        }
    }
    /* 2-D row-strided views of 4-byte elements (columns contiguous) */
    if (es == 4 && X->ndim == 2 && Y->ndim == 2 && (X->shape[1] <= 1 || X->strides[1] == 1) &&
        (Y->shape[1] <= 1 || Y->strides[1] == 1) && X->shape[0] == Y->shape[0] && X->shape[1] == Y->shape[1]) {
        lithe__wg_params p = {.u = {(uint32_t)X->shape[0], (uint32_t)X->shape[1], (uint32_t)X->strides[0],
                                    (uint32_t)Y->strides[0]}};
        return WG_DISPATCH("copy", copy, 0, &p, W1, lithe__wg_groups(X->numel), 1, Y, X);
    }
    return lithe__wg_copy_nd(be, Y, X); /* ops_copy.c: any strides */
}

lithe_status wg_add_row(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *b) {
    LITHE__TRY(lithe__wg_dense("add_row", Y));
    lithe__wg_params p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1]}};
    return WG_DISPATCH("add_row", rows, 0, &p, W1, lithe__wg_groups(Y->shape[1]), 1, Y, b);
}

lithe_status wg_sum_rows(lithe_backend *be, const lithe_tensor *X, float beta, lithe_tensor *y) {
    LITHE__TRY(lithe__wg_dense("sum_rows", X));
    lithe__wg_params p = {.u = {(uint32_t)X->shape[0], (uint32_t)X->shape[1]}, .f = {beta}};
    return WG_DISPATCH("sum_rows", rows, 1, &p, W1, lithe__wg_groups(X->shape[1]), 1, y, X);
}

lithe_status wg_axpby(lithe_backend *be, float alpha, const lithe_tensor *X, float beta, lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("axpby", Y));
    LITHE__TRY(lithe__wg_dense("axpby", X));
    lithe__wg_params p = {.u = {(uint32_t)Y->numel}, .f = {alpha, beta}};
    return WG_DISPATCH("axpby", elementwise, 0, &p, W1, lithe__wg_groups(Y->numel), 1, Y, X, NULL);
}

lithe_status wg_mul(lithe_backend *be, const lithe_tensor *A, const lithe_tensor *B, lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("mul", Y));
    lithe__wg_params p = {.u = {(uint32_t)Y->numel}};
    return WG_DISPATCH("mul", elementwise, 1, &p, W1, lithe__wg_groups(Y->numel), 1, Y, A, B);
}

lithe_status wg_update_averages(lithe_backend *be, lithe_tensor *ema, const lithe_tensor *W, float decay) {
    LITHE__TRY(lithe__wg_dense("update_averages", ema));
    lithe__wg_params p = {.u = {(uint32_t)W->numel}, .f = {1.0f - decay}};
    return WG_DISPATCH("update_averages", elementwise, 2, &p, W1, lithe__wg_groups(W->numel), 1, ema, W, NULL);
}

/* ---- reductions read back by the host ---- */

/* Workgroups of the sum-of-squares partials (reduce.wgsl OP 0): one partial per invocation (at
 * least 64 elements each), at most LITHE__WG_RED_GROUPS * 256 of them, added in order afterwards. */
#define LITHE__WG_RED_GROUPS 16
static uint32_t red_groups(int64_t n) {
    int64_t g = (n + WG_SIZE * 64 - 1) / (WG_SIZE * 64);
    return g < 1 ? 1u : g > LITHE__WG_RED_GROUPS ? (uint32_t)LITHE__WG_RED_GROUPS : (uint32_t)g;
}

lithe_status wg_sum_squares(lithe_backend *be, const lithe_tensor *X, double *out) {
    LITHE__TRY(lithe__wg_dense("sum_squares", X));
    *out = 0.0;
    if (!X->numel) return LITHE_OK;
    uint32_t g = red_groups(X->numel), np = g * WG_SIZE;
    lithe_tensor *P = NULL;
    LITHE__TRY(lithe__wg_scratch(be, np, &P));
    lithe__wg_params p = {.u = {(uint32_t)X->numel}};
    lithe_status s = WG_DISPATCH("sum_squares", reduce, 0, &p, W1, g, 1, P, X);
    float *part = malloc(np * sizeof(float));
    if (!part && s == LITHE_OK) s = lithe__fail(LITHE_ERR_OOM, "webgpu sum_squares: out of memory");
    if (s == LITHE_OK) s = lithe__wg_read_tensor(be, P, part, np * sizeof(float));
    lithe_tensor_release(P);
    double acc = 0.0;
    if (s == LITHE_OK)
        for (uint32_t i = 0; i < np; i++) acc += part[i];
    free(part);
    if (s != LITHE_OK) return s;
    *out = acc;
    return LITHE_OK;
}

/* clip_gradient's decision on the device: partials, then {factor, apply} into *F (2 floats). */
static lithe_status clip_factor(lithe_backend *be, const lithe_tensor *G, double threshold, lithe_tensor **F) {
    uint32_t g = red_groups(G->numel), np = g * WG_SIZE;
    lithe_tensor *P = NULL;
    LITHE__TRY(lithe__wg_scratch(be, np, &P));
    lithe_status s = lithe__wg_scratch(be, 2, F);
    lithe__wg_params p = {.u = {(uint32_t)G->numel}};
    if (s == LITHE_OK) s = WG_DISPATCH("clip_gradient", reduce, 0, &p, W1, g, 1, P, G);
    lithe__wg_params d = {.u = {np}, .f = {(float)threshold}};
    if (s == LITHE_OK) s = WG_DISPATCH("clip_gradient", reduce, 2, &d, W1, 1, 1, *F, P);
    lithe_tensor_release(P);
    if (s != LITHE_OK) {
        lithe_tensor_release(*F);
        *F = NULL;
    }
    return s;
}

lithe_status wg_clip_gradient(lithe_backend *be, lithe_tensor *G, double threshold) {
    LITHE__TRY(lithe__wg_dense("clip_gradient", G));
    if (!G->numel) return LITHE_OK;
    lithe_tensor *F = NULL;
    LITHE__TRY(clip_factor(be, G, threshold, &F));
    lithe__wg_params p = {.u = {(uint32_t)G->numel}};
    lithe_status s = WG_DISPATCH("clip_gradient", reduce, 3, &p, W1, lithe__wg_groups(G->numel), 1, G, F);
    lithe_tensor_release(F);
    return s;
}

lithe_status wg_any_outside(lithe_backend *be, const lithe_tensor *X, float lo, float hi, int *out) {
    LITHE__TRY(lithe__wg_dense("any_outside", X));
    *out = 0;
    if (!X->numel) return LITHE_OK;
    lithe_tensor *F = NULL;
    LITHE__TRY(lithe__wg_scratch(be, 1, &F));
    lithe_status s = wg_fill(be, F, 0.0f);
    lithe__wg_params p = {.u = {(uint32_t)X->numel}, .f = {lo, hi}};
    if (s == LITHE_OK) s = WG_DISPATCH("any_outside", reduce, 1, &p, W1, lithe__wg_groups(X->numel), 1, F, X);
    float flag = 0.0f;
    if (s == LITHE_OK) s = lithe__wg_read_tensor(be, F, &flag, sizeof flag);
    lithe_tensor_release(F);
    if (s != LITHE_OK) return s;
    *out = flag != 0.0f;
    return LITHE_OK;
}

/* ---- training ---- */

lithe_status wg_adam(lithe_backend *be, lithe_tensor *W, const lithe_tensor *G, lithe_tensor *m1, lithe_tensor *m2,
                     float beta1, float beta2, float eps, float lr) {
    LITHE__TRY(lithe__wg_dense("adam", W));
    lithe__wg_params p = {.u = {(uint32_t)W->numel}, .f = {beta1, beta2, eps, lr}};
    return WG_DISPATCH("adam", optim, 0, &p, W_OPT, lithe__wg_groups(W->numel), 1, W, G, m1, m2, NULL, NULL);
}

lithe_status wg_adam_step(lithe_backend *be, lithe_tensor *W, lithe_tensor *G, lithe_tensor *m1, lithe_tensor *m2,
                          lithe_tensor *avg, double grad_clip, float beta1, float beta2, float eps, float lr,
                          float wscale, float decay) {
    LITHE__TRY(lithe__wg_dense("adam_step", W));
    if (grad_clip > 0.0 && W->numel && W->numel <= LITHE__WG_FUSED_CLIP_MAX) {
        /* one workgroup decides the clipping and steps: one dispatch instead of three */
        lithe__wg_params p = {.u = {(uint32_t)W->numel, avg != NULL, 1u},
                              .f = {1.0f, beta1, beta2, eps, lr, wscale, decay, (float)grad_clip}};
        return WG_DISPATCH("adam_step", optim_clip, 3, &p, W_OPT, 1, 1, W, G, m1, m2, avg, NULL);
    }
    lithe_tensor *F = NULL;
    if (grad_clip > 0.0 && W->numel) LITHE__TRY(clip_factor(be, G, grad_clip, &F));
    lithe__wg_params p = {.u = {(uint32_t)W->numel, avg != NULL, F != NULL},
                          .f = {1.0f, beta1, beta2, eps, lr, wscale, decay}};
    lithe_status s = WG_DISPATCH("adam_step", optim, 2, &p, W_OPT, lithe__wg_groups(W->numel), 1, W, G, m1, m2, avg, F);
    lithe_tensor_release(F);
    return s;
}

lithe_status wg_radam(lithe_backend *be, lithe_tensor *W, const lithe_tensor *G, lithe_tensor *m1, lithe_tensor *m2,
                      float beta1, float omb1, float beta2, float omb2, float eps, float coef, bool rectified) {
    LITHE__TRY(lithe__wg_dense("radam", W));
    lithe__wg_params p = {.u = {(uint32_t)W->numel, rectified}, .f = {beta1, omb1, beta2, omb2, eps, coef}};
    return WG_DISPATCH("radam", optim, 1, &p, W_OPT, lithe__wg_groups(W->numel), 1, W, G, m1, m2, NULL, NULL);
}

lithe_status wg_cce_labels(lithe_backend *be, const lithe_tensor *G, const lithe_tensor *labels, float smoothing,
                           bool has_missing, int64_t missing, float divisor, lithe_tensor *D) {
    LITHE__TRY(lithe__wg_dense("cce_labels", D));
    int64_t B = G->shape[0], C = G->shape[1];
    if (labels->dtype != LITHE_I32 && labels->dtype != LITHE_I64)
        return lithe__fail(LITHE_ERR_DTYPE, "webgpu cce_labels: labels must be int32 or int64, got %s",
                           lithe_dtype_name(labels->dtype));
    float off = C > 1 ? smoothing / (float)(C - 1) : 0.0f, on = 1.0f - smoothing;
    uint64_t mu = (uint64_t)missing;
    lithe__wg_params p = {.u = {(uint32_t)B, (uint32_t)C, labels->dtype == LITHE_I64, has_missing, (uint32_t)mu,
                                (uint32_t)(mu >> 32)},
                          .f = {on, off, divisor}};
    return WG_DISPATCH("cce_labels", cce, 0, &p, W1, lithe__wg_groups(B * C), 1, D, G, labels, NULL);
}

/* ---- activations, softmax ---- */

static void act_params(lithe__wg_params *p, const lithe__act *a, int64_t n, int base) {
    p->u[0] = (uint32_t)n;
    p->u[1] = (uint32_t)a->kind;
    p->f[base + 0] = a->slope;
    p->f[base + 1] = a->offset;
    p->f[base + 2] = a->min_val;
    p->f[base + 3] = a->max_val;
    p->f[base + 4] = a->threshold;
}

lithe_status wg_act(lithe_backend *be, const lithe__act *a, const lithe_tensor *X, lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("act", Y));
    LITHE__TRY(lithe__wg_dense("act", X));
    if ((unsigned)a->kind >= LITHE__ACT_COUNT)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "webgpu act: unknown activation kind %d", (int)a->kind);
    lithe__wg_params p = {{0}, {0}};
    act_params(&p, a, Y->numel, 0);
    return WG_DISPATCH("act", act, 0, &p, W1, lithe__wg_groups(Y->numel), 1, Y, X, NULL, NULL);
}

lithe_status wg_act_backward(lithe_backend *be, const lithe__act *a, const lithe_tensor *dY, const lithe_tensor *X,
                             const lithe_tensor *Y, lithe_tensor *dX) {
    LITHE__TRY(lithe__wg_dense("act_backward", dX));
    LITHE__TRY(lithe__wg_dense("act_backward", dY));
    if ((unsigned)a->kind >= LITHE__ACT_COUNT)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "webgpu act_backward: unknown activation kind %d", (int)a->kind);
    lithe__wg_params p = {{0}, {0}};
    act_params(&p, a, dX->numel, 0);
    p.u[2] = X != NULL;
    p.u[3] = Y != NULL;
    return WG_DISPATCH("act_backward", act, 1, &p, W1, lithe__wg_groups(dX->numel), 1, dX, dY, X, Y);
}

lithe_status wg_softmax(lithe_backend *be, const lithe_tensor *X, float temperature, lithe_tensor *Y) {
    LITHE__TRY(lithe__wg_dense("softmax", Y));
    LITHE__TRY(lithe__wg_dense("softmax", X));
    lithe__wg_params p = {.u = {(uint32_t)X->shape[0], (uint32_t)X->shape[1]}, .f = {temperature}};
    if (lithe__wg_of(be)->cpu_rows) /* a CPU adapter: one invocation per row, no barrier */
        return WG_DISPATCH("softmax", softmax_cpu, 0, &p, W1, lithe__wg_row_groups(X->shape[0]), 1, Y, X, NULL);
    uint32_t g = X->shape[0] > 65535 ? 65535u : (uint32_t)(X->shape[0] ? X->shape[0] : 1);
    return WG_DISPATCH("softmax", softmax, 0, &p, W1, g, 1, Y, X, NULL);
}

lithe_status wg_softmax_backward(lithe_backend *be, const lithe_tensor *Y, const lithe_tensor *dY, float temperature,
                                 lithe_tensor *dX) {
    LITHE__TRY(lithe__wg_dense("softmax_backward", dX));
    lithe__wg_params p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1]}, .f = {temperature}};
    if (lithe__wg_of(be)->cpu_rows)
        return WG_DISPATCH("softmax_backward", softmax_cpu, 1, &p, W1, lithe__wg_row_groups(Y->shape[0]), 1, dX, Y, dY);
    uint32_t g = Y->shape[0] > 65535 ? 65535u : (uint32_t)(Y->shape[0] ? Y->shape[0] : 1);
    return WG_DISPATCH("softmax_backward", softmax, 1, &p, W1, g, 1, dX, Y, dY);
}
