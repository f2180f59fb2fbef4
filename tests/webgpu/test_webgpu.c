/* WebGPU backend conformance, built into lithe-webgpu-test.wasm (preset wasm-webgpu) and run by
 * bindings/js/test/webgpu.test.mjs in Node on the `webgpu` package (Dawn) over SwiftShader. Every
 * primitive the backend implements against the CPU backend on the same random inputs, at odd and
 * workgroup-boundary sizes, forward and backward; a primitive it lacks answers
 * LITHE_ERR_UNSUPPORTED naming it; then a Relu MLP's predictions and ten Adam steps against the
 * same model on the CPU. Oracle: the CPU backend (checked against Thinc by test_kernels).
 * Each exported function returns its number of failures and prints each one. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wgt.h"

#define EXPORT __attribute__((used, visibility("default")))

static uint64_t rng_state = 12345;

static const int64_t sizes[] = {1, 3, 255, 256, 257, 1000, 4099};
#define N_SIZES (sizeof sizes / sizeof sizes[0])

static void t_elementwise(void) {
    char w[96];
    for (size_t k = 0; k < N_SIZES; k++) {
        int64_t n = sizes[k];
        pair X = pair_rand(1, &n, -2, 2), Y = pair_rand(1, &n, -2, 2), Z = pair_rand(1, &n, -2, 2);
        BOTH(lithe__op_axpby(cpu, 0.5f, X.c, -1.25f, Y.c), lithe__op_axpby(dev, 0.5f, X.v, -1.25f, Y.v));
        snprintf(w, sizeof w, "axpby n=%lld", (long long)n);
        expect_pair(w, Y, 0, 0);
        BOTH(lithe__op_mul(cpu, X.c, Z.c, Y.c), lithe__op_mul(dev, X.v, Z.v, Y.v));
        snprintf(w, sizeof w, "mul n=%lld", (long long)n);
        expect_pair(w, Y, 0, 0);
        BOTH(lithe__op_mul(cpu, X.c, Y.c, Y.c), lithe__op_mul(dev, X.v, Y.v, Y.v)); /* Y aliases B */
        snprintf(w, sizeof w, "mul in place n=%lld", (long long)n);
        expect_pair(w, Y, 0, 0);
        BOTH(lithe__op_update_averages(cpu, Z.c, X.c, 0.9f), lithe__op_update_averages(dev, Z.v, X.v, 0.9f));
        snprintf(w, sizeof w, "update_averages n=%lld", (long long)n);
        expect_pair(w, Z, 0, 0);
        BOTH(lithe__op_fill(cpu, Z.c, 1.5f), lithe__op_fill(dev, Z.v, 1.5f));
        snprintf(w, sizeof w, "fill n=%lld", (long long)n);
        expect_pair(w, Z, 0, 0);
        BOTH(lithe__op_copy(cpu, Z.c, X.c), lithe__op_copy(dev, Z.v, X.v));
        snprintf(w, sizeof w, "copy n=%lld", (long long)n);
        expect_pair(w, Z, 0, 0);
        double sc = 0, sv = 0;
        BOTH(lithe__op_sum_squares(cpu, X.c, &sc), lithe__op_sum_squares(dev, X.v, &sv));
        if (!(fabs(sc - sv) <= 1e-5 * fabs(sc) + 1e-6)) FAIL("sum_squares n=%lld: cpu %.9g, webgpu %.9g", (long long)n, sc, sv);
        int oc = -1, ov = -2;
        BOTH(lithe__op_any_outside(cpu, X.c, -1.9f, 1.9f, &oc), lithe__op_any_outside(dev, X.v, -1.9f, 1.9f, &ov));
        if (oc != ov) FAIL("any_outside n=%lld: cpu %d, webgpu %d", (long long)n, oc, ov);
        BOTH(lithe__op_any_outside(cpu, X.c, -3, 3, &oc), lithe__op_any_outside(dev, X.v, -3, 3, &ov));
        if (oc != ov || oc) FAIL("any_outside inside n=%lld: cpu %d, webgpu %d", (long long)n, oc, ov);
        pair_free(X);
        pair_free(Y);
        pair_free(Z);
    }
    /* a row-strided 2-D view: copy of columns 2..6 of a (5, 9) matrix */
    int64_t s2[2] = {5, 9}, s3[2] = {5, 4};
    pair A = pair_rand(2, s2, -1, 1), D = pair_rand(2, s3, -1, 1);
    lithe_tensor *vc = NULL, *vv = NULL;
    OK(lithe_tensor_slice(A.c, 1, 2, 6, &vc));
    OK(lithe_tensor_slice(A.v, 1, 2, 6, &vv));
    BOTH(lithe__op_copy(cpu, D.c, vc), lithe__op_copy(dev, D.v, vv));
    expect_pair("copy of a row-strided view", D, 0, 0);
    lithe_tensor_release(vc);
    lithe_tensor_release(vv);
    pair_free(A);
    pair_free(D);
}

