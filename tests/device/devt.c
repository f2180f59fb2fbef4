/* The device-conformance harness (devt.h). */
#include "devt.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

lithe_backend *cpu, *dev;
const char *devt_name = "?";
int failures;
long devt_checks;
uint64_t rng_state = 12345;

int devt_begin(const char *device) {
    failures = 0;
    devt_name = device;
    if (lithe_backend_get("cpu", &cpu) != LITHE_OK) {
        printf("FAIL: no cpu backend: %s\n", lithe_last_error());
        return 1;
    }
    if (lithe_backend_get(device, &dev) != LITHE_OK) {
        printf("FAIL: no %s backend: %s\n", device, lithe_last_error());
        dev = NULL;
        return 1;
    }
    return 0;
}

void devt_case_begin(void) {
    failures = 0;
    rng_state = 12345;
}

bool devt_is(const char *name) { return !strcmp(devt_name, name); }

bool devt_has_prim(const char *name) {
    for (size_t i = 0; i < lithe__prim_count; i++)
        if (!strcmp(lithe__prim_names[i], name)) return lithe__backend_has_prim(dev, i);
    return false;
}

double uni(void) { return (double)(lithe__splitmix64(&rng_state) >> 11) * 0x1p-53; }

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

pair pair_rand(int ndim, const int64_t *shape, double lo, double hi) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = (float)(lo + (hi - lo) * uni());
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

void pair_poke_nan(pair p, int64_t i) {
    size_t n = (size_t)lithe_tensor_numel(p.c);
    float *a = malloc(n * 4 + 4);
    if (lithe_tensor_read(p.c, a, n * 4)) FAIL("read: %s", lithe_last_error());
    a[i] = NAN;
    if (lithe_tensor_write(p.c, a, n * 4) || lithe_tensor_write(p.v, a, n * 4)) FAIL("write: %s", lithe_last_error());
    free(a);
}

/* how many floats lie between a and b (their bits as one ordered integer line); NaN is far from all */
static int64_t ulp_distance(float a, float b) {
    if (isnan(a) || isnan(b)) return INT64_MAX;
    int32_t ia, ib;
    memcpy(&ia, &a, 4), memcpy(&ib, &b, 4);
    int64_t oa = ia < 0 ? (int64_t)INT32_MIN - ia : ia, ob = ib < 0 ? (int64_t)INT32_MIN - ib : ib;
    return oa > ob ? oa - ob : ob - oa;
}

void expect_pair(const char *what, pair p, double atol, double rtol) {
    devt_checks++;
    if (!p.c || !p.v) {
        FAIL("%s: a tensor is missing", what);
        return;
    }
    size_t n = (size_t)lithe_tensor_numel(p.c), es = lithe_dtype_size(lithe_tensor_dtype(p.c));
    char *a = malloc(n * es + 1), *b = malloc(n * es + 1);
    if (lithe_tensor_read(p.c, a, n * es) || lithe_tensor_read(p.v, b, n * es)) {
        FAIL("%s: read: %s", what, lithe_last_error());
    } else {
        bool f32 = lithe_tensor_dtype(p.c) == LITHE_F32;
        /* "Bit for bit" on Vulkan means within 8 ulp: SPIR-V leaves division, sqrt, exp and log to the
           driver's precision (OpFDiv: 2.5 ulp) and lets it fuse a * b + c into an fma. lavapipe rounds
           like the CPU; NVIDIA's driver came out 1-5 ulp away (an H200: cce_labels 1, cauchy_similarity's
           backward, a division chained into products, 5). */
        int64_t ulps = devt_is("vulkan") ? 8 : 0;
        for (size_t i = 0; i < n; i++) {
            double x = f32 ? ((float *)a)[i] : 0, y = f32 ? ((float *)b)[i] : 0;
            if (f32 && ((isnan(x) && isnan(y)) || (isinf(x) && x == y))) continue; /* equal infinities too */
            bool bad = (atol > 0 || rtol > 0) && f32 ? !(fabs(x - y) <= atol + rtol * fabs(x))
                       : f32 && ulps                 ? !(ulp_distance(((float *)a)[i], ((float *)b)[i]) <= ulps)
                                                     : memcmp(a + i * es, b + i * es, es) != 0;
            if (bad) {
                uint64_t ba = 0, bb = 0;
                memcpy(&ba, a + i * es, es < 8 ? es : 8), memcpy(&bb, b + i * es, es < 8 ? es : 8);
                FAIL("%s[%zu] of %zu: cpu %.9g, %s %.9g (bits 0x%llx / 0x%llx; atol %g, rtol %g)", what, i, n, x,
                     devt_name, y, (unsigned long long)ba, (unsigned long long)bb, atol, rtol);
                break;
            }
        }
    }
    free(a);
    free(b);
}

double max_diff(const char *what, pair p) {
    size_t n = (size_t)lithe_tensor_numel(p.c);
    float *a = malloc(n * 4 + 4), *b = malloc(n * 4 + 4);
    double m = 0;
    if (lithe_tensor_read(p.c, a, n * 4) || lithe_tensor_read(p.v, b, n * 4)) FAIL("%s: read: %s", what, lithe_last_error());
    else
        for (size_t i = 0; i < n; i++) m = fmax(m, fabs((double)a[i] - b[i]));
    free(a);
    free(b);
    printf("%s max |cpu - %s| = %.3g\n", what, devt_name, m);
    return m;
}

lithe_value *devt_value_on(lithe_backend *be, lithe_dtype dt, int ndim, const int64_t *shape, const void *data) {
    lithe_tensor *t = NULL;
    lithe_value *v = NULL;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    if (lithe_tensor_new(be, dt, ndim, shape, &t) || lithe_tensor_write(t, data, (size_t)n * lithe_dtype_size(dt)) ||
        lithe_value_tensor(t, &v))
        FAIL("value_on: %s", lithe_last_error());
    lithe_tensor_release(t);
    return v;
}

#include "cases.h"

#define DEVT_ENTRY(family, name) {#family, #name, dc_##name},
const devt_case devt_cases[] = {DEVT_CASES(DEVT_ENTRY)};
const size_t devt_n_cases = sizeof devt_cases / sizeof devt_cases[0];
const int64_t devt_sizes[7] = {1, 3, 255, 256, 257, 1000, 4099};
