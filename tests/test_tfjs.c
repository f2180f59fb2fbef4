/* TF.js layers models (core/io/tfjs/) against @tensorflow/tfjs itself (tests/tfjs/gen_tfjs_goldens.mjs
 * builds the models in Node, saves them as model.json + shards and writes its predictions and
 * gradients): predictions, gradients w.r.t. the input and every weight, finite differences, the
 * flatten order, a uint8-quantized model, .lithe round trips and training; then hostile files
 * (truncated shards, wrong shapes, bad JSON at every cut, unsafe shard paths, missing layers). */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lithe.h"
#include "golden/golden.h"
#include "golden/graph_check.h"

/* The folder the goldens file is in: the generator writes <dir>/<model>/model.json beside it. */
static const char *model_path(const char *name, const char *file) {
    static char buf[4096];
    const char *slash = strrchr(golden_path, '/');
    int dir = slash ? (int)(slash - golden_path) : 1;
    snprintf(buf, sizeof buf, "%.*s/%s/%s", dir, slash ? golden_path : ".", name, file);
    return buf;
}

static lithe_model *load(const char *name) {
    lithe_model *m = NULL;
    OK(lithe_tfjs_load(model_path(name, "model.json"), &m));
    return m;
}

static uint8_t *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)len + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    b[len] = 0;
    *n = (size_t)len;
    return b;
}

static void write_all(const char *path, const void *b, size_t n) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(b, 1, n, f), n);
    fclose(f);
}

/* max |a - g| / |g| over the entries |g| >= 1e-3, and max |a - g| over all */
static void worst(const lithe_tensor *t, const golden *g, double *rel, double *abs_) {
    const float *p = lithe_tensor_data(t);
    assert_int_equal(lithe_tensor_numel(t), g->n);
    for (int64_t i = 0; i < g->n; i++) {
        double d = fabs((double)p[i] - g->v[i]);
        if (d != d) d = INFINITY;
        if (d > *abs_) *abs_ = d;
        if (fabs(g->v[i]) >= 1e-3 && d / fabs(g->v[i]) > *rel) *rel = d / fabs(g->v[i]);
    }
}

/* Predictions within 1e-5 relative (plus 1e-6 absolute) of TF.js; gradients of sum(Y * R) with
 * respect to the input and every trainable weight within 1e-4. */
static void test_parity(void **state) {
    (void)state;
    static const char *const names[] = {"mlp", "cnn", "branches", "mlp_uint8", "text", "text_cnn", "upsep"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const char *name = names[k];
        lithe_model *m = load(name);
        assert_string_equal(lithe_model_layer_type(m), "onnx_graph.v1");
        lithe_value *X = value_of(get("%s.x", name)), *Y = NULL, *dX = NULL;
        lithe_backprop *bp = NULL;
        /* every TF.js weight is a param of the same name, shape and values (the Keras layout) */
        size_t n_w = 0;
        for (size_t p = 0; p < lithe_model_n_params(m); p++) {
            const char *pn = lithe_model_param_name(m, p);
            const golden *g = find("%s.w.%s", name, pn);
            if (!g) continue;
            lithe_tensor *W = NULL;
            OK(lithe_model_get_param(m, pn, &W));
            expect_close(pn, W, g, 0, 0);
            n_w++;
        }
        assert_true(n_w == lithe_model_n_params(m) || !strcmp(name, "mlp_uint8"));
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        char what[200];
        snprintf(what, sizeof what, "%s prediction", name);
        expect_close(what, lithe_value_get_tensor(Y), get("%s.y", name), 1e-6, 1e-5);
        double ry = 0, ay = 0, rg = 0, ag = 0;
        worst(lithe_value_get_tensor(Y), get("%s.y", name), &ry, &ay);
        size_t n_grads = 0;
        if (find("%s.n_params", name)) {
            lithe_value *R = value_of(get("%s.r", name));
            OK(lithe_backprop_run(bp, R, &dX));
            snprintf(what, sizeof what, "%s dX", name);
            if (find("%s.dx", name)) { /* (ids into an Embedding have none) */
                expect_close(what, lithe_value_get_tensor(dX), get("%s.dx", name), 1e-5, 1e-4);
                worst(lithe_value_get_tensor(dX), get("%s.dx", name), &rg, &ag);
            }
            for (size_t p = 0; p < lithe_model_n_params(m); p++) {
                const char *pn = lithe_model_param_name(m, p);
                const golden *g = find("%s.grad.%s", name, pn);
                if (!g) { /* BatchNormalization's moving statistics: frozen, no gradient */
                    assert_true(strstr(pn, "moving_") != NULL);
                    assert_false(lithe_model_has_grad(m, pn));
                    continue;
                }
                lithe_tensor *G = NULL;
                OK(lithe_model_get_grad(m, pn, &G));
                snprintf(what, sizeof what, "%s grad %s", name, pn);
                expect_close(what, G, g, 1e-5, 1e-4);
                worst(G, g, &rg, &ag);
                n_grads++;
            }
            assert_int_equal(n_grads, (size_t)get("%s.n_params", name)->v[0]);
            lithe_value_release(R);
        }
        printf("test_tfjs: %-9s prediction max rel %.2e, abs %.2e", name, ry, ay);
        if (n_grads) printf("; gradients (input and %zu weights) max rel %.2e, abs %.2e", n_grads, rg, ag);
        printf("\n");
        lithe_value_release(X);
        lithe_value_release(Y);
        lithe_value_release(dX);
        lithe_backprop_free(bp);
        lithe_model_free(m);
    }
}

