/* The row kernels of adapters that run on the CPU (backends/webgpu/shaders/softmax_cpu.wgsl,
 * layernorm_cpu.wgsl, layernorm_dx_cpu.wgsl: one invocation per row, no barrier) and the workgroup
 * kernels real GPUs take (softmax.wgsl, layernorm.wgsl, layernorm_dx.wgsl), each forced in turn,
 * against the CPU backend: rows of odd lengths, rows past a workgroup and long rows (compensated
 * sums against the CPU's double ones), temperatures, in place, and special rows — a NaN, a row of
 * -inf, a +inf, some -inf among finite values — which give the CPU's NaN / zeros. In
 * lithe-webgpu-test.wasm; cpu_adapter.test.mjs runs it. Oracle: the CPU backend. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wgt.h"
#include "../../backends/webgpu/webgpu_internal.h"

#define EXPORT(name) __attribute__((used, export_name(#name)))

#define CPU_SEED 2727 /* this file's inputs (rng_state is the shared harness's) */
static const char *variant = "";

/* both sides' row r of a (M, N) pair set to vals (n of them, repeated) */
static void pair_set_row(pair p, int64_t N, int64_t r, const float *vals, int n) {
    size_t total = (size_t)lithe_tensor_numel(p.c);
    float *a = malloc(total * 4);
    if (lithe_tensor_read(p.c, a, total * 4)) FAIL("read: %s", lithe_last_error());
    for (int64_t j = 0; j < N; j++) a[r * N + j] = vals[j % n];
    if (lithe_tensor_write(p.c, a, total * 4) || lithe_tensor_write(p.v, a, total * 4)) FAIL("write: %s", lithe_last_error());
    free(a);
}

static void t_softmax(void) {
    static const int64_t shapes[][2] = {{1, 1}, {3, 7}, {17, 300}, {2, 1000}, {257, 3}, {40, 33}, {1, 4099}, {3, 20000}};
    char w[128];
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int64_t M = shapes[k][0], N = shapes[k][1];
        pair X = pair_rand(2, shapes[k], -6, 6), S = pair_new(LITHE_F32, 2, shapes[k], NULL),
             dS = pair_rand(2, shapes[k], -1, 1), dX = pair_new(LITHE_F32, 2, shapes[k], NULL);
        for (int tt = 0; tt < 2; tt++) {
            float T = tt ? 0.7f : 1.0f;
            BOTH(lithe__op_softmax(cpu, X.c, T, S.c), lithe__op_softmax(dev, X.v, T, S.v));
            snprintf(w, sizeof w, "%s: softmax %lldx%lld T=%g", variant, (long long)M, (long long)N, T);
            expect_pair(w, S, 1e-6, 1e-5);
            BOTH(lithe__op_softmax_backward(cpu, S.c, dS.c, T, dX.c), lithe__op_softmax_backward(dev, S.v, dS.v, T, dX.v));
            snprintf(w, sizeof w, "%s: softmax_backward %lldx%lld T=%g", variant, (long long)M, (long long)N, T);
            expect_pair(w, dX, 1e-6, 1e-5);
        }
        BOTH(lithe__op_softmax(cpu, X.c, 1.0f, X.c), lithe__op_softmax(dev, X.v, 1.0f, X.v)); /* in place */
        snprintf(w, sizeof w, "%s: softmax in place %lldx%lld", variant, (long long)M, (long long)N);
        expect_pair(w, X, 1e-6, 1e-5);
        pair_free(X), pair_free(S), pair_free(dS), pair_free(dX);
    }
    /* special rows (9 wide): the CPU's answers are NaN rows, or zeros where -inf meets finite values */
    int64_t sh[2] = {7, 9};
    pair X = pair_rand(2, sh, -3, 3), S = pair_new(LITHE_F32, 2, sh, NULL), dS = pair_rand(2, sh, -1, 1),
         dX = pair_new(LITHE_F32, 2, sh, NULL);
    const float nan_mid[] = {1, 2, NAN, 0.5f}, all_ninf[] = {-INFINITY}, pinf[] = {0.25f, INFINITY, -1},
                some_ninf[] = {-INFINITY, 2, -1, -INFINITY}, nan_first[] = {NAN, 3, -2}, big[] = {80, 88, 87.5f};
    pair_set_row(X, 9, 1, nan_mid, 4);
    pair_set_row(X, 9, 2, all_ninf, 1);
    pair_set_row(X, 9, 3, pinf, 3);
    pair_set_row(X, 9, 4, some_ninf, 4);
    pair_set_row(X, 9, 5, nan_first, 3);
    pair_set_row(X, 9, 6, big, 3);
    BOTH(lithe__op_softmax(cpu, X.c, 1.0f, S.c), lithe__op_softmax(dev, X.v, 1.0f, S.v));
    snprintf(w, sizeof w, "%s: softmax of NaN / -inf / +inf rows", variant);
    expect_pair(w, S, 1e-6, 1e-5);
    BOTH(lithe__op_softmax_backward(cpu, S.c, dS.c, 1.0f, dX.c), lithe__op_softmax_backward(dev, S.v, dS.v, 1.0f, dX.v));
    snprintf(w, sizeof w, "%s: softmax_backward of NaN rows", variant);
    expect_pair(w, dX, 1e-6, 1e-5);
    pair_free(X), pair_free(S), pair_free(dS), pair_free(dX);
}

