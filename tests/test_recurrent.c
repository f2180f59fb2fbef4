/* Recurrent layers, attention and similarity against the real Thinc 8.1.7
 * (tests/golden/gen_recurrent_goldens.py): LSTM at depth 1 and 2, one and two directions, unequal
 * lengths with a length-1 sequence and non-zero initial states — forward against Thinc's, the
 * gradient against float64 torch autograd of the same forward (Thinc's NumpyOps gradient is not
 * exact, see core/layers/lstm.c) and against finite differences; bidirectional,
 * ParametricAttention (a zero-length sequence), CauchySimilarity and siamese against Thinc's
 * outputs and gradients; Thinc's to_bytes of each loading into lithe and written back byte for
 * byte, .lithe round trips; batched == one sequence at a time, empty batches, clear errors. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"
#include "golden/golden.h"
#include "failing_alloc.h"

/* ---- helpers ------------------------------------------------------------------------------- */

/* Out-pointers for calls expected to fail (they set them to NULL, so a live value must not be passed). */
static lithe_value *junk_v;
static lithe_model *junk_m;

static float *read_f32(const lithe_tensor *t) {
    int64_t n = lithe_tensor_numel(t);
    float *b = malloc(sizeof(float) * (size_t)(n + 1));
    OK(lithe_tensor_read(t, b, sizeof(float) * (size_t)n));
    return b;
}

static void expect_error(lithe_status got, lithe_status want, const char *needle) {
    if (got != want || !strstr(lithe_last_error(), needle)) {
        print_error("expected %s mentioning '%s', got %s: %s\n", lithe_status_str(want), needle, lithe_status_str(got),
                    lithe_last_error());
        fail();
    }
}

/* m's Thinc bytes equal Thinc's; Thinc's bytes load into `fresh` (built the same way) and write
 * back identically; m survives a .lithe round trip writing the same Thinc bytes. */
static void expect_bytes(lithe_model *m, lithe_model *fresh, const char *golden_name) {
    const golden *g = get("%s", golden_name);
    uint8_t *want = bytes_of(g), *got = NULL, *again = NULL, *file = NULL, *third = NULL;
    size_t n = 0, n2 = 0, nf = 0, n3 = 0;
    OK(lithe_model_to_thinc_bytes(m, &got, &n));
    assert_int_equal(n, (size_t)g->n);
    assert_memory_equal(got, want, n);
    OK(lithe_model_from_thinc_bytes(fresh, want, (size_t)g->n));
    OK(lithe_model_to_thinc_bytes(fresh, &again, &n2));
    assert_int_equal(n2, (size_t)g->n);
    assert_memory_equal(again, want, n2);
    lithe_model *loaded = NULL;
    OK(lithe_model_save_bytes(m, NULL, &file, &nf));
    OK(lithe_model_load_bytes(file, nf, &loaded));
    OK(lithe_model_to_thinc_bytes(loaded, &third, &n3));
    assert_int_equal(n3, (size_t)g->n);
    assert_memory_equal(third, want, n3);
    lithe_model_free(loaded);
    lithe_buffer_free(got);
    lithe_buffer_free(again);
    lithe_buffer_free(file);
    lithe_buffer_free(third);
    free(want);
}

static lithe_value *padded_of(const char *p) {
    lithe_tensor *d = tensor_of(get("%s_X", p)), *s = tensor_of(get("%s_size_at_t", p)),
                 *l = tensor_of(get("%s_lengths", p)), *i = tensor_of(get("%s_indices", p));
    lithe_value *v = NULL;
    OK(lithe_value_padded(d, s, l, i, &v));
    lithe_tensor_release(d);
    lithe_tensor_release(s);
    lithe_tensor_release(l);
    lithe_tensor_release(i);
    return v;
}

/* A Padded like `like` (same size_at_t, lengths, indices) with new data. */
static lithe_value *padded_like(const lithe_value *like, lithe_tensor *data) {
    lithe_value *v = NULL;
    OK(lithe_value_padded(data, lithe_value_field(like, "size_at_t"), lithe_value_field(like, "lengths"),
                          lithe_value_field(like, "indices"), &v));
    lithe_tensor_release(data);
    return v;
}

static void set_param(lithe_model *m, const char *name, const golden *g) {
    lithe_tensor *t = tensor_of(g);
    OK(lithe_model_set_param(m, name, t));
    lithe_tensor_release(t);
}

typedef struct lstm_case {
    const char *p;
    int64_t nO, nI, depth;
    bool bi;
} lstm_case;

static const lstm_case cases[] = {
    {"l1", 4, 3, 1, false}, {"l2", 4, 3, 2, false}, {"b1", 4, 3, 1, true}, {"b2", 6, 2, 2, true}, {"one", 2, 3, 1, true},
};

