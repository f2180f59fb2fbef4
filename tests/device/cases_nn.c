/* Device conformance (cases.h), network primitives: the LSTM scan, ParametricAttention,
 * CauchySimilarity, and the imported graphs' conv2d and pool2d, forward and backward. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

void dc_lstm(void) {
    /* LSTM: odd H and 4H·H around a workgroup (H = 17: 1156 items), steps non-increasing, a
     * step larger than a workgroup (size 300 at H = 1) */
    static const int32_t steps_a[] = {4, 4, 3, 1, 1}, steps_b[] = {300, 299, 7}, steps_c[] = {2};
    const int32_t *steps[] = {steps_a, steps_b, steps_c};
    const int64_t nT[] = {5, 3, 1}, nH[] = {5, 1, 17};
    for (int c = 0; c < 3; c++) {
        int64_t T = nT[c], H = nH[c], N = 0;
        for (int64_t t = 0; t < T; t++) N += steps[c][t];
        lithe_tensor *S = NULL;
        OK(lithe_tensor_from_data(LITHE_I32, 1, &T, steps[c], &S));
        pair Wh = pair_rand(2, (int64_t[]){4 * H, H}, -0.5, 0.5), bx = pair_rand(1, (int64_t[]){4 * H}, -0.5, 0.5),
             bh = pair_rand(1, (int64_t[]){4 * H}, -0.5, 0.5), h0 = pair_rand(1, &H, -1, 1), c0 = pair_rand(1, &H, -1, 1);
        for (int rev = 0; rev < 2; rev++) {
            pair G = pair_rand(2, (int64_t[]){N, 4 * H}, -2, 2), C = pair_new(LITHE_F32, 2, (int64_t[]){N, H}, NULL),
                 Y = pair_new(LITHE_F32, 2, (int64_t[]){N, H}, NULL), dY = pair_rand(2, (int64_t[]){N, H}, -1, 1),
                 dC = pair_rand(2, (int64_t[]){N, H}, -1, 1), dG = pair_new(LITHE_F32, 2, (int64_t[]){N, 4 * H}, NULL),
                 dWh = pair_rand(2, (int64_t[]){4 * H, H}, -1, 1);
            OK(lithe__op_lstm_scan(cpu, Wh.c, bx.c, bh.c, h0.c, c0.c, S, rev, G.c, C.c, Y.c));
            OK(lithe__op_lstm_scan(dev, Wh.v, bx.v, bh.v, h0.v, c0.v, S, rev, G.v, C.v, Y.v));
            /* exp / tanh differ from libm in the last bits; the sums are in the CPU's order */
            expect_pair("lstm_scan G", G, 1e-5, 1e-4);
            expect_pair("lstm_scan C", C, 1e-5, 1e-4);
            expect_pair("lstm_scan Y", Y, 1e-5, 1e-4);
            max_diff("lstm_scan Y", Y);
            /* the backward from the CPU's forward on both sides, so only the backward is compared */
            sync_pair(G);
            sync_pair(C);
            sync_pair(Y);
            OK(lithe__op_lstm_scan_backward(cpu, Wh.c, h0.c, c0.c, S, rev, G.c, C.c, Y.c, dY.c, dC.c, dG.c, dWh.c));
            OK(lithe__op_lstm_scan_backward(dev, Wh.v, h0.v, c0.v, S, rev, G.v, C.v, Y.v, dY.v, dC.v, dG.v, dWh.v));
            expect_pair("lstm_scan_backward dG", dG, 1e-5, 1e-4);
            expect_pair("lstm_scan_backward dY", dY, 1e-5, 1e-4);
            expect_pair("lstm_scan_backward dWh", dWh, 1e-5, 1e-4);
            max_diff("lstm_scan_backward dG", dG);
            max_diff("lstm_scan_backward dWh", dWh);
            pair_free(G), pair_free(C), pair_free(Y), pair_free(dY), pair_free(dC), pair_free(dG), pair_free(dWh);
        }
        pair_free(Wh), pair_free(bx), pair_free(bh), pair_free(h0), pair_free(c0);
        lithe_tensor_release(S);
    }
}

