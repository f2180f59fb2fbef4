/* Allocation-failure tests through the allocator hook (lithe_set_allocator).
 *
 * A counting allocator fails exactly the N-th allocation (malloc or realloc). For N = 1, 2, 3, ...
 * a whole training sequence runs — build chain(Relu(nO=8, dropout=0.2), Relu(nO=8), Softmax(nO=3)),
 * initialize with sample X (4, 5) and Y, begin_update, CategoricalCrossentropy, backprop, Adam
 * finish_update, predict, free everything — until N passes the number of allocations the
 * sequence makes. For each N:
 *   - the step that meets the failure returns LITHE_ERR_OOM (no crash, no other status), with a
 *     message, and its out-pointers NULL;
 *   - no step returns OK having swallowed the failure;
 *   - after freeing whatever was created, no allocation is left live (no leak).
 * A second pass retries the failed step once (the allocator fails only the N-th call) and runs
 * the sequence to its end: the result must equal a run without failures, bit for bit, which shows
 * that a failed call left its inputs as they were.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"
#include "failing_alloc.h"

/* ---- the counting allocator (failing_alloc.c) ---- */

static int install(void **state) {
    (void)state;
    return failing_alloc_install() == LITHE_OK ? 0 : -1;
}
static int uninstall(void **state) {
    (void)state;
    return failing_alloc_uninstall() == LITHE_OK ? 0 : -1;
}

/* ---- the sequence ---- */

enum { B = 4, NI = 5, NO = 3 };
static const float X_DATA[B * NI] = {0.1f, -0.2f, 0.3f, 0.4f,  -0.5f, 0.6f, 0.7f,  -0.8f, 0.9f, 1.0f,
                                     -1.1f, 1.2f, 0.3f, -0.4f, 0.5f,  0.6f, -0.7f, 0.8f,  0.9f, -1.0f};
static const float Y_DATA[B * NO] = {1, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0};
static const int32_t LABELS[B] = {0, 1, 2, 0};

typedef struct run {
    lithe_tensor *X, *Yoh, *labels, *d;
    lithe_value *xv, *yv, *Yp, *dv, *dX, *P;
    lithe_model *model;
    lithe_backprop *bp;
    lithe_optimizer *opt;
    float loss;
    float out[B * NO]; /* the final prediction */
} run;

enum {
    S_X, S_Y, S_LABELS, S_XV, S_YV, S_MODEL, S_INIT, S_UPDATE, S_LOSS, S_DV, S_BACKPROP, S_OPT, S_FINISH,
    S_PREDICT, S_READ, S_COUNT
};
static const char *const step_names[S_COUNT] = {
    "from_data X", "from_data Y", "from_data labels", "value X", "value Y", "build model", "initialize",
    "begin_update", "categorical_crossentropy", "value dY", "backprop", "optimizer_new", "finish_update",
    "predict", "read prediction",
};

/* Problems found, reported all at the end. */
static int n_wrong_status, n_no_message, n_out_set, n_swallowed, n_leaks, n_mismatch;


static char junk_obj;
#define JUNK ((void *)&junk_obj)

/* Out-pointers start as junk; a failed call must set them NULL. Never releases junk. */
static void out_check(long n, int step, const char *name, void **p) {
    if (*p == JUNK) {
        print_error("N=%ld, %s: failed without setting out-pointer %s to NULL\n", n, step_names[step], name);
        n_out_set++;
        *p = NULL;
    } else if (*p) {
        print_error("N=%ld, %s: failed but left out-pointer %s set\n", n, step_names[step], name);
        n_out_set++;
        *p = NULL; /* leaks it; the leak count will show it too */
    }
}
#define OUT(p) out_check(n, step, #p, (void **)&(p))