static lithe_model *lstm_of(const lstm_case *c, bool with_params) {
    lithe_model *m = NULL;
    OK(lithe_lstm(&(lithe_lstm_opts){.nO = c->nO, .nI = c->nI, .bi = c->bi, .depth = c->depth}, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    if (with_params) {
        set_param(m, "LSTM", get("%s_W", c->p));
        set_param(m, "HC0", get("%s_HC0", c->p));
    }
    return m;
}

/* sum(Y * dY) in double, Y the model's output data at predict time. */
static double lstm_loss(lithe_model *m, const lithe_value *X, const float *dY) {
    lithe_value *Y = NULL;
    OK(lithe_model_predict(m, X, &Y));
    lithe_tensor *t = lithe_value_get_tensor(Y);
    float *y = read_f32(t);
    double s = 0;
    for (int64_t i = 0; i < lithe_tensor_numel(t); i++) s += (double)y[i] * dY[i];
    free(y);
    lithe_value_release(Y);
    return s;
}

/* ---- LSTM ------------------------------------------------------------------------------------ */

static void test_lstm_goldens(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const lstm_case *c = &cases[k];
        lithe_model *m = lstm_of(c, true);
        lithe_value *X = padded_of(c->p), *Y = NULL, *dX = NULL, *Yp = NULL;
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        expect_close(c->p, lithe_value_get_tensor(Y), get("%s_Y", c->p), 2e-6, 1e-5);
        OK(lithe_model_predict(m, X, &Yp));
        expect_close("predict", lithe_value_get_tensor(Yp), get("%s_predict", c->p), 2e-6, 1e-5);
        assert_int_equal(lithe_value_kind_of(Y), LITHE_VALUE_PADDED);
        lithe_value *dY = padded_like(X, tensor_of(get("%s_dY", c->p)));
        OK(lithe_backprop_run(bp, dY, &dX));
        expect_close("dX vs float64 autograd", lithe_value_get_tensor(dX), get("%s_ref_dX", c->p), 1e-5, 1e-4);
        lithe_tensor *g = NULL;
        OK(lithe_model_get_grad(m, "LSTM", &g));
        expect_close("dLSTM vs float64 autograd", g, get("%s_ref_dW", c->p), 1e-5, 1e-4);
        /* HC0 gets no gradient, as in Thinc */
        assert_int_equal(lithe_model_get_grad(m, "HC0", &g) == LITHE_OK && g != NULL, false);
        /* Thinc's bytes, both ways, and the .lithe round trip */
        lithe_model *fresh = lstm_of(c, false);
        char name[32];
        snprintf(name, sizeof name, "%s_bytes", c->p);
        expect_bytes(m, fresh, name);
        lithe_value *Y2 = NULL;
        OK(lithe_model_predict(fresh, X, &Y2));
        expect_close("Y from Thinc's bytes", lithe_value_get_tensor(Y2), get("%s_Y", c->p), 2e-6, 1e-5);
        lithe_value_release(Y2);
        lithe_model_free(fresh);
        lithe_backprop_free(bp);
        lithe_value_release(X);
        lithe_value_release(Y);
        lithe_value_release(Yp);
        lithe_value_release(dY);
        lithe_value_release(dX);
        lithe_model_free(m);
    }
}

/* Central differences of sum(Y * dY) in float32 against the analytic gradient, on a spread of
 * weights and inputs (the float64 reference above is the tight check; this one is independent of
 * the golden script). */
static void test_lstm_finite_differences(void **state) {
    (void)state;
    for (size_t k = 0; k < 4; k++) {
        const lstm_case *c = &cases[k];
        lithe_model *m = lstm_of(c, true);
        lithe_value *X = padded_of(c->p), *Y = NULL, *dX = NULL;
        lithe_backprop *bp = NULL;
        const golden *gdY = get("%s_dY", c->p);
        float *dYh = malloc(sizeof(float) * (size_t)gdY->n);
        for (int64_t i = 0; i < gdY->n; i++) dYh[i] = (float)gdY->v[i];
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        lithe_value *dY = padded_like(X, tensor_of(gdY));
        OK(lithe_backprop_run(bp, dY, &dX));
        lithe_tensor *W = NULL, *G = NULL;
        OK(lithe_model_get_param(m, "LSTM", &W));
        OK(lithe_model_get_grad(m, "LSTM", &G));
        float *w = lithe_tensor_data(W), *grad = read_f32(G);
        int64_t P = lithe_tensor_numel(W);
        const float eps = 1e-2f;
        for (int64_t i = 0; i < P; i += P / 23 + 1) {
            float keep = w[i];
            w[i] = keep + eps;
            double up = lstm_loss(m, X, dYh);
            w[i] = keep - eps;
            double down = lstm_loss(m, X, dYh);
            w[i] = keep;
            double fd = (up - down) / (2.0 * eps);
            if (fabs(fd - grad[i]) > 2e-3 + 2e-2 * fabs(fd)) {
                print_error("%s: dLSTM[%lld] analytic %g, finite differences %g\n", c->p, (long long)i, grad[i], fd);
                fail();
            }
        }
        lithe_tensor *Xd = lithe_value_get_tensor(X);
        float *x = lithe_tensor_data(Xd), *dx = read_f32(lithe_value_get_tensor(dX));
        for (int64_t i = 0; i < lithe_tensor_numel(Xd); i += 5) {
            float keep = x[i];
            x[i] = keep + eps;
            double up = lstm_loss(m, X, dYh);
            x[i] = keep - eps;
            double down = lstm_loss(m, X, dYh);
            x[i] = keep;
            double fd = (up - down) / (2.0 * eps);
            if (fabs(fd - dx[i]) > 2e-3 + 2e-2 * fabs(fd)) {
                print_error("%s: dX[%lld] analytic %g, finite differences %g\n", c->p, (long long)i, dx[i], fd);
                fail();
            }
        }
        free(grad);
        free(dx);
        free(dYh);
        lithe_backprop_free(bp);
        lithe_value_release(X);
        lithe_value_release(Y);
        lithe_value_release(dY);
        lithe_value_release(dX);
        lithe_model_free(m);
    }
}

/* Each sequence alone (a Padded of B = 1) gives the same rows as the batch. */
static void test_lstm_batched_equals_single(void **state) {
    (void)state;
    const lstm_case *c = &cases[3]; /* two layers, two directions */
    lithe_model *m = lstm_of(c, true);
    lithe_value *X = padded_of(c->p), *Y = NULL;
    OK(lithe_model_predict(m, X, &Y));
    const golden *gs = get("%s_size_at_t", c->p), *gX = get("%s_X", c->p);
    int64_t T = gX->shape[0], B = gX->shape[1], nI = gX->shape[2];
    float *x = read_f32(lithe_value_get_tensor(X)), *y = read_f32(lithe_value_get_tensor(Y));
    for (int64_t b = 0; b < B; b++) {
        int64_t L = 0;
        for (int64_t t = 0; t < T; t++) L += gs->v[t] > b;
        float *xs = malloc(sizeof(float) * (size_t)(L * nI));
        for (int64_t t = 0; t < L; t++) memcpy(xs + t * nI, x + (t * B + b) * nI, sizeof(float) * (size_t)nI);
        int32_t *ones = malloc(sizeof(int32_t) * (size_t)L), one = (int32_t)L, zero = 0;
        for (int64_t t = 0; t < L; t++) ones[t] = 1;
        lithe_tensor *d = NULL, *s = NULL, *l = NULL, *ix = NULL;
        OK(lithe_tensor_from_data(LITHE_F32, 3, (int64_t[]){L, 1, nI}, xs, &d));
        OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){L}, ones, &s));
        OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){1}, &one, &l));
        OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){1}, &zero, &ix));
        lithe_value *Xs = NULL, *Ys = NULL;
        OK(lithe_value_padded(d, s, l, ix, &Xs));
        OK(lithe_model_predict(m, Xs, &Ys));
        float *ys = read_f32(lithe_value_get_tensor(Ys));
        for (int64_t t = 0; t < L; t++)
            for (int64_t j = 0; j < c->nO; j++)
                assert_float_equal(ys[t * c->nO + j], y[(t * B + b) * c->nO + j], 1e-6);
        free(ys);
        free(xs);
        free(ones);
        lithe_value_release(Xs);
        lithe_value_release(Ys);
        lithe_tensor_release(d);
        lithe_tensor_release(s);
        lithe_tensor_release(l);
        lithe_tensor_release(ix);
    }
    free(x);
    free(y);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_model_free(m);
}

