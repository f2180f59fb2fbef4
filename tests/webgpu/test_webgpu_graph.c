/* WebGPU conformance of the imported graphs' primitives (issue 27), built into
 * lithe-webgpu-test.wasm beside test_webgpu.c and run by tests/webgpu/graph.test.mjs in Node on
 * SwiftShader: conv2d, pool2d, bcast_binary, bcast_where, broadcast_to, reduce_to, unary,
 * log_softmax (forward and backward), cast, layernorm, reduce_sum / reduce_max against the CPU
 * backend on the shape classes tests/test_device.c uses (strides, padding, dilation, groups and
 * depthwise, broadcasting patterns, NaN where the CPU propagates it); then whole ONNX graphs
 * (squeezenet1_1, a transformer encoder: tests/webgpu/gen_graphs.py) predicting and taking Adam
 * steps against the same graphs on the CPU. Oracle: the CPU backend (checked against torch by
 * test_onnx / test_kernels). Each exported function returns its number of failures and prints
 * each one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wgt.h"

#define EXPORT(name) __attribute__((used, export_name(#name)))

static uint64_t rng_state = 2027;

/* x[i] = NaN on both sides (the CPU's value elsewhere kept) */
static void pair_poke_nan(pair p, int64_t i) {
    size_t n = (size_t)lithe_tensor_numel(p.c);
    float *a = malloc(n * 4);
    if (lithe_tensor_read(p.c, a, n * 4)) FAIL("read: %s", lithe_last_error());
    a[i] = NAN;
    if (lithe_tensor_write(p.c, a, n * 4) || lithe_tensor_write(p.v, a, n * 4)) FAIL("write: %s", lithe_last_error());
    free(a);
}

/* ---- convolution and pooling ---- */

static void t_conv2d(void) {
    /* N, C, H, W, M, KH, KW, group, stride h w, pad (symmetric) h w, dil h w: strided, dilated,
     * grouped, depthwise, 1x1, outputs past a workgroup (test_device.c's cases, and a depthwise one) */
    static const int64_t cases[][14] = {
        {2, 3, 7, 5, 4, 3, 2, 1, 2, 1, 1, 1, 1, 2},   {1, 4, 17, 16, 6, 3, 3, 2, 1, 1, 1, 1, 1, 1},
        {2, 3, 9, 11, 3, 5, 5, 3, 1, 2, 2, 2, 1, 1},  {3, 2, 20, 19, 5, 1, 1, 1, 1, 1, 0, 0, 1, 1},
        {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1},   {2, 6, 8, 8, 4, 2, 3, 2, 3, 2, 0, 1, 2, 1},
        {2, 8, 12, 12, 16, 1, 1, 1, 1, 1, 0, 0, 1, 1}, {3, 4, 10, 9, 8, 3, 3, 1, 2, 1, 1, 1, 1, 1},
        {2, 4, 12, 12, 8, 3, 3, 2, 1, 1, 1, 1, 1, 1}, {3, 6, 21, 20, 12, 3, 2, 3, 2, 1, 2, 1, 2, 2},
        {2, 8, 9, 9, 8, 3, 3, 8, 2, 2, 1, 1, 1, 1}, /* depthwise, strided */
    };
    char w[160];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int64_t *k = cases[i];
        lithe__conv2d g = {.N = k[0], .C = k[1], .H = k[2], .W = k[3], .M = k[4], .KH = k[5], .KW = k[6],
                           .group = k[7], .stride = {k[8], k[9]}, .pad = {k[10], k[11], k[10], k[11]},
                           .dil = {k[12], k[13]}};
        g.OH = (g.H + 2 * g.pad[0] - g.dil[0] * (g.KH - 1) - 1) / g.stride[0] + 1;
        g.OW = (g.W + 2 * g.pad[1] - g.dil[1] * (g.KW - 1) - 1) / g.stride[1] + 1;
        int64_t xs[4] = {g.N, g.C, g.H, g.W}, ws[4] = {g.M, g.C / g.group, g.KH, g.KW}, ys[4] = {g.N, g.M, g.OH, g.OW};
        pair X = pair_rand(4, xs, -1, 1), W = pair_rand(4, ws, -1, 1), b = pair_rand(1, &g.M, -1, 1),
             Y = pair_new(LITHE_F32, 4, ys, NULL), dY = pair_rand(4, ys, -1, 1), dX = pair_rand(4, xs, -1, 1),
             dW = pair_rand(4, ws, -1, 1), db = pair_rand(1, &g.M, -1, 1);
        if (i == 1) pair_poke_nan(X, 5); /* NaN reaches the outputs whose windows hold it */
        const lithe__act relu = {.kind = LITHE__ACT_RELU},
                         clip = {.kind = LITHE__ACT_CLIPPED_LINEAR, .slope = 1.0f, .min_val = -0.5f, .max_val = 0.75f};
        const lithe__act *acts[4] = {NULL, NULL, &relu, &clip};
        for (int v = 0; v < 4; v++) {
            bool bias = v == 1 || v == 2;
            BOTH(lithe__op_conv2d(cpu, &g, X.c, W.c, bias ? b.c : NULL, acts[v], Y.c),
                 lithe__op_conv2d(dev, &g, X.v, W.v, bias ? b.v : NULL, acts[v], Y.v));
            snprintf(w, sizeof w, "conv2d case %zu variant %d", i, v);
            expect_pair(w, Y, 2e-6, 1e-6);
        }
        double tol_dx = 1e-7 * (double)(g.M / g.group * g.KH * g.KW) + 2e-6,
               tol_dw = 1e-7 * (double)(2 * g.N * g.OH * g.OW) + 2e-6;
        if (i == 1) { /* the NaN's gradients: dW everywhere its taps reach, no longer comparable to dX's others */
            pair_free(X);
            X = pair_rand(4, xs, -1, 1);
        }
        BOTH(lithe__op_conv2d_backward(cpu, &g, X.c, W.c, dY.c, dX.c, dW.c, db.c),
             lithe__op_conv2d_backward(dev, &g, X.v, W.v, dY.v, dX.v, dW.v, db.v));
        snprintf(w, sizeof w, "conv2d_backward dX case %zu", i);
        expect_pair(w, dX, tol_dx, 1e-6);
        snprintf(w, sizeof w, "conv2d_backward dW case %zu", i);
        expect_pair(w, dW, tol_dw, 1e-6);
        snprintf(w, sizeof w, "conv2d_backward db case %zu", i);
        expect_pair(w, db, tol_dw, 1e-6);
        BOTH(lithe__op_conv2d_backward(cpu, &g, X.c, W.c, dY.c, NULL, dW.c, NULL),
             lithe__op_conv2d_backward(dev, &g, X.v, W.v, dY.v, NULL, dW.v, NULL));
        snprintf(w, sizeof w, "conv2d_backward dW only case %zu", i);
        expect_pair(w, dW, tol_dw, 1e-6);
        pair_free(X), pair_free(W), pair_free(b), pair_free(Y), pair_free(dY), pair_free(dX), pair_free(dW),
            pair_free(db);
    }
}

