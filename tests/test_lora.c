/* LoRA adapters (issue 26 item 2, core/lora.c) against PyTorch 1.13: the same adapters (same
 * initial A, B zero) trained by a hand-written LoRA module in torch, five SGD steps of loss
 * sum(y * r) (tests/golden/gen_lora_goldens.py), must match lithe's — every adapter parameter, the
 * losses, and the effective weights a merge makes — for lithe's native dense layers (Relu, Maxout, Linear) and
 * for an imported ONNX CNN (Conv, Gemm, MatMul weights). Then: the base stays put, saved adapters
 * reload onto the same base (same outputs) and are refused by another base, a merged model exports
 * (ONNX, Thinc bytes) and reloads with the same outputs, and bad arguments get clear errors. */
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
#include "golden/graph_check.h"

#define STEPS 5

/* |t - g| within 1e-5 + 1e-4 |g|; prints the worst. */
static double close_to(const char *what, const lithe_tensor *t, const golden *g) {
    assert_int_equal(lithe_tensor_numel(t), g->n);
    float *v = malloc((size_t)g->n * sizeof *v + 1);
    OK(lithe_tensor_read(t, v, (size_t)g->n * sizeof *v));
    double worst = 0;
    for (int64_t i = 0; i < g->n; i++) {
        double e = fabs((double)v[i] - g->v[i]);
        if (e != e || e > 1e-5 + 1e-4 * fabs(g->v[i])) {
            printf("test_lora: %s[%lld]: lithe %.8g, torch %.8g\n", what, (long long)i, v[i], g->v[i]);
            fail();
        }
        worst = fmax(worst, e);
    }
    free(v);
    return worst;
}

static lithe_model *dense(const char *layer, int64_t nO, int64_t nI, int64_t nP) {
    lithe_model *m = NULL;
    OK(lithe_dense(layer, &(lithe_dense_opts){.nO = nO, .nI = nI, .nP = nP}, &m));
    return m;
}

/* The mlp case's tree with torch's base weights. */
static lithe_model *mlp_base(lithe_model **nodes) {
    nodes[0] = dense("Relu.v1", 8, 6, 0);
    nodes[1] = dense("Maxout.v1", 5, 8, 2);
    nodes[2] = dense("Linear.v1", 3, 5, 0);
    lithe_model *m = NULL;
    OK(lithe_chain(3, nodes, &m));
    const char *names[3] = {"relu", "maxout", "linear"};
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 2; k++) {
            lithe_tensor *t = tensor_of(get("lora.mlp.base.%s.%s", names[i], k ? "b" : "W"));
            OK(lithe_model_set_param(nodes[i], k ? "b" : "W", t));
            lithe_tensor_release(t);
        }
    return m;
}

static void set_A(lithe_model *node, const char *param, const char *key) {
    char name[128];
    snprintf(name, sizeof name, "lora_A:%s", param);
    lithe_tensor *A = tensor_of(get("%s", key));
    OK(lithe_model_set_param(node, name, A));
    lithe_tensor_release(A);
}

static void expect_param(const char *what, lithe_model *node, const char *name, const golden *g) {
    lithe_tensor *t = NULL;
    OK(lithe_model_get_param(node, name, &t));
    close_to(what, t, g);
}

static lithe_value *predict(lithe_model *m, const char *xkey) {
    lithe_value *X = value_of(get("%s", xkey)), *Y = NULL;
    OK(lithe_model_predict(m, X, &Y));
    lithe_value_release(X);
    return Y;
}

static double max_diff(lithe_value *a, lithe_value *b) {
    const lithe_tensor *x = lithe_value_get_tensor(a), *y = lithe_value_get_tensor(b);
    assert_int_equal(lithe_tensor_numel(x), lithe_tensor_numel(y));
    const float *p = lithe_tensor_data(x), *q = lithe_tensor_data(y);
    double d = 0;
    for (int64_t i = 0; i < lithe_tensor_numel(x); i++) d = fmax(d, fabs((double)p[i] - q[i]));
    return d;
}