static void t_layernorm(void) {
    static const int64_t mn[][2] = {{1, 1}, {4, 7}, {33, 256}, {5, 257}, {2, 3000}, {300, 12}, {1, 20001}};
    char w[128];
    for (size_t z = 0; z < sizeof mn / sizeof mn[0]; z++) {
        int64_t M = mn[z][0], N = mn[z][1];
        pair X = pair_rand(2, mn[z], -2, 5), G = pair_rand(1, &N, 0.5, 1.5), b = pair_rand(1, &N, -0.5, 0.5),
             Y = pair_new(LITHE_F32, 2, mn[z], NULL), mean = pair_new(LITHE_F32, 1, &M, NULL),
             is = pair_new(LITHE_F32, 1, &M, NULL), dY = pair_rand(2, mn[z], -1, 1),
             dX = pair_new(LITHE_F32, 2, mn[z], NULL), dG = pair_rand(1, &N, -1, 1), db = pair_rand(1, &N, -1, 1);
        BOTH(lithe__op_layernorm(cpu, X.c, G.c, b.c, 1e-8f, Y.c, mean.c, is.c),
             lithe__op_layernorm(dev, X.v, G.v, b.v, 1e-8f, Y.v, mean.v, is.v));
        snprintf(w, sizeof w, "%s: layernorm %lldx%lld", variant, (long long)M, (long long)N);
        expect_pair(w, Y, 1e-5, 1e-4);
        expect_pair(w, mean, 1e-6, 1e-5);
        expect_pair(w, is, 1e-6, 1e-4);
        BOTH(lithe__op_layernorm_backward(cpu, dY.c, X.c, G.c, mean.c, is.c, dX.c, dG.c, db.c),
             lithe__op_layernorm_backward(dev, dY.v, X.v, G.v, mean.v, is.v, dX.v, dG.v, db.v));
        snprintf(w, sizeof w, "%s: layernorm_backward %lldx%lld", variant, (long long)M, (long long)N);
        expect_pair(w, dX, 1e-4, 1e-3);
        expect_pair(w, dG, 1e-4, 1e-4);
        expect_pair(w, db, 1e-5, 1e-5);
        BOTH(lithe__op_layernorm_backward(cpu, dY.c, X.c, G.c, mean.c, is.c, dY.c, dG.c, db.c),
             lithe__op_layernorm_backward(dev, dY.v, X.v, G.v, mean.v, is.v, dY.v, dG.v, db.v)); /* dX aliasing dY */
        snprintf(w, sizeof w, "%s: layernorm dX in place %lldx%lld", variant, (long long)M, (long long)N);
        expect_pair(w, dY, 1e-4, 1e-3);
        pair ps[] = {X, G, b, Y, mean, is, dY, dX, dG, db};
        for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) pair_free(ps[i]);
    }
    /* a NaN row and an infinite one keep NaN (forward; their dX rows too), the others not */
    int64_t sh[2] = {4, 11}, M = 4, N = 11;
    pair X = pair_rand(2, sh, -2, 2), G = pair_rand(1, &N, 0.5, 1.5), b = pair_rand(1, &N, -0.5, 0.5),
         Y = pair_new(LITHE_F32, 2, sh, NULL), mean = pair_new(LITHE_F32, 1, &M, NULL), is = pair_new(LITHE_F32, 1, &M, NULL),
         dY = pair_rand(2, sh, -1, 1), dX = pair_new(LITHE_F32, 2, sh, NULL), dG = pair_new(LITHE_F32, 1, &N, NULL),
         db = pair_new(LITHE_F32, 1, &N, NULL);
    const float nan_row[] = {1, NAN, 2}, inf_row[] = {INFINITY, 1};
    pair_set_row(X, N, 1, nan_row, 3);
    pair_set_row(X, N, 2, inf_row, 2);
    BOTH(lithe__op_layernorm(cpu, X.c, G.c, b.c, 1e-5f, Y.c, mean.c, is.c),
         lithe__op_layernorm(dev, X.v, G.v, b.v, 1e-5f, Y.v, mean.v, is.v));
    snprintf(w, sizeof w, "%s: layernorm of NaN / inf rows", variant);
    expect_pair(w, Y, 1e-5, 1e-4);
    expect_pair(w, mean, 1e-6, 1e-5);
    BOTH(lithe__op_layernorm_backward(cpu, dY.c, X.c, G.c, mean.c, is.c, dX.c, dG.c, db.c),
         lithe__op_layernorm_backward(dev, dY.v, X.v, G.v, mean.v, is.v, dX.v, dG.v, db.v));
    snprintf(w, sizeof w, "%s: layernorm dX of NaN / inf rows", variant);
    expect_pair(w, dX, 1e-4, 1e-3);
    pair ps[] = {X, G, b, Y, mean, is, dY, dX, dG, db};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) pair_free(ps[i]);
}

