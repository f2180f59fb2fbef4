/* Thinc's bytes both ways, against models Debian's Thinc 8.1.7 saved (tests/golden/
 * gen_thinc_goldens.py, arch_case): eleven architectures built here with lithe's constructors as
 * the generator builds them in Thinc, loaded from Thinc's bytes, predicting as Thinc does
 * (|lithe - thinc| <= 1e-6 + 1e-5 |thinc|), written back byte for byte, and trained ten Adam steps
 * to weights within 1e-4 of Thinc's. Then hostile bytes: every truncation, corruptions and
 * mismatched trees are clear errors that leave the model untouched. */
#define _POSIX_C_SOURCE 200809L
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

static lithe_model *dense(const char *name, int64_t nO, int64_t nI) {
    lithe_model *m = NULL;
    OK(lithe_dense(name, &(lithe_dense_opts){.nO = nO, .nI = nI}, &m));
    return m;
}

static lithe_model *chain_of(size_t n, lithe_model **layers) {
    lithe_model *m = NULL;
    OK(lithe_chain(n, layers, &m));
    return m;
}

static lithe_model *softmax(int64_t nO, bool v1, bool unnormalized) {
    lithe_model *m = NULL;
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = nO, .version1 = v1, .unnormalized_outputs = unnormalized}, &m));
    return m;
}

/* The trees of arch_case, built the lithe way. */
static lithe_model *build(const char *name) {
    lithe_model *m = NULL, *a = NULL, *b = NULL;
    if (!strcmp(name, "mlp")) {
        a = chain_of(2, (lithe_model *[]){dense("Relu.v1", 8, 6), dense("Relu.v1", 5, 0)});
        return chain_of(2, (lithe_model *[]){a, softmax(4, false, false)});
    }
    if (!strcmp(name, "concat")) {
        OK(lithe_concatenate(2, (lithe_model *[]){dense("Relu.v1", 3, 0), dense("Mish.v1", 2, 0)}, &a));
        return chain_of(2, (lithe_model *[]){a, softmax(3, true, false)});
    }
    if (!strcmp(name, "residual")) {
        OK(lithe_residual(dense("Relu.v1", 6, 6), &a));
        return chain_of(2, (lithe_model *[]){a, dense("Linear.v1", 2, 0)});
    }
    if (!strcmp(name, "clone")) {
        OK(lithe_clone(dense("Relu.v1", 6, 6), 3, &a));
        return chain_of(2, (lithe_model *[]){a, softmax(3, false, true)});
    }
    if (!strcmp(name, "maxout")) {
        OK(lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 6, .nP = 3, .normalize = true, .dropout = 0.2f}, &a));
        OK(lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 5, .nP = 2}, &b));
        return chain_of(3, (lithe_model *[]){a, b, softmax(3, false, false)});
    }
    if (!strcmp(name, "hashembed")) {
        OK(lithe_hash_embed(&(lithe_embed_opts){.nO = 5, .nV = 50, .has_seed = true, .seed = 3}, &a));
        return chain_of(2, (lithe_model *[]){a, dense("Relu.v1", 4, 0)});
    }
    if (!strcmp(name, "embed")) {
        OK(lithe_embed(&(lithe_embed_opts){.nO = 4, .nV = 20, .has_column = true, .column = 1}, &a));
        return chain_of(2, (lithe_model *[]){a, softmax(3, false, false)});
    }
    if (!strcmp(name, "nested_t2")) {
        lithe_model *res = NULL, *sm = NULL;
        OK(lithe_residual(dense("Relu.v1", 6, 6), &res));
        OK(lithe_concatenate(2, (lithe_model *[]){res, dense("Linear.v1", 2, 0)}, &a));
        OK(lithe_softmax(&(lithe_softmax_opts){.nO = 3, .temperature = 2.0f}, &sm));
        return chain_of(3, (lithe_model *[]){dense("Relu.v1", 6, 0), a, sm});
    }
    if (!strcmp(name, "resized")) {
        OK(lithe_resizable(softmax(3, false, false), 0.0f, 0.0f, &a));
        OK(lithe_resize_model(a, 4));
        return chain_of(2, (lithe_model *[]){dense("Relu.v1", 5, 0), a});
    }
    if (!strcmp(name, "add_ln")) {
        OK(lithe_add(2, (lithe_model *[]){dense("Linear.v1", 4, 0), dense("Relu.v1", 4, 0)}, &a));
        OK(lithe_layernorm(0, &b));
        return chain_of(3, (lithe_model *[]){a, dense("Gelu.v1", 3, 0), b});
    }
    if (!strcmp(name, "acts")) {
        OK(lithe_clipped_linear(&(lithe_dense_opts){.nO = 4}, 2.0f, 0.1f, 0.0f, 3.0f, &a));
        return chain_of(5, (lithe_model *[]){dense("Swish.v1", 5, 0), dense("HardSwish.v1", 5, 0), a,
                                             dense("Mish.v1", 3, 0), dense("Sigmoid.v1", 2, 0)});
    }
    fail_msg("no architecture %s", name);
    return m;
}

