/* Recomputation by segment in the graph layer (issue 26 item 3): a small MobileNet-style CNN from
 * PyTorch (tests/golden/gen_recompute_goldens.py: ReLU6 convolutions, depthwise convolutions,
 * residual Adds) with the attr "recompute" set gives every parameter gradient and dX bit-identical
 * to the step without it (the segments chosen, and 2, 3 and more segments than nodes), over two
 * steps (the first measures the nodes' bytes); those match PyTorch's; LoRA adapters on every Conv
 * and the Gemm get bit-identical gradients too; and a step's high-water mark of bytes in use is
 * well under the step's without recomputation. LITHE_RECOMPUTE_DIR names the goldens' folder. */
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
#define CAP 200000

static char dir[512];

static lithe_tensor *npy(const char *name) {
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    lithe_tensor *t = NULL;
    OK(lithe_npy_read_file(p, &t));
    return t;
}

static lithe_model *load(int64_t recompute) { /* -1: off; 0: segments chosen; k: k segments */
    char p[1200];
    snprintf(p, sizeof p, "%s/recompute_cnn.onnx", dir);
    lithe_model *m = NULL;
    OK(lithe_model_load(p, &m));
    if (recompute >= 0) OK(lithe_model_set_attr_bool(m, "recompute", true));
    if (recompute > 0) OK(lithe_model_set_attr_int(m, "recompute_segments", recompute));
    return m;
}

/* A batch of B rows of (3, S, S): the golden x (B 4, S 16), or a made-up one. */
static lithe_value *input(int64_t B, int64_t S) {
    lithe_tensor *X = NULL;
    if (B == 4) {
        X = npy("x.npy");
    } else {
        size_t n = (size_t)(B * 3 * S * S);
        float *h = malloc(n * sizeof *h);
        for (size_t i = 0; i < n; i++) h[i] = (float)((i * 2654435761u) % 1000) / 1000.0f;
        OK(lithe_tensor_from_data(LITHE_F32, 4, (int64_t[]){B, 3, S, S}, h, &X));
        free(h);
    }
    lithe_value *v = NULL;
    OK(lithe_value_tensor(X, &v));
    lithe_tensor_release(X);
    return v;
}

/* One forward + backprop with dY = 1/B; dX into dx (n floats) when dx is not NULL. */
static void step(lithe_model *m, lithe_value *xv, float *dx, size_t n) {
    lithe_value *yv = NULL, *dyv = NULL, *dxv = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, xv, &yv, &bp));
    lithe_tensor *Y = lithe_value_get_tensor(yv), *dY = NULL;
    int64_t ny = lithe_tensor_numel(Y), B = lithe_tensor_shape(Y)[0];
    float *d = malloc((size_t)ny * sizeof *d);
    for (int64_t i = 0; i < ny; i++) d[i] = 1.0f / (float)B;
    OK(lithe_tensor_from_data(LITHE_F32, lithe_tensor_ndim(Y), lithe_tensor_shape(Y), d, &dY));
    free(d);
    OK(lithe_value_tensor(dY, &dyv));
    OK(lithe_backprop_run(bp, dyv, dx ? &dxv : NULL));
    if (dx) OK(lithe_tensor_read(lithe_value_get_tensor(dxv), dx, n * sizeof *dx));
    lithe_value_release(dxv);
    lithe_value_release(dyv);
    lithe_tensor_release(dY);
    lithe_backprop_free(bp);
    lithe_value_release(yv);
}

/* Every gradient the model holds, in param order, into out; the count. */
static size_t all_grads(lithe_model *m, float *out) {
    size_t k = 0;
    for (size_t p = 0; p < lithe_model_n_params(m); p++) {
        lithe_tensor *g = NULL;
        if (lithe_model_get_grad(m, lithe_model_param_name(m, p), &g) != LITHE_OK) continue;
        size_t n = (size_t)lithe_tensor_numel(g);
        assert_true(k + n <= CAP);
        OK(lithe_tensor_read(g, out + k, n * sizeof *out));
        k += n;
    }
    return k;
}

static void near(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) assert_float_equal(a[i], b[i], 1e-5 + 1e-4 * (b[i] < 0 ? -b[i] : b[i]));
}

