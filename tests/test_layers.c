/* The dense catalogue against the real Thinc 8.1.7: every layer (and the normalize= chains) with
 * params set per node in walk order, forward at training and at predict time, backprop into dX
 * and every param's gradient (goldens from tests/golden/gen_thinc_goldens.py, tree_case).
 * Also: Thinc's tree structure for normalize=/dropout=, batched prediction equal to row-by-row,
 * Dish's gradient by finite differences (Thinc 8.1.7's own Dish backprop is wrong, so there is
 * no golden for it), initializer scales, and bad arguments.
 *
 * Tolerances: |lithe - thinc| <= 1e-5 + 1e-4 |thinc|; FD as test_model (float64, h = 1e-6,
 * 1e-4 + 1e-3 |fd|); row-by-row exactly equal to the batch.
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

#include "lithe.h"
#include "golden/golden.h"

#define TOL_LAYER 1e-5, 1e-4

#define FAILS(code, expr)                                                                          \
    do {                                                                                           \
        lithe_status st_ = (expr);                                                                 \
        if (st_ != (code)) {                                                                       \
            print_error("%s: expected %s, got %s (%s)\n", #expr, lithe_status_str(code),           \
                        lithe_status_str(st_), lithe_last_error());                                \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

static lithe_model *combinator(int which);

typedef struct tree_spec {
    const char *prefix; /* golden prefix tree.<name> */
    const char *layer;  /* lithe_dense / lithe_activation name, or NULL: custom */
    lithe_dense_opts opts;
    bool activation; /* parameter-free: lithe_activation */
    int custom;      /* 1: ClippedLinear(1.5, 0.25, -0.5, 2); 2: ReluK(k=2.5); 3: LayerNorm(5);
                        10+: a combinator tree, see combinator() */
    bool has_backprop;
} tree_spec;

static const tree_spec specs[] = {
    {"mish", "Mish.v1", {.nO = 4, .nI = 5}, false, 0, true},
    {"swish", "Swish.v1", {.nO = 4, .nI = 5}, false, 0, true},
    {"gelu", "Gelu.v1", {.nO = 4, .nI = 5}, false, 0, true},
    {"dish", "Dish.v1", {.nO = 4, .nI = 5}, false, 0, false},
    {"hardswish", "HardSwish.v1", {.nO = 4, .nI = 5}, false, 0, true},
    {"hardswishmobilenet", "HardSwishMobilenet.v1", {.nO = 4, .nI = 5}, false, 0, true},
    {"clipped_linear", NULL, {.nO = 4, .nI = 5}, false, 1, true},
    {"hard_sigmoid", "HardSigmoid.v1", {.nO = 4, .nI = 5}, false, 0, true},
    {"hard_tanh", "HardTanh.v1", {.nO = 4, .nI = 5}, false, 0, true},
    {"relu_k", NULL, {.nO = 4, .nI = 5}, false, 2, true},
    {"sigmoid", "Sigmoid.v1", {.nO = 4, .nI = 5}, false, 0, true},
    {"maxout", "Maxout.v1", {.nO = 4, .nI = 5, .nP = 3}, false, 0, true},
    {"maxout_norm", "Maxout.v1", {.nO = 4, .nI = 5, .nP = 2, .normalize = true}, false, 0, true},
    {"relu_norm", "Relu.v1", {.nO = 4, .nI = 5, .normalize = true}, false, 0, true},
    {"layernorm", NULL, {0}, false, 3, true},
    {"logistic", "Logistic.v1", {0}, true, 0, true},
    {"sigmoid_activation", "sigmoid_activation.v1", {0}, true, 0, true},
    {"softmax_activation", "softmax_activation.v1", {0}, true, 0, true},
    {"concatenate", NULL, {0}, false, 10, true},
    {"add", NULL, {0}, false, 11, true},
    {"residual", NULL, {0}, false, 12, true},
    {"noop", NULL, {0}, false, 13, true},
    {"clone", NULL, {0}, false, 14, true},
    {"nested", NULL, {0}, false, 15, true},
    {"multisoftmax", NULL, {0}, false, 16, true},
    {"softmax_v1", NULL, {0}, false, 17, true},
};

static lithe_model *dense(const char *name, int64_t nO, int64_t nI) {
    lithe_model *m = NULL;
    OK(lithe_dense(name, &(lithe_dense_opts){.nO = nO, .nI = nI}, &m));
    return m;
}

/* The same trees as the generator's tree_case calls. */
static lithe_model *combinator(int which) {
    lithe_model *m = NULL;
    switch (which) {
    case 10:
        OK(lithe_concatenate(3, (lithe_model *[]){dense("Relu.v1", 3, 5), dense("Mish.v1", 2, 5), dense("Linear.v1", 1, 5)}, &m));
        break;
    case 11: OK(lithe_add(2, (lithe_model *[]){dense("Linear.v1", 4, 5), dense("Relu.v1", 4, 5)}, &m)); break;
    case 12: OK(lithe_residual(dense("Relu.v1", 5, 5), &m)); break;
    case 13: OK(lithe_noop(0, NULL, &m)); break;
    case 14: OK(lithe_clone(dense("Relu.v1", 5, 5), 3, &m)); break;
    case 15: {
        lithe_model *cat = NULL, *res = NULL, *sm = NULL, *mx = NULL;
        OK(lithe_concatenate(2, (lithe_model *[]){dense("Relu.v1", 3, 5), dense("Swish.v1", 3, 5)}, &cat));
        OK(lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 6, .nI = 6, .nP = 2}, &mx));
        OK(lithe_residual(mx, &res));
        OK(lithe_softmax(&(lithe_softmax_opts){.nO = 2, .nI = 6}, &sm));
        OK(lithe_chain(3, (lithe_model *[]){cat, res, sm}, &m));
        break;
    }
    case 16: OK(lithe_multisoftmax(2, (const int64_t[]){2, 3}, 5, &m)); break;
    case 17: OK(lithe_softmax(&(lithe_softmax_opts){.nO = 3, .nI = 5, .version1 = true}, &m)); break;
    default: fail();
    }
    return m;
}

static lithe_model *build(const tree_spec *t) {
    lithe_model *m = NULL;
    if (t->activation) OK(lithe_activation(t->layer, &m));
    else if (t->custom == 1) OK(lithe_clipped_linear(&t->opts, 1.5f, 0.25f, -0.5f, 2.0f, &m));
    else if (t->custom == 2) OK(lithe_clipped_linear(&t->opts, 1.0f, 0.0f, 0.0f, 2.5f, &m));
    else if (t->custom == 3) OK(lithe_layernorm(5, &m));
    else if (t->custom >= 10) m = combinator(t->custom);
    else OK(lithe_dense(t->layer, &t->opts, &m));
    return m;
}

/* A copy of a (B, 5) golden with a softmax over columns [0, 2) and [2, 5) of each row. */
static golden softmax_groups(const golden *g) {
    golden out = *g;
    out.kind = 'd';
    out.u = NULL;
    out.v = malloc(sizeof(double) * (size_t)g->n);
    assert_non_null(out.v);
    static const int groups[][2] = {{0, 2}, {2, 5}};
    for (int64_t r = 0; r < g->shape[0]; r++)
        for (int k = 0; k < 2; k++) {
            const double *x = g->v + r * 5;
            double mx = -INFINITY, sum = 0;
            /* a comparison, not fmax: gcc 12's aarch64 vectorizer crashes (ICE) on this fmax reduction */
            for (int j = groups[k][0]; j < groups[k][1]; j++) mx = (double)(float)x[j] > mx ? (double)(float)x[j] : mx;
            for (int j = groups[k][0]; j < groups[k][1]; j++) sum += exp((double)(float)x[j] - mx);
            for (int j = groups[k][0]; j < groups[k][1]; j++) out.v[r * 5 + j] = exp((double)(float)x[j] - mx) / sum;
        }
    return out;
}

