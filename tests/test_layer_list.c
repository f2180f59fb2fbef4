/* The one layer list (core/layers/layers.def) and the layer added through it alone:
 * - every line's name resolves to a type of its family, every type of every family has its line,
 *   lithe_layer_names lists exactly the registered lines, lithe_layer_for_thinc maps Thinc's
 *   forwards (the Thinc 8.1.7 comparison itself is tests/python/test_layer_registry.py);
 * - tanh_activation.v1 (an entry of core/layers/activation.c + its line): forward and backward against
 *   PyTorch 1.13 (tests/golden/gen_tanh_activation_goldens.py), the gradient by finite
 *   differences, a save / load round trip through the .lithe file, and bad input.
 * Tolerances: |lithe - torch| <= 1e-6 + 1e-5 |torch|; finite differences (float32, h = 1e-2,
 * central) within 2e-4 + 1e-3 |fd|. */
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

#include "internal.h"
#include "lithe.h"

/* ---- the list ---- */

typedef struct line {
    const char *name;
    const lithe__layer_type *const *family;
    const char *thinc;
    bool registered;
} line;

static const line lines[] = {
#define LITHE_LAYER(name, family, thinc, create) {name, family, thinc, true},
#define LITHE_NODE_TYPE(name, family, thinc, create) {name, family, thinc, false},
#include "layers/layers.def"
#undef LITHE_LAYER
#undef LITHE_NODE_TYPE
};
#define N_LINES (sizeof lines / sizeof lines[0])

static void test_every_line_resolves_and_every_type_has_a_line(void **state) {
    (void)state;
    size_t n_names = 0, registered = 0;
    const char *const *names = lithe_layer_names(&n_names);
    for (size_t i = 0; i < N_LINES; i++) {
        const lithe__layer_type *t = lithe__layer_type_by_name(lines[i].name);
        if (lines[i].family == lithe__builds_others) {
            assert_null(t);
        } else if (!t) {
            print_error("%s: no type of that name in its family\n", lines[i].name);
            fail();
        } else {
            assert_string_equal(t->registered_name, lines[i].name);
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(lines[j].name, lines[i].name)) {
                print_error("%s: listed twice\n", lines[i].name);
                fail();
            }
        if (lines[i].registered) {
            assert_true(registered < n_names);
            assert_string_equal(names[registered], lines[i].name);
            registered++;
        }
        if (lines[i].thinc) assert_string_equal(lithe_layer_for_thinc(lines[i].thinc), lines[i].name);
    }
    assert_int_equal(registered, n_names);
    /* every type of every family named in the list has its own line (no second list anywhere) */
    for (size_t i = 0; i < N_LINES; i++)
        for (const lithe__layer_type *const *t = lines[i].family; *t; t++) {
            bool found = false;
            for (size_t j = 0; j < N_LINES; j++) found |= !strcmp(lines[j].name, (*t)->registered_name);
            if (!found) {
                print_error("type %s (family of %s) has no line in layers.def\n", (*t)->registered_name, lines[i].name);
                fail();
            }
        }
    assert_null(lithe__layer_type_by_name("Nope.v1"));
    assert_null(lithe__layer_type_by_name(NULL));
    assert_null(lithe_layer_for_thinc("thinc.layers.pytorchwrapper.forward"));
    assert_null(lithe_layer_for_thinc(NULL));
    assert_string_equal(lithe_layer_for_thinc("thinc.layers.softmax.forward"), "Softmax.v2");
    assert_string_equal(lithe_layer_for_thinc("thinc.layers.remap_ids.forward_v2"), "remap_ids.v2");
}

static void test_layer_new(void **state) {
    (void)state;
    lithe_model *m = (lithe_model *)&m;
    assert_int_equal(lithe_layer_new("Relu.v1", &m), LITHE_ERR_UNSUPPORTED); /* takes arguments */
    assert_null(m);
    assert_int_equal(lithe_layer_new("clone.v1", &m), LITHE_ERR_NOT_FOUND);
    assert_int_equal(lithe_layer_new("Nope.v1", &m), LITHE_ERR_NOT_FOUND);
    assert_int_equal(lithe_layer_new(NULL, &m), LITHE_ERR_INVALID_ARG);
    assert_int_equal(lithe_layer_new("tanh_activation.v1", NULL), LITHE_ERR_INVALID_ARG);
    OK(lithe_layer_new("tanh_activation.v1", &m));
    assert_string_equal(lithe_model_name(m), "tanh_activation");
    assert_string_equal(lithe_model_layer_type(m), "tanh_activation.v1");
    lithe_model_free(m);
    OK(lithe_activation("tanh_activation.v1", &m)); /* the activations' constructor finds it too */
    lithe_model_free(m);
}

/* ---- tanh_activation.v1 ---- */

static const float X_in[12] = {-2.8459003f, -2.48388839f, -2.12696981f, -1.30679309f, -0.926634014f, -0.412586749f, 0.313061863f, 0.901984394f, 1.2917105f, 1.86875653f, 2.39488196f, 3.01820374f};
static const float dY_in[12] = {-1.0f, -0.772727251f, -0.545454502f, -0.318181813f, -0.0909090638f, 0.13636367f, 0.363636315f, 0.590909064f, 0.818181813f, 1.0454545f, 1.27272725f, 1.5f};
static const float Y_torch[12] = {-0.993275658f, -0.986178972f, -0.97198179f, -0.863461723f, -0.729020701f, -0.39066685f, 0.30322002f, 0.717262733f, 0.859573862f, 0.953481259f, 0.983508279f, 0.995231138f};
static const float dX_torch[12] = {-0.0134034666f, -0.0212121626f, -0.0301371253f, -0.0809562244f, -0.0425935162f, 0.115551767f, 0.330202726f, 0.286906543f, 0.213654088f, 0.0950040972f, 0.0416327727f, 0.0142724731f};

