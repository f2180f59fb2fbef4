/* Weights prepared for inference (lithe_model_prepare_inference, core/prepare.c).
 *
 * The model: chain(Relu(100), Mish(37), Maxout(20, nP=3), Linear(33), Softmax(10)) over 784
 * inputs — every kind of prepared weight (X·Wᵀ with and without the kept pre-activation Z, Maxout's
 * reshaped W, Softmax), K across the GEMM's K blocks, N not a multiple of any kernel's NR. Its
 * params are random (Softmax's start at zero).
 *   - bits: prepared predictions equal unprepared ones bit for bit at batch 1, 2, 7 and 64, with
 *     1 and 2 threads (the oracle is the unprepared path itself: the promise is identity);
 *   - snapshot: a write through a raw lithe_tensor_data pointer is not seen by a prepared predict
 *     (which proves predict reads the packed copy), is seen at is_train = true, and after another
 *     prepare call;
 *   - freshness: after lithe_tensor_write, a training step (finish_update), swapped-in averages
 *     and lithe_model_set_param, a predict gives the fresh weights' result (it would give the old
 *     one if a stale copy were read), and lithe_model_prepared_bytes shows the copies dropped;
 *   - allocation failure: every allocation prepare makes, failed in turn, gives LITHE_ERR_OOM with
 *     no prepared copy left and the model predicting as before; nothing leaks.
 * ASan (preset asan) runs it for the memory. */
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
#include "failing_alloc.h"

enum { NI = 784, NOUT = 10 };

static lithe_tensor *random_tensor(int ndim, const int64_t *shape, uint64_t seed, float scale) {
    lithe_tensor *t = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, ndim, shape, &t));
    lithe_rng rng = {seed, 0};
    float *d = lithe_tensor_data(t);
    size_t n = (size_t)lithe_tensor_numel(t);
    lithe_rng_uniform(&rng, d, n);
    for (size_t i = 0; i < n; i++) d[i] = scale * (2.0f * d[i] - 1.0f);
    return t;
}

/* Every param of the tree overwritten with uniform values in [-scale, scale]. */
static void randomize(lithe_model *m, uint64_t seed, float scale) {
    lithe_model *nodes[32];
    size_t n = 0;
    OK(lithe_model_walk(m, nodes, 32, &n));
    assert_true(n <= 32);
    for (size_t i = 0; i < n; i++)
        for (size_t p = 0; p < lithe_model_n_params(nodes[i]); p++) {
            lithe_tensor *W = NULL;
            OK(lithe_model_get_param(nodes[i], lithe_model_param_name(nodes[i], p), &W));
            lithe_tensor *r = random_tensor(lithe_tensor_ndim(W), lithe_tensor_shape(W), seed++, scale);
            OK(lithe_tensor_write(W, lithe_tensor_data(r), sizeof(float) * (size_t)lithe_tensor_numel(W)));
            lithe_tensor_release(r);
        }
}

static lithe_model *build(void) {
    lithe_model *l[5] = {0}, *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 100}, &l[0]));
    OK(lithe_dense("Mish.v1", &(lithe_dense_opts){.nO = 37}, &l[1]));
    OK(lithe_dense("Maxout.v1", &(lithe_dense_opts){.nO = 20, .nP = 3}, &l[2]));
    OK(lithe_linear(&(lithe_dense_opts){.nO = 33}, &l[3]));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = NOUT}, &l[4]));
    OK(lithe_chain(5, l, &m));
    lithe_tensor *x = random_tensor(2, (int64_t[]){4, NI}, 1, 1.0f);
    lithe_value *X = NULL;
    OK(lithe_value_tensor(x, &X));
    OK(lithe_model_initialize(m, X, NULL));
    lithe_value_release(X);
    lithe_tensor_release(x);
    randomize(m, 100, 0.1f);
    return m;
}

static lithe_value *input(int64_t B, uint64_t seed) {
    lithe_tensor *x = random_tensor(2, (int64_t[]){B, NI}, seed, 1.0f);
    lithe_value *X = NULL;
    OK(lithe_value_tensor(x, &X));
    lithe_tensor_release(x);
    return X;
}

