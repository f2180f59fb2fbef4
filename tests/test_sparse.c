/* Sparse, hashed and string inputs against the real Thinc 8.1.7 (tests/golden/gen_sparse_goldens.py):
 * MurmurHash3_x86_32 against murmurhash's C, SparseLinear v1 and v2 (outputs, dW, db), strings2arrays
 * (hash_unicode bit for bit), remap_ids v1 and v2, uniqued around HashEmbed with repeated ids — and
 * Thinc's to_bytes of each loading into lithe and written back byte for byte, .lithe round trips,
 * finite differences against float64 sums, empty batches and zero-length rows, batched == one
 * row at a time, and clear errors for wrong input. StaticVectors (spaCy's; no Thinc oracle) is
 * checked against a float64 reference. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"
#include "golden/golden.h"
#include "failing_alloc.h"

/* The scalar hash kernel (backends/cpu/scalar/sparse.c), checked directly against murmurhash. */
uint32_t lithe_murmur3_x86_32_u64__scalar(uint64_t key, uint32_t seed);
uint32_t lithe_murmur3_x86_32__scalar(const uint8_t *data, size_t len, uint32_t seed);

/* ---- helpers ------------------------------------------------------------------------------- */

static lithe_tensor *u64_of(const golden *g, lithe_dtype dt) {
    lithe_tensor *t = NULL;
    OK(lithe_tensor_from_data(dt, g->ndim, g->shape, g->u, &t));
    return t;
}

static lithe_value *wrap(lithe_tensor *t) {
    lithe_value *v = NULL;
    OK(lithe_value_tensor(t, &v));
    lithe_tensor_release(t);
    return v;
}

static float *read_f32(const lithe_tensor *t) {
    int64_t n = lithe_tensor_numel(t);
    float *b = malloc(sizeof(float) * (size_t)(n + 1));
    OK(lithe_tensor_read(t, b, sizeof(float) * (size_t)n));
    return b;
}

static void expect_i64(const char *what, const lithe_tensor *t, const golden *g) {
    assert_int_equal(lithe_tensor_numel(t), g->n);
    int64_t n = g->n;
    lithe_dtype dt = lithe_tensor_dtype(t);
    void *b = malloc(8 * (size_t)(n + 1));
    OK(lithe_tensor_read(t, b, lithe_dtype_size(dt) * (size_t)n));
    for (int64_t i = 0; i < n; i++) {
        uint64_t got = dt == LITHE_I32 ? (uint64_t)(int64_t)((int32_t *)b)[i] : ((uint64_t *)b)[i];
        if (got != g->u[i]) {
            print_error("%s[%lld]: lithe %llu, Thinc %llu\n", what, (long long)i, (unsigned long long)got,
                        (unsigned long long)g->u[i]);
            fail();
        }
    }
    free(b);
}

/* m's Thinc bytes equal Thinc's; then Thinc's bytes load into `fresh` (built the same way) and
 * write back identically; and m survives a .lithe round trip writing the same Thinc bytes. */
static void expect_bytes(lithe_model *m, lithe_model *fresh, const char *golden_name) {
    const golden *g = get("%s", golden_name);
    uint8_t *want = bytes_of(g), *got = NULL, *again = NULL, *file = NULL, *third = NULL;
    size_t n = 0, n2 = 0, nf = 0, n3 = 0;
    OK(lithe_model_to_thinc_bytes(m, &got, &n));
    assert_int_equal(n, (size_t)g->n);
    assert_memory_equal(got, want, n);
    if (fresh) {
        OK(lithe_model_from_thinc_bytes(fresh, want, (size_t)g->n));
        OK(lithe_model_to_thinc_bytes(fresh, &again, &n2));
        assert_int_equal(n2, (size_t)g->n);
        assert_memory_equal(again, want, n2);
    }
    lithe_model *loaded = NULL;
    OK(lithe_model_save_bytes(m, NULL, &file, &nf));
    OK(lithe_model_load_bytes(file, nf, &loaded));
    OK(lithe_model_to_thinc_bytes(loaded, &third, &n3));
    assert_int_equal(n3, (size_t)g->n);
    assert_memory_equal(third, want, n3);
    lithe_model_free(loaded);
    lithe_buffer_free(got);
    lithe_buffer_free(again);
    lithe_buffer_free(file);
    lithe_buffer_free(third);
    free(want);
}

static void expect_error(lithe_status got, lithe_status want, const char *needle) {
    if (got != want || !strstr(lithe_last_error(), needle)) {
        print_error("expected %s mentioning '%s', got %s: %s\n", lithe_status_str(want), needle, lithe_status_str(got),
                    lithe_last_error());
        fail();
    }
}

/* ---- MurmurHash3 --------------------------------------------------------------------------- */

static void test_murmur(void **state) {
    (void)state;
    const golden *keys = get("mm_keys");
    static const uint32_t seeds[] = {0, 1, 7};
    for (int s = 0; s < 3; s++) {
        const golden *h = get("mm_seed%u", seeds[s]);
        for (int64_t i = 0; i < keys->n; i++) {
            uint64_t k = keys->u[i];
            uint8_t le[8];
            for (int b = 0; b < 8; b++) le[b] = (uint8_t)(k >> (8 * b));
            assert_int_equal(lithe_murmur3_x86_32_u64__scalar(k, seeds[s]), (uint32_t)h->u[i]);
            assert_int_equal(lithe_murmur3_x86_32__scalar(le, 8, seeds[s]), (uint32_t)h->u[i]);
        }
    }
    const golden *blob = get("mm_blob");
    uint8_t *b = bytes_of(blob);
    static const uint32_t bseeds[] = {0, 1, 42};
    for (int s = 0; s < 3; s++) {
        const golden *h = get("mm_blob_seed%u", bseeds[s]);
        for (int64_t n = 0; n <= blob->n; n++)
            assert_int_equal(lithe_murmur3_x86_32__scalar(b, (size_t)n, bseeds[s]), (uint32_t)h->u[n]);
    }
    free(b);
}

