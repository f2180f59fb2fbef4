/* Thinc's CategoricalCrossentropy (thinc/loss.py): d = (guesses - target) * mask / B and the
 * loss Thinc 8.1 reports, sum(d ** 2). */
#include "../internal.h"
#include "loss_device.h"

#include <math.h>

/* The checks of int labels T (B,) for C classes, read from `labels` (T's values in host memory),
 * and of the label smoothing: lithe_categorical_crossentropy's, shared with its one-read-back
 * form (loss_device.c). */
lithe_status lithe__cce_check_labels(const lithe_cce_opts *opts, const lithe_tensor *T, const void *labels, int64_t B,
                                     int64_t C) {
    const char *fn = "CategoricalCrossentropy";
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
    for (int64_t i = 0; i < B; i++) {
        int64_t l = T->dtype == LITHE_I64 ? ((const int64_t *)labels)[i] : ((const int32_t *)labels)[i];
        if (opts->has_missing_value && l == opts->missing_value) continue;
        if (l < 0 || l >= C)
            return lithe__fail(LITHE_ERR_VALUE, "%s: label %lld of row %lld outside [0, %lld)", fn, (long long)l,
                               (long long)i, (long long)C);
    }
    return LITHE_OK;
}

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
        /* labels on a device are checked from a host copy (a small read-back) */
        size_t lbytes = (size_t)B * lithe_dtype_size(T->dtype);
        if (T->ndim != 1 || T->shape[0] != B) return lithe__cce_check_labels(opts, T, NULL, B, C); /* its message */
        void *host = be->host_memory ? NULL : lithe__malloc(lbytes ? lbytes : 1);
        if (!be->host_memory && !host) return lithe__oom(fn, lbytes);
        if (host && (s = lithe_tensor_read(T, host, lbytes)) != LITHE_OK) {
            lithe__free(host);
            return s;
        }
        s = lithe__cce_check_labels(opts, T, host ? host : lithe__tdata(T), B, C);
        if (s != LITHE_OK) {
            lithe__free(host);
            return s;
        }
        lithe__free(host);
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

/* ---- string labels (Thinc's names=, missing_value=, neg_prefix=) ---- */

lithe_status lithe_categorical_crossentropy_names(const lithe_cce_opts *opts, const lithe_tensor *G,
                                                  const lithe_cce_names *labels, lithe_tensor **d_out,
                                                  float *loss) {
    const char *fn = "CategoricalCrossentropy";
    if (d_out) *d_out = NULL;
    LITHE__CHECK_ARG(G && labels && labels->names && (labels->truths || !labels->n_truths), fn,
                     "guesses, labels, names or truths is NULL");
    lithe_cce_opts dflt = {0};
    if (!opts) opts = &dflt;
    if (G->dtype != LITHE_F32 || G->ndim != 2)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: guesses must be a 2-d float32 array", fn);
    int64_t B = G->shape[0], C = G->shape[1];
    if ((int64_t)labels->n_truths != B)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: %zu labels for %lld rows of guesses", fn, labels->n_truths, (long long)B);
    if ((int64_t)labels->n_names != C)
        return lithe__fail(LITHE_ERR_SHAPE, "%s: %zu names for %lld classes", fn, labels->n_names, (long long)C);
    float sm = opts->label_smoothing;
    if (sm < 0.0f || (sm > 0.0f && (C < 2 || sm >= (float)(C - 1) / (float)C)))
        return lithe__fail(LITHE_ERR_VALUE, "%s: label smoothing %g out of range for %lld classes", fn, (double)sm,
                           (long long)C);
    size_t n = (size_t)(B * C);
    float *g = lithe__malloc((n ? n : 1) * 2 * sizeof *g);
    if (!g) return lithe__oom(fn, n * 2 * sizeof *g);
    float *dd = g + n;
    lithe_status s = lithe_tensor_read(G, g, n * sizeof *g);
    for (size_t i = 0; s == LITHE_OK && i < n; i++)
        if (!(g[i] >= 0.0f && g[i] <= 1.0f))
            s = lithe__fail(LITHE_ERR_VALUE, "%s: cannot calculate the loss with guesses outside the [0,1] interval", fn);
    size_t plen = labels->neg_prefix ? strlen(labels->neg_prefix) : 0;
    float on = 1.0f - sm, off = C > 1 ? sm / (float)(C - 1) : 0.0f;
    double ss = 0.0;
    for (int64_t i = 0; s == LITHE_OK && i < B; i++) {
        const char *t = labels->truths[i];
        if (!t) {
            s = lithe__fail(LITHE_ERR_INVALID_ARG, "%s: label %lld is NULL", fn, (long long)i);
            break;
        }
        bool missing = labels->missing_label && !strcmp(t, labels->missing_label);
        bool negative = !missing && plen && *t && !strncmp(t, labels->neg_prefix, plen);
        if (negative) t += plen;
        int64_t k = -1;
        for (int64_t c = 0; !missing && c < C && k < 0; c++)
            if (labels->names[c] && !strcmp(labels->names[c], t)) k = c;
        if (!missing && k < 0) {
            s = lithe__fail(LITHE_ERR_VALUE, "%s: label '%s' of row %lld is not one of the names", fn, t, (long long)i);
            break;
        }
        if (negative && sm > 0.0f) { /* Thinc's target goes negative and its range check raises */
            s = lithe__fail(LITHE_ERR_VALUE, "%s: a negative label ('%s%s') with label smoothing gives targets outside "
                                             "[0, 1] (Thinc raises too)", fn, labels->neg_prefix, t);
            break;
        }
        for (int64_t c = 0; c < C; c++) {
            float target, mask;
            if (missing) target = 0.0f, mask = 0.0f;
            else if (negative) target = 0.0f, mask = c == k ? 1.0f : 0.0f; /* only "not this class" is known */
            else target = c == k ? on : off, mask = 1.0f;
            float diff = (g[i * C + c] - target) * mask;
            float v = opts->unnormalized ? diff : diff / (float)B;
            dd[i * C + c] = v;
            ss += (double)v * v;
        }
    }
    lithe_tensor *D = NULL;
    if (s == LITHE_OK && d_out) {
        s = lithe__tensor_alloc(G->storage->backend, LITHE_F32, 2, G->shape, false, &D);
        if (s == LITHE_OK) s = lithe_tensor_write(D, dd, n * sizeof *dd);
    }
    lithe__free(g);
    if (s != LITHE_OK) {
        lithe_tensor_release(D);
        return s;
    }
    if (loss) *loss = (float)ss;
    if (d_out) *d_out = D;
    return LITHE_OK;
}