static void test_lstm_edges_and_errors(void **state) {
    (void)state;
    lithe_model *m = lstm_of(&cases[1], true);
    /* an empty batch: (0, 0, nI) in, (0, 0, nO) out, a (0, 0, nI) gradient back */
    lithe_tensor *d = NULL, *s = NULL, *l = NULL, *ix = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 3, (int64_t[]){0, 0, 3}, &d));
    OK(lithe_tensor_new(NULL, LITHE_I32, 1, (int64_t[]){0}, &s));
    OK(lithe_tensor_new(NULL, LITHE_I32, 1, (int64_t[]){0}, &l));
    OK(lithe_tensor_new(NULL, LITHE_I32, 1, (int64_t[]){0}, &ix));
    lithe_value *E = NULL, *Y = NULL, *dX = NULL;
    OK(lithe_value_padded(d, s, l, ix, &E));
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, E, &Y, &bp));
    assert_int_equal(lithe_tensor_shape(lithe_value_get_tensor(Y))[2], 4);
    assert_int_equal(lithe_tensor_numel(lithe_value_get_tensor(Y)), 0);
    OK(lithe_backprop_run(bp, Y, &dX));
    assert_int_equal(lithe_tensor_shape(lithe_value_get_tensor(dX))[2], 3);
    lithe_backprop_free(bp);
    lithe_value_release(Y);
    lithe_value_release(dX);
    /* wrong kind, wrong width, unsorted sizes, a gradient of the wrong shape */
    lithe_tensor *x2 = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){2, 3}, &x2));
    lithe_value *T2 = NULL;
    OK(lithe_value_tensor(x2, &T2));
    expect_error(lithe_model_predict(m, T2, &junk_v), LITHE_ERR_INVALID_ARG, "lstm: expected a Padded");
    lithe_tensor *w5 = NULL, *sat = NULL, *len = NULL, *ind = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 3, (int64_t[]){2, 2, 5}, &w5));
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){2}, (int32_t[]){2, 1}, &sat));
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){2}, (int32_t[]){2, 1}, &len));
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){2}, (int32_t[]){0, 1}, &ind));
    lithe_value *W5 = NULL;
    OK(lithe_value_padded(w5, sat, len, ind, &W5));
    expect_error(lithe_model_predict(m, W5, &junk_v), LITHE_ERR_SHAPE, "input width 5 does not match nI=3");
    lithe_tensor *w3 = NULL, *bad = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 3, (int64_t[]){2, 2, 3}, &w3));
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){2}, (int32_t[]){1, 2}, &bad));
    lithe_value *U = NULL;
    if (lithe_value_padded(w3, bad, len, ind, &U) == LITHE_OK) {
        expect_error(lithe_model_predict(m, U, &junk_v), LITHE_ERR_VALUE, "non-increasing");
        lithe_value_release(U);
    }
    lithe_value *G = NULL, *X = padded_of("l2");
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    expect_error(lithe_backprop_run(bp, T2, &junk_v), LITHE_ERR_INVALID_ARG, "expected a Padded gradient");
    OK(lithe_value_padded(w3, sat, len, ind, &G));
    expect_error(lithe_backprop_run(bp, G, &junk_v), LITHE_ERR_SHAPE, "gradient is (2, 2, 3)");
    expect_error(lithe_lstm(&(lithe_lstm_opts){.nO = 3, .bi = true}, &junk_m), LITHE_ERR_VALUE, "even");
    expect_error(lithe_lstm(&(lithe_lstm_opts){.nO = 3, .depth = -1}, &junk_m), LITHE_ERR_VALUE, "depth");
    lithe_backprop_free(bp);
    lithe_value_release(Y);
    lithe_value_release(X);
    lithe_value_release(G);
    lithe_value_release(W5);
    lithe_value_release(T2);
    lithe_value_release(E);
    lithe_tensor_release(d);
    lithe_tensor_release(s);
    lithe_tensor_release(l);
    lithe_tensor_release(ix);
    lithe_tensor_release(x2);
    lithe_tensor_release(w5);
    lithe_tensor_release(w3);
    lithe_tensor_release(bad);
    lithe_tensor_release(sat);
    lithe_tensor_release(len);
    lithe_tensor_release(ind);
    lithe_model_free(m);
}

