/* The WebGPU conformance harness (wgt.h). */
#include "wgt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

lithe_backend *cpu, *dev;
int failures;

int wgt_begin(void) {
    failures = 0;
    if (lithe_backend_get("cpu", &cpu) != LITHE_OK) {
        printf("FAIL: no cpu backend: %s\n", lithe_last_error());
        return 1;
    }
    if (lithe_backend_get("webgpu", &dev) != LITHE_OK) {
        printf("FAIL: no webgpu backend: %s\n", lithe_last_error());
        return 1;
    }
    return 0;
}

double wgt_uni(uint64_t *state) { return (double)(lithe__splitmix64(state) >> 11) * 0x1p-53; }

pair pair_new(lithe_dtype dt, int ndim, const int64_t *shape, const void *data) {
    pair p = {NULL, NULL};
    if (lithe_tensor_new(cpu, dt, ndim, shape, &p.c) || lithe_tensor_new(dev, dt, ndim, shape, &p.v)) {
        FAIL("tensor_new: %s", lithe_last_error());
        return p;
    }
    size_t bytes = (size_t)lithe_tensor_numel(p.c) * lithe_dtype_size(dt);
    void *zero = NULL;
    if (!data && bytes) data = zero = calloc(1, bytes);
    if (data && bytes && (lithe_tensor_write(p.c, data, bytes) || lithe_tensor_write(p.v, data, bytes)))
        FAIL("tensor_write: %s", lithe_last_error());
    free(zero);
    return p;
}

pair wgt_pair_rand(uint64_t *state, int ndim, const int64_t *shape, double lo, double hi) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = (float)(lo + (hi - lo) * wgt_uni(state));
    pair p = pair_new(LITHE_F32, ndim, shape, v);
    free(v);
    return p;
}

void pair_free(pair p) {
    lithe_tensor_release(p.c);
    lithe_tensor_release(p.v);
}

void sync_pair(pair p) {
    size_t n = (size_t)lithe_tensor_numel(p.c) * lithe_dtype_size(lithe_tensor_dtype(p.c));
    void *a = malloc(n + 4);
    if (lithe_tensor_read(p.c, a, n) || lithe_tensor_write(p.v, a, n)) FAIL("sync: %s", lithe_last_error());
    free(a);
}

void expect_pair(const char *what, pair p, double atol, double rtol) {
    if (!p.c || !p.v) return;
    size_t n = (size_t)lithe_tensor_numel(p.c), es = lithe_dtype_size(lithe_tensor_dtype(p.c));
    char *a = malloc(n * es + 1), *b = malloc(n * es + 1);
    if (lithe_tensor_read(p.c, a, n * es) || lithe_tensor_read(p.v, b, n * es)) {
        FAIL("%s: read: %s", what, lithe_last_error());
    } else {
        bool f32 = lithe_tensor_dtype(p.c) == LITHE_F32;
        for (size_t i = 0; i < n; i++) {
            double x = f32 ? ((float *)a)[i] : 0, y = f32 ? ((float *)b)[i] : 0;
            if (f32 && ((isnan(x) && isnan(y)) || (isinf(x) && x == y))) continue; /* equal infinities too */
            bool bad = (atol > 0 || rtol > 0) && f32 ? !(fabs(x - y) <= atol + rtol * fabs(x))
                                                    : memcmp(a + i * es, b + i * es, es) != 0;
            if (bad) {
                uint32_t ba = 0, bb = 0;
                if (es == 4) memcpy(&ba, a + i * 4, 4), memcpy(&bb, b + i * 4, 4);
                FAIL("%s[%zu] of %zu: cpu %.9g, webgpu %.9g (bits %08x / %08x; atol %g, rtol %g)", what, i, n, x, y,
                     (unsigned)ba, (unsigned)bb, atol, rtol);
                break;
            }
        }
    }
    free(a);
    free(b);
}
