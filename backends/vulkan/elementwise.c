/* The Vulkan backend's primitives: fills, copies, casts, rows, elementwise, reductions read back
 * by the host, gradient clipping and the optimizers. Each unpacks its tensors into bindings and
 * push constants and records dispatches of a shader family (shaders/<family>.comp); shapes were
 * checked by the layer; what only this backend limits (sizes past 32-bit indexing, dtypes a shader
 * lacks) is refused with LITHE_ERR_UNSUPPORTED. The table: table.c. */
#include "ops.h"

/* ---- memory-shaped primitives ---- */

lithe_status vk_fill(lithe_backend *be, lithe_tensor *Y, float value) {
    if (value != 0.0f && Y->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "fill: non-zero fill needs float32");
    LITHE__TRY(check_size("fill", Y));
    if (!Y->numel) return LITHE_OK;
    if (!lithe_tensor_is_contiguous(Y))
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan fill: strided tensors are not supported");
    size_t first = byte_offset(Y), nbytes = (size_t)Y->numel * lithe_dtype_size(Y->dtype);
    uint32_t pattern;
    memcpy(&pattern, &value, 4);
    if (first % 4 == 0 && nbytes % 4 == 0) /* the transfer engine's fill: no shader needed */
        return lithe__vk_fill_words(be, lithe__vk_mem(Y), first, nbytes, pattern);
    lithe__vk_push p = {.u = {(uint32_t)first, (uint32_t)(first + nbytes), pattern}};
    return DISPATCH("fill", "fill", SPEC0, &p, groups_for((int64_t)(nbytes / 4 + 2)), 1, Y);
}

/* The layout block of copy.comp: [ndim, shape[8], strides[8]] for X then Y. */
lithe_status vk_copy(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *X) {
    size_t es = lithe_dtype_size(X->dtype);
    LITHE__TRY(check_size("copy", X));
    LITHE__TRY(check_size("copy", Y));
    if (!X->numel) return LITHE_OK;
    if (lithe_tensor_is_contiguous(X) && lithe_tensor_is_contiguous(Y))
        return lithe__vk_copy_bytes(be, lithe__vk_mem(Y), byte_offset(Y), lithe__vk_mem(X), byte_offset(X),
                                    (size_t)X->numel * es);
    if (es != 4 && es != 8)
        return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan copy: strided views of %s (%zu-byte elements) are not supported",
                           lithe_dtype_name(X->dtype), es);
    int32_t lay[34] = {0};
    const lithe_tensor *ts[2] = {X, Y};
    for (int s = 0; s < 2; s++) {
        const lithe_tensor *t = ts[s];
        lay[s * 17] = t->ndim;
        for (int d = 0; d < t->ndim; d++) {
            if (t->shape[d] > INT32_MAX || t->strides[d] > INT32_MAX || t->strides[d] < 0)
                return lithe__fail(LITHE_ERR_UNSUPPORTED, "vulkan copy: extent %lld or stride %lld outside 32 bits",
                                   (long long)t->shape[d], (long long)t->strides[d]);
            lay[s * 17 + 1 + d] = (int32_t)t->shape[d];
            lay[s * 17 + 9 + d] = (int32_t)t->strides[d];
        }
    }
    lithe_tensor *L = NULL;
    LITHE__TRY(lithe__vk_scratch(be, sizeof lay, &L));
    lithe_status s = be->ops->upload(be, L->storage->data, 0, lay, sizeof lay);
    lithe__vk_push p = {.u = {(uint32_t)(es / 4), (uint32_t)X->numel}};
    if (s == LITHE_OK) s = DISPATCH("copy", "copy", SPEC0, &p, groups_for(X->numel), 1, Y, X, L);
    lithe_tensor_release(L); /* safe: later commands are ordered after this dispatch */
    return s;
}