static void test_layers_match_thinc(void **state) {
    (void)state;
    char what[160];
    for (size_t c = 0; c < sizeof specs / sizeof specs[0]; c++) {
        const tree_spec *t = &specs[c];
        lithe_model *m = build(t);
        lithe_value *X = value_of(get("tree.%s.X", t->prefix)), *Y = NULL, *Yp = NULL, *dY = NULL, *dX = NULL;
        OK(lithe_model_initialize(m, X, NULL));
        lithe_model *nodes[16];
        size_t n = 0;
        OK(lithe_model_walk(m, nodes, 16, &n));
        for (size_t i = 0; i < n; i++)
            for (size_t p = 0; p < lithe_model_n_params(nodes[i]); p++) {
                const char *pn = lithe_model_param_name(nodes[i], p);
                lithe_tensor *v = tensor_of(get("tree.%s.%zu.%s", t->prefix, i, pn));
                OK(lithe_model_set_param(nodes[i], pn, v));
                lithe_tensor_release(v);
            }
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        snprintf(what, sizeof what, "%s (%s): begin_update Y", t->prefix, lithe_model_name(m));
        /* (MultiSoftmax.v1 too: Thinc 8.1.7's returns the logits, and so does lithe's by default) */
        const golden *gY = get("tree.%s.Y", t->prefix), *gYp = get("tree.%s.Ypredict", t->prefix);
        expect_close(what, lithe_value_get_tensor(Y), gY, TOL_LAYER);
        OK(lithe_model_predict(m, X, &Yp));
        snprintf(what, sizeof what, "%s: predict Y", t->prefix);
        expect_close(what, lithe_value_get_tensor(Yp), gYp, TOL_LAYER);
        if (!strcmp(t->prefix, "multisoftmax")) {
            /* the corrected form (attr softmax_groups): the softmax of Thinc's logits, group by
             * group (2 and 3 columns) */
            golden sYp = softmax_groups(gYp);
            lithe_value *Yg = NULL;
            OK(lithe_model_set_attr_bool(m, "softmax_groups", true));
            OK(lithe_model_predict(m, X, &Yg));
            expect_close("multisoftmax (softmax_groups): predict Y", lithe_value_get_tensor(Yg), &sYp, TOL_LAYER);
            OK(lithe_model_set_attr_bool(m, "softmax_groups", false));
            lithe_value_release(Yg);
            free(sYp.v);
        }
        if (t->has_backprop) {
            dY = value_of(get("tree.%s.dY", t->prefix));
            OK(lithe_backprop_run(bp, dY, &dX));
            snprintf(what, sizeof what, "%s: dX", t->prefix);
            expect_close(what, lithe_value_get_tensor(dX), get("tree.%s.dX", t->prefix), TOL_LAYER);
            for (size_t i = 0; i < n; i++)
                for (size_t p = 0; p < lithe_model_n_params(nodes[i]); p++) {
                    const char *pn = lithe_model_param_name(nodes[i], p);
                    lithe_tensor *g = NULL;
                    OK(lithe_model_get_grad(nodes[i], pn, &g));
                    snprintf(what, sizeof what, "%s: node %zu (%s) d%s", t->prefix, i, lithe_model_name(nodes[i]), pn);
                    expect_close(what, g, get("tree.%s.%zu.d%s", t->prefix, i, pn), TOL_LAYER);
                }
        }
        lithe_backprop_free(bp);
        lithe_value_release(X);
        lithe_value_release(Y);
        lithe_value_release(Yp);
        lithe_value_release(dY);
        lithe_value_release(dX);
        lithe_model_free(m);
    }
}

/* The trees Thinc builds for normalize= and dropout= (names and walk order printed by Thinc
 * 8.1.7: [n.name for n in Relu(nO=3, normalize=True, dropout=0.1).walk()]). */
static void test_normalize_dropout_trees(void **state) {
    (void)state;
    static const char *const relu_walk[] = {"relu>>layernorm>>dropout", "relu>>layernorm", "dropout", "relu",
                                            "layernorm"};
    static const char *const maxout_walk[] = {"maxout>>layernorm>>dropout", "maxout>>layernorm", "dropout",
                                              "maxout", "layernorm"};
    const char *layers[] = {"Relu.v1", "Maxout.v1"};
    const char *const *walks[] = {relu_walk, maxout_walk};
    for (int l = 0; l < 2; l++) {
        lithe_model *m = NULL, *nodes[8];
        size_t n = 0;
        OK(lithe_dense(layers[l], &(lithe_dense_opts){.nO = 3, .normalize = true, .dropout = 0.1f}, &m));
        OK(lithe_model_walk(m, nodes, 8, &n));
        assert_int_equal(n, 5);
        for (size_t i = 0; i < n; i++) assert_string_equal(lithe_model_name(nodes[i]), walks[l][i]);
        /* LayerNorm(nI=nO): its nI is the layer's nO before any data is seen */
        int64_t nI = 0;
        OK(lithe_model_get_dim(nodes[4], "nI", &nI));
        assert_int_equal(nI, 3);
        lithe_model_free(m);
    }
    /* the clipped_linear family: Thinc's attrs and node name */
    lithe_model *m = NULL;
    OK(lithe_dense("HardSigmoid.v1", NULL, &m));
    assert_string_equal(lithe_model_name(m), "clipped_linear");
    double v = 0;
    OK(lithe_model_get_attr_float(m, "slope", &v));
    assert_true(v == (double)0.2f);
    OK(lithe_model_get_attr_float(m, "offset", &v));
    assert_true(v == 0.5);
    lithe_model_free(m);
}

/* Dish: forward vs float64, gradients by finite differences of the float64 layer. */
static double dish64(double z) { return 0.5 * z * (1.0 + z / sqrt(1.0 + z * z)); }

static double dish_objective(int B, int nI, int nO, const double *X, const double *W, const double *b,
                             const double *R) {
    double L = 0;
    for (int i = 0; i < B; i++)
        for (int o = 0; o < nO; o++) {
            double z = b[o];
            for (int k = 0; k < nI; k++) z += X[i * nI + k] * W[o * nI + k];
            L += R[i * nO + o] * dish64(z);
        }
    return L;
}

static void test_dish_finite_differences(void **state) {
    (void)state;
    enum { B = 5, nI = 4, nO = 3 };
    double X[B * nI], W[nO * nI], b[nO], R[B * nO];
    float xf[B * nI], wf[nO * nI], bf[nO], rf[B * nO];
    uint64_t s = 3;
    for (int i = 0; i < B * nI; i++) X[i] = xf[i] = (float)((double)((s = s * 6364136223846793005ULL + 1) >> 40) / 16777216.0 * 4 - 2);
    for (int i = 0; i < nO * nI; i++) W[i] = wf[i] = (float)((double)((s = s * 6364136223846793005ULL + 1) >> 40) / 16777216.0 * 2 - 1);
    for (int i = 0; i < nO; i++) b[i] = bf[i] = (float)((double)((s = s * 6364136223846793005ULL + 1) >> 40) / 16777216.0 - 0.5);
    for (int i = 0; i < B * nO; i++) R[i] = rf[i] = (float)((double)((s = s * 6364136223846793005ULL + 1) >> 40) / 16777216.0 * 2 - 1);
    lithe_model *m = NULL;
    OK(lithe_dense("Dish.v1", &(lithe_dense_opts){.nO = nO, .nI = nI}, &m));
    lithe_tensor *tX = NULL, *tW = NULL, *tb = NULL, *tR = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){B, nI}, xf, &tX));
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){nO, nI}, wf, &tW));
    OK(lithe_tensor_from_data(LITHE_F32, 1, (int64_t[]){nO}, bf, &tb));
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){B, nO}, rf, &tR));
    lithe_value *Xv = NULL, *Rv = NULL, *Yv = NULL, *dXv = NULL;
    OK(lithe_value_tensor(tX, &Xv));
    OK(lithe_value_tensor(tR, &Rv));
    OK(lithe_model_initialize(m, Xv, NULL));
    OK(lithe_model_set_param(m, "W", tW));
    OK(lithe_model_set_param(m, "b", tb));
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, Xv, &Yv, &bp));
    OK(lithe_backprop_run(bp, Rv, &dXv));
    const float *y = lithe_tensor_data(lithe_value_get_tensor(Yv));
    for (int i = 0; i < B; i++)
        for (int o = 0; o < nO; o++) {
            double z = b[o];
            for (int k = 0; k < nI; k++) z += X[i * nI + k] * W[o * nI + k];
            double want = dish64(z);
            if (!(fabs(y[i * nO + o] - want) <= 1e-5 + 1e-4 * fabs(want))) {
                print_error("Dish Y[%d,%d]: %.9g, float64 %.9g\n", i, o, (double)y[i * nO + o], want);
                fail();
            }
        }
    lithe_tensor *gW = NULL, *gb = NULL;
    OK(lithe_model_get_grad(m, "W", &gW));
    OK(lithe_model_get_grad(m, "b", &gb));
    struct {
        const char *what;
        double *arr;
        const float *analytic;
        int count;
    } wrt[] = {{"Dish dX", X, lithe_tensor_data(lithe_value_get_tensor(dXv)), B * nI},
               {"Dish dW", W, lithe_tensor_data(gW), nO * nI},
               {"Dish db", b, lithe_tensor_data(gb), nO}};
    const double h = 1e-6;
    for (int w = 0; w < 3; w++)
        for (int i = 0; i < wrt[w].count; i++) {
            double keep = wrt[w].arr[i];
            wrt[w].arr[i] = keep + h;
            double up = dish_objective(B, nI, nO, X, W, b, R);
            wrt[w].arr[i] = keep - h;
            double down = dish_objective(B, nI, nO, X, W, b, R);
            wrt[w].arr[i] = keep;
            double fd = (up - down) / (2 * h);
            if (!(fabs(wrt[w].analytic[i] - fd) <= 1e-4 + 1e-3 * fabs(fd))) {
                print_error("%s[%d]: %.9g, finite differences %.9g\n", wrt[w].what, i, (double)wrt[w].analytic[i], fd);
                fail();
            }
        }
    lithe_backprop_free(bp);
    lithe_value_release(Xv);
    lithe_value_release(Rv);
    lithe_value_release(Yv);
    lithe_value_release(dXv);
    lithe_tensor_release(tX);
    lithe_tensor_release(tW);
    lithe_tensor_release(tb);
    lithe_tensor_release(tR);
    lithe_model_free(m);
}