static void t_rows_softmax_cce(void) {
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

static void t_activations(void) {
    char w[96];
    for (int kind = 0; kind < LITHE__ACT_COUNT; kind++) {
        lithe__act a = {.kind = (lithe__act_kind)kind, .slope = 1.5f, .offset = 0.25f, .min_val = -1.0f, .max_val = 2.0f,
                        .threshold = 20.0f};
        for (size_t k = 0; k < N_SIZES; k += 2) {
            int64_t n = sizes[k];
            pair X = pair_rand(1, &n, -4, 4), Y = pair_rand(1, &n, 0, 1), dY = pair_rand(1, &n, -1, 1),
                 dX = pair_rand(1, &n, 0, 1);
            BOTH(lithe__op_act(cpu, &a, X.c, Y.c), lithe__op_act(dev, &a, X.v, Y.v));
            snprintf(w, sizeof w, "act kind %d n=%lld", kind, (long long)n);
            expect_pair(w, Y, 1e-6, 1e-5);
            int needs = lithe__act_needs(a.kind);
            BOTH(lithe__op_act_backward(cpu, &a, dY.c, needs & LITHE__ACT_NEEDS_X ? X.c : NULL,
                                        needs & LITHE__ACT_NEEDS_Y ? Y.c : NULL, dX.c),
                 lithe__op_act_backward(dev, &a, dY.v, needs & LITHE__ACT_NEEDS_X ? X.v : NULL,
                                        needs & LITHE__ACT_NEEDS_Y ? Y.v : NULL, dX.v));
            snprintf(w, sizeof w, "act_backward kind %d n=%lld", kind, (long long)n);
            expect_pair(w, dX, 1e-5, 1e-4);
            BOTH(lithe__op_act(cpu, &a, X.c, X.c), lithe__op_act(dev, &a, X.v, X.v)); /* in place */
            snprintf(w, sizeof w, "act in place kind %d n=%lld", kind, (long long)n);
            expect_pair(w, X, 1e-6, 1e-5);
            pair_free(X);
            pair_free(Y);
            pair_free(dY);
            pair_free(dX);
        }
    }
}

static void t_optimizers(void) {
    char w[96];
    for (size_t k = 0; k < N_SIZES; k++) {
        int64_t n = sizes[k];
        pair W = pair_rand(1, &n, -1, 1), G = pair_rand(1, &n, -1, 1), m1 = pair_rand(1, &n, -0.1, 0.1),
             m2 = pair_rand(1, &n, 0, 0.1), avg = pair_rand(1, &n, -1, 1);
        BOTH(lithe__op_adam(cpu, W.c, G.c, m1.c, m2.c, 0.9f, 0.999f, 1e-8f, 0.01f),
             lithe__op_adam(dev, W.v, G.v, m1.v, m2.v, 0.9f, 0.999f, 1e-8f, 0.01f));
        snprintf(w, sizeof w, "adam W n=%lld", (long long)n);
        expect_pair(w, W, 1e-7, 1e-6);
        expect_pair("adam m1", m1, 1e-7, 1e-6);
        expect_pair("adam m2", m2, 1e-7, 1e-6);
        BOTH(lithe__op_radam(cpu, W.c, G.c, m1.c, m2.c, 0.9f, 0.1f, 0.999f, 0.001f, 1e-8f, 0.01f, k % 2),
             lithe__op_radam(dev, W.v, G.v, m1.v, m2.v, 0.9f, 0.1f, 0.999f, 0.001f, 1e-8f, 0.01f, k % 2));
        snprintf(w, sizeof w, "radam W n=%lld", (long long)n);
        expect_pair(w, W, 1e-7, 1e-6);
        for (int clip = 0; clip < 2; clip++) {
            double gc = clip ? 0.5 : 0.0;
            BOTH(lithe__op_adam_step(cpu, W.c, G.c, m1.c, m2.c, avg.c, gc, 0.9f, 0.999f, 1e-8f, 0.01f, 0.99f, 0.9f),
                 lithe__op_adam_step(dev, W.v, G.v, m1.v, m2.v, avg.v, gc, 0.9f, 0.999f, 1e-8f, 0.01f, 0.99f, 0.9f));
            snprintf(w, sizeof w, "adam_step clip %g n=%lld", gc, (long long)n);
            expect_pair(w, W, 1e-6, 1e-5);
            expect_pair("adam_step G zeroed", G, 0, 0);
            expect_pair("adam_step avg", avg, 1e-6, 1e-5);
            expect_pair("adam_step m1", m1, 1e-6, 1e-5);
            pair G2 = pair_rand(1, &n, -1, 1);
            lithe_tensor_release(G.c);
            lithe_tensor_release(G.v);
            G = G2;
        }
        BOTH(lithe__op_clip_gradient(cpu, G.c, 1.0), lithe__op_clip_gradient(dev, G.v, 1.0));
        snprintf(w, sizeof w, "clip_gradient n=%lld", (long long)n);
        expect_pair(w, G, 1e-7, 1e-5);
        pair_free(W);
        pair_free(G);
        pair_free(m1);
        pair_free(m2);
        pair_free(avg);
    }
}

static void t_gemm(void) {
    static const int64_t mnk[][3] = {{1, 1, 1}, {3, 5, 7}, {64, 64, 64}, {65, 63, 17}, {50, 48, 20}, {128, 10, 300}, {7, 130, 1},
                                         /* gemm_v4's edges: ragged M and N (tB), ragged K (tA) */ {13, 9, 8}, {12, 40, 7}};
    char w[128];
    for (size_t k = 0; k < sizeof mnk / sizeof mnk[0]; k++) {
        int64_t M = mnk[k][0], N = mnk[k][1], K = mnk[k][2];
        for (int t = 0; t < 4; t++) {
            bool tA = t & 1, tB = t & 2;
            int64_t sa[2] = {tA ? K : M, tA ? M : K}, sb[2] = {tB ? N : K, tB ? K : N}, sc[2] = {M, N};
            pair A = pair_rand(2, sa, -1, 1), B = pair_rand(2, sb, -1, 1), C = pair_rand(2, sc, -1, 1), Z = pair_rand(2, sc, 0, 1);
            pair bias = pair_rand(1, &N, -1, 1);
            double tol = 1e-6 * (double)K + 1e-6;
            BOTH(lithe__op_gemm(cpu, tA, tB, 0.75f, A.c, B.c, 0.5f, C.c), lithe__op_gemm(dev, tA, tB, 0.75f, A.v, B.v, 0.5f, C.v));
            snprintf(w, sizeof w, "gemm %lldx%lldx%lld tA=%d tB=%d", (long long)M, (long long)N, (long long)K, tA, tB);
            expect_pair(w, C, tol, 1e-5);
            lithe__act relu = {.kind = LITHE__ACT_RELU}, gelu = {.kind = LITHE__ACT_GELU};
            BOTH(lithe__op_gemm_bias_act(cpu, tA, tB, A.c, B.c, bias.c, t % 2 ? &gelu : &relu, Z.c, C.c),
                 lithe__op_gemm_bias_act(dev, tA, tB, A.v, B.v, bias.v, t % 2 ? &gelu : &relu, Z.v, C.v));
            snprintf(w, sizeof w, "gemm_bias_act Y %lldx%lldx%lld tA=%d tB=%d", (long long)M, (long long)N, (long long)K, tA, tB);
            expect_pair(w, C, tol, 1e-5);
            snprintf(w, sizeof w, "gemm_bias_act Z %lldx%lldx%lld tA=%d tB=%d", (long long)M, (long long)N, (long long)K, tA, tB);
            expect_pair(w, Z, tol, 1e-5);
            BOTH(lithe__op_gemm_bias_act(cpu, tA, tB, A.c, B.c, NULL, NULL, NULL, C.c),
                 lithe__op_gemm_bias_act(dev, tA, tB, A.v, B.v, NULL, NULL, NULL, C.v));
            snprintf(w, sizeof w, "gemm_bias_act plain %lldx%lldx%lld tA=%d tB=%d", (long long)M, (long long)N, (long long)K, tA, tB);
            expect_pair(w, C, tol, 1e-5);
            pair_free(A);
            pair_free(B);
            pair_free(C);
            pair_free(Z);
            pair_free(bias);
        }
    }
}

static void t_unsupported(void) {
    /* every primitive of core/primitives.def is in WGSL now (backends/webgpu/unsupported.h lists
     * none): one missing from the table would be refused by name, and fails here */
    for (size_t i = 0; i < lithe__prim_count; i++)
        if (!lithe__backend_has_prim(dev, i)) FAIL("the webgpu backend lacks primitive '%s'", lithe__prim_names[i]);
}

EXPORT int wgt_primitives(void) {
    if (wgt_begin()) return 1;
    t_elementwise();
    t_rows_softmax_cce();
    t_activations();
    t_optimizers();
    t_gemm();
    t_unsupported();
    return failures;
}

/* ---- whole models: a Relu MLP (784-64-32-10 at batch 32 for the step counts; 20-48-32-10 at
 * batch 50 against the CPU) ---- */

static lithe_status build_mlp(int64_t h1, int64_t h2, float dropout, lithe_model **out) {
    lithe_model *l[3] = {NULL, NULL, NULL};
    lithe_status s = lithe_relu(&(lithe_dense_opts){.nO = h1}, &l[0]);
    if (s == LITHE_OK) s = lithe_relu(&(lithe_dense_opts){.nO = h2, .dropout = dropout}, &l[1]);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 10}, &l[2]);
    if (s != LITHE_OK) {
        for (int i = 0; i < 3; i++) lithe_model_free(l[i]);
        return s;
    }
    return lithe_chain(3, l, out);
}

