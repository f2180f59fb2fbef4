/* libFuzzer target: loading by path, where the bytes come from files (issue 30): the .lithe mmap
 * loader and its read fallback, ONNX external data, TF.js weight shards. The first byte picks:
 *   0 / 1  the rest is model.lithe, loaded mapped (0) or with LITHE_NO_MMAP set (1);
 *   2      a 4-byte little-endian length n, then n bytes of model.onnx, the rest its external
 *          data, written under every name the seeds use (weights.bin, w.data);
 *   3      TF.js: model.json's text, a NUL, the weights, written whole as w.bin and
 *          group1-shard1of1.bin, and halved as w1.bin / w2.bin and group1-shard1of2.bin /
 *          group1-shard2of2.bin (the multi-shard paths).
 * Files live in one temp folder per process. Whatever loads is predicted on (2, 3) and freed. */
#define _POSIX_C_SOURCE 200809L
#include "lithe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static void put(const char *name, const uint8_t *p, size_t n) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    if (n && fwrite(p, 1, n, f) != n) abort();
    fclose(f);
}

/* refuses requests over 64 MiB: a declared size must be checked before it is allocated */
static void *cap_malloc(void *u, size_t n) { return (void)u, n > (64u << 20) ? NULL : malloc(n); }
static void *cap_realloc(void *u, void *p, size_t n) { return (void)u, n > (64u << 20) ? NULL : realloc(p, n); }
static void cap_free(void *u, void *p) { (void)u, free(p); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fuzz_paths_XXXXXX");
        if (!mkdtemp(dir)) abort();
        static const lithe_allocator cap = {cap_malloc, cap_realloc, cap_free, NULL};
        lithe_set_allocator(&cap);
    }
    if (size < 1) return 0;
    int mode = data[0] % 4;
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    char path[256];
    lithe_model *m = NULL;
    if (mode <= 1) {
        put("model.lithe", p, n);
        snprintf(path, sizeof path, "%s/model.lithe", dir);
        if (mode == 1) setenv("LITHE_NO_MMAP", "1", 1);
        (void)lithe_model_load(path, &m);
        if (mode == 1) unsetenv("LITHE_NO_MMAP");
    } else if (mode == 2) {
        if (n < 4) return 0;
        size_t k = (size_t)p[0] | (size_t)p[1] << 8 | (size_t)p[2] << 16 | (size_t)p[3] << 24;
        if (k > n - 4) k = n - 4;
        put("model.onnx", p + 4, k);
        put("weights.bin", p + 4 + k, n - 4 - k);
        put("w.data", p + 4 + k, n - 4 - k);
        snprintf(path, sizeof path, "%s/model.onnx", dir);
        (void)lithe_model_load(path, &m);
    } else {
        const uint8_t *nul = memchr(p, 0, n);
        size_t jn = nul ? (size_t)(nul - p) : n, wn = nul ? n - jn - 1 : 0;
        put("model.json", p, jn);
        const uint8_t *w = p + jn + (nul ? 1 : 0);
        put("w.bin", w, wn);
        put("group1-shard1of1.bin", w, wn);
        put("w1.bin", w, wn / 2);
        put("w2.bin", w + wn / 2, wn - wn / 2);
        put("group1-shard1of2.bin", w, wn / 2);
        put("group1-shard2of2.bin", w + wn / 2, wn - wn / 2);
        snprintf(path, sizeof path, "%s/model.json", dir);
        (void)lithe_model_load(path, &m);
    }
    if (m) {
        float x[6] = {0.5f, -1, 2, 0, 1, 1};
        lithe_tensor *X = NULL, *Y = NULL;
        if (lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 3}, x, &X) == LITHE_OK) {
            (void)lithe_model_predict_tensor(m, X, &Y); /* may fail with an error, must not crash */
            lithe_tensor_release(Y);
            lithe_tensor_release(X);
        }
        lithe_model_free(m);
    }
    return 0;
}