/* Dropout: a predict ignores it; training uses one mask over the weights, whose gradient is
 * masked too — so the gradient of a weight the mask zeroed is zero. */
static void test_lstm_dropout(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_lstm(&(lithe_lstm_opts){.nO = 4, .nI = 3, .dropout = 0.5f}, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    set_param(m, "LSTM", get("l1_W"));
    set_param(m, "HC0", get("l1_HC0"));
    lithe_value *X = padded_of("l1"), *Y = NULL, *dX = NULL, *Yp = NULL;
    OK(lithe_model_predict(m, X, &Yp));
    expect_close("predict ignores dropout", lithe_value_get_tensor(Yp), get("l1_predict"), 2e-6, 1e-5);
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    lithe_value *dY = padded_like(X, tensor_of(get("l1_dY")));
    OK(lithe_backprop_run(bp, dY, &dX));
    lithe_tensor *g = NULL;
    OK(lithe_model_get_grad(m, "LSTM", &g));
    float *gr = read_f32(g);
    int64_t zeros = 0, P = lithe_tensor_numel(g);
    for (int64_t i = 0; i < P; i++) zeros += gr[i] == 0.0f;
    assert_true(zeros > P / 4 && zeros < 3 * P / 4); /* about half the weights dropped */
    free(gr);
    lithe_backprop_free(bp);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(Yp);
    lithe_value_release(dY);
    lithe_value_release(dX);
    lithe_model_free(m);
}

/* The flat weight vector trains: two stacked directions with weight dropout, Adam, a squared
 * error against a fixed target on the l1 batch (padding excluded); the loss falls by half. */
static void test_lstm_learns(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_lstm(&(lithe_lstm_opts){.nO = 4, .nI = 3, .bi = true, .depth = 2, .dropout = 0.1f}, &m));
    OK(lithe_model_set_seed(m, 3));
    OK(lithe_model_initialize(m, NULL, NULL));
    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.learn_rate = 0.03;
    oo.use_averages = false;
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&oo, &opt));
    lithe_value *X = padded_of("l1");
    const golden *gs = get("l1_size_at_t"), *gX = get("l1_X");
    int64_t T = gX->shape[0], B = gX->shape[1], n = T * B * 4;
    float *target = malloc(sizeof(float) * (size_t)n), *d = malloc(sizeof(float) * (size_t)n);
    for (int64_t i = 0; i < n; i++) target[i] = 0.6f * sinf((float)(i % 7) + 0.5f * (float)(i / 16));
    double first = 0, last = 0;
    for (int step = 0; step < 80; step++) {
        lithe_value *Y = NULL, *dX = NULL;
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        float *y = read_f32(lithe_value_get_tensor(Y));
        double loss = 0;
        for (int64_t t = 0; t < T; t++)
            for (int64_t b = 0; b < B; b++)
                for (int64_t j = 0; j < 4; j++) {
                    int64_t i = (t * B + b) * 4 + j;
                    d[i] = b < (int64_t)gs->v[t] ? y[i] - target[i] : 0.0f;
                    loss += 0.5 * (double)d[i] * d[i];
                }
        if (step == 0) first = loss;
        last = loss;
        lithe_tensor *dt = NULL;
        OK(lithe_tensor_from_data(LITHE_F32, 3, (int64_t[]){T, B, 4}, d, &dt));
        lithe_value *dY = padded_like(X, dt);
        OK(lithe_backprop_run(bp, dY, &dX));
        OK(lithe_model_finish_update(m, opt));
        free(y);
        lithe_value_release(dY);
        lithe_value_release(dX);
        lithe_value_release(Y);
        lithe_backprop_free(bp);
    }
    if (!(last < 0.5 * first)) {
        print_error("loss %g -> %g: did not halve\n", first, last);
        fail();
    }
    free(target);
    free(d);
    lithe_value_release(X);
    lithe_optimizer_free(opt);
    lithe_model_free(m);
}