static lithe_value *value_on(lithe_backend *be, lithe_dtype dt, int ndim, const int64_t *shape, const void *data) {
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

/* One training step: forward, the cross-entropy gradient, backward, Adam. */
static lithe_status train_step(lithe_model *m, lithe_value *X, lithe_value *L, lithe_optimizer *o) {
    lithe_value *G = NULL, *dv = NULL;
    lithe_backprop *bp = NULL;
    lithe_tensor *d = NULL;
    lithe_status s = lithe_model_begin_update(m, X, &G, &bp);
    if (s == LITHE_OK)
        s = lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(G), lithe_value_get_tensor(L), &d, NULL);
    if (s == LITHE_OK) s = lithe_value_tensor(d, &dv);
    if (s == LITHE_OK) s = lithe_backprop_run(bp, dv, NULL);
    if (s == LITHE_OK) s = lithe_model_finish_update(m, o);
    lithe_tensor_release(d);
    lithe_value_release(dv);
    lithe_value_release(G);
    lithe_backprop_free(bp);
    return s;
}

static void mlp_vs_cpu(void) {
    enum { B = 50, NI = 20, NC = 10 };
    lithe_model *mc = NULL, *mv = NULL;
    OK(build_mlp(48, 32, 0.0f, &mc));
    OK(build_mlp(48, 32, 0.0f, &mv));
    OK(lithe_model_set_seed(mc, 7));
    OK(lithe_model_set_seed(mv, 7));
    float x[B * NI], onehot[B * NC] = {0};
    int32_t y[B];
    for (int i = 0; i < B * NI; i++) x[i] = (float)(uni() * 2 - 1);
    for (int i = 0; i < B; i++) {
        y[i] = (int32_t)(uni() * NC);
        onehot[i * NC + y[i]] = 1.0f;
    }
    const int64_t xs[2] = {B, NI}, ys[2] = {B, NC}, ls[1] = {B};
    lithe_value *Xc = value_on(cpu, LITHE_F32, 2, xs, x), *Yc = value_on(cpu, LITHE_F32, 2, ys, onehot);
    lithe_value *Xv = value_on(dev, LITHE_F32, 2, xs, x), *Lc = value_on(cpu, LITHE_I32, 1, ls, y),
                *Lv = value_on(dev, LITHE_I32, 1, ls, y);
    OK(lithe_model_initialize(mc, Xc, Yc));
    OK(lithe_model_initialize(mv, Xc, Yc));
    OK(lithe_model_to_backend(mv, dev));
    lithe_value *Pc = NULL, *Pv = NULL;
    OK(lithe_model_predict(mc, Xc, &Pc));
    OK(lithe_model_predict(mv, Xv, &Pv));
    expect_pair("MLP predictions", (pair){lithe_value_get_tensor(Pc), lithe_value_get_tensor(Pv)}, 1e-5, 1e-4);
    lithe_value_release(Pc);
    lithe_value_release(Pv);
    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.learn_rate = 0.01;
    lithe_optimizer *oc = NULL, *ov = NULL;
    OK(lithe_optimizer_new(&oo, &oc));
    OK(lithe_optimizer_new(&oo, &ov));
    for (int step = 0; step < 10; step++) {
        OK(train_step(mc, Xc, Lc, oc));
        OK(train_step(mv, Xv, Lv, ov));
    }
    OK(lithe_model_predict(mc, Xc, &Pc));
    OK(lithe_model_predict(mv, Xv, &Pv));
    expect_pair("MLP predictions after 10 Adam steps", (pair){lithe_value_get_tensor(Pc), lithe_value_get_tensor(Pv)},
                1e-4, 1e-3);
    lithe_value_release(Pc);
    lithe_value_release(Pv);
    lithe_model *nc[16], *nv[16];
    size_t n1 = 0, n2 = 0;
    OK(lithe_model_walk(mc, nc, 16, &n1));
    OK(lithe_model_walk(mv, nv, 16, &n2));
    size_t checked = 0;
    for (size_t i = 0; i < n1 && i < 16; i++)
        for (size_t p = 0; p < lithe_model_n_params(nc[i]); p++) {
            const char *pn = lithe_model_param_name(nc[i], p);
            pair t = {NULL, NULL};
            if (lithe_model_get_param(nc[i], pn, &t.c) != LITHE_OK) continue;
            OK(lithe_model_get_param(nv[i], pn, &t.v));
            if (lithe_tensor_backend(t.v) != dev) FAIL("param %s is not on webgpu", pn);
            char what[96];
            snprintf(what, sizeof what, "MLP node %zu param %s after 10 Adam steps", i, pn);
            expect_pair(what, t, 2e-4, 2e-3);
            checked++;
        }
    if (checked != 6) FAIL("MLP: %zu params compared, expected 6", checked);
    lithe_optimizer_free(oc);
    lithe_optimizer_free(ov);
    lithe_value_release(Xc);
    lithe_value_release(Yc);
    lithe_value_release(Xv);
    lithe_value_release(Lc);
    lithe_value_release(Lv);
    lithe_model_free(mc);
    lithe_model_free(mv);
}

