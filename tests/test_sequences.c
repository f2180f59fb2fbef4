/* The sequence layers against the real Thinc 8.1.7 (tests/golden/gen_sequences_goldens.py): the
 * transfer layers, the with_* combinators, the Ragged reductions and expand_window — outputs and
 * gradients — plus finite differences against float64 sums, empty batches and zero-length
 * sequences, batched == one sequence at a time, clear errors for wrong input, and a spaCy-style
 * tagger loaded from Thinc's bytes. */
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

#define ATOL 1e-5
#define RTOL 1e-4

/* ---- values from golden records (NAME.n / NAME.data+lengths / NAME.data+size_at_t / NAME) ---- */

static lithe_value *gvalue(const char *name) {
    lithe_value *v = NULL;
    const golden *n = find("%s.n", name);
    if (n) {
        size_t count = (size_t)n->v[0];
        lithe_value **items = calloc(count ? count : 1, sizeof *items);
        for (size_t i = 0; i < count; i++) {
            char sub[96];
            snprintf(sub, sizeof sub, "%s.%zu", name, i);
            items[i] = gvalue(sub);
        }
        if (find("%s.tuple", name)) OK(lithe_value_tuple(count, items, &v));
        else OK(lithe_value_list(count, items, &v));
        for (size_t i = 0; i < count; i++) lithe_value_release(items[i]);
        free(items);
        return v;
    }
    if (find("%s.size_at_t", name)) {
        lithe_tensor *t[4] = {tensor_of(get("%s.data", name)), tensor_of(get("%s.size_at_t", name)),
                              tensor_of(get("%s.lengths", name)), tensor_of(get("%s.indices", name))};
        OK(lithe_value_padded(t[0], t[1], t[2], t[3], &v));
        for (int i = 0; i < 4; i++) lithe_tensor_release(t[i]);
        return v;
    }
    if (find("%s.lengths", name)) {
        lithe_tensor *d = tensor_of(get("%s.data", name)), *l = tensor_of(get("%s.lengths", name));
        OK(lithe_value_ragged(d, l, &v));
        lithe_tensor_release(d);
        lithe_tensor_release(l);
        return v;
    }
    return value_of(get("%s", name));
}

static void expect_ints(const char *what, const lithe_tensor *t, const golden *g) {
    assert_int_equal(lithe_tensor_numel(t), g->n);
    int32_t *buf = malloc(sizeof(int32_t) * (size_t)(g->n ? g->n : 1));
    OK(lithe_tensor_read(t, buf, sizeof(int32_t) * (size_t)g->n));
    for (int64_t i = 0; i < g->n; i++)
        if (buf[i] != (int32_t)g->v[i]) {
            print_error("%s[%lld]: %d, Thinc's %d\n", what, (long long)i, buf[i], (int32_t)g->v[i]);
            fail();
        }
    free(buf);
}

/* A value equals the golden value NAME: same kind, same structure, data within tolerance. */
static void expect_val(const lithe_value *v, const char *name) {
    char what[160];
    snprintf(what, sizeof what, "%s", name);
    if (find("%s.n", name)) {
        if (lithe_value_kind_of(v) != LITHE_VALUE_LIST && lithe_value_kind_of(v) != LITHE_VALUE_TUPLE) {
            print_error("%s: expected a list or tuple, got kind %d\n", name, (int)lithe_value_kind_of(v));
            fail();
        }
        size_t count = (size_t)get("%s.n", name)->v[0];
        assert_int_equal(lithe_value_len(v), count);
        for (size_t i = 0; i < count; i++) {
            char sub[96];
            snprintf(sub, sizeof sub, "%s.%zu", name, i);
            expect_val(lithe_value_item(v, i), sub);
        }
    } else if (find("%s.size_at_t", name)) {
        assert_int_equal(lithe_value_kind_of(v), LITHE_VALUE_PADDED);
        expect_close(what, lithe_value_field(v, "data"), get("%s.data", name), ATOL, RTOL);
        expect_ints("size_at_t", lithe_value_field(v, "size_at_t"), get("%s.size_at_t", name));
        expect_ints("lengths", lithe_value_field(v, "lengths"), get("%s.lengths", name));
        expect_ints("indices", lithe_value_field(v, "indices"), get("%s.indices", name));
    } else if (find("%s.lengths", name)) {
        assert_int_equal(lithe_value_kind_of(v), LITHE_VALUE_RAGGED);
        expect_close(what, lithe_value_field(v, "data"), get("%s.data", name), ATOL, RTOL);
        expect_ints("lengths", lithe_value_field(v, "lengths"), get("%s.lengths", name));
    } else {
        assert_int_equal(lithe_value_kind_of(v), LITHE_VALUE_TENSOR);
        expect_close(what, lithe_value_get_tensor(v), get("%s", name), ATOL, RTOL);
    }
}

