/* lithe_model_quantize_static (issue 24 item 3) from C: a native chain(Relu, Softmax) calibrated and
 * quantized stays close to its float prediction (within the quantization steps' reach), leaves the
 * float model alone, saves and loads back with the same bits; hostile calibration data and
 * arguments are clear errors; every allocation failure is LITHE_ERR_OOM and leaks nothing.
 * (tests/quant_static/run.py checks the result against onnxruntime-node and a torch CNN; the Python
 * test against Thinc.) */
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
#include "check.h"
#include "failing_alloc.h"

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static float urand(void) { /* xorshift64, [0, 1) */
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (float)((rng_state >> 11) * (1.0 / 9007199254740992.0));
}

static lithe_tensor *rows(int64_t n, int64_t d, float lo, float hi) {
    lithe_tensor *t = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){n, d}, &t));
    float *x = lithe_tensor_data(t);
    for (int64_t i = 0; i < n * d; i++) x[i] = lo + (hi - lo) * urand();
    return t;
}

static lithe_model *mlp(int64_t nI, int64_t nH, int64_t nO) {
    lithe_model *h = NULL, *s = NULL, *m = NULL;
    OK(lithe_dense("Relu.v1", &(lithe_dense_opts){.nO = nH, .nI = nI}, &h));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = nO, .nI = nH}, &s));
    OK(lithe_chain(2, (lithe_model *[]){h, s}, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    lithe_model *nodes[3];
    size_t n = 0;
    OK(lithe_model_walk(m, nodes, 3, &n));
    for (size_t i = 1; i < n; i++) { /* random weights (Softmax's start at zero) */
        lithe_tensor *W = NULL;
        OK(lithe_model_get_param(nodes[i], "W", &W));
        float *w = lithe_tensor_data(W);
        for (int64_t k = 0; k < lithe_tensor_numel(W); k++) w[k] = 0.6f * (urand() - 0.5f);
    }
    return m;
}

static float *predict(lithe_model *m, lithe_tensor *X) {
    lithe_tensor *Y = NULL;
    OK(lithe_model_predict_tensor(m, X, &Y));
    size_t n = (size_t)lithe_tensor_numel(Y);
    float *y = malloc(n * sizeof *y);
    assert_non_null(y);
    memcpy(y, lithe_tensor_data(Y), n * sizeof *y);
    lithe_tensor_release(Y);
    return y;
}

static void test_mlp(void **state) {
    (void)state;
    lithe_model *m = mlp(20, 32, 10), *q = NULL, *back = NULL;
    lithe_tensor *cal = rows(128, 20, -0.5f, 1.5f), *X = rows(32, 20, -0.5f, 1.5f);
    float *yf = predict(m, X);
    size_t n = 0;
    OK(lithe_model_quantize_static(m, cal, &n, &q));
    assert_int_equal(n, 2);
    float *yq = predict(q, X), *yf2 = predict(m, X);
    double worst = 0.0;
    for (int i = 0; i < 32 * 10; i++) { /* (not fmax: gcc 12's aarch64 vectoriser fails on that reduction here) */
        double d = fabs((double)yq[i] - (double)yf[i]);
        if (d > worst) worst = d;
    }
    printf("test_quantize_static: max |int8 - float| %.3g over 32 rows of softmax(10)\n", worst);
    assert_true(worst < 0.02);
    assert_true(worst > 0.0); /* it is quantized */
    assert_memory_equal(yf, yf2, 32 * 10 * sizeof(float)); /* m is unchanged */
    uint8_t *b = NULL;
    size_t len = 0;
    OK(lithe_model_save_bytes(q, NULL, &b, &len));
    OK(lithe_model_load_bytes(b, len, &back));
    float *yb = predict(back, X);
    assert_memory_equal(yb, yq, 32 * 10 * sizeof(float));
    lithe_buffer_free(b);
    free(yf), free(yf2), free(yq), free(yb);
    lithe_model_free(back);
    lithe_model_free(q);
    lithe_model_free(m);
    lithe_tensor_release(cal);
    lithe_tensor_release(X);
}

static void expect(lithe_status got, lithe_status want, const char *text) {
    if (got != want || !strstr(lithe_last_error(), text))
        print_error("got %s: %s; want %s with '%s'\n", lithe_status_str(got), lithe_last_error(), lithe_status_str(want), text);
    assert_int_equal(got, want);
    assert_non_null(strstr(lithe_last_error(), text));
}

static void test_hostile(void **state) {
    (void)state;
    lithe_model *m = mlp(6, 5, 3), *q = (lithe_model *)1;
    size_t n = 7;
    lithe_tensor *ok = rows(4, 6, 0.0f, 1.0f), *wide = rows(4, 7, 0.0f, 1.0f), *empty = NULL, *ints = NULL, *nan = rows(4, 6, 0.0f, 1.0f);
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){0, 6}, &empty));
    OK(lithe_tensor_new(NULL, LITHE_I64, 2, (int64_t[]){4, 6}, &ints));
    ((float *)lithe_tensor_data(nan))[13] = NAN;
    expect(lithe_model_quantize_static(m, ok, &n, NULL), LITHE_ERR_INVALID_ARG, "out is NULL");
    expect(lithe_model_quantize_static(NULL, ok, &n, &q), LITHE_ERR_INVALID_ARG, "model is NULL");
    assert_null(q);
    assert_int_equal(n, 0);
    expect(lithe_model_quantize_static(m, NULL, &n, &q), LITHE_ERR_INVALID_ARG, "calibration tensor is NULL");
    expect(lithe_model_quantize_static(m, wide, &n, &q), LITHE_ERR_SHAPE, "calibration rows 0..3");
    expect(lithe_model_quantize_static(m, empty, &n, &q), LITHE_ERR_SHAPE, "empty");
    expect(lithe_model_quantize_static(m, ints, &n, &q), LITHE_ERR_DTYPE, "float32");
    expect(lithe_model_quantize_static(m, nan, &n, &q), LITHE_ERR_VALUE, "calibration element 13 is nan");
    assert_null(q);
    lithe_model_free(m);
    lithe_tensor_release(ok), lithe_tensor_release(wide), lithe_tensor_release(empty), lithe_tensor_release(ints);
    lithe_tensor_release(nan);
}