EXPORT int wgt_mlp(void) {
    if (wgt_begin()) return 1;
    mlp_vs_cpu();
    return failures;
}

/* A step-count fixture: a 784-64-32-10 Relu MLP, batch 32, on WebGPU; the JS test reads the
 * recorder's counters around wgt_step(). */
static lithe_model *sm;
static lithe_value *sX, *sL;
static lithe_optimizer *so;
EXPORT int wgt_step_setup(float dropout) {
    if (wgt_begin()) return 1;
    enum { B = 32, NI = 784 };
    static float x[B * NI], onehot[B * 10];
    static int32_t y[B];
    for (int i = 0; i < B * NI; i++) x[i] = (float)uni();
    for (int i = 0; i < B; i++) {
        y[i] = i % 10;
        onehot[i * 10 + y[i]] = 1.0f;
    }
    const int64_t xs[2] = {B, NI}, ys[2] = {B, 10}, ls[1] = {B};
    lithe_value *Xc = value_on(cpu, LITHE_F32, 2, xs, x), *Yc = value_on(cpu, LITHE_F32, 2, ys, onehot);
    lithe_optimizer_opts oo = lithe_adam_defaults();
    if (build_mlp(64, 32, dropout, &sm) || lithe_model_initialize(sm, Xc, Yc) || lithe_model_to_backend(sm, dev) ||
        lithe_optimizer_new(&oo, &so))
        FAIL("step setup: %s", lithe_last_error());
    sX = value_on(dev, LITHE_F32, 2, xs, x);
    sL = value_on(dev, LITHE_I32, 1, ls, y);
    lithe_value_release(Xc);
    lithe_value_release(Yc);
    return failures;
}
/* One step; 0, or the status (its message printed). */
EXPORT int wgt_step(void) {
    lithe_status s = train_step(sm, sX, sL, so);
    if (s != LITHE_OK) printf("step: %s: %s\n", lithe_status_str(s), lithe_last_error());
    return (int)s;
}
EXPORT void wgt_step_free(void) {
    lithe_model_free(sm);
    lithe_value_release(sX);
    lithe_value_release(sL);
    lithe_optimizer_free(so);
    sm = NULL;
    sX = sL = NULL;
    so = NULL;
}