/* The output of a forward (predict, or is_train = true), copied out: B * NOUT floats. */
static float *run(lithe_model *m, const lithe_value *X, bool is_train) {
    lithe_value *Y = NULL;
    OK(lithe_model_forward(m, X, is_train, &Y, NULL));
    lithe_tensor *y = lithe_value_get_tensor(Y);
    size_t n = (size_t)lithe_tensor_numel(y);
    float *out = malloc(n * sizeof *out);
    assert_non_null(out);
    OK(lithe_tensor_read(y, out, n * sizeof *out));
    lithe_value_release(Y);
    return out;
}
static float *predict(lithe_model *m, const lithe_value *X) { return run(m, X, false); }

/* What an unprepared model predicts now (the prepared copies dropped, then the result). */
static float *reference(lithe_model *m, const lithe_value *X) {
    lithe_model_release_prepared(m);
    assert_int_equal(lithe_model_prepared_bytes(m), 0);
    return predict(m, X);
}

static bool same(const float *a, const float *b, int64_t B) {
    return memcmp(a, b, sizeof(float) * (size_t)(B * NOUT)) == 0;
}

/* The weight W of the first Relu (borrowed). */
static lithe_tensor *first_W(lithe_model *m) {
    lithe_tensor *W = NULL;
    OK(lithe_model_get_param(lithe_model_layer(m, 0), "W", &W));
    return W;
}

/* Bytes every prepared weight holds at least: one float per element of each W. */
static size_t min_prepared_bytes(void) { return sizeof(float) * (100 * NI + 37 * 100 + 60 * 37 + 33 * 20 + NOUT * 33); }

static void test_bits(void **state) {
    (void)state;
    lithe_backend *cpu = NULL;
    OK(lithe_backend_get("cpu", &cpu));
    lithe_model *m = build();
    static const int64_t batches[] = {1, 2, 7, 64};
    for (int threads = 1; threads <= 2; threads++) {
        OK(lithe_backend_set_threads(cpu, threads));
        for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
            int64_t B = batches[b];
            lithe_value *X = input(B, 7 + (uint64_t)B);
            float *plain = predict(m, X);
            OK(lithe_model_prepare_inference(m));
            assert_true(lithe_model_prepared_bytes(m) >= min_prepared_bytes());
            float *prepared = predict(m, X);
            if (!same(plain, prepared, B)) {
                for (int64_t i = 0; i < B * NOUT; i++)
                    if (plain[i] != prepared[i]) {
                        print_error("batch %lld, %d threads: Y[%lld] prepared %.9g, unprepared %.9g\n", (long long)B,
                                    threads, (long long)i, prepared[i], plain[i]);
                        break;
                    }
                fail();
            }
            /* a second prepare re-makes every copy (the same size); predictions still the same bits */
            size_t bytes = lithe_model_prepared_bytes(m);
            OK(lithe_model_prepare_inference(m));
            assert_int_equal(lithe_model_prepared_bytes(m), bytes);
            float *again = predict(m, X);
            assert_true(same(plain, again, B));
            lithe_model_release_prepared(m);
            assert_int_equal(lithe_model_prepared_bytes(m), 0);
            free(plain);
            free(prepared);
            free(again);
            lithe_value_release(X);
        }
    }
    OK(lithe_backend_set_threads(cpu, 0));
    lithe_model_free(m);
}

static void test_snapshot(void **state) {
    (void)state;
    lithe_model *m = build();
    lithe_value *X = input(7, 3);
    OK(lithe_model_prepare_inference(m));
    float *before = predict(m, X);
    /* a write lithe cannot see: through the raw pointer */
    lithe_tensor *W = first_W(m);
    float *w = lithe_tensor_data(W);
    for (int64_t i = 0; i < lithe_tensor_numel(W); i++) w[i] = -2.0f * w[i];
    float *stale = predict(m, X);
    assert_true(same(before, stale, 7)); /* predict read the prepared copy: the documented snapshot */
    float *trained = run(m, X, true);   /* is_train never reads it */
    assert_false(same(before, trained, 7));
    OK(lithe_model_prepare_inference(m)); /* another call: a fresh snapshot of the new values */
    float *fresh = predict(m, X);
    float *ref = reference(m, X);
    assert_true(same(fresh, ref, 7));
    assert_true(same(trained, ref, 7));
    free(before);
    free(stale);
    free(trained);
    free(fresh);
    free(ref);
    lithe_value_release(X);
    lithe_model_free(m);
}