/* Every layer: predicting a batch gives, row for row, what predicting each row alone gives. */
static void test_batched_equals_row_by_row(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof specs / sizeof specs[0]; c++) {
        lithe_model *m = build(&specs[c]);
        const golden *gX = get("tree.%s.X", specs[c].prefix);
        lithe_value *X = value_of(gX), *Y = NULL;
        OK(lithe_model_initialize(m, X, NULL));
        OK(lithe_model_set_seed(m, 5));
        OK(lithe_model_predict(m, X, &Y));
        const lithe_tensor *Yt = lithe_value_get_tensor(Y);
        int64_t nO = lithe_tensor_shape(Yt)[1], nI = gX->shape[1];
        const float *y = lithe_tensor_data(Yt);
        for (int64_t r = 0; r < gX->shape[0]; r++) {
            float row[16];
            for (int64_t k = 0; k < nI; k++) row[k] = (float)gX->v[r * nI + k];
            lithe_tensor *t = NULL;
            lithe_value *v = NULL, *yr = NULL;
            OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){1, nI}, row, &t));
            OK(lithe_value_tensor(t, &v));
            OK(lithe_model_predict(m, v, &yr));
            const float *yy = lithe_tensor_data(lithe_value_get_tensor(yr));
            for (int64_t o = 0; o < nO; o++)
                if (yy[o] != y[r * nO + o]) {
                    print_error("%s: row %lld, output %lld: alone %.9g, in the batch %.9g\n", specs[c].prefix,
                                (long long)r, (long long)o, (double)yy[o], (double)y[r * nO + o]);
                    fail();
                }
            lithe_tensor_release(t);
            lithe_value_release(v);
            lithe_value_release(yr);
        }
        lithe_value_release(X);
        lithe_value_release(Y);
        lithe_model_free(m);
    }
}

/* Initializers: the scale Thinc's formula gives, seen in the sample's extremes and moments. */
static void test_initializer_scales(void **state) {
    (void)state;
    enum { d0 = 300, d1 = 200 };
    static float w[d0 * d1];
    const int64_t shape[2] = {d0, d1};
    struct {
        lithe_init kind;
        double scale;
        bool normal;
    } cases[] = {
        {LITHE_INIT_GLOROT_UNIFORM, sqrt(6.0 / (d0 + d1)), false}, {LITHE_INIT_GLOROT_NORMAL, sqrt(2.0 / (d0 + d1)), true},
        {LITHE_INIT_HE_UNIFORM, sqrt(6.0 / d1), false},           {LITHE_INIT_HE_NORMAL, sqrt(2.0 / d1), true},
        {LITHE_INIT_LECUN_UNIFORM, sqrt(3.0 / d1), false},        {LITHE_INIT_LECUN_NORMAL, sqrt(1.0 / d1), true},
        {LITHE_INIT_UNIFORM, 0.1, false},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        lithe_rng rng = {.key = 42 + c, .counter = 0};
        OK(lithe_init_fill(cases[c].kind, &rng, 2, shape, w));
        double sum = 0, sq = 0, mx = 0;
        for (int i = 0; i < d0 * d1; i++) {
            sum += w[i];
            sq += (double)w[i] * w[i];
            mx = fmax(mx, fabs(w[i]));
        }
        double n = d0 * d1, mean = sum / n, sd = sqrt(sq / n - mean * mean);
        double want_sd = cases[c].normal ? cases[c].scale : cases[c].scale / sqrt(3.0);
        if (!(fabs(mean) < 0.02 * cases[c].scale && fabs(sd / want_sd - 1) < 0.01)) {
            print_error("initializer %d: mean %g, sd %g, want sd %g\n", (int)cases[c].kind, mean, sd, want_sd);
            fail();
        }
        if (!cases[c].normal) assert_true(mx <= cases[c].scale && mx > 0.999 * cases[c].scale);
    }
    /* zero_init, and normal_init with Thinc's default mean 0 (its scale quirk): all zeros */
    lithe_rng rng = {1, 0};
    for (int k = 0; k < 2; k++) {
        w[7] = 1.0f;
        OK(lithe_init_fill(k ? LITHE_INIT_NORMAL : LITHE_INIT_ZERO, &rng, 2, shape, w));
        for (int i = 0; i < d0 * d1; i++) assert_true(w[i] == 0.0f);
    }
    FAILS(LITHE_ERR_VALUE, lithe_init_fill(LITHE_INIT_DEFAULT, &rng, 2, shape, w));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_init_fill(LITHE_INIT_ZERO, &rng, 0, shape, w));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_init_fill(LITHE_INIT_ZERO, NULL, 2, shape, w));
    /* a layer's default: Swish is he-normal, Sigmoid zeros; an explicit init_W overrides */
    lithe_model *m = NULL;
    lithe_tensor *t = NULL;
    lithe_value *X = NULL;
    float xs[2 * 400] = {0};
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 400}, xs, &t));
    OK(lithe_value_tensor(t, &X));
    lithe_tensor_release(t);
    OK(lithe_dense("Sigmoid.v1", &(lithe_dense_opts){.nO = 300}, &m));
    OK(lithe_model_initialize(m, X, NULL));
    OK(lithe_model_get_param(m, "W", &t));
    for (int i = 0; i < 300 * 400; i++) assert_true(((const float *)lithe_tensor_data(t))[i] == 0.0f);
    lithe_model_free(m);
    OK(lithe_dense("Sigmoid.v1", &(lithe_dense_opts){.nO = 300, .init_W = LITHE_INIT_LECUN_UNIFORM}, &m));
    OK(lithe_model_initialize(m, X, NULL));
    OK(lithe_model_get_param(m, "W", &t));
    double mx = 0;
    for (int i = 0; i < 300 * 400; i++) mx = fmax(mx, fabs(((const float *)lithe_tensor_data(t))[i]));
    assert_true(mx > 0.99 * sqrt(3.0 / 400) && mx <= sqrt(3.0 / 400));
    lithe_model_free(m);
    lithe_value_release(X);
}

