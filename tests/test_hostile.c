/* Hostile inputs and non-finite numbers (issue 30): each case here failed silently (a finite
 * answer, a load that went through, an allocation before a check) before its fix.
 *   - NaN through a layer: Relu with a NaN weight gives NaN where Thinc does (the fused GEMM
 *     epilogue and the act kernel once turned NaN into 0);
 *   - the optimizer's non-finite check (lithe_optimizer_set_check_finite): a clear error, nothing
 *     updated;
 *   - checks at load (test_hostile_load.c) and the temp files of killed saves. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"
#include "hostile.h"

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

/* Relu(nO=4) on (3, 5): W[1][2] = NaN makes output column 1 NaN in every row (Thinc: NaN · x is
 * NaN, relu keeps it), an inf input makes its whole row non-finite; other columns stay finite. */
static void test_relu_layer_propagates_nan(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 4}, &m));
    float xs[15];
    for (int i = 0; i < 15; i++) xs[i] = 0.1f * (float)(i % 7) - 0.2f;
    lithe_tensor *X = tensor2(3, 5, xs);
    lithe_value *Xv = val(X), *Yv = NULL;
    OK(lithe_model_initialize(m, Xv, NULL));
    float *W = fdata(param(m, "W"));
    for (int i = 0; i < 20; i++) W[i] = (i % 3 == 0) ? 0.5f : -0.25f;
    W[1 * 5 + 2] = NAN;
    OK(lithe_model_predict(m, Xv, &Yv));
    const float *Y = fdata(lithe_value_get_tensor(Yv));
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 4; c++) {
            if (c == 1 && !isnan(Y[r * 4 + c])) {
                print_error("Y[%d][1] = %g: a NaN weight must give NaN (Thinc's relu keeps NaN)\n", r, Y[r * 4 + c]);
                fail();
            }
            if (c != 1) assert_true(isfinite(Y[r * 4 + c]));
        }
    lithe_value_release(Yv);
    lithe_value_release(Xv);
    lithe_tensor_release(X);
    lithe_model_free(m);
}

/* A NaN gradient: finish_update without the check goes on (Thinc's behaviour); with it, a clear
 * LITHE_ERR_VALUE naming the param, and no param, grad or optimizer state changed. */
static void test_check_finite_refuses_nan_gradient(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 3}, &m));
    float xs[8] = {0.5f, -1, 2, 0.25f, 1, 1, -0.5f, 0.75f};
    lithe_tensor *X = tensor2(2, 4, xs);
    lithe_value *Xv = val(X), *Yv = NULL, *dXv = NULL;
    OK(lithe_model_initialize(m, Xv, NULL));
    float *W = fdata(param(m, "W"));
    for (int i = 0; i < 12; i++) W[i] = 0.3f;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, Xv, &Yv, &bp));
    float dys[6] = {1, 2, 3, 4, NAN, 6}; /* e.g. from a loss that went NaN */
    lithe_tensor *dY = tensor2(2, 3, dys);
    lithe_value *dYv = val(dY);
    OK(lithe_backprop_run(bp, dYv, &dXv));
    lithe_optimizer *opt = NULL;
    lithe_optimizer_opts o = lithe_sgd_defaults(0.1);
    OK(lithe_optimizer_new(&o, &opt));
    OK(lithe_optimizer_set_check_finite(opt, true));
    float before[12];
    memcpy(before, W, sizeof before);
    assert_int_equal(lithe_model_finish_update(m, opt), LITHE_ERR_VALUE);
    const char *msg = lithe_last_error();
    if (!strstr(msg, "non-finite") || !strstr(msg, ".W")) {
        print_error("message does not say which gradient is non-finite: %s\n", msg);
        fail();
    }
    assert_memory_equal(before, W, sizeof before);
    assert_int_equal(lithe_optimizer_nr_update(opt, m, "W"), 0);
    /* off: Thinc's behaviour, the update goes through (and W turns NaN) */
    OK(lithe_optimizer_set_check_finite(opt, false));
    OK(lithe_model_finish_update(m, opt));
    assert_true(isnan(W[0]) || isnan(W[4]) || isnan(W[8]));
    assert_int_equal(lithe_optimizer_set_check_finite(NULL, true), LITHE_ERR_INVALID_ARG);
    lithe_optimizer_free(opt);
    lithe_backprop_free(bp);
    lithe_value_release(dXv);
    lithe_value_release(dYv);
    lithe_tensor_release(dY);
    lithe_value_release(Yv);
    lithe_value_release(Xv);
    lithe_tensor_release(X);
    lithe_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relu_layer_propagates_nan),
        cmocka_unit_test(test_check_finite_refuses_nan_gradient),
        HOSTILE_LOAD_TESTS
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