static void test_bidirectional(void **state) {
    (void)state;
    lithe_model *l2r = NULL, *m = NULL;
    OK(lithe_lstm(&(lithe_lstm_opts){.nO = 2, .nI = 3}, &l2r));
    OK(lithe_bidirectional(l2r, NULL, &m));
    assert_string_equal(lithe_model_name(m), "bilstm");
    OK(lithe_model_initialize(m, NULL, NULL));
    for (int k = 0; k < 2; k++) set_param(lithe_model_layer(m, (size_t)k), "LSTM", get("bi_W%d", k));
    lithe_value *X = padded_of("bi"), *Z = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Z, &bp));
    expect_close("bidirectional", lithe_value_get_tensor(Z), get("bi_Z"), 2e-6, 1e-5);
    /* the backward, Thinc's way: both children get dZ[..., :half]; dX is their sum */
    const int64_t *zs = lithe_tensor_shape(lithe_value_get_tensor(Z));
    int64_t n = zs[0] * zs[1] * zs[2], half = zs[2] / 2;
    float *dz = malloc(sizeof(float) * (size_t)n), *dh = malloc(sizeof(float) * (size_t)(n / 2));
    for (int64_t i = 0; i < n; i++) dz[i] = (float)((i * 7) % 5) - 2.0f;
    for (int64_t r = 0; r < n / zs[2]; r++) memcpy(dh + r * half, dz + r * zs[2], sizeof(float) * (size_t)half);
    lithe_tensor *tz = NULL, *th = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 3, zs, dz, &tz));
    OK(lithe_tensor_from_data(LITHE_F32, 3, (int64_t[]){zs[0], zs[1], half}, dh, &th));
    lithe_value *dZ = padded_like(X, tz), *dH = padded_like(X, th);
    OK(lithe_backprop_run(bp, dZ, &dX));
    float *want = calloc((size_t)lithe_tensor_numel(lithe_value_get_tensor(X)), sizeof(float));
    for (int k = 0; k < 2; k++) {
        lithe_model *c = lithe_model_layer(m, (size_t)k);
        lithe_value *Yc = NULL, *dXc = NULL;
        lithe_backprop *bc = NULL;
        OK(lithe_model_begin_update(c, X, &Yc, &bc));
        OK(lithe_backprop_run(bc, dH, &dXc));
        float *v = read_f32(lithe_value_get_tensor(dXc));
        for (int64_t i = 0; i < lithe_tensor_numel(lithe_value_get_tensor(dXc)); i++) want[i] += v[i];
        free(v);
        lithe_backprop_free(bc);
        lithe_value_release(Yc);
        lithe_value_release(dXc);
    }
    float *got = read_f32(lithe_value_get_tensor(dX));
    for (int64_t i = 0; i < lithe_tensor_numel(lithe_value_get_tensor(dX)); i++)
        assert_float_equal(got[i], want[i], 1e-6);
    lithe_model *l = NULL, *fresh = NULL;
    OK(lithe_lstm(&(lithe_lstm_opts){.nO = 2, .nI = 3}, &l));
    OK(lithe_bidirectional(l, NULL, &fresh));
    OK(lithe_model_initialize(fresh, NULL, NULL));
    expect_bytes(m, fresh, "bi_bytes");
    free(dz);
    free(dh);
    free(want);
    free(got);
    lithe_backprop_free(bp);
    lithe_value_release(X);
    lithe_value_release(Z);
    lithe_value_release(dX);
    lithe_value_release(dZ);
    lithe_value_release(dH);
    lithe_model_free(fresh);
    lithe_model_free(m);
}