/* Forward (training) and backprop on the recorded X and dY, against Thinc's Y and dX. */
static void run_case(lithe_model *m, const char *name, bool check_dX) {
    char buf[96];
    snprintf(buf, sizeof buf, "%s.X", name);
    lithe_value *X = gvalue(buf), *Y = NULL, *dY = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    snprintf(buf, sizeof buf, "%s.Y", name);
    expect_val(Y, buf);
    if (check_dX) {
        snprintf(buf, sizeof buf, "%s.dY", name);
        dY = gvalue(buf);
        OK(lithe_backprop_run(bp, dY, &dX));
        snprintf(buf, sizeof buf, "%s.dX", name);
        expect_val(dX, buf);
    }
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(dY);
    lithe_value_release(dX);
    lithe_backprop_free(bp);
}

/* A dense layer with Thinc's recorded W and b. */
static lithe_model *dense(const char *layer, const char *name) {
    const golden *W = get("%s.W", name);
    lithe_model *m = NULL;
    OK(lithe_dense(layer, &(lithe_dense_opts){.nO = W->shape[0], .nI = W->shape[1]}, &m));
    lithe_tensor *w = tensor_of(W), *b = tensor_of(get("%s.b", name));
    OK(lithe_model_set_param(m, "W", w));
    OK(lithe_model_set_param(m, "b", b));
    lithe_tensor_release(w);
    lithe_tensor_release(b);
    return m;
}

/* ---- finite differences: d/dx sum(Y * dY) against the backprop, every float of the input ---- */

/* The float32 tensors holding a value's data, in order (tensor, Ragged / Padded data, items). */
static size_t float_leaves(const lithe_value *v, lithe_tensor **out, size_t cap, size_t n) {
    switch (lithe_value_kind_of(v)) {
    case LITHE_VALUE_LIST:
    case LITHE_VALUE_TUPLE:
        for (size_t i = 0; i < lithe_value_len(v); i++) n = float_leaves(lithe_value_item(v, i), out, cap, n);
        return n;
    default: {
        lithe_tensor *t = lithe_value_get_tensor(v);
        if (t && lithe_tensor_dtype(t) == LITHE_F32 && n < cap) out[n++] = t;
        return n;
    }
    }
}

static double dot_value(const lithe_value *a, const lithe_value *b) {
    lithe_tensor *ta[64], *tb[64];
    size_t na = float_leaves(a, ta, 64, 0), nb = float_leaves(b, tb, 64, 0);
    assert_int_equal(na, nb);
    double s = 0;
    for (size_t i = 0; i < na; i++) {
        int64_t n = lithe_tensor_numel(ta[i]);
        assert_int_equal(n, lithe_tensor_numel(tb[i]));
        float *x = malloc(sizeof(float) * (size_t)(n ? n : 1)), *y = malloc(sizeof(float) * (size_t)(n ? n : 1));
        OK(lithe_tensor_read(ta[i], x, sizeof(float) * (size_t)n));
        OK(lithe_tensor_read(tb[i], y, sizeof(float) * (size_t)n));
        for (int64_t k = 0; k < n; k++) s += (double)x[k] * y[k];
        free(x);
        free(y);
    }
    return s;
}

