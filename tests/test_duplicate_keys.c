/* Duplicate keys are refused (issue 30, item 4): Python's json, JavaScript's JSON.parse and
 * msgpack-python keep the last of two equal keys, a first-match lookup the first, so a file with a
 * repeated key would be one model to lithe and another to every other reader. The JSON reader
 * (the .lithe header and its architecture, TF.js model.json) and the msgpack reader (Thinc's bytes,
 * optimizer state) refuse them with LITHE_ERR_FORMAT naming the key. */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"

#include "io/json.h"
#include "io/msgpack.h"
#include "lithe.h"

static void expect_refused(lithe_status got, const char *needle) {
    if (got != LITHE_ERR_FORMAT || !strstr(lithe_last_error(), needle))
        print_error("got %s (%s), wanted LITHE_ERR_FORMAT with '%s'\n", lithe_status_str(got), lithe_last_error(), needle);
    assert_int_equal(got, LITHE_ERR_FORMAT);
    assert_non_null(strstr(lithe_last_error(), needle));
}

/* s with the first `from` replaced by `to` (a new string) */
static char *replace(const char *s, size_t n, const char *from, const char *to, size_t *out_n) {
    const char *at = memmem(s, n, from, strlen(from));
    assert_non_null(at);
    size_t k = (size_t)(at - s), nf = strlen(from), nt = strlen(to);
    char *r = malloc(n - nf + nt + 1);
    assert_non_null(r);
    memcpy(r, s, k);
    memcpy(r + k, to, nt);
    memcpy(r + k + nt, at + nf, n - k - nf);
    r[n - nf + nt] = 0;
    *out_n = n - nf + nt;
    return r;
}

static lithe_status parse_json(const char *text) {
    js_doc d;
    lithe_status s = js_parse(text, strlen(text), "test", &d);
    if (s == LITHE_OK) js_doc_free(&d);
    return s;
}

static void test_json_parser(void **state) {
    (void)state;
    OK(parse_json("{\"a\":1,\"A\":1,\"b\":{\"a\":2},\"c\":[{\"a\":1},{\"a\":1}]}")); /* same key, other objects */
    expect_refused(parse_json("{\"a\":1,\"a\":2}"), "the key \"a\" appears twice");
    expect_refused(parse_json("{\"x\":{\"k\":1,\"j\":0,\"k\":{}}}"), "the key \"k\" appears twice");
    expect_refused(parse_json("{\"\\u0061\":1,\"a\":2}"), "the key \"a\""); /* equal once decoded */
    expect_refused(parse_json("{\"\":1,\"\":2}"), "the key \"\" appears twice");
    /* many keys (the sorted path): 300 distinct pass, one repeat among them fails */
    char *big = malloc(300 * 16 + 16);
    assert_non_null(big);
    size_t n = 0;
    n += (size_t)sprintf(big + n, "{");
    for (int i = 0; i < 300; i++) n += (size_t)sprintf(big + n, "%s\"k%d\":%d", i ? "," : "", i, i);
    strcpy(big + n, "}");
    OK(parse_json(big));
    big[n] = 0;
    strcat(big, ",\"k217\":0}");
    expect_refused(parse_json(big), "the key \"k217\" appears twice");
    free(big);
}

static lithe_status parse_mp(const uint8_t *b, size_t n) {
    mp_doc d;
    lithe_status s = mp_parse(b, n, "test", &d);
    if (s == LITHE_OK) mp_doc_free(&d);
    return s;
}