static void test_bad_arguments(void **state) {
    (void)state;
    lithe_model *m = (lithe_model *)1;
    FAILS(LITHE_ERR_VALUE, lithe_dense("Relu.v9", NULL, &m));
    assert_null(m);
    assert_non_null(strstr(lithe_last_error(), "Mish.v1"));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_dense(NULL, NULL, &m));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_dense("Relu.v1", NULL, NULL));
    FAILS(LITHE_ERR_VALUE, lithe_dense("Linear.v1", &(lithe_dense_opts){.dropout = 0.5f}, &m));
    assert_non_null(strstr(lithe_last_error(), "Linear.v1"));
    FAILS(LITHE_ERR_VALUE, lithe_dense("Sigmoid.v1", &(lithe_dense_opts){.normalize = true}, &m));
    FAILS(LITHE_ERR_VALUE, lithe_dense("Mish.v1", &(lithe_dense_opts){.dropout = 1.5f}, &m));
    FAILS(LITHE_ERR_VALUE, lithe_dense("Gelu.v1", &(lithe_dense_opts){.nO = -1}, &m));
    FAILS(LITHE_ERR_VALUE, lithe_dense("Gelu.v1", &(lithe_dense_opts){.init_W = (lithe_init)77}, &m));
    FAILS(LITHE_ERR_VALUE, lithe_dense("Maxout.v1", &(lithe_dense_opts){.nP = -2}, &m));
    FAILS(LITHE_ERR_VALUE, lithe_clipped_linear(NULL, 0.0f, 0, 0, 1, &m));
    FAILS(LITHE_ERR_VALUE, lithe_clipped_linear(NULL, 1.0f, 0, 2, 1, &m));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_clipped_linear(NULL, 1.0f, 0, 0, 1, NULL));
    FAILS(LITHE_ERR_VALUE, lithe_layernorm(-1, &m));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_layernorm(3, NULL));
    FAILS(LITHE_ERR_VALUE, lithe_activation("relu_activation.v1", &m));
    FAILS(LITHE_ERR_VALUE, lithe_activation("Relu.v1", &m)); /* takes arguments: lithe_dense */
    FAILS(LITHE_ERR_INVALID_ARG, lithe_activation(NULL, &m));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_activation("Logistic.v1", NULL));

    /* wrong widths and dtypes name the layer and the numbers */
    OK(lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 3, .nI = 4}, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    float x[10] = {0};
    lithe_tensor *t = NULL;
    lithe_value *X = NULL, *Y = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 5}, x, &t));
    OK(lithe_value_tensor(t, &X));
    FAILS(LITHE_ERR_SHAPE, lithe_model_predict(m, X, &Y));
    assert_non_null(strstr(lithe_last_error(), "maxout"));
    assert_non_null(strstr(lithe_last_error(), "5"));
    lithe_model_free(m);
    OK(lithe_layernorm(4, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    FAILS(LITHE_ERR_SHAPE, lithe_model_predict(m, X, &Y));
    assert_non_null(strstr(lithe_last_error(), "layernorm"));
    lithe_model_free(m);
    OK(lithe_layernorm(0, &m));
    FAILS(LITHE_ERR_STATE, lithe_model_initialize(m, NULL, NULL));
    lithe_model_free(m);
    OK(lithe_activation("softmax_activation.v1", &m));
    lithe_tensor *t3 = NULL;
    lithe_value *X3 = NULL;
    OK(lithe_tensor_reshape(t, 3, (int64_t[]){1, 2, 5}, &t3));
    OK(lithe_value_tensor(t3, &X3));
    FAILS(LITHE_ERR_SHAPE, lithe_model_predict(m, X3, &Y));
    lithe_model_free(m);
    OK(lithe_activation("sigmoid_activation.v1", &m));
    OK(lithe_model_predict(m, X3, &Y)); /* any shape */
    lithe_value_release(Y);
    lithe_model_free(m);
    lithe_tensor_release(t3);
    lithe_value_release(X3);
    lithe_tensor_release(t);
    lithe_value_release(X);
}


/* resizable + resize_model against Thinc (3 -> 4 classes, fills 0.5 / -1, then an Adam step with
 * CCE on the new class), and a 10 -> 11 classifier whose first 10 logits do not move. */
static void test_resize_like_thinc(void **state) {
    (void)state;
    lithe_model *sm = NULL, *rz = NULL;
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = 3, .nI = 5, .unnormalized_outputs = true}, &sm));
    OK(lithe_resizable(sm, 0.5f, -1.0f, &rz));
    assert_string_equal(lithe_model_name(rz), "resizable(softmax)");
    lithe_value *X = value_of(get("resize.X")), *Y = NULL;
    OK(lithe_model_initialize(rz, X, NULL));
    lithe_tensor *W0 = tensor_of(get("resize.W0")), *b0 = tensor_of(get("resize.b0"));
    OK(lithe_model_set_param(lithe_model_layer(rz, 0), "W", W0));
    OK(lithe_model_set_param(lithe_model_layer(rz, 0), "b", b0));
    lithe_tensor_release(W0);
    lithe_tensor_release(b0);
    OK(lithe_model_predict(rz, X, &Y));
    expect_close("logits before resizing", lithe_value_get_tensor(Y), get("resize.logits0"), TOL_LAYER);
    lithe_value_release(Y);
    uint64_t old_id = lithe_model_id(lithe_model_layer(rz, 0));
    OK(lithe_resize_model(rz, 4));
    lithe_model *layer = lithe_model_layer(rz, 0);
    assert_true(lithe_model_id(layer) != old_id); /* a new node: fresh optimizer state, as Thinc */
    int64_t nO = 0;
    OK(lithe_model_get_dim(layer, "nO", &nO));
    assert_int_equal(nO, 4);
    lithe_tensor *t = NULL;
    OK(lithe_model_get_param(layer, "W", &t));
    expect_close("W after resizing", t, get("resize.W1"), 0, 0);
    OK(lithe_model_get_param(layer, "b", &t));
    expect_close("b after resizing", t, get("resize.b1"), 0, 0);
    OK(lithe_model_predict(rz, X, &Y));
    expect_close("logits after resizing", lithe_value_get_tensor(Y), get("resize.logits1"), TOL_LAYER);
    lithe_value_release(Y);
    /* a training step on the grown classifier */
    lithe_backprop *bp = NULL;
    lithe_tensor *labels = tensor_of(get("resize.labels")), *d = NULL;
    float loss = 0;
    OK(lithe_model_begin_update(rz, X, &Y, &bp));
    OK(lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(Y), labels, &d, &loss));
    lithe_value *dv = NULL;
    OK(lithe_value_tensor(d, &dv));
    OK(lithe_backprop_run(bp, dv, NULL));
    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.learn_rate = 0.01;
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&oo, &opt));
    OK(lithe_model_finish_update(rz, opt));
    OK(lithe_model_get_param(layer, "W", &t));
    expect_close("W after an Adam step", t, get("resize.W2"), TOL_LAYER);
    OK(lithe_model_get_param(layer, "b", &t));
    expect_close("b after an Adam step", t, get("resize.b2"), TOL_LAYER);
    lithe_optimizer_free(opt);
    lithe_backprop_free(bp);
    lithe_value_release(dv);
    lithe_value_release(Y);
    lithe_tensor_release(d);
    lithe_tensor_release(labels);
    lithe_value_release(X);

    /* shrinking is refused, the same nO changes nothing, a non-resizable node is refused */
    FAILS(LITHE_ERR_VALUE, lithe_resize_model(rz, 2));
    uint64_t id = lithe_model_id(lithe_model_layer(rz, 0));
    OK(lithe_resize_model(rz, 4));
    assert_true(lithe_model_id(lithe_model_layer(rz, 0)) == id);
    FAILS(LITHE_ERR_INVALID_ARG, lithe_resize_model(layer, 5));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_resize_model(NULL, 5));
    lithe_model_free(rz);
    lithe_model *ch = NULL, *a = NULL, *b = NULL;
    OK(lithe_dense("Relu.v1", NULL, &a));
    OK(lithe_dense("Relu.v1", NULL, &b));
    OK(lithe_chain(2, (lithe_model *[]){a, b}, &ch));
    FAILS(LITHE_ERR_UNSUPPORTED, lithe_resizable(ch, 0, 0, &rz)); /* takes ownership: ch is freed */
    FAILS(LITHE_ERR_INVALID_ARG, lithe_resizable(NULL, 0, 0, &rz));
}

