/* A small timing driver for the CPU kernels' work (issue 10, item 2): the MLP 784-512-512-10
 * (Relu, Relu, Softmax) training step at batch 64 with Adam and its predict at batch 1 and 64,
 * and an ONNX model's forward (the LeNet-style CNN or mobilenet_v2 of bench/make_models.py).
 * Prints the minimum and median over the timed runs (the machine is shared: the minimum is the
 * steadier figure). Not part of the build:
 *   gcc -O2 -Iinclude bench/elem/driver.c build/ci/liblithe.a -lm -lpthread -o /tmp/elem_driver
 *   /tmp/elem_driver mlp|mlp-predict [runs]   |   /tmp/elem_driver onnx MODEL.onnx X.npy [runs] */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lithe.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static void report(const char *what, double *t, int n) {
    qsort(t, (size_t)n, sizeof *t, cmpd);
    printf("%-28s min %.4f ms  median %.4f ms  (%d runs)\n", what, t[0], t[n / 2], n);
}
#define CK(x)                                                                                      \
    do {                                                                                           \
        lithe_status s_ = (x);                                                                     \
        if (s_ != LITHE_OK) {                                                                      \
            fprintf(stderr, "%s: %s (%s)\n", #x, lithe_status_str(s_), lithe_last_error());       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static lithe_tensor *rand_tensor(lithe_backend *be, int64_t r, int64_t c, unsigned seed) {
    lithe_tensor *t;
    CK(lithe_tensor_new(be, LITHE_F32, 2, (int64_t[]){r, c}, &t));
    float *v = malloc(sizeof(float) * (size_t)(r * c));
    srand(seed);
    for (int64_t i = 0; i < r * c; i++) v[i] = (float)rand() / RAND_MAX - 0.5f;
    CK(lithe_tensor_write(t, v, sizeof(float) * (size_t)(r * c)));
    free(v);
    return t;
}

static void predict_runs(lithe_model *m, lithe_tensor *x, int runs, const char *what) {
    double *t = malloc(sizeof(double) * (size_t)runs);
    lithe_value *xv;
    CK(lithe_value_tensor(x, &xv));
    for (int i = -runs / 5 - 3; i < runs; i++) {
        double t0 = now_ms();
        lithe_value *y = NULL;
        CK(lithe_model_predict(m, xv, &y));
        lithe_value_release(y);
        if (i >= 0) t[i] = now_ms() - t0;
    }
    report(what, t, runs);
    lithe_value_release(xv);
    free(t);
}

static int mlp(int runs, bool train) {
    lithe_backend *be;
    CK(lithe_backend_get("cpu", &be));
    lithe_model *h1, *h2, *sm, *m;
    CK(lithe_relu(&(lithe_dense_opts){.nO = 512}, &h1));
    CK(lithe_relu(&(lithe_dense_opts){.nO = 512}, &h2));
    CK(lithe_softmax(&(lithe_softmax_opts){.nO = 10}, &sm));
    CK(lithe_chain(3, (lithe_model *[]){h1, h2, sm}, &m));
    CK(lithe_model_set_backend(m, be));
    lithe_tensor *x64 = rand_tensor(be, 64, 784, 1), *x1 = rand_tensor(be, 1, 784, 2), *y64 = rand_tensor(be, 64, 10, 3);
    lithe_value *xv, *yv;
    CK(lithe_value_tensor(x64, &xv));
    CK(lithe_value_tensor(y64, &yv));
    CK(lithe_model_initialize(m, xv, yv));
    lithe_optimizer *opt;
    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.learn_rate = 1e-3f;
    CK(lithe_optimizer_new(&oo, &opt));
    int32_t labels[64];
    for (int i = 0; i < 64; i++) labels[i] = i % 10;
    lithe_tensor *lt;
    CK(lithe_tensor_new(be, LITHE_I32, 1, (int64_t[]){64}, &lt));
    CK(lithe_tensor_write(lt, labels, sizeof labels));
    double *t = malloc(sizeof(double) * (size_t)runs);
    for (int i = -runs / 5 - 3; train && i < runs; i++) {
        double t0 = now_ms();
        lithe_value *gv = NULL, *dv = NULL;
        lithe_backprop *bp = NULL;
        lithe_tensor *dt = NULL;
        CK(lithe_model_begin_update(m, xv, &gv, &bp));
        CK(lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(gv), lt, &dt, NULL));
        CK(lithe_value_tensor(dt, &dv));
        CK(lithe_backprop_run(bp, dv, NULL));
        CK(lithe_model_finish_update(m, opt));
        lithe_backprop_free(bp);
        lithe_value_release(gv);
        lithe_value_release(dv);
        lithe_tensor_release(dt);
        if (i >= 0) t[i] = now_ms() - t0;
    }
    if (train) report("mlp train step b64 (Adam)", t, runs);
    predict_runs(m, x1, runs * 4, "mlp predict b1");
    predict_runs(m, x64, runs, "mlp predict b64");
    free(t);
    lithe_value_release(xv);
    lithe_value_release(yv);
    lithe_tensor_release(x64);
    lithe_tensor_release(x1);
    lithe_tensor_release(y64);
    lithe_tensor_release(lt);
    lithe_optimizer_free(opt);
    lithe_model_free(m);
    return 0;
}

static int onnx(const char *path, const char *xpath, int runs) {
    lithe_model *m;
    lithe_tensor *x, *ref = NULL;
    CK(lithe_onnx_load(path, &m));
    CK(lithe_npy_read_file(xpath, &x));
    /* X.npy's sibling *_ref.npy (bench/make_models.py writes both): the largest difference */
    char rpath[1024];
    size_t L = strlen(xpath);
    if (L > 6 && L < sizeof rpath - 8 && !strcmp(xpath + L - 6, "_x.npy")) {
        snprintf(rpath, sizeof rpath, "%.*s_ref.npy", (int)(L - 6), xpath);
        if (lithe_npy_read_file(rpath, &ref) == LITHE_OK) {
            lithe_value *xv, *yv;
            CK(lithe_value_tensor(x, &xv));
            CK(lithe_model_predict(m, xv, &yv));
            lithe_tensor *y = lithe_value_get_tensor(yv);
            int64_t n = lithe_tensor_numel(ref);
            float *a = malloc(sizeof(float) * (size_t)n), *r = malloc(sizeof(float) * (size_t)n);
            CK(lithe_tensor_read(y, a, sizeof(float) * (size_t)n));
            CK(lithe_tensor_read(ref, r, sizeof(float) * (size_t)n));
            double worst = 0, big = 0;
            for (int64_t i = 0; i < n; i++) {
                double d = a[i] > r[i] ? a[i] - r[i] : r[i] - a[i];
                if (d > worst) worst = d;
                if ((r[i] < 0 ? -r[i] : r[i]) > big) big = r[i] < 0 ? -r[i] : r[i];
            }
            printf("max |lithe - torch| %.3g (max |torch| %.3g)\n", worst, big);
            free(a), free(r);
            lithe_value_release(xv), lithe_value_release(yv), lithe_tensor_release(ref);
        }
    }
    char what[64];
    snprintf(what, sizeof what, "onnx forward b%lld", (long long)lithe_tensor_shape(x)[0]);
    predict_runs(m, x, runs, what);
    lithe_tensor_release(x);
    lithe_model_free(m);
    return 0;
}

/* ELEM_SCALAR=1: the elementwise / row-wise / optimizer / depthwise kernels on their scalar twins
 * (backends/cpu/simd/simd.h), GEMM unchanged: the "before" of those kernels. Internals of the
 * static library, declared here by hand. */
extern const char lithe__simd_scalar[];
void lithe__simd_force(const void *k);

int main(int argc, char **argv) {
    if (getenv("ELEM_SCALAR") && atoi(getenv("ELEM_SCALAR"))) lithe__simd_force(lithe__simd_scalar);
    const char *threads = getenv("LITHE_NUM_THREADS");
    printf("threads %s\n", threads ? threads : "(default)");
    if (argc >= 2 && !strcmp(argv[1], "mlp")) return mlp(argc > 2 ? atoi(argv[2]) : 200, true);
    if (argc >= 2 && !strcmp(argv[1], "mlp-predict")) return mlp(argc > 2 ? atoi(argv[2]) : 200, false);
    if (argc >= 4 && !strcmp(argv[1], "onnx")) return onnx(argv[2], argv[3], argc > 4 ? atoi(argv[4]) : 100);
    fprintf(stderr, "usage: driver mlp [runs] | driver onnx MODEL.onnx X.npy [runs]\n");
    return 2;
}
