/* Thinc's CategoricalCrossentropy over int labels with its figures read back once (issue 27).
 * On a GPU every read-back is a round trip that drains the queue; lithe_categorical_crossentropy
 * makes two (the guesses' range, a host copy of the labels) and lithe_cross_entropy four more.
 * Here the labels are checked from the host copy the caller has before uploading them, and a
 * backend with the optional cce_stats op (backends/webgpu) computes the guesses' range check,
 * Thinc's loss and the cross-entropy in one pass whose four figures come back in one read. The
 * loss semantics are loss.c's: the same checks in the same words, D from the cce_labels primitive. */
#include "loss_device.h"

lithe_status lithe__cce_labels_once(const lithe_cce_opts *opts, const lithe_tensor *G, const lithe_tensor *T,
                                    const void *host_labels, lithe_tensor **d_out, float *thinc_loss, double *ce) {
    const char *fn = "CategoricalCrossentropy";
    if (d_out) *d_out = NULL;
    LITHE__CHECK_ARG(G && T && host_labels, fn, "guesses, truths or their host labels is NULL");
    lithe_cce_opts dflt = {0};
    if (!opts) opts = &dflt;
    lithe_backend *be = G->storage->backend;
    bool labels = T->dtype == LITHE_I32 || T->dtype == LITHE_I64;
    if (!be->ops->cce_stats || !labels || G->dtype != LITHE_F32 || G->ndim != 2 || !lithe_tensor_is_contiguous(G) ||
        !lithe_tensor_is_contiguous(T) || T->storage->backend != be) {
        /* the two functions' path (and their messages for what is refused above) */
        float l = 0.0f;
        lithe_status s = lithe_categorical_crossentropy(opts, G, T, d_out, thinc_loss ? &l : NULL);
        if (s == LITHE_OK && thinc_loss) *thinc_loss = l;
        if (s == LITHE_OK && ce) s = lithe_cross_entropy(opts, G, T, ce);
        if (s != LITHE_OK && d_out) {
            lithe_tensor_release(*d_out);
            *d_out = NULL;
        }
        return s;
    }
    int64_t B = G->shape[0], C = G->shape[1];
    LITHE__TRY(lithe__cce_check_labels(opts, T, host_labels, B, C));
    lithe_tensor *D = NULL, *out = NULL;
    const int64_t four[1] = {4};
    lithe_status s = lithe__tensor_like(G, false, &D);
    if (s == LITHE_OK)
        s = lithe__op_cce_labels(be, G, T, opts->label_smoothing, opts->has_missing_value, opts->missing_value,
                                 opts->unnormalized ? 1.0f : (float)B, D);
    if (s == LITHE_OK) s = lithe__tensor_alloc(be, LITHE_F32, 1, four, false, &out);
    if (s == LITHE_OK)
        s = be->ops->cce_stats(be, G, T, D, opts->label_smoothing, opts->has_missing_value, opts->missing_value, out);
    float fig[4] = {0};
    if (s == LITHE_OK) s = lithe_tensor_read(out, fig, sizeof fig); /* the one read-back */
    lithe_tensor_release(out);
    if (s == LITHE_OK && fig[0] != 0.0f)
        s = lithe__fail(LITHE_ERR_VALUE, "%s: cannot calculate the loss with guesses outside the [0,1] interval", fn);
    if (s != LITHE_OK || !d_out) {
        lithe_tensor_release(D);
        if (s != LITHE_OK) return s;
    } else {
        *d_out = D;
    }
    if (thinc_loss) *thinc_loss = fig[1];
    if (ce) *ce = opts->unnormalized ? (double)fig[2] : (fig[3] > 0.0f ? (double)fig[2] / (double)fig[3] : 0.0);
    return LITHE_OK;
}