static void t_pool2d(void) {
    /* N, C, H, W, KH, KW, stride h w, pad h w, dil h w, count_include_pad: overlapping, padded
     * (windows of only padding too), dilated, outputs past a workgroup */
    static const int64_t cases[][13] = {
        {2, 3, 7, 5, 3, 2, 2, 1, 1, 1, 1, 2, 0}, {1, 4, 17, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1},
        {2, 3, 9, 11, 2, 2, 2, 2, 0, 0, 1, 1, 0}, {3, 2, 20, 19, 5, 5, 1, 1, 2, 2, 1, 1, 0},
        {1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1},  {1, 2, 3, 3, 3, 3, 4, 4, 2, 2, 1, 1, 0},
        {2, 5, 15, 15, 3, 3, 2, 2, 0, 0, 1, 1, 0}, /* squeezenet's 3x3 stride 2 */
    };
    char w[128];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int64_t *k = cases[i];
        for (int max = 0; max < 2; max++) {
            lithe__pool2d g = {.N = k[0], .C = k[1], .H = k[2], .W = k[3], .KH = k[4], .KW = k[5],
                               .stride = {k[6], k[7]}, .pad = {k[8], k[9], k[8], k[9]}, .dil = {k[10], k[11]},
                               .max = max, .count_include_pad = k[12]};
            g.OH = (g.H + 2 * g.pad[0] - g.dil[0] * (g.KH - 1) - 1) / g.stride[0] + 1;
            g.OW = (g.W + 2 * g.pad[1] - g.dil[1] * (g.KW - 1) - 1) / g.stride[1] + 1;
            int64_t ys[4] = {g.N, g.C, g.OH, g.OW}, xs[4] = {g.N, g.C, g.H, g.W};
            pair X = pair_rand(4, xs, -1, 1), Y = pair_new(LITHE_F32, 4, ys, NULL), Wh = pair_new(LITHE_I32, 4, ys, NULL),
                 dY = pair_rand(4, ys, -1, 1), dX = pair_rand(4, xs, -1, 1);
            if (i == 0 || i == 3) pair_poke_nan(X, 2); /* a NaN first in its windows stays their maximum */
            BOTH(lithe__op_pool2d(cpu, &g, X.c, Y.c, max ? Wh.c : NULL), lithe__op_pool2d(dev, &g, X.v, Y.v, max ? Wh.v : NULL));
            snprintf(w, sizeof w, "%s case %zu", max ? "maxpool2d" : "avgpool2d", i);
            if (max) {
                expect_pair(w, Y, 0, 0);
                expect_pair("maxpool2d which", Wh, 0, 0);
                OK(lithe__op_fill(dev, Y.v, 7.0f));
                OK(lithe__op_pool2d(dev, &g, X.v, Y.v, NULL));
                expect_pair("maxpool2d without which", Y, 0, 0);
            } else {
                expect_pair(w, Y, 1e-7, 1e-6);
            }
            BOTH(lithe__op_pool2d_backward(cpu, &g, dY.c, max ? Wh.c : NULL, dX.c),
                 lithe__op_pool2d_backward(dev, &g, dY.v, max ? Wh.v : NULL, dX.v));
            snprintf(w, sizeof w, "%s_backward case %zu", max ? "maxpool2d" : "avgpool2d", i);
            expect_pair(w, dX, max ? 0 : 1e-7, max ? 0 : 1e-6);
            pair_free(X), pair_free(Y), pair_free(Wh), pair_free(dY), pair_free(dX);
        }
    }
}