/* ---- SequenceCategoricalCrossentropy: CCE per sequence, unnormalized, then / n ---- */

lithe_status lithe_sequence_categorical_crossentropy(const lithe_cce_opts *opts, size_t n,
                                                     const lithe_tensor *const *guesses,
                                                     const lithe_tensor *const *truths, lithe_tensor **d_out,
                                                     float *loss) {
    const char *fn = "SequenceCategoricalCrossentropy";
    LITHE__CHECK_ARG((guesses && truths) || n == 0, fn, "guesses or truths is NULL");
    for (size_t i = 0; d_out && i < n; i++) d_out[i] = NULL;
    lithe_cce_opts o = opts ? *opts : (lithe_cce_opts){0};
    bool normalize = !o.unnormalized;
    o.unnormalized = true; /* Thinc's inner CategoricalCrossentropy(normalize=False) */
    double total = 0.0;
    lithe_status s = LITHE_OK;
    for (size_t i = 0; s == LITHE_OK && i < n; i++) {
        lithe_tensor *d = NULL;
        s = lithe_categorical_crossentropy(&o, guesses[i], truths[i], &d, NULL);
        if (s == LITHE_OK && normalize) s = lithe__op_axpby(d->storage->backend, 0.0f, d, 1.0f / (float)n, d);
        double ss = 0.0;
        if (s == LITHE_OK) s = lithe__op_sum_squares(d->storage->backend, d, &ss);
        total += ss;
        if (s == LITHE_OK && d_out) d_out[i] = d;
        else lithe_tensor_release(d);
    }
    if (s != LITHE_OK) {
        for (size_t i = 0; d_out && i < n; i++) {
            lithe_tensor_release(d_out[i]);
            d_out[i] = NULL;
        }
        return s;
    }
    if (loss) *loss = (float)total;
    return LITHE_OK;
}

/* ---- the true cross-entropy, which Thinc's get_loss (sum of squared gradients) is not ---- */

lithe_status lithe_cross_entropy(const lithe_cce_opts *opts, const lithe_tensor *G, const lithe_tensor *T,
                                 double *out) {
    const char *fn = "cross_entropy";
    LITHE__CHECK_ARG(G && T && out, fn, "guesses, truths or out is NULL");
    lithe_cce_opts o = opts ? *opts : (lithe_cce_opts){0};
    /* the same checks as the loss itself (shapes, dtypes, ranges, labels) */
    LITHE__TRY(lithe_categorical_crossentropy(&o, G, T, NULL, NULL));
    int64_t B = G->shape[0], C = G->shape[1];
    size_t n = (size_t)(B * C);
    bool labels = T->dtype != LITHE_F32;
    float *g = lithe__malloc((n ? n : 1) * 2 * sizeof *g);
    int64_t *lab = labels ? lithe__malloc((size_t)(B ? B : 1) * sizeof *lab) : NULL;
    lithe_status s = g && (!labels || lab) ? LITHE_OK : lithe__oom(fn, n * 2 * sizeof *g);
    if (s == LITHE_OK) s = lithe_tensor_read(G, g, n * sizeof *g);
    if (s == LITHE_OK && !labels) s = lithe_tensor_read(T, g + n, n * sizeof *g);
    if (s == LITHE_OK && labels) {
        if (T->dtype == LITHE_I64) {
            s = lithe_tensor_read(T, lab, (size_t)B * sizeof *lab);
        } else {
            int32_t *l32 = lithe__malloc((size_t)(B ? B : 1) * sizeof *l32);
            s = l32 ? lithe_tensor_read(T, l32, (size_t)B * sizeof *l32) : lithe__oom(fn, (size_t)B * 4);
            for (int64_t i = 0; s == LITHE_OK && i < B; i++) lab[i] = l32[i];
            lithe__free(l32);
        }
    }
    float sm = o.label_smoothing, on = 1.0f - sm, off = C > 1 ? sm / (float)(C - 1) : 0.0f;
    double total = 0.0;
    int64_t rows = 0;
    for (int64_t i = 0; s == LITHE_OK && i < B; i++) {
        if (labels && o.has_missing_value && lab[i] == o.missing_value) continue;
        rows++;
        for (int64_t c = 0; c < C; c++) {
            double target = labels ? (c == lab[i] ? on : off) : g[n + (size_t)(i * C + c)];
            double p = g[i * C + c];
            if (target > 0.0) total -= target * log(p > 1e-30 ? p : 1e-30);
        }
    }
    lithe__free(g);
    lithe__free(lab);
    if (s != LITHE_OK) return s;
    *out = o.unnormalized ? total : (rows ? total / (double)rows : 0.0);
    return LITHE_OK;
}
