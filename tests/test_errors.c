/* Error tests: bad arguments for every public function of lithe.h. Every failing call must
 * return the documented status, set a non-empty lithe_last_error(), and leave its out-pointers
 * NULL (plain scalars untouched); every _free / _release accepts NULL. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check.h"

#include "lithe.h"
#include "lithe_dlpack.h"

#include <dlpack/dlpack.h>

/* The call must fail with `want` and leave a message. */
#define FAILS(want, expr)                                                                          \
    do {                                                                                           \
        lithe_clear_error();                                                                       \
        lithe_status st_ = (expr);                                                                 \
        if (st_ != (want)) {                                                                       \
            print_error("%s: expected %s, got %s (\"%s\")\n", #expr, lithe_status_str(want),      \
                        lithe_status_str(st_), lithe_last_error());                                \
            fail();                                                                                \
        }                                                                                          \
        if (lithe_last_error()[0] == '\0') {                                                       \
            print_error("%s: failed with %s but left lithe_last_error() empty\n", #expr,          \
                        lithe_status_str(st_));                                                    \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

/* The call must fail (any status but OK) and leave a message; for cases whose status the
 * manual does not pin down. */
#define FAILS_ANY(expr)                                                                            \
    do {                                                                                           \
        lithe_clear_error();                                                                       \
        lithe_status st_ = (expr);                                                                 \
        if (st_ == LITHE_OK) {                                                                     \
            print_error("%s: expected a failure, got LITHE_OK\n", #expr);                          \
            fail();                                                                                \
        }                                                                                          \
        if (lithe_last_error()[0] == '\0') {                                                       \
            print_error("%s: failed with %s but left lithe_last_error() empty\n", #expr,          \
                        lithe_status_str(st_));                                                    \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

/* An out-pointer must come back NULL after a failure. A soft check: it reports and counts, the
 * test goes on (so one such bug does not hide the checks after it), and the per-test teardown
 * fails the test if any was counted. */
static int out_not_null;
#define OUT_NULL(p, call)                                                                          \
    do {                                                                                           \
        if ((p) != NULL) {                                                                         \
            print_error("%s:%d: %s failed but left its out-pointer %s set (%p), not NULL\n",      \
                        __FILE__, __LINE__, call, #p, (void *)(p));                                \
            out_not_null++;                                                                        \
            (p) = NULL;                                                                            \
        }                                                                                          \
    } while (0)
static int check_out_pointers(void **state) {
    (void)state;
    int n = out_not_null;
    out_not_null = 0;
    if (n) print_error("%d failing call(s) left an out-pointer set (see above)\n", n);
    return n ? -1 : 0;
}

#define MSG_HAS(needle)                                                                            \
    do {                                                                                           \
        if (!strstr(lithe_last_error(), needle)) {                                                 \
            print_error("last error \"%s\" does not mention \"%s\"\n", lithe_last_error(), needle); \
            fail();                                                                                \
        }                                                                                          \
    } while (0)

/* A non-NULL junk value for out-pointers, never dereferenced or released. */
static char junk_obj;
#define JUNK ((void *)&junk_obj)

static lithe_tensor *f32(int64_t r, int64_t c, float fill) {
    lithe_tensor *t = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){r, c}, &t));
    float *p = lithe_tensor_data(t);
    for (int64_t i = 0; i < r * c; i++) p[i] = fill;
    return t;
}
static lithe_tensor *i32v(int64_t n, const int32_t *d) {
    lithe_tensor *t = NULL;
    OK(lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){n}, d, &t));
    return t;
}
static lithe_value *val(lithe_tensor *t) {
    lithe_value *v = NULL;
    OK(lithe_value_tensor(t, &v));
    return v;
}
/* linear(nO=4, nI=4), initialized */
static lithe_model *linear44(void) {
    lithe_model *m = NULL;
    OK(lithe_linear(&(lithe_dense_opts){.nO = 4, .nI = 4}, &m));
    lithe_tensor *x = f32(2, 4, 0.5f);
    lithe_value *xv = val(x);
    OK(lithe_model_initialize(m, xv, NULL));
    lithe_value_release(xv);
    lithe_tensor_release(x);
    return m;
}

/* ---------------------------------------------------------------------------------------- */
/* errors, version, allocator                                                                */
/* ---------------------------------------------------------------------------------------- */

static void test_status_str(void **state) {
    (void)state;
    static const char *const names[] = {
        "LITHE_OK",          "LITHE_ERR_INVALID_ARG", "LITHE_ERR_SHAPE",       "LITHE_ERR_DTYPE",
        "LITHE_ERR_OOM",     "LITHE_ERR_NOT_FOUND",   "LITHE_ERR_STATE",       "LITHE_ERR_UNSUPPORTED",
        "LITHE_ERR_IO",      "LITHE_ERR_FORMAT",      "LITHE_ERR_VALUE",       "LITHE_ERR_INTERNAL",
    };
    for (int s = 0; s <= LITHE_ERR_INTERNAL; s++) assert_string_equal(lithe_status_str((lithe_status)s), names[s]);
    assert_string_equal(lithe_status_str((lithe_status)12), "LITHE_ERR_UNKNOWN");
    assert_string_equal(lithe_status_str((lithe_status)1000), "LITHE_ERR_UNKNOWN");
    assert_string_equal(lithe_status_str((lithe_status)-1), "LITHE_ERR_UNKNOWN");
}

static void test_last_error_and_version(void **state) {
    (void)state;
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", LITHE_VERSION_MAJOR, LITHE_VERSION_MINOR, LITHE_VERSION_PATCH);
    assert_string_equal(lithe_version(), want);
    lithe_clear_error();
    assert_non_null(lithe_last_error());
    assert_string_equal(lithe_last_error(), "");
    lithe_tensor *t = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_new(NULL, LITHE_F32, -1, NULL, &t));
    OUT_NULL(t, "lithe_tensor_new");
    lithe_clear_error();
    assert_string_equal(lithe_last_error(), "");
}

static void *a_malloc(void *u, size_t n) { (void)u; return malloc(n); }
static void *a_realloc(void *u, void *p, size_t n) { (void)u; return realloc(p, n); }
static void a_free(void *u, void *p) { (void)u; free(p); }

static void test_set_allocator_rejects(void **state) {
    (void)state;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_set_allocator(&(lithe_allocator){NULL, a_realloc, a_free, NULL}));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_set_allocator(&(lithe_allocator){a_malloc, NULL, a_free, NULL}));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_set_allocator(&(lithe_allocator){a_malloc, a_realloc, NULL, NULL}));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_set_allocator(&(lithe_allocator){0}));
    /* the rejected calls left the allocator working */
    lithe_tensor *t = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 1, (int64_t[]){16}, &t));
    lithe_tensor_release(t);
    OK(lithe_set_allocator(&(lithe_allocator){a_malloc, a_realloc, a_free, NULL}));
    OK(lithe_tensor_new(NULL, LITHE_F32, 1, (int64_t[]){16}, &t));
    lithe_tensor_release(t);
    OK(lithe_set_allocator(NULL));
}

/* ---------------------------------------------------------------------------------------- */
/* backends                                                                                  */
/* ---------------------------------------------------------------------------------------- */

static void test_backend_errors(void **state) {
    (void)state;
    lithe_backend *be = JUNK;
    /* unsupported whether or not Vulkan is built in: no device has this name */
    FAILS(LITHE_ERR_UNSUPPORTED, lithe_backend_get("vulkan:no-such-device", &be));
    OUT_NULL(be, "lithe_backend_get(vulkan:no-such-device)");
    MSG_HAS("vulkan");
    be = JUNK;
    FAILS(LITHE_ERR_UNSUPPORTED, lithe_backend_get("cuda", &be));
    OUT_NULL(be, "lithe_backend_get(cuda)");
    MSG_HAS("cuda");
    be = JUNK;
    FAILS(LITHE_ERR_NOT_FOUND, lithe_backend_get("nope", &be));
    OUT_NULL(be, "lithe_backend_get(nope)");
    MSG_HAS("nope");
    MSG_HAS("cpu"); /* lists the available ones */
    be = JUNK;
    FAILS(LITHE_ERR_NOT_FOUND, lithe_backend_get("", &be));
    OUT_NULL(be, "lithe_backend_get(\"\")");
    be = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_backend_get(NULL, &be));
    OUT_NULL(be, "lithe_backend_get(NULL)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_backend_get("cpu", NULL));
    OK(lithe_backend_get("cpu", &be));
    assert_string_equal(lithe_backend_name(be), "cpu");
    assert_non_null(lithe_backend_name(NULL));
    char buf[16];
    /* "cpu", then ",vulkan" and ",cuda" for the GPU backends compiled in */
    size_t full = lithe_backend_list(NULL, 0);
    const char *expect = full == 3 ? "cpu" : full == 8 ? "cpu,cuda" : full == 10 ? "cpu,vulkan" : "cpu,vulkan,cuda";
    assert_int_equal(full, strlen(expect));
    memset(buf, 'x', sizeof buf);
    assert_int_equal(lithe_backend_list(buf, 0), full);
    assert_int_equal(buf[0], 'x');
    assert_int_equal(lithe_backend_list(buf, 2), full);
    assert_string_equal(buf, "c");
    assert_int_equal(lithe_backend_list(buf, sizeof buf), full);
    assert_string_equal(buf, expect);
}