/* ---- unary maths, log-softmax ---- */

static void t_unary_log_softmax(void) {
    static const char *names[] = {"exp", "log", "sqrt", "neg", "erf", "abs", "reciprocal", "floor", "ceil", "round", "sin", "cos"};
    static const int64_t sizes[] = {1, 3, 255, 256, 257, 1000, 4099};
    char w[96];
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        int64_t n = sizes[i];
        for (int op = 0; op < LITHE__UN_COUNT; op++) {
            bool positive = op == LITHE__UN_LOG || op == LITHE__UN_SQRT || op == LITHE__UN_RECIPROCAL;
            pair X = pair_rand(1, &n, positive ? 0.1 : -3, 3), Y = pair_new(LITHE_F32, 1, &n, NULL),
                 dY = pair_rand(1, &n, -1, 1), dX = pair_rand(1, &n, -1, 1);
            if (n > 3) pair_poke_nan(X, 2);
            if (op == LITHE__UN_ROUND && n > 3) { /* ties go to even */
                float t[3] = {0.5f, 1.5f, -2.5f};
                for (int j = 0; j < 3; j++) {
                    size_t m = (size_t)n;
                    float *a = malloc(m * 4);
                    if (!lithe_tensor_read(X.c, a, m * 4)) a[j] = t[j];
                    if (lithe_tensor_write(X.c, a, m * 4) || lithe_tensor_write(X.v, a, m * 4)) FAIL("write");
                    free(a);
                }
            }
            BOTH(lithe__op_unary(cpu, op, X.c, Y.c), lithe__op_unary(dev, op, X.v, Y.v));
            snprintf(w, sizeof w, "unary %s n=%lld", names[op], (long long)n);
            expect_pair(w, Y, 1e-6, 1e-5);
            sync_pair(Y);
            BOTH(lithe__op_unary_backward(cpu, op, X.c, Y.c, dY.c, dX.c), lithe__op_unary_backward(dev, op, X.v, Y.v, dY.v, dX.v));
            snprintf(w, sizeof w, "unary_backward %s n=%lld", names[op], (long long)n);
            expect_pair(w, dX, 1e-6, 1e-5);
            BOTH(lithe__op_unary(cpu, op, X.c, X.c), lithe__op_unary(dev, op, X.v, X.v)); /* in place */
            snprintf(w, sizeof w, "unary %s in place n=%lld", names[op], (long long)n);
            expect_pair(w, X, 1e-6, 1e-5);
            pair_free(X), pair_free(Y), pair_free(dY), pair_free(dX);
        }
    }
    static const int64_t shapes[][2] = {{1, 1}, {3, 7}, {5, 257}, {300, 4}, {2, 1000}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        pair X = pair_rand(2, shapes[i], -5, 5), Y = pair_new(LITHE_F32, 2, shapes[i], NULL),
             dY = pair_rand(2, shapes[i], -1, 1), dX = pair_rand(2, shapes[i], -1, 1);
        if (i == 3) pair_poke_nan(X, 5); /* its row NaN, the others untouched */
        BOTH(lithe__op_log_softmax(cpu, X.c, Y.c), lithe__op_log_softmax(dev, X.v, Y.v));
        snprintf(w, sizeof w, "log_softmax %lldx%lld", (long long)shapes[i][0], (long long)shapes[i][1]);
        expect_pair(w, Y, 1e-5, 1e-5); /* the CPU sums in double */
        sync_pair(Y);
        BOTH(lithe__op_log_softmax_backward(cpu, Y.c, dY.c, dX.c), lithe__op_log_softmax_backward(dev, Y.v, dY.v, dX.v));
        snprintf(w, sizeof w, "log_softmax_backward %lldx%lld", (long long)shapes[i][0], (long long)shapes[i][1]);
        expect_pair(w, dX, 1e-5, 1e-5);
        BOTH(lithe__op_log_softmax(cpu, X.c, X.c), lithe__op_log_softmax(dev, X.v, X.v)); /* in place */
        expect_pair("log_softmax in place", X, 1e-5, 1e-5);
        pair_free(X), pair_free(Y), pair_free(dY), pair_free(dX);
    }
}