static void test_msgpack_parser(void **state) {
    (void)state;
    /* {"ab": 1, "ab": 2} */
    const uint8_t two_str[] = {0x82, 0xa2, 'a', 'b', 0x01, 0xa2, 'a', 'b', 0x02};
    expect_refused(parse_mp(two_str, sizeof two_str), "the key \"ab\" appears twice");
    /* a str key and a bin key of the same bytes are different keys (str and bytes in Python) */
    const uint8_t str_bin[] = {0x82, 0xa2, 'a', 'b', 0x01, 0xc4, 0x02, 'a', 'b', 0x02};
    OK(parse_mp(str_bin, sizeof str_bin));
    /* {5: 1, 5: 2}, the second 5 as a uint8: the same int */
    const uint8_t ints[] = {0x82, 0x05, 0x01, 0xcc, 0x05, 0x02};
    expect_refused(parse_mp(ints, sizeof ints), "the key 5 appears twice");
    /* nested: [{"k": 1}, {"k": 1}] is fine; {"m": {"k": 1, "k": 1}} is not */
    const uint8_t ok_nested[] = {0x92, 0x81, 0xa1, 'k', 0x01, 0x81, 0xa1, 'k', 0x01};
    OK(parse_mp(ok_nested, sizeof ok_nested));
    const uint8_t bad_nested[] = {0x81, 0xa1, 'm', 0x82, 0xa1, 'k', 0x01, 0xa1, 'k', 0x01};
    expect_refused(parse_mp(bad_nested, sizeof bad_nested), "the key \"k\" appears twice");
    /* many keys (a map16 of 40 one-byte int keys), one repeated */
    uint8_t many[3 + 80];
    many[0] = 0xde, many[1] = 0, many[2] = 40;
    for (int i = 0; i < 40; i++) many[3 + 2 * i] = (uint8_t)i, many[4 + 2 * i] = 0xc0;
    OK(parse_mp(many, sizeof many));
    many[3 + 2 * 39] = 17;
    expect_refused(parse_mp(many, sizeof many), "the key 17 appears twice");
}

/* A small saved model: chain(Relu(4, 3), Softmax(2, 4)) as .lithe bytes and as Thinc's bytes. */
static lithe_model *small_model(void) {
    lithe_model *r = NULL, *s = NULL, *c = NULL;
    lithe_dense_opts o = {.nO = 4, .nI = 3};
    OK(lithe_relu(&o, &r));
    lithe_softmax_opts so = {.nO = 2, .nI = 4};
    OK(lithe_softmax(&so, &s));
    lithe_model *layers[2] = {r, s};
    OK(lithe_chain(2, layers, &c));
    lithe_tensor *xt = NULL;
    int64_t shape[2] = {2, 3};
    lithe_backend *cpu = NULL;
    OK(lithe_backend_get("cpu", &cpu));
    OK(lithe_tensor_new(cpu, LITHE_F32, 2, shape, &xt));
    lithe_value *x = NULL;
    OK(lithe_value_tensor(xt, &x));
    OK(lithe_model_initialize(c, x, NULL));
    lithe_value_release(x);
    lithe_tensor_release(xt);
    return c;
}

/* file with `from` in its header replaced by `to` (the header's length rewritten), loaded */
static lithe_status load_edited(const uint8_t *file, size_t len, const char *from, const char *to) {
    uint64_t hn = 0;
    for (int k = 7; k >= 0; k--) hn = hn << 8 | file[k];
    size_t nh = 0;
    char *h = replace((const char *)file + 8, (size_t)hn, from, to, &nh);
    size_t n = 8 + nh + (len - 8 - (size_t)hn);
    uint8_t *b = malloc(n);
    assert_non_null(b);
    for (int k = 0; k < 8; k++) b[k] = (uint8_t)((uint64_t)nh >> (8 * k));
    memcpy(b + 8, h, nh);
    memcpy(b + 8 + nh, file + 8 + hn, len - 8 - (size_t)hn);
    lithe_model *m = NULL;
    lithe_status s = lithe_model_load_bytes(b, n, &m);
    if (s != LITHE_OK) assert_null(m);
    lithe_model_free(m);
    free(h);
    free(b);
    return s;
}