/* ---------------------------------------------------------------------------------------- */
/* tensors                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static void test_tensor_new_errors(void **state) {
    (void)state;
    lithe_tensor *t = JUNK;
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_new(NULL, LITHE_F32, 1, (int64_t[]){2}, NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_new(NULL, LITHE_F32, -1, (int64_t[]){2}, &t));
    OUT_NULL(t, "lithe_tensor_new(ndim -1)");
    t = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_new(NULL, LITHE_F32, LITHE_MAX_DIMS + 1, nine, &t));
    OUT_NULL(t, "lithe_tensor_new(ndim 9)");
    t = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){3, -1}, &t));
    OUT_NULL(t, "lithe_tensor_new(negative extent)");
    t = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_new(NULL, LITHE_F32, 2, NULL, &t));
    OUT_NULL(t, "lithe_tensor_new(shape NULL)");
    t = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_new(NULL, (lithe_dtype)9, 1, (int64_t[]){2}, &t));
    OUT_NULL(t, "lithe_tensor_new(dtype 7)");
    t = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_new(NULL, (lithe_dtype)-1, 1, (int64_t[]){2}, &t));
    OUT_NULL(t, "lithe_tensor_new(dtype -1)");
    t = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_tensor_new(NULL, LITHE_F32, 3, (int64_t[]){1 << 30, 1 << 30, 1 << 30}, &t));
    OUT_NULL(t, "lithe_tensor_new(overflow)");
    t = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_tensor_new(NULL, LITHE_I64, 1, (int64_t[]){INT64_MAX / 4 + 1}, &t)); /* 2^64 bytes */
    OUT_NULL(t, "lithe_tensor_new(byte overflow)");

    t = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_from_data(LITHE_F32, 1, (int64_t[]){3}, NULL, &t));
    OUT_NULL(t, "lithe_tensor_from_data(data NULL)");
    float d[4] = {0};
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_from_data(LITHE_F32, 1, (int64_t[]){3}, d, NULL));
    t = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_from_data(LITHE_F32, 9, nine, d, &t));
    OUT_NULL(t, "lithe_tensor_from_data(ndim 9)");
    t = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_from_data(LITHE_F32, 1, (int64_t[]){-4}, d, &t));
    OUT_NULL(t, "lithe_tensor_from_data(negative)");
    t = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_from_data((lithe_dtype)99, 1, (int64_t[]){1}, d, &t));
    OUT_NULL(t, "lithe_tensor_from_data(dtype 99)");
}

static void test_tensor_null_accessors(void **state) {
    (void)state;
    assert_null(lithe_tensor_retain(NULL));
    lithe_tensor_release(NULL);
    assert_int_equal(lithe_tensor_ndim(NULL), 0);
    assert_null(lithe_tensor_shape(NULL));
    assert_null(lithe_tensor_strides(NULL));
    assert_int_equal(lithe_tensor_numel(NULL), 0);
    assert_false(lithe_tensor_is_contiguous(NULL));
    assert_null(lithe_tensor_backend(NULL));
    assert_null(lithe_tensor_data(NULL));
    (void)lithe_tensor_dtype(NULL); /* any value; must not crash */
}

static void test_tensor_ops_errors(void **state) {
    (void)state;
    lithe_tensor *t = f32(3, 4, 1.0f), *o = JUNK;
    float buf[12];
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_read(NULL, buf, sizeof buf));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_read(t, NULL, sizeof buf));
    FAILS(LITHE_ERR_VALUE, lithe_tensor_read(t, buf, sizeof buf - 1));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_write(NULL, buf, sizeof buf));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_write(t, NULL, sizeof buf));
    FAILS(LITHE_ERR_VALUE, lithe_tensor_write(t, buf, sizeof buf + 4));
    FAILS(LITHE_ERR_VALUE, lithe_tensor_write(t, buf, sizeof buf - 4));
    /* the failed write changed nothing */
    assert_true(((float *)lithe_tensor_data(t))[0] == 1.0f);

    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_slice(t, 0, 0, 1, NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_slice(NULL, 0, 0, 1, &o));
    OUT_NULL(o, "lithe_tensor_slice(NULL)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_slice(t, 2, 0, 1, &o));
    OUT_NULL(o, "lithe_tensor_slice(axis 2)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_slice(t, -1, 0, 1, &o));
    OUT_NULL(o, "lithe_tensor_slice(axis -1)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_slice(t, 0, 0, 4, &o));
    OUT_NULL(o, "lithe_tensor_slice(stop 4 > 3)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_slice(t, 1, -2, 2, &o));
    OUT_NULL(o, "lithe_tensor_slice(start -2)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_slice(t, 1, 3, 1, &o));
    OUT_NULL(o, "lithe_tensor_slice(start > stop)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_slice(t, 0, INT64_MAX, INT64_MAX, &o));
    OUT_NULL(o, "lithe_tensor_slice(huge)");

    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_reshape(t, 1, (int64_t[]){12}, NULL));
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_reshape(NULL, 1, (int64_t[]){12}, &o));
    OUT_NULL(o, "lithe_tensor_reshape(NULL)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_reshape(t, -1, (int64_t[]){12}, &o));
    OUT_NULL(o, "lithe_tensor_reshape(ndim -1)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_reshape(t, 9, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 12}, &o));
    OUT_NULL(o, "lithe_tensor_reshape(ndim 9)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_reshape(t, 2, NULL, &o));
    OUT_NULL(o, "lithe_tensor_reshape(shape NULL)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_reshape(t, 2, (int64_t[]){-1, -1}, &o));
    OUT_NULL(o, "lithe_tensor_reshape(two -1)");
    o = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_tensor_reshape(t, 2, (int64_t[]){5, 2}, &o));
    OUT_NULL(o, "lithe_tensor_reshape(numel)");
    o = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_tensor_reshape(t, 2, (int64_t[]){5, -1}, &o));
    OUT_NULL(o, "lithe_tensor_reshape(-1 not integral)");
    lithe_tensor *cols = NULL;
    OK(lithe_tensor_slice(t, 1, 1, 3, &cols));
    o = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_tensor_reshape(cols, 1, (int64_t[]){6}, &o));
    OUT_NULL(o, "lithe_tensor_reshape(non-contiguous)");

    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_cast(t, LITHE_F16, NULL));
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_cast(NULL, LITHE_F16, &o));
    OUT_NULL(o, "lithe_tensor_cast(NULL)");
    lithe_tensor *h = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F16, 1, (int64_t[]){4}, &h));
    o = JUNK;
    FAILS(LITHE_ERR_DTYPE, lithe_tensor_cast(h, LITHE_BF16, &o));
    OUT_NULL(o, "lithe_tensor_cast(f16 -> bf16)");
    o = JUNK;
    FAILS(LITHE_ERR_DTYPE, lithe_tensor_cast(t, LITHE_U64, &o));
    OUT_NULL(o, "lithe_tensor_cast(f32 -> u64)");
    lithe_tensor_release(h);
    lithe_tensor_release(cols);
    lithe_tensor_release(t);
}

/* Kept apart and run last: a failure here has crashed (release of an uninitialised pointer on
 * lithe_tensor_cast's error path), which under ASan ends the whole program. */
static void test_cast_bad_dtype_enum(void **state) {
    (void)state;
    lithe_tensor *t = f32(2, 2, 1.0f), *o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_cast(t, (lithe_dtype)42, &o)); /* a bad enum */
    OUT_NULL(o, "lithe_tensor_cast(dtype 42)");
    o = JUNK;
    FAILS_ANY(lithe_tensor_cast(t, (lithe_dtype)-3, &o));
    OUT_NULL(o, "lithe_tensor_cast(dtype -3)");
    lithe_tensor_release(t);
}

static int dl_deleted;
static void dl_deleter(DLManagedTensor *self) { (void)self; dl_deleted++; }

