/* GPU backend benchmark (Vulkan and CUDA; runs on any backend, so the CPU gives the comparison):
 *   GEMM  C (n, n) = A (n, n) · B (n, n), fp32, GFLOP/s = 2 n^3 reps / seconds, timed from a
 *         synchronised start to a synchronised end (the device's queue drained);
 *   MLP   training steps/s of Relu(784 -> 512) >> Relu(512) >> Softmax(10), batch 128, Adam,
 *         cross-entropy from int labels (Thinc's MNIST example), data already on the device;
 *   CNN   forward passes/s of an ONNX CNN (bench/vulkan/torch_ref.py --onnx exports it: input
 *         (batch, 1, 28, 28), batch 64), imported as a graph layer, input already on the device.
 * --batch N replaces both batches (the ctest smokes run tiny ones: output lines only, never a time).
 * Built as lithe_vulkan_bench (bench/vulkan_bench.sh) and lithe_cuda_bench (bench/cuda/cuda_bench.sh).
 * Usage: lithe_<x>_bench [--device vulkan|cuda|cpu|...] [--gemm 256,1024,4096] [--steps N] [--cnn m.onnx]
 *                        [--batch N]
 * Prints one line per measurement: "<device> gemm n=<n> <GFLOP/s> GFLOP/s" (Vulkan: first a line
 * on the device's subgroups, then one per GEMM variant, "variant=auto(<the one it picks>)" first),
 * "<device> mlp batch=128 784-512-512-10 <steps/s> steps/s" and "<device> cnn batch=64 <passes/s> forward/s". */
#define _POSIX_C_SOURCE 200112L /* clock_gettime, setenv */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"
#include "lithe.h"
#ifdef LITHE_HAVE_VULKAN
#include "../../backends/vulkan/vulkan_internal.h"
#endif

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int die(const char *what, lithe_status s) {
    fprintf(stderr, "lithe bench: %s: %s: %s\n", what, lithe_status_str(s), lithe_last_error());
    return 1;
}

#define TRY(what, expr)                                                                            \
    do {                                                                                           \
        lithe_status s_ = (expr);                                                                  \
        if (s_ != LITHE_OK) return die(what, s_);                                                  \
    } while (0)

static int rand_tensor(lithe_backend *be, int64_t r, int64_t c, uint64_t seed, lithe_tensor **out) {
    float *v = malloc(sizeof(float) * (size_t)(r * c));
    if (!v) return die("malloc", LITHE_ERR_OOM);
    lithe_rng rng = {seed, 0};
    lithe_rng_uniform(&rng, v, (size_t)(r * c));
    for (int64_t i = 0; i < r * c; i++) v[i] = v[i] * 2.0f - 1.0f;
    lithe_status s = lithe_tensor_new(be, LITHE_F32, 2, (int64_t[]){r, c}, out);
    if (s == LITHE_OK) s = lithe_tensor_write(*out, v, sizeof(float) * (size_t)(r * c));
    free(v);
    return s == LITHE_OK ? 0 : die("tensor", s);
}

static int bench_gemm(lithe_backend *be, int64_t n, const char *variant) {
    lithe_tensor *A = NULL, *B = NULL, *C = NULL;
    if (rand_tensor(be, n, n, 1, &A) || rand_tensor(be, n, n, 2, &B) || rand_tensor(be, n, n, 3, &C)) return 1;
    TRY("gemm warm-up", lithe__op_gemm(be, false, false, 1.0f, A, B, 0.0f, C));
    TRY("sync", be->ops->sync(be));
    /* enough repetitions for about a second at the warm-up's speed */
    double t0 = now();
    TRY("gemm", lithe__op_gemm(be, false, false, 1.0f, A, B, 0.0f, C));
    TRY("sync", be->ops->sync(be));
    double one = now() - t0;
    int reps = one > 0 ? (int)(1.0 / one) : 100;
    if (reps < 1) reps = 1;
    if (reps > 200) reps = 200;
    t0 = now();
    for (int r = 0; r < reps; r++) TRY("gemm", lithe__op_gemm(be, false, false, 1.0f, A, B, 0.0f, C));
    TRY("sync", be->ops->sync(be));
    double t = now() - t0;
    printf("%s gemm n=%lld%s%s %.2f GFLOP/s (%d reps, %.3f s)\n", lithe_backend_name(be), (long long)n,
           variant ? " variant=" : "", variant ? variant : "", 2.0 * (double)n * (double)n * (double)n * reps / t * 1e-9,
           reps, t);
    lithe_tensor_release(A);
    lithe_tensor_release(B);
    lithe_tensor_release(C);
    return 0;
}