static lithe_status oom_scenario(int which) {
    (void)which;
    lithe_model *m = NULL, *h = NULL, *s = NULL, *q = NULL;
    lithe_tensor *cal = NULL;
    lithe_status st = lithe_dense("Relu.v1", &(lithe_dense_opts){.nO = 3, .nI = 4}, &h);
    if (st == LITHE_OK) st = lithe_softmax(&(lithe_softmax_opts){.nO = 2, .nI = 3}, &s);
    if (st == LITHE_OK) {
        st = lithe_chain(2, (lithe_model *[]){h, s}, &m); /* takes h and s, also when it fails */
        h = s = NULL;
    }
    if (st == LITHE_OK) st = lithe_model_initialize(m, NULL, NULL);
    if (st == LITHE_OK) st = lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){3, 4}, &cal);
    if (st == LITHE_OK)
        for (int i = 0; i < 12; i++) ((float *)lithe_tensor_data(cal))[i] = (float)i / 12.0f - 0.25f;
    if (st == LITHE_OK) st = lithe_model_quantize_static(m, cal, NULL, &q);
    lithe_model_free(q);
    lithe_model_free(m);
    lithe_model_free(h), lithe_model_free(s);
    lithe_tensor_release(cal);
    return st;
}

static void test_oom(void **state) {
    (void)state;
    failing_alloc_sweep(1, oom_scenario);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_mlp), cmocka_unit_test(test_hostile), cmocka_unit_test(test_oom)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