static void test_dlpack_errors(void **state) {
    (void)state;
    lithe_tensor *o = JUNK;
    void *m = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_from_dlpack(NULL, false, &o));
    OUT_NULL(o, "lithe_tensor_from_dlpack(NULL)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_from_dlpack(NULL, true, &o));
    OUT_NULL(o, "lithe_tensor_from_dlpack(NULL, versioned)");
    lithe_tensor *t = f32(2, 2, 0.0f);
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_to_dlpack(NULL, false, &m));
    OUT_NULL(m, "lithe_tensor_to_dlpack(NULL)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_to_dlpack(t, false, NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_to_dlpack(t, true, NULL));
    int32_t dl_type = -1, dl_id = -1;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_dlpack_device(NULL, &dl_type, &dl_id));
    assert_int_equal(dl_type, 0);
    assert_int_equal(dl_id, 0);
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_dlpack_device(t, NULL, &dl_id));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_tensor_dlpack_device(t, &dl_type, NULL));

    /* float64, a negative extent, ndim 9, an unknown device: refused, and the caller keeps it */
    double dd[4] = {0};
    int64_t shape[9] = {4, 1, 1, 1, 1, 1, 1, 1, 1};
    DLManagedTensor mt;
    memset(&mt, 0, sizeof mt);
    mt.dl_tensor.data = dd;
    mt.dl_tensor.device.device_type = kDLCPU;
    mt.dl_tensor.ndim = 1;
    mt.dl_tensor.dtype.code = kDLFloat;
    mt.dl_tensor.dtype.bits = 64;
    mt.dl_tensor.dtype.lanes = 1;
    mt.dl_tensor.shape = shape;
    mt.deleter = dl_deleter;
    dl_deleted = 0;
    o = JUNK;
    FAILS(LITHE_ERR_DTYPE, lithe_tensor_from_dlpack(&mt, false, &o));
    OUT_NULL(o, "lithe_tensor_from_dlpack(float64)");
    mt.dl_tensor.dtype.code = kDLComplex;
    o = JUNK;
    FAILS(LITHE_ERR_DTYPE, lithe_tensor_from_dlpack(&mt, false, &o));
    OUT_NULL(o, "lithe_tensor_from_dlpack(complex64)");
    mt.dl_tensor.dtype.code = kDLFloat;
    mt.dl_tensor.dtype.bits = 32;
    mt.dl_tensor.ndim = 9;
    o = JUNK;
    FAILS_ANY(lithe_tensor_from_dlpack(&mt, false, &o));
    OUT_NULL(o, "lithe_tensor_from_dlpack(ndim 9)");
    mt.dl_tensor.ndim = 1;
    shape[0] = -4;
    o = JUNK;
    FAILS_ANY(lithe_tensor_from_dlpack(&mt, false, &o));
    OUT_NULL(o, "lithe_tensor_from_dlpack(negative extent)");
    shape[0] = 4;
    mt.dl_tensor.device.device_type = kDLVulkan;
    o = JUNK;
    FAILS(LITHE_ERR_UNSUPPORTED, lithe_tensor_from_dlpack(&mt, false, &o));
    OUT_NULL(o, "lithe_tensor_from_dlpack(vulkan memory)");
    mt.dl_tensor.device.device_type = kDLCPU;
    mt.dl_tensor.data = NULL;
    o = JUNK;
    FAILS_ANY(lithe_tensor_from_dlpack(&mt, false, &o));
    OUT_NULL(o, "lithe_tensor_from_dlpack(data NULL)");
    assert_int_equal(dl_deleted, 0);
    lithe_tensor_release(t);
}

/* ---------------------------------------------------------------------------------------- */
/* values                                                                                    */
/* ---------------------------------------------------------------------------------------- */

static void test_value_errors(void **state) {
    (void)state;
    lithe_tensor *data = f32(5, 2, 0.0f), *len = i32v(2, (int32_t[]){2, 3});
    lithe_value *v = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_tensor(NULL, &v));
    OUT_NULL(v, "lithe_value_tensor(NULL)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_tensor(data, NULL));
    v = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_ragged(NULL, len, &v));
    OUT_NULL(v, "lithe_value_ragged(data NULL)");
    v = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_ragged(data, NULL, &v));
    OUT_NULL(v, "lithe_value_ragged(lengths NULL)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_ragged(data, len, NULL));
    lithe_tensor *bad_sum = i32v(2, (int32_t[]){1, 3});
    v = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_value_ragged(data, bad_sum, &v));
    OUT_NULL(v, "lithe_value_ragged(sum 4 != 5)");
    MSG_HAS("4");
    MSG_HAS("5");
    lithe_tensor *flen = f32(1, 2, 2.0f);
    v = JUNK;
    FAILS(LITHE_ERR_DTYPE, lithe_value_ragged(data, flen, &v));
    OUT_NULL(v, "lithe_value_ragged(float lengths)");
    lithe_tensor *neg = i32v(2, (int32_t[]){-1, 6});
    v = JUNK;
    FAILS_ANY(lithe_value_ragged(data, neg, &v));
    OUT_NULL(v, "lithe_value_ragged(negative length)");

    lithe_tensor *pdata = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 3, (int64_t[]){2, 2, 3}, &pdata));
    lithe_tensor *sat = i32v(2, (int32_t[]){2, 1}), *plen = i32v(2, (int32_t[]){2, 1}),
                 *idx = i32v(2, (int32_t[]){0, 1});
    v = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_padded(NULL, sat, plen, idx, &v));
    OUT_NULL(v, "lithe_value_padded(data NULL)");
    v = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_padded(pdata, NULL, plen, idx, &v));
    OUT_NULL(v, "lithe_value_padded(size_at_t NULL)");
    v = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_padded(pdata, sat, NULL, idx, &v));
    OUT_NULL(v, "lithe_value_padded(lengths NULL)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_padded(pdata, sat, plen, idx, NULL));
    lithe_tensor *long_sat = i32v(3, (int32_t[]){2, 1, 1});
    v = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_value_padded(pdata, long_sat, plen, idx, &v));
    OUT_NULL(v, "lithe_value_padded(size_at_t longer than T)");
    v = JUNK;
    FAILS(LITHE_ERR_DTYPE, lithe_value_padded(pdata, sat, flen, idx, &v));
    OUT_NULL(v, "lithe_value_padded(float lengths)");
    OK(lithe_value_padded(pdata, sat, plen, idx, &v));
    lithe_value_release(v);

    lithe_value *tv = val(data);
    v = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_list(1, NULL, &v));
    OUT_NULL(v, "lithe_value_list(items NULL)");
    v = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_list(2, (lithe_value *[]){tv, NULL}, &v));
    OUT_NULL(v, "lithe_value_list(item NULL)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_list(1, (lithe_value *[]){tv}, NULL));
    v = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_tuple(3, NULL, &v));
    OUT_NULL(v, "lithe_value_tuple(items NULL)");
    v = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_tuple(1, (lithe_value *[]){NULL}, &v));
    OUT_NULL(v, "lithe_value_tuple(item NULL)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_value_tuple(0, NULL, NULL));

    /* NULL-tolerant accessors */
    assert_null(lithe_value_retain(NULL));
    lithe_value_release(NULL);
    (void)lithe_value_kind_of(NULL);
    assert_null(lithe_value_get_tensor(NULL));
    assert_null(lithe_value_field(NULL, "data"));
    assert_null(lithe_value_field(tv, NULL));
    assert_int_equal(lithe_value_len(NULL), 0);
    assert_null(lithe_value_item(NULL, 0));
    assert_null(lithe_value_item(tv, 0));

    lithe_value_release(tv);
    lithe_tensor_release(data);
    lithe_tensor_release(len);
    lithe_tensor_release(bad_sum);
    lithe_tensor_release(flen);
    lithe_tensor_release(neg);
    lithe_tensor_release(pdata);
    lithe_tensor_release(sat);
    lithe_tensor_release(plen);
    lithe_tensor_release(idx);
    lithe_tensor_release(long_sat);
}

static void test_rng_null(void **state) {
    (void)state;
    float x[4];
    lithe_rng r = {1, 0};
    lithe_rng_uniform(NULL, x, 4);
    lithe_rng_uniform(&r, NULL, 4);
    assert_int_equal(r.counter, 0);
    lithe_rng_uniform(&r, x, 0);
    assert_int_equal(r.counter, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* layers                                                                                    */
/* ---------------------------------------------------------------------------------------- */

static void test_layer_constructor_errors(void **state) {
    (void)state;
    lithe_model *m = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_linear(NULL, NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_relu(NULL, NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_softmax(NULL, NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_dropout(0.1f, NULL));
    /* negative dims: set_dim's status (LITHE_ERR_VALUE) */
    FAILS(LITHE_ERR_VALUE, lithe_linear(&(lithe_dense_opts){.nO = -1}, &m));
    OUT_NULL(m, "lithe_linear(nO -1)");
    m = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_linear(&(lithe_dense_opts){.nO = 2, .nI = -3}, &m));
    OUT_NULL(m, "lithe_linear(nI -3)");
    MSG_HAS("-3");
    m = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_relu(&(lithe_dense_opts){.nO = -2}, &m));
    OUT_NULL(m, "lithe_relu(nO -2)");
    m = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_softmax(&(lithe_softmax_opts){.nI = -1}, &m));
    OUT_NULL(m, "lithe_softmax(nI -1)");
    /* dropout rates outside [0, 1] */
    m = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_relu(&(lithe_dense_opts){.nO = 2, .dropout = 1.5f}, &m));
    OUT_NULL(m, "lithe_relu(dropout 1.5)");
    m = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_relu(&(lithe_dense_opts){.nO = 2, .dropout = -0.5f}, &m));
    OUT_NULL(m, "lithe_relu(dropout -0.5)");
    m = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_relu(&(lithe_dense_opts){.nO = 2, .dropout = NAN}, &m));
    OUT_NULL(m, "lithe_relu(dropout NaN)");
    m = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_dropout(1.5f, &m));
    OUT_NULL(m, "lithe_dropout(1.5)");
    MSG_HAS("1.5");
    m = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_dropout(-0.1f, &m));
    OUT_NULL(m, "lithe_dropout(-0.1)");
    m = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_dropout(NAN, &m));
    OUT_NULL(m, "lithe_dropout(NaN)");
    /* softmax temperature */
    m = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_softmax(&(lithe_softmax_opts){.nO = 3, .temperature = -1.0f}, &m));
    OUT_NULL(m, "lithe_softmax(temperature -1)");
    m = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_softmax(&(lithe_softmax_opts){.nO = 3, .temperature = NAN}, &m));
    OUT_NULL(m, "lithe_softmax(temperature NaN)");
    /* the edges are accepted */
    OK(lithe_dropout(0.0f, &m));
    lithe_model_free(m);
    OK(lithe_dropout(1.0f, &m));
    lithe_model_free(m);
    OK(lithe_linear(NULL, &m));
    lithe_model_free(m);
    OK(lithe_softmax(NULL, &m));
    lithe_model_free(m);
}