static int bench_mlp(lithe_backend *be, int steps, int batch) {
    enum { NI = 784, NC = 10 };
    lithe_model *l[3], *m = NULL;
    TRY("relu", lithe_relu(&(lithe_dense_opts){.nO = 512}, &l[0]));
    TRY("relu", lithe_relu(&(lithe_dense_opts){.nO = 512}, &l[1]));
    TRY("softmax", lithe_softmax(&(lithe_softmax_opts){.nO = NC}, &l[2]));
    TRY("chain", lithe_chain(3, l, &m));
    TRY("seed", lithe_model_set_seed(m, 0));
    lithe_tensor *X = NULL, *Y = NULL, *L = NULL;
    if (rand_tensor(be, batch, NI, 4, &X)) return 1;
    int32_t *labels = calloc((size_t)batch, sizeof *labels);
    float *onehot = calloc((size_t)batch * NC, sizeof *onehot);
    if (!labels || !onehot) {
        free(labels);
        free(onehot);
        return die("malloc", LITHE_ERR_OOM);
    }
    for (int i = 0; i < batch; i++) {
        labels[i] = i % NC;
        onehot[i * NC + labels[i]] = 1.0f;
    }
    TRY("labels", lithe_tensor_new(be, LITHE_I32, 1, (int64_t[]){batch}, &L));
    TRY("labels", lithe_tensor_write(L, labels, sizeof *labels * (size_t)batch));
    TRY("targets", lithe_tensor_new(be, LITHE_F32, 2, (int64_t[]){batch, NC}, &Y));
    TRY("targets", lithe_tensor_write(Y, onehot, sizeof *onehot * (size_t)batch * NC));
    free(labels);
    free(onehot);
    lithe_value *Xv = NULL, *Yv = NULL;
    TRY("value", lithe_value_tensor(X, &Xv));
    TRY("value", lithe_value_tensor(Y, &Yv));
    TRY("set_backend", lithe_model_set_backend(m, be));
    TRY("initialize", lithe_model_initialize(m, Xv, Yv));
    lithe_optimizer_opts oo = lithe_adam_defaults();
    lithe_optimizer *opt = NULL;
    TRY("optimizer", lithe_optimizer_new(&oo, &opt));
    double t0 = 0;
    uint64_t submits0 = 0;
    for (int step = -2; step < steps; step++) { /* two warm-up steps compile the pipelines */
        if (step == 0) {
            TRY("sync", be->ops->sync(be));
            t0 = now();
#ifdef LITHE_HAVE_VULKAN
            if (!strncmp(lithe_backend_name(be), "vulkan", 6)) submits0 = lithe__vk_of(be)->n_submits;
#endif
        }
        lithe_value *G = NULL, *dv = NULL;
        lithe_backprop *bp = NULL;
        lithe_tensor *d = NULL;
        TRY("forward", lithe_model_begin_update(m, Xv, &G, &bp));
        TRY("loss", lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(G), L, &d, NULL));
        TRY("value", lithe_value_tensor(d, &dv));
        TRY("backward", lithe_backprop_run(bp, dv, NULL));
        TRY("finish_update", lithe_model_finish_update(m, opt));
        lithe_tensor_release(d);
        lithe_value_release(dv);
        lithe_value_release(G);
        lithe_backprop_free(bp);
    }
    TRY("sync", be->ops->sync(be));
    double t = now() - t0;
    char extra[64] = "";
    (void)submits0;
#ifdef LITHE_HAVE_VULKAN
    /* queue submissions per step: each one is the host waiting for the device (a read-back) or
     * a frame full of dispatches */
    if (!strncmp(lithe_backend_name(be), "vulkan", 6))
        snprintf(extra, sizeof extra, ", %.1f submits/step",
                 (double)(lithe__vk_of(be)->n_submits - submits0 - 1) / (steps > 0 ? steps : 1));
#endif
    printf("%s mlp batch=%d 784-512-512-10 %.1f steps/s (%d steps, %.3f s%s)\n", lithe_backend_name(be), batch,
           steps / t, steps, t, extra);
    lithe_optimizer_free(opt);
    lithe_value_release(Xv);
    lithe_value_release(Yv);
    lithe_tensor_release(X);
    lithe_tensor_release(Y);
    lithe_tensor_release(L);
    lithe_model_free(m);
    return 0;
}

