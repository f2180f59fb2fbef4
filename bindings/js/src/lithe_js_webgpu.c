/* The npm package's helpers that only the WebGPU module has (lithe-webgpu.wasm and its
 * conformance module; bindings/js/CMakeLists.txt adds this file and its exports there only, so
 * the CPU-only modules do not change). As lithe_js.c: compositions of the API, no layer or loss. */
#include "lithe.h"
#include "importers.h"
#include "../../../core/train/loss_device.h"

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#define LITHE_JS_API EMSCRIPTEN_KEEPALIVE
#else
#define LITHE_JS_API
#endif

/* One training step of model m (on backend be) with Thinc's categorical cross-entropy over int
 * labels, reading the loss back once: X and the labels come as host tensors; the labels are
 * checked from their host values before they go up (no read-back), X and the labels are uploaded,
 * the forward pass and the loss are recorded, and the guesses' range check, Thinc's loss and the
 * cross-entropy come back in one read (core/train/loss_device.c); the backward pass and the update
 * are then recorded and submitted at once (lithe_backend_sync): on WebGPU one submit with the
 * read-back and one for the rest. *loss: the cross-entropy, or with thinc_figure Thinc's sum of
 * squared gradients (as lithe_js_train_step). */
LITHE_JS_API lithe_status lithe_js_train_step_once(lithe_model *m, lithe_optimizer *opt, lithe_backend *be,
                                                   lithe_tensor *X_host, lithe_tensor *labels_host, int thinc_figure,
                                                   float *loss) {
    if (!m || !opt || !be || !X_host || !labels_host || !loss)
        return lithe__fail(LITHE_ERR_INVALID_ARG, "train step: a NULL argument");
    const void *labels = lithe_tensor_data(labels_host);
    if (!labels) return lithe__fail(LITHE_ERR_INVALID_ARG, "train step: the labels must be a host tensor");
    lithe_tensor *Xd = NULL, *Ld = NULL, *dY = NULL;
    lithe_value *xv = NULL, *yv = NULL, *dv = NULL;
    lithe_backprop *bp = NULL;
    float thinc = 0.0f;
    double ce = 0.0;
    lithe_status s = lithe_tensor_to_backend(X_host, be, &Xd);
    if (s == LITHE_OK) s = lithe_tensor_to_backend(labels_host, be, &Ld);
    if (s == LITHE_OK) s = lithe_value_tensor(Xd, &xv);
    if (s == LITHE_OK) s = lithe_model_begin_update(m, xv, &yv, &bp);
    if (s == LITHE_OK)
        s = lithe__cce_labels_once(NULL, lithe_value_get_tensor(yv), Ld, labels, &dY, &thinc, thinc_figure ? NULL : &ce);
    if (s == LITHE_OK) s = lithe_value_tensor(dY, &dv);
    if (s == LITHE_OK) s = lithe_backprop_run(bp, dv, NULL);
    if (s == LITHE_OK) s = lithe_model_finish_update(m, opt);
    if (s == LITHE_OK) s = lithe_backend_sync(be);
    if (s == LITHE_OK) *loss = thinc_figure ? thinc : (float)ce;
    lithe_backprop_free(bp);
    lithe_value_release(xv);
    lithe_value_release(yv);
    lithe_value_release(dv);
    lithe_tensor_release(dY);
    lithe_tensor_release(Xd);
    lithe_tensor_release(Ld);
    return s;
}
