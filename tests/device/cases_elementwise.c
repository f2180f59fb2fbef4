/* Device conformance (cases.h), elementwise and row-wise primitives: axpby, mul, sums,
 * clipping, softmax and its cross-entropy gradient, activations, unary maths, log-softmax and numpy
 * broadcasting, forward and backward. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

void dc_rows_elementwise(void) {
    for (size_t z = 0; z < N_SIZES; z++) {
        int64_t n = sizes[z], M = 1 + (int64_t)z * 3, N = (n + M - 1) / M;
        pair Y = pair_rand(2, (int64_t[]){M, N}, -2, 2), b = pair_rand(1, &N, -1, 1), y = pair_rand(1, &N, -1, 1);
        OK(lithe__op_add_row(cpu, Y.c, b.c));
        OK(lithe__op_add_row(dev, Y.v, b.v));
        expect_pair("add_row", Y, 0, 0);
        for (int k = 0; k < 2; k++) {
            float beta = k ? 0.5f : 0.0f;
            OK(lithe__op_sum_rows(cpu, Y.c, beta, y.c));
            OK(lithe__op_sum_rows(dev, Y.v, beta, y.v));
            expect_pair("sum_rows", y, 0, 0);
        }
        pair_free(Y);
        pair_free(b);
        pair_free(y);

        pair X = pair_rand(1, &n, -3, 3), Z = pair_rand(1, &n, -3, 3), W = pair_rand(1, &n, -3, 3);
        static const float betas[] = {1.0f, 0.0f, -0.75f};
        for (int k = 0; k < 3; k++) {
            OK(lithe__op_axpby(cpu, 1.25f, X.c, betas[k], Z.c));
            OK(lithe__op_axpby(dev, 1.25f, X.v, betas[k], Z.v));
            expect_pair("axpby", Z, 0, 0);
        }
        OK(lithe__op_mul(cpu, X.c, Z.c, W.c));
        OK(lithe__op_mul(dev, X.v, Z.v, W.v));
        expect_pair("mul", W, 0, 0);
        OK(lithe__op_mul(cpu, X.c, W.c, W.c));
        OK(lithe__op_mul(dev, X.v, W.v, W.v));
        expect_pair("mul in place", W, 0, 0);
        OK(lithe__op_update_averages(cpu, W.c, X.c, 0.9f));
        OK(lithe__op_update_averages(dev, W.v, X.v, 0.9f));
        expect_pair("update_averages", W, 0, 0);
        double sc, sv;
        OK(lithe__op_sum_squares(cpu, X.c, &sc));
        OK(lithe__op_sum_squares(dev, X.v, &sv));
        CHECK(fabs(sc - sv) <= 1e-5 * sc, "sum_squares n=%lld: cpu %.12g, %s %.12g", (long long)n, sc, devt_name, sv);
        int oc, ov;
        OK(lithe__op_any_outside(cpu, X.c, -3.0f, 3.0f, &oc));
        OK(lithe__op_any_outside(dev, X.v, -3.0f, 3.0f, &ov));
        CHECK_EQ(oc, ov);
        OK(lithe__op_any_outside(cpu, X.c, -1.0f, 1.0f, &oc));
        OK(lithe__op_any_outside(dev, X.v, -1.0f, 1.0f, &ov));
        CHECK_EQ(oc, ov);
        OK(lithe__op_any_outside(cpu, X.c, -2.9f, 2.9f, &oc));
        OK(lithe__op_any_outside(dev, X.v, -2.9f, 2.9f, &ov));
        CHECK_EQ(oc, ov);
        OK(lithe__op_any_outside(cpu, X.c, -4.0f, 4.0f, &oc));
        OK(lithe__op_any_outside(dev, X.v, -4.0f, 4.0f, &ov));
        CHECK(oc == 0 && ov == 0, "any_outside inside n=%lld: cpu %d, %s %d", (long long)n, oc, devt_name, ov);
        /* another alpha, a negative beta; a fill; a contiguous copy */
        BOTH(lithe__op_axpby(cpu, 0.5f, X.c, -1.25f, Z.c), lithe__op_axpby(dev, 0.5f, X.v, -1.25f, Z.v));
        expect_pair("axpby alpha 0.5 beta -1.25", Z, 0, 0);
        BOTH(lithe__op_fill(cpu, W.c, 1.5f), lithe__op_fill(dev, W.v, 1.5f));
        expect_pair("fill 1.5", W, 0, 0);
        BOTH(lithe__op_copy(cpu, W.c, Z.c), lithe__op_copy(dev, W.v, Z.v));
        expect_pair("copy", W, 0, 0);
        /* gradient clipping on the device: above the threshold X is scaled to it (|X| from the
         * device's partial sums may differ from the CPU's in its last bit: so may the factor);
         * below it X keeps its very bits */
        OK(lithe__op_clip_gradient(cpu, X.c, 2.0 * sqrt(sc)));
        OK(lithe__op_clip_gradient(dev, X.v, 2.0 * sqrt(sc)));
        expect_pair("clip_gradient below the threshold", X, 0, 0);
        OK(lithe__op_clip_gradient(cpu, X.c, 0.5 * sqrt(sc)));
        OK(lithe__op_clip_gradient(dev, X.v, 0.5 * sqrt(sc)));
        expect_pair("clip_gradient above the threshold", X, 0, 5e-7);
        pair_free(X);
        pair_free(Z);
        pair_free(W);
    }
    /* any_outside sees a NaN */
    float v[5] = {0.1f, 0.2f, NAN, 0.3f, 0.4f};
    pair X = pair_new(LITHE_F32, 1, (int64_t[]){5}, v);
    int o = 0;
    OK(lithe__op_any_outside(dev, X.v, 0.0f, 1.0f, &o));
    CHECK_EQ(o, 1);
    pair_free(X);
}