/* ---- SparseLinear -------------------------------------------------------------------------- */

static lithe_value *sparse_input(const char *p) {
    lithe_value *items[3] = {wrap(u64_of(get("%s_keys", p), LITHE_U64)), wrap(tensor_of(get("%s_values", p))),
                             wrap(tensor_of(get("%s_lengths", p)))};
    lithe_value *X = NULL;
    OK(lithe_value_tuple(3, items, &X));
    for (int i = 0; i < 3; i++) lithe_value_release(items[i]);
    return X;
}

static lithe_model *sparse_model(const char *p, bool v1) {
    const golden *W = get("%s_W", p), *b = get("%s_b", p);
    lithe_model *m = NULL;
    OK(lithe_sparse_linear(&(lithe_sparse_linear_opts){.nO = b->n, .length = W->n / b->n, .v1 = v1}, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    lithe_tensor *tW = tensor_of(W), *tb = tensor_of(b);
    OK(lithe_model_set_param(m, "W", tW));
    OK(lithe_model_set_param(m, "b", tb));
    lithe_tensor_release(tW);
    lithe_tensor_release(tb);
    return m;
}

static void sparse_case(const char *p, bool v1) {
    lithe_model *m = sparse_model(p, v1);
    lithe_value *X = sparse_input(p), *Y = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    expect_close(p, lithe_value_get_tensor(Y), get("%s_Y", p), 1e-6, 1e-6);
    lithe_value *dY = value_of(get("%s_dY", p));
    OK(lithe_backprop_run(bp, dY, &dX));
    assert_ptr_equal(dX, X); /* Thinc returns the input tuple */
    lithe_tensor *g = NULL;
    OK(lithe_model_get_grad(m, "W", &g));
    expect_close("dW", g, get("%s_dW", p), 1e-6, 1e-6);
    OK(lithe_model_get_grad(m, "b", &g));
    expect_close("db", g, get("%s_db", p), 1e-6, 1e-6);
    char name[64];
    snprintf(name, sizeof name, "%s_bytes", p);
    lithe_model *fresh = NULL;
    OK(lithe_sparse_linear(&(lithe_sparse_linear_opts){.nO = lithe_tensor_numel(lithe_value_get_tensor(Y)) ? 0 : 0,
                                                       .length = get("%s_W", p)->n / get("%s_b", p)->n, .v1 = v1},
                           &fresh));
    OK(lithe_model_set_dim(fresh, "nO", get("%s_b", p)->n));
    OK(lithe_model_initialize(fresh, NULL, NULL));
    expect_bytes(m, fresh, name);
    /* the loaded model scores the same */
    lithe_value *Y2 = NULL;
    OK(lithe_model_predict(fresh, X, &Y2));
    expect_close("Y from Thinc's bytes", lithe_value_get_tensor(Y2), get("%s_Y", p), 1e-6, 1e-6);
    lithe_value_release(Y2);
    lithe_model_free(fresh);
    lithe_value_release(dX);
    lithe_value_release(dY);
    lithe_value_release(Y);
    lithe_value_release(X);
    lithe_backprop_free(bp);
    lithe_model_free(m);
}

static void test_sparse_linear_goldens(void **state) {
    (void)state;
    sparse_case("sl2", false);
    sparse_case("sl1", true);
    sparse_case("sl2odd", false);
    sparse_case("sl1odd", true);
    sparse_case("sl2empty", false);
    sparse_case("sl1len1", true);
    sparse_case("sl2len1", false);
    sparse_case("sl2nO1", false);
}

/* Y is linear in W and b: d<Y, dY>/dW by central differences in float64 sums, every weight. */
static void test_sparse_linear_fd(void **state) {
    (void)state;
    for (int v1 = 0; v1 < 2; v1++) {
        const char *p = v1 ? "sl1odd" : "sl2odd";
        lithe_model *m = sparse_model(p, v1);
        lithe_value *X = sparse_input(p), *Y = NULL, *dX = NULL, *dY = value_of(get("%s_dY", p));
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        OK(lithe_backprop_run(bp, dY, &dX));
        const char *names[2] = {"W", "b"};
        for (int q = 0; q < 2; q++) {
            lithe_tensor *P = NULL, *G = NULL;
            OK(lithe_model_get_param(m, names[q], &P));
            OK(lithe_model_get_grad(m, names[q], &G));
            float *w = read_f32(P), *g = read_f32(G), *dy = read_f32(lithe_value_get_tensor(dY));
            int64_t n = lithe_tensor_numel(P), ny = lithe_tensor_numel(lithe_value_get_tensor(dY));
            for (int64_t k = 0; k < n; k++) {
                const float h = 1e-2f, orig = w[k];
                double f[2];
                for (int side = 0; side < 2; side++) {
                    w[k] = orig + (side ? -h : h);
                    OK(lithe_tensor_write(P, w, sizeof(float) * (size_t)n));
                    lithe_value *Yp = NULL;
                    OK(lithe_model_predict(m, X, &Yp));
                    float *y = read_f32(lithe_value_get_tensor(Yp));
                    f[side] = 0;
                    for (int64_t j = 0; j < ny; j++) f[side] += (double)y[j] * dy[j];
                    free(y);
                    lithe_value_release(Yp);
                }
                w[k] = orig;
                OK(lithe_tensor_write(P, w, sizeof(float) * (size_t)n));
                double fd = (f[0] - f[1]) / (2.0 * h);
                if (fabs(fd - g[k]) > 1e-3 + 1e-3 * fabs(fd)) {
                    print_error("%s d%s[%lld]: finite difference %g, backprop %g\n", p, names[q], (long long)k, fd,
                                (double)g[k]);
                    fail();
                }
            }
            free(w);
            free(g);
            free(dy);
        }
        lithe_value_release(X);
        lithe_value_release(Y);
        lithe_value_release(dX);
        lithe_value_release(dY);
        lithe_backprop_free(bp);
        lithe_model_free(m);
    }
}

static lithe_value *tuple3(lithe_tensor *k, lithe_tensor *v, lithe_tensor *l) {
    lithe_value *items[3] = {wrap(k), wrap(v), wrap(l)}, *X = NULL;
    OK(lithe_value_tuple(3, items, &X));
    for (int i = 0; i < 3; i++) lithe_value_release(items[i]);
    return X;
}

/* Each row alone scores as in the batch; an empty batch gives (0, nO) and zero grads. */
static void test_sparse_linear_edges(void **state) {
    (void)state;
    const char *p = "sl2";
    lithe_model *m = sparse_model(p, false);
    lithe_value *X = sparse_input(p), *Y = NULL;
    OK(lithe_model_predict(m, X, &Y));
    float *y = read_f32(lithe_value_get_tensor(Y));
    const golden *keys = get("%s_keys", p), *vals = get("%s_values", p), *lens = get("%s_lengths", p);
    int64_t nO = get("%s_b", p)->n, at = 0;
    for (int64_t r = 0; r < lens->n; r++) {
        int64_t L = (int64_t)lens->v[r];
        lithe_tensor *k = NULL, *v = NULL, *l = NULL;
        float fv[16];
        for (int64_t i = 0; i < L; i++) fv[i] = (float)vals->v[at + i];
        int32_t li = (int32_t)L;
        OK(lithe_tensor_from_data(LITHE_U64, 1, &L, keys->u + at, &k));
        OK(lithe_tensor_from_data(LITHE_F32, 1, &L, fv, &v));
        OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){1}, &li, &l));
        lithe_value *X1 = tuple3(k, v, l), *Y1 = NULL;
        OK(lithe_model_predict(m, X1, &Y1));
        float *y1 = read_f32(lithe_value_get_tensor(Y1));
        assert_memory_equal(y1, y + r * nO, sizeof(float) * (size_t)nO); /* bit for bit */
        free(y1);
        lithe_value_release(X1);
        lithe_value_release(Y1);
        at += L;
    }
    free(y);
    /* no rows at all */
    lithe_tensor *k = NULL, *v = NULL, *l = NULL;
    OK(lithe_tensor_new(NULL, LITHE_U64, 1, (int64_t[]){0}, &k));
    OK(lithe_tensor_new(NULL, LITHE_F32, 1, (int64_t[]){0}, &v));
    OK(lithe_tensor_new(NULL, LITHE_I32, 1, (int64_t[]){0}, &l));
    lithe_value *X0 = tuple3(k, v, l), *Y0 = NULL, *dX0 = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X0, &Y0, &bp));
    assert_int_equal(lithe_tensor_shape(lithe_value_get_tensor(Y0))[0], 0);
    assert_int_equal(lithe_tensor_shape(lithe_value_get_tensor(Y0))[1], nO);
    OK(lithe_backprop_run(bp, Y0, &dX0));
    lithe_tensor *g = NULL;
    OK(lithe_model_get_grad(m, "b", &g));
    float *gb = read_f32(g);
    for (int64_t i = 0; i < nO; i++) assert_true(gb[i] == 0.0f);
    free(gb);
    lithe_backprop_free(bp);
    lithe_value_release(X0);
    lithe_value_release(Y0);
    lithe_value_release(dX0);

    /* wrong input: a plain array, int32 keys, lengths not summing to the keys, float64 values */
    lithe_value *bad = NULL;
    expect_error(lithe_model_predict(m, lithe_value_item(X, 1), &bad), LITHE_ERR_INVALID_ARG, "sparse_linear");
    OK(lithe_tensor_new(NULL, LITHE_I32, 1, (int64_t[]){9}, &k));
    lithe_value *Xi = tuple3(k, lithe_tensor_retain(lithe_value_get_tensor(lithe_value_item(X, 1))),
                             lithe_tensor_retain(lithe_value_get_tensor(lithe_value_item(X, 2))));
    expect_error(lithe_model_predict(m, Xi, &bad), LITHE_ERR_DTYPE, "keys must be uint64");
    lithe_value_release(Xi);
    int32_t wrong[4] = {3, 0, 2, 5};
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){4}, wrong, &l));
    Xi = tuple3(lithe_tensor_retain(lithe_value_get_tensor(lithe_value_item(X, 0))),
                lithe_tensor_retain(lithe_value_get_tensor(lithe_value_item(X, 1))), l);
    expect_error(lithe_model_predict(m, Xi, &bad), LITHE_ERR_SHAPE, "lengths sum to 10");
    lithe_value_release(Xi);
    assert_null(bad);
    expect_error(lithe_sparse_linear(&(lithe_sparse_linear_opts){.nO = 2, .length = -3}, &(lithe_model *){NULL}),
                 LITHE_ERR_VALUE, "length");
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_model_free(m);
}

