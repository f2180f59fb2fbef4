/* Model tests: finite-difference gradient checks against float64 references, shape inference,
 * walk order, predict vs train behaviour, batched vs row-by-row, training determinism.
 *
 * Tolerances (float32 kernels vs float64 references):
 *   forward:   |lithe - ref| <= 1e-5 + 1e-4 * |ref|
 *   gradients: |lithe - FD(ref)| <= 1e-4 + 1e-3 * |FD|, FD central differences in float64, h = 1e-6
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"

#include "lithe.h"

static void close_or_fail(const char *what, size_t i, double got, double want, double atol, double rtol) {
    if (!(fabs(got - want) <= atol + rtol * fabs(want))) {
        print_error("%s[%zu]: got %.9g, expected %.9g (atol %g, rtol %g)\n", what, i, got, want, atol, rtol);
        fail();
    }
}

/* deterministic test data */
static uint64_t rs = 12345;
static double urand(void) {
    rs = rs * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rs >> 11) * 0x1p-53;
}
static void fill_rand(float *x, size_t n, double lo, double hi) {
    for (size_t i = 0; i < n; i++) x[i] = (float)(lo + (hi - lo) * urand());
}

static lithe_tensor *tensor2(int64_t r, int64_t c, const float *data) {
    lithe_tensor *t = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){r, c}, data, &t));
    return t;
}
static lithe_value *val(lithe_tensor *t) {
    lithe_value *v = NULL;
    OK(lithe_value_tensor(t, &v));
    return v;
}
static float *fdata(lithe_tensor *t) { return (float *)lithe_tensor_data(t); }
static lithe_tensor *param(lithe_model *m, const char *name) {
    lithe_tensor *t = NULL;
    OK(lithe_model_get_param(m, name, &t));
    return t;
}
static lithe_tensor *grad(lithe_model *m, const char *name) {
    lithe_tensor *t = NULL;
    OK(lithe_model_get_grad(m, name, &t));
    return t;
}

/* ---- float64 references ---- */

enum { ACT_NONE, ACT_RELU };

/* Y = act(X·Wᵀ + b): X (B, nI), W (nO, nI) */
static void ref_affine(int act, int B, int nI, int nO, const double *X, const double *W, const double *b, double *Y) {
    for (int i = 0; i < B; i++)
        for (int o = 0; o < nO; o++) {
            double s = b[o];
            for (int k = 0; k < nI; k++) s += X[i * nI + k] * W[o * nI + k];
            Y[i * nO + o] = act == ACT_RELU && s < 0 ? 0.0 : s;
        }
}

static void to_d(const float *f, double *d, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = f[i];
}

/* Scalar objective sum(Y ⊙ R) for an affine layer; FD over one of X, W, b. */
typedef struct affine_case {
    int act, B, nI, nO;
    double *X, *W, *b, *R;
} affine_case;

static double affine_obj(const affine_case *c) {
    double *Y = malloc(sizeof(double) * (size_t)(c->B * c->nO)), s = 0;
    ref_affine(c->act, c->B, c->nI, c->nO, c->X, c->W, c->b, Y);
    for (int i = 0; i < c->B * c->nO; i++) s += Y[i] * c->R[i];
    free(Y);
    return s;
}

static void fd_check(const char *what, affine_case *c, double *arr, const float *analytic, size_t n) {
    const double h = 1e-6;
    for (size_t i = 0; i < n; i++) {
        double keep = arr[i];
        arr[i] = keep + h;
        double up = affine_obj(c);
        arr[i] = keep - h;
        double down = affine_obj(c);
        arr[i] = keep;
        close_or_fail(what, i, analytic[i], (up - down) / (2 * h), 1e-4, 1e-3);
    }
}