/* ---- broadcasting ---- */

static void t_broadcasting(void) {
    /* A, B shapes (ndim, extents); Y is their numpy broadcast: trailing alignment, missing and
     * unit axes, an output past a workgroup, scalars, and alternating patterns past 4 merged axes */
    static const int64_t cases[][2][7] = {
        {{2, 4, 7}, {1, 7}},         {{3, 3, 1, 5}, {3, 1, 4, 1}}, {{1, 257}, {1, 1}},
        {{4, 2, 3, 4, 5}, {3, 3, 1, 5}}, {{1, 1}, {1, 1}},        {{2, 300, 1}, {2, 1, 9}},
        {{6, 2, 1, 3, 1, 5, 1}, {6, 1, 4, 1, 2, 1, 3}}, {{3, 1, 8, 16}, {3, 4, 1, 16}},
    };
    static const char *names[] = {"add", "sub", "mul", "div", "pow", "less", "greater", "equal"};
    char w[128];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int na = (int)cases[i][0][0], nbd = (int)cases[i][1][0], ny = na > nbd ? na : nbd;
        int64_t ys[8];
        for (int d = 0; d < ny; d++) {
            int ka = d - (ny - na), kb = d - (ny - nbd);
            int64_t ea = ka >= 0 ? cases[i][0][1 + ka] : 1, eb = kb >= 0 ? cases[i][1][1 + kb] : 1;
            ys[d] = ea > eb ? ea : eb;
        }
        for (int op = 0; op < LITHE__BIN_COUNT; op++) {
            bool pw = op == LITHE__BIN_POW, exact = op != LITHE__BIN_POW && op != LITHE__BIN_DIV;
            pair A = pair_rand(na, cases[i][0] + 1, pw ? 0.1 : -2, 2), B = pair_rand(nbd, cases[i][1] + 1, -2, 2),
                 Y = pair_new(LITHE_F32, ny, ys, NULL), dY = pair_rand(ny, ys, -1, 1),
                 dA = pair_rand(na, cases[i][0] + 1, -1, 1), dB = pair_rand(nbd, cases[i][1] + 1, -1, 1);
            if (i == 0 && op <= LITHE__BIN_MUL) pair_poke_nan(B, 3); /* a NaN spreads along its broadcast */
            BOTH(lithe__op_bcast_binary(cpu, op, A.c, B.c, Y.c), lithe__op_bcast_binary(dev, op, A.v, B.v, Y.v));
            snprintf(w, sizeof w, "bcast %s case %zu", names[op], i);
            expect_pair(w, Y, exact ? 0 : 1e-6, exact ? 0 : 1e-5);
            sync_pair(Y);
            BOTH(lithe__op_bcast_binary_backward(cpu, op, A.c, B.c, Y.c, dY.c, dA.c, dB.c),
                 lithe__op_bcast_binary_backward(dev, op, A.v, B.v, Y.v, dY.v, dA.v, dB.v));
            snprintf(w, sizeof w, "bcast_backward %s dA case %zu", names[op], i);
            expect_pair(w, dA, exact ? 1e-6 : 1e-4, exact ? 1e-6 : 1e-4);
            snprintf(w, sizeof w, "bcast_backward %s dB case %zu", names[op], i);
            expect_pair(w, dB, exact ? 1e-6 : 1e-4, exact ? 1e-6 : 1e-4);
            BOTH(lithe__op_bcast_binary_backward(cpu, op, A.c, B.c, Y.c, dY.c, NULL, dB.c),
                 lithe__op_bcast_binary_backward(dev, op, A.v, B.v, Y.v, dY.v, NULL, dB.v));
            snprintf(w, sizeof w, "bcast_backward %s dB only case %zu", names[op], i);
            expect_pair(w, dB, exact ? 1e-6 : 1e-4, exact ? 1e-6 : 1e-4);
            if (op == LITHE__BIN_LESS) { /* Where with the comparison's mask; an inf on the side not taken */
                pair_poke_nan(A, 0);
                pair W = pair_new(LITHE_F32, ny, ys, NULL);
                BOTH(lithe__op_bcast_where(cpu, Y.c, A.c, B.c, W.c), lithe__op_bcast_where(dev, Y.v, A.v, B.v, W.v));
                snprintf(w, sizeof w, "where case %zu", i);
                expect_pair(w, W, 0, 0);
                pair_free(W);
            }
            pair_free(A), pair_free(B), pair_free(Y), pair_free(dY), pair_free(dA), pair_free(dB);
        }
        for (int beta = 0; beta < 2; beta++) { /* broadcast_to and its adjoint reduce_to */
            pair X = pair_rand(na, cases[i][0] + 1, -1, 1), Y = pair_rand(ny, ys, -1, 1);
            BOTH(lithe__op_broadcast_to(cpu, X.c, 0.5f, (float)beta * 2.0f, Y.c),
                 lithe__op_broadcast_to(dev, X.v, 0.5f, (float)beta * 2.0f, Y.v));
            snprintf(w, sizeof w, "broadcast_to case %zu beta %d", i, beta);
            expect_pair(w, Y, 0, 0);
            BOTH(lithe__op_reduce_to(cpu, Y.c, 1.5f, (float)beta * 0.25f, X.c),
                 lithe__op_reduce_to(dev, Y.v, 1.5f, (float)beta * 0.25f, X.v));
            snprintf(w, sizeof w, "reduce_to case %zu beta %d", i, beta);
            expect_pair(w, X, 1e-6, 1e-6);
            pair_free(X), pair_free(Y);
        }
    }
}