static const char *const archs[] = {"mlp",   "concat",       "residual", "clone",  "maxout", "hashembed",
                                    "embed", "nested_t2",    "resized",  "add_ln", "acts"};

/* The golden input as a value: float32, or ids (uint64 for HashEmbed, int32 for Embed). */
static lithe_value *input_of(const char *name) {
    const golden *g = get("bytes.%s.X", name);
    if (g->kind != 'i') return value_of(g);
    lithe_dtype dt = !strcmp(name, "hashembed") ? LITHE_U64 : LITHE_I32;
    lithe_tensor *t = NULL;
    lithe_value *v = NULL;
    OK(lithe_tensor_new(NULL, dt, g->ndim, g->shape, &t));
    for (int64_t i = 0; i < g->n; i++) {
        if (dt == LITHE_U64) ((uint64_t *)lithe_tensor_data(t))[i] = g->u[i];
        else ((int32_t *)lithe_tensor_data(t))[i] = (int32_t)g->u[i];
    }
    OK(lithe_value_tensor(t, &v));
    lithe_tensor_release(t);
    return v;
}

static void test_thinc_bytes_architectures(void **state) {
    (void)state;
    char what[128];
    for (size_t c = 0; c < sizeof archs / sizeof archs[0]; c++) {
        const char *name = archs[c];
        const golden *g0 = get("bytes.%s.b0", name), *g10 = get("bytes.%s.b10", name);
        uint8_t *b0 = bytes_of(g0), *b10 = bytes_of(g10);
        lithe_model *m = build(name);
        OK(lithe_model_from_thinc_bytes(m, b0, (size_t)g0->n));
        /* predictions */
        lithe_value *X = input_of(name), *Y = NULL;
        OK(lithe_model_predict(m, X, &Y));
        snprintf(what, sizeof what, "%s: predictions from Thinc's bytes", name);
        expect_close(what, lithe_value_get_tensor(Y), get("bytes.%s.Y", name), 1e-6, 1e-5);
        lithe_value_release(Y);
        /* byte-identical round trip */
        uint8_t *out = NULL;
        size_t len = 0;
        OK(lithe_model_to_thinc_bytes(m, &out, &len));
        if (len != (size_t)g0->n || memcmp(out, b0, len)) {
            size_t k = 0;
            while (k < len && k < (size_t)g0->n && out[k] == b0[k]) k++;
            print_error("%s: lithe writes %zu bytes, Thinc %lld; first difference at byte %zu\n", name, len,
                        (long long)g0->n, k);
            fail();
        }
        lithe_buffer_free(out);
        /* ten Adam steps with L2Distance against the same targets, dropout off */
        OK(lithe_model_set_dropout_rate(m, 0.0f));
        lithe_optimizer_opts oo = lithe_adam_defaults();
        oo.learn_rate = 0.01;
        lithe_optimizer *opt = NULL;
        OK(lithe_optimizer_new(&oo, &opt));
        lithe_tensor *T = tensor_of(get("bytes.%s.T", name));
        for (int step = 0; step < 10; step++) {
            lithe_backprop *bp = NULL;
            lithe_tensor *d = NULL;
            lithe_value *dv = NULL;
            OK(lithe_model_begin_update(m, X, &Y, &bp));
            OK(lithe_l2_distance(true, lithe_value_get_tensor(Y), T, &d, NULL));
            OK(lithe_value_tensor(d, &dv));
            OK(lithe_backprop_run(bp, dv, NULL));
            OK(lithe_model_finish_update(m, opt));
            lithe_backprop_free(bp);
            lithe_value_release(Y);
            lithe_value_release(dv);
            lithe_tensor_release(d);
        }
        /* Thinc's weights after its ten steps, loaded into a second tree, against lithe's */
        lithe_model *ref = build(name);
        OK(lithe_model_from_thinc_bytes(ref, b10, (size_t)g10->n));
        lithe_model *a[32], *r[32];
        size_t na = 0, nr = 0;
        OK(lithe_model_walk(m, a, 32, &na));
        OK(lithe_model_walk(ref, r, 32, &nr));
        assert_int_equal(na, nr);
        for (size_t i = 0; i < na; i++)
            for (size_t p = 0; p < lithe_model_n_params(a[i]); p++) {
                const char *pn = lithe_model_param_name(a[i], p);
                lithe_tensor *wa = NULL, *wr = NULL;
                OK(lithe_model_get_param(a[i], pn, &wa));
                OK(lithe_model_get_param(r[i], pn, &wr));
                const float *x = lithe_tensor_data(wa), *y = lithe_tensor_data(wr);
                for (int64_t k = 0; k < lithe_tensor_numel(wa); k++)
                    if (!(fabs((double)x[k] - (double)y[k]) <= 1e-4)) {
                        print_error("%s: node %zu (%s) %s[%lld] after 10 Adam steps: lithe %.7g, Thinc %.7g\n", name,
                                    i, lithe_model_name(a[i]), pn, (long long)k, (double)x[k], (double)y[k]);
                        fail();
                    }
            }
        lithe_optimizer_free(opt);
        lithe_tensor_release(T);
        lithe_value_release(X);
        lithe_model_free(m);
        lithe_model_free(ref);
        free(b0);
        free(b10);
    }
}