/* Linear / Relu: forward vs float64, gradients vs finite differences of the float64 forward. */
static void check_dense(lithe_model *m, int act) {
    const int B = 7, nI = 13, nO = 5;
    float Xf[7 * 13], Rf[7 * 5];
    fill_rand(Xf, sizeof Xf / sizeof *Xf, -1, 1);
    fill_rand(Rf, sizeof Rf / sizeof *Rf, -1, 1);
    lithe_tensor *X = tensor2(B, nI, Xf), *R = tensor2(B, nO, Rf);
    lithe_value *Xv = val(X), *Rv = val(R), *Yv = NULL, *dXv = NULL;
    OK(lithe_model_initialize(m, Xv, NULL));
    /* a random bias too, so the check covers it */
    fill_rand(fdata(param(m, "b")), nO, -0.5, 0.5);
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, Xv, &Yv, &bp));
    OK(lithe_backprop_run(bp, Rv, &dXv));

    affine_case c = {act, B, nI, nO, malloc(sizeof(double) * B * nI), malloc(sizeof(double) * nO * nI),
                     malloc(sizeof(double) * nO), malloc(sizeof(double) * B * nO)};
    to_d(Xf, c.X, (size_t)(B * nI));
    to_d(fdata(param(m, "W")), c.W, (size_t)(nO * nI));
    to_d(fdata(param(m, "b")), c.b, (size_t)nO);
    to_d(Rf, c.R, (size_t)(B * nO));
    double Yref[7 * 5];
    ref_affine(act, B, nI, nO, c.X, c.W, c.b, Yref);
    const float *Y = fdata(lithe_value_get_tensor(Yv));
    for (int i = 0; i < B * nO; i++) close_or_fail("Y", (size_t)i, Y[i], Yref[i], 1e-5, 1e-4);
    fd_check("dX", &c, c.X, fdata(lithe_value_get_tensor(dXv)), (size_t)(B * nI));
    fd_check("dW", &c, c.W, fdata(grad(m, "W")), (size_t)(nO * nI));
    fd_check("db", &c, c.b, fdata(grad(m, "b")), (size_t)nO);

    /* a second backprop accumulates: the grads double */
    float W1 = fdata(grad(m, "W"))[3];
    OK(lithe_backprop_run(bp, Rv, NULL));
    close_or_fail("dW accumulated", 3, fdata(grad(m, "W"))[3], 2.0 * W1, 1e-6, 1e-6);

    free(c.X); free(c.W); free(c.b); free(c.R);
    lithe_backprop_free(bp);
    lithe_value_release(Xv); lithe_value_release(Rv); lithe_value_release(Yv); lithe_value_release(dXv);
    lithe_tensor_release(X); lithe_tensor_release(R);
}

static void test_linear_gradients(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_linear(&(lithe_dense_opts){.nO = 5}, &m));
    check_dense(m, ACT_NONE);
    lithe_model_free(m);
}

static void test_relu_gradients(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 5}, &m));
    check_dense(m, ACT_RELU);
    lithe_model_free(m);
}

/* ---- whole model: chain(Relu, Relu, Softmax) with mean cross-entropy, float64 FD ---- */

typedef struct net64 {
    int B, nI, h1, h2, nO;
    double *X, *W1, *b1, *W2, *b2, *W3, *b3;
    const int32_t *y;
    double temperature;
} net64;

/* mean cross-entropy of softmax((relu(relu(X W1ᵀ+b1) W2ᵀ+b2) W3ᵀ+b3)/T) — the loss whose gradient
 * wrt the logits·T is CategoricalCrossentropy's d = (P - onehot) / B */
static double net_loss(const net64 *n, double *P_out) {
    double *H1 = malloc(sizeof(double) * n->B * n->h1), *H2 = malloc(sizeof(double) * n->B * n->h2),
           *Z = malloc(sizeof(double) * n->B * n->nO), loss = 0;
    ref_affine(ACT_RELU, n->B, n->nI, n->h1, n->X, n->W1, n->b1, H1);
    ref_affine(ACT_RELU, n->B, n->h1, n->h2, H1, n->W2, n->b2, H2);
    ref_affine(ACT_NONE, n->B, n->h2, n->nO, H2, n->W3, n->b3, Z);
    for (int i = 0; i < n->B; i++) {
        double mx = -INFINITY, s = 0;
        for (int o = 0; o < n->nO; o++) mx = fmax(mx, Z[i * n->nO + o] / n->temperature);
        for (int o = 0; o < n->nO; o++) s += exp(Z[i * n->nO + o] / n->temperature - mx);
        for (int o = 0; o < n->nO; o++) {
            double p = exp(Z[i * n->nO + o] / n->temperature - mx) / s;
            if (P_out) P_out[i * n->nO + o] = p;
            if (o == n->y[i]) loss -= log(p);
        }
    }
    free(H1); free(H2); free(Z);
    return loss / n->B;
}

static void net_fd(const char *what, net64 *n, double *arr, const float *analytic, size_t count) {
    const double h = 1e-6;
    for (size_t i = 0; i < count; i++) {
        double keep = arr[i];
        arr[i] = keep + h;
        double up = net_loss(n, NULL);
        arr[i] = keep - h;
        double down = net_loss(n, NULL);
        arr[i] = keep;
        /* analytic grads carry the temperature factor Thinc's Softmax applies */
        close_or_fail(what, i, analytic[i], (up - down) / (2 * h), 1e-5, 1e-3);
    }
}