static void fd_check(lithe_model *m, const char *name) {
    char buf[96];
    snprintf(buf, sizeof buf, "%s.X", name);
    lithe_value *X = gvalue(buf), *Y = NULL, *dX = NULL, *dY = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    snprintf(buf, sizeof buf, "%s.dY", name);
    dY = find("%s.dY.n", name) || find("%s.dY", name) || find("%s.dY.data", name) ? gvalue(buf) : NULL;
    if (!dY) { /* no recorded gradient (Thinc's backprop is broken there): dY = 1 + Y */
        dY = lithe_value_retain(Y);
    }
    OK(lithe_backprop_run(bp, dY, &dX));
    lithe_tensor *xs[64], *ds[64];
    size_t nx = float_leaves(X, xs, 64, 0);
    assert_int_equal(nx, float_leaves(dX, ds, 64, 0));
    double worst = 0;
    for (size_t i = 0; i < nx; i++) {
        int64_t n = lithe_tensor_numel(xs[i]);
        if (!n) continue;
        float *x = malloc(sizeof(float) * (size_t)n), *g = malloc(sizeof(float) * (size_t)n);
        OK(lithe_tensor_read(xs[i], x, sizeof(float) * (size_t)n));
        OK(lithe_tensor_read(ds[i], g, sizeof(float) * (size_t)n));
        for (int64_t k = 0; k < n; k++) {
            const float h = 1e-3f, orig = x[k];
            double f[2];
            for (int side = 0; side < 2; side++) {
                x[k] = orig + (side ? -h : h);
                OK(lithe_tensor_write(xs[i], x, sizeof(float) * (size_t)n));
                lithe_value *Yp = NULL;
                OK(lithe_model_predict(m, X, &Yp));
                f[side] = dot_value(Yp, dY);
                lithe_value_release(Yp);
            }
            x[k] = orig;
            OK(lithe_tensor_write(xs[i], x, sizeof(float) * (size_t)n));
            double fd = (f[0] - f[1]) / (2.0 * h), err = fabs(fd - g[k]) / (1e-2 + 1e-2 * fabs(fd));
            if (err > worst) worst = err;
            if (err > 1.0) {
                print_error("%s: d/dx[%zu][%lld] finite difference %g, backprop %g\n", name, i, (long long)k, fd,
                            (double)g[k]);
                fail();
            }
        }
        free(x);
        free(g);
    }
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(dY);
    lithe_value_release(dX);
    lithe_backprop_free(bp);
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_transfers(void **state) {
    (void)state;
    static const struct {
        const char *name;
        lithe_status (*make)(lithe_model **);
    } cases[] = {{"list2ragged", lithe_list2ragged},   {"ragged2list", lithe_ragged2list},
                 {"list2padded", lithe_list2padded},   {"padded2list", lithe_padded2list},
                 {"list2array", lithe_list2array},     {"list2ragged_empty_item", lithe_list2ragged},
                 {"list2padded_single", lithe_list2padded}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lithe_model *m = NULL;
        OK(cases[i].make(&m));
        run_case(m, cases[i].name, true);
        lithe_model_free(m);
    }
}

static void test_with_array(void **state) {
    (void)state;
    for (int pad = 0; pad <= 2; pad += 2) {
        char name[64];
        snprintf(name, sizeof name, "with_array_list_pad%d", pad);
        lithe_model *m = NULL;
        OK(lithe_with_array(dense("Relu.v1", name), pad, &m));
        run_case(m, name, true);
        fd_check(m, name);
        lithe_model_free(m);
    }
    lithe_model *m = NULL;
    OK(lithe_with_array(dense("Relu.v1", "with_array_ragged"), 0, &m));
    run_case(m, "with_array_ragged", true);
    lithe_model_free(m);
    OK(lithe_with_array2d(dense("Relu.v1", "with_array2d_padded"), 0, &m));
    run_case(m, "with_array2d_padded", true);
    fd_check(m, "with_array2d_padded");
    lithe_model_free(m);
}

static void test_with_ragged_padded_list(void **state) {
    (void)state;
    lithe_model *m = NULL, *w = NULL;
    const char *ragged[] = {"with_ragged_list", "with_ragged_padded"};
    for (int i = 0; i < 2; i++) {
        OK(lithe_expand_window(1, &w));
        OK(lithe_with_ragged(w, &m));
        run_case(m, ragged[i], true);
        fd_check(m, ragged[i]);
        lithe_model_free(m);
    }
    const char *padded[] = {"with_padded_list", "with_padded_ragged", "with_padded_array"};
    for (int i = 0; i < 3; i++) {
        OK(lithe_with_array2d(dense("Relu.v1", padded[i]), 0, &w));
        OK(lithe_with_padded(w, &m));
        run_case(m, padded[i], true);
        fd_check(m, padded[i]);
        lithe_model_free(m);
    }
    const char *list[] = {"with_list_ragged", "with_list_padded"};
    for (int i = 0; i < 2; i++) {
        OK(lithe_with_array(dense("Relu.v1", list[i]), 0, &w));
        OK(lithe_with_list(w, &m));
        run_case(m, list[i], true);
        fd_check(m, list[i]);
        lithe_model_free(m);
    }
}

static void test_with_flatten_getitem_reshape(void **state) {
    (void)state;
    lithe_model *m = NULL, *w = NULL;
    OK(lithe_with_array(dense("Relu.v1", "with_flatten_v2"), 0, &w));
    OK(lithe_with_flatten(w, 2, &m));
    run_case(m, "with_flatten_v2", true);
    fd_check(m, "with_flatten_v2");
    lithe_model_free(m);

    lithe_model *parts[2] = {NULL, dense("Relu.v1", "with_flatten_v1")};
    OK(lithe_list2array(&parts[0]));
    OK(lithe_chain(2, parts, &w));
    OK(lithe_with_flatten(w, 1, &m));
    run_case(m, "with_flatten_v1", false); /* Thinc's v1 backprop is broken: finite differences instead */
    fd_check(m, "with_flatten_v1");
    lithe_model_free(m);

    OK(lithe_with_getitem(1, dense("Relu.v1", "with_getitem"), &m));
    run_case(m, "with_getitem", true);
    fd_check(m, "with_getitem");
    lithe_model_free(m);

    OK(lithe_with_reshape(dense("Linear.v1", "with_reshape"), &m));
    run_case(m, "with_reshape", false); /* Thinc's backprop needs nO == nI: finite differences */
    fd_check(m, "with_reshape");
    int64_t nO = 0, nI = 0; /* Thinc sets with_reshape's dims from the child at initialize */
    lithe_value *X = gvalue("with_reshape.X");
    OK(lithe_model_initialize(m, X, NULL));
    OK(lithe_model_get_dim(m, "nO", &nO));
    OK(lithe_model_get_dim(m, "nI", &nI));
    assert_int_equal(nO, 2);
    assert_int_equal(nI, 3);
    lithe_value_release(X);
    lithe_model_free(m);
}

static void test_reductions(void **state) {
    (void)state;
    static const struct {
        const char *name;
        lithe_status (*make)(lithe_model **);
    } cases[] = {{"reduce_sum", lithe_reduce_sum},           {"reduce_mean", lithe_reduce_mean},
                 {"reduce_max", lithe_reduce_max},           {"reduce_first", lithe_reduce_first},
                 {"reduce_last", lithe_reduce_last},         {"reduce_sum_zero", lithe_reduce_sum},
                 {"reduce_mean_zero", lithe_reduce_mean},    {"reduce_max_tie", lithe_reduce_max}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        lithe_model *m = NULL;
        OK(cases[i].make(&m));
        run_case(m, cases[i].name, true);
        if (strcmp(cases[i].name, "reduce_max_tie")) fd_check(m, cases[i].name); /* ties have no derivative */
        lithe_model_free(m);
    }
}

static void test_expand_window(void **state) {
    (void)state;
    const char *names[] = {"expand_window1_array", "expand_window1_ragged", "expand_window2_array",
                           "expand_window2_ragged", "expand_window1_ragged_zero"};
    for (int i = 0; i < 5; i++) {
        lithe_model *m = NULL;
        OK(lithe_expand_window(names[i][13] - '0', &m));
        run_case(m, names[i], true);
        fd_check(m, names[i]);
        lithe_model_free(m);
    }
}

/* Empty batches and zero-length sequences pass through every layer with the right shapes. */
static void test_empty(void **state) {
    (void)state;
    lithe_value *empty = NULL, *Y = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_value_list(0, NULL, &empty));
    lithe_status (*makers[])(lithe_model **) = {lithe_list2ragged, lithe_list2padded, lithe_list2array};
    for (int i = 0; i < 3; i++) {
        lithe_model *m = NULL;
        OK(makers[i](&m));
        OK(lithe_model_begin_update(m, empty, &Y, &bp));
        lithe_tensor *data = lithe_value_get_tensor(Y);
        assert_non_null(data);
        assert_int_equal(lithe_tensor_numel(data), 0);
        OK(lithe_backprop_run(bp, Y, &dX));
        assert_int_equal(lithe_value_kind_of(dX), LITHE_VALUE_LIST);
        assert_int_equal(lithe_value_len(dX), 0);
        lithe_value_release(Y);
        lithe_value_release(dX);
        lithe_backprop_free(bp);
        lithe_model_free(m);
    }
    /* reduce_* over an empty batch: (0, O) */
    lithe_tensor *d = NULL, *l = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){0, 3}, &d));
    OK(lithe_tensor_new(NULL, LITHE_I32, 1, (int64_t[]){0}, &l));
    lithe_value *R = NULL;
    OK(lithe_value_ragged(d, l, &R));
    lithe_status (*reducers[])(lithe_model **) = {lithe_reduce_sum, lithe_reduce_mean, lithe_reduce_max,
                                                  lithe_reduce_first, lithe_reduce_last};
    for (int i = 0; i < 5; i++) {
        lithe_model *m = NULL;
        OK(reducers[i](&m));
        OK(lithe_model_begin_update(m, R, &Y, &bp));
        assert_int_equal(lithe_tensor_shape(lithe_value_get_tensor(Y))[0], 0);
        assert_int_equal(lithe_tensor_shape(lithe_value_get_tensor(Y))[1], 3);
        OK(lithe_backprop_run(bp, Y, &dX));
        assert_int_equal(lithe_value_kind_of(dX), LITHE_VALUE_RAGGED);
        lithe_value_release(Y);
        lithe_value_release(dX);
        lithe_backprop_free(bp);
        lithe_model_free(m);
    }
    lithe_value_release(R);
    lithe_tensor_release(d);
    lithe_tensor_release(l);
    lithe_value_release(empty);
}