/* Every truncation and a set of corruptions of a valid file: errors with messages, no crash, and
 * the model left as it was. */
static void test_hostile_thinc_bytes(void **state) {
    (void)state;
    const golden *g0 = get("bytes.maxout.b0");
    uint8_t *b0 = bytes_of(g0);
    size_t n = (size_t)g0->n;
    lithe_model *m = build("maxout");
    OK(lithe_model_from_thinc_bytes(m, b0, n));
    uint8_t *before = NULL, *after = NULL;
    size_t lb = 0, la = 0;
    OK(lithe_model_to_thinc_bytes(m, &before, &lb));
    for (size_t cut = 0; cut < n; cut++) {
        lithe_status s = lithe_model_from_thinc_bytes(m, b0, cut);
        assert_int_not_equal(s, LITHE_OK);
        assert_true(strlen(lithe_last_error()) > 0);
    }
    /* flip every byte in turn to 0xff and to 0x00: never a crash; on success still loadable */
    uint8_t *bad = malloc(n);
    assert_non_null(bad);
    for (size_t i = 0; i < n; i += 3) {
        for (int v = 0; v < 2; v++) {
            memcpy(bad, b0, n);
            bad[i] = v ? 0xff : 0x00;
            lithe_model *fresh = build("maxout");
            (void)lithe_model_from_thinc_bytes(fresh, bad, n);
            lithe_model_free(fresh);
        }
    }
    /* a failed load changed nothing */
    OK(lithe_model_to_thinc_bytes(m, &after, &la));
    assert_int_equal(la, lb);
    assert_memory_equal(before, after, la);
    /* another tree: the message names the node and the difference */
    lithe_model *other = build("mlp");
    assert_int_equal(lithe_model_from_thinc_bytes(other, b0, n), LITHE_ERR_VALUE);
    assert_non_null(strstr(lithe_last_error(), "nodes"));
    lithe_model_free(other);
    other = build("maxout");
    lithe_model *nodes[16];
    size_t nn = 0;
    OK(lithe_model_walk(other, nodes, 16, &nn));
    OK(lithe_model_set_dim(nodes[nn - 1], "nO", 9)); /* the last node in walk order: the LayerNorm */
    assert_int_equal(lithe_model_from_thinc_bytes(other, b0, n), LITHE_ERR_SHAPE);
    if (!strstr(lithe_last_error(), "node 7 (layernorm): dim 'nO' is 6 in the bytes, 9 in the model")) {
        print_error("message: %s\n", lithe_last_error());
        fail();
    }
    lithe_model_free(other);
    free(bad);
    free(b0);
    lithe_buffer_free(before);
    lithe_buffer_free(after);
    lithe_model_free(m);
}

