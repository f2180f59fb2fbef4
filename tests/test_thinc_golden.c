/* lithe against the real Thinc 8.1: outputs, gradients, optimizer steps and losses that
 * tests/golden/gen_thinc_goldens.py computed with Debian's python3-thinc (ctest runs it first,
 * as a fixture, and passes the file in LITHE_THINC_GOLDENS or argv[1]).
 *
 * Tolerances (both sides float32; Thinc sums through BLAS in another order):
 *   layer outputs and gradients, losses:      |lithe - thinc| <= 1e-5 + 1e-4 * |thinc|
 *   optimizer steps (elementwise formulas):   |lithe - thinc| <= 1e-6 + 1e-5 * |thinc|
 *   the chain after two Adam updates:         as layer outputs
 *   optimizer defaults vs Thinc's:            exact, as doubles
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"
#include "../tools/lithe/adam_torch.h" /* lithe_bench_adam_as_torch: what lithe bench --adam torch runs */
#include "golden/golden.h"

#define TOL_LAYER 1e-5, 1e-4
#define TOL_OPT 1e-6, 1e-5

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
static void set_param(lithe_model *m, const char *name, const golden *g) {
    lithe_tensor *t = tensor_of(g);
    OK(lithe_model_set_param(m, name, t));
    lithe_tensor_release(t);
}

/* ---- single layers ---- */

/* The shared body: set Thinc's params, compare begin_update, predict and backprop. */
static void check_dense(lithe_model *m, const char *p, bool has_backprop) {
    char what[128];
    lithe_value *X = value_of(get("%s.X", p)), *Y = NULL, *Yp = NULL, *dY = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_initialize(m, X, NULL));
    set_param(m, "W", get("%s.W", p));
    set_param(m, "b", get("%s.b", p));
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    snprintf(what, sizeof what, "%s: begin_update Y", p);
    expect_close(what, lithe_value_get_tensor(Y), get("%s.Y", p), TOL_LAYER);
    OK(lithe_model_predict(m, X, &Yp));
    snprintf(what, sizeof what, "%s: predict Y", p);
    expect_close(what, lithe_value_get_tensor(Yp), get("%s.Ypredict", p), TOL_LAYER);
    if (has_backprop) {
        dY = value_of(get("%s.dY", p));
        OK(lithe_backprop_run(bp, dY, &dX));
        snprintf(what, sizeof what, "%s: dX", p);
        expect_close(what, lithe_value_get_tensor(dX), get("%s.dX", p), TOL_LAYER);
        snprintf(what, sizeof what, "%s: dW", p);
        expect_close(what, grad(m, "W"), get("%s.dW", p), TOL_LAYER);
        snprintf(what, sizeof what, "%s: db", p);
        expect_close(what, grad(m, "b"), get("%s.db", p), TOL_LAYER);
    }
    lithe_backprop_free(bp);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(Yp);
    lithe_value_release(dY);
    lithe_value_release(dX);
}

static void test_linear(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_linear(&(lithe_dense_opts){.nO = 4, .nI = 5}, &m));
    check_dense(m, "linear", true);
    lithe_model_free(m);
}

static void test_relu(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 6, .nI = 5}, &m));
    check_dense(m, "relu", true);
    lithe_model_free(m);
}

static void test_softmax(void **state) {
    (void)state;
    static const struct {
        const char *prefix;
        float temperature;
        bool unnormalized;
    } cases[] = {{"softmax", 0.0f, false}, {"softmax_t2", 2.0f, false}, {"softmax_t05", 0.5f, false},
                 {"softmax_unnorm", 1.0f, true}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lithe_model *m = NULL;
        OK(lithe_softmax(&(lithe_softmax_opts){.nO = 4, .nI = 5, .temperature = cases[i].temperature,
                                               .unnormalized_outputs = cases[i].unnormalized},
                         &m));
        check_dense(m, cases[i].prefix, !cases[i].unnormalized);
        lithe_model_free(m);
    }
}

/* ---- chain(Relu(nO=6), Relu(nO=5), Softmax()): shape inference, CCE, Adam updates: Thinc's
 * defaults (prefix "chain", two updates) and Adam doing torch.optim.Adam's work ("chaintorch",
 * three updates from the same weights on 10 X, where the defaults would clip: what lithe bench
 * --train --adam torch times) ---- */