static void expect_error(lithe_status got, lithe_status want, const char *needle) {
    if (got != want || !strstr(lithe_last_error(), needle)) {
        print_error("expected %s mentioning '%s', got %s: %s\n", lithe_status_str(want), needle, lithe_status_str(got),
                    lithe_last_error());
        fail();
    }
}

static void test_errors(void **state) {
    (void)state;
    lithe_tensor *X = NULL, *l = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){3, 2}, &X));
    int32_t lens[] = {3, 0};
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){2}, lens, &l));
    lithe_value *arr = NULL, *R = NULL, *Y = NULL;
    OK(lithe_value_tensor(X, &arr));
    OK(lithe_value_ragged(X, l, &R));
    lithe_model *m = NULL;
    OK(lithe_reduce_sum(&m));
    expect_error(lithe_model_predict(m, arr, &Y), LITHE_ERR_INVALID_ARG, "reduce_sum");
    lithe_model_free(m);
    lithe_status (*strict[])(lithe_model **) = {lithe_reduce_max, lithe_reduce_first, lithe_reduce_last};
    for (int i = 0; i < 3; i++) {
        OK(strict[i](&m));
        expect_error(lithe_model_predict(m, R, &Y), LITHE_ERR_SHAPE, "sequence 1 of 2 is empty");
        lithe_model_free(m);
    }
    OK(lithe_ragged2list(&m));
    expect_error(lithe_model_predict(m, arr, &Y), LITHE_ERR_INVALID_ARG, "ragged2list");
    lithe_model_free(m);
    /* a list of arrays of different widths */
    lithe_tensor *Z = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){1, 5}, &Z));
    lithe_value *items[2] = {arr, NULL}, *list = NULL;
    OK(lithe_value_tensor(Z, &items[1]));
    OK(lithe_value_list(2, items, &list));
    OK(lithe_list2ragged(&m));
    expect_error(lithe_model_predict(m, list, &Y), LITHE_ERR_SHAPE, "list item 1");
    lithe_model_free(m);
    OK(lithe_list2padded(&m));
    expect_error(lithe_model_predict(m, list, &Y), LITHE_ERR_SHAPE, "item 1");
    lithe_model_free(m);
    /* with_getitem outside the tuple, expand_window on a list */
    lithe_model *relu = NULL;
    OK(lithe_dense("Relu.v1", &(lithe_dense_opts){.nO = 2, .nI = 2}, &relu));
    OK(lithe_with_getitem(5, relu, &m));
    lithe_value *tup = NULL;
    OK(lithe_value_tuple(2, items, &tup));
    expect_error(lithe_model_predict(m, tup, &Y), LITHE_ERR_SHAPE, "idx 5");
    lithe_model_free(m);
    OK(lithe_expand_window(1, &m));
    expect_error(lithe_model_predict(m, list, &Y), LITHE_ERR_INVALID_ARG, "expand_window");
    lithe_model_free(m);
    expect_error(lithe_expand_window(-1, &m), LITHE_ERR_VALUE, "window_size");
    assert_null(m);
    expect_error(lithe_with_array(NULL, 0, &m), LITHE_ERR_INVALID_ARG, "layer is NULL");
    OK(lithe_dense("Relu.v1", &(lithe_dense_opts){.nO = 2, .nI = 2}, &relu));
    expect_error(lithe_with_array(relu, -1, &m), LITHE_ERR_VALUE, "pad -1");
    assert_null(m);
    lithe_value_release(tup);
    lithe_value_release(list);
    lithe_value_release(items[1]);
    lithe_value_release(arr);
    lithe_value_release(R);
    lithe_tensor_release(Z);
    lithe_tensor_release(X);
    lithe_tensor_release(l);
}

