/* Fine-tuning on a memory budget (issue 26): frozen params get no gradient buffer and no optimizer
 * state and chain's backprop skips the frozen layers below (the grads of the trainable part equal
 * a full backward's); a recomputing chain keeps less and gives identical grads; training steps
 * after the first take no new block from the allocator; the memory plan is within 25% of the
 * measured peak; a step over the budget is refused with the figures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lithe.h"

#define OK(x) assert_int_equal((x), LITHE_OK)
enum { NI = 64, NH = 96, NOUT = 10 };

static int n_backprops; /* the first layer's backprops run (with_debug hook) */
static void on_bp(void *user, lithe_model *m, const lithe_value *dY) {
    (void)user, (void)m, (void)dY;
    n_backprops++;
}

/* Relu(NI->NH) >> [Dropout] >> Relu(NH->NH) >> Softmax(NH->NOUT), seeded; layers out (borrowed). */
static lithe_model *mlp(float dropout, lithe_model **layers) {
    lithe_model *l[3] = {0}, *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = NH, .nI = NI, .dropout = dropout}, &l[0]));
    OK(lithe_relu(&(lithe_dense_opts){.nO = NH, .nI = NH}, &l[1]));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = NOUT, .nI = NH}, &l[2]));
    lithe_model *dbg = NULL;
    OK(lithe_with_debug(l[0], &(lithe_debug_hooks){.on_backprop = on_bp}, &dbg));
    OK(lithe_chain(3, l, &m));
    lithe_tensor *X = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){2, NI}, &X));
    lithe_value *xv = NULL;
    OK(lithe_value_tensor(X, &xv));
    OK(lithe_model_initialize(m, xv, NULL));
    lithe_value_release(xv);
    lithe_tensor_release(X);
    if (layers) memcpy(layers, l, sizeof l);
    return m;
}

static lithe_value *batch(int64_t B, unsigned seed) {
    float *h = malloc((size_t)B * NI * sizeof *h);
    for (int64_t i = 0; i < B * NI; i++) h[i] = (float)((i * 7919 + seed * 104729) % 1000) / 500.0f - 1.0f;
    lithe_tensor *X = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){B, NI}, h, &X));
    free(h);
    lithe_value *v = NULL;
    OK(lithe_value_tensor(X, &v));
    lithe_tensor_release(X);
    return v;
}

/* Forward + backprop with dY = Y - onehot-ish, dX not wanted (a training loop's step). */
static void fwd_bwd(lithe_model *m, lithe_value *xv) {
    lithe_value *yv = NULL, *dyv = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, xv, &yv, &bp));
    lithe_tensor *Y = lithe_value_get_tensor(yv), *dY = NULL;
    int64_t n = lithe_tensor_numel(Y);
    float *h = malloc((size_t)n * sizeof *h);
    OK(lithe_tensor_read(Y, h, (size_t)n * sizeof *h));
    for (int64_t i = 0; i < n; i++) h[i] -= (i % NOUT == 3) ? 1.0f : 0.0f;
    OK(lithe_tensor_from_data(LITHE_F32, 2, lithe_tensor_shape(Y), h, &dY));
    free(h);
    OK(lithe_value_tensor(dY, &dyv));
    OK(lithe_backprop_run(bp, dyv, NULL));
    lithe_value_release(dyv);
    lithe_tensor_release(dY);
    lithe_backprop_free(bp);
    lithe_value_release(yv);
}

static void read_grad(lithe_model *node, const char *name, float *out, size_t n) {
    lithe_tensor *g = NULL;
    OK(lithe_model_get_grad(node, name, &g));
    OK(lithe_tensor_read(g, out, n * sizeof *out));
}

/* Frozen: no grad buffers, no optimizer state, the first layer's backprop not run, and the
 * trainable grads bit-identical to a full backward's. Fails on the old code (6 grad buffers,
 * 2 backprops of the first layer). */