/* Builds the model; each of the five calls is checked. Frees what it made on failure. */
static lithe_status build_model(run *r, long n) {
    lithe_model *r1 = JUNK, *r2 = JUNK, *sm = JUNK;
    int step = S_MODEL;
    lithe_status s = lithe_relu(&(lithe_dense_opts){.nO = 8, .dropout = 0.2f}, &r1);
    if (s != LITHE_OK) {
        OUT(r1);
        return s;
    }
    s = lithe_relu(&(lithe_dense_opts){.nO = 8}, &r2);
    if (s != LITHE_OK) {
        OUT(r2);
        lithe_model_free(r1);
        return s;
    }
    s = lithe_softmax(&(lithe_softmax_opts){.nO = NO}, &sm);
    if (s != LITHE_OK) {
        OUT(sm);
        lithe_model_free(r1);
        lithe_model_free(r2);
        return s;
    }
    r->model = JUNK;
    s = lithe_chain(3, (lithe_model *[]){r1, r2, sm}, &r->model); /* owns the layers, also on failure */
    if (s != LITHE_OK) {
        OUT(r->model);
        return s;
    }
    s = lithe_model_set_seed(r->model, 1234);
    if (s != LITHE_OK) {
        lithe_model_free(r->model);
        r->model = NULL;
        return s;
    }
    return LITHE_OK;
}

static lithe_status do_step(int step, run *r, long n) {
    lithe_status s = LITHE_OK;
    switch (step) {
    case S_X:
        r->X = JUNK;
        s = lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){B, NI}, X_DATA, &r->X);
        if (s) OUT(r->X);
        break;
    case S_Y:
        r->Yoh = JUNK;
        s = lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){B, NO}, Y_DATA, &r->Yoh);
        if (s) OUT(r->Yoh);
        break;
    case S_LABELS:
        r->labels = JUNK;
        s = lithe_tensor_from_data(LITHE_I32, 1, (int64_t[]){B}, LABELS, &r->labels);
        if (s) OUT(r->labels);
        break;
    case S_XV:
        r->xv = JUNK;
        s = lithe_value_tensor(r->X, &r->xv);
        if (s) OUT(r->xv);
        break;
    case S_YV:
        r->yv = JUNK;
        s = lithe_value_tensor(r->Yoh, &r->yv);
        if (s) OUT(r->yv);
        break;
    case S_MODEL: s = build_model(r, n); break;
    case S_INIT: s = lithe_model_initialize(r->model, r->xv, r->yv); break;
    case S_UPDATE:
        r->Yp = JUNK;
        r->bp = JUNK;
        s = lithe_model_begin_update(r->model, r->xv, &r->Yp, &r->bp);
        if (s) {
            OUT(r->Yp);
            OUT(r->bp);
        }
        break;
    case S_LOSS:
        r->d = JUNK;
        s = lithe_categorical_crossentropy(NULL, lithe_value_get_tensor(r->Yp), r->labels, &r->d, &r->loss);
        if (s) OUT(r->d);
        break;
    case S_DV:
        r->dv = JUNK;
        s = lithe_value_tensor(r->d, &r->dv);
        if (s) OUT(r->dv);
        break;
    case S_BACKPROP:
        r->dX = JUNK;
        s = lithe_backprop_run(r->bp, r->dv, &r->dX);
        if (s) OUT(r->dX);
        break;
    case S_OPT: {
        lithe_optimizer_opts o = lithe_adam_defaults();
        r->opt = JUNK;
        s = lithe_optimizer_new(&o, &r->opt);
        if (s) OUT(r->opt);
        break;
    }
    case S_FINISH: s = lithe_model_finish_update(r->model, r->opt); break;
    case S_PREDICT:
        r->P = JUNK;
        s = lithe_model_predict(r->model, r->xv, &r->P);
        if (s) OUT(r->P);
        break;
    case S_READ: s = lithe_tensor_read(lithe_value_get_tensor(r->P), r->out, sizeof r->out); break;
    }
    return s;
}

