#define _POSIX_C_SOURCE 200809L
/* The file formats' building blocks against their reference implementations: the msgpack writer
 * against srsly (what Thinc uses) byte for byte, the reader on the same bytes; .npy against
 * numpy.save byte for byte, both ways; every truncation and a sweep of corruptions of each is an
 * error with a message, never a crash. Goldens: tests/golden/gen_thinc_goldens.py. */
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
#include "io/msgpack.h"
#include "golden/golden.h"

static void test_msgpack_matches_srsly(void **state) {
    (void)state;
    const golden *g = get("msgpack.values");
    uint8_t *want = bytes_of(g);
    static const int64_t ints[] = {0,      127,    128,         255,         256,    65535,  65536,
                                   4294967295LL, 4294967296LL, -1, -32, -33, -128, -129, -32768, -32769,
                                   -2147483648LL, -2147483649LL};
    char big[257];
    mp_buf b = {0};
    mp_array(&b, 31);
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) mp_int(&b, ints[i]);
    mp_double(&b, 1.5);
    mp_bool(&b, true);
    mp_bool(&b, false);
    mp_nil(&b);
    memset(big, 'a', 31);
    mp_str_n(&b, big, 31);
    memset(big, 'b', 32);
    mp_str_n(&b, big, 32);
    memset(big, 'c', 256);
    mp_str_n(&b, big, 256);
    memset(big, 'x', 255);
    mp_bin(&b, big, 255);
    memset(big, 'y', 256);
    mp_bin(&b, big, 256);
    mp_array(&b, 16);
    for (int i = 0; i < 16; i++) mp_int(&b, i);
    mp_map(&b, 1);
    mp_str(&b, "k");
    mp_int(&b, 1);
    mp_array(&b, 0);
    mp_map(&b, 0);
    assert_false(b.oom);
    assert_int_equal(b.n, (size_t)g->n);
    assert_memory_equal(b.p, want, b.n);
    /* and the reader gives the values back */
    mp_doc d;
    OK(mp_parse(want, (size_t)g->n, "srsly bytes", &d));
    assert_int_equal(d.root.type, MP_ARRAY);
    assert_int_equal(d.root.len, 31);
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        assert_int_equal(d.root.items[i].type, MP_INT);
        assert_true(d.root.items[i].v.i == ints[i]);
    }
    assert_true(d.root.items[18].type == MP_FLOAT && d.root.items[18].v.f == 1.5);
    assert_true(d.root.items[21].type == MP_NIL);
    assert_true(d.root.items[24].type == MP_STR && d.root.items[24].len == 256);
    assert_true(d.root.items[26].type == MP_BIN && d.root.items[26].len == 256);
    assert_true(mp_get(&d.root.items[28], "k") && mp_get(&d.root.items[28], "k")->v.i == 1);
    mp_doc_free(&d);
    /* every truncation is an error; so is a trailing byte and the unused 0xc1 */
    for (size_t cut = 0; cut < (size_t)g->n; cut++)
        assert_int_equal(mp_parse(want, cut, "cut", &d), LITHE_ERR_FORMAT);
    uint8_t c1 = 0xc1;
    assert_int_equal(mp_parse(&c1, 1, "c1", &d), LITHE_ERR_FORMAT);
    /* hostile counts: an array claiming 2^32-1 items in 5 bytes, a 4 GiB string, deep nesting */
    const uint8_t huge_array[] = {0xdd, 0xff, 0xff, 0xff, 0xff};
    assert_int_equal(mp_parse(huge_array, sizeof huge_array, "huge", &d), LITHE_ERR_FORMAT);
    const uint8_t huge_str[] = {0xdb, 0xff, 0xff, 0xff, 0xf0, 'a'};
    assert_int_equal(mp_parse(huge_str, sizeof huge_str, "huge", &d), LITHE_ERR_FORMAT);
    uint8_t deep[200];
    memset(deep, 0x91, sizeof deep);
    deep[199] = 0xc0;
    assert_int_equal(mp_parse(deep, sizeof deep, "deep", &d), LITHE_ERR_FORMAT);
    assert_non_null(strstr(lithe_last_error(), "deeper"));
    /* found by fuzz_msgpack: an empty array or map as the first container (no arena yet) */
    const uint8_t empties[][3] = {{0x90}, {0x80}, {0x91, 0x90}, {0x81, 0xa0, 0x80}};
    const size_t elen[] = {1, 1, 2, 3};
    for (int i = 0; i < 4; i++) {
        OK(mp_parse(empties[i], elen[i], "empty", &d));
        mp_doc_free(&d);
    }
    free(b.p);
    free(want);
}

static const char *const npys[] = {"f32", "i64", "u8", "scalar", "f16", "one", "empty"};