static void test_frozen(void **state) {
    (void)state;
    lithe_model *lf[3];
    lithe_model *full = mlp(0.0f, lf), *fro = NULL;
    OK(lithe_model_copy(full, &fro)); /* the same weights */
    lithe_model *mid = NULL;
    OK(lithe_model_copy(full, &mid));
    lithe_model *lt[3] = {lithe_model_layer(fro, 0), lithe_model_layer(fro, 1), lithe_model_layer(fro, 2)};
    lithe_model *dbg = NULL;
    OK(lithe_with_debug(lt[0], &(lithe_debug_hooks){.on_backprop = on_bp}, &dbg));
    OK(lithe_model_set_frozen(lt[0], NULL, true)); /* by node: a subtree */
    size_t n = 0;
    OK(lithe_model_freeze_matching(fro, "relu*/?", true, &n)); /* by pattern: node/param */
    assert_true(n >= 2);
    assert_true(lithe_model_is_frozen(lt[1], "W") && lithe_model_is_frozen(lt[1], "b"));
    assert_false(lithe_model_is_frozen(lt[2], "W"));
    assert_int_equal(lithe_model_freeze_matching(fro, "nothing*", true, NULL), LITHE_ERR_NOT_FOUND);
    lithe_value *xv = batch(16, 1);
    n_backprops = 0;
    fwd_bwd(full, xv);
    assert_int_equal(n_backprops, 1);
    fwd_bwd(fro, xv);
    assert_int_equal(n_backprops, 1); /* the frozen first layer's backprop did not run */
    size_t gb = 0;
    assert_int_equal(lithe_model_grad_count(full, NULL), 6);
    assert_int_equal(lithe_model_grad_count(fro, &gb), 2); /* Softmax W and b only */
    assert_int_equal(gb, (NOUT * NH + NOUT) * sizeof(float));
    float a[NOUT * NH], b[NOUT * NH];
    read_grad(lf[2], "W", a, NOUT * NH);
    read_grad(lt[2], "W", b, NOUT * NH);
    assert_memory_equal(a, b, sizeof a);
    read_grad(lf[2], "b", a, NOUT);
    read_grad(lt[2], "b", b, NOUT);
    assert_memory_equal(a, b, NOUT * sizeof *a);
    lithe_optimizer *opt = NULL;
    lithe_optimizer_opts o = lithe_adam_defaults();
    OK(lithe_optimizer_new(&o, &opt));
    OK(lithe_model_finish_update(fro, opt));
    size_t sb = 0;
    assert_int_equal(lithe_optimizer_state_count(opt, &sb), 2);
    assert_int_equal(sb, 3 * (NOUT * NH + NOUT) * sizeof(float)); /* two moments and the average */
    /* the plan counts the same */
    lithe_train_memory p;
    OK(lithe_model_plan_train(fro, xv, 16, opt, &p));
    assert_int_equal(p.grads, gb);
    assert_int_equal(p.opt_state, sb);
    assert_true(lithe_model_has_trainable(fro) && !lithe_model_has_trainable(lt[0]));
    /* a frozen layer in the middle: its backprop runs (the first layer needs its dX) but it makes
     * no gradient buffer (fails when the dense layer accumulates into one all the same) */
    OK(lithe_model_set_frozen(lithe_model_layer(mid, 1), NULL, true));
    fwd_bwd(mid, xv);
    assert_int_equal(lithe_model_grad_count(mid, NULL), 4);
    assert_false(lithe_model_has_grad(lithe_model_layer(mid, 1), "W"));
    read_grad(lithe_model_layer(mid, 2), "W", b, NOUT * NH);
    read_grad(lf[2], "W", a, NOUT * NH);
    assert_memory_equal(a, b, sizeof a);
    lithe_model_free(mid);
    lithe_optimizer_free(opt);
    lithe_value_release(xv);
    lithe_model_free(full);
    lithe_model_free(fro);
}

