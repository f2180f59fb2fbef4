/* Freezing an imported graph by initializer-name pattern (issue 26): a small CNN from PyTorch
 * (tests/golden/gen_freeze_goldens.py) with "features.*" frozen gets gradient buffers for the
 * classifier only, and its classifier gradients equal PyTorch's with requires_grad=False on the
 * features; with no_input_grad the frozen convolutions keep nothing and run no backward, with the
 * same gradients; asking dX then is refused. LITHE_FREEZE_DIR names the goldens' folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"

#define OK(x) assert_int_equal((x), LITHE_OK)

static char dir[1024];
static void path(char *buf, const char *name) { snprintf(buf, 1100, "%s/%s", dir, name); }

static lithe_tensor *npy(const char *name) {
    char p[1100];
    path(p, name);
    lithe_tensor *t = NULL;
    OK(lithe_npy_read_file(p, &t));
    return t;
}

static void close_to(lithe_model *m, const char *param, const char *golden) {
    lithe_tensor *g = NULL, *want = npy(golden);
    OK(lithe_model_get_grad(m, param, &g));
    int64_t n = lithe_tensor_numel(want);
    assert_int_equal(lithe_tensor_numel(g), n);
    float *a = malloc((size_t)n * sizeof *a), *b = malloc((size_t)n * sizeof *b);
    OK(lithe_tensor_read(g, a, (size_t)n * sizeof *a));
    OK(lithe_tensor_read(want, b, (size_t)n * sizeof *b));
    for (int64_t i = 0; i < n; i++) assert_float_equal(a[i], b[i], 1e-5 + 1e-4 * (b[i] < 0 ? -b[i] : b[i]));
    free(a);
    free(b);
    lithe_tensor_release(want);
}

/* One forward + backprop, dY = 1/B; want_dx: ask for dX; the status of backprop. */
static lithe_status step(lithe_model *m, bool want_dx) {
    lithe_tensor *X = npy("freeze_x.npy"), *dY = NULL;
    lithe_value *xv = NULL, *yv = NULL, *dyv = NULL, *dxv = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_value_tensor(X, &xv));
    OK(lithe_model_begin_update(m, xv, &yv, &bp));
    float d[4 * 5];
    for (int i = 0; i < 20; i++) d[i] = 0.25f;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){4, 5}, d, &dY));
    OK(lithe_value_tensor(dY, &dyv));
    lithe_status s = lithe_backprop_run(bp, dyv, want_dx ? &dxv : NULL);
    lithe_value_release(dxv);
    lithe_value_release(dyv);
    lithe_tensor_release(dY);
    lithe_backprop_free(bp);
    lithe_value_release(yv);
    lithe_value_release(xv);
    lithe_tensor_release(X);
    return s;
}

static void test_freeze_graph(void **state) {
    (void)state;
    char p[1100];
    path(p, "freeze_cnn.onnx");
    for (int nig = 0; nig < 2; nig++) {
        lithe_model *m = NULL;
        OK(lithe_model_load(p, &m));
        size_t n = 0;
        OK(lithe_model_freeze_matching(m, "features.*", true, &n));
        assert_int_equal(n, 4); /* two convolutions' weight and bias */
        assert_true(lithe_model_is_frozen(m, "features.0.weight"));
        assert_false(lithe_model_is_frozen(m, "classifier.weight"));
        if (nig) OK(lithe_model_set_attr_bool(m, "no_input_grad", true));
        OK(step(m, false));
        assert_int_equal(lithe_model_grad_count(m, NULL), 2);
        close_to(m, "classifier.weight", "freeze_gW.npy");
        close_to(m, "classifier.bias", "freeze_gb.npy");
        if (nig) {
            assert_int_equal(step(m, true), LITHE_ERR_STATE);
            assert_non_null(strstr(lithe_last_error(), "no_input_grad"));
        }
        lithe_model_free(m);
    }
    /* thawed: every param gets a gradient again (the old behaviour for all) */
    lithe_model *m = NULL;
    OK(lithe_model_load(p, &m));
    OK(step(m, true));
    assert_int_equal(lithe_model_grad_count(m, NULL), 6);
    close_to(m, "classifier.weight", "freeze_gW.npy");
    lithe_model_free(m);
}

int main(void) {
    const char *d = getenv("LITHE_FREEZE_DIR");
    if (!d) {
        fprintf(stderr, "test_freeze_graph: set LITHE_FREEZE_DIR (ctest runs tests/golden/gen_freeze_goldens.py)\n");
        return 1;
    }
    snprintf(dir, sizeof dir, "%s", d);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_freeze_graph)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