static void test_chain_errors(void **state) {
    (void)state;
    lithe_model *m = JUNK, *a = NULL, *b = NULL;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_chain(0, NULL, &m));
    OUT_NULL(m, "lithe_chain(0, NULL)");
    m = JUNK;
    OK(lithe_linear(NULL, &a));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_chain(0, (lithe_model *[]){a}, &m)); /* n = 0 takes nothing */
    OUT_NULL(m, "lithe_chain(0, layers)");
    m = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_chain(2, NULL, &m));
    OUT_NULL(m, "lithe_chain(2, NULL)");
    /* takes ownership also on failure: a and b are freed (the leak checker verifies) */
    OK(lithe_linear(NULL, &b));
    m = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_chain(3, (lithe_model *[]){a, NULL, b}, &m));
    OUT_NULL(m, "lithe_chain(a NULL layer)");
    OK(lithe_linear(NULL, &a));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_chain(1, (lithe_model *[]){a}, NULL));

    size_t n = 0;
    const char *const *names = lithe_layer_names(&n);
    assert_non_null(names);
    assert_true(n >= 5);
    assert_non_null(lithe_layer_names(NULL));
}

/* ---------------------------------------------------------------------------------------- */
/* model node                                                                                */
/* ---------------------------------------------------------------------------------------- */

static void test_model_null_accessors(void **state) {
    (void)state;
    assert_null(lithe_model_retain(NULL));
    lithe_model_free(NULL);
    assert_null(lithe_model_name(NULL));
    assert_int_equal(lithe_model_id(NULL), 0);
    assert_null(lithe_model_layer_type(NULL));
    assert_int_equal(lithe_model_n_layers(NULL), 0);
    assert_null(lithe_model_layer(NULL, 0));
    assert_null(lithe_model_backend(NULL));
    assert_int_equal(lithe_model_set_seed(NULL, 1), LITHE_ERR_INVALID_ARG);
    assert_int_equal(lithe_model_has_dim(NULL, "nO"), LITHE_HAS_NO);
    assert_int_equal(lithe_model_has_param(NULL, "W"), LITHE_HAS_NO);
    assert_int_equal(lithe_model_has_ref(NULL, "x"), LITHE_HAS_NO);
    assert_false(lithe_model_has_grad(NULL, "W"));
    assert_int_equal(lithe_model_n_params(NULL), 0);
    assert_null(lithe_model_param_name(NULL, 0));
    assert_int_equal(lithe_model_attr_type(NULL, "x"), LITHE_ATTR_NONE);

    lithe_model *m = NULL;
    OK(lithe_linear(NULL, &m));
    assert_null(lithe_model_layer(m, 0));
    assert_null(lithe_model_param_name(m, 2));
    assert_int_equal(lithe_model_has_dim(m, NULL), LITHE_HAS_NO);
    assert_int_equal(lithe_model_has_param(m, NULL), LITHE_HAS_NO);
    assert_int_equal(lithe_model_has_ref(m, NULL), LITHE_HAS_NO);
    assert_false(lithe_model_has_grad(m, NULL));
    assert_int_equal(lithe_model_attr_type(m, NULL), LITHE_ATTR_NONE);
    size_t n = 99;
    lithe_model *nodes[2];
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_walk(NULL, nodes, 2, &n));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_walk(m, nodes, 2, NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_walk(m, NULL, 2, &n));
    OK(lithe_model_walk(m, NULL, 0, &n));
    assert_int_equal(n, 1);
    lithe_backend *cpu = NULL;
    OK(lithe_backend_get("cpu", &cpu));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_backend(NULL, cpu));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_backend(m, NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_to_backend(NULL, cpu));
    assert_non_null(strstr(lithe_last_error(), "lithe_model_to_backend"));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_to_backend(m, NULL));
    OK(lithe_model_to_backend(m, cpu)); /* already there: a no-op */
    assert_ptr_equal(lithe_model_backend(m), cpu);
    lithe_model_free(m);
}

static void test_dims(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_linear(&(lithe_dense_opts){.nO = 3}, &m));
    assert_int_equal(lithe_model_has_dim(m, "nO"), LITHE_HAS_YES);
    assert_int_equal(lithe_model_has_dim(m, "nI"), LITHE_HAS_UNSET);
    assert_int_equal(lithe_model_has_dim(m, "nope"), LITHE_HAS_NO);
    int64_t v = 77;
    FAILS(LITHE_ERR_STATE, lithe_model_get_dim(m, "nI", &v));
    assert_int_equal(v, 77); /* plain scalar: untouched */
    MSG_HAS("nI");
    FAILS(LITHE_ERR_NOT_FOUND, lithe_model_get_dim(m, "nope", &v));
    assert_int_equal(v, 77);
    MSG_HAS("nope");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_dim(NULL, "nO", &v));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_dim(m, NULL, &v));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_dim(m, "nO", NULL));
    OK(lithe_model_get_dim(m, "nO", &v));
    assert_int_equal(v, 3);

    FAILS(LITHE_ERR_NOT_FOUND, lithe_model_set_dim(m, "nope", 3));
    assert_int_equal(lithe_model_has_dim(m, "nope"), LITHE_HAS_NO);
    FAILS(LITHE_ERR_VALUE, lithe_model_set_dim(m, "nI", -2));
    assert_int_equal(lithe_model_has_dim(m, "nI"), LITHE_HAS_UNSET);
    FAILS(LITHE_ERR_STATE, lithe_model_set_dim(m, "nO", 4));
    MSG_HAS("3");
    MSG_HAS("4");
    OK(lithe_model_get_dim(m, "nO", &v));
    assert_int_equal(v, 3); /* unchanged */
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_dim(NULL, "nO", 3));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_dim(m, NULL, 3));
    OK(lithe_model_set_dim(m, "nO", 3)); /* the same value is fine */
    OK(lithe_model_set_dim(m, "nO", 0)); /* 0 unsets */
    assert_int_equal(lithe_model_has_dim(m, "nO"), LITHE_HAS_UNSET);
    OK(lithe_model_set_dim(m, "nO", 4));
    OK(lithe_model_set_dim(m, "nI", 2));
    assert_int_equal(lithe_model_has_dim(m, "nI"), LITHE_HAS_YES);
    lithe_model_free(m);
}

static void test_params_and_grads(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_linear(&(lithe_dense_opts){.nO = 2, .nI = 3}, &m));
    assert_int_equal(lithe_model_has_param(m, "W"), LITHE_HAS_UNSET);
    assert_int_equal(lithe_model_has_param(m, "b"), LITHE_HAS_UNSET);
    assert_int_equal(lithe_model_has_param(m, "nope"), LITHE_HAS_NO);
    lithe_tensor *o = JUNK;
    FAILS(LITHE_ERR_STATE, lithe_model_get_param(m, "W", &o));
    OUT_NULL(o, "lithe_model_get_param(unset)");
    o = JUNK;
    FAILS(LITHE_ERR_NOT_FOUND, lithe_model_get_param(m, "nope", &o));
    OUT_NULL(o, "lithe_model_get_param(unknown)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_param(NULL, "W", &o));
    OUT_NULL(o, "lithe_model_get_param(NULL model)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_param(m, NULL, &o));
    OUT_NULL(o, "lithe_model_get_param(NULL name)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_param(m, "W", NULL));
    /* inc_grad before the param exists */
    lithe_tensor *g = f32(2, 3, 1.0f);
    FAILS_ANY(lithe_model_inc_grad(m, "W", g));
    assert_false(lithe_model_has_grad(m, "W"));

    OK(lithe_model_initialize(m, NULL, NULL));
    assert_int_equal(lithe_model_has_param(m, "W"), LITHE_HAS_YES);
    assert_int_equal(lithe_model_n_params(m), 2);
    assert_string_equal(lithe_model_param_name(m, 0), "W");
    assert_string_equal(lithe_model_param_name(m, 1), "b");

    lithe_tensor *it = NULL;
    OK(lithe_tensor_new(NULL, LITHE_I32, 2, (int64_t[]){2, 3}, &it));
    FAILS(LITHE_ERR_DTYPE, lithe_model_set_param(m, "W", it));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_param(NULL, "W", g));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_param(m, NULL, g));
    OK(lithe_model_get_param(m, "W", &o));
    assert_int_equal(lithe_tensor_dtype(o), LITHE_F32); /* unchanged by the failures */
    /* a new name registers, NULL unsets */
    OK(lithe_model_set_param(m, "extra", g));
    assert_int_equal(lithe_model_has_param(m, "extra"), LITHE_HAS_YES);
    OK(lithe_model_set_param(m, "extra", NULL));
    assert_int_equal(lithe_model_has_param(m, "extra"), LITHE_HAS_UNSET);

    /* grads */
    assert_false(lithe_model_has_grad(m, "W"));
    o = JUNK;
    FAILS(LITHE_ERR_NOT_FOUND, lithe_model_get_grad(m, "W", &o));
    OUT_NULL(o, "lithe_model_get_grad(no grad)");
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_grad(NULL, "W", &o));
    OUT_NULL(o, "lithe_model_get_grad(NULL)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_grad(m, "W", NULL));
    lithe_tensor *wrong = f32(3, 2, 1.0f);
    FAILS(LITHE_ERR_SHAPE, lithe_model_set_grad(m, "W", wrong));
    FAILS(LITHE_ERR_DTYPE, lithe_model_set_grad(m, "W", it));
    FAILS(LITHE_ERR_NOT_FOUND, lithe_model_set_grad(m, "nope", g));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_grad(NULL, "W", g));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_grad(m, NULL, g));
    assert_false(lithe_model_has_grad(m, "W"));
    FAILS(LITHE_ERR_SHAPE, lithe_model_inc_grad(m, "W", wrong));
    MSG_HAS("(3, 2)");
    MSG_HAS("(2, 3)");
    FAILS(LITHE_ERR_DTYPE, lithe_model_inc_grad(m, "W", it));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_inc_grad(m, "W", NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_inc_grad(NULL, "W", g));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_inc_grad(m, NULL, g));
    FAILS_ANY(lithe_model_inc_grad(m, "nope", g));
    assert_false(lithe_model_has_grad(m, "W"));
    OK(lithe_model_inc_grad(m, "W", g));
    assert_true(lithe_model_has_grad(m, "W"));

    lithe_tensor_release(g);
    lithe_tensor_release(it);
    lithe_tensor_release(wrong);
    lithe_model_free(m);
}