static void test_fresh_after_writes(void **state) {
    (void)state;
    lithe_model *m = build();
    const int64_t B = 7;
    lithe_value *X = input(B, 5);

    /* lithe_tensor_write */
    OK(lithe_model_prepare_inference(m));
    size_t all = lithe_model_prepared_bytes(m);
    float *before = predict(m, X);
    lithe_tensor *W = first_W(m), *r = random_tensor(2, lithe_tensor_shape(W), 99, 0.1f);
    OK(lithe_tensor_write(W, lithe_tensor_data(r), sizeof(float) * (size_t)lithe_tensor_numel(W)));
    assert_true(lithe_model_prepared_bytes(m) <= all - sizeof(float) * 100 * NI); /* W's copy gone */
    assert_true(lithe_model_prepared_bytes(m) > 0);                              /* the others kept */
    float *after = predict(m, X), *ref = reference(m, X);
    assert_false(same(before, after, B));
    assert_true(same(after, ref, B));
    free(before);
    free(after);
    free(ref);
    lithe_tensor_release(r);

    /* a training step: begin_update, backprop, finish_update (SGD) */
    lithe_optimizer_opts oo = lithe_adam_defaults();
    oo.learn_rate = 0.05;
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&oo, &opt));
    OK(lithe_model_prepare_inference(m));
    before = predict(m, X);
    lithe_value *Y = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    lithe_tensor *dy = random_tensor(2, (int64_t[]){B, NOUT}, 11, 1.0f);
    lithe_value *dY = NULL;
    OK(lithe_value_tensor(dy, &dY));
    OK(lithe_backprop_run(bp, dY, &dX));
    OK(lithe_model_finish_update(m, opt));
    assert_int_equal(lithe_model_prepared_bytes(m), 0); /* every weight was stepped */
    after = predict(m, X);
    ref = reference(m, X);
    assert_false(same(before, after, B));
    assert_true(same(after, ref, B));
    free(before);
    free(after);
    free(ref);

    /* averages swapped in and out */
    OK(lithe_model_prepare_inference(m));
    before = predict(m, X);
    OK(lithe_optimizer_swap_averages(opt, m));
    after = predict(m, X);
    ref = reference(m, X);
    assert_true(same(after, ref, B));
    assert_false(same(before, after, B));
    OK(lithe_model_prepare_inference(m)); /* the averages prepared... */
    float *avg = predict(m, X);
    assert_true(same(avg, ref, B));
    OK(lithe_optimizer_swap_averages(opt, m)); /* ...and the originals back */
    float *back = predict(m, X);
    assert_true(same(back, before, B));
    free(before);
    free(after);
    free(ref);
    free(avg);
    free(back);

    /* lithe_model_set_param with a new tensor */
    OK(lithe_model_prepare_inference(m));
    before = predict(m, X);
    lithe_tensor *W2 = random_tensor(2, (int64_t[]){100, NI}, 1234, 0.1f);
    OK(lithe_model_set_param(lithe_model_layer(m, 0), "W", W2));
    after = predict(m, X);
    ref = reference(m, X);
    assert_false(same(before, after, B));
    assert_true(same(after, ref, B));
    free(before);
    free(after);
    free(ref);
    lithe_tensor_release(W2);

    lithe_tensor_release(dy);
    lithe_value_release(dY);
    lithe_value_release(dX);
    lithe_value_release(Y);
    lithe_backprop_free(bp);
    lithe_optimizer_free(opt);
    lithe_value_release(X);
    lithe_model_free(m);
}