lithe_status vk_cast(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *X) {
    LITHE__TRY(check_size("cast", X));
    LITHE__TRY(check_size("cast", Y));
    if (!X->numel) return LITHE_OK;
    if (X->dtype == Y->dtype)
        return lithe__vk_copy_bytes(be, lithe__vk_mem(Y), byte_offset(Y), lithe__vk_mem(X), byte_offset(X),
                                    (size_t)X->numel * lithe_dtype_size(X->dtype));
    if (X->dtype == LITHE_U64 || Y->dtype == LITHE_U64 || X->dtype == LITHE_U32 || Y->dtype == LITHE_U32)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan cast: %s to %s is not a conversion lithe makes",
                           lithe_dtype_name(X->dtype), lithe_dtype_name(Y->dtype));
    lithe__vk_push p = {.u = {(uint32_t)X->dtype, (uint32_t)Y->dtype, (uint32_t)X->numel, (uint32_t)byte_offset(X),
                              (uint32_t)byte_offset(Y)}};
    size_t es = lithe_dtype_size(Y->dtype);
    int64_t items = es < 4 ? (int64_t)(((size_t)X->numel * es + 7) / 4) : X->numel;
    return DISPATCH("cast", "cast", SPEC0, &p, groups_for(items), 1, Y, X);
}
/* ---- rows and elementwise ---- */

lithe_status vk_add_row(lithe_backend *be, lithe_tensor *Y, const lithe_tensor *b) {
    LITHE__TRY(need_f32("add_row", Y));
    lithe__vk_push p = {.u = {(uint32_t)Y->shape[0], (uint32_t)Y->shape[1]}};
    return DISPATCH("add_row", "rows", SPEC0, &p, groups_for(Y->shape[1]), 1, Y, b);
}

lithe_status vk_sum_rows(lithe_backend *be, const lithe_tensor *X, float beta, lithe_tensor *y) {
    LITHE__TRY(need_f32("sum_rows", X));
    lithe__vk_push p = {.u = {(uint32_t)X->shape[0], (uint32_t)X->shape[1]}, .f = {beta}};
    return DISPATCH("sum_rows", "rows", SPEC1, &p, groups_for(X->shape[1]), 1, y, X);
}

lithe_status vk_axpby(lithe_backend *be, float alpha, const lithe_tensor *X, float beta, lithe_tensor *Y) {
    LITHE__TRY(need_f32("axpby", Y));
    lithe__vk_push p = {.u = {(uint32_t)Y->numel}, .f = {alpha, beta}};
    return DISPATCH("axpby", "elementwise", SPEC0, &p, groups_for(Y->numel), 1, Y, X);
}

lithe_status vk_mul(lithe_backend *be, const lithe_tensor *A, const lithe_tensor *B, lithe_tensor *Y) {
    LITHE__TRY(need_f32("mul", Y));
    lithe__vk_push p = {.u = {(uint32_t)Y->numel}};
    return DISPATCH("mul", "elementwise", SPEC1, &p, groups_for(Y->numel), 1, Y, A, B);
}

lithe_status vk_update_averages(lithe_backend *be, lithe_tensor *ema, const lithe_tensor *W, float decay) {
    LITHE__TRY(need_f32("update_averages", ema));
    lithe__vk_push p = {.u = {(uint32_t)W->numel}, .f = {1.0f - decay}};
    return DISPATCH("update_averages", "elementwise", SPEC2, &p, groups_for(W->numel), 1, ema, W);
}

/* ---- reductions read back by the host ---- */

