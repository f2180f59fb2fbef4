/* libFuzzer target: the lithe command's gunzip (tools/lithe/gunzip.c), which reads the gzipped
 * IDX files train-mnist is given. Whatever it accepts must match its trailer's size. */
#include "gunzip.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    uint8_t *out = NULL;
    size_t len = 0;
    char err[256];
    if (lithe_tool_gunzip(data, size, (size_t)1 << 24, &out, &len, err, sizeof err) == 0) {
        size_t isize = (size_t)data[size - 4] | (size_t)data[size - 3] << 8 | (size_t)data[size - 2] << 16 |
                       (size_t)data[size - 1] << 24;
        if (len != isize) abort();
        free(out);
    } else if (out || !err[0]) {
        abort(); /* a failure allocates nothing and says why */
    }
    return 0;
}