static void chain_trains_like_thinc(const char *prefix, lithe_optimizer_opts oo, int steps) {
    lithe_model *layers[3] = {NULL, NULL, NULL}, *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 6}, &layers[0]));
    OK(lithe_relu(&(lithe_dense_opts){.nO = 5}, &layers[1]));
    OK(lithe_softmax(&(lithe_softmax_opts){0}, &layers[2]));
    OK(lithe_chain(3, layers, &m)); /* takes ownership; layers[i] stay valid while m lives */
    lithe_value *X = value_of(get("%s.X", prefix)), *Y1 = value_of(get("chain.Y1hot"));
    lithe_tensor *labels = tensor_of(get("chain.labels"));
    OK(lithe_model_initialize(m, X, Y1));
    char what[128];
    for (int i = 0; i < 3; i++) {
        const golden *dims = get("chain.%d.dims", i);
        int64_t nO = -1, nI = -1;
        OK(lithe_model_get_dim(layers[i], "nO", &nO));
        OK(lithe_model_get_dim(layers[i], "nI", &nI));
        if (nO != (int64_t)dims->v[0] || nI != (int64_t)dims->v[1]) {
            print_error("chain layer %d: inferred (nO, nI) = (%lld, %lld), Thinc's (%g, %g)\n", i, (long long)nO,
                        (long long)nI, dims->v[0], dims->v[1]);
            fail();
        }
        set_param(layers[i], "W", get("chain.%d.W0", i));
        set_param(layers[i], "b", get("chain.%d.b0", i));
    }
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&oo, &opt));
    for (int step = 1; step <= steps; step++) {
        lithe_value *Y = NULL, *dX = NULL, *dv = NULL;
        lithe_backprop *bp = NULL;
        lithe_tensor *d = NULL;
        float loss = NAN;
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        snprintf(what, sizeof what, "%s step %d: Y", prefix, step);
        expect_close(what, lithe_value_get_tensor(Y), get("%s.step%d.Y", prefix, step), TOL_LAYER);
        OK(lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(Y), labels, &d, &loss));
        snprintf(what, sizeof what, "%s step %d: d_guesses", prefix, step);
        expect_close(what, d, get("%s.step%d.d", prefix, step), TOL_LAYER);
        snprintf(what, sizeof what, "%s step %d: loss", prefix, step);
        expect_scalar(what, loss, get("%s.step%d.loss", prefix, step), TOL_LAYER);
        OK(lithe_value_tensor(d, &dv));
        OK(lithe_backprop_run(bp, dv, &dX));
        snprintf(what, sizeof what, "%s step %d: dX", prefix, step);
        expect_close(what, lithe_value_get_tensor(dX), get("%s.step%d.dX", prefix, step), TOL_LAYER);
        for (int i = 0; i < 3; i++) {
            snprintf(what, sizeof what, "%s step %d: layer %d dW", prefix, step, i);
            expect_close(what, grad(layers[i], "W"), get("%s.step%d.%d.dW", prefix, step, i), TOL_LAYER);
            snprintf(what, sizeof what, "%s step %d: layer %d db", prefix, step, i);
            expect_close(what, grad(layers[i], "b"), get("%s.step%d.%d.db", prefix, step, i), TOL_LAYER);
        }
        OK(lithe_model_finish_update(m, opt));
        for (int i = 0; i < 3; i++) {
            snprintf(what, sizeof what, "%s after update %d: layer %d W", prefix, step, i);
            expect_close(what, param(layers[i], "W"), get("%s.step%d.%d.W", prefix, step, i), TOL_LAYER);
            snprintf(what, sizeof what, "%s after update %d: layer %d b", prefix, step, i);
            expect_close(what, param(layers[i], "b"), get("%s.step%d.%d.b", prefix, step, i), TOL_LAYER);
            /* averages kept exactly when asked for (Thinc's optimizer.averages) */
            lithe_tensor *avg = NULL;
            assert_int_equal(lithe_optimizer_get_average(opt, layers[i], "W", &avg),
                             oo.use_averages ? LITHE_OK : LITHE_ERR_NOT_FOUND);
        }
        lithe_backprop_free(bp);
        lithe_tensor_release(d);
        lithe_value_release(Y);
        lithe_value_release(dv);
        lithe_value_release(dX);
    }
    lithe_value *P = NULL;
    OK(lithe_model_predict(m, X, &P));
    snprintf(what, sizeof what, "%s predict after %d updates", prefix, steps);
    expect_close(what, lithe_value_get_tensor(P), get("%s.predict", prefix), TOL_LAYER);
    lithe_value_release(P);
    lithe_optimizer_free(opt);
    lithe_value_release(X);
    lithe_value_release(Y1);
    lithe_tensor_release(labels);
    lithe_model_free(m); /* the chain owns its layers */
}