void dc_rows_softmax_cce(void) {
    static const int64_t shapes[][2] = {{1, 1}, {3, 7}, {50, 10}, {17, 300}, {2, 1000}, {257, 3}};
    char w[96];
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
        int64_t M = shapes[k][0], N = shapes[k][1];
        pair Y = pair_rand(2, shapes[k], -3, 3), b = pair_rand(1, &N, -1, 1), y = pair_rand(1, &N, -1, 1);
        BOTH(lithe__op_sum_rows(cpu, Y.c, 0.5f, y.c), lithe__op_sum_rows(dev, Y.v, 0.5f, y.v));
        snprintf(w, sizeof w, "sum_rows %lldx%lld", (long long)M, (long long)N);
        expect_pair(w, y, 0, 0);
        BOTH(lithe__op_add_row(cpu, Y.c, b.c), lithe__op_add_row(dev, Y.v, b.v));
        snprintf(w, sizeof w, "add_row %lldx%lld", (long long)M, (long long)N);
        expect_pair(w, Y, 0, 0);
        pair S = pair_rand(2, shapes[k], 0, 1), dS = pair_rand(2, shapes[k], -1, 1), dX = pair_rand(2, shapes[k], 0, 1);
        for (int tt = 0; tt < 2; tt++) {
            float T = tt ? 0.7f : 1.0f;
            BOTH(lithe__op_softmax(cpu, Y.c, T, S.c), lithe__op_softmax(dev, Y.v, T, S.v));
            snprintf(w, sizeof w, "softmax %lldx%lld T=%g", (long long)M, (long long)N, T);
            expect_pair(w, S, 1e-6, 1e-5);
            BOTH(lithe__op_softmax_backward(cpu, S.c, dS.c, T, dX.c), lithe__op_softmax_backward(dev, S.v, dS.v, T, dX.v));
            snprintf(w, sizeof w, "softmax_backward %lldx%lld T=%g", (long long)M, (long long)N, T);
            expect_pair(w, dX, 1e-6, 1e-5);
        }
        BOTH(lithe__op_softmax(cpu, Y.c, 1.0f, Y.c), lithe__op_softmax(dev, Y.v, 1.0f, Y.v)); /* in place */
        snprintf(w, sizeof w, "softmax in place %lldx%lld", (long long)M, (long long)N);
        expect_pair(w, Y, 1e-6, 1e-5);
        /* cross-entropy gradients from int32 and int64 labels, smoothing, a missing label */
        int32_t *l32 = malloc(sizeof(int32_t) * (size_t)M);
        int64_t *l64 = malloc(sizeof(int64_t) * (size_t)M);
        for (int64_t i = 0; i < M; i++) l64[i] = l32[i] = (int32_t)(uni() * (double)N);
        if (M > 2) l64[1] = l32[1] = -1;
        pair L32 = pair_new(LITHE_I32, 1, &M, l32), L64 = pair_new(LITHE_I64, 1, &M, l64);
        pair_free(S); /* the same probabilities on both sides: the gradient is then bit-exact */
        S = pair_rand(2, shapes[k], 0, 1);
        BOTH(lithe__op_cce_labels(cpu, S.c, L32.c, 0.1f, true, -1, 2.0f, dX.c),
             lithe__op_cce_labels(dev, S.v, L32.v, 0.1f, true, -1, 2.0f, dX.v));
        snprintf(w, sizeof w, "cce_labels int32 %lldx%lld", (long long)M, (long long)N);
        expect_pair(w, dX, 0, 0);
        BOTH(lithe__op_cce_labels(cpu, S.c, L64.c, 0.0f, false, 0, 1.0f, dX.c),
             lithe__op_cce_labels(dev, S.v, L64.v, 0.0f, false, 0, 1.0f, dX.v));
        snprintf(w, sizeof w, "cce_labels int64 %lldx%lld", (long long)M, (long long)N);
        expect_pair(w, dX, 0, 0);
        free(l32);
        free(l64);
        pair_free(L32);
        pair_free(L64);
        pair_free(S);
        pair_free(dS);
        pair_free(dX);
        pair_free(Y);
        pair_free(b);
        pair_free(y);
    }
}