/* A 20-48-32-10 Relu MLP (seed 7), initialized on the CPU and saved as .lithe bytes, for the npm
 * API's test (loadBytes, to('webgpu'), predictAsync, trainStepAsync); *len its size. Free the bytes
 * with lithe_buffer_free. */
EXPORT void *wgt_mlp_bytes(size_t *len) {
    lithe_model *m = NULL;
    void *buf = NULL;
    *len = 0;
    float x[4 * 20] = {0}, y[4 * 10] = {0};
    const int64_t xs[2] = {4, 20}, ys[2] = {4, 10};
    if (lithe_backend_get("cpu", &cpu) || build_mlp(48, 32, 0.0f, &m)) return NULL;
    lithe_value *X = value_on(cpu, LITHE_F32, 2, xs, x), *Y = value_on(cpu, LITHE_F32, 2, ys, y);
    if (lithe_model_set_seed(m, 7) || lithe_model_initialize(m, X, Y) || lithe_model_save_bytes(m, NULL, (uint8_t **)&buf, len)) buf = NULL;
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_model_free(m);
    return buf;
}

/* ---- issue 27: the loss read back once, fused clip + Adam, the subgroup GEMM ---- */
#include "../../backends/webgpu/webgpu_internal.h"
#include "../../core/train/loss_device.h"

