/* libFuzzer target: the TF.js layers reader (core/io/tfjs.c) and the graph it lowers to. An input
 * is model.json's text, a NUL byte, then the weight shards' bytes (fuzz/make_tfjs_seeds.mjs writes
 * the seeds so). Whatever loads runs forward on an input shaped as the graph declares (unknown
 * extents 2, each at most 16), backward with ones, and is saved as .lithe and loaded back: hostile
 * files must fail with a status, never crash. Allocations above 64 MiB are refused. */
#include "graph/graph.h"

#include <stdlib.h>
#include <string.h>

#define CAP ((size_t)64 << 20)

static void *cap_malloc(void *u, size_t n) {
    (void)u;
    return n > CAP ? NULL : malloc(n);
}
static void *cap_realloc(void *u, void *p, size_t n) {
    (void)u;
    return n > CAP ? NULL : realloc(p, n);
}
static void cap_free(void *u, void *p) {
    (void)u;
    free(p);
}

/* forward and backward on the first input's declared shape (TF.js models here take one tensor) */
static void run(lithe_model *m) {
    lithe__graph *g = m->n_shims ? m->shims[0]->state : NULL;
    if (!g || g->n_in != 1 || !g->onnx.n_inputs) return;
    const lithe__onnx_value_info *vi = &g->onnx.inputs[0];
    int nd = vi->ndim >= 0 ? vi->ndim : 2;
    int64_t shape[LITHE_MAX_DIMS], numel = 1;
    for (int d = 0; d < nd; d++) {
        shape[d] = vi->ndim >= 0 && vi->dims[d] >= 0 && vi->dims[d] <= 16 ? vi->dims[d] : 2;
        numel *= shape[d];
    }
    if (numel > 4096) return;
    lithe_tensor *t = NULL, *ones = NULL;
    lithe_value *X = NULL, *Y = NULL, *dY = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    if (lithe_tensor_new(NULL, LITHE_F32, nd, shape, &t) != LITHE_OK) return;
    for (int64_t i = 0; i < numel; i++) ((float *)lithe_tensor_data(t))[i] = (float)(i % 7) - 3.0f;
    if (lithe_value_tensor(t, &X) == LITHE_OK && lithe_model_begin_update(m, X, &Y, &bp) == LITHE_OK) {
        lithe_tensor *y = lithe_value_get_tensor(Y);
        if (y && lithe_tensor_dtype(y) == LITHE_F32 &&
            lithe_tensor_new(NULL, LITHE_F32, lithe_tensor_ndim(y), lithe_tensor_shape(y), &ones) == LITHE_OK) {
            for (int64_t i = 0; i < lithe_tensor_numel(ones); i++) ((float *)lithe_tensor_data(ones))[i] = 1.0f;
            if (lithe_value_tensor(ones, &dY) == LITHE_OK && lithe_backprop_run(bp, dY, &dX) == LITHE_OK)
                lithe_value_release(dX);
        }
    }
    lithe_value_release(dY);
    lithe_tensor_release(ones);
    lithe_backprop_free(bp);
    lithe_value_release(Y);
    lithe_value_release(X);
    lithe_tensor_release(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool once;
    if (!once) {
        once = true;
        lithe_set_allocator(&(lithe_allocator){cap_malloc, cap_realloc, cap_free, NULL});
    }
    const uint8_t *nul = size ? memchr(data, 0, size) : NULL;
    size_t json_n = nul ? (size_t)(nul - data) : size;
    const uint8_t *w = nul ? nul + 1 : NULL;
    size_t w_n = nul ? size - json_n - 1 : 0;
    lithe_model *m = NULL;
    if (lithe_tfjs_load_bytes((const char *)data, json_n, w_n ? w : NULL, w_n, &m) != LITHE_OK) return 0;
    run(m);
    uint8_t *file = NULL;
    size_t len = 0;
    if (lithe_model_save_bytes(m, NULL, &file, &len) == LITHE_OK) {
        lithe_model *back = NULL;
        lithe_status s = lithe_model_load_bytes(file, len, &back);
        if (s != LITHE_OK && s != LITHE_ERR_OOM) abort(); /* what saved must load */
        lithe_model_free(back);
        lithe_buffer_free(file);
    }
    lithe_model_free(m);
    return 0;
}