/* ---- cast, layernorm, Ragged reductions ---- */

static void t_cast(void) {
    /* specials and rounding cases for every target: ties, subnormals, overflow, NaN, huge */
    float special[] = {0.0f, -0.0f, 1.0f, -1.5f, 65504.0f, 65520.0f, 1e-8f, 5.96e-8f, 2.98e-8f, 6.1e-5f,
                       1.00048828125f, 1.0009765625f, 3.3895314e38f, INFINITY, -INFINITY, NAN, 255.5f, 256.0f, -3.7f,
                       2147483648.0f, -2147483904.0f, 9.3e18f, -9.3e18f, 1.2e10f, -7.5e12f, 123456789.0f};
    enum { NS = sizeof special / sizeof special[0], N = NS + 301 };
    static float x[N];
    for (int i = 0; i < N; i++) x[i] = i < NS ? special[i] : (float)((uni() - 0.5) * pow(2.0, (uni() - 0.5) * 80));
    static const lithe_dtype to[] = {LITHE_F16, LITHE_BF16, LITHE_I32, LITHE_I64, LITHE_U8};
    char w[64];
    for (size_t d = 0; d < sizeof to / sizeof to[0]; d++) {
        int64_t n = N;
        pair X = pair_new(LITHE_F32, 1, &n, x), Y = pair_new(to[d], 1, &n, NULL), B = pair_new(LITHE_F32, 1, &n, NULL);
        BOTH(lithe__op_cast(cpu, Y.c, X.c), lithe__op_cast(dev, Y.v, X.v));
        snprintf(w, sizeof w, "cast float32 -> %s", lithe_dtype_name(to[d]));
        expect_pair(w, Y, 0, 0);
        sync_pair(Y);
        BOTH(lithe__op_cast(cpu, B.c, Y.c), lithe__op_cast(dev, B.v, Y.v));
        snprintf(w, sizeof w, "cast %s -> float32", lithe_dtype_name(to[d]));
        expect_pair(w, B, 0, 0);
        /* a view starting mid-word: elements 3.. of the narrow tensor */
        lithe_tensor *yc = NULL, *yv = NULL, *xc = NULL, *xv = NULL;
        OK(lithe_tensor_slice(Y.c, 0, 3, n, &yc));
        OK(lithe_tensor_slice(Y.v, 0, 3, n, &yv));
        OK(lithe_tensor_slice(X.c, 0, 0, n - 3, &xc));
        OK(lithe_tensor_slice(X.v, 0, 0, n - 3, &xv));
        BOTH(lithe__op_cast(cpu, yc, xc), lithe__op_cast(dev, yv, xv));
        snprintf(w, sizeof w, "cast float32 -> %s into a view", lithe_dtype_name(to[d]));
        expect_pair(w, Y, 0, 0);
        lithe_tensor_release(yc), lithe_tensor_release(yv), lithe_tensor_release(xc), lithe_tensor_release(xv);
        pair_free(X), pair_free(Y), pair_free(B);
    }
}