static const int64_t shape[2] = {3, 4};

static lithe_value *value_of(const float *x) {
    lithe_tensor *t = NULL;
    lithe_value *v = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, shape, x, &t));
    OK(lithe_value_tensor(t, &v));
    lithe_tensor_release(t);
    return v;
}

static void read12(const lithe_value *v, float *out) {
    OK(lithe_tensor_read(lithe_value_get_tensor(v), out, 12 * sizeof(float)));
}

static void close_to(const char *what, const float *got, const float *want, double abs_tol, double rel_tol) {
    for (int i = 0; i < 12; i++)
        if (!(fabs((double)got[i] - want[i]) <= abs_tol + rel_tol * fabs((double)want[i]))) {
            print_error("%s[%d]: %.9g, want %.9g\n", what, i, (double)got[i], (double)want[i]);
            fail();
        }
}

/* L(X) = sum(dY * tanh_activation(X)), at predict. */
static double loss(lithe_model *m, const float *x) {
    lithe_value *X = value_of(x), *Y = NULL;
    OK(lithe_model_predict(m, X, &Y));
    float y[12];
    read12(Y, y);
    double l = 0;
    for (int i = 0; i < 12; i++) l += (double)dY_in[i] * y[i];
    lithe_value_release(X);
    lithe_value_release(Y);
    return l;
}

static void test_tanh_matches_torch_and_finite_differences(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_layer_new("tanh_activation.v1", &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    lithe_value *X = value_of(X_in), *Y = NULL, *G = value_of(dY_in), *dX = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    float y[12], dx[12];
    read12(Y, y);
    close_to("Y", y, Y_torch, 1e-6, 1e-5);
    OK(lithe_backprop_run(bp, G, &dX));
    read12(dX, dx);
    close_to("dX", dx, dX_torch, 1e-6, 1e-5);
    /* the gradient by central differences of the layer itself */
    float fd[12], xp[12];
    const float h = 1e-2f;
    for (int i = 0; i < 12; i++) {
        memcpy(xp, X_in, sizeof xp);
        xp[i] = X_in[i] + h;
        double up = loss(m, xp);
        xp[i] = X_in[i] - h;
        double down = loss(m, xp);
        fd[i] = (float)((up - down) / (2.0 * (double)h));
    }
    close_to("dX vs finite differences", dx, fd, 2e-4, 1e-3);
    /* a wrong-shaped gradient is an error, not a read past the end */
    static const float six[6] = {0};
    lithe_tensor *t6 = NULL;
    lithe_value *v6 = NULL, *dX6 = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 3}, six, &t6));
    OK(lithe_value_tensor(t6, &v6));
    assert_int_equal(lithe_backprop_run(bp, v6, &dX6), LITHE_ERR_SHAPE);
    lithe_tensor_release(t6);
    lithe_value_release(v6);
    /* int input: a dtype error */
    static const int32_t ids[12] = {0};
    lithe_tensor *ti = NULL;
    lithe_value *vi = NULL, *Yi = NULL;
    OK(lithe_tensor_from_data(LITHE_I32, 2, shape, ids, &ti));
    OK(lithe_value_tensor(ti, &vi));
    assert_int_equal(lithe_model_predict(m, vi, &Yi), LITHE_ERR_DTYPE);
    lithe_tensor_release(ti);
    lithe_value_release(vi);
    lithe_backprop_free(bp);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(G);
    lithe_value_release(dX);
    lithe_model_free(m);
}

/* chain(Linear, tanh_activation) saved and loaded: the loader builds the node from its name. */
static void test_tanh_saves_and_loads(void **state) {
    (void)state;
    lithe_model *lin = NULL, *act = NULL, *m = NULL, *back = NULL;
    OK(lithe_linear(&(lithe_dense_opts){.nO = 4, .nI = 4}, &lin));
    OK(lithe_layer_new("tanh_activation.v1", &act));
    OK(lithe_chain(2, (lithe_model *[]){lin, act}, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    uint8_t *bytes = NULL;
    size_t n = 0;
    OK(lithe_model_save_bytes(m, NULL, &bytes, &n));
    OK(lithe_model_load_bytes(bytes, n, &back));
    assert_string_equal(lithe_model_layer_type(lithe_model_layer(back, 1)), "tanh_activation.v1");
    lithe_value *X = value_of(X_in), *Y1 = NULL, *Y2 = NULL;
    OK(lithe_model_predict(m, X, &Y1));
    OK(lithe_model_predict(back, X, &Y2));
    float a[12], b[12];
    read12(Y1, a);
    read12(Y2, b);
    assert_memory_equal(a, b, sizeof a);
    lithe_buffer_free(bytes);
    lithe_value_release(X);
    lithe_value_release(Y1);
    lithe_value_release(Y2);
    lithe_model_free(m);
    lithe_model_free(back);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_line_resolves_and_every_type_has_a_line),
        cmocka_unit_test(test_layer_new),
        cmocka_unit_test(test_tanh_matches_torch_and_finite_differences),
        cmocka_unit_test(test_tanh_saves_and_loads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