static void test_resize_ten_to_eleven_classes(void **state) {
    (void)state;
    enum { B = 7, nI = 12 };
    float x[B * nI];
    for (int i = 0; i < B * nI; i++) x[i] = (float)sin(0.37 * i);
    lithe_tensor *xt = NULL;
    lithe_value *X = NULL, *Y = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){B, nI}, x, &xt));
    OK(lithe_value_tensor(xt, &X));
    lithe_model *sm = NULL, *rz = NULL, *hidden = NULL, *model = NULL;
    OK(lithe_dense("Relu.v1", &(lithe_dense_opts){.nO = 8}, &hidden));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = 10, .unnormalized_outputs = true}, &sm));
    OK(lithe_resizable(sm, 0.0f, 0.0f, &rz));
    OK(lithe_chain(2, (lithe_model *[]){hidden, rz}, &model));
    OK(lithe_model_initialize(model, X, NULL));
    /* train a little so the weights are not Softmax's zeros */
    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.learn_rate = 0.05;
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&oo, &opt));
    int32_t lab[B] = {0, 3, 9, 4, 4, 7, 1};
    lithe_tensor *labels = NULL;
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){B}, lab, &labels));
    for (int step = 0; step < 5; step++) {
        if (step == 3) {
            OK(lithe_model_predict(model, X, &Y));
            float before[B * 10];
            memcpy(before, lithe_tensor_data(lithe_value_get_tensor(Y)), sizeof before);
            lithe_value_release(Y);
            OK(lithe_resize_model(rz, 11));
            OK(lithe_model_predict(model, X, &Y));
            const float *after = lithe_tensor_data(lithe_value_get_tensor(Y));
            assert_int_equal(lithe_tensor_shape(lithe_value_get_tensor(Y))[1], 11);
            for (int i = 0; i < B; i++) {
                for (int c = 0; c < 10; c++) assert_true(after[i * 11 + c] == before[i * 10 + c]);
                assert_true(after[i * 11 + 10] == 0.0f); /* zero fill */
            }
            lithe_value_release(Y);
            lab[0] = 10; /* the new class */
            lithe_tensor_release(labels);
            OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){B}, lab, &labels));
        }
        lithe_backprop *bp = NULL;
        lithe_tensor *d = NULL;
        float loss = 0;
        lithe_value *dv = NULL;
        OK(lithe_model_begin_update(model, X, &Y, &bp));
        OK(lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(Y), labels, &d, &loss));
        assert_true(isfinite(loss));
        OK(lithe_value_tensor(d, &dv));
        OK(lithe_backprop_run(bp, dv, NULL));
        OK(lithe_model_finish_update(model, opt));
        lithe_backprop_free(bp);
        lithe_value_release(dv);
        lithe_value_release(Y);
        lithe_tensor_release(d);
    }
    lithe_optimizer_free(opt);
    lithe_tensor_release(labels);
    lithe_tensor_release(xt);
    lithe_value_release(X);
    lithe_model_free(model);
}

/* copy: new ids, equal and independent params, sharing inside the tree kept; combinator rules. */
static void test_copy_and_combinator_rules(void **state) {
    (void)state;
    lithe_model *shared = dense("Relu.v1", 3, 3), *m = NULL, *c = NULL;
    lithe_model_retain(shared); /* appears twice */
    OK(lithe_chain(2, (lithe_model *[]){shared, shared}, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    OK(lithe_model_copy(m, &c));
    lithe_model *a[8], *b[8];
    size_t na = 0, nb = 0;
    OK(lithe_model_walk(m, a, 8, &na));
    OK(lithe_model_walk(c, b, 8, &nb));
    assert_int_equal(na, 2); /* walk lists a shared node once */
    assert_int_equal(nb, 2);
    assert_true(lithe_model_layer(c, 0) == lithe_model_layer(c, 1));
    assert_true(lithe_model_layer(c, 0) != shared);
    assert_true(lithe_model_id(b[1]) != lithe_model_id(a[1]));
    assert_string_equal(lithe_model_name(c), "relu>>relu");
    lithe_tensor *w1 = NULL, *w2 = NULL;
    OK(lithe_model_get_param(a[1], "W", &w1));
    OK(lithe_model_get_param(b[1], "W", &w2));
    assert_memory_equal(lithe_tensor_data(w1), lithe_tensor_data(w2), 9 * sizeof(float));
    ((float *)lithe_tensor_data(w2))[0] += 1.0f;
    assert_true(((float *)lithe_tensor_data(w1))[0] != ((float *)lithe_tensor_data(w2))[0]);
    lithe_model_free(m);
    lithe_model_free(c);
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_copy(NULL, &c));

    /* add(add(a, b), c) extends the first add; concatenate of one layer is the layer; of none, noop */
    OK(lithe_add(2, (lithe_model *[]){dense("Linear.v1", 2, 2), dense("Linear.v1", 2, 2)}, &m));
    OK(lithe_add(2, (lithe_model *[]){m, dense("Linear.v1", 2, 2)}, &c));
    assert_true(c == m);
    assert_int_equal(lithe_model_n_layers(c), 3);
    lithe_model_free(c);
    lithe_model *one = dense("Relu.v1", 2, 2);
    OK(lithe_concatenate(1, &one, &m));
    assert_true(m == one);
    lithe_model_free(m);
    OK(lithe_concatenate(0, NULL, &m));
    assert_string_equal(lithe_model_name(m), "noop");
    lithe_model_free(m);
    OK(lithe_clone(dense("Relu.v1", 2, 2), 0, &m));
    assert_string_equal(lithe_model_name(m), "noop");
    lithe_model_free(m);
    FAILS(LITHE_ERR_INVALID_ARG, lithe_add(1, (lithe_model *[]){dense("Relu.v1", 2, 2)}, &m));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_add(2, (lithe_model *[]){dense("Relu.v1", 2, 2), NULL}, &m));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_residual(NULL, &m));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_clone(NULL, 2, &m));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_noop(0, NULL, NULL));

    /* add of layers with different widths: a shape error naming the node */
    OK(lithe_add(2, (lithe_model *[]){dense("Linear.v1", 2, 3), dense("Linear.v1", 4, 3)}, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    float x[6] = {0};
    lithe_tensor *t = NULL;
    lithe_value *X = NULL, *Y = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 3}, x, &t));
    OK(lithe_value_tensor(t, &X));
    FAILS(LITHE_ERR_SHAPE, lithe_model_predict(m, X, &Y));
    assert_non_null(strstr(lithe_last_error(), "add"));
    lithe_model_free(m);
    lithe_tensor_release(t);
    lithe_value_release(X);
}

/* ---- finite differences through every differentiable layer and combinator ----
 * L = sum(Y * R) through lithe's own float32 predict, central differences with h = 1e-3 on each
 * input and param element, L accumulated in double: |analytic - fd| <= 2e-3 + 2e-2 |fd|. The
 * layers are the Thinc cases above with their golden params (so the comparison is away from the
 * kinks Thinc's inputs avoid); exact math is checked against float64 in test_kernels. Trees ending
 * in Softmax are left out: Thinc's Softmax backprop takes the loss gradient wrt the logits, not
 * the Jacobian (test_model checks it with CCE). */
static double objective(lithe_model *m, lithe_value *X, const float *R) {
    lithe_value *Y = NULL;
    OK(lithe_model_predict(m, X, &Y));
    const lithe_tensor *t = lithe_value_get_tensor(Y);
    const float *y = lithe_tensor_data(t);
    double L = 0;
    for (int64_t i = 0; i < lithe_tensor_numel(t); i++) L += (double)y[i] * R[i];
    lithe_value_release(Y);
    return L;
}

static void fd_check(const char *what, lithe_model *m, lithe_value *X, const float *R, float *arr, int64_t n,
                     const float *analytic) {
    const float h = 1e-3f;
    for (int64_t i = 0; i < n; i++) {
        float keep = arr[i];
        arr[i] = keep + h;
        double up = objective(m, X, R);
        arr[i] = keep - h;
        double down = objective(m, X, R);
        arr[i] = keep;
        double fd = (up - down) / (double)((keep + h) - (keep - h));
        if (!(fabs(analytic[i] - fd) <= 2e-3 + 2e-2 * fabs(fd))) {
            print_error("%s[%lld]: analytic %.7g, finite differences %.7g\n", what, (long long)i, (double)analytic[i], fd);
            fail();
        }
    }
}

