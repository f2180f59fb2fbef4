/* Training-step memory of LoRA against full fine-tuning (issue 26 item 2): the peak of the bytes
 * lithe holds (every allocation goes through lithe_set_allocator's hook, which sees them all:
 * weights, gradients, optimizer state, activations, workspaces) over three Adam steps, and the
 * time of a step, for an MLP (784-512-512-10, batch 64, lithe's dense layers) and for an ONNX
 * model given on the command line (input (batch, ...) as its first graph input's shape says;
 * bench/lora/make_cnn.py writes a small Fashion-MNIST CNN).
 *
 *     bench_lora_memory [cnn.onnx C H W batch]
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lithe.h"

static size_t live, peak;

static void *hook_malloc(void *u, size_t n) {
    (void)u;
    size_t *p = malloc(n + 16);
    if (!p) return NULL;
    p[0] = n;
    live += n;
    if (live > peak) peak = live;
    return (char *)p + 16;
}
static void hook_free(void *u, void *ptr) {
    (void)u;
    if (!ptr) return;
    size_t *p = (size_t *)((char *)ptr - 16);
    live -= p[0];
    free(p);
}
static void *hook_realloc(void *u, void *ptr, size_t n) {
    if (!ptr) return hook_malloc(u, n);
    size_t *p = (size_t *)((char *)ptr - 16);
    size_t old = p[0];
    size_t *q = realloc(p, n + 16);
    if (!q) return NULL;
    q[0] = n;
    live = live - old + n;
    if (live > peak) peak = live;
    return (char *)q + 16;
}

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        lithe_status s_ = (x);                                                                     \
        if (s_ != LITHE_OK) {                                                                      \
            fprintf(stderr, "%s: %s\n", #x, lithe_last_error());                                   \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static lithe_tensor *randn(int ndim, const int64_t *shape, uint64_t seed) {
    lithe_tensor *t = NULL;
    CHECK(lithe_tensor_new(NULL, LITHE_F32, ndim, shape, &t));
    lithe_rng rng = {seed, 0};
    lithe_rng_normal(&rng, lithe_tensor_data(t), (size_t)lithe_tensor_numel(t));
    return t;
}

/* Three Adam steps of loss sum(Y * R): the peak bytes over them (from the model's bytes before),
 * and the mean time of steps 2-3. */
static void steps(lithe_model *m, lithe_tensor *X, const char *what, size_t base) {
    lithe_optimizer *opt = NULL;
    lithe_optimizer_opts oo = lithe_adam_defaults();
    CHECK(lithe_optimizer_new(&oo, &opt));
    lithe_value *xv = NULL;
    CHECK(lithe_value_tensor(X, &xv));
    double t = 0;
    for (int i = 0; i < 3; i++) {
        double t0 = now();
        lithe_value *Y = NULL;
        lithe_backprop *bp = NULL;
        CHECK(lithe_model_begin_update(m, xv, &Y, &bp));
        lithe_tensor *y = lithe_value_get_tensor(Y);
        lithe_tensor *R = randn(lithe_tensor_ndim(y), lithe_tensor_shape(y), 5);
        lithe_value *rv = NULL;
        CHECK(lithe_value_tensor(R, &rv));
        CHECK(lithe_backprop_run(bp, rv, NULL));
        CHECK(lithe_model_finish_update(m, opt));
        lithe_backprop_free(bp);
        lithe_value_release(Y);
        lithe_value_release(rv);
        lithe_tensor_release(R);
        if (i) t += now() - t0;
    }
    printf("  %-22s peak %8.2f MB (weights at start %6.2f MB), step %7.2f ms\n", what, (double)peak / 1e6,
           (double)base / 1e6, 1e3 * t / 2);
    lithe_value_release(xv);
    lithe_optimizer_free(opt);
}

static lithe_model *mlp(void) {
    lithe_model *l[3] = {0}, *m = NULL;
    CHECK(lithe_relu(&(lithe_dense_opts){.nO = 512, .nI = 784}, &l[0]));
    CHECK(lithe_relu(&(lithe_dense_opts){.nO = 512, .nI = 512}, &l[1]));
    CHECK(lithe_linear(&(lithe_dense_opts){.nO = 10, .nI = 512}, &l[2]));
    CHECK(lithe_chain(3, l, &m));
    CHECK(lithe_model_initialize(m, NULL, NULL));
    return m;
}

static void run(const char *name, lithe_model *(*make)(const char *), const char *arg, lithe_tensor *X) {
    printf("%s:\n", name);
    size_t full = 0;
    for (int lora = 0; lora < 2; lora++) {
        lithe_model *m = make(arg);
        size_t base = live;
        peak = live;
        if (lora) CHECK(lithe_model_add_lora(m, NULL, 8, 16.0f, 1));
        steps(m, X, lora ? "LoRA rank 8 (all)" : "full fine-tuning", base);
        size_t p = peak - base;
        if (!lora) full = p;
        else printf("  LoRA / full, bytes a step adds over the weights: %.2f\n", (double)p / (double)full);
        lithe_model_free(m);
    }
}

static lithe_model *make_mlp(const char *arg) {
    (void)arg;
    return mlp();
}
static lithe_model *make_onnx(const char *path) {
    lithe_model *m = NULL;
    CHECK(lithe_model_load(path, &m));
    return m;
}

int main(int argc, char **argv) {
    CHECK(lithe_set_allocator(&(lithe_allocator){hook_malloc, hook_realloc, hook_free, NULL}));
    lithe_tensor *X = randn(2, (int64_t[]){64, 784}, 1);
    run("MLP 784-512-512-10, batch 64, Adam", make_mlp, NULL, X);
    lithe_tensor_release(X);
    if (argc >= 6) {
        int64_t shape[4] = {atoll(argv[5]), atoll(argv[2]), atoll(argv[3]), atoll(argv[4])};
        X = randn(4, shape, 2);
        char title[256];
        snprintf(title, sizeof title, "%s, batch %lld, Adam", argv[1], (long long)shape[0]);
        run(title, make_onnx, argv[1], X);
        lithe_tensor_release(X);
    }
    return 0;
}