static void test_chain_trains_like_thinc(void **state) {
    (void)state;
    chain_trains_like_thinc("chain", lithe_adam_defaults(), 2);
}

static void test_chain_trains_like_thinc_adam_as_torch(void **state) {
    (void)state;
    chain_trains_like_thinc("chaintorch", lithe_bench_adam_as_torch(), 3);
}

/* ---- optimizers ---- */

static lithe_optimizer_opts opts_of(const golden *g) {
    assert_int_equal(g->n, 9);
    return (lithe_optimizer_opts){.learn_rate = g->v[0], .L2 = g->v[1], .beta1 = g->v[2], .beta2 = g->v[3],
                                  .eps = g->v[4], .grad_clip = g->v[5], .L2_is_weight_decay = g->v[6] != 0.0,
                                  .use_averages = g->v[7] != 0.0, .use_radam = g->v[8] != 0.0};
}

static void expect_same_opts(const char *what, lithe_optimizer_opts a, lithe_optimizer_opts b) {
    if (a.learn_rate != b.learn_rate || a.L2 != b.L2 || a.beta1 != b.beta1 || a.beta2 != b.beta2 ||
        a.grad_clip != b.grad_clip || a.L2_is_weight_decay != b.L2_is_weight_decay ||
        a.use_averages != b.use_averages || (a.beta1 > 0 && a.eps != b.eps)) {
        print_error("%s: lithe (lr %g L2 %g b1 %g b2 %g eps %g clip %g wd %d avg %d) differs from Thinc's "
                    "(lr %g L2 %g b1 %g b2 %g eps %g clip %g wd %d avg %d)\n",
                    what, a.learn_rate, a.L2, a.beta1, a.beta2, a.eps, a.grad_clip, a.L2_is_weight_decay,
                    a.use_averages, b.learn_rate, b.L2, b.beta1, b.beta2, b.eps, b.grad_clip, b.L2_is_weight_decay,
                    b.use_averages);
        fail();
    }
}

static void test_optimizer_defaults_match_thinc(void **state) {
    (void)state;
    expect_same_opts("lithe_adam_defaults() vs thinc Adam()", lithe_adam_defaults(), opts_of(get("adam_default.opts")));
    expect_same_opts("lithe_sgd_defaults(0.1) vs thinc SGD(0.1)", lithe_sgd_defaults(0.1), opts_of(get("sgd.opts")));
    expect_same_opts("lithe bench --adam torch vs thinc Adam(grad_clip=0.0, L2=0.0, use_averages=False)",
                     lithe_bench_adam_as_torch(), opts_of(get("adam_torch.opts")));
}