static void test_finite_differences_all_layers(void **state) {
    (void)state;
    static const char *const smooth[] = {"mish", "swish", "gelu", "dish", "sigmoid", "maxout", "maxout_norm",
                                         "layernorm", "logistic", "sigmoid_activation", "softmax_activation",
                                         "concatenate", "add", "residual", "clone", "hardswish",
                                         "hardswishmobilenet", "clipped_linear", "hard_sigmoid", "hard_tanh",
                                         "relu_k"};
    char what[160];
    for (size_t k = 0; k < sizeof smooth / sizeof smooth[0]; k++) {
        const tree_spec *t = NULL;
        for (size_t c = 0; c < sizeof specs / sizeof specs[0]; c++)
            if (!strcmp(specs[c].prefix, smooth[k])) t = &specs[c];
        assert_non_null(t);
        lithe_model *m = build(t);
        const golden *gX = get("tree.%s.X", t->prefix);
        lithe_value *X = value_of(gX), *Y = NULL, *dX = NULL, *Rv = NULL;
        OK(lithe_model_initialize(m, X, NULL));
        lithe_model *nodes[16];
        size_t n = 0;
        OK(lithe_model_walk(m, nodes, 16, &n));
        for (size_t i = 0; i < n; i++)
            for (size_t p = 0; p < lithe_model_n_params(nodes[i]); p++) {
                const char *pn = lithe_model_param_name(nodes[i], p);
                lithe_tensor *v = tensor_of(get("tree.%s.%zu.%s", t->prefix, i, pn));
                OK(lithe_model_set_param(nodes[i], pn, v));
                lithe_tensor_release(v);
            }
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        int64_t ny = lithe_tensor_numel(lithe_value_get_tensor(Y));
        float *R = malloc(sizeof(float) * (size_t)ny);
        assert_non_null(R);
        for (int64_t i = 0; i < ny; i++) R[i] = (float)sin(1.0 + 0.7 * (double)i);
        lithe_tensor *Rt = NULL;
        OK(lithe_tensor_from_data(LITHE_F32, lithe_tensor_ndim(lithe_value_get_tensor(Y)),
                                  lithe_tensor_shape(lithe_value_get_tensor(Y)), R, &Rt));
        OK(lithe_value_tensor(Rt, &Rv));
        OK(lithe_backprop_run(bp, Rv, &dX));
        /* X lives in the value: perturb its data in place */
        float *xd = lithe_tensor_data(lithe_value_get_tensor(X));
        snprintf(what, sizeof what, "%s: dX", t->prefix);
        fd_check(what, m, X, R, xd, gX->n, lithe_tensor_data(lithe_value_get_tensor(dX)));
        for (size_t i = 0; i < n; i++)
            for (size_t p = 0; p < lithe_model_n_params(nodes[i]); p++) {
                const char *pn = lithe_model_param_name(nodes[i], p);
                lithe_tensor *W = NULL, *g = NULL;
                OK(lithe_model_get_param(nodes[i], pn, &W));
                OK(lithe_model_get_grad(nodes[i], pn, &g));
                snprintf(what, sizeof what, "%s: node %zu (%s) d%s", t->prefix, i, lithe_model_name(nodes[i]), pn);
                fd_check(what, m, X, R, lithe_tensor_data(W), lithe_tensor_numel(W), lithe_tensor_data(g));
            }
        free(R);
        lithe_tensor_release(Rt);
        lithe_backprop_free(bp);
        lithe_value_release(X);
        lithe_value_release(Y);
        lithe_value_release(dX);
        lithe_value_release(Rv);
        lithe_model_free(m);
    }
}

/* ---- replace_node, remove_node, freezing, use_averages ---- */

static lithe_status failing_eval(lithe_model *m, void *user) {
    lithe_tensor *W = NULL;
    lithe_model_get_param(lithe_model_layer(m, 0), "W", &W);
    *(lithe_tensor **)user = W; /* what fn saw */
    return lithe_model_set_dim(m, "no_such_dim", 3); /* an error inside the bracket */
}

static void test_model_operations(void **state) {
    (void)state;
    lithe_model *a = dense("Relu.v1", 4, 3), *b = dense("Relu.v1", 4, 4), *c = dense("Linear.v1", 2, 4), *m = NULL;
    lithe_model *d = dense("Mish.v1", 4, 4);
    OK(lithe_chain(3, (lithe_model *[]){a, b, c}, &m));
    bool replaced = false;
    OK(lithe_model_replace_node(m, b, d, &replaced));
    assert_true(replaced);
    assert_true(lithe_model_layer(m, 1) == d);
    lithe_model *stranger = dense("Relu.v1", 1, 1);
    OK(lithe_model_replace_node(m, stranger, d, &replaced));
    assert_false(replaced);
    lithe_model_free(stranger);
    lithe_model_free(d); /* the tree holds its own reference */
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_replace_node(m, m, a, NULL));
    OK(lithe_model_remove_node(m, lithe_model_layer(m, 1)));
    assert_int_equal(lithe_model_n_layers(m), 2);
    assert_true(lithe_model_layer(m, 1) == c);
    lithe_model_free(m);

    /* freezing the hidden layer: an Adam step moves only the head */
    lithe_model *hidden = dense("Relu.v1", 6, 5), *head = NULL;
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = 3}, &head));
    OK(lithe_chain(2, (lithe_model *[]){hidden, head}, &m));
    lithe_value *X = value_of(get("tree.mish.X")), *Y = NULL, *dv = NULL;
    OK(lithe_model_initialize(m, X, NULL));
    OK(lithe_model_set_frozen(hidden, NULL, true));
    assert_true(lithe_model_is_frozen(hidden, "W") && lithe_model_is_frozen(hidden, "b"));
    assert_false(lithe_model_is_frozen(head, "W"));
    FAILS(LITHE_ERR_NOT_FOUND, lithe_model_set_frozen(head, "G", true));
    lithe_tensor *W = NULL, *hw = NULL;
    OK(lithe_model_get_param(hidden, "W", &W));
    float before[30], hb[15];
    memcpy(before, lithe_tensor_data(W), sizeof before);
    OK(lithe_model_get_param(head, "W", &hw));
    memcpy(hb, lithe_tensor_data(hw), sizeof hb);
    lithe_optimizer_opts oo = lithe_adam_defaults();
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&oo, &opt));
    int32_t lab[6] = {0, 1, 2, 0, 1, 2};
    lithe_tensor *labels = NULL, *dt = NULL;
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){6}, lab, &labels));
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    OK(lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(Y), labels, &dt, NULL));
    OK(lithe_value_tensor(dt, &dv));
    OK(lithe_backprop_run(bp, dv, NULL));
    OK(lithe_model_finish_update(m, opt));
    assert_memory_equal(before, lithe_tensor_data(W), sizeof before);
    assert_true(memcmp(hb, lithe_tensor_data(hw), sizeof hb) != 0);
    assert_int_equal(lithe_optimizer_nr_update(opt, hidden, "W"), 0);
    /* a frozen dense param gets no gradient buffer at all (issue 26) */
    assert_false(lithe_model_has_grad(hidden, "W"));
    assert_false(lithe_model_has_grad(hidden, "b"));

    /* use_averages: fn sees the averages, and the params come back even though fn fails */
    lithe_tensor *seen = NULL, *orig = NULL;
    OK(lithe_model_get_param(head, "W", &orig));
    assert_int_equal(lithe_model_use_averages(m, opt, failing_eval, &seen), LITHE_ERR_NOT_FOUND);
    assert_non_null(strstr(lithe_last_error(), "no_such_dim"));
    lithe_tensor *now = NULL;
    OK(lithe_model_get_param(head, "W", &now));
    assert_true(now == orig);
    assert_true(seen != NULL && seen != orig);
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_use_averages(m, opt, NULL, NULL));

    lithe_optimizer_free(opt);
    lithe_backprop_free(bp);
    lithe_value_release(dv);
    lithe_value_release(Y);
    lithe_value_release(X);
    lithe_tensor_release(dt);
    lithe_tensor_release(labels);
    lithe_model_free(m);
}

/* ---- optimizer state: save, continue, and resume bit-exactly elsewhere; hostile blobs ---- */

static void train_steps(lithe_model *m, lithe_optimizer *opt, lithe_value *X, lithe_tensor *labels, int n) {
    for (int i = 0; i < n; i++) {
        lithe_value *Y = NULL, *dv = NULL;
        lithe_backprop *bp = NULL;
        lithe_tensor *d = NULL;
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        OK(lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(Y), labels, &d, NULL));
        OK(lithe_value_tensor(d, &dv));
        OK(lithe_backprop_run(bp, dv, NULL));
        OK(lithe_model_finish_update(m, opt));
        lithe_backprop_free(bp);
        lithe_value_release(Y);
        lithe_value_release(dv);
        lithe_tensor_release(d);
    }
}