static double *dcopy(lithe_tensor *t) {
    size_t n = (size_t)lithe_tensor_numel(t);
    double *d = malloc(sizeof(double) * n);
    to_d(fdata(t), d, n);
    return d;
}

static void check_chain(float temperature) {
    enum { B = 6, nI = 7, H1 = 9, H2 = 8, nO = 4 };
    lithe_model *r1 = NULL, *r2 = NULL, *sm = NULL, *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = H1}, &r1));
    OK(lithe_relu(&(lithe_dense_opts){.nO = H2}, &r2));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = nO, .temperature = temperature}, &sm));
    OK(lithe_chain(3, (lithe_model *[]){r1, r2, sm}, &m));
    float Xf[B * nI];
    int32_t y[B] = {0, 3, 1, 2, 3, 0};
    fill_rand(Xf, B * nI, -1, 1);
    lithe_tensor *X = tensor2(B, nI, Xf), *labels = NULL, *d = NULL;
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){B}, y, &labels));
    lithe_value *Xv = val(X), *Yv = NULL, *dv = NULL, *dXv = NULL;
    OK(lithe_model_initialize(m, Xv, NULL));
    /* Softmax starts at zero (Thinc); give it and the biases values so every path matters */
    fill_rand(fdata(param(sm, "W")), nO * H2, -0.5, 0.5);
    fill_rand(fdata(param(sm, "b")), nO, -0.2, 0.2);
    fill_rand(fdata(param(r1, "b")), H1, 0.0, 0.2);
    fill_rand(fdata(param(r2, "b")), H2, 0.0, 0.2);
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, Xv, &Yv, &bp));
    float loss = 0;
    OK(lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(Yv), labels, &d, &loss));
    dv = val(d);
    OK(lithe_backprop_run(bp, dv, &dXv));

    net64 n = {B, nI, H1, H2, nO, NULL, NULL, NULL, NULL, NULL, NULL, NULL, y, temperature};
    n.X = malloc(sizeof(double) * B * nI);
    to_d(Xf, n.X, B * nI);
    n.W1 = dcopy(param(r1, "W")); n.b1 = dcopy(param(r1, "b"));
    n.W2 = dcopy(param(r2, "W")); n.b2 = dcopy(param(r2, "b"));
    n.W3 = dcopy(param(sm, "W")); n.b3 = dcopy(param(sm, "b"));
    double P[B * nO];
    net_loss(&n, P);
    const float *Y = fdata(lithe_value_get_tensor(Yv));
    for (int i = 0; i < B * nO; i++) close_or_fail("P", (size_t)i, Y[i], P[i], 1e-6, 1e-4);
    net_fd("dX", &n, n.X, fdata(lithe_value_get_tensor(dXv)), B * nI);
    net_fd("dW1", &n, n.W1, fdata(grad(r1, "W")), H1 * nI);
    net_fd("db1", &n, n.b1, fdata(grad(r1, "b")), H1);
    net_fd("dW2", &n, n.W2, fdata(grad(r2, "W")), H2 * H1);
    net_fd("db2", &n, n.b2, fdata(grad(r2, "b")), H2);
    net_fd("dW3", &n, n.W3, fdata(grad(sm, "W")), nO * H2);
    net_fd("db3", &n, n.b3, fdata(grad(sm, "b")), nO);

    free(n.X); free(n.W1); free(n.b1); free(n.W2); free(n.b2); free(n.W3); free(n.b3);
    lithe_backprop_free(bp);
    lithe_value_release(Xv); lithe_value_release(Yv); lithe_value_release(dv); lithe_value_release(dXv);
    lithe_tensor_release(X); lithe_tensor_release(labels); lithe_tensor_release(d);
    lithe_model_free(m);
}

static void test_chain_gradients(void **state) {
    (void)state;
    check_chain(1.0f);
}

static void test_chain_gradients_temperature(void **state) {
    (void)state;
    check_chain(2.0f);
}

/* ---- structure ---- */