/* Central differences of sum(Y * R) against lithe's gradients: the functional model (TF.js has no
 * gradient for its dilated Conv2D) and the CNN. */
static void test_finite_differences(void **state) {
    (void)state;
    static const char *const names[] = {"branches", "cnn", "upsep"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const char *name = names[k];
        lithe_model *m = load(name);
        /* h: float32 noise in the loss is ~1e-6: ~1e-3 in the estimate */
        const fd_opts o = {.test = "test_tfjs", .h = 1e-3, .atol = 3e-3, .rtol = 1e-2, .x_stride = 7, .w_parts = 5, .digits = 6};
        int checked = 0, bad = 0;
        fd_check(m, name, &o, &checked, &bad);
        printf("test_tfjs: %-9s %d finite-difference checks, %d off (a max-pool or ReLU kink inside the step)\n", name,
               checked, bad);
        assert_true(checked > 30);
        assert_true(bad <= checked / 20);
        lithe_model_free(m);
    }
}

/* A hand-written model.json: an identity 1x1 Conv2D (so the tensor is channels-first inside
 * lithe) then Flatten: the output must be the input in TF.js's NHWC order, (h, w, c) fastest
 * last — the order a Dense after Flatten reads its weights in. */
static char *replace(const char *s, const char *from, const char *to);

static const char flat_json[] =
    "{\"format\":\"layers-model\",\"modelTopology\":{\"class_name\":\"Sequential\",\"config\":{\"name\":\"s\",\"layers\":["
    "{\"class_name\":\"Conv2D\",\"config\":{\"name\":\"c\",\"filters\":3,\"kernel_size\":[1,1],\"use_bias\":false,"
    "\"batch_input_shape\":[null,2,2,3]}},{\"class_name\":\"Flatten\",\"config\":{\"name\":\"f\"}}]}},"
    "\"weightsManifest\":[{\"paths\":[\"w.bin\"],\"weights\":[{\"name\":\"c/kernel\",\"shape\":[1,1,3,3],\"dtype\":\"float32\"}]}]}";

