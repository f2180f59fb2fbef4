/* libFuzzer target: .lithe bytes; what loads must save, load again and predict without a crash. */
#include "lithe.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lithe_model *m = NULL;
    if (lithe_model_load_bytes(data, size, &m) != LITHE_OK) return 0;
    uint8_t *out = NULL;
    size_t len = 0;
    lithe_model *again = NULL;
    if (lithe_model_save_bytes(m, NULL, &out, &len) != LITHE_OK) abort();
    if (lithe_model_load_bytes(out, len, &again) != LITHE_OK) abort();
    float x[6] = {0.5f, -1, 2, 0, 1, 1};
    lithe_tensor *X = NULL, *Y = NULL;
    if (lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 3}, x, &X) == LITHE_OK) {
        (void)lithe_model_predict_tensor(m, X, &Y); /* may fail with an error, must not crash */
        lithe_tensor_release(Y);
        lithe_tensor_release(X);
    }
    lithe_buffer_free(out);
    lithe_model_free(again);
    lithe_model_free(m);
    return 0;
}
