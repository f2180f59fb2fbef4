/* TF.js out (core/io/tfjs/save.c): every model of the TF.js goldens (tests/tfjs/gen_tfjs_goldens.mjs)
 * loaded, fine-tuned five SGD steps on sum(Y * R), saved back with lithe_tfjs_save into
 * $LITHE_TFJS_SAVED/<model>/ beside x.npy and lithe's prediction y_lithe.npy; the ctest
 * tfjs_saved_check then loads each with @tensorflow/tfjs (tests/tfjs/check_saved.mjs) and compares.
 * Here: the saved files load back into lithe to the same predictions, survive a .lithe round trip,
 * the bytes API matches the files, and a model that did not come from TF.js is refused. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "lithe.h"
#include "golden/golden.h"

static const char *const names[] = {"mlp", "cnn", "branches", "mlp_uint8", "text", "text_cnn", "upsep"};

static const char *path_in(const char *dir, const char *name, const char *file) {
    static char buf[4096];
    snprintf(buf, sizeof buf, "%.3000s/%.200s%s%.200s", dir, name, file ? "/" : "", file ? file : "");
    return buf;
}

static const char *golden_dir(void) {
    static char buf[4096];
    const char *slash = strrchr(golden_path, '/');
    snprintf(buf, sizeof buf, "%.*s", slash ? (int)(slash - golden_path) : 1, slash ? golden_path : ".");
    return buf;
}

static const char *saved_dir(void) {
    const char *d = getenv("LITHE_TFJS_SAVED");
    return d && *d ? d : "tfjs_saved";
}

static lithe_tensor *predict(lithe_model *m, lithe_value *X) {
    lithe_value *Y = NULL;
    OK(lithe_model_predict(m, X, &Y));
    lithe_tensor *t = lithe_tensor_retain(lithe_value_get_tensor(Y));
    lithe_value_release(Y);
    return t;
}

static double max_diff(const lithe_tensor *a, const lithe_tensor *b) {
    assert_int_equal(lithe_tensor_numel(a), lithe_tensor_numel(b));
    const float *p = lithe_tensor_data(a), *q = lithe_tensor_data(b);
    double d = 0;
    for (int64_t i = 0; i < lithe_tensor_numel(a); i++) d = fmax(d, fabs((double)p[i] - q[i]));
    return d;
}

static void fine_tune(lithe_model *m, lithe_value *X, lithe_value *R) {
    lithe_optimizer_opts o = lithe_sgd_defaults(0.05);
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&o, &opt));
    for (int step = 0; step < 5; step++) {
        lithe_value *Y = NULL;
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        OK(lithe_backprop_run(bp, R, NULL)); /* descending sum(Y * R) */
        OK(lithe_model_finish_update(m, opt));
        lithe_backprop_free(bp);
        lithe_value_release(Y);
    }
    lithe_optimizer_free(opt);
}

static void test_save_after_fine_tuning(void **state) {
    (void)state;
    const char *out = saved_dir();
    mkdir(out, 0777);
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        const char *name = names[k];
        lithe_model *m = NULL;
        OK(lithe_tfjs_load(path_in(golden_dir(), name, "model.json"), &m));
        lithe_value *X = value_of(get("%s.x", name)), *R = NULL;
        lithe_tensor *before = predict(m, X);
        /* (mlp_uint8, mlp's weights quantized, has no cotangent of its own: mlp's, of the same shape) */
        R = value_of(find("%s.r", name) ? get("%s.r", name) : get("mlp.r"));
        fine_tune(m, X, R);
        lithe_tensor *after = predict(m, X);
        double moved = max_diff(before, after);
        assert_true(moved > 1e-4); /* the saved weights are the trained ones */
        char dir[4096];
        snprintf(dir, sizeof dir, "%s", path_in(out, name, NULL));
        OK(lithe_tfjs_save(m, dir));
        OK(lithe_npy_write_file(lithe_value_get_tensor(X), path_in(out, name, "x.npy")));
        OK(lithe_npy_write_file(after, path_in(out, name, "y_lithe.npy")));

        /* the saved files load into lithe again, to the same predictions */
        lithe_model *back = NULL;
        OK(lithe_tfjs_load(path_in(out, name, "model.json"), &back));
        lithe_tensor *again = predict(back, X);
        assert_true(max_diff(after, again) == 0.0);
        /* and a .lithe round trip keeps what saving needs: the same bytes out */
        uint8_t *file = NULL, *w1 = NULL, *w2 = NULL;
        char *j1 = NULL, *j2 = NULL;
        size_t len = 0, jn1 = 0, jn2 = 0, wn1 = 0, wn2 = 0;
        OK(lithe_model_save_bytes(m, NULL, &file, &len));
        lithe_model *relo = NULL;
        OK(lithe_model_load_bytes(file, len, &relo));
        OK(lithe_tfjs_save_bytes(m, &j1, &jn1, &w1, &wn1));
        OK(lithe_tfjs_save_bytes(relo, &j2, &jn2, &w2, &wn2));
        assert_true(jn1 == jn2 && wn1 == wn2 && !memcmp(j1, j2, jn1) && !memcmp(w1, w2, wn1));
        assert_non_null(strstr(j1, "\"modelTopology\""));
        assert_non_null(strstr(j1, "\"paths\":[\"group1-shard1of1.bin\"]"));
        printf("test_tfjs_save: %-9s 5 SGD steps moved the prediction by %.3g; model.json %zu bytes, shard %zu bytes\n",
               name, moved, jn1, wn1);
        lithe_buffer_free(file);
        lithe_buffer_free(j1);
        lithe_buffer_free(j2);
        lithe_buffer_free(w1);
        lithe_buffer_free(w2);
        lithe_model_free(relo);
        lithe_tensor_release(again);
        lithe_model_free(back);
        lithe_tensor_release(before);
        lithe_tensor_release(after);
        lithe_value_release(X);
        lithe_value_release(R);
        lithe_model_free(m);
    }
}