static void t_layernorm(void) {
    static const int64_t mn[][2] = {{1, 1}, {4, 7}, {33, 256}, {5, 257}, {2, 3000}, {300, 12}};
    for (size_t z = 0; z < sizeof mn / sizeof mn[0]; z++) {
        int64_t M = mn[z][0], N = mn[z][1];
        pair X = pair_rand(2, mn[z], -2, 5), G = pair_rand(1, &N, 0.5, 1.5), b = pair_rand(1, &N, -0.5, 0.5),
             Y = pair_new(LITHE_F32, 2, mn[z], NULL), mean = pair_new(LITHE_F32, 1, &M, NULL),
             is = pair_new(LITHE_F32, 1, &M, NULL), dY = pair_rand(2, mn[z], -1, 1),
             dX = pair_new(LITHE_F32, 2, mn[z], NULL), dG = pair_rand(1, &N, -1, 1), db = pair_rand(1, &N, -1, 1);
        if (z == 5) pair_poke_nan(X, 13); /* row 1 NaN, the others not */
        BOTH(lithe__op_layernorm(cpu, X.c, G.c, b.c, 1e-8f, Y.c, mean.c, is.c),
             lithe__op_layernorm(dev, X.v, G.v, b.v, 1e-8f, Y.v, mean.v, is.v));
        expect_pair("layernorm Y", Y, 1e-5, 1e-4);
        expect_pair("layernorm mean", mean, 1e-6, 1e-5);
        expect_pair("layernorm inv_std", is, 1e-6, 1e-4);
        if (z == 5) { /* NaN sums in dG / db: forward only */
            pair ps[] = {X, G, b, Y, mean, is, dY, dX, dG, db};
            for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) pair_free(ps[i]);
            break;
        }
        BOTH(lithe__op_layernorm_backward(cpu, dY.c, X.c, G.c, mean.c, is.c, dX.c, dG.c, db.c),
             lithe__op_layernorm_backward(dev, dY.v, X.v, G.v, mean.v, is.v, dX.v, dG.v, db.v));
        expect_pair("layernorm dX", dX, 1e-4, 1e-3);
        expect_pair("layernorm dG (accumulated)", dG, 1e-4, 1e-4);
        expect_pair("layernorm db (accumulated)", db, 1e-5, 1e-5);
        BOTH(lithe__op_layernorm_backward(cpu, dY.c, X.c, G.c, mean.c, is.c, dY.c, dG.c, db.c),
             lithe__op_layernorm_backward(dev, dY.v, X.v, G.v, mean.v, is.v, dY.v, dG.v, db.v)); /* dX aliasing dY */
        expect_pair("layernorm dX in place", dY, 1e-4, 1e-3);
        pair ps[] = {X, G, b, Y, mean, is, dY, dX, dG, db};
        for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) pair_free(ps[i]);
    }
}

static void t_reductions(void) {
    static const int32_t lens_a[] = {3, 0, 1, 7, 2, 0, 5}, lens_b[] = {1, 4, 300, 2};
    const int32_t *lens[] = {lens_a, lens_b};
    const int64_t nb[] = {7, 4};
    for (int c = 0; c < 2; c++) {
        int64_t B = nb[c], N = 0, O = c ? 33 : 5;
        for (int64_t b = 0; b < B; b++) N += lens[c][b];
        lithe_tensor *L = NULL;
        OK(lithe_tensor_from_data(LITHE_I32, 1, &B, lens[c], &L));
        int64_t xs[2] = {N, O}, ys[2] = {B, O};
        pair X = pair_rand(2, xs, -2, 2), Y = pair_new(LITHE_F32, 2, ys, NULL), dY = pair_rand(2, ys, -1, 1),
             dX = pair_rand(2, xs, -1, 1), W = pair_new(LITHE_I32, 2, ys, NULL);
        for (int mean = 0; mean < 2; mean++) {
            BOTH(lithe__op_reduce_sum(cpu, X.c, L, mean, Y.c), lithe__op_reduce_sum(dev, X.v, L, mean, Y.v));
            expect_pair(mean ? "reduce_mean" : "reduce_sum", Y, 0, 0);
            BOTH(lithe__op_reduce_sum_backward(cpu, dY.c, L, mean, dX.c), lithe__op_reduce_sum_backward(dev, dY.v, L, mean, dX.v));
            expect_pair(mean ? "reduce_mean backward" : "reduce_sum backward", dX, 0, 0);
        }
        if (c == 1) { /* every length >= 1 */
            pair_poke_nan(X, 3 * O + 2);
            BOTH(lithe__op_reduce_max(cpu, X.c, L, Y.c, W.c), lithe__op_reduce_max(dev, X.v, L, Y.v, W.v));
            expect_pair("reduce_max", Y, 0, 0);
            expect_pair("reduce_max which", W, 0, 0);
            BOTH(lithe__op_reduce_max_backward(cpu, dY.c, W.c, L, dX.c), lithe__op_reduce_max_backward(dev, dY.v, W.v, L, dX.v));
            expect_pair("reduce_max backward", dX, 0, 0);
        }
        lithe_tensor_release(L);
        pair_free(X), pair_free(Y), pair_free(dY), pair_free(dX), pair_free(W);
    }
}