/* ---- attention and similarity ----------------------------------------------------------------- */

static void test_parametric_attention(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_parametric_attention(4, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    set_param(m, "Q", get("att_Q"));
    lithe_tensor *x = tensor_of(get("att_X")), *len = tensor_of(get("att_lengths"));
    lithe_value *X = NULL, *Y = NULL, *dX = NULL, *dY = NULL;
    OK(lithe_value_ragged(x, len, &X));
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    expect_close("attention Y", lithe_value_get_tensor(Y), get("att_Y"), 1e-6, 1e-5);
    lithe_tensor *dy = tensor_of(get("att_dY"));
    OK(lithe_value_ragged(dy, len, &dY));
    OK(lithe_backprop_run(bp, dY, &dX));
    expect_close("attention dX", lithe_value_get_tensor(dX), get("att_dX"), 1e-6, 1e-5);
    lithe_tensor *g = NULL;
    OK(lithe_model_get_grad(m, "Q", &g));
    expect_close("attention dQ", g, get("att_dQ"), 1e-6, 1e-5);
    lithe_model *fresh = NULL;
    OK(lithe_parametric_attention(4, &fresh));
    OK(lithe_model_initialize(fresh, NULL, NULL));
    expect_bytes(m, fresh, "att_bytes");
    /* batched == one sequence at a time */
    const golden *gl = get("att_lengths");
    float *xs = read_f32(x), *ys = read_f32(lithe_value_get_tensor(Y));
    int64_t r0 = 0;
    for (int64_t b = 0; b < gl->n; b++) {
        int64_t n = (int64_t)gl->v[b];
        int32_t one = (int32_t)n;
        lithe_tensor *xb = NULL, *lb = NULL;
        OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){n, 4}, xs + r0 * 4, &xb));
        OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){1}, &one, &lb));
        lithe_value *Xb = NULL, *Yb = NULL;
        OK(lithe_value_ragged(xb, lb, &Xb));
        OK(lithe_model_predict(m, Xb, &Yb));
        float *yb = read_f32(lithe_value_get_tensor(Yb));
        for (int64_t i = 0; i < n * 4; i++) assert_float_equal(yb[i], ys[r0 * 4 + i], 1e-7);
        free(yb);
        lithe_value_release(Xb);
        lithe_value_release(Yb);
        lithe_tensor_release(xb);
        lithe_tensor_release(lb);
        r0 += n;
    }
    /* an empty batch, and errors */
    lithe_tensor *e = NULL, *el = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){0, 4}, &e));
    OK(lithe_tensor_new(NULL, LITHE_I32, 1, (int64_t[]){0}, &el));
    lithe_value *E = NULL, *EY = NULL, *T = NULL;
    OK(lithe_value_ragged(e, el, &E));
    OK(lithe_model_predict(m, E, &EY));
    assert_int_equal(lithe_tensor_numel(lithe_value_get_tensor(EY)), 0);
    OK(lithe_value_tensor(x, &T));
    expect_error(lithe_model_predict(m, T, &junk_v), LITHE_ERR_INVALID_ARG, "para-attn: expected a Ragged");
    lithe_tensor *w5 = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){6, 5}, &w5));
    lithe_value *W5 = NULL;
    OK(lithe_value_ragged(w5, len, &W5));
    expect_error(lithe_model_predict(m, W5, &junk_v), LITHE_ERR_SHAPE, "input width 5 does not match nO=4");
    free(xs);
    free(ys);
    lithe_value_release(W5);
    lithe_tensor_release(w5);
    lithe_value_release(T);
    lithe_value_release(E);
    lithe_value_release(EY);
    lithe_tensor_release(e);
    lithe_tensor_release(el);
    lithe_backprop_free(bp);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(dY);
    lithe_value_release(dX);
    lithe_tensor_release(x);
    lithe_tensor_release(len);
    lithe_tensor_release(dy);
    lithe_model_free(fresh);
    lithe_model_free(m);
}