/* Thinc's array_getitem family with numpy index strings, forward and backprop. */
static char *index_text(const char *name) {
    const golden *g = get("%s.index", name);
    char *t = calloc((size_t)g->n + 1, 1);
    for (int64_t i = 0; i < g->n; i++) t[i] = (char)g->v[i];
    return t;
}

static void test_getitem(void **state) {
    (void)state;
    const char *names[] = {"getitem_col", "getitem_rows_step", "getitem_list", "getitem_last", "getitem_reverse",
                           "getitem_list_cols"};
    for (int i = 0; i < 6; i++) {
        char *text = index_text(names[i]);
        lithe_model *m = NULL;
        OK(lithe_array_getitem("floats", text, &m));
        run_case(m, names[i], true);
        lithe_model_free(m);
        free(text);
    }
    /* repeated list entries: the forward is numpy's; the gradient adds (finite differences) */
    char *text = index_text("getitem_dup");
    lithe_model *m = NULL;
    OK(lithe_array_getitem("array", text, &m));
    run_case(m, "getitem_dup", false);
    fd_check(m, "getitem_dup");
    lithe_model_free(m);
    free(text);
    /* integer ids through ints-getitem with an index (Embed's column path keeps working) */
    OK(lithe_array_getitem("ints", "[:, 2]", &m));
    lithe_value *X = gvalue("getitem_ints.X"), *Y = NULL;
    OK(lithe_model_predict(m, X, &Y));
    expect_ints("getitem_ints.Y", lithe_value_get_tensor(Y), get("getitem_ints.Y"));
    lithe_value_release(Y);
    lithe_model_free(m);
    /* bad index text and out-of-bounds indices are errors */
    expect_error(lithe_array_getitem("array", "[1, [0, 1], [2]]", &m), LITHE_ERR_VALUE, "index");
    expect_error(lithe_array_getitem("array", "[:, 3", &m), LITHE_ERR_VALUE, "index");
    expect_error(lithe_array_getitem("vectors", "[0]", &m), LITHE_ERR_VALUE, "variant");
    OK(lithe_array_getitem("array", "[:, 7]", &m));
    expect_error(lithe_model_predict(m, X, &Y), LITHE_ERR_SHAPE, "out of bounds");
    lithe_model_free(m);
    /* the .lithe file keeps the index */
    OK(lithe_array_getitem("floats", "[::-1, 1:4]", &m));
    uint8_t *file = NULL;
    size_t len = 0;
    lithe_model *back = NULL;
    OK(lithe_model_save_bytes(m, NULL, &file, &len));
    OK(lithe_model_load_bytes(file, len, &back));
    lithe_buffer_free(file);
    lithe_value *Xr = gvalue("getitem_reverse.X");
    OK(lithe_model_predict(back, Xr, &Y));
    expect_val(Y, "getitem_reverse.Y");
    lithe_value_release(Y);
    lithe_value_release(Xr);
    lithe_value_release(X);
    lithe_model_free(back);
    lithe_model_free(m);
}