static void test_shape_inference_and_walk(void **state) {
    (void)state;
    lithe_model *a = NULL, *b = NULL, *sm = NULL, *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 8, .dropout = 0.1f}, &a)); /* chain(relu, dropout) */
    OK(lithe_linear(&(lithe_dense_opts){.nO = 6}, &b));
    OK(lithe_softmax(NULL, &sm));
    OK(lithe_chain(3, (lithe_model *[]){a, b, sm}, &m));
    assert_string_equal(lithe_model_name(m), "relu>>dropout>>linear>>softmax");
    assert_string_equal(lithe_model_layer_type(m), "chain.v1");
    assert_int_equal(lithe_model_has_dim(m, "nI"), LITHE_HAS_UNSET);
    assert_int_equal(lithe_model_has_dim(m, "nO"), LITHE_HAS_UNSET);
    assert_int_equal(lithe_model_has_dim(m, "nX"), LITHE_HAS_NO);
    assert_int_equal(lithe_model_has_param(sm, "W"), LITHE_HAS_UNSET);

    /* Thinc's breadth-first order: chain, then its layers, then their children */
    lithe_model *nodes[8];
    size_t n = 0;
    OK(lithe_model_walk(m, nodes, 8, &n));
    assert_int_equal(n, 6);
    const char *want[] = {"relu>>dropout>>linear>>softmax", "relu>>dropout", "linear", "softmax", "relu", "dropout"};
    for (size_t i = 0; i < n; i++) assert_string_equal(lithe_model_name(nodes[i]), want[i]);
    /* every node has Thinc's shims list, empty for these layers */
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(lithe_model_n_shims(nodes[i]), 0);
        assert_null(lithe_model_shim(nodes[i], 0));
    }
    assert_int_equal(lithe_model_n_shims(NULL), 0);
    assert_null(lithe_shim_name(NULL));

    float Xf[4 * 5] = {0}, Yf[4 * 3] = {0};
    lithe_tensor *X = tensor2(4, 5, Xf), *Y = tensor2(4, 3, Yf);
    lithe_value *Xv = val(X), *Yv = val(Y);
    OK(lithe_model_initialize(m, Xv, Yv));
    int64_t d = 0;
    OK(lithe_model_get_dim(m, "nI", &d)); assert_int_equal(d, 5);
    OK(lithe_model_get_dim(m, "nO", &d)); assert_int_equal(d, 3);
    OK(lithe_model_get_dim(sm, "nI", &d)); assert_int_equal(d, 6);
    OK(lithe_model_get_dim(sm, "nO", &d)); assert_int_equal(d, 3);
    assert_int_equal(lithe_model_has_param(sm, "W"), LITHE_HAS_YES);
    const int64_t *ws = lithe_tensor_shape(param(nodes[4], "W"));
    assert_int_equal(ws[0], 8);
    assert_int_equal(ws[1], 5);
    /* Thinc's Softmax starts at zero, Relu with glorot-uniform in ±sqrt(6/(nO+nI)) */
    for (int i = 0; i < 18; i++) assert_true(fdata(param(sm, "W"))[i] == 0.0f);
    float lim = sqrtf(6.0f / 13.0f), mx = 0;
    for (int i = 0; i < 40; i++) mx = fmaxf(mx, fabsf(fdata(param(nodes[4], "W"))[i]));
    assert_true(mx <= lim && mx > 0.5f * lim);

    /* set_dropout_rate reaches the nested Dropout */
    OK(lithe_model_set_dropout_rate(m, 0.35f));
    double rate = 0;
    OK(lithe_model_get_attr_float(nodes[5], "dropout_rate", &rate));
    assert_true(fabs(rate - 0.35) < 1e-7);

    /* refs point into the tree */
    OK(lithe_model_set_ref(m, "output", sm));
    lithe_model *r = NULL;
    OK(lithe_model_get_ref(m, "output", &r));
    assert_ptr_equal(r, sm);

    lithe_value_release(Xv); lithe_value_release(Yv);
    lithe_tensor_release(X); lithe_tensor_release(Y);
    lithe_model_free(m);
}

static lithe_model *mlp(uint64_t seed, float dropout) {
    lithe_model *r1 = NULL, *r2 = NULL, *sm = NULL, *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 16, .dropout = dropout}, &r1));
    OK(lithe_relu(&(lithe_dense_opts){.nO = 16, .dropout = dropout}, &r2));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = 3}, &sm));
    OK(lithe_chain(3, (lithe_model *[]){r1, r2, sm}, &m));
    OK(lithe_model_set_seed(m, seed));
    float Xf[2 * 10] = {0};
    lithe_tensor *X = tensor2(2, 10, Xf);
    lithe_value *Xv = val(X);
    OK(lithe_model_initialize(m, Xv, NULL));
    lithe_value_release(Xv);
    lithe_tensor_release(X);
    return m;
}