static void test_flatten_order(void **state) {
    (void)state;
    float eye[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    lithe_model *m = NULL;
    OK(lithe_tfjs_load_bytes(flat_json, strlen(flat_json), (const uint8_t *)eye, sizeof eye, &m));
    lithe_tensor *x = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 4, (int64_t[]){1, 2, 2, 3}, &x));
    for (int i = 0; i < 12; i++) ((float *)lithe_tensor_data(x))[i] = (float)i;
    lithe_value *X = NULL, *Y = NULL;
    OK(lithe_value_tensor(x, &X));
    OK(lithe_model_predict(m, X, &Y));
    lithe_tensor *y = lithe_value_get_tensor(Y);
    assert_int_equal(lithe_tensor_ndim(y), 2);
    assert_int_equal(lithe_tensor_shape(y)[1], 12);
    for (int i = 0; i < 12; i++) assert_true(((float *)lithe_tensor_data(y))[i] == (float)i);
    /* the same identity kernel stored as float16 (tensorflowjs_converter --quantize_float16), as
     * uint16 quantization (q * scale + min) and as int32 */
    static const char *const variants[][2] = {
        {"\"dtype\":\"float32\"}", "\"dtype\":\"float32\",\"quantization\":{\"dtype\":\"float16\"}}"},
        {"\"dtype\":\"float32\"}", "\"dtype\":\"float32\",\"quantization\":{\"dtype\":\"uint16\",\"scale\":0.5,\"min\":-1}}"},
        {"\"dtype\":\"float32\"}", "\"dtype\":\"int32\"}"},
    };
    const uint16_t half[9] = {0x3c00, 0, 0, 0, 0x3c00, 0, 0, 0, 0x3c00}, u16[9] = {4, 2, 2, 2, 4, 2, 2, 2, 4};
    const int32_t i32[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    const void *data[3] = {half, u16, i32};
    const size_t size[3] = {sizeof half, sizeof u16, sizeof i32};
    for (int v = 0; v < 3; v++) {
        char *j = replace(flat_json, variants[v][0], variants[v][1]);
        lithe_model *q = NULL;
        lithe_value *Yq = NULL;
        OK(lithe_tfjs_load_bytes(j, strlen(j), data[v], size[v], &q));
        OK(lithe_model_predict(q, X, &Yq));
        for (int i = 0; i < 12; i++) assert_true(((float *)lithe_tensor_data(lithe_value_get_tensor(Yq)))[i] == (float)i);
        lithe_value_release(Yq);
        lithe_model_free(q);
        free(j);
    }
    /* and a declared extent is checked */
    lithe_tensor *bad = NULL;
    lithe_value *B = NULL, *YB = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 4, (int64_t[]){1, 3, 2, 3}, &bad));
    OK(lithe_value_tensor(bad, &B));
    assert_int_equal(lithe_model_predict(m, B, &YB), LITHE_ERR_SHAPE);
    lithe_value_release(B);
    lithe_tensor_release(bad);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_tensor_release(x);
    lithe_model_free(m);
}

/* model.json as tensorflowjs_converter writes it from Python Keras: modelTopology wraps the model
 * in model_config, an explicit InputLayer, BatchNormalization's axis as a list, Python's activation
 * names, weights named with the model's scope ("sequential/dense/kernel"). Checked against values
 * computed here in double. */
static const char keras_json[] =
    "{\"format\":\"layers-model\",\"generatedBy\":\"keras v2.13.1\",\"convertedBy\":\"TensorFlow.js Converter v4.22.0\","
    "\"modelTopology\":{\"keras_version\":\"2.13.1\",\"backend\":\"tensorflow\",\"model_config\":{\"class_name\":\"Sequential\","
    "\"config\":{\"name\":\"sequential\",\"layers\":[{\"class_name\":\"InputLayer\",\"config\":{\"batch_input_shape\":[null,2],"
    "\"dtype\":\"float32\",\"sparse\":false,\"ragged\":false,\"name\":\"input_1\"}},{\"class_name\":\"Dense\",\"config\":{"
    "\"name\":\"dense\",\"trainable\":true,\"dtype\":\"float32\",\"units\":2,\"activation\":\"hard_sigmoid\",\"use_bias\":true}},"
    "{\"class_name\":\"BatchNormalization\",\"config\":{\"name\":\"bn\",\"axis\":[1],\"epsilon\":0.5,\"center\":false,"
    "\"scale\":true}}]}},\"training_config\":{\"loss\":\"mse\"}},\"weightsManifest\":[{\"paths\":[\"group1-shard1of1.bin\"],"
    "\"weights\":[{\"name\":\"sequential/dense/kernel\",\"shape\":[2,2],\"dtype\":\"float32\"},{\"name\":"
    "\"sequential/dense/bias\",\"shape\":[2],\"dtype\":\"float32\"},{\"name\":\"sequential/bn/gamma\",\"shape\":[2],"
    "\"dtype\":\"float32\"},{\"name\":\"sequential/bn/moving_mean\",\"shape\":[2],\"dtype\":\"float32\"},{\"name\":"
    "\"sequential/bn/moving_variance\",\"shape\":[2],\"dtype\":\"float32\"}]}]}";

