/* libFuzzer target: the ONNX reader and the graph layer. Whatever loads is run forward on inputs
 * shaped as the graph declares (unknown extents 2, each at most 16), backward with ones, and saved
 * as .lithe and loaded back: hostile graphs must fail with a status, never crash. Allocations
 * above 64 MiB are refused (a graph may ask for huge constants), so they exercise the OOM paths
 * rather than libFuzzer's memory limit. */
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

static void run(lithe_model *m) {
    lithe__graph *g = m->n_shims ? m->shims[0]->state : NULL;
    if (!g || g->n_in > 4) return;
    lithe_value *items[4] = {0}, *X = NULL, *Y = NULL, *dX = NULL;
    bool ok = true;
    for (size_t k = 0; ok && k < g->n_in; k++) {
        const lithe__onnx_value_info *vi = NULL;
        for (size_t i = 0; i < g->onnx.n_inputs; i++)
            if (!strcmp(g->onnx.inputs[i].name, g->slot_name[g->in_slots[k]])) vi = &g->onnx.inputs[i];
        int nd = vi && vi->ndim >= 0 ? vi->ndim : 2;
        int64_t shape[LITHE_MAX_DIMS];
        for (int d = 0; d < nd; d++) shape[d] = vi && vi->ndim >= 0 && vi->dims[d] >= 0 && vi->dims[d] <= 16 ? vi->dims[d] : 2;
        lithe_tensor *t = NULL;
        bool fl = !vi || vi->elem_type == LITHE__ONNX_FLOAT;
        ok = lithe_tensor_new(NULL, fl ? LITHE_F32 : LITHE_I64, nd, shape, &t) == LITHE_OK;
        if (ok && fl)
            for (int64_t i = 0; i < lithe_tensor_numel(t); i++) ((float *)lithe_tensor_data(t))[i] = (float)(i % 7) - 3.0f;
        ok = ok && lithe_value_tensor(t, &items[k]) == LITHE_OK;
        lithe_tensor_release(t);
    }
    if (ok) ok = g->n_in == 1 ? (X = lithe_value_retain(items[0])) != NULL : lithe_value_tuple(g->n_in, items, &X) == LITHE_OK;
    lithe_backprop *bp = NULL;
    if (ok && lithe_model_begin_update(m, X, &Y, &bp) == LITHE_OK) {
        lithe_tensor *y = lithe_value_get_tensor(Y), *ones = NULL;
        lithe_value *dY = NULL;
        if (y && lithe_tensor_dtype(y) == LITHE_F32 &&
            lithe_tensor_new(NULL, LITHE_F32, lithe_tensor_ndim(y), lithe_tensor_shape(y), &ones) == LITHE_OK) {
            for (int64_t i = 0; i < lithe_tensor_numel(ones); i++) ((float *)lithe_tensor_data(ones))[i] = 1.0f;
            if (lithe_value_tensor(ones, &dY) == LITHE_OK && lithe_backprop_run(bp, dY, &dX) == LITHE_OK)
                lithe_value_release(dX);
            lithe_value_release(dY);
            lithe_tensor_release(ones);
        }
        lithe_backprop_free(bp);
        lithe_value_release(Y);
        /* predict twice: the first drops values after their last reader, the second runs the
         * plan that the first recorded (cached shape arithmetic, pooled buffers) */
        for (int k = 0; k < 2; k++)
            if (lithe_model_predict(m, X, &Y) == LITHE_OK) lithe_value_release(Y);
    }
    lithe_value_release(X);
    for (size_t k = 0; k < 4; k++) lithe_value_release(items[k]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool once;
    if (!once) {
        once = true;
        lithe_set_allocator(&(lithe_allocator){cap_malloc, cap_realloc, cap_free, NULL});
    }
    lithe_model *m = NULL;
    if (lithe_onnx_load_bytes(data, size, &m) != LITHE_OK) return 0;
    run(m);
    uint8_t *file = NULL;
    size_t len = 0;
    if (lithe_model_save_bytes(m, NULL, &file, &len) == LITHE_OK) {
        lithe_model *back = NULL;
        /* what saved must load (the same bytes parse again), unless an allocation was refused */
        lithe_status s = lithe_model_load_bytes(file, len, &back);
        if (s != LITHE_OK && s != LITHE_ERR_OOM) abort();
        lithe_model_free(back);
        lithe_buffer_free(file);
    }
    lithe_model_free(m);
    return 0;
}