static void test_bit_identical(void **state) {
    (void)state;
    enum { NX = 4 * 3 * 16 * 16 };
    lithe_value *xv = input(4, 16);
    float *g0 = calloc(CAP, sizeof(float)), *g1 = calloc(CAP, sizeof(float));
    float dx0[NX], dx1[NX];
    lithe_model *m = load(-1);
    step(m, xv, dx0, NX);
    size_t n0 = all_grads(m, g0);
    /* PyTorch's gradients (one step) */
    lithe_tensor *t = npy("dx.npy");
    float want[NX];
    OK(lithe_tensor_read(t, want, sizeof want));
    lithe_tensor_release(t);
    near(dx0, want, NX);
    char names[4096] = {0}, p[1200];
    snprintf(p, sizeof p, "%s/names.txt", dir);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    size_t nn = fread(names, 1, sizeof names - 1, f);
    fclose(f);
    assert_true(nn > 0);
    size_t checked = 0;
    for (char *s = strtok(names, "\n"); s; s = strtok(NULL, "\n")) {
        char gn[300];
        snprintf(gn, sizeof gn, "g_%s.npy", s);
        lithe_tensor *w = npy(gn), *g = NULL;
        OK(lithe_model_get_grad(m, s, &g));
        size_t n = (size_t)lithe_tensor_numel(w);
        assert_int_equal(lithe_tensor_numel(g), (int64_t)n);
        float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
        OK(lithe_tensor_read(g, a, n * sizeof *a));
        OK(lithe_tensor_read(w, b, n * sizeof *b));
        near(a, b, n);
        free(a);
        free(b);
        lithe_tensor_release(w);
        checked++;
    }
    assert_int_equal(checked, 28);
    step(m, xv, dx0, NX); /* a second step: the plan recorded, grads accumulated */
    n0 = all_grads(m, g0);
    lithe_model_free(m);
    const int64_t modes[] = {0, 1, 2, 3, 1000};
    for (size_t k = 0; k < sizeof modes / sizeof *modes; k++) {
        m = load(modes[k]);
        step(m, xv, dx1, NX);
        step(m, xv, dx1, NX);
        size_t n1 = all_grads(m, g1);
        printf("recompute_segments %lld: %zu gradient floats, dX %d floats: %s\n", (long long)modes[k], n1, NX,
               n1 == n0 && !memcmp(g0, g1, n0 * sizeof *g0) && !memcmp(dx0, dx1, sizeof dx0) ? "bit-identical" : "DIFFER");
        assert_int_equal(n1, n0);
        assert_memory_equal(g0, g1, n0 * sizeof *g0);
        assert_memory_equal(dx0, dx1, sizeof dx0);
        lithe_model_free(m);
    }
    lithe_value_release(xv);
    free(g0);
    free(g1);
}

/* LoRA (rank 4 on every Conv and the Gemm, the base frozen) with no_input_grad: the adapters'
 * gradients bit-identical with and without recomputation. */
static void test_lora(void **state) {
    (void)state;
    lithe_value *xv = input(4, 16);
    float *g[2] = {calloc(CAP, sizeof(float)), calloc(CAP, sizeof(float))};
    size_t n[2];
    for (int r = 0; r < 2; r++) {
        lithe_model *m = load(r ? 0 : -1);
        OK(lithe_model_add_lora(m, NULL, 4, 8.0f, 5));
        OK(lithe_model_set_attr_bool(m, "no_input_grad", true));
        step(m, xv, NULL, 0);
        step(m, xv, NULL, 0);
        n[r] = all_grads(m, g[r]);
        lithe_model_free(m);
    }
    printf("LoRA r4: %zu adapter gradient floats\n", n[0]);
    assert_true(n[0] > 0 && n[0] < 4000); /* the adapters' only */
    assert_int_equal(n[0], n[1]);
    assert_memory_equal(g[0], g[1], n[0] * sizeof(float));
    lithe_value_release(xv);
    free(g[0]);
    free(g[1]);
}

/* The bytes two LoRA steps hold at once (the CPU backend's high-water mark above what was in use
 * before them: activations, gradients, the plan's pool), at batch 16 of 3x64x64: with
 * recomputation under 0.65x the steps' without. */
static void test_peak(void **state) {
    (void)state;
    lithe_backend *cpu = NULL;
    OK(lithe_backend_get("cpu", &cpu));
    lithe_value *xv = input(16, 64);
    size_t peak[2];
    for (int r = 0; r < 2; r++) {
        lithe_model *m = load(r ? 0 : -1);
        OK(lithe_model_add_lora(m, NULL, 4, 8.0f, 5));
        OK(lithe_model_set_attr_bool(m, "no_input_grad", true));
        lithe_backend_memory_info a, b;
        OK(lithe_backend_memory(cpu, &a));
        OK(lithe_backend_reset_peak(cpu));
        step(m, xv, NULL, 0); /* the first step plans (and measures the nodes' bytes) */
        step(m, xv, NULL, 0);
        OK(lithe_backend_memory(cpu, &b));
        peak[r] = b.peak - a.in_use;
        lithe_model_free(m);
    }
    printf("LoRA steps at batch 16 of 3x64x64: peak %zu bytes beyond the model with recompute, %zu without (%.2fx)\n", peak[1],
           peak[0], (double)peak[1] / (double)peak[0]);
    assert_true(peak[1] * 100 < peak[0] * 65); /* 0.54x here; keeping every value made (no recomputation): 0.77x */
    lithe_value_release(xv);
}