void dc_softmax(void) {
    static const int64_t shapes[][2] = {{1, 1}, {3, 7}, {5, 256}, {4, 257}, {2, 1000}, {300, 10}};
    for (size_t z = 0; z < sizeof shapes / sizeof shapes[0]; z++)
        for (int t = 0; t < 2; t++) {
            float T = t ? 0.7f : 1.0f;
            pair X = pair_rand(2, shapes[z], -8, 8), Y = pair_new(LITHE_F32, 2, shapes[z], NULL),
                 dY = pair_rand(2, shapes[z], -1, 1), dX = pair_new(LITHE_F32, 2, shapes[z], NULL);
            OK(lithe__op_softmax(cpu, X.c, T, Y.c));
            OK(lithe__op_softmax(dev, X.v, T, Y.v));
            expect_pair("softmax", Y, 1e-7, 1e-5);
            /* backward from the CPU's Y on both sides */
            float *yb = malloc(sizeof(float) * (size_t)(shapes[z][0] * shapes[z][1]));
            OK(lithe_tensor_read(Y.c, yb, sizeof(float) * (size_t)(shapes[z][0] * shapes[z][1])));
            OK(lithe_tensor_write(Y.v, yb, sizeof(float) * (size_t)(shapes[z][0] * shapes[z][1])));
            free(yb);
            OK(lithe__op_softmax_backward(cpu, Y.c, dY.c, T, dX.c));
            OK(lithe__op_softmax_backward(dev, Y.v, dY.v, T, dX.v));
            expect_pair("softmax_backward", dX, 1e-6, 1e-4);
            OK(lithe__op_softmax(cpu, X.c, T, X.c));
            OK(lithe__op_softmax(dev, X.v, T, X.v));
            expect_pair("softmax in place", X, 1e-7, 1e-5);
            pair_free(X);
            pair_free(Y);
            pair_free(dY);
            pair_free(dX);
        }
}

/* Every activation at two input ranges: [-4, 4] (WebGPU's original case: forward and the forward
 * in place within 1e-6 + 1e-5 |y|, backward from each side's own Y) and [-25, 25] (saturation:
 * within 1e-5 + 1e-4 |y|, backward from the CPU's Y on both sides, and in place over dY). */