/* Every grad of the tree, depth first, into out (n floats at most); the count. */
static size_t all_grads(lithe_model *m, float *out, size_t cap) {
    size_t k = 0;
    for (size_t p = 0; p < lithe_model_n_params(m); p++) {
        lithe_tensor *g = NULL;
        if (lithe_model_get_grad(m, lithe_model_param_name(m, p), &g) != LITHE_OK) continue;
        size_t n = (size_t)lithe_tensor_numel(g);
        assert_true(k + n <= cap);
        OK(lithe_tensor_read(g, out + k, n * sizeof *out));
        k += n;
    }
    for (size_t i = 0; i < lithe_model_n_layers(m); i++) k += all_grads(lithe_model_layer(m, i), out + k, cap - k);
    return k;
}

/* Recomputation: three segments of two Relu>>Dropout layers; identical grads (the dropout masks
 * replayed), a smaller high-water mark. */
static void test_recompute(void **state) {
    (void)state;
    lithe_model *seg[3];
    for (int k = 0; k < 3; k++) {
        lithe_model *l[2];
        for (int j = 0; j < 2; j++) OK(lithe_relu(&(lithe_dense_opts){.nO = NH, .nI = k + j ? NH : NI, .dropout = 0.25f}, &l[j]));
        OK(lithe_chain(2, l, &seg[k]));
    }
    lithe_model *m = NULL;
    OK(lithe_chain(3, seg, &m));
    lithe_value *xv = batch(256, 2);
    OK(lithe_model_initialize(m, xv, NULL));
    lithe_backend *cpu = NULL;
    OK(lithe_backend_get("cpu", &cpu));
    enum { CAP = NI * NH + 6 * NH + 5 * NH * NH };
    float *g[2] = {calloc(CAP, sizeof(float)), calloc(CAP, sizeof(float))};
    size_t peak[2], ng[2];
    lithe_optimizer *sgd0 = NULL;
    lithe_optimizer_opts o = lithe_sgd_defaults(0.0);
    OK(lithe_optimizer_new(&o, &sgd0));
    for (int r = 0; r < 2; r++) {
        for (int k = 0; k < 3; k++) OK(lithe_model_set_attr_bool(seg[k], "recompute", r == 1));
        OK(lithe_model_set_seed(m, 7)); /* the same masks in both runs */
        fwd_bwd(m, xv); /* a first step makes the grads */
        OK(lithe_model_finish_update(m, sgd0)); /* lr 0: grads zeroed, params kept */
        OK(lithe_model_set_seed(m, 7));
        lithe_backend_memory_info a, b;
        OK(lithe_backend_memory(cpu, &a));
        OK(lithe_backend_reset_peak(cpu));
        fwd_bwd(m, xv);
        OK(lithe_backend_memory(cpu, &b));
        peak[r] = b.peak - a.in_use;
        ng[r] = all_grads(m, g[r], CAP);
        OK(lithe_model_finish_update(m, sgd0));
    }
    printf("recompute: peak %zu bytes, plain %zu bytes\n", peak[1], peak[0]);
    assert_true(peak[1] < peak[0] * 3 / 4);
    assert_int_equal(ng[0], ng[1]);
    assert_true(ng[0] > NI * NH);
    assert_memory_equal(g[0], g[1], ng[0] * sizeof(float));
    free(g[0]);
    free(g[1]);
    lithe_optimizer_free(sgd0);
    lithe_value_release(xv);
    lithe_model_free(m);
}

/* Steps 2..5 take no new block from the allocator; holding on to each step's output (a leak of
 * the kind a broken path makes) is caught by the same count. */
static void steps(lithe_model *m, lithe_optimizer *opt, lithe_value *xv, int n, lithe_value **hold) {
    for (int i = 0; i < n; i++) {
        fwd_bwd(m, xv);
        OK(lithe_model_finish_update(m, opt));
        if (hold) OK(lithe_model_predict(m, xv, &hold[i]));
    }
}

