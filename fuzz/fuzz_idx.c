/* libFuzzer target: the CLI's IDX reader (tools/lithe/mnist.c: Fashion-MNIST, gzip or plain). The
 * bytes are written as a file and read as images (magic 0x803) and as labels (0x801); a gzip
 * stream (1f 8b) is written as "<path>.gz" with <path> absent, as the dataset ships (the reader
 * gunzips with tools/lithe/gunzip.c). Allocations
 * over 64 MiB abort (libFuzzer's -malloc_limit_mb): a header's sizes must be checked against the
 * bytes present before they size a buffer. */
#define _POSIX_C_SOURCE 200809L
#include "mnist.h"

#include <stdbool.h>

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char dir[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fuzz_idx_XXXXXX");
        if (!mkdtemp(dir)) abort();
    }
    char path[128], gz[140], err[512];
    snprintf(path, sizeof path, "%s/data-idx-ubyte", dir);
    snprintf(gz, sizeof gz, "%s.gz", path);
    unlink(path);
    unlink(gz);
    bool zipped = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
    FILE *f = fopen(zipped ? gz : path, "wb");
    if (!f) abort();
    if (size && fwrite(data, 1, size, f) != size) abort();
    fclose(f);
    for (int k = 0; k < 2; k++) {
        idx_data d;
        if (idx_read(path, k ? 0x801 : 0x803, &d, err, sizeof err) == 0) {
            if (!d.data || d.n <= 0) abort();
            idx_free(&d);
        }
    }
    return 0;
}