static void test_npy_matches_numpy(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof npys / sizeof npys[0]; c++) {
        const golden *gb = get("npy.%s.bytes", npys[c]), *gv = get("npy.%s.values", npys[c]);
        uint8_t *b = bytes_of(gb);
        lithe_tensor *t = NULL, *f = NULL;
        OK(lithe_npy_load(b, (size_t)gb->n, &t));
        assert_int_equal(lithe_tensor_numel(t), gv->n);
        /* the values, through float32 (exact for these) */
        if (lithe_tensor_dtype(t) == LITHE_I64) {
            for (int64_t i = 0; i < gv->n; i++) assert_true((double)((int64_t *)lithe_tensor_data(t))[i] == gv->v[i]);
        } else {
            OK(lithe_tensor_cast(t, LITHE_F32, &f));
            for (int64_t i = 0; i < gv->n; i++) assert_true((double)((float *)lithe_tensor_data(f))[i] == gv->v[i]);
            lithe_tensor_release(f);
        }
        uint8_t *out = NULL;
        size_t len = 0;
        OK(lithe_npy_save(t, &out, &len));
        if (len != (size_t)gb->n || memcmp(out, b, len)) {
            print_error("npy %s: lithe writes %zu bytes, numpy %lld\n", npys[c], len, (long long)gb->n);
            fail();
        }
        for (size_t cut = 0; cut < len; cut++) {
            lithe_tensor *x = NULL;
            lithe_status s = lithe_npy_load(b, cut, &x);
            if (s == LITHE_OK) { /* only an empty array's file is still whole when cut at its end */
                assert_int_equal(lithe_tensor_numel(t), 0);
                lithe_tensor_release(x);
            }
        }
        lithe_buffer_free(out);
        lithe_tensor_release(t);
        free(b);
    }
    /* corruptions of a valid header: errors that say what is wrong */
    const golden *gb = get("npy.f32.bytes");
    uint8_t *b = bytes_of(gb);
    size_t n = (size_t)gb->n;
    lithe_tensor *t = NULL;
    for (size_t i = 0; i < 128; i++)
        for (int v = 0; v < 3; v++) {
            uint8_t keep = b[i];
            b[i] = v == 0 ? 0x00 : v == 1 ? 0xff : '9';
            lithe_status s = lithe_npy_load(b, n, &t);
            if (s == LITHE_OK) lithe_tensor_release(t);
            else assert_true(strlen(lithe_last_error()) > 0);
            b[i] = keep;
        }
    char *h = (char *)b;
    char *p = strstr(h + 10, "'<f4'");
    assert_non_null(p);
    memcpy(p, "'>f4'", 5);
    assert_int_equal(lithe_npy_load(b, n, &t), LITHE_ERR_DTYPE);
    assert_non_null(strstr(lithe_last_error(), "big-endian"));
    memcpy(p, "'<f8'", 5);
    assert_int_equal(lithe_npy_load(b, n, &t), LITHE_ERR_DTYPE);
    memcpy(p, "'<f4'", 5);
    p = strstr(h + 10, "False");
    memcpy(p, "True,", 5);
    assert_int_equal(lithe_npy_load(b, n, &t), LITHE_ERR_UNSUPPORTED);
    free(b);
    assert_int_equal(lithe_npy_read_file("/nonexistent/x.npy", &t), LITHE_ERR_IO);
    /* found by fuzz_npy: a zero extent beside extents whose product overflows int64 */
    static const char hz[] = "\x93NUMPY\x01\x00\x76\x00{'descr': '<f4', 'fortran_order': False, 'shape': "
                             "(0, 12802812000000, 2250692), }";
    uint8_t z[10 + 0x76];
    memset(z, ' ', sizeof z);
    memcpy(z, hz, sizeof hz - 1);
    z[sizeof z - 1] = '\n';
    OK(lithe_npy_load(z, sizeof z, &t));
    assert_int_equal(lithe_tensor_numel(t), 0);
    lithe_tensor_release(t);
    assert_non_null(strstr(lithe_last_error(), "/nonexistent/x.npy"));
}

/* lithe_model_from_architecture: the loader's build from an in-memory description (what the Python
 * exporter hands over), then lithe_model_save's bytes load back to the same model; bad
 * descriptions are errors with messages. */