/* with_cpu: on the CPU the same as without; on Vulkan (when a device is there) the child's params
 * stay on the CPU while the rest moves, and outputs and gradients agree with the CPU run. */
static void test_with_cpu(void **state) {
    (void)state;
    lithe_model *inner = dense("Relu.v1", "with_array_ragged"), *wc = NULL, *lin = NULL, *m = NULL;
    OK(lithe_with_cpu(inner, &wc));
    OK(lithe_dense("Linear.v1", &(lithe_dense_opts){.nO = 3, .nI = 4}, &lin));
    OK(lithe_chain(2, (lithe_model *[]){wc, lin}, &m));
    lithe_value *X = value_of(get("with_array_ragged.X.data")), *Y = NULL, *dX = NULL;
    OK(lithe_model_initialize(m, X, NULL));
    lithe_tensor *W = tensor_of(get("with_array_ragged.W")), *b = tensor_of(get("with_array_ragged.b"));
    OK(lithe_model_set_param(inner, "W", W));
    OK(lithe_model_set_param(inner, "b", b));
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    OK(lithe_backprop_run(bp, Y, &dX));
    float y_cpu[64], dx_cpu[64];
    lithe_tensor *Yt = lithe_value_get_tensor(Y), *dXt = lithe_value_get_tensor(dX);
    OK(lithe_tensor_read(Yt, y_cpu, sizeof(float) * (size_t)lithe_tensor_numel(Yt)));
    OK(lithe_tensor_read(dXt, dx_cpu, sizeof(float) * (size_t)lithe_tensor_numel(dXt)));
    int64_t ny = lithe_tensor_numel(Yt), ndx = lithe_tensor_numel(dXt);
    lithe_value_release(Y);
    lithe_value_release(dX);
    lithe_backprop_free(bp);
    lithe_backend *vk = NULL;
    if (lithe_backend_get("vulkan", &vk) == LITHE_OK) {
        OK(lithe_model_set_backend(m, vk));
        lithe_tensor *p = NULL;
        OK(lithe_model_get_param(inner, "W", &p));
        assert_string_equal(lithe_backend_name(lithe_tensor_backend(p)), "cpu");
        OK(lithe_model_get_param(lin, "W", &p));
        assert_string_equal(lithe_backend_name(lithe_tensor_backend(p)), "vulkan");
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        OK(lithe_backprop_run(bp, Y, &dX));
        float y[64], dx[64];
        OK(lithe_tensor_read(lithe_value_get_tensor(Y), y, sizeof(float) * (size_t)ny));
        OK(lithe_tensor_read(lithe_value_get_tensor(dX), dx, sizeof(float) * (size_t)ndx));
        for (int64_t i = 0; i < ny; i++) assert_true(fabsf(y[i] - y_cpu[i]) <= 1e-4f + 1e-4f * fabsf(y_cpu[i]));
        for (int64_t i = 0; i < ndx; i++) assert_true(fabsf(dx[i] - dx_cpu[i]) <= 1e-4f + 1e-4f * fabsf(dx_cpu[i]));
        lithe_value_release(Y);
        lithe_value_release(dX);
        lithe_backprop_free(bp);
    } else {
        print_message("with_cpu: no Vulkan device here (%s); the CPU part ran\n", lithe_last_error());
    }
    lithe_tensor_release(W);
    lithe_tensor_release(b);
    lithe_value_release(X);
    lithe_model_free(m);
}