/* lithe__cce_labels_once on WebGPU (the cce_stats op, one read-back) against
 * lithe_categorical_crossentropy + lithe_cross_entropy on the CPU: int32 / int64 labels, label
 * smoothing, a missing value, unnormalized; a guess outside [0, 1] and a label outside [0, C)
 * refused with the CPU's messages. */
static void t_loss_once(void) {
    static const int64_t bc[][2] = {{1, 1}, {5, 3}, {32, 10}, {300, 7}, {3, 1000}};
    char w[128];
    for (size_t k = 0; k < sizeof bc / sizeof bc[0]; k++) {
        int64_t B = bc[k][0], C = bc[k][1], n = B * C;
        for (int var = 0; var < 4; var++) {
            bool i64 = var & 1;
            lithe_cce_opts o = {.unnormalized = var == 3, .has_missing_value = var >= 2, .missing_value = 1,
                                .label_smoothing = var == 1 && C > 2 ? 0.1f : 0.0f};
            pair G = pair_rand(2, bc[k], 0.001, 1);
            int64_t lab64[1000];
            int32_t lab32[1000];
            for (int64_t i = 0; i < B; i++) lab32[i] = (int32_t)(lab64[i] = (int64_t)(uni() * (double)C) % C);
            pair L = pair_new(i64 ? LITHE_I64 : LITHE_I32, 1, &B, i64 ? (void *)lab64 : (void *)lab32);
            lithe_tensor *Dc = NULL, *Dv = NULL;
            float lc = 0, lv = 0;
            double cc = 0, cv = 0;
            OK(lithe_categorical_crossentropy(&o, G.c, L.c, &Dc, &lc));
            OK(lithe_cross_entropy(&o, G.c, L.c, &cc));
            OK(lithe__cce_labels_once(&o, G.v, L.v, i64 ? (void *)lab64 : (void *)lab32, &Dv, &lv, &cv));
            snprintf(w, sizeof w, "loss once D B=%lld C=%lld variant %d", (long long)B, (long long)C, var);
            expect_pair(w, (pair){Dc, Dv}, 1e-7, 1e-6);
            if (!(fabs(lc - lv) <= 1e-5 + 1e-4 * fabs(lc)) || !(fabs(cc - cv) <= 1e-5 + 1e-4 * fabs(cc)))
                FAIL("loss once B=%lld C=%lld variant %d: thinc loss cpu %.9g webgpu %.9g, cross-entropy cpu %.9g "
                     "webgpu %.9g", (long long)B, (long long)C, var, lc, lv, cc, cv);
            lithe_tensor_release(Dc);
            lithe_tensor_release(Dv);
            (void)n;
            pair_free(G);
            pair_free(L);
        }
    }
    /* refusals: a guess outside [0, 1] (on the device), a label outside [0, C) (on the host) */
    int64_t s[2] = {4, 3}, B = 4;
    pair G = pair_rand(2, s, 0, 1), Bad = pair_rand(2, s, 0.5, 1.5);
    int32_t good[4] = {0, 1, 2, 0}, bad[4] = {0, 3, 2, 0};
    pair L = pair_new(LITHE_I32, 1, &B, good);
    float l;
    lithe_status st = lithe__cce_labels_once(NULL, Bad.v, L.v, good, NULL, &l, NULL);
    if (st != LITHE_ERR_VALUE || !strstr(lithe_last_error(), "guesses outside the [0,1] interval"))
        FAIL("loss once: a guess outside [0, 1]: got %s: %s", lithe_status_str(st), lithe_last_error());
    st = lithe__cce_labels_once(NULL, G.v, L.v, bad, NULL, &l, NULL);
    if (st != LITHE_ERR_VALUE || !strstr(lithe_last_error(), "label 3 of row 1 outside [0, 3)"))
        FAIL("loss once: a label outside [0, C): got %s: %s", lithe_status_str(st), lithe_last_error());
    pair_free(G);
    pair_free(Bad);
    pair_free(L);
}