void dc_para_attention(void) {
    /* ParametricAttention over sequences with empty ones, a sequence past a workgroup */
    static const int32_t lens_a[] = {3, 0, 1, 7, 2, 0, 5}, lens_b[] = {1, 4, 300, 2};
    const int32_t *lens[] = {lens_a, lens_b};
    const int64_t nb[] = {7, 4};
    for (int c = 0; c < 2; c++) {
        int64_t B = nb[c], N = 0, O = c ? 257 : 5;
        for (int64_t b = 0; b < B; b++) N += lens[c][b];
        lithe_tensor *L = NULL;
        OK(lithe_tensor_from_data(LITHE_I32, 1, &B, lens[c], &L));
        pair X = pair_rand(2, (int64_t[]){N, O}, -1, 1), Q = pair_rand(1, &O, -0.5, 0.5),
             A = pair_new(LITHE_F32, 1, &N, NULL), Y = pair_new(LITHE_F32, 2, (int64_t[]){N, O}, NULL),
             dY = pair_rand(2, (int64_t[]){N, O}, -1, 1), dX = pair_rand(2, (int64_t[]){N, O}, -1, 1),
             dQ = pair_rand(1, &O, -1, 1);
        OK(lithe__op_para_attention(cpu, X.c, Q.c, L, A.c, Y.c));
        OK(lithe__op_para_attention(dev, X.v, Q.v, L, A.v, Y.v));
        expect_pair("para_attention A", A, 1e-6, 1e-5);
        expect_pair("para_attention Y", Y, 1e-6, 1e-5);
        max_diff("para_attention Y", Y);
        sync_pair(A);
        OK(lithe__op_para_attention_backward(cpu, X.c, Q.c, A.c, L, dY.c, dX.c, dQ.c));
        OK(lithe__op_para_attention_backward(dev, X.v, Q.v, A.v, L, dY.v, dX.v, dQ.v));
        /* no transcendental in the backward: the CPU's bits */
        expect_pair("para_attention_backward dX", dX, 0, 0);
        expect_pair("para_attention_backward dQ", dQ, 0, 0);
        pair_free(X), pair_free(Q), pair_free(A), pair_free(Y), pair_free(dY), pair_free(dX), pair_free(dQ);
        lithe_tensor_release(L);
    }
    /* CauchySimilarity: no transcendental, bit-exact */
}

void dc_cauchy_similarity(void) {
    for (size_t i = 0; i < N_SIZES; i += 2) {
        int64_t B = sizes[i], I = sizes[N_SIZES - 1 - i] % 300 + 1;
        pair X1 = pair_rand(2, (int64_t[]){B, I}, -1, 1), X2 = pair_rand(2, (int64_t[]){B, I}, -1, 1),
             W = pair_rand(1, &I, 0, 1), sim = pair_new(LITHE_F32, 1, &B, NULL), dsim = pair_rand(1, &B, -1, 1),
             dX1 = pair_new(LITHE_F32, 2, (int64_t[]){B, I}, NULL), dX2 = pair_new(LITHE_F32, 2, (int64_t[]){B, I}, NULL),
             dW = pair_rand(1, &I, -1, 1);
        OK(lithe__op_cauchy_similarity(cpu, X1.c, X2.c, W.c, sim.c));
        OK(lithe__op_cauchy_similarity(dev, X1.v, X2.v, W.v, sim.v));
        expect_pair("cauchy_similarity", sim, 0, 0);
        OK(lithe__op_cauchy_similarity_backward(cpu, X1.c, X2.c, W.c, sim.c, dsim.c, dX1.c, dX2.c, dW.c));
        OK(lithe__op_cauchy_similarity_backward(dev, X1.v, X2.v, W.v, sim.v, dsim.v, dX1.v, dX2.v, dW.v));
        expect_pair("cauchy_similarity_backward dX1", dX1, 0, 0);
        expect_pair("cauchy_similarity_backward dX2", dX2, 0, 0);
        expect_pair("cauchy_similarity_backward dW", dW, 0, 0);
        pair_free(X1), pair_free(X2), pair_free(W), pair_free(sim), pair_free(dsim), pair_free(dX1), pair_free(dX2),
            pair_free(dW);
    }
}

void dc_conv2d(void) {
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

void dc_pool2d(void) {
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