static void test_mlp_against_torch(void **state) {
    (void)state;
    lithe_model *nodes[3];
    lithe_model *m = mlp_base(nodes);
    char hash0[17], hash1[17];
    OK(lithe_model_lora_base_hash(m, hash0, sizeof hash0));
    OK(lithe_model_add_lora(m, NULL, (int64_t)get("lora.mlp.rank")->v[0], (float)get("lora.mlp.alpha")->v[0], 7));
    assert_int_equal(lithe_model_lora_count(m), 3);
    /* the init: |A| <= 1/sqrt(in), not all equal; B zero; everything else frozen */
    lithe_tensor *A = NULL, *B = NULL;
    OK(lithe_model_get_param(nodes[1], "lora_A:W", &A));
    OK(lithe_model_get_param(nodes[1], "lora_B:W", &B));
    assert_int_equal(lithe_tensor_shape(A)[0], 2);
    assert_int_equal(lithe_tensor_shape(A)[1], 8);
    assert_int_equal(lithe_tensor_shape(B)[0], 10);
    const float *a = lithe_tensor_data(A), *b = lithe_tensor_data(B);
    for (int i = 0; i < 16; i++) assert_true(fabsf(a[i]) <= 1.0f / sqrtf(8.0f) && a[i] != a[(i + 1) % 16]);
    for (int i = 0; i < 20; i++) assert_true(b[i] == 0.0f);
    assert_true(lithe_model_is_frozen(nodes[0], "b") && lithe_model_is_frozen(nodes[2], "W")); /* the base */
    assert_false(lithe_model_is_frozen(nodes[0], "lora_A:W"));
    OK(lithe_model_lora_base_hash(m, hash1, sizeof hash1));
    assert_string_equal(hash0, hash1); /* the base is the same */
    const char *names[3] = {"relu", "maxout", "linear"};
    char key[128];
    for (int i = 0; i < 3; i++) {
        snprintf(key, sizeof key, "lora.mlp.init.A.%s.W", names[i]);
        set_A(nodes[i], "W", key);
    }
    graph_sgd_steps(m, "lora.mlp", STEPS, 1e-4, "test_lora", "mlp", true);
    assert_int_equal(lithe_model_grad_count(m, NULL), 6); /* A and B of each: the frozen weights keep none */
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        char what[160];
        for (int q = 0; q < 2; q++) {
            snprintf(what, sizeof what, "mlp %s lora_%c", names[i], "AB"[q]);
            lithe_tensor *t = NULL;
            OK(lithe_model_get_param(nodes[i], q ? "lora_B:W" : "lora_A:W", &t));
            worst = fmax(worst, close_to(what, t, get("lora.mlp.sgd.%c.%s.W", "AB"[q], names[i])));
        }
        expect_param("mlp base", nodes[i], "W", get("lora.mlp.base.%s.W", names[i])); /* the base stays put */
        expect_param("mlp bias", nodes[i], "b", get("lora.mlp.base.%s.b", names[i]));
    }
    printf("test_lora: mlp (Relu, Maxout, Linear), rank 2, %d SGD steps: 6 adapter params within %.2e of torch's\n",
           STEPS, worst);
    lithe_value *Y = predict(m, "lora.mlp.x");
    close_to("mlp y after the steps", lithe_value_get_tensor(Y), get("lora.mlp.y"));

    /* the adapters alone: reload onto a fresh copy of the base; another base is refused */
    uint8_t *file = NULL;
    size_t len = 0;
    OK(lithe_model_save_lora_bytes(m, &file, &len));
    lithe_model *n2[3], *m2 = mlp_base(n2);
    OK(lithe_model_load_lora_bytes(m2, file, len));
    assert_int_equal(lithe_model_lora_count(m2), 3);
    lithe_value *Y2 = predict(m2, "lora.mlp.x");
    assert_true(max_diff(Y, Y2) == 0.0);
    assert_int_equal(lithe_model_load_lora_bytes(m2, file, len), LITHE_ERR_STATE); /* adapters there already */
    lithe_model *n3[3], *m3 = mlp_base(n3);
    lithe_tensor *W = NULL;
    OK(lithe_model_get_param(n3[2], "W", &W));
    ((float *)lithe_tensor_data(W))[0] += 1e-3f;
    assert_int_equal(lithe_model_load_lora_bytes(m3, file, len), LITHE_ERR_VALUE);
    assert_non_null(strstr(lithe_last_error(), "different base"));
    assert_int_equal(lithe_model_lora_count(m3), 0);
    printf("test_lora: adapter file %zu bytes (base %s); reloaded onto the base: same outputs; another base: %s\n",
           len, hash0, lithe_last_error());
    /* a file naming a node the model lacks (walk index 3 -> 9, everywhere): refused, nothing kept */
    uint8_t *bad = malloc(len);
    memcpy(bad, file, len);
    int renamed = 0;
    for (size_t i = 0; i + 7 <= len; i++)
        if (!memcmp(bad + i, "3/lora_", 7)) bad[i] = '9', renamed++;
    assert_true(renamed >= 4);
    lithe_model *n6[3], *m6 = mlp_base(n6);
    assert_int_equal(lithe_model_load_lora_bytes(m6, bad, len), LITHE_ERR_FORMAT);
    assert_non_null(strstr(lithe_last_error(), "past the model's"));
    assert_int_equal(lithe_model_lora_count(m6), 0);
    lithe_model_free(m6);
    free(bad);
    lithe_buffer_free(file);

    /* the whole model with live adapters: a .lithe round trip keeps them; Thinc bytes refuse them */
    uint8_t *whole = NULL;
    OK(lithe_model_save_bytes(m2, NULL, &whole, &len));
    lithe_model *m5 = NULL;
    OK(lithe_model_load_bytes(whole, len, &m5));
    assert_int_equal(lithe_model_lora_count(m5), 3);
    lithe_value *Y5 = predict(m5, "lora.mlp.x");
    assert_true(max_diff(Y, Y5) == 0.0);
    lithe_value_release(Y5);
    lithe_model_free(m5);
    lithe_buffer_free(whole);
    uint8_t *tb = NULL;
    assert_int_equal(lithe_model_to_thinc_bytes(m2, &tb, &len), LITHE_ERR_STATE);
    /* merged: an ordinary model, same outputs; Thinc bytes round trip */
    OK(lithe_model_merge_lora(m2));
    assert_int_equal(lithe_model_lora_count(m2), 0);
    assert_int_equal(lithe_model_n_params(n2[1]), 2);
    for (int i = 0; i < 3; i++) { /* W + s·B·A: torch's effective weights */
        char what[160];
        snprintf(what, sizeof what, "mlp %s merged W", names[i]);
        expect_param(what, n2[i], "W", get("lora.mlp.weff.%s.W", names[i]));
    }
    lithe_value *Y3 = predict(m2, "lora.mlp.x");
    assert_true(max_diff(Y, Y3) < 1e-6);
    OK(lithe_model_to_thinc_bytes(m2, &tb, &len));
    lithe_model *n4[3], *m4 = mlp_base(n4);
    OK(lithe_model_from_thinc_bytes(m4, tb, len));
    lithe_value *Y4 = predict(m4, "lora.mlp.x");
    assert_true(max_diff(Y, Y4) < 1e-6);
    lithe_buffer_free(tb);
    lithe_value_release(Y);
    lithe_value_release(Y2);
    lithe_value_release(Y3);
    lithe_value_release(Y4);
    lithe_model_free(m);
    lithe_model_free(m2);
    lithe_model_free(m3);
    lithe_model_free(m4);
}

