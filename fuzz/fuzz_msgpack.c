/* libFuzzer target: the msgpack reader on arbitrary bytes. */
#include "io/msgpack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mp_doc d;
    if (mp_parse(data, size, "fuzz", &d) == LITHE_OK) {
        (void)mp_get(&d.root, "nodes");
        mp_doc_free(&d);
    }
    return 0;
}