static void test_no_alloc_after_first_step(void **state) {
    (void)state;
    lithe_model *m = mlp(0.1f, NULL);
    lithe_backend *cpu = NULL;
    OK(lithe_backend_get("cpu", &cpu));
    lithe_optimizer *opt = NULL;
    lithe_optimizer_opts o = lithe_adam_defaults();
    OK(lithe_optimizer_new(&o, &opt));
    lithe_value *xv = batch(64, 3);
    steps(m, opt, xv, 1, NULL);
    lithe_backend_memory_info a, b;
    OK(lithe_backend_memory(cpu, &a));
    for (int i = 0; i < 4; i++) {
        steps(m, opt, xv, 1, NULL);
        OK(lithe_backend_memory(cpu, &b));
        printf("step %d: %zu blocks so far\n", i + 2, b.n_allocs);
    }
    printf("steps 2..5: %zu new blocks (%zu in use)\n", b.n_allocs - a.n_allocs, b.in_use);
    assert_int_equal(b.n_allocs, a.n_allocs);
    /* the broken path: outputs kept alive across steps need new blocks, and the count sees it */
    lithe_value *hold[4] = {0};
    OK(lithe_backend_memory(cpu, &a));
    steps(m, opt, xv, 4, hold);
    OK(lithe_backend_memory(cpu, &b));
    assert_true(b.n_allocs > a.n_allocs);
    for (int i = 0; i < 4; i++) lithe_value_release(hold[i]);
    lithe_value_release(xv);
    lithe_optimizer_free(opt);
    lithe_model_free(m);
}

/* A LoRA step (adapters on the activations, core/lora.c): steps 2..5 take no new block; the only
 * gradients and optimizer state are the adapters' (the frozen base W has none: the weight-level
 * form kept a W-sized gradient per adapted weight, and a base copy); and a step's peak use beyond
 * the params is under half a full fine-tuning step's. */
static void test_lora_step(void **state) {
    (void)state;
    lithe_backend *cpu = NULL;
    OK(lithe_backend_get("cpu", &cpu));
    lithe_value *xv = batch(64, 6);
    size_t extra[2] = {0}; /* peak use beyond what the model held before the steps: full, LoRA */
    for (int lora = 0; lora < 2; lora++) {
        lithe_model *l[3], *m = mlp(0.0f, l);
        lithe_backend_memory_info a, b;
        OK(lithe_backend_memory(cpu, &a));
        size_t n_params = 0;
        for (int i = 0; i < 3; i++) n_params += lithe_model_n_params(l[i]);
        if (lora) {
            OK(lithe_model_add_lora(m, NULL, 8, 16.0f, 1));
            assert_int_equal(lithe_model_lora_count(m), 3);
            size_t now = 0;
            for (int i = 0; i < 3; i++) now += lithe_model_n_params(l[i]);
            assert_int_equal(now, n_params + 6); /* A and B each; no base copy */
        }
        lithe_optimizer *opt = NULL;
        lithe_optimizer_opts o = lithe_adam_defaults();
        OK(lithe_optimizer_new(&o, &opt));
        OK(lithe_backend_reset_peak(cpu));
        OK(lithe_backend_memory(cpu, &a));
        steps(m, opt, xv, 1, NULL);
        lithe_backend_memory_info first;
        OK(lithe_backend_memory(cpu, &first));
        steps(m, opt, xv, 4, NULL);
        OK(lithe_backend_memory(cpu, &b));
        extra[lora] = b.peak - a.in_use;
        printf("%s step: steps 2..5 took %zu new blocks; peak %zu bytes beyond the model\n", lora ? "LoRA r8" : "full",
               b.n_allocs - first.n_allocs, extra[lora]);
        assert_int_equal(b.n_allocs, first.n_allocs);
        size_t gbytes = 0, sbytes = 0, ng = lithe_model_grad_count(m, &gbytes), ns = lithe_optimizer_state_count(opt, &sbytes);
        if (lora) { /* A (8, in) and B (out, 8) per layer: 8·(64 + 96) + 8·(96 + 96) + 8·(96 + 10) floats */
            size_t adapters = (size_t)8 * (NI + NH + NH + NH + NH + NOUT) * sizeof(float);
            printf("LoRA r8: %zu grads (%zu bytes), optimizer state for %zu params (%zu bytes)\n", ng, gbytes, ns, sbytes);
            assert_int_equal(ng, 6);
            assert_int_equal(gbytes, adapters);
            assert_int_equal(ns, 6);
        }
        lithe_optimizer_free(opt);
        lithe_model_free(m);
    }
    assert_true(extra[1] * 2 < extra[0]);
    lithe_value_release(xv);
}