/* Recomputation by rows (the attr recompute_rows, core/graph/graph_rows.c): every gradient and dX
 * within float rounding of the plain step's (which match PyTorch's), bit for bit when the rows cover
 * the batch; LoRA adapters too; and the high-water mark of a LoRA step at batch 16 well under the
 * same step recomputing whole segments. */
static void test_rows(void **state) {
    (void)state;
    enum { NX = 4 * 3 * 16 * 16 };
    lithe_value *xv = input(4, 16);
    float *g0 = calloc(CAP, sizeof(float)), *g1 = calloc(CAP, sizeof(float));
    float dx0[NX], dx1[NX];
    lithe_model *m = load(-1);
    step(m, xv, dx0, NX);
    step(m, xv, dx0, NX);
    size_t n0 = all_grads(m, g0);
    lithe_model_free(m);
    const int64_t rows[] = {1, 3, 4, 1000}, segs[] = {0, 2, 0, 3};
    for (size_t k = 0; k < 4; k++) {
        m = load(segs[k]);
        OK(lithe_model_set_attr_int(m, "recompute_rows", rows[k]));
        step(m, xv, dx1, NX);
        step(m, xv, dx1, NX);
        size_t n1 = all_grads(m, g1);
        bool same = n1 == n0 && !memcmp(g0, g1, n0 * sizeof *g0) && !memcmp(dx0, dx1, sizeof dx0);
        printf("recompute_rows %lld: %s\n", (long long)rows[k], same ? "bit-identical" : "within rounding");
        assert_int_equal(n1, n0);
        near(g1, g0, n0);
        near(dx1, dx0, NX);
        if (rows[k] >= 4) assert_true(same); /* one slice: the segment runs whole */
        lithe_model_free(m);
    }
    /* LoRA adapters, by rows of 1 */
    for (int r = 0; r < 2; r++) {
        m = load(r ? 0 : -1);
        OK(lithe_model_add_lora(m, NULL, 4, 8.0f, 5));
        OK(lithe_model_set_attr_bool(m, "no_input_grad", true));
        if (r) OK(lithe_model_set_attr_int(m, "recompute_rows", 1));
        step(m, xv, NULL, 0);
        step(m, xv, NULL, 0);
        size_t n = all_grads(m, r ? g1 : g0);
        assert_true(n > 0 && n < 4000);
        if (r) near(g1, g0, n);
        lithe_model_free(m);
    }
    lithe_value_release(xv);
    free(g0);
    free(g1);
    /* the high-water mark of two LoRA steps at batch 16 of 3x64x64, segments chosen, whole / by 4 rows */
    lithe_backend *cpu = NULL;
    OK(lithe_backend_get("cpu", &cpu));
    xv = input(16, 64);
    size_t peak[2];
    for (int r = 0; r < 2; r++) {
        m = load(0);
        OK(lithe_model_add_lora(m, NULL, 4, 8.0f, 5));
        OK(lithe_model_set_attr_bool(m, "no_input_grad", true));
        if (r) OK(lithe_model_set_attr_int(m, "recompute_rows", 4));
        step(m, xv, NULL, 0); /* the first step measures (whole) */
        lithe_backend_memory_info a, b;
        OK(lithe_backend_memory(cpu, &a));
        OK(lithe_backend_reset_peak(cpu));
        step(m, xv, NULL, 0);
        OK(lithe_backend_memory(cpu, &b));
        peak[r] = b.peak - a.in_use;
        lithe_model_free(m);
    }
    printf("LoRA step at batch 16 of 3x64x64, recomputing: peak %zu bytes by rows of 4, %zu whole (%.2fx)\n", peak[1],
           peak[0], (double)peak[1] / (double)peak[0]);
    assert_true(peak[1] * 100 < peak[0] * 75);
    lithe_value_release(xv);
}

int main(void) {
    const char *d = getenv("LITHE_RECOMPUTE_DIR");
    if (!d) {
        fprintf(stderr, "LITHE_RECOMPUTE_DIR is not set (ctest sets it)\n");
        return 1;
    }
    snprintf(dir, sizeof dir, "%s", d);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bit_identical),
        cmocka_unit_test(test_lora),
        cmocka_unit_test(test_peak),
        cmocka_unit_test(test_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