static void cleanup(run *r) {
    lithe_value_release(r->P);
    lithe_optimizer_free(r->opt);
    lithe_value_release(r->dX);
    lithe_value_release(r->dv);
    lithe_tensor_release(r->d);
    lithe_backprop_free(r->bp);
    lithe_value_release(r->Yp);
    lithe_model_free(r->model);
    lithe_value_release(r->yv);
    lithe_value_release(r->xv);
    lithe_tensor_release(r->labels);
    lithe_tensor_release(r->Yoh);
    lithe_tensor_release(r->X);
    memset(r, 0, offsetof(run, loss));
}

/* Runs the sequence with the N-th allocation failing (0: none). With retry, a failed step is
 * run once more and the sequence goes on. Returns the index of the first failed step, or
 * S_COUNT when every step succeeded on its first try. */
static int run_sequence(long n, bool retry, run *r) {
    memset(r, 0, sizeof *r);
    failing_alloc_arm(n);
    int first_failed = S_COUNT;
    for (int step = 0; step < S_COUNT; step++) {
        int attempts = retry ? 2 : 1;
        lithe_status s = LITHE_OK;
        for (int a = 0; a < attempts; a++) {
            bool before = FA.failed;
            lithe_clear_error();

            s = do_step(step, r, n);
            bool hit = FA.failed && !before;
            if (s == LITHE_OK) {
                if (hit) {
                    print_error("N=%ld, %s: the allocation failed but the call returned LITHE_OK\n", n,
                                step_names[step]);
                    n_swallowed++;
                }
                break;
            }
            if (first_failed == S_COUNT) first_failed = step;
            if (s != LITHE_ERR_OOM || !hit) {
                print_error("N=%ld, %s: returned %s (\"%s\")%s\n", n, step_names[step], lithe_status_str(s),
                            lithe_last_error(), hit ? ", expected LITHE_ERR_OOM" : " without an allocation failure");
                n_wrong_status++;
            }
            if (!lithe_last_error()[0]) {
                print_error("N=%ld, %s: failed with %s and no message\n", n, step_names[step], lithe_status_str(s));
                n_no_message++;
            }
        }
        if (s != LITHE_OK) break;
    }
    return first_failed;
}

/* ---- tests ---- */

static void test_allocator_counts(void **state) {
    (void)state;
    failing_alloc_arm(0);
    long live0 = FA.live;
    lithe_tensor *t = NULL;
    assert_int_equal(lithe_tensor_new(NULL, LITHE_F32, 1, (int64_t[]){8}, &t), LITHE_OK);
    assert_true(FA.calls >= 1);
    assert_true(FA.live > live0);
    lithe_tensor_release(t);
    assert_int_equal(FA.live, live0);
    /* the very first allocation failing */
    failing_alloc_arm(1);
    t = JUNK;
    lithe_clear_error();
    assert_int_equal(lithe_tensor_new(NULL, LITHE_F32, 1, (int64_t[]){8}, &t), LITHE_ERR_OOM);
    assert_null(t);
    assert_true(lithe_last_error()[0] != '\0');
    assert_int_equal(FA.live, live0);
    failing_alloc_arm(0);
}

static void test_reference_run(void **state) {
    (void)state;
    run r;
    long live0 = FA.live;
    int failed = run_sequence(0, false, &r);
    assert_int_equal(failed, S_COUNT);
    print_message("the sequence makes %ld allocations\n", FA.calls);
    assert_true(FA.calls >= 50);
    for (int i = 0; i < B * NO; i++) assert_true(r.out[i] >= 0.0f && r.out[i] <= 1.0f);
    cleanup(&r);
    assert_int_equal(FA.live, live0);
}