static void test_cnn_against_torch(void **state) {
    (void)state;
    lithe_model *m = graph_load_golden("lora_cnn");
    OK(lithe_model_add_lora(m, "*.weight", (int64_t)get("lora.cnn.rank")->v[0], (float)get("lora.cnn.alpha")->v[0], 7));
    assert_int_equal(lithe_model_lora_count(m), 2); /* conv.weight, fc.weight (biases are no weights) */
    OK(lithe_model_add_lora(m, "P", (int64_t)get("lora.cnn.rank")->v[0], (float)get("lora.cnn.alpha")->v[0], 8));
    assert_int_equal(lithe_model_lora_count(m), 3);
    const char *ws[3] = {"conv.weight", "fc.weight", "P"};
    char key[128];
    for (int i = 0; i < 3; i++) {
        snprintf(key, sizeof key, "lora.cnn.init.A.%s", ws[i]);
        set_A(m, ws[i], key);
    }
    lithe_tensor *A = NULL;
    OK(lithe_model_get_param(m, "lora_A:conv.weight", &A)); /* (r, in·kh·kw) */
    assert_int_equal(lithe_tensor_shape(A)[1], 18);
    OK(lithe_model_get_param(m, "lora_A:P", &A)); /* P (6, 3) is (in, out) */
    assert_int_equal(lithe_tensor_shape(A)[1], 6);
    graph_sgd_steps(m, "lora.cnn", STEPS, 1e-4, "test_lora", "cnn", true);
    assert_int_equal(lithe_model_grad_count(m, NULL), 6); /* A and B of each: the frozen weights keep none */
    double worst = 0;
    for (int i = 0; i < 3; i++) {
        char what[160], name[128];
        for (int q = 0; q < 2; q++) {
            snprintf(what, sizeof what, "cnn %s lora_%c", ws[i], "AB"[q]);
            snprintf(name, sizeof name, "lora_%c:%s", "AB"[q], ws[i]);
            lithe_tensor *t = NULL;
            OK(lithe_model_get_param(m, name, &t));
            worst = fmax(worst, close_to(what, t, get("lora.cnn.sgd.%c.%s", "AB"[q], ws[i])));
        }
    }
    printf("test_lora: ONNX CNN (Conv, Gemm, MatMul), rank 2, %d SGD steps: 6 adapter params within %.2e of torch's\n",
           STEPS, worst);
    lithe_value *Y = predict(m, "lora.cnn.x");
    close_to("cnn y after the steps", lithe_value_get_tensor(Y), get("lora.cnn.y"));
    /* adapters alone onto a fresh import of the same graph */
    uint8_t *file = NULL, *onnx = NULL;
    size_t len = 0, olen = 0;
    OK(lithe_model_save_lora_bytes(m, &file, &len));
    lithe_model *m2 = graph_load_golden("lora_cnn");
    OK(lithe_model_load_lora_bytes(m2, file, len));
    lithe_value *Y2 = predict(m2, "lora.cnn.x");
    assert_true(max_diff(Y, Y2) == 0.0);
    /* merged, exported to ONNX, reloaded: same outputs */
    OK(lithe_model_merge_lora(m2));
    for (int i = 0; i < 3; i++) { /* W + s·B·A: torch's effective weights */
        char what[160];
        snprintf(what, sizeof what, "cnn %s merged W", ws[i]);
        expect_param(what, m2, ws[i], get("lora.cnn.weff.%s", ws[i]));
    }
    OK(lithe_model_save_onnx_bytes(m2, &onnx, &olen));
    lithe_model *m3 = NULL;
    OK(lithe_onnx_load_bytes(onnx, olen, &m3));
    lithe_value *Y3 = predict(m3, "lora.cnn.x");
    double d = max_diff(Y, Y3);
    assert_true(d < 1e-5);
    printf("test_lora: cnn adapter file %zu bytes; merged ONNX export (%zu bytes) reloaded: outputs within %.1e\n",
           len, olen, d);
    lithe_buffer_free(file);
    lithe_buffer_free(onnx);
    lithe_value_release(Y);
    lithe_value_release(Y2);
    lithe_value_release(Y3);
    lithe_model_free(m);
    lithe_model_free(m2);
    lithe_model_free(m3);
}