static void test_refs(void **state) {
    (void)state;
    lithe_model *a = NULL, *b = NULL, *c = NULL, *other = NULL;
    OK(lithe_linear(NULL, &a));
    OK(lithe_linear(NULL, &b));
    OK(lithe_linear(NULL, &other));
    OK(lithe_chain(2, (lithe_model *[]){a, b}, &c));
    assert_int_equal(lithe_model_has_ref(c, "first"), LITHE_HAS_NO);
    lithe_model *o = JUNK;
    FAILS(LITHE_ERR_NOT_FOUND, lithe_model_get_ref(c, "first", &o));
    OUT_NULL(o, "lithe_model_get_ref(unknown)");
    FAILS(LITHE_ERR_VALUE, lithe_model_set_ref(c, "first", other));
    assert_int_equal(lithe_model_has_ref(c, "first"), LITHE_HAS_NO); /* nothing half-done */
    FAILS(LITHE_ERR_VALUE, lithe_model_set_ref(a, "up", c)); /* the parent is not in a's tree */
    OK(lithe_model_set_ref(c, "first", NULL));
    assert_int_equal(lithe_model_has_ref(c, "first"), LITHE_HAS_UNSET);
    o = JUNK;
    FAILS(LITHE_ERR_STATE, lithe_model_get_ref(c, "first", &o));
    OUT_NULL(o, "lithe_model_get_ref(unset)");
    OK(lithe_model_set_ref(c, "first", a));
    assert_int_equal(lithe_model_has_ref(c, "first"), LITHE_HAS_YES);
    OK(lithe_model_get_ref(c, "first", &o));
    assert_ptr_equal(o, a);
    OK(lithe_model_set_ref(c, "self", c));
    FAILS(LITHE_ERR_VALUE, lithe_model_set_ref(c, "first", other));
    OK(lithe_model_get_ref(c, "first", &o));
    assert_ptr_equal(o, a); /* unchanged by the failure */
    o = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_ref(NULL, "first", &o));
    OUT_NULL(o, "lithe_model_get_ref(NULL)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_ref(c, "first", NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_ref(NULL, "x", a));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_ref(c, NULL, a));
    lithe_model_free(c);
    lithe_model_free(other);
}

static void test_attrs(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_linear(NULL, &m));
    lithe_tensor *t = f32(1, 2, 0.0f);
    OK(lithe_model_set_attr_int(m, "i", -7));
    OK(lithe_model_set_attr_float(m, "f", 0.25));
    OK(lithe_model_set_attr_bool(m, "b", true));
    OK(lithe_model_set_attr_str(m, "s", "hello"));
    OK(lithe_model_set_attr_tensor(m, "t", t));
    assert_int_equal(lithe_model_attr_type(m, "i"), LITHE_ATTR_INT);
    assert_int_equal(lithe_model_attr_type(m, "f"), LITHE_ATTR_FLOAT);
    assert_int_equal(lithe_model_attr_type(m, "b"), LITHE_ATTR_BOOL);
    assert_int_equal(lithe_model_attr_type(m, "s"), LITHE_ATTR_STR);
    assert_int_equal(lithe_model_attr_type(m, "t"), LITHE_ATTR_TENSOR);
    assert_int_equal(lithe_model_attr_type(m, "none"), LITHE_ATTR_NONE);

    int64_t iv = 0;
    double fv = 0;
    bool bv = false;
    const char *sv = NULL;
    lithe_tensor *tv = NULL;
    OK(lithe_model_get_attr_int(m, "i", &iv));
    assert_int_equal(iv, -7);
    OK(lithe_model_get_attr_float(m, "i", &fv)); /* an int reads as a float */
    assert_true(fv == -7.0);
    OK(lithe_model_get_attr_float(m, "f", &fv));
    assert_true(fv == 0.25);
    OK(lithe_model_get_attr_bool(m, "b", &bv));
    assert_true(bv);
    OK(lithe_model_get_attr_str(m, "s", &sv));
    assert_string_equal(sv, "hello");
    OK(lithe_model_get_attr_tensor(m, "t", &tv));
    assert_ptr_equal(tv, t);

    /* wrong types: LITHE_ERR_DTYPE; plain scalars untouched, pointers NULL */
    iv = 5;
    FAILS(LITHE_ERR_DTYPE, lithe_model_get_attr_int(m, "f", &iv));
    assert_int_equal(iv, 5);
    FAILS(LITHE_ERR_DTYPE, lithe_model_get_attr_int(m, "b", &iv));
    fv = 1.5;
    FAILS(LITHE_ERR_DTYPE, lithe_model_get_attr_float(m, "b", &fv));
    assert_true(fv == 1.5);
    FAILS(LITHE_ERR_DTYPE, lithe_model_get_attr_bool(m, "i", &bv));
    sv = JUNK;
    FAILS(LITHE_ERR_DTYPE, lithe_model_get_attr_str(m, "i", &sv));
    OUT_NULL(sv, "lithe_model_get_attr_str(int attr)");
    tv = JUNK;
    FAILS(LITHE_ERR_DTYPE, lithe_model_get_attr_tensor(m, "s", &tv));
    OUT_NULL(tv, "lithe_model_get_attr_tensor(str attr)");
    /* absent: LITHE_ERR_NOT_FOUND */
    FAILS(LITHE_ERR_NOT_FOUND, lithe_model_get_attr_int(m, "none", &iv));
    FAILS(LITHE_ERR_NOT_FOUND, lithe_model_get_attr_float(m, "none", &fv));
    FAILS(LITHE_ERR_NOT_FOUND, lithe_model_get_attr_bool(m, "none", &bv));
    sv = JUNK;
    FAILS(LITHE_ERR_NOT_FOUND, lithe_model_get_attr_str(m, "none", &sv));
    OUT_NULL(sv, "lithe_model_get_attr_str(absent)");
    tv = JUNK;
    FAILS(LITHE_ERR_NOT_FOUND, lithe_model_get_attr_tensor(m, "none", &tv));
    OUT_NULL(tv, "lithe_model_get_attr_tensor(absent)");
    /* NULL arguments */
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_attr_int(NULL, "i", &iv));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_attr_int(m, NULL, &iv));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_attr_int(m, "i", NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_attr_float(m, "f", NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_attr_bool(m, "b", NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_attr_str(m, "s", NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_attr_tensor(m, "t", NULL));
    sv = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_attr_str(NULL, "s", &sv));
    OUT_NULL(sv, "lithe_model_get_attr_str(NULL model)");
    tv = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_get_attr_tensor(NULL, "t", &tv));
    OUT_NULL(tv, "lithe_model_get_attr_tensor(NULL model)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_attr_int(NULL, "i", 1));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_attr_int(m, NULL, 1));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_attr_float(NULL, "f", 1));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_attr_bool(NULL, "b", true));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_attr_str(NULL, "s", "x"));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_attr_str(m, NULL, "x"));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_attr_str(m, "s", NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_attr_tensor(NULL, "t", t));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_attr_tensor(m, "t", NULL));
    OK(lithe_model_get_attr_str(m, "s", &sv));
    assert_string_equal(sv, "hello"); /* the failed setters changed nothing */

    /* setters replace, and the type may change */
    OK(lithe_model_set_attr_str(m, "i", "now a string"));
    assert_int_equal(lithe_model_attr_type(m, "i"), LITHE_ATTR_STR);
    FAILS(LITHE_ERR_DTYPE, lithe_model_get_attr_int(m, "i", &iv));
    OK(lithe_model_set_attr_int(m, "t", 3)); /* drops the tensor reference */
    assert_int_equal(lithe_model_attr_type(m, "t"), LITHE_ATTR_INT);
    OK(lithe_model_set_attr_tensor(m, "s", t)); /* frees the string */
    OK(lithe_model_set_attr_tensor(m, "s", t)); /* replacing a tensor by itself */
    OK(lithe_model_get_attr_tensor(m, "s", &tv));
    assert_ptr_equal(tv, t);
    lithe_tensor_release(t);
    assert_int_equal(lithe_tensor_numel(tv), 2); /* the model holds its own reference */
    lithe_model_free(m);
}

static void test_set_dropout_rate(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 2, .dropout = 0.2f}, &m));
    FAILS(LITHE_ERR_VALUE, lithe_model_set_dropout_rate(m, 1.5f));
    MSG_HAS("1.5");
    FAILS(LITHE_ERR_VALUE, lithe_model_set_dropout_rate(m, -0.1f));
    FAILS(LITHE_ERR_VALUE, lithe_model_set_dropout_rate(m, NAN));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_set_dropout_rate(NULL, 0.5f));
    lithe_model *drop = lithe_model_layer(m, 1);
    assert_non_null(drop);
    double r = 0;
    OK(lithe_model_get_attr_float(drop, "dropout_rate", &r));
    assert_true(fabs(r - 0.2) < 1e-6); /* unchanged by the failures */
    OK(lithe_model_set_dropout_rate(m, 0.5f));
    OK(lithe_model_get_attr_float(drop, "dropout_rate", &r));
    assert_true(r == 0.5);
    lithe_model_free(m);
}

