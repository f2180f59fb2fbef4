/* gunzip_check IN.gz OUT: decompresses IN with the lithe command's gunzip (tools/lithe/gunzip.c)
 * into OUT, or prints its error and exits 1. tests/cli_gunzip.py compares OUT with Python's zlib. */
#include "gunzip.h"

#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: gunzip_check IN.gz OUT\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    size_t cap = 1 << 20, n = 0, got;
    unsigned char *b = malloc(cap);
    while (b && (got = fread(b + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) b = realloc(b, cap *= 2);
    }
    fclose(f);
    if (!b) return 1;
    uint8_t *out = NULL;
    size_t len = 0;
    char err[256];
    int rc = lithe_tool_gunzip(b, n, (size_t)1 << 31, &out, &len, err, sizeof err);
    free(b);
    if (rc != 0) {
        printf("error: %s\n", err);
        return 1;
    }
    FILE *o = fopen(argv[2], "wb");
    if (!o || fwrite(out, 1, len, o) != len || fclose(o) != 0) {
        perror(argv[2]);
        return 1;
    }
    free(out);
    printf("ok %zu bytes\n", len);
    return 0;
}