lithe_status vk_sum_squares(lithe_backend *be, const lithe_tensor *X, double *out) {
    LITHE__TRY(need_f32("sum_squares", X));
    *out = 0.0;
    if (!X->numel) return LITHE_OK;
    uint32_t g = groups_for(X->numel);
    if (g > 1024) g = 1024; /* partials stay few: the host adds them in double */
    lithe_tensor *P = NULL;
    LITHE__TRY(lithe__vk_scratch(be, g * sizeof(float), &P));
    lithe__vk_push p = {.u = {(uint32_t)X->numel}};
    lithe_status s = DISPATCH("sum_squares", "reduce", SPEC0, &p, g, 1, P, X);
    float part[1024];
    if (s == LITHE_OK) s = be->ops->download(be, part, P->storage->data, 0, g * sizeof(float));
    lithe_tensor_release(P);
    if (s != LITHE_OK) return s;
    double acc = 0.0;
    for (uint32_t i = 0; i < g; i++) acc += part[i];
    *out = acc;
    return LITHE_OK;
}

/* Gradient clipping without a read-back: sum_squares' per-workgroup partials, then one
 * invocation's decision (factor, apply) from their compensated sum, into *F (2 floats, the
 * caller's reference): the scaling pass (clip_gradient) or adam_step reads it. */
static lithe_status vk_clip_factor(lithe_backend *be, const lithe_tensor *G, double threshold, lithe_tensor **F) {
    uint32_t g = groups_for(G->numel);
    if (g > 1024) g = 1024;
    lithe_tensor *P = NULL;
    LITHE__TRY(lithe__vk_scratch(be, g * sizeof(float), &P));
    lithe_status s = lithe__vk_scratch(be, 2 * sizeof(float), F);
    lithe__vk_push p = {.u = {(uint32_t)G->numel}};
    if (s == LITHE_OK) s = DISPATCH("clip_gradient", "reduce", SPEC0, &p, g, 1, P, G);
    lithe__vk_push d = {.u = {g}, .f = {(float)threshold}};
    if (s == LITHE_OK) s = DISPATCH("clip_gradient", "reduce", SPEC2, &d, 1, 1, *F, P);
    lithe_tensor_release(P); /* safe: later commands are ordered after these dispatches */
    if (s != LITHE_OK) {
        lithe_tensor_release(*F);
        *F = NULL;
    }
    return s;
}

lithe_status vk_clip_gradient(lithe_backend *be, lithe_tensor *G, double threshold) {
    LITHE__TRY(need_f32("clip_gradient", G));
    if (!G->numel) return LITHE_OK;
    lithe_tensor *F = NULL;
    LITHE__TRY(vk_clip_factor(be, G, threshold, &F));
    static const uint32_t SPEC3[LITHE__VK_SPEC] = {3};
    lithe__vk_push p = {.u = {(uint32_t)G->numel}};
    lithe_status s = DISPATCH("clip_gradient", "reduce", SPEC3, &p, groups_for(G->numel), 1, G, F);
    lithe_tensor_release(F);
    return s;
}

lithe_status vk_any_outside(lithe_backend *be, const lithe_tensor *X, float lo, float hi, int *out) {
    LITHE__TRY(need_f32("any_outside", X));
    *out = 0;
    if (!X->numel) return LITHE_OK;
    lithe_tensor *F = NULL;
    LITHE__TRY(lithe__vk_scratch(be, 4, &F));
    lithe_status s = lithe__vk_fill_words(be, lithe__vk_mem(F), 0, 4, 0);
    lithe__vk_push p = {.u = {(uint32_t)X->numel}, .f = {lo, hi}};
    if (s == LITHE_OK) s = DISPATCH("any_outside", "reduce", SPEC1, &p, groups_for(X->numel), 1, F, X);
    float flag = 0.0f;
    if (s == LITHE_OK) s = be->ops->download(be, &flag, F->storage->data, 0, sizeof flag);
    lithe_tensor_release(F);
    if (s != LITHE_OK) return s;
    *out = flag != 0.0f;
    return LITHE_OK;
}
/* ---- training ---- */

