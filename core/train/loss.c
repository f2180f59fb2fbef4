/* Thinc's CategoricalCrossentropy (thinc/loss.py): d = (guesses - target) * mask / B and the
 * loss Thinc 8.1 reports, sum(d ** 2). */
#include "../internal.h"

lithe_status lithe_categorical_crossentropy(const lithe_cce_opts *opts, const lithe_tensor *G,
                                            const lithe_tensor *T, lithe_tensor **d_out, float *loss) {
    const char *fn = "CategoricalCrossentropy";
    if (d_out) *d_out = NULL;
    LITHE__CHECK_ARG(G && T, fn, "guesses or truths is NULL");
    lithe_cce_opts d = {0};
    if (!opts) opts = &d;
    if (G->dtype != LITHE_F32)
        return lithe__fail(LITHE_ERR_DTYPE, "%s: guesses must be float32, got %s", fn, lithe_dtype_name(G->dtype));
    if (G->ndim != 2)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: guesses must be 2-d (batch, classes), got %d-d", fn, G->ndim);
    if (!lithe_tensor_is_contiguous(G) || !lithe_tensor_is_contiguous(T))
        return lithe__fail(LITHE_ERR_SHAPE, "%s: guesses and truths must be contiguous", fn);
    int64_t B = G->shape[0], C = G->shape[1];
    lithe_backend *be = G->storage->backend;
    if (T->storage->backend != be)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "%s: guesses and truths live on different backends", fn);
    int outside;
    LITHE__TRY(lithe__op_any_outside(be, G, 0.0f, 1.0f, &outside));
    if (outside)
        return lithe__fail(LITHE_ERR_VALUE, "%s: cannot calculate the loss with guesses outside the [0,1] interval", fn);
    lithe_tensor *D = NULL;
    lithe_status s;
    if (T->dtype == LITHE_I32 || T->dtype == LITHE_I64) {
        if (T->ndim != 1 || T->shape[0] != B)
            return lithe__fail(LITHE_ERR_SHAPE, "%s: %lld labels for %lld rows of guesses", fn,
                               (long long)(T->ndim ? T->shape[0] : 0), (long long)B);
        if (opts->label_smoothing < 0.0f)
            return lithe__fail(LITHE_ERR_VALUE, "%s: label smoothing %g must be >= 0", fn, (double)opts->label_smoothing);
        if (opts->label_smoothing > 0.0f && C < 2)
            return lithe__fail(LITHE_ERR_VALUE, "%s: label smoothing needs more than 1 class, got %lld", fn, (long long)C);
        if (C > 1 && opts->label_smoothing >= (float)(C - 1) / (float)C)
            return lithe__fail(LITHE_ERR_VALUE, "%s: for %lld classes label_smoothing must be less than %g, got %g", fn,
                               (long long)C, (double)(C - 1) / (double)C, (double)opts->label_smoothing);
        if (!be->host_memory)
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: labels must be checked in host memory", fn);
        for (int64_t i = 0; i < B; i++) {
            int64_t l = T->dtype == LITHE_I64 ? ((const int64_t *)lithe__tdata(T))[i] : ((const int32_t *)lithe__tdata(T))[i];
            if (opts->has_missing_value && l == opts->missing_value) continue;
            if (l < 0 || l >= C)
                return lithe__fail(LITHE_ERR_VALUE, "%s: label %lld of row %lld outside [0, %lld)", fn, (long long)l,
                                   (long long)i, (long long)C);
        }
        LITHE__TRY(lithe__tensor_like(G, false, &D));
        s = lithe__op_cce_labels(be, G, T, opts->label_smoothing, opts->has_missing_value, opts->missing_value,
                                 opts->unnormalized ? 1.0f : (float)B, D);
    } else if (T->dtype == LITHE_F32) {
        if (!lithe__same_shape(G, T)) {
            char a[LITHE__SHAPE_BUF], b[LITHE__SHAPE_BUF];
            return lithe__fail(LITHE_ERR_SHAPE, "%s: mismatched shapes: %s vs %s", fn, lithe__shape_str(G, a, sizeof a),
                               lithe__shape_str(T, b, sizeof b));
        }
        if (opts->label_smoothing != 0.0f)
            return lithe__fail(LITHE_ERR_VALUE, "%s: label smoothing applies to int labels only, as in Thinc", fn);
        if (opts->has_missing_value)
            return lithe__fail(LITHE_ERR_UNSUPPORTED, "%s: missing_value with float targets is not supported yet", fn);
        LITHE__TRY(lithe__op_any_outside(be, T, 0.0f, 1.0f, &outside));
        if (outside)
            return lithe__fail(LITHE_ERR_VALUE, "%s: cannot calculate the loss with truth values outside the [0,1] interval", fn);
        LITHE__TRY(lithe__tensor_like(G, false, &D));
        s = lithe__op_copy(be, D, G);
        if (s == LITHE_OK) s = lithe__op_axpby(be, -1.0f, T, 1.0f, D);
        if (s == LITHE_OK && !opts->unnormalized) s = lithe__op_axpby(be, 0.0f, D, 1.0f / (float)B, D);
    } else {
        return lithe__fail(LITHE_ERR_DTYPE, "%s: truths must be int32/int64 labels or float32 targets, got %s", fn,
                           lithe_dtype_name(T->dtype));
    }
    if (s == LITHE_OK && loss) {
        double ss;
        s = lithe__op_sum_squares(be, D, &ss);
        if (s == LITHE_OK) *loss = (float)ss;
    }
    if (s != LITHE_OK || !d_out) {
        lithe_tensor_release(D);
        return s;
    }
    *d_out = D;
    return LITHE_OK;
}