static void test_optimizer_steps(void **state) {
    (void)state;
    static const char *cases[] = {"adam_default", "adam_small", "adam_wd",    "adam_l2grad", "adam_clip",
                                  "adam_noavg",   "sgd",        "sgd_l2grad", "radam",       "radam_b2",
                                  "adam_torch"};
    lithe_model *node = NULL;
    OK(lithe_linear(&(lithe_dense_opts){.nO = 4, .nI = 3}, &node));
    char what[128];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *p = cases[c];
        lithe_optimizer_opts oo = opts_of(get("%s.opts", p));
        lithe_optimizer *opt = NULL;
        OK(lithe_optimizer_new(&oo, &opt));
        lithe_tensor *W = tensor_of(get("%s.W0", p));
        int steps = strncmp(p, "radam", 5) ? 3 : !strcmp(p, "radam") ? 6 : 8;
        for (int step = 1; step <= steps; step++) {
            lithe_tensor *G = tensor_of(get("%s.G%d", p, step));
            OK(lithe_optimizer_step(opt, node, "W", W, G));
            snprintf(what, sizeof what, "%s step %d: weights", p, step);
            expect_close(what, W, get("%s.W%d", p, step), TOL_OPT);
            snprintf(what, sizeof what, "%s step %d: gradient after the step", p, step);
            expect_close(what, G, get("%s.Gafter%d", p, step), TOL_OPT);
            assert_int_equal(lithe_optimizer_nr_update(opt, node, "W"), step);
            lithe_tensor *avg = NULL;
            if (oo.use_averages) {
                OK(lithe_optimizer_get_average(opt, node, "W", &avg));
                snprintf(what, sizeof what, "%s step %d: average", p, step);
                expect_close(what, avg, get("%s.avg%d", p, step), TOL_OPT);
            } else {
                assert_int_equal(lithe_optimizer_get_average(opt, node, "W", &avg), LITHE_ERR_NOT_FOUND);
            }
            lithe_tensor_release(G);
        }
        lithe_tensor_release(W);
        lithe_optimizer_free(opt);
    }
    lithe_model_free(node);
}

/* ---- CategoricalCrossentropy ---- */

static void test_cce(void **state) {
    (void)state;
    lithe_tensor *guesses = tensor_of(get("cce.guesses")), *labels = tensor_of(get("cce.labels")),
                 *onehot = tensor_of(get("cce.onehot"));
    static const struct {
        const char *name;
        lithe_cce_opts opts;
        bool onehot;
    } cases[] = {
        {"int", {0}, false},
        {"onehot", {0}, true},
        {"unnorm", {.unnormalized = true}, false},
        {"missing", {.has_missing_value = true, .missing_value = 2}, false},
        {"smooth", {.label_smoothing = 0.1f}, false},
    };
    char what[128];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        lithe_tensor *d = NULL;
        float loss = NAN;
        OK(lithe_categorical_crossentropy(&cases[c].opts, guesses, cases[c].onehot ? onehot : labels, &d, &loss));
        snprintf(what, sizeof what, "CategoricalCrossentropy (%s): d_guesses", cases[c].name);
        expect_close(what, d, get("cce.%s.d", cases[c].name), TOL_LAYER);
        snprintf(what, sizeof what, "CategoricalCrossentropy (%s): loss", cases[c].name);
        expect_scalar(what, loss, get("cce.%s.loss", cases[c].name), TOL_LAYER);
        lithe_tensor_release(d);
    }
    lithe_tensor_release(guesses);
    lithe_tensor_release(labels);
    lithe_tensor_release(onehot);
}

/* ---- schedules ---- */

static void expect_sequence(const char *what, lithe_schedule *s, const golden *g) {
    assert_non_null(s);
    for (int64_t i = 0; i < g->n; i++) {
        double v = lithe_schedule_next(s);
        /* Thinc computes in double too: equal up to the last bits of a different operation order */
        if (!(fabs(v - g->v[i]) <= 1e-15 + 1e-12 * fabs(g->v[i]))) {
            print_error("%s: value %lld is %.17g, Thinc's %.17g\n", what, (long long)i, v, g->v[i]);
            fail();
        }
    }
    lithe_schedule_free(s);
}

