/* libFuzzer target: the ONNX reader and the graph layer. Whatever loads is run forward on inputs
 * shaped as the graph declares (unknown extents 2, each at most 16), backward with ones, and saved
 * as .lithe and loaded back: hostile graphs must fail with a status, never crash. Allocations
 * above 16 MiB are refused (a graph may ask for huge constants), so they exercise the OOM paths
 * rather than libFuzzer's memory limit. The harness is shared with fuzz_tfjs.c (graph_harness.c). */
#include "graph_harness.h"

#include <stdint.h>
#include <string.h>

static void run(lithe_model *m) {
    lithe__graph *g = m->n_shims ? m->shims[0]->state : NULL;
    if (!g || g->n_in > 4) return;
    lithe_value *items[4] = {0}, *X = NULL, *Y = NULL;
    bool ok = true;
    for (size_t k = 0; ok && k < g->n_in; k++) {
        const lithe__onnx_value_info *vi = NULL;
        for (size_t i = 0; i < g->onnx.n_inputs; i++)
            if (!strcmp(g->onnx.inputs[i].name, g->slot_name[g->in_slots[k]])) vi = &g->onnx.inputs[i];
        bool fl = !vi || vi->elem_type == LITHE__ONNX_FLOAT;
        lithe_tensor *t = fuzz_graph_tensor(vi, fl ? LITHE_F32 : LITHE_I64, INT64_MAX);
        ok = t && lithe_value_tensor(t, &items[k]) == LITHE_OK;
        lithe_tensor_release(t);
    }
    if (ok) ok = g->n_in == 1 ? (X = lithe_value_retain(items[0])) != NULL : lithe_value_tuple(g->n_in, items, &X) == LITHE_OK;
    if (ok && fuzz_graph_forward_backward(m, X)) {
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
    fuzz_graph_setup();
    lithe_model *m = NULL;
    if (lithe_onnx_load_bytes(data, size, &m) != LITHE_OK) return 0;
    run(m);
    fuzz_graph_round_trip(m);
    return 0;
}
