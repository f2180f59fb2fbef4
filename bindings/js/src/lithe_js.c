/* Helpers for the npm package: a few compositions of the public API (include/lithe.h) with flat
 * arguments, so JavaScript makes one call per training step instead of fifteen, and passes
 * numbers rather than C structs whose layout it would have to mirror. Nothing here is a layer, a
 * loss or a kernel: each helper only calls lithe_* functions, and every failure is a status whose
 * message is lithe_last_error(), which the JS layer turns into an Error. */
#include "lithe.h"
#include "importers.h" /* core/internal.h: lithe__tensor_alloc; lithe__importers_set, lithe__importers_wanted */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __EMSCRIPTEN__
#include <emscripten.h>
#define LITHE_JS_API EMSCRIPTEN_KEEPALIVE
#else
#define LITHE_JS_API
#endif

/* A new CPU tensor of dtype with ndim extents given as int32 (JS numbers, no BigInt), not zeroed
 * (lithe__tensor_alloc: lithe_tensor_new's checks and messages): JS then writes every byte of the
 * data into lithe_tensor_data(*out) directly — one copy from the TypedArray. */
LITHE_JS_API lithe_status lithe_js_tensor_new(int dtype, int ndim, const int32_t *shape, lithe_tensor **out) {
    int64_t s64[16];
    if (ndim < 0 || ndim > 16 || !out) return lithe_tensor_new(NULL, (lithe_dtype)dtype, ndim, NULL, out); /* its error */
    for (int i = 0; i < ndim; i++) s64[i] = shape[i];
    *out = NULL;
    return lithe__tensor_alloc(NULL, (lithe_dtype)dtype, ndim, s64, false, out);
}

/* The tensor's extents as int32 into out (ndim slots); extents beyond 2^31 do not occur in a
 * 32-bit address space. Returns ndim. */
LITHE_JS_API int lithe_js_tensor_shape(const lithe_tensor *t, int32_t *out) {
    int n = lithe_tensor_ndim(t);
    const int64_t *s = lithe_tensor_shape(t);
    for (int i = 0; i < n; i++) out[i] = (int32_t)s[i];
    return n;
}

/* What JS needs to copy a tensor out, in one call (a predict's output, bindings/js/src/index.js):
 * out[0] = dtype, out[1] = ndim, out[2 .. 2 + ndim) = extents as int32 (LITHE_MAX_DIMS + 2 slots).
 * Returns the data's address when the tensor is contiguous in host memory (JS copies straight from
 * it), else 0 (JS reads it through lithe_tensor_read). */
LITHE_JS_API const void *lithe_js_tensor_desc(const lithe_tensor *t, int32_t *out) {
    out[0] = (int32_t)lithe_tensor_dtype(t);
    out[1] = lithe_js_tensor_shape(t, out + 2);
    return lithe_tensor_is_contiguous(t) ? lithe_tensor_data(t) : NULL;
}

/* A predict's input tensor, kept by the JS layer from one call to the next (bindings/js/src/index.js:
 * a new C tensor and its malloc / free per call were a measurable part of a batch-1 predict): its
 * data address, after marking the storage written as any write by lithe does (a prepared form or
 * version-keyed cache of it is dropped), when the JS layer's reference is the only one to the
 * tensor and its storage; else 0, and JS makes a new tensor (a model that kept the input, or a
 * view of it, never sees it overwritten). */
LITHE_JS_API void *lithe_js_tensor_reuse(lithe_tensor *t) {
    if (__atomic_load_n(&t->refcount, __ATOMIC_ACQUIRE) != 1 ||
        __atomic_load_n(&t->storage->refcount, __ATOMIC_ACQUIRE) != 1)
        return NULL;
    lithe__storage_touch(t->storage);
    return lithe__tdata(t);
}

/* lithe_model_predict_tensor, then the output's description (lithe_js_tensor_desc) in the same
 * call: out[0] = the output tensor (the caller releases it), out[1] = its data's address or 0,
 * out[2 ..] = dtype, ndim, extents. */
LITHE_JS_API lithe_status lithe_js_predict(lithe_model *m, lithe_tensor *x, int32_t *out) {
    lithe_tensor *y = NULL;
    lithe_status s = lithe_model_predict_tensor(m, x, &y);
    if (s != LITHE_OK) return s;
    out[0] = (int32_t)(uintptr_t)y;
    out[1] = (int32_t)(uintptr_t)lithe_js_tensor_desc(y, out + 2);
    return LITHE_OK;
}