static void test_every_allocation_failure(void **state) {
    (void)state;
    run r;
    long live0 = FA.live;
    n_wrong_status = n_no_message = n_out_set = n_swallowed = n_leaks = 0;
    long n;
    int per_step[S_COUNT] = {0};
    for (n = 1; n < 100000; n++) {
        int failed = run_sequence(n, false, &r);
        cleanup(&r);
        if (FA.live != live0) {
            print_error("N=%ld (failed in %s): %ld allocation(s) leaked\n", n,
                        failed < S_COUNT ? step_names[failed] : "no step", FA.live - live0);
            n_leaks++;
            FA.live = live0; /* report each N once */
        }
        if (failed == S_COUNT && !FA.failed) break; /* N is past the last allocation */
        if (failed < S_COUNT) per_step[failed]++;
    }
    long points = n - 1;
    print_message("%ld allocation failure points exercised\n", points);
    for (int s = 0; s < S_COUNT; s++)
        if (per_step[s]) print_message("  %-26s %d\n", step_names[s], per_step[s]);
    if (n_wrong_status || n_no_message || n_out_set || n_swallowed || n_leaks)
        print_error("%d wrong statuses, %d missing messages, %d out-pointers left set, %d swallowed failures, "
                    "%d leaks\n",
                    n_wrong_status, n_no_message, n_out_set, n_swallowed, n_leaks);
    assert_true(points >= 50);
    assert_int_equal(n_wrong_status, 0);
    assert_int_equal(n_no_message, 0);
    assert_int_equal(n_out_set, 0);
    assert_int_equal(n_swallowed, 0);
    assert_int_equal(n_leaks, 0);
}

static void test_recovery_after_failure(void **state) {
    (void)state;
    run ref, r;
    long live0 = FA.live;
    assert_int_equal(run_sequence(0, false, &ref), S_COUNT);
    float want[B * NO], want_loss = ref.loss;
    memcpy(want, ref.out, sizeof want);
    cleanup(&ref);
    n_wrong_status = n_no_message = n_out_set = n_swallowed = n_leaks = n_mismatch = 0;
    int differs[S_COUNT] = {0}, tried[S_COUNT] = {0};
    long first_n[S_COUNT] = {0};
    double worst[S_COUNT] = {0};
    long n;
    for (n = 1; n < 100000; n++) {
        int failed = run_sequence(n, true, &r);
        bool complete = r.P != NULL;
        if (failed < S_COUNT) tried[failed]++;
        /* initialize, begin_update and backprop are documented to leave a tree that is valid but
         * partly done (lithe.h); every other step must be exactly undone */
        bool exact = failed != S_INIT && failed != S_UPDATE && failed != S_BACKPROP;
        if (failed < S_COUNT && complete && exact &&
            (memcmp(r.out, want, sizeof want) != 0 || r.loss != want_loss)) {
            if (!differs[failed]) first_n[failed] = n;
            differs[failed]++;
            for (int i = 0; i < B * NO; i++) {
                double e = r.out[i] > want[i] ? r.out[i] - want[i] : want[i] - r.out[i];
                if (e > worst[failed]) worst[failed] = e;
            }
            n_mismatch++;
        }
        if (failed < S_COUNT && !complete) {
            print_error("N=%ld: the retry of %s did not let the sequence finish\n", n, step_names[failed]);
            n_mismatch++;
        }
        cleanup(&r);
        if (FA.live != live0) {
            print_error("N=%ld: %ld allocation(s) leaked after recovery\n", n, FA.live - live0);
            n_leaks++;
            FA.live = live0;
        }
        if (failed == S_COUNT && !FA.failed) break;
    }
    print_message("%ld failure points retried\n", n - 1);
    for (int st = 0; st < S_COUNT; st++)
        if (differs[st])
            print_error("a failed %s is half-done: after retrying it, %d of %d runs end with another prediction than "
                        "the run without failures (first at N=%ld, max |diff| %.3g); lithe.h promises a failed call "
                        "leaves its inputs as they were\n",
                        step_names[st], differs[st], tried[st], first_n[st], worst[st]);
    assert_true(n - 1 >= 50);
    assert_int_equal(n_wrong_status, 0);
    assert_int_equal(n_swallowed, 0);
    assert_int_equal(n_leaks, 0);
    assert_int_equal(n_mismatch, 0);
}