EXPORT(wgt_graph_primitives) int wgt_graph_primitives(void) {
    if (wgt_begin()) return 1;
    t_conv2d();
    t_pool2d();
    t_unary_log_softmax();
    t_broadcasting();
    t_cast();
    t_layernorm();
    t_reductions();
    return failures;
}

/* ---- whole ONNX graphs: the same graph on the CPU and on WebGPU ---- */

static lithe_model *gm[2];           /* [0] CPU, [1] WebGPU */
static lithe_value *gx[2], *gr[2];   /* the input, the fixed output gradient (a linear loss) */
static lithe_optimizer *go[2];

static lithe_value *value_of(lithe_backend *be, int ndim, const int64_t *shape, const float *data) {
    lithe_tensor *t = NULL;
    lithe_value *v = NULL;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    if (lithe_tensor_new(be, LITHE_F32, ndim, shape, &t) || lithe_tensor_write(t, data, (size_t)n * 4) ||
        lithe_value_tensor(t, &v))
        FAIL("value_of: %s", lithe_last_error());
    lithe_tensor_release(t);
    return v;
}

static void expect_values(const char *what, const lithe_value *a, const lithe_value *b, double atol, double rtol) {
    pair p = {lithe_value_get_tensor(a), lithe_value_get_tensor(b)};
    if (!p.c || !p.v) {
        FAIL("%s: not a tensor", what);
        return;
    }
    expect_pair(what, p, atol, rtol);
}

EXPORT(wgt_graph_free) void wgt_graph_free(void) {
    for (int s = 0; s < 2; s++) {
        lithe_model_free(gm[s]);
        lithe_value_release(gx[s]);
        lithe_value_release(gr[s]);
        lithe_optimizer_free(go[s]);
        gm[s] = NULL, gx[s] = gr[s] = NULL, go[s] = NULL;
    }
}

/* Loads the ONNX bytes twice (one copy moved to WebGPU), an input of `shape` (int32 extents)
 * uniform in [-1, 1] and, from the CPU's first prediction, a fixed output gradient; Adam at
 * learn rate lr on both. Returns the failures. */
EXPORT(wgt_graph_load) int wgt_graph_load(const uint8_t *onnx, uint32_t len, int ndim, const int32_t *shape32, float lr) {
    if (wgt_begin()) return 1;
    wgt_graph_free();
    int64_t shape[8], n = 1;
    for (int i = 0; i < ndim && i < 8; i++) n *= shape[i] = shape32[i];
    float *x = malloc((size_t)n * 4);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(uni() * 2 - 1);
    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.learn_rate = lr;
    /* Adam divides by sqrt(m2) + eps: a gradient that is zero but for rounding (the attention's key
     * bias: softmax ignores a shift of every score) would take full steps of rounding noise, which
     * differs between any two orders of summation; eps 1e-6 keeps such steps below 1e-3 lr while
     * gradients above ~1e-5 step as with Thinc's 1e-8. */
    oo.eps = 1e-6;
    for (int s = 0; s < 2 && !failures; s++) {
        lithe_backend *be = s ? dev : cpu;
        if (lithe_onnx_load_bytes(onnx, len, &gm[s]) || (s && lithe_model_set_backend(gm[s], dev)) ||
            lithe_optimizer_new(&oo, &go[s]))
            FAIL("graph load: %s", lithe_last_error());
        else
            gx[s] = value_of(be, ndim, shape, x);
    }
    free(x);
    lithe_value *Y = NULL;
    if (!failures && lithe_model_predict(gm[0], gx[0], &Y)) FAIL("cpu predict: %s", lithe_last_error());
    if (!failures) {
        const lithe_tensor *t = lithe_value_get_tensor(Y);
        int64_t m = lithe_tensor_numel(t);
        float *r = malloc((size_t)m * 4);
        for (int64_t i = 0; i < m; i++) r[i] = (float)(uni() * 2 - 1);
        for (int s = 0; s < 2; s++) gr[s] = value_of(s ? dev : cpu, lithe_tensor_ndim(t), lithe_tensor_shape(t), r);
        free(r);
    }
    lithe_value_release(Y);
    return failures;
}