/* The plan against the measured peak of a step (in_use at its high-water mark), within 25%. */
static void test_plan_and_budget(void **state) {
    (void)state;
    lithe_model *m = mlp(0.0f, NULL);
    lithe_backend *cpu = NULL;
    OK(lithe_backend_get("cpu", &cpu));
    lithe_optimizer *opt = NULL;
    lithe_optimizer_opts o = lithe_adam_defaults();
    OK(lithe_optimizer_new(&o, &opt));
    lithe_value *xv = batch(512, 4);
    lithe_backend_memory_info before, after;
    OK(lithe_backend_memory(cpu, &before));
    lithe_train_memory p;
    OK(lithe_model_plan_train(m, xv, 512, opt, &p));
    assert_int_equal(lithe_model_grad_count(m, NULL), 0); /* the dry run left no grads behind */
    assert_int_equal(lithe_optimizer_state_count(opt, NULL), 0);
    assert_int_equal(p.total, p.params + p.grads + p.opt_state + p.activations + p.workspace);
    OK(lithe_backend_reset_peak(cpu));
    steps(m, opt, xv, 2, NULL);
    OK(lithe_backend_memory(cpu, &after));
    size_t measured = after.peak - before.in_use + p.params; /* the params were in use before */
    printf("plan: params %zu grads %zu state %zu activations %zu total %zu; measured peak %zu\n", p.params, p.grads,
           p.opt_state, p.activations, p.total, measured);
    assert_true((double)p.total > 0.75 * (double)measured && (double)p.total < 1.25 * (double)measured);
    /* a budget under the plan: refused before anything runs, naming the figures */
    OK(lithe_model_set_memory_budget(m, p.total / 2, opt));
    lithe_value *yv = NULL;
    lithe_backprop *bp = NULL;
    assert_int_equal(lithe_model_begin_update(m, xv, &yv, &bp), LITHE_ERR_OOM);
    assert_null(yv);
    assert_null(bp);
    const char *msg = lithe_last_error();
    printf("%s\n", msg);
    assert_non_null(strstr(msg, "params"));
    assert_non_null(strstr(msg, "grads"));
    assert_non_null(strstr(msg, "optimizer state"));
    assert_non_null(strstr(msg, "activations"));
    assert_non_null(strstr(msg, "budget"));
    /* a smaller batch fits */
    lithe_value *small = batch(8, 5);
    OK(lithe_model_begin_update(m, small, &yv, &bp));
    lithe_backprop_free(bp);
    lithe_value_release(yv);
    OK(lithe_model_set_memory_budget(m, p.total * 2, opt));
    OK(lithe_model_begin_update(m, xv, &yv, &bp));
    lithe_backprop_free(bp);
    lithe_value_release(yv);
    lithe_value_release(small);
    lithe_value_release(xv);
    lithe_optimizer_free(opt);
    lithe_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frozen),
        cmocka_unit_test(test_recompute),
        cmocka_unit_test(test_no_alloc_after_first_step),
        cmocka_unit_test(test_lora_step),
        cmocka_unit_test(test_plan_and_budget),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