static void test_lithe_file(void **state) {
    (void)state;
    lithe_model *m = small_model();
    uint8_t *file = NULL;
    size_t len = 0;
    OK(lithe_model_save_bytes(m, NULL, &file, &len));
    OK(load_edited(file, len, "\"__metadata__\":{", "\"__metadata__\":{")); /* the edit itself loads */
    expect_refused(load_edited(file, len, "{\"__metadata__\":{", "{\"__metadata__\":{\"format\":\"x\"},\"__metadata__\":{"),
                   "the key \"__metadata__\" appears twice");
    expect_refused(load_edited(file, len, "\"format\":\"lithe\"", "\"format\":\"lithe\",\"format\":\"other\""),
                   "the key \"format\" appears twice");
    /* inside the architecture (JSON in a JSON string) */
    expect_refused(load_edited(file, len, "{\\\"root\\\":0,", "{\\\"root\\\":0,\\\"root\\\":1,"),
                   "the key \"root\" appears twice");
    /* a tensor entry named twice */
    expect_refused(load_edited(file, len, "\"1.b\":{", "\"1.W\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"1.b\":{"),
                   "the key \"1.W\" appears twice");
    lithe_buffer_free(file);

    /* Thinc's bytes: the top-level map with "nodes" twice (the second empty) */
    uint8_t *tb = NULL;
    size_t tn = 0;
    OK(lithe_model_to_thinc_bytes(m, &tb, &tn));
    assert_true((tb[0] & 0xf0) == 0x80 && (tb[0] & 0x0f) < 15); /* a fixmap */
    uint8_t *dup = malloc(tn + 7);
    assert_non_null(dup);
    memcpy(dup, tb, tn);
    dup[0]++;
    memcpy(dup + tn, "\xa5nodes\x90", 7);
    OK(lithe_model_from_thinc_bytes(m, tb, tn));
    expect_refused(lithe_model_from_thinc_bytes(m, dup, tn + 7), "the key \"nodes\" appears twice");
    free(dup);
    lithe_buffer_free(tb);
    lithe_model_free(m);
}

static const char tfjs_json[] =
    "{\"format\":\"layers-model\",\"modelTopology\":{\"class_name\":\"Sequential\",\"config\":{\"name\":\"s\",\"layers\":["
    "{\"class_name\":\"Dense\",\"config\":{\"name\":\"dense\",\"units\":2,\"activation\":\"linear\",\"use_bias\":true,"
    "\"batch_input_shape\":[null,2]}}]}},\"weightsManifest\":[{\"paths\":[\"group1-shard1of1.bin\"],"
    "\"weights\":[{\"name\":\"dense/kernel\",\"shape\":[2,2],\"dtype\":\"float32\"},{\"name\":\"dense/bias\","
    "\"shape\":[2],\"dtype\":\"float32\"}]}]}";

static void test_tfjs(void **state) {
    (void)state;
    const float w[6] = {1, 2, 3, 4, 0.5f, -0.5f};
    lithe_model *m = NULL;
    OK(lithe_tfjs_load_bytes(tfjs_json, strlen(tfjs_json), (const uint8_t *)w, sizeof w, &m));
    lithe_model_free(m);
    size_t n = 0;
    char *j = replace(tfjs_json, strlen(tfjs_json), "\"units\":2,", "\"units\":2,\"units\":3,", &n);
    expect_refused(lithe_tfjs_load_bytes(j, n, (const uint8_t *)w, sizeof w, &m), "the key \"units\" appears twice");
    assert_null(m);
    free(j);
    j = replace(tfjs_json, strlen(tfjs_json), "\"paths\":[\"group1-shard1of1.bin\"],",
                "\"paths\":[\"group1-shard1of1.bin\"],\"paths\":[],", &n);
    expect_refused(lithe_tfjs_load_bytes(j, n, (const uint8_t *)w, sizeof w, &m), "the key \"paths\" appears twice");
    free(j);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_parser),
        cmocka_unit_test(test_msgpack_parser),
        cmocka_unit_test(test_lithe_file),
        cmocka_unit_test(test_tfjs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
