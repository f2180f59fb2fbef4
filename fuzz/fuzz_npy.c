/* libFuzzer target: the .npy reader; what loads must save again to the same bytes' content. */
#include "lithe.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    lithe_tensor *t = NULL;
    if (lithe_npy_load(data, size, &t) == LITHE_OK) {
        uint8_t *out = NULL;
        size_t len = 0;
        lithe_tensor *back = NULL;
        if (lithe_npy_save(t, &out, &len) != LITHE_OK || lithe_npy_load(out, len, &back) != LITHE_OK) abort();
        if (lithe_tensor_numel(back) != lithe_tensor_numel(t)) abort();
        lithe_tensor_release(back);
        lithe_buffer_free(out);
        lithe_tensor_release(t);
    }
    return 0;
}