/* Adam (Thinc's defaults for what is not given) or SGD. */
LITHE_JS_API lithe_status lithe_js_optimizer_new(int adam, double learn_rate, double beta1, double beta2, double eps,
                                                 double L2, double grad_clip, int use_averages,
                                                 lithe_optimizer **out) {
    lithe_optimizer_opts o = adam ? lithe_adam_defaults() : lithe_sgd_defaults(learn_rate);
    o.learn_rate = learn_rate;
    if (adam) {
        o.beta1 = beta1;
        o.beta2 = beta2;
        o.eps = eps;
    }
    o.L2 = L2;
    o.grad_clip = grad_clip;
    o.use_averages = use_averages != 0;
    return lithe_optimizer_new(&o, out);
}

enum { LITHE_JS_LOSS_CCE = 0, LITHE_JS_LOSS_L2 = 1 };

/* One step of Thinc's training loop: Y, backprop = begin_update(X); dY, loss = loss(Y, truths);
 * backprop(dY); finish_update(opt). *loss is the loss of Y before the update: with thinc_figure 0,
 * what PyTorch and tfjs users read (lithe_cross_entropy: the mean cross-entropy; or
 * lithe_mean_squared_error), with 1 what Thinc 8.1's losses report (the sum of squared
 * gradients). guesses_out (may be NULL) receives Y, so callers can track accuracy. */
LITHE_JS_API lithe_status lithe_js_train_step(lithe_model *m, lithe_optimizer *opt, lithe_tensor *X,
                                              lithe_tensor *truths, int loss_kind, int thinc_figure, float *loss,
                                              lithe_tensor **guesses_out) {
    lithe_value *xv = NULL, *yv = NULL, *dv = NULL;
    lithe_backprop *bp = NULL;
    lithe_tensor *dY = NULL;
    if (guesses_out) *guesses_out = NULL;
    lithe_status s = lithe_value_tensor(X, &xv);
    if (s == LITHE_OK) s = lithe_model_begin_update(m, xv, &yv, &bp);
    lithe_tensor *Y = s == LITHE_OK ? lithe_value_get_tensor(yv) : NULL;
    double value = 0.0;
    if (s == LITHE_OK) {
        if (loss_kind == LITHE_JS_LOSS_CCE) {
            s = lithe_categorical_crossentropy(NULL, Y, truths, &dY, loss);
            if (s == LITHE_OK && !thinc_figure) s = lithe_cross_entropy(NULL, Y, truths, &value);
        } else if (loss_kind == LITHE_JS_LOSS_L2) {
            s = lithe_l2_distance(true, Y, truths, &dY, loss);
            if (s == LITHE_OK && !thinc_figure) s = lithe_mean_squared_error(Y, truths, &value);
        } else {
            s = lithe_categorical_crossentropy(NULL, NULL, NULL, NULL, NULL); /* sets the error */
        }
        if (s == LITHE_OK && !thinc_figure) *loss = (float)value;
    }
    if (s == LITHE_OK) s = lithe_value_tensor(dY, &dv);
    if (s == LITHE_OK) s = lithe_backprop_run(bp, dv, NULL);
    if (s == LITHE_OK) s = lithe_model_finish_update(m, opt);
    if (s == LITHE_OK && guesses_out) *guesses_out = lithe_tensor_retain(Y);
    lithe_backprop_free(bp);
    lithe_value_release(xv);
    lithe_value_release(yv);
    lithe_value_release(dv);
    lithe_tensor_release(dY);
    return s;
}

/* The leaf that produces the output: the last child of each chain, from the root down. */
static lithe_model *output_leaf(lithe_model *m) {
    while (lithe_model_n_layers(m) > 0) {
        const char *type = lithe_model_layer_type(m);
        if (!type || (strcmp(type, "chain.v1") != 0 && strcmp(type, "resizable.v1") != 0)) return m;
        m = lithe_model_layer(m, lithe_model_n_layers(m) - 1);
    }
    return m;
}

/* Grows the model's output to new_nO classes, keeping the old rows (Thinc's resize_model with
 * resize_linear_weighted). A model whose output layer is already inside a resizable node is
 * resized there; otherwise the output layer (Softmax, Linear, ... at the end of the chain) is
 * first wrapped in one — lithe_resizable over a copy, put in its place by replace_node, as a
 * Thinc user would rebuild the model with resizable(). */