/* ---- strings2arrays ------------------------------------------------------------------------ */

/* A LIST of STRINGS values from UTF-8 bytes, offsets and per-document counts. */
static lithe_value *strings_docs(const golden *bytes, const golden *offs, const golden *doclens) {
    size_t nd = doclens ? (size_t)doclens->n : 1, at = 0;
    lithe_value **docs = calloc(nd + 1, sizeof *docs);
    char *buf = malloc((size_t)bytes->n + (size_t)offs->n + 1);
    char **ptrs = calloc((size_t)offs->n + 1, sizeof *ptrs);
    char *w = buf;
    for (int64_t i = 0; i + 1 < offs->n; i++) {
        ptrs[i] = w;
        for (uint64_t b = offs->u[i]; b < offs->u[i + 1]; b++) *w++ = (char)bytes->u[b];
        *w++ = 0;
    }
    for (size_t d = 0; d < nd; d++) {
        size_t n = doclens ? (size_t)doclens->u[d] : (size_t)offs->n - 1;
        OK(lithe_value_strings(n, (const char *const *)ptrs + at, &docs[d]));
        assert_int_equal(lithe_value_len(docs[d]), n);
        at += n;
    }
    lithe_value *out = NULL;
    if (doclens) {
        OK(lithe_value_list(nd, docs, &out));
        for (size_t d = 0; d < nd; d++) lithe_value_release(docs[d]);
    } else {
        out = docs[0];
    }
    free(docs);
    free(buf);
    free(ptrs);
    return out;
}

