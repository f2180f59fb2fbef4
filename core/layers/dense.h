/* Helpers shared by the dense layers' forward/backward records. */
#ifndef LITHE_LAYERS_DENSE_H
#define LITHE_LAYERS_DENSE_H
#include "../internal.h"

/* The gradient must match the output: "relu: gradient shape (64, 511) does not match output
 * shape (64, 512)". */
static inline lithe_status lithe__check_dY(const lithe_model *m, const lithe_value *dYv, int64_t B, int64_t nO,
                                           lithe_tensor **dY) {
    LITHE__TRY(lithe__value_f32_2d(dYv, m->name, dY));
    if ((*dY)->shape[0] != B || (*dY)->shape[1] != nO || !lithe_tensor_is_contiguous(*dY))
        return lithe__fail(LITHE_ERR_SHAPE,
                           "%s: gradient shape (%lld, %lld) does not match output shape (%lld, %lld)%s", m->name,
                           (long long)(*dY)->shape[0], (long long)(*dY)->shape[1], (long long)B, (long long)nO,
                           lithe_tensor_is_contiguous(*dY) ? "" : " (or is not contiguous)");
    return LITHE_OK;
}

/* Wraps a new tensor as dX (or drops it when the caller did not ask for dX). */
static inline lithe_status lithe__emit(lithe_tensor *t, lithe_value **out) {
    if (!out) {
        lithe_tensor_release(t);
        return LITHE_OK;
    }
    return lithe__value_wrap(t, out);
}

/* The end of a forward: on failure (s) release Y; else wrap it as *Yv, dropping the backprop
 * record if that fails. */
static inline lithe_status lithe__emit_output(lithe_status s, lithe_tensor *Y, lithe_value **Yv, lithe_backprop **bp) {
    if (s != LITHE_OK) {
        lithe_tensor_release(Y);
        return s;
    }
    s = lithe__value_wrap(Y, Yv);
    if (s != LITHE_OK && bp) {
        lithe_backprop_free(*bp);
        *bp = NULL;
    }
    return s;
}

/* Every dense layer's input must be a contiguous float32 2-D array. */
static inline lithe_status lithe__dense_input(const lithe_model *m, const lithe_value *X, lithe_tensor **out) {
    LITHE__TRY(lithe__value_f32_2d(X, m->name, out));
    if (!lithe_tensor_is_contiguous(*out))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: input must be contiguous (copy the view first)", m->name);
    return LITHE_OK;
}
#endif