/* ---- the .lithe file ---- */

static size_t predict_into(lithe_model *m, lithe_value *X, float *out, size_t cap) {
    lithe_value *Y = NULL;
    OK(lithe_model_predict(m, X, &Y));
    size_t n = (size_t)lithe_tensor_numel(lithe_value_get_tensor(Y));
    assert_true(n * sizeof(float) <= cap);
    OK(lithe_tensor_read(lithe_value_get_tensor(Y), out, cap));
    lithe_value_release(Y);
    return n;
}

/* Every architecture: Thinc's bytes -> .lithe -> a model rebuilt from the file alone, predicting
 * the same bits and writing Thinc's bytes again byte for byte. */
static void test_lithe_file_round_trip(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof archs / sizeof archs[0]; c++) {
        const char *name = archs[c];
        const golden *g0 = get("bytes.%s.b0", name);
        uint8_t *b0 = bytes_of(g0);
        lithe_model *m = build(name), *back = NULL;
        OK(lithe_model_from_thinc_bytes(m, b0, (size_t)g0->n));
        uint8_t *file = NULL, *tb = NULL;
        size_t flen = 0, tlen = 0;
        OK(lithe_model_save_bytes(m, NULL, &file, &flen));
        OK(lithe_model_load_bytes(file, flen, &back));
        lithe_value *X = input_of(name);
        float y1[256], y2[256];
        size_t ny = predict_into(m, X, y1, sizeof y1);
        assert_int_equal(predict_into(back, X, y2, sizeof y2), ny);
        assert_memory_equal(y1, y2, ny * sizeof(float));
        OK(lithe_model_to_thinc_bytes(back, &tb, &tlen));
        if (tlen != (size_t)g0->n || memcmp(tb, b0, tlen)) {
            print_error("%s: Thinc bytes after a .lithe round trip differ from Thinc's\n", name);
            fail();
        }
        assert_string_equal(lithe_model_name(back), lithe_model_name(m));
        lithe_buffer_free(file);
        lithe_buffer_free(tb);
        lithe_value_release(X);
        lithe_model_free(m);
        lithe_model_free(back);
        free(b0);
    }
}

/* Save with the optimizer, reload both, and training resumes bit for bit. */
static void test_lithe_file_resumes_training(void **state) {
    (void)state;
    const golden *g0 = get("bytes.maxout.b0");
    uint8_t *b0 = bytes_of(g0);
    lithe_model *m = build("maxout"), *m2 = NULL;
    OK(lithe_model_from_thinc_bytes(m, b0, (size_t)g0->n));
    OK(lithe_model_set_dropout_rate(m, 0.0f));
    OK(lithe_model_set_frozen(lithe_model_layer(m, 1), NULL, true)); /* freezing is kept too */
    lithe_value *X = input_of("maxout");
    lithe_tensor *T = tensor_of(get("bytes.maxout.T"));
    lithe_optimizer_opts oo = lithe_adam_defaults();
    lithe_optimizer *opt = NULL, *opt2 = NULL;
    OK(lithe_optimizer_new(&oo, &opt));
    OK(lithe_optimizer_new(&oo, &opt2));
    lithe_model *models[2] = {m, NULL};
    lithe_optimizer *opts[2] = {opt, opt2};
    for (int phase = 0; phase < 2; phase++) {
        if (phase == 1) {
            uint8_t *file = NULL;
            size_t flen = 0;
            OK(lithe_model_save_bytes(m, opt, &file, &flen));
            OK(lithe_model_load_bytes(file, flen, &m2));
            OK(lithe_optimizer_load_from_file_bytes(opt2, m2, file, flen));
            lithe_buffer_free(file);
            models[1] = m2;
            assert_true(lithe_model_is_frozen(lithe_model_layer(m2, 1), "W"));
        }
        for (int k = 0; k < (phase ? 2 : 1); k++)
            for (int step = 0; step < 3; step++) {
                lithe_value *Y = NULL, *dv = NULL;
                lithe_backprop *bp = NULL;
                lithe_tensor *d = NULL;
                OK(lithe_model_begin_update(models[k], X, &Y, &bp));
                OK(lithe_l2_distance(true, lithe_value_get_tensor(Y), T, &d, NULL));
                OK(lithe_value_tensor(d, &dv));
                OK(lithe_backprop_run(bp, dv, NULL));
                OK(lithe_model_finish_update(models[k], opts[k]));
                lithe_backprop_free(bp);
                lithe_value_release(Y);
                lithe_value_release(dv);
                lithe_tensor_release(d);
            }
    }
    uint8_t *a = NULL, *b = NULL;
    size_t la = 0, lb = 0;
    OK(lithe_model_to_thinc_bytes(m, &a, &la));
    OK(lithe_model_to_thinc_bytes(m2, &b, &lb));
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    lithe_buffer_free(a);
    lithe_buffer_free(b);
    lithe_optimizer_free(opt);
    lithe_optimizer_free(opt2);
    lithe_tensor_release(T);
    lithe_value_release(X);
    lithe_model_free(m);
    lithe_model_free(m2);
    free(b0);
}