static void test_strings2arrays(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_strings2arrays(&m));
    lithe_value *X = strings_docs(get("s2a_bytes"), get("s2a_offsets"), get("s2a_doclens")), *Y = NULL, *dX = NULL;
    /* the strings value reads back what it was given */
    size_t len = 0;
    const char *s0 = lithe_value_string(lithe_value_item(X, 0), 3, &len);
    assert_string_equal(s0, "h\xc3\xa9llo");
    assert_int_equal(len, 6);
    assert_null(lithe_value_string(lithe_value_item(X, 0), 99, NULL));
    assert_null(lithe_value_get_tensor(lithe_value_item(X, 0)));
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    assert_int_equal(lithe_value_kind_of(Y), LITHE_VALUE_LIST);
    const golden *h = get("s2a_hashes"), *dl = get("s2a_doclens");
    assert_int_equal(lithe_value_len(Y), (size_t)dl->n);
    int64_t at = 0;
    for (size_t d = 0; d < lithe_value_len(Y); d++) {
        const lithe_tensor *t = lithe_value_get_tensor(lithe_value_item(Y, d));
        assert_int_equal(lithe_tensor_dtype(t), LITHE_U64);
        assert_int_equal(lithe_tensor_shape(t)[0], (int64_t)dl->u[d]);
        assert_int_equal(lithe_tensor_shape(t)[1], 1);
        uint64_t *v = malloc(8 * (size_t)(dl->u[d] + 1));
        OK(lithe_tensor_read(t, v, 8 * (size_t)dl->u[d]));
        for (uint64_t i = 0; i < dl->u[d]; i++) assert_int_equal(v[i], h->u[at + (int64_t)i]);
        at += (int64_t)dl->u[d];
        free(v);
    }
    OK(lithe_backprop_run(bp, Y, &dX));
    assert_int_equal(lithe_value_kind_of(dX), LITHE_VALUE_LIST);
    assert_int_equal(lithe_value_len(dX), 0);
    /* an empty batch, and wrong input */
    lithe_value *E = NULL, *YE = NULL, *bad = NULL;
    OK(lithe_value_list(0, NULL, &E));
    OK(lithe_model_predict(m, E, &YE));
    assert_int_equal(lithe_value_len(YE), 0);
    expect_error(lithe_model_predict(m, lithe_value_item(X, 0), &bad), LITHE_ERR_INVALID_ARG, "strings2arrays");
    lithe_value *Xs = NULL, *one = wrap(tensor_of(get("s2a_doclens")));
    OK(lithe_value_list(1, &one, &Xs));
    expect_error(lithe_model_predict(m, Xs, &bad), LITHE_ERR_INVALID_ARG, "not a strings value");
    expect_error(lithe_value_strings(2, (const char *const[]){"a", NULL}, &bad), LITHE_ERR_INVALID_ARG, "NULL");
    lithe_value_release(Xs);
    lithe_value_release(one);
    lithe_value_release(E);
    lithe_value_release(YE);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(dX);
    lithe_backprop_free(bp);
    lithe_model_free(m);
}

/* ---- remap_ids ----------------------------------------------------------------------------- */

static char **split(const golden *bytes, const golden *offs, char **buf) {
    *buf = malloc((size_t)bytes->n + (size_t)offs->n + 1);
    char **ptrs = calloc((size_t)offs->n + 1, sizeof *ptrs), *w = *buf;
    for (int64_t i = 0; i + 1 < offs->n; i++) {
        ptrs[i] = w;
        for (uint64_t b = offs->u[i]; b < offs->u[i + 1]; b++) *w++ = (char)bytes->u[b];
        *w++ = 0;
    }
    return ptrs;
}