/* ---------------------------------------------------------------------------------------- */
/* running                                                                                   */
/* ---------------------------------------------------------------------------------------- */

static void test_initialize_errors(void **state) {
    (void)state;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_initialize(NULL, NULL, NULL));
    lithe_model *m = NULL;
    OK(lithe_linear(&(lithe_dense_opts){.nO = 4}, &m));
    FAILS(LITHE_ERR_STATE, lithe_model_initialize(m, NULL, NULL));
    MSG_HAS("nI");
    assert_int_equal(lithe_model_has_param(m, "W"), LITHE_HAS_UNSET);
    lithe_model_free(m);
    OK(lithe_linear(&(lithe_dense_opts){.nO = 4, .nI = 4}, &m));
    lithe_tensor *x3 = f32(2, 3, 0.0f);
    lithe_value *x3v = val(x3);
    FAILS(LITHE_ERR_SHAPE, lithe_model_initialize(m, x3v, NULL));
    MSG_HAS("4");
    MSG_HAS("3");
    lithe_model_free(m);
    /* the chain reports the inner layer's state error */
    lithe_model *a = NULL, *b = NULL, *c = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 4}, &a));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = 2}, &b));
    OK(lithe_chain(2, (lithe_model *[]){a, b}, &c));
    FAILS(LITHE_ERR_STATE, lithe_model_initialize(c, NULL, NULL));
    lithe_model_free(c);
    lithe_value_release(x3v);
    lithe_tensor_release(x3);
}

static void test_forward_errors(void **state) {
    (void)state;
    lithe_tensor *x = f32(2, 4, 0.5f);
    lithe_value *xv = val(x), *y = JUNK;
    lithe_backprop *bp = JUNK;

    /* before initialize: LITHE_ERR_STATE */
    lithe_model *raw = NULL;
    OK(lithe_linear(&(lithe_dense_opts){.nO = 4, .nI = 4}, &raw));
    FAILS(LITHE_ERR_STATE, lithe_model_forward(raw, xv, true, &y, &bp));
    OUT_NULL(y, "lithe_model_forward(uninitialized)");
    OUT_NULL(bp, "lithe_model_forward(uninitialized)");
    y = JUNK;
    FAILS(LITHE_ERR_STATE, lithe_model_predict(raw, xv, &y));
    OUT_NULL(y, "lithe_model_predict(uninitialized)");
    lithe_tensor *yt = JUNK;
    FAILS(LITHE_ERR_STATE, lithe_model_predict_tensor(raw, x, &yt));
    OUT_NULL(yt, "lithe_model_predict_tensor(uninitialized)");
    lithe_model_free(raw);
    lithe_model *r = NULL, *s = NULL, *c = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 3, .nI = 4, .dropout = 0.1f}, &r));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = 2, .nI = 3}, &s));
    OK(lithe_chain(2, (lithe_model *[]){r, s}, &c));
    y = JUNK;
    bp = JUNK;
    FAILS(LITHE_ERR_STATE, lithe_model_begin_update(c, xv, &y, &bp));
    OUT_NULL(y, "lithe_model_begin_update(uninitialized chain)");
    OUT_NULL(bp, "lithe_model_begin_update(uninitialized chain)");
    lithe_model_free(c);

    lithe_model *m = linear44();
    /* NULL arguments */
    y = JUNK;
    bp = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_forward(NULL, xv, true, &y, &bp));
    OUT_NULL(y, "lithe_model_forward(NULL model)");
    OUT_NULL(bp, "lithe_model_forward(NULL model)");
    y = JUNK;
    bp = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_forward(m, NULL, true, &y, &bp));
    OUT_NULL(y, "lithe_model_forward(NULL X)");
    OUT_NULL(bp, "lithe_model_forward(NULL X)");
    bp = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_forward(m, xv, true, NULL, &bp));
    OUT_NULL(bp, "lithe_model_forward(NULL Y)");
    y = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_begin_update(m, xv, &y, NULL));
    OUT_NULL(y, "lithe_model_begin_update(NULL bp)");
    bp = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_begin_update(m, xv, NULL, &bp));
    OUT_NULL(bp, "lithe_model_begin_update(NULL Y)");
    y = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_predict(NULL, xv, &y));
    OUT_NULL(y, "lithe_model_predict(NULL model)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_predict(m, xv, NULL));
    yt = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_predict_tensor(NULL, x, &yt));
    OUT_NULL(yt, "lithe_model_predict_tensor(NULL model)");
    yt = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_predict_tensor(m, NULL, &yt));
    OUT_NULL(yt, "lithe_model_predict_tensor(NULL X)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_predict_tensor(m, x, NULL));

    /* int32 X: LITHE_ERR_DTYPE */
    lithe_tensor *xi = NULL;
    OK(lithe_tensor_new(NULL, LITHE_I32, 2, (int64_t[]){2, 4}, &xi));
    lithe_value *xiv = val(xi);
    y = JUNK;
    bp = JUNK;
    FAILS(LITHE_ERR_DTYPE, lithe_model_forward(m, xiv, true, &y, &bp));
    OUT_NULL(y, "lithe_model_forward(int32 X)");
    OUT_NULL(bp, "lithe_model_forward(int32 X)");
    MSG_HAS("linear");
    MSG_HAS("int32");
    yt = JUNK;
    FAILS(LITHE_ERR_DTYPE, lithe_model_predict_tensor(m, xi, &yt));
    OUT_NULL(yt, "lithe_model_predict_tensor(int32 X)");

    /* wrong width: "linear: input width 3 does not match nI=4" */
    lithe_tensor *x3 = f32(2, 3, 0.5f);
    lithe_value *x3v = val(x3);
    y = JUNK;
    bp = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_model_forward(m, x3v, false, &y, &bp));
    OUT_NULL(y, "lithe_model_forward(width 3)");
    OUT_NULL(bp, "lithe_model_forward(width 3)");
    MSG_HAS("linear");
    MSG_HAS("3");
    MSG_HAS("nI=4");

    /* 1-D and 3-D X: LITHE_ERR_SHAPE */
    lithe_tensor *x1 = NULL, *x3d = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 1, (int64_t[]){4}, &x1));
    OK(lithe_tensor_new(NULL, LITHE_F32, 3, (int64_t[]){1, 2, 4}, &x3d));
    lithe_value *x1v = val(x1), *x3dv = val(x3d);
    y = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_model_predict(m, x1v, &y));
    OUT_NULL(y, "lithe_model_predict(1-D X)");
    y = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_model_predict(m, x3dv, &y));
    OUT_NULL(y, "lithe_model_predict(3-D X)");
    /* a list where an array is expected: refused with a message (status not pinned down) */
    lithe_value *lst = NULL;
    OK(lithe_value_list(1, (lithe_value *[]){xv}, &lst));
    y = JUNK;
    FAILS_ANY(lithe_model_predict(m, lst, &y));
    OUT_NULL(y, "lithe_model_predict(list X)");

    /* relu and softmax name themselves too */
    lithe_model *relu = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 2, .nI = 4}, &relu));
    OK(lithe_model_initialize(relu, NULL, NULL));
    y = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_model_predict(relu, x3v, &y));
    OUT_NULL(y, "relu predict(width 3)");
    MSG_HAS("relu");
    lithe_model_free(relu);

    lithe_value_release(lst);
    lithe_value_release(x1v);
    lithe_value_release(x3dv);
    lithe_tensor_release(x1);
    lithe_tensor_release(x3d);
    lithe_value_release(x3v);
    lithe_tensor_release(x3);
    lithe_value_release(xiv);
    lithe_tensor_release(xi);
    lithe_model_free(m);
    lithe_value_release(xv);
    lithe_tensor_release(x);
}

static void test_attr_checked_at_forward(void **state) {
    (void)state;
    lithe_tensor *x = f32(2, 4, 0.5f);
    lithe_value *xv = val(x), *y = JUNK;
    /* a softmax temperature set to -1 through the attrs is refused at forward */
    lithe_model *s = NULL;
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = 2, .nI = 4}, &s));
    OK(lithe_model_initialize(s, NULL, NULL));
    OK(lithe_model_set_attr_float(s, "softmax_temperature", -1.0));
    FAILS(LITHE_ERR_VALUE, lithe_model_predict(s, xv, &y));
    OUT_NULL(y, "softmax predict(temperature -1)");
    lithe_model_free(s);
    /* a dropout rate set to 1.5 through the attrs is refused at forward */
    lithe_model *d = NULL;
    lithe_backprop *bp = JUNK;
    OK(lithe_dropout(0.5f, &d));
    OK(lithe_model_set_attr_float(d, "dropout_rate", 1.5));
    y = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_model_begin_update(d, xv, &y, &bp));
    OUT_NULL(y, "dropout begin_update(rate 1.5)");
    OUT_NULL(bp, "dropout begin_update(rate 1.5)");
    lithe_model_free(d);
    lithe_value_release(xv);
    lithe_tensor_release(x);
}