static void test_predict_has_no_dropout_and_batch_equals_rows(void **state) {
    (void)state;
    lithe_model *m = mlp(7, 0.5f);
    lithe_model *sm = lithe_model_layer(m, 2);
    fill_rand(fdata(param(sm, "W")), 48, -1, 1);
    enum { B = 9 };
    float Xf[B * 10];
    fill_rand(Xf, B * 10, -1, 1);
    lithe_tensor *X = tensor2(B, 10, Xf), *P = NULL, *P2 = NULL;
    OK(lithe_model_predict_tensor(m, X, &P));
    OK(lithe_model_predict_tensor(m, X, &P2));
    /* predict is deterministic: no dropout at predict time */
    assert_memory_equal(fdata(P), fdata(P2), sizeof(float) * B * 3);
    for (int i = 0; i < B; i++) {
        lithe_tensor *row = NULL, *Pr = NULL;
        OK(lithe_tensor_slice(X, 0, i, i + 1, &row));
        OK(lithe_model_predict_tensor(m, row, &Pr));
        for (int o = 0; o < 3; o++) close_or_fail("row prediction", (size_t)(i * 3 + o), fdata(Pr)[o], fdata(P)[i * 3 + o], 1e-6, 1e-5);
        lithe_tensor_release(row);
        lithe_tensor_release(Pr);
    }
    /* training does drop: two begin_updates differ, and differ from predict */
    lithe_value *Xv = val(X), *Y1 = NULL, *Y2 = NULL;
    lithe_backprop *b1 = NULL, *b2 = NULL;
    OK(lithe_model_begin_update(m, Xv, &Y1, &b1));
    OK(lithe_model_begin_update(m, Xv, &Y2, &b2));
    assert_memory_not_equal(fdata(lithe_value_get_tensor(Y1)), fdata(lithe_value_get_tensor(Y2)), sizeof(float) * B * 3);
    lithe_backprop_free(b1); lithe_backprop_free(b2);
    lithe_value_release(Xv); lithe_value_release(Y1); lithe_value_release(Y2);
    lithe_tensor_release(X); lithe_tensor_release(P); lithe_tensor_release(P2);
    lithe_model_free(m);
}

static void test_dropout_mask(void **state) {
    (void)state;
    lithe_model *d = NULL;
    OK(lithe_dropout(0.25f, &d));
    OK(lithe_model_set_seed(d, 99));
    enum { N = 4000 };
    float *Xf = malloc(sizeof(float) * N), *Rf = malloc(sizeof(float) * N);
    fill_rand(Xf, N, 0.5, 1.5);
    fill_rand(Rf, N, -1, 1);
    lithe_tensor *X = tensor2(40, 100, Xf), *R = tensor2(40, 100, Rf);
    lithe_value *Xv = val(X), *Rv = val(R), *Yv = NULL, *dXv = NULL, *Pv = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_predict(d, Xv, &Pv));
    assert_ptr_equal(lithe_value_get_tensor(Pv), X); /* identity at predict time, no copy */
    OK(lithe_model_begin_update(d, Xv, &Yv, &bp));
    OK(lithe_backprop_run(bp, Rv, &dXv));
    const float *Y = fdata(lithe_value_get_tensor(Yv)), *dX = fdata(lithe_value_get_tensor(dXv));
    int dropped = 0;
    for (int i = 0; i < N; i++) {
        float mask = Y[i] == 0.0f ? 0.0f : 1.0f / 0.75f;
        if (mask == 0.0f) dropped++;
        else close_or_fail("kept", (size_t)i, Y[i], Xf[i] / 0.75, 1e-6, 1e-6);
        close_or_fail("dX = dY * mask", (size_t)i, dX[i], Rf[i] * mask, 1e-6, 1e-6);
    }
    /* 1000 expected drops; 5 sigma = 5 * sqrt(4000 * .25 * .75) ≈ 137 */
    assert_in_range(dropped, 1000 - 137, 1000 + 137);
    lithe_backprop_free(bp);
    lithe_value_release(Xv); lithe_value_release(Rv); lithe_value_release(Yv); lithe_value_release(dXv);
    lithe_value_release(Pv);
    lithe_tensor_release(X); lithe_tensor_release(R);
    free(Xf); free(Rf);
    lithe_model_free(d);
}