static void test_remap_ids(void **state) {
    (void)state;
    /* v1: strings through a str-keyed table, default 5 */
    char *kbuf = NULL;
    const golden *toffs = get("r1_toffsets"), *tv = get("r1_tvalues");
    char **tkeys = split(get("r1_tbytes"), toffs, &kbuf);
    size_t n = (size_t)toffs->n - 1;
    int64_t *vals = malloc(8 * (n + 1));
    for (size_t i = 0; i < n; i++) vals[i] = (int64_t)tv->u[i];
    lithe_model *m1 = NULL, *fresh = NULL;
    OK(lithe_remap_ids(&(lithe_remap_ids_opts){.version = 1, .n = n, .str_keys = (const char *const *)tkeys,
                                              .values = vals, .default_value = 5},
                       &m1));
    lithe_value *X = strings_docs(get("r1_bytes_in"), get("r1_offsets"), NULL), *Y = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m1, X, &Y, &bp));
    assert_int_equal(lithe_tensor_dtype(lithe_value_get_tensor(Y)), LITHE_I32);
    expect_i64("remap_ids.v1", lithe_value_get_tensor(Y), get("r1_Y"));
    OK(lithe_backprop_run(bp, Y, &dX));
    assert_int_equal(lithe_value_len(dX), 0);
    /* Thinc's bytes load into a model built with another (empty) table, which then maps the same */
    OK(lithe_remap_ids(&(lithe_remap_ids_opts){.version = 1}, &fresh));
    expect_bytes(m1, fresh, "r1_model_bytes");
    lithe_value *Y2 = NULL;
    OK(lithe_model_predict(fresh, X, &Y2));
    expect_i64("remap_ids.v1 from Thinc's bytes", lithe_value_get_tensor(Y2), get("r1_Y"));
    lithe_value_release(Y2);
    lithe_model_free(fresh);
    lithe_model *e1 = NULL;
    OK(lithe_remap_ids(&(lithe_remap_ids_opts){.version = 1}, &e1));
    expect_bytes(e1, NULL, "r1empty_model_bytes");
    lithe_model_free(e1);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(dX);
    lithe_backprop_free(bp);
    free(kbuf);
    free(tkeys);
    free(vals);

    /* v2: int64 ids, column 1, default -1 */
    const golden *k2 = get("r2_tkeys"), *v2 = get("r2_tvalues");
    int64_t ik[8], iv[8];
    for (int64_t i = 0; i < k2->n; i++) {
        ik[i] = (int64_t)k2->u[i];
        iv[i] = (int64_t)v2->u[i];
    }
    lithe_model *m2 = NULL;
    OK(lithe_remap_ids(&(lithe_remap_ids_opts){.version = 2, .n = (size_t)k2->n, .int_keys = ik, .values = iv,
                                              .default_value = -1, .has_column = true, .column = 1},
                       &m2));
    X = wrap(u64_of(get("r2_X"), LITHE_I64));
    OK(lithe_model_begin_update(m2, X, &Y, &bp));
    expect_i64("remap_ids.v2", lithe_value_get_tensor(Y), get("r2_Y"));
    OK(lithe_backprop_run(bp, Y, &dX)); /* zeros shaped like dY for array input */
    assert_int_equal(lithe_tensor_dtype(lithe_value_get_tensor(dX)), LITHE_F32);
    assert_int_equal(lithe_tensor_numel(lithe_value_get_tensor(dX)), get("r2_Y")->n);
    OK(lithe_remap_ids(&(lithe_remap_ids_opts){.version = 2, .no_table = true, .has_column = true, .column = 1},
                       &fresh));
    lithe_value *bad = NULL;
    expect_error(lithe_model_predict(fresh, X, &bad), LITHE_ERR_VALUE, "'mapping table' not set");
    OK(lithe_model_set_attr_int(fresh, "default", -1));
    expect_bytes(m2, fresh, "r2_model_bytes");
    OK(lithe_model_predict(fresh, X, &Y2));
    expect_i64("remap_ids.v2 from Thinc's bytes", lithe_value_get_tensor(Y2), get("r2_Y"));
    lithe_value_release(Y2);
    lithe_model_free(fresh);
    OK(lithe_remap_ids(&(lithe_remap_ids_opts){.no_table = true}, &fresh));
    expect_bytes(fresh, NULL, "r2none_model_bytes");
    lithe_model_free(fresh);
    /* wrong input: float ids, a column outside, 2-d ids without column (v1) */
    lithe_value *Xf = wrap(tensor_of(get("r2_Y")));
    lithe_tensor *f32 = NULL;
    OK(lithe_tensor_cast(lithe_value_get_tensor(Xf), LITHE_F32, &f32));
    lithe_value *Xff = wrap(f32);
    expect_error(lithe_model_predict(m2, Xff, &bad), LITHE_ERR_DTYPE, "remap_ids");
    lithe_value_release(Xf);
    lithe_value_release(Xff);
    OK(lithe_model_set_attr_int(m2, "column", 7));
    expect_error(lithe_model_predict(m2, X, &bad), LITHE_ERR_SHAPE, "column 7");
    assert_null(bad);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(dX);
    lithe_backprop_free(bp);
    lithe_model_free(m1);
    lithe_model_free(m2);
}

/* ---- uniqued ------------------------------------------------------------------------------- */

static lithe_model *uniqued_hashembed(bool wrap_it) {
    lithe_model *he = NULL, *u = NULL;
    OK(lithe_hash_embed(&(lithe_embed_opts){.nO = 4, .nV = 13, .has_seed = true, .seed = 11, .has_column = true,
                                            .column = 0},
                        &he));
    if (!wrap_it) return he;
    OK(lithe_uniqued(he, 0, &u));
    return u;
}

static void test_uniqued(void **state) {
    (void)state;
    lithe_model *u = uniqued_hashembed(true);
    lithe_value *X = wrap(u64_of(get("u_X"), LITHE_U64)), *Y = NULL, *dX = NULL;
    OK(lithe_model_initialize(u, X, NULL));
    lithe_model *emb = lithe_model_layer(lithe_model_layer(u, 0), 1);
    lithe_tensor *E = tensor_of(get("u_E"));
    OK(lithe_model_set_param(emb, "E", E));
    lithe_tensor_release(E);
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(u, X, &Y, &bp));
    expect_close("uniqued Y", lithe_value_get_tensor(Y), get("u_Y"), 1e-6, 1e-6);
    lithe_value *dY = value_of(get("u_dY"));
    OK(lithe_backprop_run(bp, dY, &dX));
    lithe_tensor *g = NULL;
    OK(lithe_model_get_grad(emb, "E", &g));
    expect_close("uniqued dE", g, get("u_dE"), 1e-6, 1e-6);
    expect_close("uniqued dX", lithe_value_get_tensor(dX), get("u_dX"), 0, 0);
    /* the same as the layer without uniqued, bit for bit */
    lithe_model *plain = uniqued_hashembed(false);
    OK(lithe_model_initialize(plain, X, NULL));
    E = tensor_of(get("u_E"));
    OK(lithe_model_set_param(lithe_model_layer(plain, 1), "E", E));
    lithe_tensor_release(E);
    lithe_value *Yp = NULL;
    OK(lithe_model_predict(plain, X, &Yp));
    float *a = read_f32(lithe_value_get_tensor(Y)), *b = read_f32(lithe_value_get_tensor(Yp));
    assert_memory_equal(a, b, sizeof(float) * (size_t)lithe_tensor_numel(lithe_value_get_tensor(Y)));
    free(a);
    free(b);
    /* one row goes straight to the layer */
    lithe_tensor *one = NULL;
    OK(lithe_tensor_slice(lithe_value_get_tensor(X), 0, 0, 1, &one));
    lithe_value *X1 = wrap(one), *Y1 = NULL; /* rows of a contiguous array: contiguous */
    OK(lithe_model_predict(u, X1, &Y1));
    expect_close("uniqued one row", lithe_value_get_tensor(Y1), get("u_Y1"), 1e-6, 1e-6);
    /* Thinc's bytes */
    lithe_model *fresh = uniqued_hashembed(true);
    OK(lithe_model_initialize(fresh, X, NULL));
    expect_bytes(u, fresh, "u_model_bytes");
    lithe_model_free(fresh);
    /* wrong input */
    lithe_value *bad = NULL;
    expect_error(lithe_model_predict(u, dY, &bad), LITHE_ERR_DTYPE, "uniqued");
    OK(lithe_model_set_attr_int(u, "column", 5));
    expect_error(lithe_model_predict(u, X, &bad), LITHE_ERR_SHAPE, "column 5");
    assert_null(bad);
    lithe_value_release(X1);
    lithe_value_release(Y1);
    lithe_value_release(Yp);
    lithe_model_free(plain);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(dY);
    lithe_value_release(dX);
    lithe_backprop_free(bp);
    lithe_model_free(u);
}

