/* Whole ONNX graphs on WebGPU (issue 27), built into lithe-webgpu-test.wasm beside test_webgpu.c
 * and run by tests/webgpu/graph.test.mjs in Node on SwiftShader: squeezenet1_1 and a transformer
 * encoder (tests/webgpu/gen_graphs.py) predicting and taking Adam steps against the same graphs on
 * the CPU (the imported graphs' primitives are shared cases: tests/device/cases.h). Oracle: the CPU backend (checked against torch by
 * test_onnx / test_kernels). Each exported function returns its number of failures and prints
 * each one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wgt.h"

#define EXPORT(name) __attribute__((used, export_name(#name)))

/* ---- whole ONNX graphs: the same graph on the CPU and on WebGPU ---- */

static lithe_model *gm[2];           /* [0] CPU, [1] WebGPU */
static lithe_value *gx[2], *gr[2];   /* the input, the fixed output gradient (a linear loss) */
static lithe_optimizer *go[2];

static lithe_value *value_of(lithe_backend *be, int ndim, const int64_t *shape, const float *data) {
    lithe_tensor *t = NULL;
    lithe_value *v = NULL;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    if (lithe_tensor_new(be, LITHE_F32, ndim, shape, &t) || lithe_tensor_write(t, data, (size_t)n * 4) ||
        lithe_value_tensor(t, &v))
        FAIL("value_of: %s", lithe_last_error());
    lithe_tensor_release(t);
    return v;
}

static void expect_values(const char *what, const lithe_value *a, const lithe_value *b, double atol, double rtol) {
    pair p = {lithe_value_get_tensor(a), lithe_value_get_tensor(b)};
    if (!p.c || !p.v) {
        FAIL("%s: not a tensor", what);
        return;
    }
    expect_pair(what, p, atol, rtol);
}

EXPORT(wgt_graph_free) void wgt_graph_free(void) {
    for (int s = 0; s < 2; s++) {
        lithe_model_free(gm[s]);
        lithe_value_release(gx[s]);
        lithe_value_release(gr[s]);
        lithe_optimizer_free(go[s]);
        gm[s] = NULL, gx[s] = gr[s] = NULL, go[s] = NULL;
    }
}

/* Loads the ONNX bytes twice (one copy moved to WebGPU), an input of `shape` (int32 extents)
 * uniform in [-1, 1] and, from the CPU's first prediction, a fixed output gradient; Adam at
 * learn rate lr on both. Returns the failures. */
EXPORT(wgt_graph_load) int wgt_graph_load(const uint8_t *onnx, uint32_t len, int ndim, const int32_t *shape32, float lr) {
    if (wgt_begin()) return 1;
    rng_state = 2027; /* the inputs and output gradient the tolerances of graph.test.mjs were set on */
    wgt_graph_free();
    int64_t shape[8], n = 1;
    for (int i = 0; i < ndim && i < 8; i++) n *= shape[i] = shape32[i];
    float *x = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(uni() * 2 - 1);
    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.learn_rate = lr;
    /* Adam divides by sqrt(m2) + eps: a gradient that is zero but for rounding (the attention's key
     * bias: softmax ignores a shift of every score) would take full steps of rounding noise, which
     * differs between any two orders of summation; eps 1e-6 keeps such steps below 1e-3 lr while
     * gradients above ~1e-5 step as with Thinc's 1e-8. */
    oo.eps = 1e-6;
    for (int s = 0; s < 2 && !failures; s++) {
        lithe_backend *be = s ? dev : cpu;
        if (lithe_onnx_load_bytes(onnx, len, &gm[s]) || (s && lithe_model_set_backend(gm[s], dev)) ||
            lithe_optimizer_new(&oo, &go[s]))
            FAIL("graph load: %s", lithe_last_error());
        else
            gx[s] = value_of(be, ndim, shape, x);
    }
    free(x);
    lithe_value *Y = NULL;
    if (!failures && lithe_model_predict(gm[0], gx[0], &Y)) FAIL("cpu predict: %s", lithe_last_error());
    if (!failures) {
        const lithe_tensor *t = lithe_value_get_tensor(Y);
        int64_t m = lithe_tensor_numel(t);
        float *r = malloc((size_t)m * 4);
        for (int64_t i = 0; i < m; i++) r[i] = (float)(uni() * 2 - 1);
        for (int s = 0; s < 2; s++) gr[s] = value_of(s ? dev : cpu, lithe_tensor_ndim(t), lithe_tensor_shape(t), r);
        free(r);
    }
    lithe_value_release(Y);
    return failures;
}