static lithe_value *pair_of(const char *a, const char *b) {
    lithe_value *v[2] = {value_of(get("%s", a)), value_of(get("%s", b))}, *t = NULL;
    OK(lithe_value_tuple(2, v, &t));
    lithe_value_release(v[0]);
    lithe_value_release(v[1]);
    return t;
}

static void test_cauchy_similarity(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_cauchy_similarity(0, &m));
    lithe_value *X = pair_of("cs_X1", "cs_X2"), *Y = NULL, *dX = NULL;
    OK(lithe_model_initialize(m, X, NULL));
    int64_t nI = 0;
    OK(lithe_model_get_dim(m, "nI", &nI));
    assert_int_equal(nI, 4);
    set_param(m, "W", get("cs_W"));
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    expect_close("sim", lithe_value_get_tensor(Y), get("cs_sim"), 1e-7, 1e-6);
    lithe_value *dY = value_of(get("cs_dsim"));
    OK(lithe_backprop_run(bp, dY, &dX));
    assert_int_equal(lithe_value_kind_of(dX), LITHE_VALUE_TUPLE);
    expect_close("dX1", lithe_value_get_tensor(lithe_value_item(dX, 0)), get("cs_dX1"), 1e-7, 1e-5);
    expect_close("dX2", lithe_value_get_tensor(lithe_value_item(dX, 1)), get("cs_dX2"), 1e-7, 1e-5);
    lithe_tensor *g = NULL;
    OK(lithe_model_get_grad(m, "W", &g));
    expect_close("dW", g, get("cs_dW"), 1e-7, 1e-5);
    lithe_model *fresh = NULL;
    OK(lithe_cauchy_similarity(4, &fresh));
    OK(lithe_model_initialize(fresh, NULL, NULL));
    expect_bytes(m, fresh, "cs_bytes");
    lithe_value *one = value_of(get("cs_X1"));
    expect_error(lithe_model_predict(m, one, &junk_v), LITHE_ERR_INVALID_ARG, "expected a tuple (X1, X2)");
    lithe_value_release(one);
    lithe_backprop_free(bp);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(dY);
    lithe_value_release(dX);
    lithe_model_free(fresh);
    lithe_model_free(m);
}

static lithe_model *siamese_model(void) {
    lithe_model *relu = NULL, *cs = NULL, *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 3, .nI = 4}, &relu));
    OK(lithe_cauchy_similarity(3, &cs));
    OK(lithe_siamese(relu, cs, &m));
    return m;
}

static void test_siamese(void **state) {
    (void)state;
    lithe_model *m = siamese_model();
    assert_string_equal(lithe_model_name(m), "siamese(relu, cauchy_similarity)");
    lithe_value *X = pair_of("sm_X1", "sm_X2"), *Y = NULL, *dX = NULL;
    OK(lithe_model_initialize(m, X, NULL));
    lithe_model *relu = lithe_model_layer(m, 0);
    set_param(relu, "W", get("sm_W"));
    set_param(relu, "b", get("sm_b"));
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    expect_close("siamese Y", lithe_value_get_tensor(Y), get("sm_Y"), 1e-7, 1e-6);
    lithe_value *dY = value_of(get("sm_dY"));
    OK(lithe_backprop_run(bp, dY, &dX));
    expect_close("dX1", lithe_value_get_tensor(lithe_value_item(dX, 0)), get("sm_dX1"), 1e-7, 1e-5);
    expect_close("dX2", lithe_value_get_tensor(lithe_value_item(dX, 1)), get("sm_dX2"), 1e-7, 1e-5);
    lithe_tensor *g = NULL;
    OK(lithe_model_get_grad(relu, "W", &g));
    expect_close("relu dW (both sides)", g, get("sm_dW"), 1e-7, 1e-5);
    OK(lithe_model_get_grad(relu, "b", &g));
    expect_close("relu db", g, get("sm_db"), 1e-7, 1e-5);
    OK(lithe_model_get_grad(lithe_model_layer(m, 1), "W", &g));
    expect_close("cauchy dW", g, get("sm_dWc"), 1e-7, 1e-5);
    lithe_model *fresh = siamese_model();
    OK(lithe_model_initialize(fresh, NULL, NULL));
    expect_bytes(m, fresh, "sm_bytes");
    lithe_backprop_free(bp);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(dY);
    lithe_value_release(dX);
    lithe_model_free(fresh);
    lithe_model_free(m);
}

/* ---- failing allocations --------------------------------------------------------------------- */


#define T(expr)                                                                                    \
    do {                                                                                           \
        if (s == LITHE_OK) s = (expr);                                                             \
    } while (0)

/* Builds one small model of each layer, runs forward and backward (training, so LSTM's dropout
 * mask too), and round-trips both file formats, freeing everything; the first failure. */