static void test_errors(void **state) {
    (void)state;
    lithe_model *nodes[3];
    lithe_model *m = mlp_base(nodes);
    assert_int_equal(lithe_model_add_lora(m, NULL, 0, 1.0f, 1), LITHE_ERR_VALUE);
    assert_int_equal(lithe_model_add_lora(m, NULL, 2, NAN, 1), LITHE_ERR_VALUE);
    assert_int_equal(lithe_model_add_lora(m, "nothing*", 2, 1.0f, 1), LITHE_ERR_NOT_FOUND);
    assert_non_null(strstr(lithe_last_error(), "no weight matches"));
    assert_int_equal(lithe_model_add_lora(NULL, NULL, 2, 1.0f, 1), LITHE_ERR_INVALID_ARG);
    uint8_t *b = NULL;
    size_t len = 0;
    assert_int_equal(lithe_model_save_lora_bytes(m, &b, &len), LITHE_ERR_STATE); /* no adapters */
    OK(lithe_model_add_lora(m, "linear/W", 2, 1.0f, 1));
    assert_int_equal(lithe_model_lora_count(m), 1);
    assert_int_equal(lithe_model_add_lora(m, "linear/*", 2, 1.0f, 1), LITHE_ERR_STATE); /* adapted already */
    assert_int_equal(lithe_model_lora_count(m), 1);
    OK(lithe_model_add_lora(m, "re?u/W", 3, 1.0f, 1));
    assert_int_equal(lithe_model_lora_count(m), 2);
    /* a whole .lithe model is not an adapter file */
    nodes[0] = dense("Linear.v1", 2, 2, 0);
    lithe_tensor *W = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){2, 2}, &W));
    OK(lithe_model_set_param(nodes[0], "W", W));
    OK(lithe_model_set_param(nodes[0], "b", NULL));
    OK(lithe_model_save_bytes(nodes[0], NULL, &b, &len));
    lithe_model *n2[3], *m2 = mlp_base(n2);
    assert_int_equal(lithe_model_load_lora_bytes(m2, b, len), LITHE_ERR_FORMAT);
    assert_int_equal(lithe_model_load_lora_bytes(m2, b, 5), LITHE_ERR_FORMAT);
    lithe_buffer_free(b);
    lithe_tensor_release(W);
    lithe_model_free(nodes[0]);
    lithe_model_free(m);
    lithe_model_free(m2);
    /* an uninitialized model */
    lithe_model *u = dense("Linear.v1", 0, 0, 0);
    assert_int_equal(lithe_model_add_lora(u, NULL, 2, 1.0f, 1), LITHE_ERR_STATE);
    lithe_model_free(u);
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mlp_against_torch),
        cmocka_unit_test(test_cnn_against_torch),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