/* Both sides predict; the outputs compared. */
EXPORT(wgt_graph_predict) int wgt_graph_predict(float atol, float rtol) {
    failures = 0;
    lithe_value *Y[2] = {NULL, NULL};
    for (int s = 0; s < 2; s++)
        if (lithe_model_predict(gm[s], gx[s], &Y[s])) FAIL("%s predict: %s", s ? "webgpu" : "cpu", lithe_last_error());
    if (!failures) {
        if (lithe_tensor_backend(lithe_value_get_tensor(Y[1])) != dev) FAIL("the prediction is not on webgpu");
        expect_values("graph predictions", Y[0], Y[1], atol, rtol);
    }
    lithe_value_release(Y[0]);
    lithe_value_release(Y[1]);
    return failures;
}

/* One training step of side s: forward, the fixed output gradient backward, Adam. */
static lithe_status graph_step(int s) {
    lithe_value *Y = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    lithe_status st = lithe_model_begin_update(gm[s], gx[s], &Y, &bp);
    if (st == LITHE_OK) st = lithe_backprop_run(bp, gr[s], &dX);
    if (st == LITHE_OK) st = lithe_model_finish_update(gm[s], go[s]);
    lithe_backprop_free(bp);
    lithe_value_release(Y);
    lithe_value_release(dX);
    return st;
}

/* `steps` Adam steps on both sides (sides = 3) or on WebGPU only (sides = 2: the timed steps). */
EXPORT(wgt_graph_steps) int wgt_graph_steps(int steps, int sides) {
    failures = 0;
    for (int k = 0; k < steps && !failures; k++)
        for (int s = 0; s < 2; s++) {
            if (!(sides >> s & 1)) continue;
            lithe_status st = graph_step(s);
            if (st != LITHE_OK) FAIL("%s step %d: %s: %s", s ? "webgpu" : "cpu", k, lithe_status_str(st), lithe_last_error());
        }
    return failures;
}

/* Every param of both trees compared (after steps on both sides); the count compared into *n. */
EXPORT(wgt_graph_params) int wgt_graph_params(float atol, float rtol, int *n) {
    failures = 0;
    *n = 0;
    lithe_model *nc[64], *nv[64];
    size_t n1 = 0, n2 = 0;
    if (lithe_model_walk(gm[0], nc, 64, &n1) || lithe_model_walk(gm[1], nv, 64, &n2) || n1 != n2) {
        FAIL("walk: %s", lithe_last_error());
        return failures;
    }
    for (size_t i = 0; i < n1 && i < 64; i++)
        for (size_t p = 0; p < lithe_model_n_params(nc[i]); p++) {
            const char *pn = lithe_model_param_name(nc[i], p);
            pair t = {NULL, NULL};
            if (lithe_model_get_param(nc[i], pn, &t.c) != LITHE_OK) continue;
            if (lithe_model_get_param(nv[i], pn, &t.v) != LITHE_OK) {
                FAIL("param %s: %s", pn, lithe_last_error());
                continue;
            }
            if (lithe_tensor_backend(t.v) != dev) FAIL("param %s is not on webgpu", pn);
            char what[160];
            snprintf(what, sizeof what, "graph param %s", pn);
            expect_pair(what, t, atol, rtol);
            (*n)++;
        }
    return failures;
}

/* Waits for the device's queued work (a fill, then its read-back: the queue's order), so a
 * timed run includes the GPU's time. */
EXPORT(wgt_graph_sync) int wgt_graph_sync(void) {
    failures = 0;
    lithe_tensor *t = NULL;
    float v = 0.0f;
    int64_t one = 1;
    if (lithe_tensor_new(dev, LITHE_F32, 1, &one, &t) || lithe__op_fill(dev, t, 1.0f) || lithe_tensor_read(t, &v, 4) ||
        v != 1.0f)
        FAIL("sync: %s", lithe_last_error());
    lithe_tensor_release(t);
    return failures;
}