/* with_debug: the hooks see each call's arguments; the tree and the results are unchanged. */
typedef struct debug_log {
    int init, forward, backprop;
    bool last_is_train;
    const lithe_value *last_X, *last_dY;
} debug_log;
static void on_init(void *user, lithe_model *m, const lithe_value *X, const lithe_value *Y) {
    (void)m;
    (void)Y;
    ((debug_log *)user)->init++;
    ((debug_log *)user)->last_X = X;
}
static void on_forward(void *user, lithe_model *m, const lithe_value *X, bool is_train) {
    (void)m;
    debug_log *l = user;
    l->forward++;
    l->last_X = X;
    l->last_is_train = is_train;
}
static void on_backprop(void *user, lithe_model *m, const lithe_value *dY) {
    (void)m;
    ((debug_log *)user)->backprop++;
    ((debug_log *)user)->last_dY = dY;
}

static void test_with_debug(void **state) {
    (void)state;
    debug_log log = {0};
    lithe_model *relu = dense("Relu.v1", "with_array_ragged"), *same = NULL, *m = NULL;
    OK(lithe_with_debug(relu, &(lithe_debug_hooks){.user = &log, .on_init = on_init, .on_forward = on_forward,
                                                   .on_backprop = on_backprop},
                        &same));
    assert_ptr_equal(same, relu); /* Thinc's with_debug returns the layer itself */
    OK(lithe_with_array(relu, 0, &m));
    lithe_value *X = gvalue("with_array_ragged.X");
    OK(lithe_model_initialize(m, X, NULL));
    assert_int_equal(log.init, 1);
    lithe_tensor *W = tensor_of(get("with_array_ragged.W")), *b = tensor_of(get("with_array_ragged.b"));
    OK(lithe_model_set_param(relu, "W", W)); /* initialize drew new weights */
    OK(lithe_model_set_param(relu, "b", b));
    lithe_tensor_release(W);
    lithe_tensor_release(b);
    run_case(m, "with_array_ragged", true);
    assert_int_equal(log.forward, 1);
    assert_true(log.last_is_train);
    assert_int_equal(log.backprop, 1);
    assert_non_null(log.last_dY);
    OK(lithe_with_debug(relu, NULL, &same)); /* removed */
    run_case(m, "with_array_ragged", true);
    assert_int_equal(log.forward, 1);
    lithe_value_release(X);
    lithe_model_free(m);
}

/* chain(list2ragged, with_array(HashEmbed), expand_window(1), with_array(Maxout), with_array(Softmax),
 * ragged2list), the shape of spaCy's tok2vec + tagger. */
