/* libFuzzer target: the optimizer-state blob (lithe_optimizer_load_state) for a fixed tree,
 * relu(4) >> softmax(2) on nI = 3 (the tree fuzz/make_more_seeds.c saves its seeds from). What
 * loads must train one step, save, and load again into a fresh optimizer. */
#include "lithe.h"

#include <stdlib.h>

static lithe_model *tree(void) {
    lithe_model *a = NULL, *b = NULL, *m = NULL;
    if (lithe_dense("Relu.v1", &(lithe_dense_opts){.nO = 4, .nI = 3}, &a) != LITHE_OK ||
        lithe_softmax(&(lithe_softmax_opts){.nO = 2, .nI = 4}, &b) != LITHE_OK ||
        lithe_chain(2, (lithe_model *[]){a, b}, &m) != LITHE_OK || lithe_model_initialize(m, NULL, NULL) != LITHE_OK)
        abort();
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static lithe_model *m;
    if (!m) m = tree();
    lithe_optimizer_opts o = lithe_adam_defaults();
    lithe_optimizer *opt = NULL, *again = NULL;
    if (lithe_optimizer_new(&o, &opt) != LITHE_OK) abort();
    if (lithe_optimizer_load_state(opt, m, data, size) == LITHE_OK) {
        float x[6] = {0.5f, -1, 2, 0, 1, 1}, dy[4] = {0.1f, -0.1f, 0.2f, -0.2f};
        lithe_tensor *X = NULL, *dY = NULL;
        lithe_value *Xv = NULL, *Yv = NULL, *dYv = NULL;
        lithe_backprop *bp = NULL;
        if (lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 3}, x, &X) != LITHE_OK ||
            lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 2}, dy, &dY) != LITHE_OK ||
            lithe_value_tensor(X, &Xv) != LITHE_OK || lithe_value_tensor(dY, &dYv) != LITHE_OK ||
            lithe_model_begin_update(m, Xv, &Yv, &bp) != LITHE_OK || lithe_backprop_run(bp, dYv, NULL) != LITHE_OK)
            abort();
        (void)lithe_model_finish_update(m, opt); /* a hostile step count may be refused, not crash */
        uint8_t *out = NULL;
        size_t len = 0;
        if (lithe_optimizer_save_state(opt, m, &out, &len) != LITHE_OK) abort();
        if (lithe_optimizer_new(&o, &again) != LITHE_OK || lithe_optimizer_load_state(again, m, out, len) != LITHE_OK)
            abort(); /* what saved must load */
        lithe_buffer_free(out);
        lithe_backprop_free(bp);
        lithe_value_release(Yv);
        lithe_value_release(Xv);
        lithe_value_release(dYv);
        lithe_tensor_release(X);
        lithe_tensor_release(dY);
    }
    lithe_optimizer_free(again);
    lithe_optimizer_free(opt);
    return 0;
}