/* Both sides predict; the outputs compared. */
EXPORT(wgt_graph_predict) int wgt_graph_predict(float atol, float rtol) {
    failures = 0;
    lithe_value *Y[2] = {NULL, NULL};
    for (int s = 0; s < 2; s++)
        if (lithe_model_predict(gm[s], gx[s], &Y[s])) FAIL("%s predict: %s", s ? "webgpu" : "cpu", lithe_last_error());
    if (!failures) {
        if (lithe_tensor_backend(lithe_value_get_tensor(Y[1])) != dev) FAIL("the prediction is not on webgpu");
        expect_values("graph predictions", Y[0], Y[1], atol, rtol);
    }
    lithe_value_release(Y[0]);
    lithe_value_release(Y[1]);
    return failures;
}

/* One training step of side s: forward, the fixed output gradient backward, Adam. */
static lithe_status graph_step(int s) {
    lithe_value *Y = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    lithe_status st = lithe_model_begin_update(gm[s], gx[s], &Y, &bp);
    if (st == LITHE_OK) st = lithe_backprop_run(bp, gr[s], &dX);
    if (st == LITHE_OK) st = lithe_model_finish_update(gm[s], go[s]);
    lithe_backprop_free(bp);
    lithe_value_release(Y);
    lithe_value_release(dX);
    return st;
}

/* `steps` Adam steps on both sides (sides = 3) or on WebGPU only (sides = 2: the timed steps). */
EXPORT(wgt_graph_steps) int wgt_graph_steps(int steps, int sides) {
    failures = 0;
    for (int k = 0; k < steps && !failures; k++)
        for (int s = 0; s < 2; s++) {
            if (!(sides >> s & 1)) continue;
            lithe_status st = graph_step(s);
            if (st != LITHE_OK) FAIL("%s step %d: %s: %s", s ? "webgpu" : "cpu", k, lithe_status_str(st), lithe_last_error());
        }
    return failures;
}

/* Every param of both trees compared (after steps on both sides); the count compared into *n. */
EXPORT(wgt_graph_params) int wgt_graph_params(float atol, float rtol, int *n) {
    failures = 0;
    *n = 0;
    lithe_model *nc[64], *nv[64];
    size_t n1 = 0, n2 = 0;
    if (lithe_model_walk(gm[0], nc, 64, &n1) || lithe_model_walk(gm[1], nv, 64, &n2) || n1 != n2) {
        FAIL("walk: %s", lithe_last_error());
        return failures;
    }
    for (size_t i = 0; i < n1 && i < 64; i++)
        for (size_t p = 0; p < lithe_model_n_params(nc[i]); p++) {
            const char *pn = lithe_model_param_name(nc[i], p);
            pair t = {NULL, NULL};
            if (lithe_model_get_param(nc[i], pn, &t.c) != LITHE_OK) continue;
            if (lithe_model_get_param(nv[i], pn, &t.v) != LITHE_OK) {
                FAIL("param %s: %s", pn, lithe_last_error());
                continue;
            }
            if (lithe_tensor_backend(t.v) != dev) FAIL("param %s is not on webgpu", pn);
            char what[160];
            snprintf(what, sizeof what, "graph param %s", pn);
            expect_pair(what, t, atol, rtol);
            (*n)++;
        }
    return failures;
}

/* Waits for the device's queued work (a fill, then its read-back: the queue's order), so a
 * timed run includes the GPU's time. */
EXPORT(wgt_graph_sync) int wgt_graph_sync(void) {
    failures = 0;
    lithe_tensor *t = NULL;
    float v = 0.0f;
    int64_t one = 1;
    if (lithe_tensor_new(dev, LITHE_F32, 1, &one, &t) || lithe__op_fill(dev, t, 1.0f) || lithe_tensor_read(t, &v, 4) ||
        v != 1.0f)
        FAIL("sync: %s", lithe_last_error());
    lithe_tensor_release(t);
    return failures;
}