/* 1x1 convolutions: on CPU adapters the stride-1, unpadded, ungrouped ones whose channels come in
 * 4s are a vec4 GEMM per image (ops_conv.c), 7 x 7-style maps through a row-padded copy; others,
 * and every one with the GPU plan, the direct kernel. Bias per output channel, fused Relu / Clip,
 * a NaN reaching its pixel's outputs. */
static void t_conv1x1(void) {
    /* N, C, H, W, M */
    static const int64_t cases[][5] = {{1, 8, 7, 7, 12}, {2, 16, 12, 12, 8}, {1, 4, 1, 1, 5}, {1, 32, 28, 28, 20},
                                       {3, 12, 5, 3, 7}, {1, 6, 4, 4, 3}, {1, 160, 7, 7, 96}};
    char w[160];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int64_t *k = cases[i];
        lithe__conv2d g = {.N = k[0], .C = k[1], .H = k[2], .W = k[3], .M = k[4], .KH = 1, .KW = 1, .OH = k[2],
                           .OW = k[3], .group = 1, .stride = {1, 1}, .dil = {1, 1}};
        int64_t xs[4] = {g.N, g.C, g.H, g.W}, ws[4] = {g.M, g.C, 1, 1}, ys[4] = {g.N, g.M, g.H, g.W};
        pair X = pair_rand(4, xs, -1, 1), W = pair_rand(4, ws, -1, 1), b = pair_rand(1, &g.M, -1, 1),
             Y = pair_new(LITHE_F32, 4, ys, NULL);
        if (i == 0) { /* channel 3's pixel 0: NaN in every channel's output there */
            size_t n = (size_t)lithe_tensor_numel(X.c);
            float *a = malloc(n * 4);
            if (lithe_tensor_read(X.c, a, n * 4)) FAIL("read: %s", lithe_last_error());
            a[3 * g.H * g.W] = NAN;
            if (lithe_tensor_write(X.c, a, n * 4) || lithe_tensor_write(X.v, a, n * 4)) FAIL("write: %s", lithe_last_error());
            free(a);
        }
        const lithe__act relu = {.kind = LITHE__ACT_RELU},
                         clip = {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.0f, .min_val = 0.0f, .max_val = 6.0f};
        const lithe__act *acts[4] = {NULL, NULL, &relu, &clip};
        for (int v = 0; v < 4; v++) {
            bool bias = v >= 1;
            BOTH(lithe__op_conv2d(cpu, &g, X.c, W.c, bias ? b.c : NULL, acts[v], Y.c),
                 lithe__op_conv2d(dev, &g, X.v, W.v, bias ? b.v : NULL, acts[v], Y.v));
            snprintf(w, sizeof w, "%s: conv2d 1x1 N=%lld C=%lld %lldx%lld M=%lld variant %d", variant, (long long)g.N,
                     (long long)g.C, (long long)g.H, (long long)g.W, (long long)g.M, v);
            expect_pair(w, Y, 1e-6 * (double)(1 + g.C / 8), 1e-5);
        }
        pair_free(X), pair_free(W), pair_free(b), pair_free(Y);
    }
}

