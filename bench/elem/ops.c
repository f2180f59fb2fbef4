/* Per-op timings of the CPU backend's vectorised kernels (backends/cpu/simd/) on every ISA table
 * this machine runs, against the scalar twins; min of N runs (the machine is shared). Not part of
 * the build (it reads internals):
 *   gcc -O2 -Iinclude -Icore bench/elem/ops.c build/ci/liblithe.a -lm -lpthread -ldl -o /tmp/elem_ops */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lithe.h"
#include "../../backends/cpu/simd/simd.h"

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

enum { B = 64, NH = 512, NP = 784 * 512 + 512 };
static float *X, *A, *Bv, *Y, *Z, *W, *G;

#define TIME(label, expr)                                                                          \
    do {                                                                                           \
        double best = 1e30;                                                                        \
        for (int r = 0; r < reps; r++) {                                                           \
            double t0 = now_us();                                                                  \
            expr;                                                                                  \
            double d = now_us() - t0;                                                              \
            if (d < best) best = d;                                                                \
        }                                                                                          \
        res[ti][op] = best;                                                                        \
        names[op++] = label;                                                                       \
    } while (0)

int main(int argc, char **argv) {
    int reps = argc > 1 ? atoi(argv[1]) : 50;
    size_t cap = NP + 64;
    X = malloc(cap * 4), A = malloc(cap * 4), Bv = malloc(cap * 4), Y = malloc(cap * 4), Z = malloc(cap * 4),
    W = malloc(cap * 4), G = malloc(cap * 4);
    for (size_t i = 0; i < cap; i++) {
        X[i] = (float)((i * 7919) % 1000) / 250.0f - 2.0f;
        A[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
        Bv[i] = 0.5f + (float)(i % 100) / 100.0f;
        W[i] = G[i] = A[i];
        Y[i] = Z[i] = 0.0f;
    }
    const lithe__simd_kernels *t[8];
    int nt = lithe__simd_available(t, 8);
    double res[8][32];
    const char *names[32];
    int nops = 0;
    for (int ti = 0; ti < nt; ti++) {
        const lithe__simd_kernels *k = t[ti];
        int op = 0;
        lithe__act relu = {.kind = LITHE__ACT_RELU}, gelu = {.kind = LITHE__ACT_GELU},
                   sig = {.kind = LITHE__ACT_SIGMOID}, tnh = {.kind = LITHE__ACT_TANH},
                   sw = {.kind = LITHE__ACT_SWISH};
        TIME("relu 64x512", k->act(&relu, B * NH, X, Y));
        TIME("relu bwd 64x512", k->act_backward(&relu, B * NH, A, NULL, X, Y));
        TIME("sigmoid 64x512", k->act(&sig, B * NH, X, Y));
        TIME("tanh 64x512", k->act(&tnh, B * NH, X, Y));
        TIME("swish 64x512", k->act(&sw, B * NH, X, Y));
        TIME("gelu 64x512", k->act(&gelu, B * NH, X, Y));
        TIME("gelu bwd 64x512", k->act_backward(&gelu, B * NH, A, X, Y, Z));
        TIME("add_row 64x512", k->add_row(B, NH, Y, A));
        TIME("sum_rows 64x512", k->sum_rows(B, NH, NH, X, 0.0f, Y));
        TIME("axpby 401920", k->axpby(NP, 0.5f, X, 1.0f, Y));
        TIME("mul 401920", k->mul(NP, X, A, Y));
        TIME("sum_squares 401920", (void)k->sum_squares(NP, X));
        TIME("adam 401920", k->adam(NP, W, A, Y, Bv, 0.9f, 0.999f, 1e-8f, 1e-3f));
        TIME("update_averages 401920", k->update_averages(NP, Z, W, 0.999f));
        /* the optimizer's Adam step as separate passes, then fused (adam_step); G is zero after
         * the first run, which changes no instruction's timing */
        TIME("adam+zero G+avg 401920", (k->adam(NP, W, G, Y, Bv, 0.9f, 0.999f, 1e-8f, 1e-3f),
                                        memset(G, 0, NP * sizeof(float)), k->update_averages(NP, Z, W, 0.999f)));
        TIME("adam_step 401920", k->adam_step(NP, W, G, Y, Bv, Z, 1.0f, 0.9f, 0.999f, 1e-8f, 1e-3f, 1.0f, 0.999f));
        TIME("softmax 64x10", k->softmax(B, 10, X, 1.0f, Y));
        TIME("softmax 64x1000", k->softmax(B, 1000, X, 1.0f, Y));
        TIME("softmax bwd 64x1000", k->softmax_backward(B, 1000, Y, A, 1.0f, Z));
        TIME("log_softmax 64x1000", k->log_softmax(B, 1000, X, Y));
        float mean[B], is[B];
        TIME("layernorm 64x512", k->layernorm(B, NH, X, Bv, A, 1e-5f, Y, mean, is));
        TIME("layernorm bwd dX 64x512", k->layernorm_backward_dx(B, NH, A, X, Bv, mean, is, Z));
        TIME("layernorm bwd dG 64x512", k->layernorm_backward_dgb(B, NH, NH, A, X, mean, is, Y, Z));
        TIME("unary exp 32768", k->unary(LITHE__UN_EXP, B * NH, X, Y));
        int32_t which[B * NH];
        TIME("maxout 64x512x3", k->maxout(B * NH / 3, 3, X, Y, which));
        nops = op;
    }
    printf("%-26s", "op (us, min)");
    for (int ti = 0; ti < nt; ti++) printf(" %9s", t[ti]->isa);
    printf("  best/scalar\n");
    for (int op = 0; op < nops; op++) {
        printf("%-26s", names[op]);
        double best = 1e30;
        for (int ti = 0; ti < nt; ti++) {
            printf(" %9.2f", res[ti][op]);
            if (res[ti][op] < best) best = res[ti][op];
        }
        printf("  %6.1fx\n", res[0][op] / best);
    }
    /* the thread split on the default table: 1 vs 2 threads */
    lithe_backend *cpu;
    lithe_backend_get("cpu", &cpu);
    printf("\nthreads (default table %s): us, min         1 thr     2 thr\n", lithe__simd()->isa);
    for (int th = 1; th <= 2; th++) {
        lithe_backend_set_threads(cpu, th);
        int ti = th - 1, op = 0;
        lithe__act gelu = {.kind = LITHE__ACT_GELU}, relu = {.kind = LITHE__ACT_RELU};
        TIME("gelu 64x512", lithe__cpu_act(&gelu, B * NH, X, Y));
        TIME("relu 64x512", lithe__cpu_act(&relu, B * NH, X, Y));
        TIME("adam 401920", lithe__cpu_adam(NP, W, A, Y, Bv, 0.9f, 0.999f, 1e-8f, 1e-3f));
        TIME("update_averages 401920", lithe__cpu_update_averages(NP, Z, W, 0.999f));
        TIME("softmax 64x1000", lithe__cpu_softmax(B, 1000, X, 1.0f, Y));
        float mean[B], is[B];
        TIME("layernorm 64x512", lithe__cpu_layernorm(B, NH, X, Bv, A, 1e-5f, Y, mean, is));
        nops = op;
    }
    for (int op = 0; op < nops; op++) printf("%-40s %9.2f %9.2f  %.2fx\n", names[op], res[0][op], res[1][op], res[0][op] / res[1][op]);
    return 0;
}