static void test_schedules(void **state) {
    (void)state;
    lithe_schedule *s = NULL, *then = NULL;
    OK(lithe_schedule_constant(0.25, &s));
    expect_sequence("constant", s, get("sched.constant"));
    OK(lithe_schedule_decaying(0.5, 0.1, 0, &then));
    OK(lithe_schedule_constant_then(1.0, 3, then, &s));
    expect_sequence("constant_then", s, get("sched.constant_then"));
    OK(lithe_schedule_decaying(0.001, 1e-2, 3, &s));
    expect_sequence("decaying", s, get("sched.decaying"));
    OK(lithe_schedule_compounding(1.0, 10.0, 1.5, &s));
    expect_sequence("compounding up", s, get("sched.compounding_up"));
    OK(lithe_schedule_compounding(10.0, 1.0, 0.8, &s));
    expect_sequence("compounding down", s, get("sched.compounding_down"));
    OK(lithe_schedule_warmup_linear(0.01, 5, 30, &s));
    expect_sequence("warmup_linear", s, get("sched.warmup_linear"));
    OK(lithe_schedule_slanted_triangular(0.1, 50, 0.2, 16, 1.0, &s));
    expect_sequence("slanted_triangular", s, get("sched.slanted_triangular"));
    OK(lithe_schedule_cyclic_triangular(0.001, 0.01, 7, &s));
    expect_sequence("cyclic_triangular", s, get("sched.cyclic_triangular"));
    /* where Thinc would divide by zero or loop on nonsense: a clear error */
    assert_int_equal(lithe_schedule_slanted_triangular(0.1, 5, 0.1, 32, 0, &s), LITHE_ERR_VALUE);
    assert_int_equal(lithe_schedule_cyclic_triangular(0.1, 0.2, 0, &s), LITHE_ERR_VALUE);
    assert_int_equal(lithe_schedule_constant_then(1, 2, NULL, &s), LITHE_ERR_INVALID_ARG);
    assert_true(isnan(lithe_schedule_next(NULL)));

    /* plateau: no Thinc 8.1.7 oracle; its documented rule, checked step by step */
    OK(lithe_schedule_constant(0.1, &then));
    OK(lithe_schedule_plateau(2, 0.5, then, &s));
    static const struct {
        double score, want; /* the score reported before the value, the value expected */
    } steps[] = {{0.5, 0.1}, {0.6, 0.1}, {0.6, 0.1}, {0.55, 0.05}, {0.7, 0.05}, {0.1, 0.05}, {0.2, 0.025}};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        OK(lithe_schedule_report_score(s, (int64_t)i, steps[i].score));
        OK(lithe_schedule_report_score(s, (int64_t)i, -1.0)); /* the same step again: ignored */
        double v = lithe_schedule_next(s);
        if (fabs(v - steps[i].want) > 1e-15) {
            print_error("plateau step %zu: %g, want %g\n", i, v, steps[i].want);
            fail();
        }
    }
    lithe_schedule_free(s);
    assert_int_equal(lithe_schedule_plateau(0, 0.5, NULL, &s), LITHE_ERR_INVALID_ARG);

    /* Adam(learn_rate=warmup_linear(0.05, 2, 6)) with step_schedules after each update */
    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.grad_clip = 0.0;
    oo.use_averages = false;
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&oo, &opt));
    OK(lithe_schedule_warmup_linear(0.05, 2, 6, &s));
    OK(lithe_optimizer_set_schedule(opt, "learn_rate", s));
    assert_true(lithe_optimizer_get_opts(opt).learn_rate == 0.0); /* the schedule's first value, now */
    lithe_model *node = NULL;
    OK(lithe_linear(&(lithe_dense_opts){.nO = 4, .nI = 3}, &node));
    lithe_tensor *W = tensor_of(get("optsched.W0"));
    char what[64];
    for (int step = 1; step <= 5; step++) {
        lithe_tensor *G = tensor_of(get("optsched.G%d", step));
        OK(lithe_optimizer_step(opt, node, "W", W, G));
        snprintf(what, sizeof what, "scheduled Adam step %d", step);
        expect_close(what, W, get("optsched.W%d", step), TOL_OPT);
        OK(lithe_optimizer_step_schedules(opt));
        lithe_tensor_release(G);
    }
    OK(lithe_schedule_constant(-1.0, &s));
    assert_int_equal(lithe_optimizer_set_schedule(opt, "learn_rate", s), LITHE_ERR_VALUE);
    OK(lithe_schedule_constant(0.1, &s));
    assert_int_equal(lithe_optimizer_set_schedule(opt, "momentum", s), LITHE_ERR_INVALID_ARG);
    assert_int_equal(lithe_optimizer_set_schedule(opt, "b1", NULL), LITHE_ERR_INVALID_ARG);
    lithe_tensor_release(W);
    lithe_model_free(node);
    lithe_optimizer_free(opt);
}