static void test_keras_converter_layout(void **state) {
    (void)state;
    const float w[12] = {1, -2, 3, 0.5f, /* kernel (in 2, out 2) */ 0.25f, -0.5f, /* bias */ 2, 3, /* gamma */
                         0.1f, 0.2f, /* moving mean */ 1.5f, 0.5f /* moving variance */};
    lithe_model *m = NULL;
    OK(lithe_tfjs_load_bytes(keras_json, strlen(keras_json), (const uint8_t *)w, sizeof w, &m));
    assert_true(lithe_model_is_frozen(m, "sequential/bn/moving_mean"));
    assert_false(lithe_model_is_frozen(m, "sequential/bn/gamma"));
    assert_false(lithe_model_is_frozen(m, "sequential/dense/kernel"));
    lithe_model *f = NULL; /* a layer saved with "trainable": false keeps its weights frozen */
    char *fj = replace(keras_json, "\"trainable\":true", "\"trainable\":false");
    OK(lithe_tfjs_load_bytes(fj, strlen(fj), (const uint8_t *)w, sizeof w, &f));
    assert_true(lithe_model_is_frozen(f, "sequential/dense/kernel"));
    assert_true(lithe_model_is_frozen(f, "sequential/dense/bias"));
    assert_false(lithe_model_is_frozen(f, "sequential/bn/gamma"));
    free(fj);
    lithe_model_free(f);
    lithe_tensor *x = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){2, 2}, &x));
    const float xs[4] = {0.3f, -0.7f, 2.0f, 1.0f};
    memcpy(lithe_tensor_data(x), xs, sizeof xs);
    lithe_value *X = NULL, *Y = NULL;
    OK(lithe_value_tensor(x, &X));
    OK(lithe_model_predict(m, X, &Y));
    const float *y = lithe_tensor_data(lithe_value_get_tensor(Y));
    for (int n = 0; n < 2; n++)
        for (int j = 0; j < 2; j++) {
            double h = (double)xs[2 * n] * w[j] + (double)xs[2 * n + 1] * w[2 + j] + w[4 + j];
            h = fmin(1.0, fmax(0.0, 0.2 * h + 0.5));
            double want = (h - w[8 + j]) / sqrt(w[10 + j] + 0.5) * w[6 + j];
            assert_true(fabs(y[2 * n + j] - want) <= 1e-6 * (1 + fabs(want)));
        }
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_tensor_release(x);
    lithe_model_free(m);
}

/* model.json through lithe_model_load; the model saved as .lithe and loaded back predicts the
 * same; a few SGD steps lower the loss and the trained model round-trips too. */
static void test_files_and_training(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_model_load(model_path("cnn", "model.json"), &m));
    lithe_value *X = value_of(get("cnn.x")), *R = value_of(get("cnn.r")), *Y = NULL, *Y2 = NULL;
    lithe_optimizer_opts o = lithe_sgd_defaults(0.05);
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&o, &opt));
    double first = 0, last = 0;
    for (int step = 0; step < 5; step++) {
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        double loss = loss_of(m, X, lithe_value_get_tensor(R));
        if (!step) first = loss;
        last = loss;
        OK(lithe_backprop_run(bp, R, NULL)); /* descending sum(Y * R) */
        OK(lithe_model_finish_update(m, opt));
        lithe_backprop_free(bp);
        lithe_value_release(Y);
        Y = NULL;
    }
    printf("test_tfjs: cnn: 5 SGD steps on sum(Y * R): %.5f -> %.5f\n", first, last);
    assert_true(last < first);
    /* the moving statistics did not move */
    lithe_tensor *mv = NULL;
    OK(lithe_model_get_param(m, "batch_normalization_BatchNormalization1/moving_variance", &mv));
    assert_true(lithe_model_is_frozen(m, "batch_normalization_BatchNormalization1/moving_variance"));
    uint8_t *file = NULL;
    size_t len = 0;
    OK(lithe_model_save_bytes(m, NULL, &file, &len));
    lithe_model *back = NULL;
    OK(lithe_model_load_bytes(file, len, &back));
    OK(lithe_model_predict(m, X, &Y));
    OK(lithe_model_predict(back, X, &Y2));
    const float *a = lithe_tensor_data(lithe_value_get_tensor(Y)), *b = lithe_tensor_data(lithe_value_get_tensor(Y2));
    for (int64_t i = 0; i < lithe_tensor_numel(lithe_value_get_tensor(Y)); i++) assert_true(a[i] == b[i]);
    lithe_buffer_free(file);
    lithe_model_free(back);
    lithe_optimizer_free(opt);
    lithe_value_release(X);
    lithe_value_release(R);
    lithe_value_release(Y);
    lithe_value_release(Y2);
    lithe_model_free(m);
}