static void test_default_allocator_restored(void **state) {
    (void)state;
    assert_int_equal(lithe_set_allocator(NULL), LITHE_OK);
    long calls = FA.calls;
    lithe_tensor *t = NULL;
    assert_int_equal(lithe_tensor_new(NULL, LITHE_F32, 1, (int64_t[]){8}, &t), LITHE_OK);
    assert_int_equal(FA.calls, calls); /* not through the counting allocator any more */
    lithe_tensor_release(t);
}

/* backprop(dY, dX = NULL) must not compute the first layer's dX (the training step's dY·W GEMM
 * for the input, which a caller that discards it does not pay for): the same record run with and
 * without a dX makes fewer allocations without (the first layer's dX tensor and its value). */
static void test_backprop_skips_unwanted_dX(void **state) {
    (void)state;
    failing_alloc_arm(0);
    lithe_model *l1 = NULL, *l2 = NULL, *l3 = NULL, *m = NULL;
    assert_int_equal(lithe_relu(&(lithe_dense_opts){.nO = 8, .nI = NI}, &l1), LITHE_OK);
    assert_int_equal(lithe_relu(&(lithe_dense_opts){.nO = 8}, &l2), LITHE_OK);
    assert_int_equal(lithe_dense("Linear.v1", &(lithe_dense_opts){.nO = NO}, &l3), LITHE_OK);
    assert_int_equal(lithe_chain(3, (lithe_model *[]){l1, l2, l3}, &m), LITHE_OK);
    lithe_tensor *X = NULL, *dY = NULL;
    lithe_value *xv = NULL, *dv = NULL, *Y = NULL, *dX = NULL;
    assert_int_equal(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){B, NI}, X_DATA, &X), LITHE_OK);
    assert_int_equal(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){B, NO}, Y_DATA, &dY), LITHE_OK);
    assert_int_equal(lithe_value_tensor(X, &xv), LITHE_OK);
    assert_int_equal(lithe_value_tensor(dY, &dv), LITHE_OK);
    assert_int_equal(lithe_model_initialize(m, xv, NULL), LITHE_OK);
    lithe_backprop *bp = NULL;
    assert_int_equal(lithe_model_begin_update(m, xv, &Y, &bp), LITHE_OK);
    assert_int_equal(lithe_backprop_run(bp, dv, NULL), LITHE_OK); /* the grads are allocated here */
    long c0 = FA.calls;
    assert_int_equal(lithe_backprop_run(bp, dv, NULL), LITHE_OK);
    long without = FA.calls - c0;
    c0 = FA.calls;
    assert_int_equal(lithe_backprop_run(bp, dv, &dX), LITHE_OK);
    long with = FA.calls - c0;
    assert_non_null(dX);
    print_message("backprop allocations: %ld without dX, %ld with\n", without, with);
    assert_true(without < with);
    lithe_value_release(dX);
    lithe_backprop_free(bp);
    lithe_value_release(Y);
    lithe_value_release(xv);
    lithe_value_release(dv);
    lithe_tensor_release(X);
    lithe_tensor_release(dY);
    lithe_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_allocator_counts),
        cmocka_unit_test(test_reference_run),
        cmocka_unit_test(test_every_allocation_failure),
        cmocka_unit_test(test_recovery_after_failure),
        cmocka_unit_test(test_backprop_skips_unwanted_dX),
    };
    const struct CMUnitTest after[] = {
        cmocka_unit_test(test_default_allocator_restored),
    };
    int failed = cmocka_run_group_tests_name("oom", tests, install, uninstall);
    failed += cmocka_run_group_tests_name("oom_restore", after, NULL, NULL);
    return failed;
}
