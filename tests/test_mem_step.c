/* The training step's memory, what bench/memory found (issue 26): long-lived blocks (gradients,
 * optimizer state, loaded weights) take exactly their bytes from the CPU backend, not their size class's; LoRA
 * adapters train on a compact (float16 / int8) frozen base, where the step holds the compact
 * weights and no float32 copy of them, and the adapters learn what they learn on the same base
 * decoded to float32; an adapter on a compact weight refuses to merge and changes nothing. */
#include <math.h>
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
/* Every byte lithe takes from the allocator: live and its high-water mark. */
static size_t live, peak;
static void *hook_malloc(void *u, size_t n) {
    (void)u;
    size_t *p = malloc(n + 16);
    if (!p) return NULL;
    p[0] = n;
    live += n;
    if (live > peak) peak = live;
    return (char *)p + 16;
}
static void hook_free(void *u, void *ptr) {
    (void)u;
    if (!ptr) return;
    size_t *p = (size_t *)((char *)ptr - 16);
    live -= p[0];
    free(p);
}
static void *hook_realloc(void *u, void *ptr, size_t n) {
    if (!ptr) return hook_malloc(u, n);
    size_t *p = (size_t *)((char *)ptr - 16);
    size_t old = p[0];
    size_t *q = realloc(p, n + 16);
    if (!q) return NULL;
    q[0] = n;
    live = live - old + n;
    if (live > peak) peak = live;
    return (char *)q + 16;
}

/* widths whose weights are no size class of the CPU cache: 50 x 100 x 4 B = 20000 B (class 20480) */
enum { NI = 100, NH = 50, NOUT = 10, B = 8 };

/* Relu(NI->NH) >> Softmax(NH->NOUT), seeded; layers out (borrowed). */
static lithe_model *mlp(lithe_model **layers) {
    lithe_model *l[2] = {0}, *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = NH, .nI = NI}, &l[0]));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = NOUT, .nI = NH}, &l[1]));
    OK(lithe_chain(2, l, &m));
    lithe_tensor *X = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){2, NI}, &X));
    lithe_value *xv = NULL;
    OK(lithe_value_tensor(X, &xv));
    OK(lithe_model_initialize(m, xv, NULL));
    lithe_value_release(xv);
    lithe_tensor_release(X);
    /* the same weights in every model built here (and a Softmax W that is not Thinc's zeros) */
    const char *pn[] = {"W", "b"};
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 2; k++) {
            lithe_tensor *t = NULL;
            OK(lithe_model_get_param(l[i], pn[k], &t));
            int64_t n = lithe_tensor_numel(t);
            float *h = malloc((size_t)n * sizeof *h);
            for (int64_t j = 0; j < n; j++) h[j] = 0.3f * sinf(0.7f * (float)j + (float)(3 * i + k));
            OK(lithe_tensor_write(t, h, (size_t)n * sizeof *h));
            free(h);
        }
    if (layers) memcpy(layers, l, sizeof l);
    return m;
}

static lithe_value *batch(void) {
    float h[B * NI];
    for (int i = 0; i < B * NI; i++) h[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    lithe_tensor *X = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){B, NI}, h, &X));
    lithe_value *v = NULL;
    OK(lithe_value_tensor(X, &v));
    lithe_tensor_release(X);
    return v;
}

/* One step: forward, dY = Y - onehot(3), backprop (no dX), the optimizer. */
static void step(lithe_model *m, lithe_value *xv, lithe_optimizer *opt) {
    lithe_value *yv = NULL, *dyv = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, xv, &yv, &bp));
    lithe_tensor *Y = lithe_value_get_tensor(yv), *dY = NULL;
    float h[B * NOUT];
    OK(lithe_tensor_read(Y, h, sizeof h));
    for (int i = 0; i < B * NOUT; i++) h[i] -= (i % NOUT == 3) ? 1.0f : 0.0f;
    OK(lithe_tensor_from_data(LITHE_F32, 2, lithe_tensor_shape(Y), h, &dY));
    OK(lithe_value_tensor(dY, &dyv));
    OK(lithe_backprop_run(bp, dyv, NULL));
    lithe_value_release(dyv);
    lithe_tensor_release(dY);
    lithe_backprop_free(bp);
    lithe_value_release(yv);
    OK(lithe_model_finish_update(m, opt));
}

static size_t in_use(void) {
    lithe_backend *cpu = NULL;
    lithe_backend_memory_info mi;
    OK(lithe_backend_get("cpu", &cpu));
    OK(lithe_backend_memory(cpu, &mi));
    return mi.in_use;
}

/* After an Adam step the backend holds, beyond what it held before, exactly the gradients and the
 * optimizer state (the step's activations are freed). Fails on the old code: each block was its
 * size class's (W's 20000 B gradient and two moments took 20480 B each: 1440 B over). */