static void test_backprop_errors(void **state) {
    (void)state;
    lithe_tensor *x = f32(2, 4, 0.5f);
    lithe_value *xv = val(x), *y = NULL, *dx = JUNK;
    lithe_backprop *bp = NULL;
    lithe_model *m = linear44();
    OK(lithe_model_begin_update(m, xv, &y, &bp));
    assert_non_null(bp);

    FAILS(LITHE_ERR_INVALID_ARG, lithe_backprop_run(NULL, y, &dx));
    OUT_NULL(dx, "lithe_backprop_run(NULL record)");
    dx = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_backprop_run(bp, NULL, &dx));
    OUT_NULL(dx, "lithe_backprop_run(NULL dY)");
    /* wrong width, wrong rows, wrong dtype */
    lithe_tensor *d5 = f32(2, 5, 1.0f), *d3r = f32(3, 4, 1.0f), *di = NULL;
    OK(lithe_tensor_new(NULL, LITHE_I32, 2, (int64_t[]){2, 4}, &di));
    lithe_value *d5v = val(d5), *d3rv = val(d3r), *div = val(di);
    dx = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_backprop_run(bp, d5v, &dx));
    OUT_NULL(dx, "lithe_backprop_run(dY (2, 5) for Y (2, 4))");
    MSG_HAS("linear");
    MSG_HAS("5");
    dx = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_backprop_run(bp, d3rv, &dx));
    OUT_NULL(dx, "lithe_backprop_run(dY (3, 4) for Y (2, 4))");
    FAILS(LITHE_ERR_SHAPE, lithe_backprop_run(bp, d5v, NULL));
    dx = JUNK;
    FAILS(LITHE_ERR_DTYPE, lithe_backprop_run(bp, div, &dx));
    OUT_NULL(dx, "lithe_backprop_run(int32 dY)");
    /* the failures accumulated nothing */
    assert_false(lithe_model_has_grad(m, "W"));
    assert_false(lithe_model_has_grad(m, "b"));
    lithe_backprop_free(bp);
    lithe_value_release(y);

    /* the same through a chain with Relu, Dropout and Softmax */
    lithe_model *r = NULL, *s = NULL, *c = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 3, .nI = 4, .dropout = 0.5f}, &r));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = 5, .nI = 3}, &s));
    OK(lithe_chain(2, (lithe_model *[]){r, s}, &c));
    OK(lithe_model_initialize(c, xv, NULL));
    OK(lithe_model_begin_update(c, xv, &y, &bp));
    dx = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_backprop_run(bp, d3rv, &dx));
    OUT_NULL(dx, "chain backprop(dY (3, 4) for Y (2, 5))");
    MSG_HAS("softmax");
    OK(lithe_backprop_run(bp, d5v, &dx));
    lithe_value_release(dx);
    lithe_backprop_free(bp);
    lithe_value_release(y);

    /* relu alone */
    lithe_model *rl = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 3, .nI = 4}, &rl));
    OK(lithe_model_initialize(rl, NULL, NULL));
    OK(lithe_model_begin_update(rl, xv, &y, &bp));
    dx = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_backprop_run(bp, d5v, &dx));
    OUT_NULL(dx, "relu backprop(dY (2, 5) for Y (2, 3))");
    MSG_HAS("relu");
    lithe_backprop_free(bp);
    lithe_value_release(y);
    /* a dropout record with a gradient of another shape */
    lithe_model *d = NULL;
    OK(lithe_dropout(0.5f, &d));
    OK(lithe_model_begin_update(d, xv, &y, &bp));
    dx = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_backprop_run(bp, d5v, &dx));
    OUT_NULL(dx, "dropout backprop(dY (2, 5) for Y (2, 4))");
    lithe_backprop_free(bp);
    lithe_value_release(y);

    lithe_backprop_free(NULL);
    lithe_model_free(d);
    lithe_model_free(rl);
    lithe_model_free(c);
    lithe_model_free(m);
    lithe_value_release(d5v);
    lithe_value_release(d3rv);
    lithe_value_release(div);
    lithe_tensor_release(d5);
    lithe_tensor_release(d3r);
    lithe_tensor_release(di);
    lithe_value_release(xv);
    lithe_tensor_release(x);
}

/* ---------------------------------------------------------------------------------------- */
/* optimizer and loss                                                                        */
/* ---------------------------------------------------------------------------------------- */

static void bad_opts(lithe_status want, lithe_optimizer_opts o, const char *what) {
    lithe_optimizer *opt = JUNK;
    lithe_clear_error();
    lithe_status s = lithe_optimizer_new(&o, &opt);
    if (s != want || !lithe_last_error()[0] || opt) {
        print_error("lithe_optimizer_new(%s): expected %s, got %s (\"%s\"), out %p\n", what, lithe_status_str(want),
                    lithe_status_str(s), lithe_last_error(), (void *)opt);
        fail();
    }
}

static void test_optimizer_errors(void **state) {
    (void)state;
    lithe_optimizer *opt = JUNK;
    lithe_optimizer_opts a = lithe_adam_defaults();
    FAILS(LITHE_ERR_INVALID_ARG, lithe_optimizer_new(NULL, &opt));
    OUT_NULL(opt, "lithe_optimizer_new(NULL opts)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_optimizer_new(&a, NULL));
    lithe_optimizer_opts o;
    o = a; o.beta1 = 1.5;          bad_opts(LITHE_ERR_VALUE, o, "beta1 1.5");
    o = a; o.beta1 = 1.0;          bad_opts(LITHE_ERR_VALUE, o, "beta1 1.0");
    o = a; o.beta1 = -0.1;         bad_opts(LITHE_ERR_VALUE, o, "beta1 -0.1");
    o = a; o.beta2 = 1.0;          bad_opts(LITHE_ERR_VALUE, o, "beta2 1.0");
    o = a; o.beta2 = NAN;          bad_opts(LITHE_ERR_VALUE, o, "beta2 NaN");
    o = a; o.learn_rate = -0.001;  bad_opts(LITHE_ERR_VALUE, o, "learn_rate -0.001");
    o = a; o.learn_rate = NAN;     bad_opts(LITHE_ERR_VALUE, o, "learn_rate NaN");
    o = a; o.eps = -1e-8;          bad_opts(LITHE_ERR_VALUE, o, "eps -1e-8");
    o = a; o.grad_clip = -1.0;     bad_opts(LITHE_ERR_VALUE, o, "grad_clip -1");
    o = a; o.L2 = -0.1;            bad_opts(LITHE_ERR_VALUE, o, "L2 -0.1");
    o = a; o.beta1 = 0.0;          bad_opts(LITHE_ERR_UNSUPPORTED, o, "beta1 0 with beta2 0.999");
    bad_opts(LITHE_ERR_VALUE, lithe_sgd_defaults(-0.5), "SGD learn_rate -0.5");
    o = lithe_sgd_defaults(0.1); o.beta2 = 0.9; bad_opts(LITHE_ERR_UNSUPPORTED, o, "SGD with beta2 0.9");
    lithe_optimizer_free(NULL);

    OK(lithe_optimizer_new(&a, &opt));
    FAILS(LITHE_ERR_VALUE, lithe_optimizer_set_learn_rate(opt, -1.0));
    FAILS(LITHE_ERR_VALUE, lithe_optimizer_set_learn_rate(opt, NAN));
    assert_true(lithe_optimizer_get_opts(opt).learn_rate == 0.001); /* unchanged */
    FAILS(LITHE_ERR_INVALID_ARG, lithe_optimizer_set_learn_rate(NULL, 0.1));
    lithe_optimizer_opts z = lithe_optimizer_get_opts(NULL);
    assert_true(z.learn_rate == 0.0);

    lithe_model *m = linear44();
    lithe_tensor *W = NULL, *g = f32(4, 4, 0.1f), *g5 = f32(5, 4, 0.1f), *gi = NULL;
    OK(lithe_tensor_new(NULL, LITHE_I32, 2, (int64_t[]){4, 4}, &gi));
    OK(lithe_model_get_param(m, "W", &W));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_optimizer_step(NULL, m, "W", W, g));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_optimizer_step(opt, NULL, "W", W, g));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_optimizer_step(opt, m, NULL, W, g));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_optimizer_step(opt, m, "W", NULL, g));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_optimizer_step(opt, m, "W", W, NULL));
    FAILS(LITHE_ERR_SHAPE, lithe_optimizer_step(opt, m, "W", W, g5));
    MSG_HAS("16");
    MSG_HAS("20");
    FAILS_ANY(lithe_optimizer_step(opt, m, "W", W, gi)); /* an int32 gradient */
    assert_int_equal(lithe_optimizer_nr_update(opt, m, "W"), 0); /* nothing half-done */
    assert_int_equal(lithe_optimizer_nr_update(NULL, m, "W"), 0);
    assert_int_equal(lithe_optimizer_nr_update(opt, NULL, "W"), 0);
    assert_int_equal(lithe_optimizer_nr_update(opt, m, NULL), 0);

    lithe_tensor *avg = JUNK;
    FAILS(LITHE_ERR_NOT_FOUND, lithe_optimizer_get_average(opt, m, "W", &avg));
    OUT_NULL(avg, "lithe_optimizer_get_average(none)");
    avg = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_optimizer_get_average(NULL, m, "W", &avg));
    OUT_NULL(avg, "lithe_optimizer_get_average(NULL)");
    FAILS(LITHE_ERR_INVALID_ARG, lithe_optimizer_get_average(opt, m, "W", NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_optimizer_swap_averages(NULL, m));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_optimizer_swap_averages(opt, NULL));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_finish_update(NULL, opt));
    FAILS(LITHE_ERR_INVALID_ARG, lithe_model_finish_update(m, NULL));

    lithe_tensor_release(g);
    lithe_tensor_release(g5);
    lithe_tensor_release(gi);
    lithe_model_free(m);
    lithe_optimizer_free(opt);
}