static lithe_model *tagger(void) {
    lithe_model *layers[6] = {NULL}, *he = NULL, *mx = NULL, *sm = NULL, *m = NULL;
    OK(lithe_list2ragged(&layers[0]));
    OK(lithe_hash_embed(&(lithe_embed_opts){.nO = 8, .nV = 50, .has_seed = true, .seed = 7}, &he));
    OK(lithe_with_array(he, 0, &layers[1]));
    OK(lithe_expand_window(1, &layers[2]));
    OK(lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 6, .nP = 3, .normalize = true}, &mx));
    OK(lithe_with_array(mx, 0, &layers[3]));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = 5}, &sm));
    OK(lithe_with_array(sm, 0, &layers[4]));
    OK(lithe_ragged2list(&layers[5]));
    OK(lithe_chain(6, layers, &m));
    return m;
}

/* The docs as uint64 id tensors (exact, from the integer records). */
static lithe_value *docs(int only) {
    size_t n = (size_t)get("tagger.X.n")->v[0];
    lithe_value **items = calloc(n, sizeof *items), *v = NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (only >= 0 && (size_t)only != i) continue;
        const golden *g = get("tagger.X.%zu", i);
        lithe_tensor *t = NULL;
        OK(lithe_tensor_from_data(LITHE_U64, 1, g->shape, g->u, &t));
        OK(lithe_value_tensor(t, &items[k++]));
        lithe_tensor_release(t);
    }
    OK(lithe_value_list(k, items, &v));
    for (size_t i = 0; i < k; i++) lithe_value_release(items[i]);
    free(items);
    return v;
}

static void test_tagger_from_thinc(void **state) {
    (void)state;
    lithe_model *m = tagger();
    const golden *b = get("tagger.bytes");
    uint8_t *bytes = bytes_of(b);
    lithe_value *X = docs(-1), *Y = NULL;
    OK(lithe_model_initialize(m, X, NULL));
    OK(lithe_model_from_thinc_bytes(m, bytes, (size_t)b->n));
    OK(lithe_model_predict(m, X, &Y));
    expect_val(Y, "tagger.Y");
    /* byte-identical round trip through lithe */
    uint8_t *out = NULL;
    size_t len = 0;
    OK(lithe_model_to_thinc_bytes(m, &out, &len));
    assert_int_equal(len, (size_t)b->n);
    assert_memory_equal(out, bytes, len);
    lithe_buffer_free(out);
    /* batched == one sequence at a time */
    for (int i = 0; i < (int)lithe_value_len(X); i++) {
        lithe_value *one = docs(i), *Yi = NULL;
        OK(lithe_model_predict(m, one, &Yi));
        lithe_tensor *a = lithe_value_get_tensor(lithe_value_item(Yi, 0)), *c = lithe_value_get_tensor(lithe_value_item(Y, (size_t)i));
        int64_t n = lithe_tensor_numel(a);
        assert_int_equal(n, lithe_tensor_numel(c));
        float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
        OK(lithe_tensor_read(a, x, sizeof(float) * (size_t)n));
        OK(lithe_tensor_read(c, y, sizeof(float) * (size_t)n));
        for (int64_t k = 0; k < n; k++) assert_true(fabsf(x[k] - y[k]) <= 1e-6f);
        free(x);
        free(y);
        lithe_value_release(one);
        lithe_value_release(Yi);
    }
    /* the .lithe file carries the whole tree: load it and predict the same */
    uint8_t *file = NULL;
    size_t flen = 0;
    OK(lithe_model_save_bytes(m, NULL, &file, &flen));
    lithe_model *back = NULL;
    lithe_value *Y2 = NULL;
    OK(lithe_model_load_bytes(file, flen, &back));
    OK(lithe_model_predict(back, X, &Y2));
    expect_val(Y2, "tagger.Y");
    lithe_buffer_free(file);
    lithe_model_free(back);
    lithe_value_release(Y2);
    free(bytes);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_model_free(m);
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transfers),
        cmocka_unit_test(test_with_array),
        cmocka_unit_test(test_with_ragged_padded_list),
        cmocka_unit_test(test_with_flatten_getitem_reshape),
        cmocka_unit_test(test_reductions),
        cmocka_unit_test(test_expand_window),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_tagger_from_thinc),
        cmocka_unit_test(test_with_debug),
        cmocka_unit_test(test_getitem),
        cmocka_unit_test(test_with_cpu),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
