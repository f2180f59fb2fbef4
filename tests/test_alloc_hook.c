/* Every host allocation lithe makes goes through the allocator hook (lithe_set_allocator), shown
 * by two counts: the hook's, and a malloc interposer's. This test is linked with
 * -Wl,--wrap=malloc,... (tests/CMakeLists.txt), so every call lithe's own code makes to malloc,
 * calloc, realloc, aligned_alloc, posix_memalign or strdup lands in __wrap_* below and is counted
 * as a bypass; the hook allocator calls __real_malloc, which is not. A training step (GEMMs
 * forward and backward, Adam) and a GEMM-heavy prediction (prepared weights, 4 pool threads
 * claiming packing workspaces) run with the N-th hook allocation failing for N = 1, 2, ...: each
 * run must fail with LITHE_ERR_OOM (or pass once N is past the last), leave no block live, and make
 * no bypass. The thread pool's bookkeeping (made once, when the pool is built; its threads' stacks
 * come from the C library anyway) and the CUDA backend's per-device bookkeeping are outside the
 * promise (include/lithe.h), so the pool is built before counting starts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"

/* ---- the interposer: lithe's direct calls to the C library's allocator ---- */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__real_aligned_alloc(size_t align, size_t n);
int __real_posix_memalign(void **p, size_t align, size_t n);
char *__real_strdup(const char *s);

static _Atomic long bypass;

void *__wrap_malloc(size_t n) {
    atomic_fetch_add(&bypass, 1);
    return __real_malloc(n);
}
void *__wrap_calloc(size_t n, size_t size) {
    atomic_fetch_add(&bypass, 1);
    return __real_calloc(n, size);
}
void *__wrap_realloc(void *p, size_t n) {
    atomic_fetch_add(&bypass, 1);
    return __real_realloc(p, n);
}
void __wrap_free(void *p) { __real_free(p); }
void *__wrap_aligned_alloc(size_t align, size_t n) {
    atomic_fetch_add(&bypass, 1);
    return __real_aligned_alloc(align, n);
}
int __wrap_posix_memalign(void **p, size_t align, size_t n) {
    atomic_fetch_add(&bypass, 1);
    return __real_posix_memalign(p, align, n);
}
char *__wrap_strdup(const char *s) {
    atomic_fetch_add(&bypass, 1);
    return __real_strdup(s);
}

/* ---- the hook: counts, fails the N-th allocation ---- */
static _Atomic long calls, live, fail_at;
static _Atomic bool failed;

static void *h_malloc(void *u, size_t n) {
    (void)u;
    if (atomic_fetch_add(&calls, 1) + 1 == atomic_load(&fail_at)) {
        failed = true;
        return NULL;
    }
    void *p = __real_malloc(n);
    if (p) live++;
    return p;
}
static void *h_realloc(void *u, void *p, size_t n) {
    (void)u;
    if (atomic_fetch_add(&calls, 1) + 1 == atomic_load(&fail_at)) {
        failed = true;
        return NULL;
    }
    void *q = __real_realloc(p, n);
    if (q && !p) live++;
    return q;
}
static void h_free(void *u, void *p) {
    (void)u;
    if (p) {
        live--;
        __real_free(p);
    }
}

#define OK(expr)                                                                                   \
    do {                                                                                           \
        lithe_status st_ = (expr);                                                                 \
        if (st_ != LITHE_OK) return st_;                                                           \
    } while (0)

static lithe_status input(int64_t B, int64_t n, float scale, lithe_value **out) {
    lithe_tensor *t = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){B, n}, &t));
    float *x = lithe_tensor_data(t);
    for (int64_t i = 0; i < B * n; i++) x[i] = scale * (float)((i * 7919) % 23 - 11);
    lithe_status s = lithe_value_tensor(t, out);
    lithe_tensor_release(t);
    return s;
}

/* chain(Relu(nO, nI), Relu(nO, nO), Softmax(10)) */
static lithe_status mlp(int64_t nI, int64_t nO, lithe_model **out) {
    lithe_model *a = NULL, *b = NULL, *c = NULL;
    lithe_status s = lithe_relu(&(lithe_dense_opts){.nO = nO, .nI = nI}, &a);
    if (s == LITHE_OK) s = lithe_relu(&(lithe_dense_opts){.nO = nO, .nI = nO}, &b);
    if (s == LITHE_OK) s = lithe_softmax(&(lithe_softmax_opts){.nO = 10, .nI = nO}, &c);
    if (s != LITHE_OK) {
        lithe_model_free(a);
        lithe_model_free(b);
        return s;
    }
    return lithe_chain(3, (lithe_model *[]){a, b, c}, out);
}