/* adam_step with clipping above the fused path's size (partials, decision, step: three dispatches). */
static void t_adam_step_large(void) {
    int64_t n = LITHE__WG_FUSED_CLIP_MAX + 1001;
    pair W = pair_rand(1, &n, -1, 1), G = pair_rand(1, &n, -1, 1), m1 = pair_rand(1, &n, -0.1, 0.1),
         m2 = pair_rand(1, &n, 0, 0.1);
    BOTH(lithe__op_adam_step(cpu, W.c, G.c, m1.c, m2.c, NULL, 0.5, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f, 0.9f),
         lithe__op_adam_step(dev, W.v, G.v, m1.v, m2.v, NULL, 0.5, 0.9f, 0.999f, 1e-8f, 0.01f, 1.0f, 0.9f));
    expect_pair("adam_step clip 0.5 n=263145 (unfused)", W, 1e-6, 1e-5);
    expect_pair("adam_step unfused G zeroed", G, 0, 0);
    pair_free(W);
    pair_free(G);
    pair_free(m1);
    pair_free(m2);
}

EXPORT int wgt_once(void) {
    if (wgt_begin()) return 1;
    t_loss_once();
    t_adam_step_large();
    return failures;
}

/* The GEMM's subgroup rule (webgpu_internal.h: 0 none, 1 up to 32 rows, 2 every GEMM); on >= 0
 * sets it (only where the adapter has subgroups). */
static bool sg_available;
EXPORT int wgt_subgroups(int on) {
    if (wgt_begin()) return -1;
    lithe__wg *wg = lithe__wg_of(dev);
    static bool probed;
    if (!probed) sg_available = wg->subgroups != 0, probed = true;
    if (on >= 0) wg->subgroups = sg_available ? on : 0;
    return wg->subgroups;
}

/* The GEMM cases of wgt_primitives with each variant the adapter offers (subgroups on, off), then
 * the vec4 kernel of CPU adapters on every case whose strides allow it (the others tiled). The
 * variants are set directly: wgt_subgroups() starts over (wgt_begin() zeroes the failures), which
 * made this test return 0 whatever failed before. */
EXPORT int wgt_gemm_variants(void) {
    if (wgt_begin()) return 1;
    (void)wgt_subgroups(-1); /* probes sg_available */
    failures = 0;
    lithe__wg *wg = lithe__wg_of(dev);
    int had = wg->subgroups, cpu_mode = wg->cpu_gemm;
    wg->cpu_gemm = 0;
    for (int on = sg_available; on >= 0; on--) {
        wg->subgroups = on ? 2 : 0; /* every GEMM through the variant */
        printf("gemm variant: %s\n", on ? "subgroups (gemm_sg.wgsl)" : "tiled (gemm.wgsl)");
        t_gemm();
    }
    wg->subgroups = 0;
    wg->cpu_gemm = 1;
    printf("gemm variant: %s\n", "vec4 (gemm_v4.wgsl, aligned cases)");
    t_gemm();
    wg->cpu_gemm = cpu_mode;
    wg->subgroups = had;
    return failures;
}