lithe_status vk_dropout_mask(lithe_backend *be, uint64_t key, uint64_t counter, float rate, lithe_tensor *Y) {
    LITHE__TRY(need_f32("dropout_mask", Y));
    lithe__vk_push p = {.u = {(uint32_t)key, (uint32_t)(key >> 32), (uint32_t)counter, (uint32_t)(counter >> 32),
                              (uint32_t)Y->numel},
                        .f = {rate, 1.0f / (1.0f - rate)}};
    return DISPATCH("dropout_mask", "dropout", SPEC0, &p, groups_for((Y->numel + 3) / 4), 1, Y);
}

lithe_status vk_adam(lithe_backend *be, lithe_tensor *W, const lithe_tensor *G, lithe_tensor *m1,
                            lithe_tensor *m2, float beta1, float beta2, float eps, float lr) {
    LITHE__TRY(need_f32("adam", W));
    lithe__vk_push p = {.u = {(uint32_t)W->numel}, .f = {beta1, beta2, eps, lr}};
    return DISPATCH("adam", "optim", SPEC0, &p, groups_for(W->numel), 1, W, G, m1, m2);
}

lithe_status vk_adam_step(lithe_backend *be, lithe_tensor *W, lithe_tensor *G, lithe_tensor *m1, lithe_tensor *m2,
                                 lithe_tensor *avg, double grad_clip, float beta1, float beta2, float eps, float lr,
                                 float wscale, float decay) {
    LITHE__TRY(need_f32("adam_step", W));
    /* the clipping decided on the device (clip_gradient's decision), its factor read by the one
     * pass as the CPU applies its own: no separate pass scaling G */
    lithe_tensor *F = NULL;
    if (grad_clip > 0.0 && W->numel) LITHE__TRY(vk_clip_factor(be, G, grad_clip, &F));
    lithe__vk_push p = {.u = {(uint32_t)W->numel, avg != NULL, F != NULL},
                        .f = {1.0f, beta1, beta2, eps, lr, wscale, decay}};
    /* avg or F NULL: binding 4 or 5 gets the dummy buffer, which the shader then never touches */
    lithe_status s = DISPATCH("adam_step", "optim", SPEC2, &p, groups_for(W->numel), 1, W, G, m1, m2, avg, F);
    lithe_tensor_release(F); /* safe: later commands are ordered after this dispatch */
    return s;
}

lithe_status vk_radam(lithe_backend *be, lithe_tensor *W, const lithe_tensor *G, lithe_tensor *m1,
                             lithe_tensor *m2, float beta1, float omb1, float beta2, float omb2, float eps, float coef,
                             bool rectified) {
    LITHE__TRY(need_f32("radam", W));
    lithe__vk_push p = {.u = {(uint32_t)W->numel, rectified}, .f = {beta1, omb1, beta2, omb2, eps, coef}};
    return DISPATCH("radam", "optim", SPEC1, &p, groups_for(W->numel), 1, W, G, m1, m2);
}

lithe_status vk_cce_labels(lithe_backend *be, const lithe_tensor *G, const lithe_tensor *labels,
                                  float smoothing, bool has_missing, int64_t missing, float divisor, lithe_tensor *D) {
    LITHE__TRY(need_f32("cce_labels", D));
    int64_t B = G->shape[0], C = G->shape[1];
    if (labels->dtype != LITHE_I32 && labels->dtype != LITHE_I64)
        return lithe__fail(LITHE_ERR_DTYPE, "vulkan cce_labels: labels must be int32 or int64, got %s",
                           lithe_dtype_name(labels->dtype));
    float off = C > 1 ? smoothing / (float)(C - 1) : 0.0f, on = 1.0f - smoothing;
    uint64_t mu = (uint64_t)missing;
    lithe__vk_push p = {.u = {(uint32_t)B, (uint32_t)C, labels->dtype == LITHE_I64, has_missing, (uint32_t)mu,
                              (uint32_t)(mu >> 32)},
                        .f = {on, off, divisor}};
    return DISPATCH("cce_labels", "cce", SPEC0, &p, groups_for(B * C), 1, D, G, labels);
}