static void test_long_lived_exact(void **state) {
    (void)state;
    lithe_model *m = mlp(NULL);
    lithe_value *xv = batch();
    lithe_optimizer_opts o = lithe_adam_defaults();
    o.use_averages = false;
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&o, &opt));
    size_t before = in_use();
    step(m, xv, opt);
    size_t grads = 0, opt_state = 0;
    assert_int_equal(lithe_model_grad_count(m, &grads), 4);
    lithe_optimizer_state_count(opt, &opt_state);
    assert_int_equal(grads, (size_t)(NH * NI + NH + NOUT * NH + NOUT) * 4);
    assert_int_equal(opt_state, 2 * grads);
    assert_int_equal(in_use() - before, grads + opt_state);
    step(m, xv, opt); /* and the next step keeps it so */
    assert_int_equal(in_use() - before, grads + opt_state);
    lithe_optimizer_free(opt);
    lithe_value_release(xv);
    lithe_model_free(m);
}

/* A model loaded from bytes (a copy of every weight: WebAssembly's only way) holds exactly its
 * weights' bytes in the CPU backend. Fails on the old code: each weight took its size class's
 * block (W 20000 B in a 20480 B block). */
static void test_loaded_weights_exact(void **state) {
    (void)state;
    lithe_model *m = mlp(NULL);
    uint8_t *bytes = NULL;
    size_t len = 0;
    OK(lithe_model_save_bytes(m, NULL, &bytes, &len));
    lithe_model_free(m);
    size_t before = in_use();
    lithe_model *m2 = NULL;
    OK(lithe_model_load_bytes(bytes, len, &m2));
    assert_int_equal(in_use() - before, (size_t)(NH * NI + NH + NOUT * NH + NOUT) * 4);
    lithe_model_free(m2);
    lithe_buffer_free(bytes);
}

static void read_param(lithe_model *node, const char *name, float *out, size_t n) {
    lithe_tensor *t = NULL;
    OK(lithe_model_get_param(node, name, &t));
    assert_int_equal(lithe_tensor_numel(t), (int64_t)n);
    OK(lithe_tensor_read(t, out, n * sizeof *out));
}

/* LoRA on a float16 base against LoRA on the same base decoded to float32: after three SGD steps
 * every adapter parameter agrees (to the float16 product's rounding of the activations), the compact weights stayed compact and got no gradient,
 * and merging is refused with nothing changed. Fails on the old code (add_lora: "LoRA adapts
 * float32 weights"). */
static void test_lora_f16_base(void **state) {
    (void)state;
    lithe_model *lc[2], *lf[2];
    lithe_model *mc = mlp(lc), *mf = mlp(lf);
    OK(lithe_model_compress_weights(mc, LITHE_F16, NULL));
    OK(lithe_model_compress_weights(mf, LITHE_F16, NULL));
    OK(lithe_model_compress_weights(mf, LITHE_F32, NULL)); /* the same values, float32 */
    OK(lithe_model_add_lora(mc, NULL, 4, 8.0f, 7));
    OK(lithe_model_add_lora(mf, NULL, 4, 8.0f, 7));
    assert_int_equal(lithe_model_lora_count(mc), 2);
    lithe_value *xv = batch();
    lithe_optimizer_opts o = lithe_sgd_defaults(0.2);
    lithe_optimizer *oc = NULL, *of = NULL;
    OK(lithe_optimizer_new(&o, &oc));
    OK(lithe_optimizer_new(&o, &of));
    for (int i = 0; i < 3; i++) {
        step(mc, xv, oc);
        step(mf, xv, of);
    }
    size_t grads = 0;
    assert_int_equal(lithe_model_grad_count(mc, &grads), 4); /* A and B of two layers; no W, no b (frozen) */
    static float a[NH * NI], b[NH * NI];
    const char *names[] = {"lora_A:W", "lora_B:W"};
    for (int l = 0; l < 2; l++)
        for (int k = 0; k < 2; k++) {
            lithe_tensor *t = NULL;
            OK(lithe_model_get_param(lc[l], names[k], &t));
            size_t n = (size_t)lithe_tensor_numel(t);
            read_param(lc[l], names[k], a, n);
            read_param(lf[l], names[k], b, n);
            double moved = 0;
            for (size_t i = 0; i < n; i++) {
                assert_true(fabsf(a[i] - b[i]) <= 1e-5f + 1e-3f * fabsf(b[i]));
                moved += fabs((double)a[i]);
            }
            assert_true(moved > 0); /* B starts at zero: it moved */
        }
    lithe_tensor *W = NULL;
    OK(lithe_model_get_param(lc[0], "W", &W));
    assert_int_equal(lithe_tensor_dtype(W), LITHE_F16);
    assert_int_equal(lithe_model_merge_lora(mc), LITHE_ERR_DTYPE);
    assert_non_null(strstr(lithe_last_error(), "float16"));
    assert_int_equal(lithe_model_lora_count(mc), 2);
    OK(lithe_model_merge_lora(mf));
    lithe_optimizer_free(oc);
    lithe_optimizer_free(of);
    lithe_value_release(xv);
    lithe_model_free(mc);
    lithe_model_free(mf);
}