static void test_cce_errors(void **state) {
    (void)state;
    const float gd[6] = {0.2f, 0.3f, 0.5f, 0.1f, 0.1f, 0.8f};
    lithe_tensor *G = NULL, *T = NULL, *D = JUNK;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 3}, gd, &G));
    lithe_tensor *labels = i32v(2, (int32_t[]){2, 0});
    float loss = -1.0f;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_categorical_crossentropy(NULL, NULL, labels, &D, &loss));
    OUT_NULL(D, "lithe_categorical_crossentropy(NULL guesses)");
    assert_true(loss == -1.0f);
    D = JUNK;
    FAILS(LITHE_ERR_INVALID_ARG, lithe_categorical_crossentropy(NULL, G, NULL, &D, &loss));
    OUT_NULL(D, "lithe_categorical_crossentropy(NULL truths)");

    /* guesses outside [0, 1] */
    const float bad_hi[6] = {0.2f, 0.3f, 1.5f, 0.1f, 0.1f, 0.8f}, bad_lo[6] = {0.2f, -0.1f, 0.5f, 0.1f, 0.1f, 0.8f},
                bad_nan[6] = {0.2f, NAN, 0.5f, 0.1f, 0.1f, 0.8f};
    const float *bads[3] = {bad_hi, bad_lo, bad_nan};
    for (int k = 0; k < 3; k++) {
        lithe_tensor *B = NULL;
        OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 3}, bads[k], &B));
        D = JUNK;
        FAILS(LITHE_ERR_VALUE, lithe_categorical_crossentropy(NULL, B, labels, &D, &loss));
        OUT_NULL(D, "lithe_categorical_crossentropy(guess outside [0, 1])");
        lithe_tensor_release(B);
    }
    /* labels outside [0, C) */
    lithe_tensor *l3 = i32v(2, (int32_t[]){3, 0}), *lneg = i32v(2, (int32_t[]){0, -1}), *l64 = NULL;
    OK(lithe_tensor_from_data(LITHE_I64, 1, (int64_t[]){2}, (int64_t[]){0, 7}, &l64));
    D = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_categorical_crossentropy(NULL, G, l3, &D, &loss));
    OUT_NULL(D, "lithe_categorical_crossentropy(label 3 of 3)");
    MSG_HAS("3");
    D = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_categorical_crossentropy(NULL, G, lneg, &D, &loss));
    OUT_NULL(D, "lithe_categorical_crossentropy(label -1)");
    D = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_categorical_crossentropy(NULL, G, l64, &D, &loss));
    OUT_NULL(D, "lithe_categorical_crossentropy(int64 label 7)");
    /* a missing value outside the range is skipped, not refused */
    lithe_cce_opts miss = {.has_missing_value = true, .missing_value = -1};
    OK(lithe_categorical_crossentropy(&miss, G, lneg, &D, &loss));
    lithe_tensor_release(D);
    loss = -1.0f;
    /* label count */
    lithe_tensor *l1 = i32v(1, (int32_t[]){0});
    D = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_categorical_crossentropy(NULL, G, l1, &D, &loss));
    OUT_NULL(D, "lithe_categorical_crossentropy(1 label for 2 rows)");
    /* dtypes */
    lithe_tensor *Gi = NULL, *Tu8 = NULL;
    OK(lithe_tensor_new(NULL, LITHE_I32, 2, (int64_t[]){2, 3}, &Gi));
    OK(lithe_tensor_new(NULL, LITHE_U8, 1, (int64_t[]){2}, &Tu8));
    D = JUNK;
    FAILS(LITHE_ERR_DTYPE, lithe_categorical_crossentropy(NULL, Gi, labels, &D, &loss));
    OUT_NULL(D, "lithe_categorical_crossentropy(int32 guesses)");
    D = JUNK;
    FAILS(LITHE_ERR_DTYPE, lithe_categorical_crossentropy(NULL, G, Tu8, &D, &loss));
    OUT_NULL(D, "lithe_categorical_crossentropy(uint8 truths)");
    /* float targets */
    const float tgt_bad[6] = {0, 0, 1.5f, 1, 0, 0};
    lithe_tensor *Tb = NULL, *T23 = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){2, 3}, tgt_bad, &Tb));
    D = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_categorical_crossentropy(NULL, G, Tb, &D, &loss));
    OUT_NULL(D, "lithe_categorical_crossentropy(target 1.5)");
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){3, 2}, &T23));
    D = JUNK;
    FAILS(LITHE_ERR_SHAPE, lithe_categorical_crossentropy(NULL, G, T23, &D, &loss));
    OUT_NULL(D, "lithe_categorical_crossentropy(targets (3, 2) for (2, 3))");
    /* label smoothing */
    lithe_cce_opts sm = {.label_smoothing = -0.1f};
    D = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_categorical_crossentropy(&sm, G, labels, &D, &loss));
    OUT_NULL(D, "lithe_categorical_crossentropy(smoothing -0.1)");
    sm.label_smoothing = 0.7f; /* >= (C - 1) / C = 2/3 */
    D = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_categorical_crossentropy(&sm, G, labels, &D, &loss));
    OUT_NULL(D, "lithe_categorical_crossentropy(smoothing 0.7 for 3 classes)");
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){2, 3}, &T));
    sm.label_smoothing = 0.1f;
    D = JUNK;
    FAILS(LITHE_ERR_VALUE, lithe_categorical_crossentropy(&sm, G, T, &D, &loss));
    OUT_NULL(D, "lithe_categorical_crossentropy(smoothing with float targets)");
    assert_true(loss == -1.0f); /* no failure wrote the loss */
    /* both outputs may be NULL */
    OK(lithe_categorical_crossentropy(NULL, G, labels, NULL, NULL));

    lithe_tensor_release(G);
    lithe_tensor_release(T);
    lithe_tensor_release(labels);
    lithe_tensor_release(l3);
    lithe_tensor_release(lneg);
    lithe_tensor_release(l64);
    lithe_tensor_release(l1);
    lithe_tensor_release(Gi);
    lithe_tensor_release(Tu8);
    lithe_tensor_release(Tb);
    lithe_tensor_release(T23);
}

static void test_free_release_accept_null(void **state) {
    (void)state;
    lithe_tensor_release(NULL);
    lithe_value_release(NULL);
    lithe_model_free(NULL);
    lithe_backprop_free(NULL);
    lithe_optimizer_free(NULL);
    assert_null(lithe_tensor_retain(NULL));
    assert_null(lithe_value_retain(NULL));
    assert_null(lithe_model_retain(NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_status_str, check_out_pointers),
        cmocka_unit_test_teardown(test_last_error_and_version, check_out_pointers),
        cmocka_unit_test_teardown(test_set_allocator_rejects, check_out_pointers),
        cmocka_unit_test_teardown(test_backend_errors, check_out_pointers),
        cmocka_unit_test_teardown(test_tensor_new_errors, check_out_pointers),
        cmocka_unit_test_teardown(test_tensor_null_accessors, check_out_pointers),
        cmocka_unit_test_teardown(test_tensor_ops_errors, check_out_pointers),
        cmocka_unit_test_teardown(test_dlpack_errors, check_out_pointers),
        cmocka_unit_test_teardown(test_value_errors, check_out_pointers),
        cmocka_unit_test_teardown(test_rng_null, check_out_pointers),
        cmocka_unit_test_teardown(test_layer_constructor_errors, check_out_pointers),
        cmocka_unit_test_teardown(test_chain_errors, check_out_pointers),
        cmocka_unit_test_teardown(test_model_null_accessors, check_out_pointers),
        cmocka_unit_test_teardown(test_dims, check_out_pointers),
        cmocka_unit_test_teardown(test_params_and_grads, check_out_pointers),
        cmocka_unit_test_teardown(test_refs, check_out_pointers),
        cmocka_unit_test_teardown(test_attrs, check_out_pointers),
        cmocka_unit_test_teardown(test_set_dropout_rate, check_out_pointers),
        cmocka_unit_test_teardown(test_initialize_errors, check_out_pointers),
        cmocka_unit_test_teardown(test_forward_errors, check_out_pointers),
        cmocka_unit_test_teardown(test_attr_checked_at_forward, check_out_pointers),
        cmocka_unit_test_teardown(test_backprop_errors, check_out_pointers),
        cmocka_unit_test_teardown(test_optimizer_errors, check_out_pointers),
        cmocka_unit_test_teardown(test_cce_errors, check_out_pointers),
        cmocka_unit_test_teardown(test_free_release_accept_null, check_out_pointers),
        cmocka_unit_test_teardown(test_cast_bad_dtype_enum, check_out_pointers), /* last: see its comment */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