static void test_unnormalized_softmax(void **state) {
    (void)state;
    lithe_model *sm = NULL;
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = 3, .nI = 2, .unnormalized_outputs = true}, &sm));
    OK(lithe_model_initialize(sm, NULL, NULL));
    float Wf[6] = {1, 2, -1, 0.5f, 0, 3}, bf[3] = {0.1f, 0.2f, 0.3f}, Xf[2] = {1, -1};
    lithe_tensor *W = tensor2(3, 2, Wf), *b = NULL, *X = tensor2(1, 2, Xf), *Y = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 1, (int64_t[]){3}, bf, &b));
    OK(lithe_model_set_param(sm, "W", W));
    OK(lithe_model_set_param(sm, "b", b));
    OK(lithe_model_predict_tensor(sm, X, &Y));
    /* logits, not probabilities */
    close_or_fail("logit", 0, fdata(Y)[0], -1 + 0.1, 1e-6, 0);
    close_or_fail("logit", 1, fdata(Y)[1], -1.5 + 0.2, 1e-6, 0);
    close_or_fail("logit", 2, fdata(Y)[2], -3 + 0.3, 1e-6, 0);
    lithe_tensor_release(W); lithe_tensor_release(b); lithe_tensor_release(X); lithe_tensor_release(Y);
    lithe_model_free(sm);
}

/* Same seed, same run: two trainings give identical weights; another seed differs. */
static void train_steps(lithe_model *m, int steps, float *W_out) {
    lithe_optimizer_opts o = lithe_adam_defaults();
    o.learn_rate = 0.01;
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&o, &opt));
    enum { B = 12 };
    float Xf[B * 10];
    int32_t y[B];
    uint64_t keep = rs;
    rs = 777;
    fill_rand(Xf, B * 10, -1, 1);
    for (int i = 0; i < B; i++) y[i] = (int32_t)(Xf[i * 10] > 0) + (int32_t)(Xf[i * 10 + 1] > 0);
    rs = keep;
    lithe_tensor *X = tensor2(B, 10, Xf), *labels = NULL;
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){B}, y, &labels));
    lithe_value *Xv = val(X);
    float first = 0, last = 0;
    for (int s = 0; s < steps; s++) {
        lithe_value *Yv = NULL, *dv = NULL;
        lithe_backprop *bp = NULL;
        lithe_tensor *d = NULL;
        float loss = 0;
        OK(lithe_model_begin_update(m, Xv, &Yv, &bp));
        OK(lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(Yv), labels, &d, &loss));
        dv = val(d);
        OK(lithe_backprop_run(bp, dv, NULL));
        OK(lithe_model_finish_update(m, opt));
        if (s == 0) first = loss;
        last = loss;
        lithe_backprop_free(bp);
        lithe_value_release(Yv); lithe_value_release(dv); lithe_tensor_release(d);
    }
    assert_true(last < 0.5f * first); /* it learns */
    /* finish_update zeroed every grad and counted one update per step */
    lithe_model *r1 = lithe_model_layer(lithe_model_layer(m, 0), 0);
    for (int i = 0; i < 16 * 10; i++) assert_true(fdata(grad(r1, "W"))[i] == 0.0f);
    assert_int_equal(lithe_optimizer_nr_update(opt, r1, "W"), steps);
    memcpy(W_out, fdata(param(r1, "W")), sizeof(float) * 160);
    lithe_value_release(Xv);
    lithe_tensor_release(X); lithe_tensor_release(labels);
    lithe_optimizer_free(opt);
}

static void test_same_seed_same_run(void **state) {
    (void)state;
    float a[160], b[160], c[160];
    lithe_model *m1 = mlp(42, 0.2f), *m2 = mlp(42, 0.2f), *m3 = mlp(43, 0.2f);
    train_steps(m1, 60, a);
    train_steps(m2, 60, b);
    train_steps(m3, 60, c);
    assert_memory_equal(a, b, sizeof a);
    assert_memory_not_equal(a, c, sizeof a);
    lithe_model_free(m1); lithe_model_free(m2); lithe_model_free(m3);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear_gradients),
        cmocka_unit_test(test_relu_gradients),
        cmocka_unit_test(test_chain_gradients),
        cmocka_unit_test(test_chain_gradients_temperature),
        cmocka_unit_test(test_shape_inference_and_walk),
        cmocka_unit_test(test_predict_has_no_dropout_and_batch_equals_rows),
        cmocka_unit_test(test_dropout_mask),
        cmocka_unit_test(test_unnormalized_softmax),
        cmocka_unit_test(test_same_seed_same_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