static lithe_status training_step(void) {
    lithe_model *m = NULL;
    lithe_value *X = NULL, *Y = NULL, *dY = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    lithe_optimizer *opt = NULL;
    lithe_optimizer_opts o = lithe_adam_defaults();
    lithe_status s = mlp(96, 128, &m);
    if (s == LITHE_OK) s = input(64, 96, 0.05f, &X);
    if (s == LITHE_OK) s = lithe_model_initialize(m, X, NULL);
    if (s == LITHE_OK) s = lithe_model_begin_update(m, X, &Y, &bp);
    if (s == LITHE_OK) s = input(64, 10, 0.01f, &dY);
    if (s == LITHE_OK) s = lithe_backprop_run(bp, dY, &dX);
    if (s == LITHE_OK) s = lithe_optimizer_new(&o, &opt);
    if (s == LITHE_OK) s = lithe_model_finish_update(m, opt);
    lithe_optimizer_free(opt);
    lithe_backprop_free(bp);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(dY);
    lithe_value_release(dX);
    lithe_model_free(m);
    return s;
}

static lithe_status gemm_prediction(void) {
    lithe_model *m = NULL;
    lithe_value *X = NULL, *Y = NULL, *Y2 = NULL;
    lithe_status s = mlp(256, 384, &m);
    if (s == LITHE_OK) s = input(192, 256, 0.02f, &X);
    if (s == LITHE_OK) s = lithe_model_initialize(m, X, NULL);
    if (s == LITHE_OK) s = lithe_model_predict(m, X, &Y); /* packs B per call: workspaces */
    if (s == LITHE_OK) s = lithe_model_prepare_inference(m); /* packed weights */
    if (s == LITHE_OK) s = lithe_model_predict(m, X, &Y2);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_value_release(Y2);
    lithe_model_free(m);
    return s;
}

static void sweep(lithe_status (*scenario)(void), const char *what) {
    long total = 0;
    for (long at = 1; at < 100000; at++) {
        atomic_store(&fail_at, at);
        calls = 0;
        failed = false;
        bypass = 0;
        lithe_status s = scenario();
        if (bypass != 0) {
            print_error("%s, allocation %ld failing: %ld allocations bypassed the hook\n", what, at, (long)bypass);
            fail();
        }
        if (live != 0) {
            print_error("%s, allocation %ld failing: %ld blocks leaked\n", what, at, (long)live);
            fail();
        }
        if (!failed) {
            if (s != LITHE_OK) print_error("%s: %s\n", what, lithe_last_error());
            assert_int_equal(s, LITHE_OK);
            total = calls;
            break;
        }
        if (s != LITHE_ERR_OOM) {
            print_error("%s, allocation %ld failing: got %s (%s)\n", what, at, lithe_status_str(s), lithe_last_error());
            fail();
        }
    }
    assert_true(total > 20); /* it did allocate: the counts above mean something */
    print_message("%s: %ld allocations, every one through the hook, each failed once\n", what, total);
}

static void test_every_allocation_through_the_hook(void **state) {
    (void)state;
    lithe_backend *cpu = NULL;
    assert_int_equal(lithe_backend_get("cpu", &cpu), LITHE_OK);
    assert_int_equal(lithe_backend_set_threads(cpu, 4), LITHE_OK); /* the pool, before counting */
    assert_int_equal(lithe_set_allocator(&(lithe_allocator){h_malloc, h_realloc, h_free, NULL}), LITHE_OK);
    sweep(training_step, "training step");
    sweep(gemm_prediction, "GEMM-heavy prediction");
    assert_int_equal(lithe_set_allocator(NULL), LITHE_OK);
    /* the interposer sees lithe's own calls: the C library's allocator is malloc */
    bypass = 0;
    assert_int_equal(gemm_prediction(), LITHE_OK);
    assert_true(bypass > 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_allocation_through_the_hook)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