static int bench_cnn(lithe_backend *be, const char *path, int reps, int batch) {
    lithe_model *m = NULL;
    TRY("--cnn", lithe_onnx_load(path, &m));
    TRY("set_backend", lithe_model_set_backend(m, be));
    lithe_tensor *X = NULL;
    if (rand_tensor(be, batch, 28 * 28, 5, &X)) return 1;
    lithe_tensor *X4 = NULL;
    TRY("reshape", lithe_tensor_reshape(X, 4, (int64_t[]){batch, 1, 28, 28}, &X4));
    lithe_value *Xv = NULL;
    TRY("value", lithe_value_tensor(X4, &Xv));
    double t0 = 0;
    for (int r = -2; r < reps; r++) {
        if (r == 0) {
            TRY("sync", be->ops->sync(be));
            t0 = now();
        }
        lithe_value *Y = NULL;
        TRY("cnn forward", lithe_model_predict(m, Xv, &Y));
        lithe_value_release(Y);
    }
    TRY("sync", be->ops->sync(be));
    double t = now() - t0;
    printf("%s cnn batch=%d %.1f forward/s (%d passes, %.3f s)\n", lithe_backend_name(be), batch, reps / t, reps, t);
    lithe_value_release(Xv);
    lithe_tensor_release(X4);
    lithe_tensor_release(X);
    lithe_model_free(m);
    return 0;
}

int main(int argc, char **argv) {
    const char *device = "vulkan", *gemm = "256,1024", *cnn = NULL;
    int steps = 20, mlp_batch = 128, cnn_batch = 64;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--device")) device = argv[i + 1];
        else if (!strcmp(argv[i], "--gemm")) gemm = argv[i + 1];
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--cnn")) cnn = argv[i + 1];
        else if (!strcmp(argv[i], "--batch") && atoi(argv[i + 1]) >= 1 && atoi(argv[i + 1]) <= 4096)
            mlp_batch = cnn_batch = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: %s [--device NAME] [--gemm n,n,...] [--steps N] [--cnn model.onnx] [--batch 1..4096]\n",
                    argv[0]);
            return 2;
        }
    }
    lithe_backend *be = NULL;
    TRY("--device", lithe_backend_get(device, &be));
    bool vulkan = !strncmp(lithe_backend_name(be), "vulkan", 6);
#ifdef LITHE_HAVE_VULKAN
    /* Vulkan: what the GEMM variant choice reads, then every variant at every size (the run-time
     * choice, "auto", first; LITHE_VULKAN_GEMM set: that one alone) */
    if (vulkan) {
        char desc[512];
        lithe__vk_describe(be, desc, sizeof desc);
        printf("%s device: %s\n", lithe_backend_name(be), desc);
    }
#endif
    static const char *const variants[] = {"auto", "basic", "tiled", "subgroup"};
    const char *forced = getenv("LITHE_VULKAN_GEMM");
    size_t n_variants = vulkan && !forced ? sizeof variants / sizeof variants[0] : 1;
    for (const char *p = gemm; *p;) {
        int64_t n = strtoll(p, NULL, 10);
        for (size_t v = 0; n > 0 && v < n_variants; v++) {
            const char *label = NULL;
#ifdef LITHE_HAVE_VULKAN
            if (vulkan) {
                if (!forced) setenv("LITHE_VULKAN_GEMM", variants[v], 1);
                label = lithe__vk_gemm_variant(be, n, n, n);
                char both[64];
                if (!strcmp(label, "none")) {
                    printf("%s gemm n=%lld variant=%s: not available on this device\n", lithe_backend_name(be),
                           (long long)n, forced ? forced : variants[v]);
                    continue;
                }
                if (!forced && !v) { /* "auto": say what it picked */
                    snprintf(both, sizeof both, "auto(%s)", label);
                    label = both;
                }
                if (bench_gemm(be, n, label)) return 1;
                continue;
            }
#endif
            if (bench_gemm(be, n, label)) return 1;
        }
        p = strchr(p, ',');
        if (!p) break;
        p++;
    }
    if (vulkan && !forced) unsetenv("LITHE_VULKAN_GEMM");
    if (steps > 0 && bench_mlp(be, steps, mlp_batch)) return 1;
    if (cnn && bench_cnn(be, cnn, steps > 0 ? steps : 20, cnn_batch)) return 1;
    return 0;
}