/* ---- StaticVectors (no Thinc oracle: float64 reference) ------------------------------------ */

static void test_static_vectors(void **state) {
    (void)state;
    enum { nV = 6, nM = 3, nO = 2 };
    float V[nV * nM], W[nO * nM];
    for (int i = 0; i < nV * nM; i++) V[i] = (float)sin(0.7 * i + 0.1);
    for (int i = 0; i < nO * nM; i++) W[i] = (float)cos(1.3 * i - 0.2);
    lithe_tensor *tV = NULL, *tW = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){nV, nM}, V, &tV));
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){nO, nM}, W, &tW));
    lithe_model *m = NULL;
    OK(lithe_static_vectors(&(lithe_static_vectors_opts){.nO = nO, .vectors = tV}, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    OK(lithe_model_set_param(m, "W", tW));
    assert_true(lithe_model_is_frozen(m, "V"));
    /* three documents: ids with a word without a vector (-1) and an empty document */
    int32_t d0[] = {0, 2, -1}, d2[] = {5, 5, 1};
    const int32_t *docs[3] = {d0, NULL, d2};
    int64_t lens[3] = {3, 0, 3};
    lithe_value *items[3];
    for (int d = 0; d < 3; d++) {
        lithe_tensor *t = NULL;
        OK(lithe_tensor_from_data(LITHE_I32, 1, &lens[d], docs[d] ? (const void *)docs[d] : (const void *)d0, &t));
        items[d] = wrap(t);
    }
    lithe_value *X = NULL, *Y = NULL, *dX = NULL;
    OK(lithe_value_list(3, items, &X));
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    assert_int_equal(lithe_value_kind_of(Y), LITHE_VALUE_RAGGED);
    const int32_t ids[6] = {0, 2, -1, 5, 5, 1};
    float *y = read_f32(lithe_value_field(Y, "data"));
    for (int i = 0; i < 6; i++)
        for (int o = 0; o < nO; o++) {
            double ref = 0;
            for (int k = 0; k < nM && ids[i] >= 0; k++) ref += (double)V[ids[i] * nM + k] * W[o * nM + k];
            assert_true(fabs(ref - y[i * nO + o]) <= 1e-6);
        }
    int32_t l[3];
    OK(lithe_tensor_read(lithe_value_field(Y, "lengths"), l, sizeof l));
    assert_int_equal(l[0], 3);
    assert_int_equal(l[1], 0);
    assert_int_equal(l[2], 3);
    /* dW = dYᵀ · V[ids] in float64; dY = the Ragged itself */
    OK(lithe_backprop_run(bp, Y, &dX));
    assert_int_equal(lithe_value_len(dX), 0);
    lithe_tensor *g = NULL;
    OK(lithe_model_get_grad(m, "W", &g));
    float *gw = read_f32(g);
    for (int o = 0; o < nO; o++)
        for (int k = 0; k < nM; k++) {
            double ref = 0;
            for (int i = 0; i < 6; i++)
                if (ids[i] >= 0) ref += (double)y[i * nO + o] * V[ids[i] * nM + k];
            assert_true(fabs(ref - gw[o * nM + k]) <= 1e-5);
        }
    /* a Ragged of the same ids gives the same bits */
    lithe_tensor *flat = NULL, *lt = NULL;
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){6}, ids, &flat));
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){3}, (int32_t[]){3, 0, 3}, &lt));
    lithe_value *R = NULL, *YR = NULL;
    OK(lithe_value_ragged(flat, lt, &R));
    OK(lithe_model_predict(m, R, &YR));
    float *yr = read_f32(lithe_value_field(YR, "data"));
    assert_memory_equal(yr, y, sizeof(float) * 6 * nO);
    free(yr);
    /* training changes W only: V is frozen */
    lithe_optimizer *opt = NULL;
    lithe_optimizer_opts oo = lithe_sgd_defaults(0.5);
    OK(lithe_optimizer_new(&oo, &opt));
    OK(lithe_model_finish_update(m, opt));
    lithe_tensor *pV = NULL, *pW = NULL;
    OK(lithe_model_get_param(m, "V", &pV));
    OK(lithe_model_get_param(m, "W", &pW));
    float *v2 = read_f32(pV), *w2 = read_f32(pW);
    assert_memory_equal(v2, V, sizeof V);
    assert_true(memcmp(w2, W, sizeof W) != 0);
    /* .lithe round trip: V, W and the frozen flag come back */
    uint8_t *file = NULL;
    size_t nf = 0;
    lithe_model *back = NULL;
    OK(lithe_model_save_bytes(m, NULL, &file, &nf));
    OK(lithe_model_load_bytes(file, nf, &back));
    assert_true(lithe_model_is_frozen(back, "V"));
    lithe_value *Yb = NULL, *Ym = NULL;
    OK(lithe_model_predict(back, R, &Yb));
    OK(lithe_model_predict(m, R, &Ym));
    float *yb = read_f32(lithe_value_field(Yb, "data")), *ym = read_f32(lithe_value_field(Ym, "data"));
    assert_memory_equal(yb, ym, sizeof(float) * 6 * nO);
    /* errors: an id past the table, float ids */
    lithe_value *bad = NULL;
    int32_t big[1] = {nV};
    lithe_tensor *tb = NULL;
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){1}, big, &tb));
    lithe_value *Xb = wrap(tb), *Lb = NULL;
    OK(lithe_value_list(1, &Xb, &Lb));
    expect_error(lithe_model_predict(m, Lb, &bad), LITHE_ERR_VALUE, "static_vectors");
    expect_error(lithe_model_predict(m, Xb, &bad), LITHE_ERR_INVALID_ARG, "static_vectors");
    assert_null(bad);
    free(yb);
    free(ym);
    free(v2);
    free(w2);
    free(gw);
    free(y);
    lithe_value_release(Xb);
    lithe_value_release(Lb);
    lithe_value_release(Yb);
    lithe_value_release(Ym);
    lithe_buffer_free(file);
    lithe_model_free(back);
    lithe_optimizer_free(opt);
    lithe_value_release(R);
    lithe_value_release(YR);
    lithe_tensor_release(flat);
    lithe_tensor_release(lt);
    for (int d = 0; d < 3; d++) lithe_value_release(items[d]);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(dX);
    lithe_backprop_free(bp);
    lithe_tensor_release(tV);
    lithe_tensor_release(tW);
    lithe_model_free(m);
}