static lithe_model *small_net(void) {
    lithe_model *h = NULL, *sm = NULL, *m = NULL;
    OK(lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 6, .nP = 2, .normalize = true}, &h));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = 3}, &sm));
    OK(lithe_chain(2, (lithe_model *[]){h, sm}, &m));
    return m;
}

static void test_optimizer_state_resumes_exactly(void **state) {
    (void)state;
    lithe_value *X = value_of(get("tree.mish.X"));
    int32_t lab[6] = {0, 1, 2, 2, 1, 0};
    lithe_tensor *labels = NULL;
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){6}, lab, &labels));
    static const bool radam[2] = {false, true};
    for (int r = 0; r < 2; r++) {
        lithe_model *m = small_net();
        OK(lithe_model_set_seed(m, 3));
        OK(lithe_model_initialize(m, X, NULL));
        lithe_optimizer_opts oo = lithe_adam_defaults();
        oo.learn_rate = 0.01;
        oo.use_radam = radam[r];
        lithe_optimizer *opt = NULL, *opt2 = NULL;
        OK(lithe_optimizer_new(&oo, &opt));
        train_steps(m, opt, X, labels, 3);
        uint8_t *blob = NULL;
        size_t len = 0;
        OK(lithe_optimizer_save_state(opt, m, &blob, &len));
        lithe_model *m2 = NULL;
        OK(lithe_model_copy(m, &m2)); /* "another process": other node ids, same architecture */
        train_steps(m, opt, X, labels, 4);
        OK(lithe_optimizer_new(&oo, &opt2));
        OK(lithe_optimizer_load_state(opt2, m2, blob, len));
        train_steps(m2, opt2, X, labels, 4);
        lithe_model *a[8], *b[8];
        size_t na = 0, nb = 0;
        OK(lithe_model_walk(m, a, 8, &na));
        OK(lithe_model_walk(m2, b, 8, &nb));
        assert_int_equal(na, nb);
        for (size_t i = 0; i < na; i++)
            for (size_t p = 0; p < lithe_model_n_params(a[i]); p++) {
                const char *pn = lithe_model_param_name(a[i], p);
                lithe_tensor *wa = NULL, *wb = NULL, *va = NULL, *vb = NULL;
                OK(lithe_model_get_param(a[i], pn, &wa));
                OK(lithe_model_get_param(b[i], pn, &wb));
                assert_memory_equal(lithe_tensor_data(wa), lithe_tensor_data(wb),
                                    sizeof(float) * (size_t)lithe_tensor_numel(wa));
                OK(lithe_optimizer_get_average(opt, a[i], pn, &va));
                OK(lithe_optimizer_get_average(opt2, b[i], pn, &vb));
                assert_memory_equal(lithe_tensor_data(va), lithe_tensor_data(vb),
                                    sizeof(float) * (size_t)lithe_tensor_numel(va));
                assert_int_equal(lithe_optimizer_nr_update(opt, a[i], pn), 7);
                assert_int_equal(lithe_optimizer_nr_update(opt2, b[i], pn), 7);
            }
        /* every truncation and a few corruptions are clear errors that leave the optimizer as it was */
        lithe_optimizer *opt3 = NULL;
        OK(lithe_optimizer_new(&oo, &opt3));
        for (size_t cut = 0; cut < len; cut += (cut < 64 ? 1 : 37)) {
            lithe_status st = lithe_optimizer_load_state(opt3, m2, blob, cut);
            assert_true(st == LITHE_ERR_FORMAT || st == LITHE_ERR_SHAPE || st == LITHE_ERR_VALUE);
        }
        uint8_t *bad = malloc(len + 1);
        assert_non_null(bad);
        memcpy(bad, blob, len);
        bad[0] = 'X';
        FAILS(LITHE_ERR_FORMAT, lithe_optimizer_load_state(opt3, m2, bad, len));
        memcpy(bad, blob, len);
        bad[len] = 0;
        FAILS(LITHE_ERR_FORMAT, lithe_optimizer_load_state(opt3, m2, bad, len + 1)); /* trailing byte */
        memcpy(bad, blob, len);
        bad[12] = 200; /* the first entry's node index */
        FAILS(LITHE_ERR_VALUE, lithe_optimizer_load_state(opt3, m2, bad, len));
        assert_int_equal(lithe_optimizer_nr_update(opt3, b[1], lithe_model_param_name(b[1], 0)), 0);
        lithe_model *other = NULL;
        OK(lithe_dense("Relu.v1", &(lithe_dense_opts){.nO = 2, .nI = 2}, &other));
        OK(lithe_model_initialize(other, NULL, NULL));
        lithe_status st = lithe_optimizer_load_state(opt3, other, blob, len);
        assert_true(st == LITHE_ERR_VALUE || st == LITHE_ERR_SHAPE);
        lithe_model_free(other);
        free(bad);
        lithe_buffer_free(blob);
        lithe_optimizer_free(opt);
        lithe_optimizer_free(opt2);
        lithe_optimizer_free(opt3);
        lithe_model_free(m);
        lithe_model_free(m2);
    }
    lithe_tensor_release(labels);
    lithe_value_release(X);
}

/* ---- Embed, HashEmbed (with column) against Thinc ---- */

static lithe_value *ids_value(const golden *g, lithe_dtype dt) {
    lithe_tensor *t = NULL;
    lithe_value *v = NULL;
    OK(lithe_tensor_new(NULL, dt, g->ndim, g->shape, &t));
    if (dt == LITHE_I32) {
        int32_t *p = lithe_tensor_data(t);
        for (int64_t i = 0; i < g->n; i++) p[i] = (int32_t)g->u[i];
    } else {
        memcpy(lithe_tensor_data(t), g->u, sizeof(uint64_t) * (size_t)g->n);
    }
    OK(lithe_value_tensor(t, &v));
    lithe_tensor_release(t);
    return v;
}

static void test_embeddings_match_thinc(void **state) {
    (void)state;
    static const struct {
        const char *prefix;
        bool hashed;
        lithe_embed_opts o;
        lithe_dtype dt;
    } cases[] = {
        {"embed", false, {.nO = 3, .nV = 10}, LITHE_I32},
        {"embed_col", false, {.nO = 3, .nV = 10, .has_column = true, .column = 1}, LITHE_I64},
        {"hashembed", true, {.nO = 4, .nV = 13, .has_seed = true, .seed = 7}, LITHE_U64},
        {"hashembed_col", true, {.nO = 4, .nV = 11, .has_seed = true, .seed = 1, .has_column = true, .column = 0},
         LITHE_U64},
    };
    char what[96];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *p = cases[c].prefix;
        lithe_model *m = NULL;
        if (cases[c].hashed) OK(lithe_hash_embed(&cases[c].o, &m));
        else OK(lithe_embed(&cases[c].o, &m));
        lithe_model *node = lithe_model_n_layers(m) ? lithe_model_layer(m, 1) : m;
        if (cases[c].o.has_column) {
            int64_t col = -1;
            OK(lithe_model_get_attr_int(m, "column", &col));
            assert_int_equal(col, cases[c].o.column);
            assert_string_equal(lithe_model_name(lithe_model_layer(m, 0)), "ints-getitem");
        }
        OK(lithe_model_initialize(m, NULL, NULL));
        lithe_tensor *E = tensor_of(get("%s.E", p));
        OK(lithe_model_set_param(node, "E", E));
        lithe_tensor_release(E);
        lithe_value *ids = ids_value(get("%s.ids", p), cases[c].dt), *Y = NULL, *Yp = NULL, *dY = NULL, *dX = NULL;
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m, ids, &Y, &bp));
        snprintf(what, sizeof what, "%s: Y", p);
        expect_close(what, lithe_value_get_tensor(Y), get("%s.Y", p), TOL_LAYER);
        OK(lithe_model_predict(m, ids, &Yp));
        snprintf(what, sizeof what, "%s: predict", p);
        expect_close(what, lithe_value_get_tensor(Yp), get("%s.Ypredict", p), TOL_LAYER);
        dY = value_of(get("%s.dY", p));
        OK(lithe_backprop_run(bp, dY, &dX));
        lithe_tensor *g = NULL;
        OK(lithe_model_get_grad(node, "E", &g));
        snprintf(what, sizeof what, "%s: dE", p);
        expect_close(what, g, get("%s.dE", p), TOL_LAYER);
        lithe_backprop_free(bp);
        lithe_value_release(ids);
        lithe_value_release(Y);
        lithe_value_release(Yp);
        lithe_value_release(dY);
        lithe_value_release(dX);
        lithe_model_free(m);
    }
    /* out-of-table ids, float ids, bad opts */
    lithe_model *m = NULL;
    OK(lithe_embed(&(lithe_embed_opts){.nO = 2, .nV = 4}, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    int32_t bad[3] = {1, 4, 0};
    lithe_tensor *t = NULL;
    lithe_value *v = NULL, *Y = NULL;
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){3}, bad, &t));
    OK(lithe_value_tensor(t, &v));
    FAILS(LITHE_ERR_VALUE, lithe_model_predict(m, v, &Y));
    assert_non_null(strstr(lithe_last_error(), "id 4 at position 1"));
    lithe_tensor_release(t);
    lithe_value_release(v);
    bad[1] = -1;
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){3}, bad, &t));
    OK(lithe_value_tensor(t, &v));
    FAILS(LITHE_ERR_VALUE, lithe_model_predict(m, v, &Y));
    lithe_tensor_release(t);
    lithe_value_release(v);
    float f[3] = {0};
    OK(lithe_tensor_from_data(LITHE_F32, 1, (int64_t[]){3}, f, &t));
    OK(lithe_value_tensor(t, &v));
    FAILS(LITHE_ERR_DTYPE, lithe_model_predict(m, v, &Y));
    lithe_tensor_release(t);
    lithe_value_release(v);
    lithe_model_free(m);
    FAILS(LITHE_ERR_VALUE, lithe_hash_embed(&(lithe_embed_opts){.nO = 4}, &m));
    FAILS(LITHE_ERR_VALUE, lithe_embed(&(lithe_embed_opts){.nO = 4, .nV = 3, .dropout = 2.0f}, &m));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_embed(NULL, NULL));
    /* dropout at training: whole columns zeroed (one mask over nO), identity at predict */
    OK(lithe_embed(&(lithe_embed_opts){.nO = 64, .nV = 3, .dropout = 0.5f}, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    int32_t two[2] = {1, 1};
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){2}, two, &t));
    OK(lithe_value_tensor(t, &v));
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, v, &Y, &bp));
    const float *y = lithe_tensor_data(lithe_value_get_tensor(Y));
    int zeros = 0;
    for (int j = 0; j < 64; j++) {
        assert_true(y[j] == y[64 + j]); /* same row, same mask */
        zeros += y[j] == 0.0f;
    }
    assert_true(zeros > 10 && zeros < 54);
    lithe_backprop_free(bp);
    lithe_value_release(Y);
    lithe_tensor_release(t);
    lithe_value_release(v);
    lithe_model_free(m);
}