/* 1x1 convolutions with the CPU adapter's GEMM route (cpu_gemm 1) or the direct kernel (0). */
EXPORT(wgt_conv1x1) int wgt_conv1x1(int cpu_gemm) {
    if (wgt_begin()) return 1;
    rng_state = CPU_SEED;
    lithe__wg *wg = lithe__wg_of(dev);
    int had = wg->cpu_gemm;
    wg->cpu_gemm = cpu_gemm;
    variant = cpu_gemm ? "1x1 convolution as a vec4 GEMM" : "1x1 convolution direct";
    printf("conv variant: %s\n", variant);
    t_conv1x1();
    wg->cpu_gemm = had;
    return failures;
}

/* The row kernels of both variants: 1, the CPU adapters' (one invocation per row); 0, the
 * workgroup kernels of real GPUs. Returns the failures. */
EXPORT(wgt_rows) int wgt_rows(int cpu_rows) {
    if (wgt_begin()) return 1;
    rng_state = CPU_SEED;
    lithe__wg *wg = lithe__wg_of(dev);
    int had = wg->cpu_rows;
    wg->cpu_rows = cpu_rows;
    variant = cpu_rows ? "one invocation per row (*_cpu.wgsl)" : "a workgroup per row";
    printf("rows variant: %s\n", variant);
    t_softmax();
    t_layernorm();
    wg->cpu_rows = had;
    return failures;
}

/* The shader ids (the harness counts dispatches by id) of softmax_cpu (bits 0..7), layernorm_cpu
 * (8..15), layernorm_dx_cpu (16..23), and whether the adapter selects them (bit 24); gemm_v4's id
 * in bits 25..30. */
EXPORT(wgt_rows_ids) int wgt_rows_ids(void) {
    if (wgt_begin()) return -1;
    rng_state = CPU_SEED;
    return LITHE__WG_SH_softmax_cpu | LITHE__WG_SH_layernorm_cpu << 8 | LITHE__WG_SH_layernorm_dx_cpu << 16 |
           (lithe__wg_of(dev)->cpu_rows ? 1 << 24 : 0) | LITHE__WG_SH_gemm_v4 << 25;
}