/* ---- L2Distance, CosineDistance ---- */

static void test_distances(void **state) {
    (void)state;
    lithe_tensor *G = tensor_of(get("dist.guesses")), *T = tensor_of(get("dist.truths"));
    static const struct {
        const char *name;
        bool cosine, normalize, ignore_zeros;
    } cases[] = {{"l2", false, true, false},
                 {"l2_unnorm", false, false, false},
                 {"cos", true, true, false},
                 {"cos_unnorm", true, false, false},
                 {"cos_ignore", true, true, true}};
    char what[96];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        lithe_tensor *d = NULL;
        float loss = NAN;
        if (cases[c].cosine) OK(lithe_cosine_distance(cases[c].normalize, cases[c].ignore_zeros, G, T, &d, &loss));
        else OK(lithe_l2_distance(cases[c].normalize, G, T, &d, &loss));
        snprintf(what, sizeof what, "%s: d_guesses", cases[c].name);
        expect_close(what, d, get("dist.%s.d", cases[c].name), TOL_LAYER);
        snprintf(what, sizeof what, "%s: loss", cases[c].name);
        expect_scalar(what, loss, get("dist.%s.loss", cases[c].name), TOL_LAYER);
        lithe_tensor_release(d);
    }
    /* L2Distance takes any equal shapes, as Thinc: (3, 7, 4) sequences and 1-d arrays; the mean
     * squared error against float64 */
    for (size_t c = 0; c < 2; c++) {
        const char *nm = c ? "l2_1d" : "l2_3d";
        lithe_tensor *G3 = tensor_of(get("dist.%s.guesses", nm)), *T3 = tensor_of(get("dist.%s.truths", nm)), *d = NULL;
        float loss = NAN;
        double mse = NAN;
        OK(lithe_l2_distance(true, G3, T3, &d, &loss));
        snprintf(what, sizeof what, "%s: d_guesses", nm);
        expect_close(what, d, get("dist.%s.d", nm), TOL_LAYER);
        assert_int_equal(lithe_tensor_ndim(d), lithe_tensor_ndim(G3));
        snprintf(what, sizeof what, "%s: loss", nm);
        expect_scalar(what, loss, get("dist.%s.loss", nm), TOL_LAYER);
        OK(lithe_mean_squared_error(G3, T3, &mse));
        snprintf(what, sizeof what, "%s: mean squared error", nm);
        expect_scalar(what, mse, get("dist.%s.mse", nm), 1e-12, 1e-6);
        lithe_tensor_release(d);
        lithe_tensor_release(G3);
        lithe_tensor_release(T3);
    }
    lithe_tensor *bad = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){5, 3}, &bad));
    assert_int_equal(lithe_l2_distance(true, G, bad, NULL, NULL), LITHE_ERR_SHAPE);
    assert_non_null(strstr(lithe_last_error(), "(5, 3)"));
    double mse = 0;
    assert_int_equal(lithe_mean_squared_error(G, bad, &mse), LITHE_ERR_SHAPE);
    /* equal element counts are not equal shapes */
    lithe_tensor *flat = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 1, (int64_t[]){20}, &flat));
    assert_int_equal(lithe_l2_distance(true, G, flat, NULL, NULL), LITHE_ERR_SHAPE);
    lithe_tensor_release(flat);
    assert_int_equal(lithe_cosine_distance(true, false, NULL, T, NULL, NULL), LITHE_ERR_INVALID_ARG);
    lithe_tensor_release(bad);
    lithe_tensor_release(G);
    lithe_tensor_release(T);
}

/* ---- string labels, sequences, the true cross-entropy ---- */

