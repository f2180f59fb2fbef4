/* libFuzzer target: the TF.js layers reader (core/io/tfjs/) and the graph it lowers to. An input
 * is model.json's text, a NUL byte, then the weight shards' bytes (fuzz/make_tfjs_seeds.mjs writes
 * the seeds so). Whatever loads runs forward on an input shaped as the graph declares (unknown
 * extents 2, each at most 16), backward with ones, is written back as TF.js (lithe_tfjs_save_bytes)
 * and loaded again, and is saved as .lithe and loaded back: hostile
 * files must fail with a status, never crash. Allocations above 16 MiB are refused. The harness is
 * shared with fuzz_onnx.c (graph_harness.c). */
#include "graph_harness.h"

#include <stdint.h>
#include <string.h>

/* forward and backward on the first input's declared shape (TF.js models here take one tensor) */
static void run(lithe_model *m) {
    lithe__graph *g = m->n_shims ? m->shims[0]->state : NULL;
    if (!g || g->n_in != 1 || !g->onnx.n_inputs) return;
    lithe_tensor *t = fuzz_graph_tensor(&g->onnx.inputs[0], LITHE_F32, 4096);
    lithe_value *X = NULL;
    if (t && lithe_value_tensor(t, &X) == LITHE_OK) fuzz_graph_forward_backward(m, X);
    lithe_value_release(X);
    lithe_tensor_release(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_graph_setup();
    const uint8_t *nul = size ? memchr(data, 0, size) : NULL;
    size_t json_n = nul ? (size_t)(nul - data) : size;
    const uint8_t *w = nul ? nul + 1 : NULL;
    size_t w_n = nul ? size - json_n - 1 : 0;
    lithe_model *m = NULL;
    if (lithe_tfjs_load_bytes((const char *)data, json_n, w_n ? w : NULL, w_n, &m) != LITHE_OK) return 0;
    run(m);
    char *js = NULL;
    uint8_t *wb = NULL;
    size_t js_n = 0, wb_n = 0;
    if (lithe_tfjs_save_bytes(m, &js, &js_n, &wb, &wb_n) == LITHE_OK) { /* TF.js out reads back */
        lithe_model *back = NULL;
        if (lithe_tfjs_load_bytes(js, js_n, wb, wb_n, &back) != LITHE_OK) __builtin_trap();
        lithe_model_free(back);
    }
    lithe_buffer_free(js);
    lithe_buffer_free(wb);
    fuzz_graph_round_trip(m);
    return 0;
}