static void test_model_from_architecture(void **state) {
    (void)state;
    static const char arch[] = "{\"root\":0,\"nodes\":[{\"layer\":\"Linear.v1\",\"name\":\"linear\","
                               "\"dims\":{\"nO\":2,\"nI\":3},\"attrs\":{},\"params\":[\"W\",\"b\"],\"frozen\":[],"
                               "\"layers\":[],\"refs\":{},\"init_W\":0,\"init_b\":0,\"cfg\":[0,0]}]}";
    static const float w[6] = {1, 2, 3, 4, 5, 6}, bias[2] = {0.5f, -0.5f}, x[3] = {1, 0, -1};
    lithe_tensor *W = NULL, *b = NULL, *X = NULL, *ids = NULL, *Y = NULL;
    assert_int_equal(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 3}, w, &W), LITHE_OK);
    assert_int_equal(lithe_tensor_from_data(LITHE_F32, 1, (int64_t[]){2}, bias, &b), LITHE_OK);
    assert_int_equal(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){1, 3}, x, &X), LITHE_OK);
    assert_int_equal(lithe_tensor_from_data(LITHE_I64, 1, (int64_t[]){2}, (int64_t[]){1, 2}, &ids), LITHE_OK);
    const char *names[2] = {"0.W", "0.b"};
    lithe_tensor *ts[2] = {W, b};
    lithe_model *m = NULL, *back = NULL;
    assert_int_equal(lithe_model_from_architecture(arch, strlen(arch), 2, names, ts, &m), LITHE_OK);
    assert_int_equal(lithe_model_predict_tensor(m, X, &Y), LITHE_OK);
    const float *y = lithe_tensor_data(Y);
    assert_true(y[0] == 1 - 3 + 0.5f && y[1] == 4 - 6 - 0.5f);
    uint8_t *bytes = NULL;
    size_t n = 0;
    assert_int_equal(lithe_model_save_bytes(m, NULL, &bytes, &n), LITHE_OK);
    assert_int_equal(lithe_model_load_bytes(bytes, n, &back), LITHE_OK);
    assert_string_equal(lithe_model_layer_type(back), "Linear.v1");
    lithe_buffer_free(bytes);
    lithe_model_free(back);
    lithe_model_free(m);
    lithe_model *junk = (lithe_model *)&junk;
    assert_int_equal(lithe_model_from_architecture(arch, strlen(arch), 2, NULL, ts, &junk), LITHE_ERR_INVALID_ARG);
    assert_null(junk);
    assert_int_equal(lithe_model_from_architecture(NULL, 0, 0, NULL, NULL, &junk), LITHE_ERR_INVALID_ARG);
    assert_int_equal(lithe_model_from_architecture(arch, strlen(arch), 0, NULL, NULL, NULL), LITHE_ERR_INVALID_ARG);
    lithe_tensor *bad[2] = {W, ids}; /* an int64 param */
    assert_int_equal(lithe_model_from_architecture(arch, strlen(arch), 2, names, bad, &junk), LITHE_ERR_INVALID_ARG);
    const char *twice[2] = {"0.W", "0.W"};
    assert_int_equal(lithe_model_from_architecture(arch, strlen(arch), 2, twice, ts, &junk), LITHE_ERR_FORMAT);
    assert_int_equal(lithe_model_from_architecture(arch, strlen(arch) - 3, 2, names, ts, &junk), LITHE_ERR_FORMAT);
    static const char unknown[] = "{\"root\":0,\"nodes\":[{\"layer\":\"Nope.v1\",\"name\":\"x\",\"dims\":{},"
                                  "\"attrs\":{},\"params\":[],\"layers\":[],\"refs\":{}}]}";
    assert_int_equal(lithe_model_from_architecture(unknown, strlen(unknown), 0, NULL, NULL, &junk), LITHE_ERR_UNSUPPORTED);
    assert_non_null(strstr(lithe_last_error(), "Nope.v1"));
    assert_null(junk);
    lithe_tensor_release(W);
    lithe_tensor_release(b);
    lithe_tensor_release(X);
    lithe_tensor_release(ids);
    lithe_tensor_release(Y);
}

static void test_npy_files(void **state) {
    (void)state;
    float v[6] = {1, 2, 3, 4, 5, 6};
    lithe_tensor *t = NULL, *r = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 3}, v, &t));
    char path[] = "/tmp/lithe_test_io_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    OK(lithe_npy_write_file(t, path));
    OK(lithe_npy_read_file(path, &r));
    assert_int_equal(lithe_tensor_ndim(r), 2);
    assert_memory_equal(lithe_tensor_data(r), v, sizeof v);
    /* an unwritable target leaves the old file as it was */
    assert_int_equal(lithe_npy_write_file(t, "/nonexistent-dir/x.npy"), LITHE_ERR_IO);
    remove(path);
    lithe_tensor_release(t);
    lithe_tensor_release(r);
    close(fd);
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_msgpack_matches_srsly),
        cmocka_unit_test(test_npy_matches_numpy),
        cmocka_unit_test(test_npy_files),
        cmocka_unit_test(test_model_from_architecture),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