/* ---- tuplify and map_list against Thinc ---- */

static void test_tuplify_map_list_match_thinc(void **state) {
    (void)state;
    lithe_model *tp = NULL;
    OK(lithe_tuplify(2, (lithe_model *[]){dense("Relu.v1", 3, 5), dense("Linear.v1", 2, 5)}, &tp));
    assert_string_equal(lithe_model_name(tp), "tuple(relu, linear)");
    lithe_value *X = value_of(get("tuplify.X")), *Y = NULL, *dX = NULL;
    OK(lithe_model_initialize(tp, X, NULL));
    lithe_model *nodes[4];
    size_t n = 0;
    OK(lithe_model_walk(tp, nodes, 4, &n));
    for (size_t i = 0; i < n; i++)
        for (size_t p = 0; p < lithe_model_n_params(nodes[i]); p++) {
            const char *pn = lithe_model_param_name(nodes[i], p);
            lithe_tensor *v = tensor_of(get("tuplify.%zu.%s", i, pn));
            OK(lithe_model_set_param(nodes[i], pn, v));
            lithe_tensor_release(v);
        }
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(tp, X, &Y, &bp));
    assert_int_equal(lithe_value_kind_of(Y), LITHE_VALUE_TUPLE);
    expect_close("tuplify Y0", lithe_value_get_tensor(lithe_value_item(Y, 0)), get("tuplify.Y0"), TOL_LAYER);
    expect_close("tuplify Y1", lithe_value_get_tensor(lithe_value_item(Y, 1)), get("tuplify.Y1"), TOL_LAYER);
    lithe_value *d0 = value_of(get("tuplify.dY0")), *d1 = value_of(get("tuplify.dY1")), *dYs = NULL;
    OK(lithe_value_tuple(2, (lithe_value *[]){d0, d1}, &dYs));
    OK(lithe_backprop_run(bp, dYs, &dX));
    expect_close("tuplify dX", lithe_value_get_tensor(dX), get("tuplify.dX"), TOL_LAYER);
    FAILS(LITHE_ERR_SHAPE, lithe_backprop_run(bp, d0, NULL));
    lithe_backprop_free(bp);
    lithe_value_release(Y);
    lithe_value_release(dX);
    lithe_value_release(d0);
    lithe_value_release(d1);
    lithe_value_release(dYs);
    lithe_value_release(X);
    lithe_model_free(tp);

    lithe_model *ml = NULL;
    OK(lithe_map_list(dense("Relu.v1", 3, 5), &ml));
    lithe_value *x0 = value_of(get("map_list.X0")), *x1 = value_of(get("map_list.X1")), *Xs = NULL;
    OK(lithe_value_list(2, (lithe_value *[]){x0, x1}, &Xs));
    OK(lithe_model_initialize(ml, Xs, NULL));
    lithe_tensor *W = tensor_of(get("map_list.W")), *b = tensor_of(get("map_list.b"));
    OK(lithe_model_set_param(lithe_model_layer(ml, 0), "W", W));
    OK(lithe_model_set_param(lithe_model_layer(ml, 0), "b", b));
    lithe_tensor_release(W);
    lithe_tensor_release(b);
    OK(lithe_model_begin_update(ml, Xs, &Y, &bp));
    assert_int_equal(lithe_value_kind_of(Y), LITHE_VALUE_LIST);
    lithe_value *g0 = value_of(get("map_list.dY0")), *g1 = value_of(get("map_list.dY1")), *gs = NULL;
    OK(lithe_value_list(2, (lithe_value *[]){g0, g1}, &gs));
    OK(lithe_backprop_run(bp, gs, &dX));
    char what[64];
    for (size_t i = 0; i < 2; i++) {
        snprintf(what, sizeof what, "map_list Y%zu", i);
        expect_close(what, lithe_value_get_tensor(lithe_value_item(Y, i)), get("map_list.Y%zu", i), TOL_LAYER);
        snprintf(what, sizeof what, "map_list dX%zu", i);
        expect_close(what, lithe_value_get_tensor(lithe_value_item(dX, i)), get("map_list.dX%zu", i), TOL_LAYER);
    }
    lithe_tensor *gW = NULL;
    OK(lithe_model_get_grad(lithe_model_layer(ml, 0), "W", &gW));
    expect_close("map_list dW", gW, get("map_list.dW"), TOL_LAYER);
    lithe_backprop_free(bp);
    lithe_value *vals[] = {x1, Xs, g0, g1, gs, dX, Y};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) lithe_value_release(vals[i]);
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_predict(ml, x0, &Y)); /* not a list */
    lithe_value_release(x0);
    lithe_model_free(ml);
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tuplify(1, (lithe_model *[]){dense("Relu.v1", 1, 1)}, &tp));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_map_list(NULL, &ml));
    FAILS(LITHE_ERR_VALUE, lithe_multisoftmax(2, (const int64_t[]){2, 0}, 3, &ml));
    FAILS(LITHE_ERR_VALUE, lithe_softmax(&(lithe_softmax_opts){.version1 = true, .temperature = 2.0f}, &ml));
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layers_match_thinc),
        cmocka_unit_test(test_normalize_dropout_trees),
        cmocka_unit_test(test_dish_finite_differences),
        cmocka_unit_test(test_finite_differences_all_layers),
        cmocka_unit_test(test_batched_equals_row_by_row),
        cmocka_unit_test(test_initializer_scales),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_resize_like_thinc),
        cmocka_unit_test(test_resize_ten_to_eleven_classes),
        cmocka_unit_test(test_copy_and_combinator_rules),
        cmocka_unit_test(test_model_operations),
        cmocka_unit_test(test_optimizer_state_resumes_exactly),
        cmocka_unit_test(test_embeddings_match_thinc),
        cmocka_unit_test(test_tuplify_map_list_match_thinc),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