static void test_oom(void **state) {
    (void)state;
    OK(failing_alloc_install());
    lithe_model *m = build();
    lithe_value *X = input(7, 9);
    float *ref = predict(m, X);
    long n = 0;
    for (long N = 1;; N++) {
        assert_true(N < 1000);
        failing_alloc_arm(N);
        lithe_status s = lithe_model_prepare_inference(m);
        bool failed = FA.failed;
        failing_alloc_arm(0);
        if (!failed) {
            OK(s);
            n = N - 1;
            break;
        }
        assert_int_equal(s, LITHE_ERR_OOM);
        assert_int_equal(lithe_model_prepared_bytes(m), 0); /* all or nothing */
        float *y = predict(m, X);
        assert_true(same(y, ref, 7));
        free(y);
    }
    assert_true(n >= 5); /* a record and a packed copy per weight, at least */
    assert_true(lithe_model_prepared_bytes(m) >= min_prepared_bytes());
    float *y = predict(m, X);
    assert_true(same(y, ref, 7));
    free(y);
    free(ref);
    lithe_value_release(X);
    lithe_model_free(m);
    assert_int_equal(FA.live, 0); /* the prepared copies went with the model */
    OK(failing_alloc_uninstall());
}

/* A backend without prepared forms (Vulkan on lavapipe, when this build and machine have it):
 * prepare is a successful no-op and predictions are unchanged; moving back to the CPU, the
 * new CPU tensors are unprepared until the next call. */
static void test_other_backend(void **state) {
    (void)state;
    lithe_backend *vk = NULL;
    if (lithe_backend_get("vulkan", &vk) != LITHE_OK) {
        printf("test_prepare: no Vulkan backend here (%s); skipped that part\n", lithe_last_error());
        return;
    }
    lithe_model *m = build();
    lithe_value *X = input(7, 13);
    OK(lithe_model_prepare_inference(m));
    assert_true(lithe_model_prepared_bytes(m) > 0);
    OK(lithe_model_set_backend(m, vk));
    assert_int_equal(lithe_model_prepared_bytes(m), 0); /* the CPU copies went with the CPU tensors */
    lithe_value *Xd = NULL, *Y0 = NULL, *Y1 = NULL;
    lithe_tensor *xd = NULL;
    OK(lithe_tensor_to_backend(lithe_value_get_tensor(X), vk, &xd));
    OK(lithe_value_tensor(xd, &Xd));
    OK(lithe_model_predict(m, Xd, &Y0));
    OK(lithe_model_prepare_inference(m));
    assert_int_equal(lithe_model_prepared_bytes(m), 0);
    OK(lithe_model_predict(m, Xd, &Y1));
    float a[7 * NOUT], b[7 * NOUT];
    OK(lithe_tensor_read(lithe_value_get_tensor(Y0), a, sizeof a));
    OK(lithe_tensor_read(lithe_value_get_tensor(Y1), b, sizeof b));
    assert_memory_equal(a, b, sizeof a);
    lithe_backend *cpu = NULL;
    OK(lithe_backend_get("cpu", &cpu));
    OK(lithe_model_set_backend(m, cpu));
    assert_int_equal(lithe_model_prepared_bytes(m), 0);
    float *plain = predict(m, X);
    OK(lithe_model_prepare_inference(m));
    float *prepared = predict(m, X);
    assert_true(same(plain, prepared, 7));
    free(plain);
    free(prepared);
    lithe_value_release(Y0);
    lithe_value_release(Y1);
    lithe_value_release(Xd);
    lithe_tensor_release(xd);
    lithe_value_release(X);
    lithe_model_free(m);
}

static void test_args(void **state) {
    (void)state;
    assert_int_equal(lithe_model_prepare_inference(NULL), LITHE_ERR_INVALID_ARG);
    lithe_model_release_prepared(NULL);
    assert_int_equal(lithe_model_prepared_bytes(NULL), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bits), cmocka_unit_test(test_snapshot), cmocka_unit_test(test_fresh_after_writes),
        cmocka_unit_test(test_oom),  cmocka_unit_test(test_other_backend), cmocka_unit_test(test_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