LITHE_JS_API lithe_status lithe_js_resize_output(lithe_model *root, int32_t new_nO) {
    lithe_model *m = root, *holder = NULL;
    while (lithe_model_n_layers(m) > 0) {
        const char *type = lithe_model_layer_type(m);
        if (type && strcmp(type, "resizable.v1") == 0) holder = m;
        if (!type || strcmp(type, "chain.v1") != 0) break;
        m = lithe_model_layer(m, lithe_model_n_layers(m) - 1);
    }
    if (holder) return lithe_resize_model(holder, new_nO);
    lithe_model *leaf = output_leaf(root);
    if (leaf == root) return lithe_resize_model(root, new_nO); /* a lone layer: its "not a resizable node" */
    lithe_model *copy = NULL, *rz = NULL;
    lithe_status s = lithe_model_copy(leaf, &copy);
    if (s == LITHE_OK) s = lithe_resizable(copy, 0.0f, 0.0f, &rz); /* takes copy, also on failure */
    if (s == LITHE_OK) s = lithe_resize_model(rz, new_nO); /* before it joins: a refusal changes nothing */
    if (s == LITHE_OK) s = lithe_model_replace_node(root, leaf, rz, NULL);
    lithe_model_free(rz); /* the tree holds its own reference now */
    return s;
}

/* lithe_model_add_lora with 32-bit rank and seed (JS numbers, no BigInt). */
LITHE_JS_API lithe_status lithe_js_add_lora(lithe_model *m, const char *pattern, int32_t rank, float alpha,
                                            uint32_t seed) {
    return lithe_model_add_lora(m, pattern, rank, alpha, seed);
}

/* The importer module (lithe-importers.wasm: ONNX, TF.js and the graph executor, src/importers.c),
 * which src/loader.js links into this module's memory when a model needs it: registering the table
 * it hands over (bindings/js/src/importers_hooks.c), whether a call since the last query failed for want of it
 * (then loading it and retrying will help), and whether the importers are there (linked, or built
 * in: the threads module, LITHE_IMPORTERS_SEPARATE unset, has them built in). */
#ifdef LITHE_IMPORTERS_SEPARATE
LITHE_JS_API void lithe_js_importers_set(const lithe__importers *h) { lithe__importers_set(h); }
LITHE_JS_API int lithe_js_importers_wanted(void) { return lithe__importers_wanted(); }
#else
LITHE_JS_API void lithe_js_importers_set(const void *h) { (void)h; }
LITHE_JS_API int lithe_js_importers_wanted(void) { return 0; }
#endif
LITHE_JS_API int lithe_js_importers_linked(void) {
    size_t n = 0;
    lithe_onnx_op_names(&n); /* the core's stand-in lists none */
    return n > 0;
}

/* The threads module's worker start-up (src/loader.js, src/thread.js): the thread pool's Web
 * Worker backend in backends/cpu/threadpool.c. Every build exports these, so the loader needs no
 * per-build list; builds without threads answer LITHE_ERR_UNSUPPORTED (and have no workers). */
#include "../../../backends/cpu/threadpool.h"

/* A worker's entry, on its own instance over the shared memory, after the loader set its stack:
 * serves worker slot `slot` and never returns. */
LITHE_JS_API void lithe_js_thread_main(int slot) {
#if LITHE_WASM_WORKERS
    lithe__wasm_worker_main(slot);
#else
    (void)slot;
    __builtin_trap();
#endif
}

/* On the main instance, once n workers wait in lithe_js_thread_main (slots 0..n-1): the CPU
 * backend then computes with n + 1 threads. can_block: 0 on a browser's main thread (where
 * memory.atomic.wait traps), which then spins while it waits for the workers. */
LITHE_JS_API lithe_status lithe_js_threads_ready(int n, int can_block) {
#if LITHE_WASM_WORKERS
    return lithe__wasm_workers_ready(n, can_block != 0);
#else
    (void)can_block;
    lithe_backend *cpu = NULL;
    if (n == 0) return LITHE_OK;
    lithe_status st = lithe_backend_get("cpu", &cpu);
    return st != LITHE_OK ? st : lithe_backend_set_threads(cpu, n + 1); /* "this build has no threads" */
#endif
}

/* Ranges of pool jobs the workers have run (a double: JS numbers, no BigInt). */
LITHE_JS_API double lithe_js_thread_ranges(void) {
#if LITHE_WASM_WORKERS
    return (double)lithe__wasm_worker_ranges();
#else
    return 0;
#endif
}