/* ---- allocation failures: every allocation of each layer's life fails in turn ---------------- */


#define T(expr)                                                                                    \
    do {                                                                                           \
        if (s == LITHE_OK) s = (expr);                                                             \
    } while (0)

/* Builds, runs forward and backward, and round-trips through both file formats one small model
 * of each layer, freeing everything; returns the first failure. */
static lithe_status oom_scenario(int which) {
    lithe_status s = LITHE_OK;
    lithe_model *m = NULL, *he = NULL, *back = NULL;
    lithe_tensor *t[4] = {0};
    lithe_value *items[3] = {0}, *X = NULL, *Y = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    uint8_t *bytes = NULL, *file = NULL;
    size_t nb = 0, nf = 0;
    static const uint64_t keys[5] = {1, 99, 1ull << 40, 7, 99};
    static const float vals[5] = {0.5f, -1.0f, 2.0f, 0.25f, 1.5f};
    static const int32_t lens[2] = {3, 2}, ids[5] = {0, 2, -1, 1, 2};
    static const float V[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    static const char *const words[3] = {"cat", "d\xc3\xb6g", ""};
    switch (which) {
    case 0: /* SparseLinear.v1 */
        T(lithe_sparse_linear(&(lithe_sparse_linear_opts){.nO = 3, .length = 16, .v1 = true}, &m));
        T(lithe_model_initialize(m, NULL, NULL));
        T(lithe_tensor_from_data(LITHE_U64, 1, (int64_t[]){5}, keys, &t[0]));
        T(lithe_tensor_from_data(LITHE_F32, 1, (int64_t[]){5}, vals, &t[1]));
        T(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){2}, lens, &t[2]));
        for (int i = 0; i < 3; i++) T(lithe_value_tensor(t[i], &items[i]));
        T(lithe_value_tuple(3, items, &X));
        break;
    case 1: /* strings2arrays */
        T(lithe_strings2arrays(&m));
        T(lithe_value_strings(3, words, &items[0]));
        T(lithe_value_list(1, items, &X));
        break;
    case 2: /* remap_ids.v1 over strings */
        T(lithe_remap_ids(&(lithe_remap_ids_opts){.version = 1, .n = 2, .str_keys = words,
                                                  .values = (const int64_t[]){4, 5}},
                          &m));
        T(lithe_value_strings(3, words, &X));
        break;
    case 3: /* uniqued(HashEmbed(column=0)) */
        T(lithe_hash_embed(&(lithe_embed_opts){.nO = 3, .nV = 7, .has_seed = true, .seed = 1, .has_column = true},
                           &he));
        if (s == LITHE_OK) {
            s = lithe_uniqued(he, 0, &m);
            he = NULL;
        }
        T(lithe_tensor_from_data(LITHE_U64, 2, (int64_t[]){5, 1}, keys, &t[0]));
        T(lithe_value_tensor(t[0], &X));
        T(lithe_model_initialize(m, X, NULL));
        break;
    case 4: /* StaticVectors */
        T(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){3, 3}, V, &t[3]));
        T(lithe_static_vectors(&(lithe_static_vectors_opts){.nO = 2, .vectors = t[3]}, &m));
        T(lithe_model_initialize(m, NULL, NULL));
        T(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){5}, ids, &t[0]));
        T(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){2}, lens, &t[1]));
        T(lithe_value_ragged(t[0], t[1], &X));
        break;
    }
    T(lithe_model_begin_update(m, X, &Y, &bp));
    T(lithe_backprop_run(bp, Y, &dX));
    T(lithe_model_to_thinc_bytes(m, &bytes, &nb));
    T(lithe_model_save_bytes(m, NULL, &file, &nf));
    T(lithe_model_load_bytes(file, nf, &back));
    T(lithe_model_from_thinc_bytes(back, bytes, nb));
    lithe_buffer_free(bytes);
    lithe_buffer_free(file);
    lithe_model_free(back);
    lithe_backprop_free(bp);
    lithe_value_release(dX);
    lithe_value_release(Y);
    lithe_value_release(X);
    for (int i = 0; i < 3; i++) lithe_value_release(items[i]);
    for (int i = 0; i < 4; i++) lithe_tensor_release(t[i]);
    lithe_model_free(he);
    lithe_model_free(m);
    return s;
}