static void test_cce_names_and_sequences(void **state) {
    (void)state;
    lithe_tensor *guesses = tensor_of(get("cce.guesses")), *d = NULL;
    float loss = NAN;
    static const char *const names[] = {"a", "b", "c", "d"};
    static const char *const truths[] = {"b", "?", "!c", "d", "a"};
    lithe_cce_names nm = {names, 4, truths, 5, "?", "!"};
    OK(lithe_categorical_crossentropy_names(NULL, guesses, &nm, &d, &loss));
    expect_close("CCE names/missing/neg_prefix: d", d, get("cce.names.d"), TOL_LAYER);
    expect_scalar("CCE names/missing/neg_prefix: loss", loss, get("cce.names.loss"), TOL_LAYER);
    lithe_tensor_release(d);
    static const char *const truths2[] = {"c", "a", "a", "d", "b"};
    lithe_cce_names nm2 = {names, 4, truths2, 5, NULL, NULL};
    lithe_cce_opts so = {.label_smoothing = 0.2f, .unnormalized = true};
    OK(lithe_categorical_crossentropy_names(&so, guesses, &nm2, &d, &loss));
    expect_close("CCE names + smoothing: d", d, get("cce.names_smooth.d"), TOL_LAYER);
    expect_scalar("CCE names + smoothing: loss", loss, get("cce.names_smooth.loss"), TOL_LAYER);
    lithe_tensor_release(d);
    static const char *const unknown[] = {"c", "zebra", "a", "d", "b"};
    lithe_cce_names nm3 = {names, 4, unknown, 5, NULL, NULL};
    assert_int_equal(lithe_categorical_crossentropy_names(NULL, guesses, &nm3, &d, &loss), LITHE_ERR_VALUE);
    assert_non_null(strstr(lithe_last_error(), "zebra"));
    static const char *const neg[] = {"!c", "a", "a", "d", "b"};
    lithe_cce_names nm4 = {names, 4, neg, 5, NULL, "!"};
    assert_int_equal(lithe_categorical_crossentropy_names(&so, guesses, &nm4, &d, &loss), LITHE_ERR_VALUE);

    /* sequences */
    lithe_tensor *g[2] = {tensor_of(get("seqcce.g0")), tensor_of(get("seqcce.g1"))};
    lithe_tensor *t[2] = {tensor_of(get("seqcce.t0")), tensor_of(get("seqcce.t1"))};
    lithe_tensor *ds[2] = {NULL, NULL};
    OK(lithe_sequence_categorical_crossentropy(NULL, 2, (const lithe_tensor *const *)g, (const lithe_tensor *const *)t,
                                               ds, &loss));
    expect_close("SequenceCCE d0", ds[0], get("seqcce.d0"), TOL_LAYER);
    expect_close("SequenceCCE d1", ds[1], get("seqcce.d1"), TOL_LAYER);
    expect_scalar("SequenceCCE loss", loss, get("seqcce.loss"), TOL_LAYER);

    /* the true cross-entropy against a float64 reference: mean of -log p[label] */
    double xent = 0, want = 0;
    OK(lithe_cross_entropy(NULL, g[0], t[0], &xent));
    const golden *gg = get("seqcce.g0"), *gt = get("seqcce.t0");
    for (int i = 0; i < 3; i++) want -= log((double)(float)gg->v[i * 4 + (int)gt->u[i]]);
    want /= 3;
    assert_true(fabs(xent - want) <= 1e-6 * fabs(want));
    lithe_cce_opts miss = {.has_missing_value = true, .missing_value = 3};
    OK(lithe_cross_entropy(&miss, g[0], t[0], &xent)); /* row 1 (label 3) is not counted */
    want = -(log((double)(float)gg->v[0 * 4 + 0]) + log((double)(float)gg->v[2 * 4 + 1])) / 2;
    assert_true(fabs(xent - want) <= 1e-6 * fabs(want));
    for (int i = 0; i < 2; i++) {
        lithe_tensor_release(g[i]);
        lithe_tensor_release(t[i]);
        lithe_tensor_release(ds[i]);
    }
    lithe_tensor_release(guesses);
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_linear),
        cmocka_unit_test(test_relu),
        cmocka_unit_test(test_softmax),
        cmocka_unit_test(test_chain_trains_like_thinc),
        cmocka_unit_test(test_chain_trains_like_thinc_adam_as_torch),
        cmocka_unit_test(test_optimizer_defaults_match_thinc),
        cmocka_unit_test(test_optimizer_steps),
        cmocka_unit_test(test_cce),
        cmocka_unit_test(test_schedules),
        cmocka_unit_test(test_distances),
        cmocka_unit_test(test_cce_names_and_sequences),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