static void test_refused(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_linear(&(lithe_dense_opts){.nO = 3, .nI = 2}, &m));
    assert_int_equal(lithe_tfjs_save(m, "tfjs_saved_never"), LITHE_ERR_UNSUPPORTED);
    assert_non_null(strstr(lithe_last_error(), "not loaded from the TF.js layers format"));
    struct stat st;
    assert_true(stat("tfjs_saved_never", &st) != 0); /* nothing written */
    char *j = NULL;
    uint8_t *w = NULL;
    size_t jn = 0, wn = 0;
    assert_int_equal(lithe_tfjs_save_bytes(m, &j, &jn, NULL, &wn), LITHE_ERR_INVALID_ARG);
    assert_int_equal(lithe_tfjs_save_bytes(NULL, &j, &jn, &w, &wn), LITHE_ERR_INVALID_ARG);
    lithe_model_free(m);
    /* a path that cannot be a folder: an IO error naming it */
    OK(lithe_tfjs_load(path_in(golden_dir(), "mlp", "model.json"), &m));
    assert_int_equal(lithe_tfjs_save(m, "/proc/lithe-no/such"), LITHE_ERR_IO);
    assert_non_null(strstr(lithe_last_error(), "/proc/lithe-no/such"));
    /* a damaged model.json kept on the node (a hostile .lithe file carries it): refused, no crash */
    static const char *const bad[] = {"{", "[]", "{\"weightsManifest\":{}}", "{\"weightsManifest\":[{\"weights\":[{}]}]}",
                                      "{\"weightsManifest\":[7]}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        lithe_tensor *t = NULL;
        int64_t n = (int64_t)strlen(bad[i]);
        OK(lithe_tensor_from_data(LITHE_U8, 1, &n, bad[i], &t));
        OK(lithe_model_set_attr_tensor(m, "tfjs_json", t));
        lithe_tensor_release(t);
        assert_int_equal(lithe_tfjs_save_bytes(m, &j, &jn, &w, &wn), LITHE_ERR_FORMAT);
        assert_null(j);
        assert_null(w);
    }
    lithe_model_free(m);
}

/* lithe_model_to_thinc_bytes_shims (include/lithe.h), on a graph node at hand: the shim bytes
 * given land in the node's shims list, its params and attrs are written empty; counts checked. */
static void test_thinc_bytes_with_shims(void **state) {
    (void)state;
    lithe_model *g = NULL, *m = NULL;
    OK(lithe_tfjs_load(path_in(golden_dir(), "mlp", "model.json"), &g));
    OK(lithe_chain(1, &g, &m));
    uint8_t *out = NULL;
    size_t n = 0;
    assert_int_equal(lithe_model_to_thinc_bytes(m, &out, &n), LITHE_ERR_UNSUPPORTED);
    assert_non_null(strstr(lithe_last_error(), "lithe_model_to_thinc_bytes_shims"));
    const uint8_t *blobs[2] = {(const uint8_t *)"SHIM-BYTES", (const uint8_t *)"x"};
    const size_t lens[2] = {10, 1};
    assert_int_equal(lithe_model_to_thinc_bytes_shims(m, 2, blobs, lens, &out, &n), LITHE_ERR_VALUE);
    assert_null(out);
    OK(lithe_model_to_thinc_bytes_shims(m, 1, blobs, lens, &out, &n));
    /* msgpack: "shims" [[], [bin8 10 "SHIM-BYTES"]]; no param of the graph node is written */
    static const uint8_t tail[] = {0xa5, 's', 'h', 'i', 'm', 's', 0x92, 0x90, 0x91, 0xc4, 10,
                                   'S', 'H', 'I', 'M', '-', 'B', 'Y', 'T', 'E', 'S'};
    assert_true(n > sizeof tail && !memcmp(out + n - sizeof tail, tail, sizeof tail));
    const char *p0 = lithe_model_param_name(g, 0);
    bool found = false;
    for (size_t i = 0; i + strlen(p0) <= n && !found; i++) found = !memcmp(out + i, p0, strlen(p0));
    assert_false(found);
    lithe_buffer_free(out);
    lithe_model_free(m); /* (the chain owns g) */
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_save_after_fine_tuning),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_thinc_bytes_with_shims),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