static void test_allocation_failures(void **state) {
    (void)state;
    failing_alloc_sweep(5, oom_scenario);
}

/* StaticVectors' dropout: one mask over the nO columns, the same for every row, applied to Y in
 * training (not at predict) and to dY in the backprop; remap_ids.v1 over int ids with dtype int64. */
static void test_dropout_and_int_remap(void **state) {
    (void)state;
    enum { nV = 4, nM = 3, nO = 64 };
    float V[nV * nM];
    for (int i = 0; i < nV * nM; i++) V[i] = 1.0f + (float)i;
    lithe_tensor *tV = NULL, *ids = NULL, *lens = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){nV, nM}, V, &tV));
    lithe_model *m = NULL;
    OK(lithe_static_vectors(&(lithe_static_vectors_opts){.nO = nO, .vectors = tV, .dropout = 0.5f}, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){3}, (int32_t[]){0, 3, 1}, &ids));
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){1}, (int32_t[]){3}, &lens));
    lithe_value *X = NULL, *Yt = NULL, *Yp = NULL, *dX = NULL;
    OK(lithe_value_ragged(ids, lens, &X));
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Yt, &bp));
    OK(lithe_model_predict(m, X, &Yp));
    float *yt = read_f32(lithe_value_field(Yt, "data")), *yp = read_f32(lithe_value_field(Yp, "data"));
    int dropped = 0;
    for (int o = 0; o < nO; o++) {
        bool off = yt[o] == 0.0f && yp[o] != 0.0f;
        dropped += off;
        for (int r = 0; r < 3; r++) {
            float want = off ? 0.0f : yp[r * nO + o] * 2.0f; /* kept columns scaled by 1 / (1 - rate) */
            assert_true(fabsf(yt[r * nO + o] - want) <= 1e-5f * (1.0f + fabsf(want)));
        }
    }
    assert_true(dropped > 8 && dropped < 56);
    /* dY = ones: dropped columns get no gradient */
    lithe_tensor *ones = NULL;
    float one[3 * nO];
    for (int i = 0; i < 3 * nO; i++) one[i] = 1.0f;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){3, nO}, one, &ones));
    lithe_value *dY = wrap(ones);
    OK(lithe_backprop_run(bp, dY, &dX));
    lithe_tensor *g = NULL;
    OK(lithe_model_get_grad(m, "W", &g));
    float *gw = read_f32(g);
    for (int o = 0; o < nO; o++) {
        bool off = yt[o] == 0.0f && yp[o] != 0.0f;
        for (int k = 0; k < nM; k++) {
            float want = off ? 0.0f : 2.0f * (V[0 * nM + k] + V[3 * nM + k] + V[1 * nM + k]);
            assert_true(fabsf(gw[o * nM + k] - want) <= 1e-4f);
        }
    }
    free(gw);
    free(yt);
    free(yp);
    lithe_value_release(dY);
    lithe_value_release(dX);
    lithe_value_release(X);
    lithe_value_release(Yt);
    lithe_value_release(Yp);
    lithe_backprop_free(bp);
    lithe_tensor_release(ids);
    lithe_tensor_release(lens);
    lithe_tensor_release(tV);
    lithe_model_free(m);

    /* remap_ids.v1 over 1-d uint64 ids (a key above INT64_MAX too), output int64 */
    lithe_model *r = NULL;
    OK(lithe_remap_ids(&(lithe_remap_ids_opts){.version = 1, .n = 3, .int_keys = (const int64_t[]){5, -1, 9},
                                               .values = (const int64_t[]){50, 10, 90}, .default_value = 7,
                                               .dtype = LITHE_I64},
                       &r));
    lithe_tensor *k = NULL;
    OK(lithe_tensor_from_data(LITHE_U64, 1, (int64_t[]){4}, (uint64_t[]){9, UINT64_MAX, 5, 6}, &k));
    lithe_value *K = wrap(k), *R = NULL;
    OK(lithe_model_predict(r, K, &R));
    assert_int_equal(lithe_tensor_dtype(lithe_value_get_tensor(R)), LITHE_I64);
    int64_t got[4];
    OK(lithe_tensor_read(lithe_value_get_tensor(R), got, sizeof got));
    /* uint64 max is not the int key -1 (Python compares values, not bits) */
    assert_int_equal(got[0], 90);
    assert_int_equal(got[1], 7);
    assert_int_equal(got[2], 50);
    assert_int_equal(got[3], 7);
    const char *d = NULL;
    OK(lithe_model_get_attr_str(r, "dtype", &d));
    assert_string_equal(d, "int64");
    lithe_value_release(K);
    lithe_value_release(R);
    lithe_model_free(r);
}

/* Every layer of this family is registered under its Thinc (or spaCy) name. */
static void test_registered(void **state) {
    (void)state;
    size_t n = 0;
    const char *const *names = lithe_layer_names(&n);
    const char *want[] = {"SparseLinear.v1", "SparseLinear.v2", "StaticVectors.v2", "remap_ids.v1",
                          "remap_ids.v2",    "strings2arrays.v1", "uniqued.v1"};
    for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
        bool found = false;
        for (size_t i = 0; i < n; i++) found |= !strcmp(names[i], want[w]);
        if (!found) {
            print_error("%s is not registered\n", want[w]);
            fail();
        }
    }
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_murmur),          cmocka_unit_test(test_sparse_linear_goldens),
        cmocka_unit_test(test_sparse_linear_fd), cmocka_unit_test(test_sparse_linear_edges),
        cmocka_unit_test(test_strings2arrays),  cmocka_unit_test(test_remap_ids),
        cmocka_unit_test(test_uniqued),         cmocka_unit_test(test_static_vectors),
        cmocka_unit_test(test_dropout_and_int_remap), cmocka_unit_test(test_registered),
        cmocka_unit_test(test_allocation_failures),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