/* Status s and a message holding `needle`. */
static void expect_refused(lithe_status got, lithe_status want, const char *needle) {
    if (got != want || !strstr(lithe_last_error(), needle))
        print_error("got %s (%s), wanted %s with '%s'\n", lithe_status_str(got), lithe_last_error(), lithe_status_str(want),
                    needle);
    assert_int_equal(got, want);
    assert_non_null(strstr(lithe_last_error(), needle));
}

static char *replace(const char *s, const char *from, const char *to) {
    const char *at = strstr(s, from);
    assert_non_null(at);
    char *r = malloc(strlen(s) + strlen(to) + 1);
    assert_non_null(r);
    memcpy(r, s, (size_t)(at - s));
    strcpy(r + (at - s), to);
    strcat(r, at + strlen(from));
    return r;
}

static void test_hostile(void **state) {
    (void)state;
    size_t jn = 0, w1 = 0, w2 = 0;
    char *json = (char *)read_all(model_path("cnn", "model.json"), &jn);
    uint8_t *s1 = read_all(model_path("cnn", "group1-shard1of2.bin"), &w1);
    uint8_t *s2 = read_all(model_path("cnn", "group1-shard2of2.bin"), &w2);
    uint8_t *all = malloc(w1 + w2);
    assert_non_null(all);
    memcpy(all, s1, w1);
    memcpy(all + w1, s2, w2);
    lithe_model *m = NULL;
    OK(lithe_tfjs_load_bytes(json, jn, all, w1 + w2, &m)); /* the bytes API: shards concatenated */
    lithe_model_free(m);
    m = NULL;
    /* every cut of the JSON, and of the weights: an error with a message, never a crash */
    int ok = 0;
    for (size_t cut = 0; cut < jn; cut++) {
        lithe_status s = lithe_tfjs_load_bytes(json, cut, all, w1 + w2, &m);
        assert_true(s != LITHE_OK);
        assert_null(m);
        assert_true(strlen(lithe_last_error()) > 0);
    }
    for (size_t cut = 0; cut < w1 + w2; cut += 3) {
        lithe_status s = lithe_tfjs_load_bytes(json, jn, all, cut, &m);
        assert_int_equal(s, LITHE_ERR_FORMAT);
        ok += strstr(lithe_last_error(), "short or missing shard") != NULL;
    }
    assert_true(ok > 0);
    expect_refused(lithe_tfjs_load_bytes(json, jn, all, w1 + w2 - 1, &m), LITHE_ERR_FORMAT, "needs");
    /* the files: a short second shard, a missing one, a long one */
    char dir[] = "/tmp/lithe_test_tfjs_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char p_json[128], p1[128], p2[128];
    snprintf(p_json, sizeof p_json, "%s/model.json", dir);
    snprintf(p1, sizeof p1, "%s/group1-shard1of2.bin", dir);
    snprintf(p2, sizeof p2, "%s/group1-shard2of2.bin", dir);
    write_all(p_json, json, jn);
    write_all(p1, s1, w1);
    write_all(p2, s2, w2 - 10);
    expect_refused(lithe_tfjs_load(p_json, &m), LITHE_ERR_FORMAT, "short or missing shard");
    printf("test_tfjs: short shard: %s\n", lithe_last_error());
    uint8_t *longer = calloc(w2 + 4, 1);
    memcpy(longer, s2, w2);
    write_all(p2, longer, w2 + 4);
    expect_refused(lithe_tfjs_load(p_json, &m), LITHE_ERR_FORMAT, "shards hold");
    free(longer);
    remove(p2);
    assert_true(lithe_tfjs_load(p_json, &m) == LITHE_ERR_IO);
    write_all(p2, s2, w2);
    OK(lithe_tfjs_load(p_json, &m));
    lithe_model_free(m);
    m = NULL;
    /* shard paths outside the model's folder */
    char *bad = replace(json, "\"./group1-shard1of2.bin\"", "\"../group1-shard1of2.bin\"");
    write_all(p_json, bad, strlen(bad));
    expect_refused(lithe_tfjs_load(p_json, &m), LITHE_ERR_FORMAT, "'..' are refused");
    free(bad);
    bad = replace(json, "\"./group1-shard1of2.bin\"", "\"/etc/passwd\"");
    write_all(p_json, bad, strlen(bad));
    expect_refused(lithe_tfjs_load(p_json, &m), LITHE_ERR_FORMAT, "absolute paths");
    free(bad);
    remove(p_json);
    remove(p1);
    remove(p2);
    rmdir(dir);
    /* a weight whose shape does not fit its layer (same byte count: 4x5 for a 5x4 kernel) */
    char *sw = replace(json, "\"shape\":[24,5]", "\"shape\":[20,6]");
    expect_refused(lithe_tfjs_load_bytes(sw, strlen(sw), all, w1 + w2, &m), LITHE_ERR_FORMAT, "needs (24, 5)");
    printf("test_tfjs: wrong shape: %s\n", lithe_last_error());
    free(sw);
    sw = replace(json, "\"shape\":[24,5]", "\"shape\":[24,-5]");
    expect_refused(lithe_tfjs_load_bytes(sw, strlen(sw), all, w1 + w2, &m), LITHE_ERR_FORMAT, "bad extent");
    free(sw);
    sw = replace(json, "\"dtype\":\"float32\"", "\"dtype\":\"complex64\"");
    expect_refused(lithe_tfjs_load_bytes(sw, strlen(sw), all, w1 + w2, &m), LITHE_ERR_UNSUPPORTED, "complex64");
    free(sw);
    sw = replace(json, "\"layers-model\"", "\"graph-model\"");
    expect_refused(lithe_tfjs_load_bytes(sw, strlen(sw), all, w1 + w2, &m), LITHE_ERR_UNSUPPORTED, "tf2onnx");
    free(sw);
    sw = replace(json, "\"kernel_size\":[3,3]", "\"kernel_size\":[3,0]");
    expect_refused(lithe_tfjs_load_bytes(sw, strlen(sw), all, w1 + w2, &m), LITHE_ERR_FORMAT, "kernel_size");
    free(sw);
    sw = replace(json, "\"data_format\":\"channels_last\"", "\"data_format\":\"channels_first\"");
    expect_refused(lithe_tfjs_load_bytes(sw, strlen(sw), all, w1 + w2, &m), LITHE_ERR_UNSUPPORTED, "channels_first");
    free(sw);
    /* layers and activations lithe lacks: all listed at once */
    char *u1 = replace(json, "\"class_name\":\"Flatten\"", "\"class_name\":\"LSTM\"");
    char *u2 = replace(u1, "\"class_name\":\"Dropout\"", "\"class_name\":\"GRU\"");
    char *u3 = replace(u2, "\"activation\":\"tanh\"", "\"activation\":\"sinusoid\"");
    expect_refused(lithe_tfjs_load_bytes(u3, strlen(u3), all, w1 + w2, &m), LITHE_ERR_UNSUPPORTED, "3 layer types");
    printf("test_tfjs: refused: %s\n", lithe_last_error());
    assert_non_null(strstr(lithe_last_error(), "LSTM"));
    assert_non_null(strstr(lithe_last_error(), "GRU"));
    assert_non_null(strstr(lithe_last_error(), "activation 'sinusoid'"));
    free(u1);
    free(u2);
    free(u3);
    /* a thousand random byte changes to the JSON: an error or a model, never a crash */
    char *copy = malloc(jn);
    uint64_t st = 777;
    lithe_value *X = value_of(get("cnn.x"));
    for (int trial = 0; trial < 1000; trial++) {
        memcpy(copy, json, jn);
        for (int k = 0; k < 2; k++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            copy[(st >> 33) % jn] = "0123456789-.,:[]{}\"ae"[(st >> 20) % 21];
        }
        lithe_model *t = NULL;
        if (lithe_tfjs_load_bytes(copy, jn, all, w1 + w2, &t) == LITHE_OK) {
            lithe_value *Y = NULL;
            if (lithe_model_predict(t, X, &Y) == LITHE_OK) lithe_value_release(Y);
            lithe_model_free(t);
        }
    }
    lithe_value_release(X);
    assert_int_equal(lithe_tfjs_load_bytes("{}", 2, NULL, 0, &m), LITHE_ERR_FORMAT);
    assert_int_equal(lithe_tfjs_load_bytes(NULL, 0, NULL, 0, &m), LITHE_ERR_FORMAT);
    assert_int_equal(lithe_tfjs_load_bytes("[1]", 3, NULL, 0, NULL), LITHE_ERR_INVALID_ARG);
    free(copy);
    free(json);
    free(s1);
    free(s2);
    free(all);
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parity),        cmocka_unit_test(test_finite_differences),
        cmocka_unit_test(test_flatten_order), cmocka_unit_test(test_keras_converter_layout),
        cmocka_unit_test(test_files_and_training),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