static lithe_status oom_scenario(int which) {
    lithe_status s = LITHE_OK;
    lithe_model *m = NULL, *a = NULL, *b = NULL, *back = NULL;
    lithe_tensor *t[6] = {0};
    lithe_value *items[2] = {0}, *X = NULL, *Y = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    uint8_t *bytes = NULL, *file = NULL;
    size_t nb = 0, nf = 0;
    static const float data[3 * 2 * 4] = {1, -2, 3, 0.5f, 0, 1, -1, 2, 0.25f, 1, 2, -3,
                                          0, 0, 0, 0,     4, 1, 0, -1, 0,     0, 0, 0};
    static const int32_t sat[3] = {2, 1, 1}, lens[2] = {3, 1}, idx[2] = {0, 1}, rl[3] = {4, 0, 2};
    T(lithe_tensor_from_data(LITHE_F32, 3, (int64_t[]){3, 2, 4}, data, &t[0]));
    T(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){3}, sat, &t[1]));
    T(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){2}, lens, &t[2]));
    T(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){2}, idx, &t[3]));
    switch (which) {
    case 0: /* LSTM, two layers, two directions, dropout */
        T(lithe_lstm(&(lithe_lstm_opts){.nO = 4, .nI = 4, .bi = true, .depth = 2, .dropout = 0.25f}, &m));
        T(lithe_value_padded(t[0], t[1], t[2], t[3], &X));
        break;
    case 1: /* bidirectional(LSTM) */
        T(lithe_lstm(&(lithe_lstm_opts){.nO = 2, .nI = 4}, &a));
        if (s == LITHE_OK) {
            s = lithe_bidirectional(a, NULL, &m);
            a = NULL;
        }
        T(lithe_value_padded(t[0], t[1], t[2], t[3], &X));
        break;
    case 2: /* ParametricAttention over a Ragged with an empty sequence */
        T(lithe_parametric_attention(4, &m));
        T(lithe_tensor_reshape(t[0], 2, (int64_t[]){6, 4}, &t[4]));
        T(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){3}, rl, &t[5]));
        T(lithe_value_ragged(t[4], t[5], &X));
        break;
    case 3: /* siamese(Relu, CauchySimilarity) */
        T(lithe_relu(&(lithe_dense_opts){.nO = 3, .nI = 4}, &a));
        T(lithe_cauchy_similarity(3, &b));
        if (s == LITHE_OK) {
            s = lithe_siamese(a, b, &m);
            a = b = NULL;
        }
        T(lithe_tensor_reshape(t[0], 2, (int64_t[]){6, 4}, &t[4]));
        T(lithe_value_tensor(t[4], &items[0]));
        T(lithe_value_tensor(t[4], &items[1]));
        T(lithe_value_tuple(2, items, &X));
        break;
    }
    T(lithe_model_initialize(m, NULL, NULL));
    T(lithe_model_begin_update(m, X, &Y, &bp));
    T(lithe_backprop_run(bp, Y, &dX));
    T(lithe_model_to_thinc_bytes(m, &bytes, &nb));
    T(lithe_model_save_bytes(m, NULL, &file, &nf));
    T(lithe_model_load_bytes(file, nf, &back));
    T(lithe_model_from_thinc_bytes(back, bytes, nb));
    lithe_buffer_free(bytes);
    lithe_buffer_free(file);
    lithe_model_free(back);
    lithe_backprop_free(bp);
    lithe_value_release(dX);
    lithe_value_release(Y);
    lithe_value_release(X);
    for (int i = 0; i < 2; i++) lithe_value_release(items[i]);
    for (int i = 0; i < 6; i++) lithe_tensor_release(t[i]);
    lithe_model_free(a);
    lithe_model_free(b);
    lithe_model_free(m);
    return s;
}

static void test_allocation_failures(void **state) {
    (void)state;
    failing_alloc_sweep(4, oom_scenario);
}

static void test_registered(void **state) {
    (void)state;
    size_t n = 0;
    const char *const *names = lithe_layer_names(&n);
    const char *want[] = {"LSTM.v1", "bidirectional.v1", "ParametricAttention.v1", "CauchySimilarity.v1", "siamese.v1"};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        bool found = false;
        for (size_t i = 0; i < n; i++) found |= !strcmp(names[i], want[k]);
        if (!found) {
            print_error("%s is not listed\n", want[k]);
            fail();
        }
    }
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lstm_goldens),          cmocka_unit_test(test_lstm_finite_differences),
        cmocka_unit_test(test_lstm_batched_equals_single), cmocka_unit_test(test_lstm_edges_and_errors),
        cmocka_unit_test(test_lstm_dropout),          cmocka_unit_test(test_bidirectional),
        cmocka_unit_test(test_parametric_attention),  cmocka_unit_test(test_cauchy_similarity),
        cmocka_unit_test(test_siamese),               cmocka_unit_test(test_registered),
        cmocka_unit_test(test_allocation_failures), cmocka_unit_test(test_lstm_learns),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
