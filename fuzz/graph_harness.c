/* The graph fuzz targets' shared harness: see graph_harness.h. */
#include "graph_harness.h"

#include <stdlib.h>

/* 16 MiB per allocation: at 64 MiB a Pad by 1M rows made 12M-float tensors that the pooling
 * passes walked for 12 s per input under the sanitizers, and one CI run's fixed 100,000 inputs of
 * fuzz_onnx took 12 minutes instead of about one; the OOM paths are exercised as before. */
#define CAP ((size_t)16 << 20)

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

void fuzz_graph_setup(void) {
    static bool once;
    if (!once) {
        once = true;
        lithe_set_allocator(&(lithe_allocator){cap_malloc, cap_realloc, cap_free, NULL});
    }
}

lithe_tensor *fuzz_graph_tensor(const lithe__onnx_value_info *vi, lithe_dtype dtype, int64_t max_numel) {
    int nd = vi && vi->ndim >= 0 ? vi->ndim : 2;
    int64_t shape[LITHE_MAX_DIMS], numel = 1;
    for (int d = 0; d < nd; d++) {
        shape[d] = vi && vi->ndim >= 0 && vi->dims[d] >= 0 && vi->dims[d] <= 16 ? vi->dims[d] : 2;
        numel *= shape[d];
    }
    lithe_tensor *t = NULL;
    if (numel > max_numel || lithe_tensor_new(NULL, dtype, nd, shape, &t) != LITHE_OK) return NULL;
    if (dtype == LITHE_F32)
        for (int64_t i = 0; i < numel; i++) ((float *)lithe_tensor_data(t))[i] = (float)(i % 7) - 3.0f;
    return t;
}

bool fuzz_graph_forward_backward(lithe_model *m, lithe_value *X) {
    lithe_value *Y = NULL, *dY = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    if (lithe_model_begin_update(m, X, &Y, &bp) != LITHE_OK) return false;
    lithe_tensor *y = lithe_value_get_tensor(Y), *ones = NULL;
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
    return true;
}

void fuzz_graph_round_trip(lithe_model *m) {
    uint8_t *file = NULL;
    size_t len = 0;
    if (lithe_model_save_bytes(m, NULL, &file, &len) == LITHE_OK) {
        lithe_model *back = NULL;
        lithe_status s = lithe_model_load_bytes(file, len, &back);
        if (s != LITHE_OK && s != LITHE_ERR_OOM) abort();
        lithe_model_free(back);
        lithe_buffer_free(file);
    }
    lithe_model_free(m);
}