/* An int8 base: the adapters train (the loss falls) and the weights stay int8. */
static void test_lora_int8_base(void **state) {
    (void)state;
    lithe_model *l[2];
    lithe_model *m = mlp(l);
    OK(lithe_model_compress_weights(m, LITHE_I8, NULL));
    OK(lithe_model_add_lora(m, "relu*", 4, 8.0f, 3));
    assert_int_equal(lithe_model_lora_count(m), 1);
    lithe_value *xv = batch();
    lithe_optimizer_opts o = lithe_sgd_defaults(0.5);
    lithe_optimizer *opt = NULL;
    OK(lithe_optimizer_new(&o, &opt));
    float p0[B * NOUT], p1[B * NOUT];
    for (int i = 0; i < 12; i++) {
        if (i == 1 || i == 11) {
            lithe_value *yv = NULL;
            OK(lithe_model_predict(m, xv, &yv));
            OK(lithe_tensor_read(lithe_value_get_tensor(yv), i == 1 ? p0 : p1, sizeof p0));
            lithe_value_release(yv);
        }
        step(m, xv, opt);
    }
    assert_true(p1[3] > p0[3] + 1e-3f); /* class 3's probability for row 0 rose */
    lithe_tensor *W = NULL;
    OK(lithe_model_get_param(l[0], "W", &W));
    assert_int_equal(lithe_tensor_dtype(W), LITHE_I8);
    lithe_optimizer_free(opt);
    lithe_value_release(xv);
    lithe_model_free(m);
}

/* A float16 Relu(512 -> 600) at batch 16 against its float32 twin (the same values): forward Y and
 * backward dX bit for bit (the products split by columns: 128 of 600 at a time, forward and
 * backward), and the forward and the backward each take less than W's float32 size (1.2 MiB) from
 * the allocator beyond what is live before. Fails on the old code: each packed all of W as float32
 * (peak over 1.2 MiB). */
enum { CI = 512, CO = 600, CB = 16 };
static void test_compact_panel(void **state) {
    (void)state;
    OK(lithe_set_allocator(&(lithe_allocator){hook_malloc, hook_realloc, hook_free, NULL}));
    static float xh[CB * CI], dyh[CB * CO], y[2][CB * CO], dx[2][CB * CI];
    for (int i = 0; i < CB * CI; i++) xh[i] = sinf(0.37f * (float)i);
    for (int j = 0; j < CB * CO; j++) dyh[j] = 0.01f * (float)(j % 7) - 0.02f;
    lithe_tensor *X = NULL, *dY = NULL;
    lithe_value *xv = NULL, *dyv = NULL;
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){CB, CI}, xh, &X));
    OK(lithe_value_tensor(X, &xv));
    OK(lithe_tensor_from_data(LITHE_F32, 2, (int64_t[]){CB, CO}, dyh, &dY));
    OK(lithe_value_tensor(dY, &dyv));
    for (int v = 0; v < 2; v++) {
        lithe_model *m = NULL;
        OK(lithe_relu(&(lithe_dense_opts){.nO = CO, .nI = CI}, &m));
        OK(lithe_model_initialize(m, xv, NULL));
        lithe_tensor *W = NULL;
        OK(lithe_model_get_param(m, "W", &W));
        float *h = malloc(sizeof(float) * CO * CI);
        for (int j = 0; j < CO * CI; j++) h[j] = 0.05f * cosf(0.11f * (float)j);
        OK(lithe_tensor_write(W, h, sizeof(float) * CO * CI));
        free(h);
        OK(lithe_model_compress_weights(m, LITHE_F16, NULL));
        if (v == 1) OK(lithe_model_compress_weights(m, LITHE_F32, NULL)); /* the twin: decoded */
        lithe_value *yv = NULL, *dxv = NULL;
        lithe_backprop *bp = NULL;
        size_t before = live;
        peak = live;
        OK(lithe_model_begin_update(m, xv, &yv, &bp));
        if (v == 0) assert_true(peak - before < (size_t)CO * CI * 4);
        OK(lithe_tensor_read(lithe_value_get_tensor(yv), y[v], sizeof y[v]));
        before = live;
        peak = live;
        OK(lithe_backprop_run(bp, dyv, &dxv));
        if (v == 0) assert_true(peak - before < (size_t)CO * CI * 4);
        OK(lithe_tensor_read(lithe_value_get_tensor(dxv), dx[v], sizeof dx[v]));
        lithe_value_release(dxv);
        lithe_backprop_free(bp);
        lithe_value_release(yv);
        lithe_model_free(m);
    }
    assert_memory_equal(y[0], y[1], sizeof y[0]);
    assert_memory_equal(dx[0], dx[1], sizeof dx[0]);
    lithe_value_release(dyv);
    lithe_tensor_release(dY);
    lithe_value_release(xv);
    lithe_tensor_release(X);
    OK(lithe_set_allocator(NULL));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compact_panel),
        cmocka_unit_test(test_long_lived_exact),
        cmocka_unit_test(test_loaded_weights_exact),
        cmocka_unit_test(test_lora_f16_base),
        cmocka_unit_test(test_lora_int8_base),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