void dc_activations(void) {
    char w[96];
    for (int range = 0; range < 2; range++)
        for (int kind = 0; kind < LITHE__ACT_COUNT; kind++) {
            double lim = range ? 25 : 4, ftol = range ? 1e-5 : 1e-6, frtol = range ? 1e-4 : 1e-5;
            lithe__act a = {.kind = (lithe__act_kind)kind, .slope = 1.5f, .offset = 0.25f,
                            .min_val = range ? -0.5f : -1.0f, .max_val = 2.0f, .threshold = 20.0f};
            for (size_t z = 0; z < N_SIZES; z += 2) {
                int64_t n = sizes[z];
                pair X = pair_rand(1, &n, -lim, lim), dY = pair_rand(1, &n, -1, 1), Y = pair_new(LITHE_F32, 1, &n, NULL),
                     dX = pair_new(LITHE_F32, 1, &n, NULL);
                BOTH(lithe__op_act(cpu, &a, X.c, Y.c), lithe__op_act(dev, &a, X.v, Y.v));
                snprintf(w, sizeof w, "act kind %d range %g n=%lld forward", kind, lim, (long long)n);
                expect_pair(w, Y, ftol, frtol);
                if (range) sync_pair(Y); /* so only the backward differs */
                int needs = lithe__act_needs(a.kind);
                const lithe_tensor *xc = needs & LITHE__ACT_NEEDS_X ? X.c : NULL, *xv = needs & LITHE__ACT_NEEDS_X ? X.v : NULL;
                const lithe_tensor *yc = needs & LITHE__ACT_NEEDS_Y ? Y.c : NULL, *yv = needs & LITHE__ACT_NEEDS_Y ? Y.v : NULL;
                BOTH(lithe__op_act_backward(cpu, &a, dY.c, xc, yc, dX.c), lithe__op_act_backward(dev, &a, dY.v, xv, yv, dX.v));
                snprintf(w, sizeof w, "act kind %d range %g n=%lld backward", kind, lim, (long long)n);
                expect_pair(w, dX, 1e-5, 1e-4);
                if (range) { /* dX aliasing dY */
                    BOTH(lithe__op_act_backward(cpu, &a, dY.c, xc, yc, dY.c), lithe__op_act_backward(dev, &a, dY.v, xv, yv, dY.v));
                    snprintf(w, sizeof w, "act kind %d n=%lld backward in place", kind, (long long)n);
                    expect_pair(w, dY, 1e-5, 1e-4);
                } else { /* Y aliasing X */
                    BOTH(lithe__op_act(cpu, &a, X.c, X.c), lithe__op_act(dev, &a, X.v, X.v));
                    snprintf(w, sizeof w, "act kind %d n=%lld forward in place", kind, (long long)n);
                    expect_pair(w, X, ftol, frtol);
                }
                pair_free(X), pair_free(dY), pair_free(Y), pair_free(dX);
            }
        }
}
void dc_unary_log_softmax(void) {
    static const char *names[] = {"exp", "log", "sqrt", "neg", "erf", "abs", "reciprocal", "floor", "ceil", "round", "sin", "cos"};
    char w[96];
    for (size_t i = 0; i < N_SIZES; i++) {
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
            expect_pair(w, Y, 1e-6, 1e-5); /* neg, abs, sqrt exact; the rest from the driver (erf: 1.5e-7) */
            if (i == N_SIZES - 1) max_diff(w, Y);
            sync_pair(Y);
            BOTH(lithe__op_unary_backward(cpu, op, X.c, Y.c, dY.c, dX.c), lithe__op_unary_backward(dev, op, X.v, Y.v, dY.v, dX.v));
            snprintf(w, sizeof w, "unary_backward %s n=%lld", names[op], (long long)n);
            expect_pair(w, dX, 1e-6, 1e-5);
            if (i == N_SIZES - 1) max_diff(w, dX);
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
        max_diff(w, Y);
        sync_pair(Y);
        BOTH(lithe__op_log_softmax_backward(cpu, Y.c, dY.c, dX.c), lithe__op_log_softmax_backward(dev, Y.v, dY.v, dX.v));
        snprintf(w, sizeof w, "log_softmax_backward %lldx%lld", (long long)shapes[i][0], (long long)shapes[i][1]);
        expect_pair(w, dX, 1e-5, 1e-5);
        max_diff(w, dX);
        BOTH(lithe__op_log_softmax(cpu, X.c, X.c), lithe__op_log_softmax(dev, X.v, X.v)); /* in place */
        expect_pair("log_softmax in place", X, 1e-5, 1e-5);
        pair_free(X), pair_free(Y), pair_free(dY), pair_free(dX);
    }
}

void dc_broadcasting(void) {
    /* A, B shapes (ndim, extents); Y is their numpy broadcast: trailing alignment, missing and
     * unit axes, an output past a workgroup, scalars, and alternating patterns past 4 merged axes */
    static const int64_t cases[][2][7] = {
        {{2, 4, 7}, {1, 7}},         {{3, 3, 1, 5}, {3, 1, 4, 1}}, {{1, 257}, {1, 1}},
        {{4, 2, 3, 4, 5}, {3, 3, 1, 5}}, {{1, 1}, {1, 1}},        {{2, 300, 1}, {2, 1, 9}},
        {{6, 2, 1, 3, 1, 5, 1}, {6, 1, 4, 1, 2, 1, 3}}, {{3, 1, 8, 16}, {3, 4, 1, 16}},
    };
    static const char *names[] = {"add", "sub", "mul", "div", "pow", "less", "greater", "equal"};
    char w[128];
    /* Bit-exact backward sums over broadcast axes (and reduce_to) where the kernel adds in the CPU's
     * order (Vulkan, CUDA); WebGPU's kernels add the broadcast axes in another order: within 1e-6. */
    double etol = devt_is("webgpu") ? 1e-6 : 0;
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
            expect_pair(w, dA, exact ? etol : 1e-4, exact ? etol : 1e-4);
            snprintf(w, sizeof w, "bcast_backward %s dB case %zu", names[op], i);
            expect_pair(w, dB, exact ? etol : 1e-4, exact ? etol : 1e-4);
            if (!exact && i == 5) max_diff(w, dB);
            BOTH(lithe__op_bcast_binary_backward(cpu, op, A.c, B.c, Y.c, dY.c, NULL, dB.c),
                 lithe__op_bcast_binary_backward(dev, op, A.v, B.v, Y.v, dY.v, NULL, dB.v));
            snprintf(w, sizeof w, "bcast_backward %s dB only case %zu", names[op], i);
            expect_pair(w, dB, exact ? etol : 1e-4, exact ? etol : 1e-4);
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
            expect_pair(w, X, etol, etol);
            pair_free(X), pair_free(Y);
        }
    }
}
