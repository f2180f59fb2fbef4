/* libFuzzer target: Thinc bytes into chain(Relu(4, 3), Softmax.v2(2, 4)); what loads must save
 * and predict. */
#include "lithe.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lithe_model *r = NULL, *s = NULL, *m = NULL;
    if (lithe_dense("Relu.v1", &(lithe_dense_opts){.nO = 4, .nI = 3}, &r) != LITHE_OK) return 0;
    if (lithe_softmax(&(lithe_softmax_opts){.nO = 2, .nI = 4}, &s) != LITHE_OK) {
        lithe_model_free(r);
        return 0;
    }
    if (lithe_chain(2, (lithe_model *[]){r, s}, &m) != LITHE_OK) return 0;
    if (lithe_model_from_thinc_bytes(m, data, size) == LITHE_OK) {
        uint8_t *out = NULL;
        size_t len = 0;
        if (lithe_model_to_thinc_bytes(m, &out, &len) != LITHE_OK) abort(); /* what loaded must save */
        lithe_buffer_free(out);
        float x[6] = {0.5f, -1, 2, 0, 1, 1};
        lithe_tensor *X = NULL, *Y = NULL;
        if (lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 3}, x, &X) == LITHE_OK) {
            (void)lithe_model_predict_tensor(m, X, &Y); /* may fail (e.g. a param still unset), must not crash */
            lithe_tensor_release(Y);
            lithe_tensor_release(X);
        }
    }
    lithe_model_free(m);
    return 0;
}