static void test_hostile_lithe_files(void **state) {
    (void)state;
    const golden *g0 = get("bytes.nested_t2.b0");
    uint8_t *b0 = bytes_of(g0);
    lithe_model *m = build("nested_t2"), *back = NULL;
    OK(lithe_model_from_thinc_bytes(m, b0, (size_t)g0->n));
    uint8_t *file = NULL;
    size_t flen = 0;
    OK(lithe_model_save_bytes(m, NULL, &file, &flen));
    for (size_t cut = 0; cut < flen; cut++) {
        lithe_status s = lithe_model_load_bytes(file, cut, &back);
        assert_int_not_equal(s, LITHE_OK);
        assert_null(back);
    }
    uint8_t *bad = malloc(flen);
    assert_non_null(bad);
    size_t loaded = 0;
    for (size_t i = 0; i < flen; i += 2) {
        memcpy(bad, file, flen);
        bad[i] ^= (uint8_t)(i & 1 ? 0x55 : 0x01);
        if (lithe_model_load_bytes(bad, flen, &back) == LITHE_OK) {
            loaded++; /* a changed weight byte still loads: then the model must still run */
            lithe_value *X = input_of("nested_t2"), *Y = NULL;
            (void)lithe_model_predict(back, X, &Y);
            lithe_value_release(Y);
            lithe_value_release(X);
            lithe_model_free(back);
            back = NULL;
        }
    }
    assert_true(loaded > 0);
    /* a cycle: the first child list [1,2,3] becomes [0,2,3] (the root is its own child) */
    memcpy(bad, file, flen);
    char *links = strstr((char *)bad + 8, "layers\\\":[1,");
    assert_non_null(links);
    links[strlen("layers\\\":[")] = '0';
    assert_int_equal(lithe_model_load_bytes(bad, flen, &back), LITHE_ERR_FORMAT);
    assert_non_null(strstr(lithe_last_error(), "cycle"));
    /* an unknown layer, named */
    memcpy(bad, file, flen);
    char *lay = strstr((char *)bad + 8, "Relu.v1");
    assert_non_null(lay);
    memcpy(lay, "Relu.v9", 7);
    assert_int_equal(lithe_model_load_bytes(bad, flen, &back), LITHE_ERR_UNSUPPORTED);
    assert_non_null(strstr(lithe_last_error(), "Relu.v9"));
    /* a plain safetensors file without lithe's architecture */
    static const char plain[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    uint8_t st[8 + sizeof plain - 1 + 4] = {0};
    st[0] = (uint8_t)(sizeof plain - 1);
    memcpy(st + 8, plain, sizeof plain - 1);
    assert_int_equal(lithe_model_load_bytes(st, sizeof st, &back), LITHE_ERR_FORMAT);
    assert_non_null(strstr(lithe_last_error(), "architecture"));
    assert_int_equal(lithe_model_load("/nonexistent/m.lithe", &back), LITHE_ERR_IO);
    free(bad);
    lithe_buffer_free(file);
    lithe_model_free(m);
    free(b0);
}

/* A file loaded by path (memory-mapped where possible) trains without touching the file, and
 * gives the same model as the file read into memory. */
static void test_lithe_file_from_path(void **state) {
    (void)state;
    const golden *g0 = get("bytes.mlp.b0");
    uint8_t *b0 = bytes_of(g0);
    lithe_model *m = build("mlp"), *a = NULL, *b = NULL;
    OK(lithe_model_from_thinc_bytes(m, b0, (size_t)g0->n));
    char path[] = "/tmp/lithe_test_file_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    OK(lithe_model_save(m, NULL, path));
    uint8_t *before = NULL;
    size_t lb = 0;
    OK(lithe_model_save_bytes(m, NULL, &before, &lb));
    OK(lithe_model_load(path, &a));
    /* the data starts 64-byte aligned in the file, so the mapped first weight is cache-line aligned */
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--) hlen = hlen << 8 | before[i];
    assert_int_equal((8 + hlen) % 64, 0);
    lithe_model *first = NULL;
    lithe_model *walked[64];
    size_t nwalk = 0;
    OK(lithe_model_walk(a, walked, 64, &nwalk));
    for (size_t i = 0; i < nwalk && !first; i++) {
        lithe_tensor *W = NULL;
        if (lithe_model_get_param(walked[i], "W", &W) == LITHE_OK && W) first = walked[i];
    }
    assert_non_null(first);
    lithe_tensor *W0 = NULL;
    OK(lithe_model_get_param(first, "W", &W0));
    assert_int_equal((uintptr_t)lithe_tensor_data(W0) % 64, 0);
    setenv("LITHE_NO_MMAP", "1", 1);
    OK(lithe_model_load(path, &b));
    unsetenv("LITHE_NO_MMAP");
    lithe_value *X = input_of("mlp");
    float ya[256], yb[256];
    size_t n = predict_into(a, X, ya, sizeof ya);
    assert_int_equal(predict_into(b, X, yb, sizeof yb), n);
    assert_memory_equal(ya, yb, n * sizeof(float));
    /* train the mapped model: its pages become private, the file stays as it was */
    lithe_tensor *T = tensor_of(get("bytes.mlp.T"));
    lithe_optimizer_opts oo = lithe_adam_defaults();
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&oo, &opt));
    for (int step = 0; step < 3; step++) {
        lithe_value *Y = NULL, *dv = NULL;
        lithe_backprop *bp = NULL;
        lithe_tensor *d = NULL;
        OK(lithe_model_begin_update(a, X, &Y, &bp));
        OK(lithe_l2_distance(true, lithe_value_get_tensor(Y), T, &d, NULL));
        OK(lithe_value_tensor(d, &dv));
        OK(lithe_backprop_run(bp, dv, NULL));
        OK(lithe_model_finish_update(a, opt));
        lithe_backprop_free(bp);
        lithe_value_release(Y);
        lithe_value_release(dv);
        lithe_tensor_release(d);
    }
    predict_into(a, X, yb, sizeof yb);
    assert_true(memcmp(ya, yb, n * sizeof(float)) != 0);
    lithe_model *c = NULL;
    OK(lithe_model_load(path, &c));
    uint8_t *after = NULL;
    size_t la = 0;
    OK(lithe_model_save_bytes(c, NULL, &after, &la));
    assert_int_equal(la, lb);
    assert_memory_equal(before, after, la);
    lithe_model_free(a); /* unmaps with the last param */
    lithe_model_free(b);
    lithe_model_free(c);
    remove(path);
    lithe_optimizer_free(opt);
    lithe_tensor_release(T);
    lithe_value_release(X);
    lithe_buffer_free(before);
    lithe_buffer_free(after);
    lithe_model_free(m);
    free(b0);
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_thinc_bytes_architectures),
        cmocka_unit_test(test_hostile_thinc_bytes),
        cmocka_unit_test(test_lithe_file_round_trip),
        cmocka_unit_test(test_lithe_file_resumes_training),
        cmocka_unit_test(test_hostile_lithe_files),
        cmocka_unit_test(test_lithe_file_from_path),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
