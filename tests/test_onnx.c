/* The ONNX reader and the graph layer against PyTorch 1.13 (tests/golden/gen_onnx_goldens.py):
 * models exported by torch.onnx.export (an MLP at opsets 11, 13 and 17, a LeNet-style CNN, and a
 * transformer-ish mixer at opsets 13 and 17) — outputs, gradients w.r.t. the input and every
 * parameter (torch autograd, and finite differences), ten SGD steps; then files (.onnx, .lithe
 * round trips, a graph inside a chain) and hostile bytes (every truncation, bit flips, unknown
 * operators listed at load). */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
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
#include "golden/golden.h"
#include "golden/graph_check.h"
#include "failing_alloc.h"
#include "graph/graph.h" /* white-box: the plans' pool statistics */

static const char *const models[] = {"mlp11", "mlp13", "mlp17", "lenet", "mixer13", "mixer17", "encoder", "resblock", "decoder", "masked", "nearmiss", "ffn", "convact", "convadd",
                                     /* tied weights: one initializer read by two nodes (issue 30) */
                                     "tied_mm", "tied_gemm", "tied_bmm", "tied_conv",
                                     /* activations (issue 23) */
                                     "acts13", "acts14", "mish18", "pieces", "pieces17", "thresh",
                                     /* Conv + HardSwish / HardSigmoid / Sigmoid fused (issue 23's speed) */
                                     "convhswish13", "convhswish14",
                                     /* values read twice: new gradients written, then added to (issue 29) */
                                     "fanout",
                                     /* attention's Q / K / V slices: gradients written by regions (issue 29) */
                                     "heads"};
#define N_MODELS (sizeof models / sizeof models[0])

/* The golden model name; with bytes_out, its .onnx bytes too (the caller frees them). */
static lithe_model *load(const char *name, uint8_t **bytes_out, size_t *len_out) {
    if (!bytes_out) return graph_load_golden(name);
    const golden *g = get("%s.onnx", name);
    uint8_t *b = bytes_of(g);
    lithe_model *m = NULL;
    OK(lithe_onnx_load_bytes(b, (size_t)g->n, &m));
    *bytes_out = b;
    *len_out = (size_t)g->n;
    return m;
}

static void test_parity(void **state) {
    (void)state;
    const parity_opts o = {.test = "test_onnx", .width = 8, .atol = 1e-4, .rtol = 1e-4, .grads = true};
    for (size_t k = 0; k < N_MODELS; k++) graph_parity(models[k], &o);
}

/* Central differences of the loss against lithe's own gradients, for input and weight entries. */
static void test_finite_differences(void **state) {
    (void)state;
    /* h: small enough to cross few ReLU kinks, large against float32 noise */
    const fd_opts o = {.test = "test_onnx", .h = 3e-3, .atol = 1e-2, .rtol = 5e-2, .x_stride = 5, .w_parts = 6, .digits = 5};
    for (size_t k = 0; k < N_MODELS; k++) graph_fd_model(models[k], &o, 8, 20);
}

/* Ten SGD steps (lithe's optimizer: plain SGD, no clipping, no L2) match torch.optim.SGD. */
static void test_sgd_steps(void **state) {
    (void)state;
    const sgd_opts o = {.test = "test_onnx", .width = 8, .steps = 10, .loss_tol = 1e-4, .atol = 1e-4, .rtol = 1e-4, .loss_figure = true};
    for (size_t k = 0; k < N_MODELS; k++)
        if (find("%s.losses", models[k])) graph_sgd_check(models[k], &o); /* fused weights: torch trains other ones */
}

/* A graph inside a Thinc-style tree, trained a step, saved as .lithe and loaded back: same
 * predictions, the graph's bytes embedded; and .onnx files through lithe_model_load. */
static void test_files(void **state) {
    (void)state;
    uint8_t *bytes = NULL;
    size_t len = 0;
    lithe_model *g = load("lenet", &bytes, &len);
    assert_string_equal(lithe_model_layer_type(g), "onnx_graph.v1");
    assert_int_equal(lithe_model_n_shims(g), 1);
    assert_string_equal(lithe_shim_name(lithe_model_shim(g, 0)), "onnx");
    lithe_model *lin = NULL, *sm = NULL, *tree = NULL;
    OK(lithe_linear(&(lithe_dense_opts){.nO = 4}, &lin));
    OK(lithe_softmax(&(lithe_softmax_opts){.nO = 2}, &sm));
    OK(lithe_chain(3, (lithe_model *[]){g, lin, sm}, &tree));
    lithe_value *X = value_of(get("lenet.x", 0)), *Y = NULL, *Y2 = NULL;
    OK(lithe_model_initialize(tree, X, NULL));
    /* one step so the saved weights differ from the graph's initializers */
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(tree, X, &Y, &bp));
    lithe_tensor *dY = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, lithe_tensor_shape(lithe_value_get_tensor(Y)), &dY));
    ((float *)lithe_tensor_data(dY))[1] = 1.0f;
    lithe_value *dYv = NULL;
    OK(lithe_value_tensor(dY, &dYv));
    OK(lithe_backprop_run(bp, dYv, NULL));
    lithe_optimizer *opt = NULL;
    lithe_optimizer_opts o = lithe_sgd_defaults(0.5);
    OK(lithe_optimizer_new(&o, &opt));
    OK(lithe_model_finish_update(tree, opt));
    lithe_value_release(Y);
    OK(lithe_model_predict(tree, X, &Y));
    uint8_t *file = NULL;
    size_t flen = 0;
    OK(lithe_model_save_bytes(tree, NULL, &file, &flen));
    /* the graph travels as the byte tensor "1.attr.onnx" (the chain is node 0), not as hex */
    const char *want = "\"1.attr.onnx\":{\"dtype\":\"U8\",\"shape\":[";
    bool found = false;
    for (size_t i = 0; !found && i + strlen(want) <= flen; i++) found = !memcmp(file + i, want, strlen(want));
    assert_true(found);
    lithe_model *back = NULL;
    OK(lithe_model_load_bytes(file, flen, &back));
    OK(lithe_model_predict(back, X, &Y2));
    const float *a = lithe_tensor_data(lithe_value_get_tensor(Y)), *b = lithe_tensor_data(lithe_value_get_tensor(Y2));
    for (int64_t i = 0; i < lithe_tensor_numel(lithe_value_get_tensor(Y)); i++) assert_true(a[i] == b[i]);
    assert_int_equal(lithe_model_n_shims(lithe_model_layer(back, 0)), 1);
    lithe_buffer_free(file);
    lithe_value_release(Y2);
    lithe_model_free(back);
    /* an .onnx file through lithe_model_load */
    char path[] = "/tmp/lithe_test_onnx_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char opath[64];
    snprintf(opath, sizeof opath, "%s.onnx", path);
    FILE *f = fopen(opath, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, len, f), len);
    fclose(f);
    lithe_model *fromfile = NULL;
    OK(lithe_model_load(opath, &fromfile));
    lithe_value *Y3 = NULL;
    OK(lithe_model_predict(fromfile, X, &Y3));
    expect_close("lenet from an .onnx file", lithe_value_get_tensor(Y3), get("lenet.y", 0), 1e-4, 1e-4);
    remove(opath);
    remove(path);
    /* and ONNX bytes through lithe_model_load_bytes (what the JS and Python packages call) */
    lithe_model *frombytes = NULL;
    OK(lithe_model_load_bytes(bytes, len, &frombytes));
    assert_string_equal(lithe_model_layer_type(frombytes), "onnx_graph.v1");
    lithe_model_free(frombytes);
    lithe_value_release(Y3);
    lithe_model_free(fromfile);
    free(bytes);
    lithe_optimizer_free(opt);
    lithe_value_release(dYv);
    lithe_tensor_release(dY);
    lithe_backprop_free(bp);
    lithe_value_release(X);
    lithe_value_release(Y);
    lithe_model_free(tree);
}

/* Wrong inputs are errors naming the graph's declaration. */
static void test_bad_inputs(void **state) {
    (void)state;
    lithe_model *m = load("mlp13", NULL, NULL);
    lithe_tensor *t = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){3, 7}, &t));
    lithe_value *v = NULL, *Y = NULL;
    OK(lithe_value_tensor(t, &v));
    assert_int_equal(lithe_model_predict(m, v, &Y), LITHE_ERR_SHAPE);
    assert_non_null(strstr(lithe_last_error(), "(?, 6)"));
    lithe_value_release(v);
    lithe_tensor_release(t);
    lithe_model_free(m);
}

/* Window attributes of the wrong length are errors naming the node, never read in part: the
 * decoder's stride-2 ConvTranspose with one stride, or one output_padding (they were skipped, so
 * the node ran as stride 1 / no output padding and gave another shape), and a stride of 0; the
 * attributes are edited in the parsed graph. ConvTranspose checks them as Conv does. */
static void test_bad_window_attrs(void **state) {
    (void)state;
    static const struct { const char *attr; int64_t v0; size_t n; lithe_status st; const char *says; } cases[] = {
        {"strides", 2, 1, LITHE_ERR_UNSUPPORTED, "1 strides for a 2-D window"},
        {"output_padding", 1, 1, LITHE_ERR_UNSUPPORTED, "1 output_padding"},
        {"strides", 0, 2, LITHE_ERR_VALUE, "strides and dilations must be 1 .. 2^20"}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        lithe_model *m = load("decoder", NULL, NULL);
        lithe__onnx_attr *a = graph_weight_attr(m, "ConvTranspose", "up.weight", cases[k].attr, cases[k].n);
        a->ints[0] = cases[k].v0;
        a->n_ints = cases[k].n;
        lithe_value *X = tiled(get("decoder.x"), 1), *Y = NULL;
        assert_int_equal(lithe_model_predict(m, X, &Y), cases[k].st);
        printf("test_onnx: ConvTranspose with %zu %s refused: %s\n", cases[k].n, cases[k].attr, lithe_last_error());
        assert_non_null(strstr(lithe_last_error(), cases[k].says));
        assert_non_null(strstr(lithe_last_error(), "ConvTranspose"));
        lithe_value_release(X);
        lithe_model_free(m);
    }
}

/* Float attributes the composed activations cannot run: a clear error at the node, never a wrong
 * answer (a HardSigmoid with alpha < 0 would turn clipped_linear's backward window around; a Celu
 * with alpha 0 divides by it). */
static void test_bad_act_attrs(void **state) {
    (void)state;
    static const struct { const char *model, *op, *says; float v; lithe_status st; } cases[] = {
        {"acts14", "HardSigmoid", "alpha -0.5 < 0", -0.5f, LITHE_ERR_UNSUPPORTED},
        {"pieces", "Celu", "Celu's alpha must be > 0", 0.0f, LITHE_ERR_VALUE}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        lithe_model *m = load(cases[k].model, NULL, NULL);
        assert_int_equal(m->n_shims, 1);
        lithe__graph *g = m->shims[0]->state;
        lithe__onnx_attr *a = NULL;
        for (size_t i = 0; i < g->onnx.n_nodes && !a; i++)
            if (!strcmp(g->onnx.nodes[i].op_type, cases[k].op))
                for (size_t j = 0; j < g->onnx.nodes[i].n_attrs; j++)
                    if (!strcmp(g->onnx.nodes[i].attrs[j].name, "alpha")) a = &g->onnx.nodes[i].attrs[j];
        assert_non_null(a);
        a->f = cases[k].v;
        lithe_value *X = value_of(get("%s.x", cases[k].model)), *Y = NULL;
        assert_int_equal(lithe_model_predict(m, X, &Y), cases[k].st);
        printf("test_onnx: %s with alpha %g refused: %s\n", cases[k].op, (double)cases[k].v, lithe_last_error());
        assert_non_null(strstr(lithe_last_error(), cases[k].says));
        assert_non_null(strstr(lithe_last_error(), cases[k].op));
        lithe_value_release(X);
        lithe_model_free(m);
    }
}

/* Every truncation and a thousand random byte changes: an error or a model, never a crash (the
 * sanitizer builds check the "never"). Unknown operators are all listed at load. */
static void test_hostile(void **state) {
    (void)state;
    uint8_t *bytes = NULL;
    size_t len = 0;
    lithe_model *m = load("mlp13", &bytes, &len);
    lithe_model_free(m);
    for (size_t cut = 0; cut < len; cut++) {
        lithe_model *t = NULL;
        lithe_status s = lithe_onnx_load_bytes(bytes, cut, &t);
        if (s == LITHE_OK) lithe_model_free(t); /* a cut between fields can still be a valid (smaller) graph */
        else assert_null(t);
    }
    uint8_t *copy = malloc(len);
    assert_non_null(copy);
    uint64_t st = 12345;
    lithe_value *X = value_of(get("mlp13.x", 0));
    for (int trial = 0; trial < 1000; trial++) {
        memcpy(copy, bytes, len);
        for (int k = 0; k < 3; k++) {
            st = st * 6364136223846793005ull + 1442695040888963407ull;
            copy[(st >> 33) % len] = (uint8_t)(st >> 20);
        }
        lithe_model *t = NULL;
        if (lithe_onnx_load_bytes(copy, len, &t) == LITHE_OK) {
            lithe_value *Y = NULL;
            if (lithe_model_predict(t, X, &Y) == LITHE_OK) lithe_value_release(Y);
            lithe_model_free(t);
        }
    }
    /* rename two op types in place (same length: the wire format stays valid) */
    memcpy(copy, bytes, len);
    int renamed = 0;
    for (size_t i = 0; i + 4 <= len; i++) {
        if (!memcmp(copy + i, "Relu", 4)) copy[i + 3] = 'x', renamed++;
        else if (!memcmp(copy + i, "Tanh", 4)) copy[i + 3] = 'x', renamed++;
    }
    assert_true(renamed >= 2);
    lithe_model *t = NULL;
    assert_int_equal(lithe_onnx_load_bytes(copy, len, &t), LITHE_ERR_UNSUPPORTED);
    assert_null(t);
    printf("test_onnx: refused: %s\n", lithe_last_error());
    assert_non_null(strstr(lithe_last_error(), "Relx"));
    assert_non_null(strstr(lithe_last_error(), "Tanx"));
    assert_non_null(strstr(lithe_last_error(), "2 operator types"));
    assert_int_equal(lithe_onnx_load_bytes((const uint8_t *)"\x0a\xff\xff\xff\xff\x0f", 6, &t), LITHE_ERR_FORMAT);
    assert_int_equal(lithe_onnx_load_bytes(NULL, 0, &t), LITHE_ERR_FORMAT); /* no graph */
    size_t n = 0;
    const char *const *names = lithe_onnx_op_names(&n);
    assert_true(n >= 40);
    assert_null(names[n]);
    /* backward presence (the coverage table's column): Conv trains, Shape has no gradient */
    assert_true(lithe_onnx_op_has_backward("Conv"));
    assert_true(lithe_onnx_op_has_backward("Softmax"));
    assert_false(lithe_onnx_op_has_backward("Shape"));
    assert_false(lithe_onnx_op_has_backward("Relx"));
    assert_false(lithe_onnx_op_has_backward(NULL));
    lithe_value_release(X);
    free(copy);
    free(bytes);
}


/* ---- the memory plan ---- */

/* Counts every allocation lithe makes through the hook. */
static struct {
    long calls;
    size_t bytes, largest;
} counted;
static void *count_malloc(void *u, size_t n) {
    (void)u;
    counted.calls++;
    counted.bytes += n;
    if (n > counted.largest) counted.largest = n;
    return malloc(n);
}
static void *count_realloc(void *u, void *p, size_t n) {
    (void)u;
    counted.calls++;
    counted.bytes += n;
    if (n > counted.largest) counted.largest = n;
    return realloc(p, n);
}
static void count_free(void *u, void *p) {
    (void)u;
    free(p);
}
static void count_reset(void) { memset(&counted, 0, sizeof counted); }


static void expect_same(const lithe_value *a, const lithe_value *b) {
    lithe_tensor *ta = lithe_value_get_tensor(a), *tb = lithe_value_get_tensor(b);
    assert_int_equal(lithe_tensor_numel(ta), lithe_tensor_numel(tb));
    assert_memory_equal(lithe_tensor_data(ta), lithe_tensor_data(tb), sizeof(float) * (size_t)lithe_tensor_numel(ta));
}

/* Blocks the graph's plans have taken from the backend so far, over every plan. */
static size_t pool_fresh(const lithe_model *m) {
    const lithe__graph *g = m->shims[0]->state;
    size_t n = 0;
    for (size_t i = 0; i < LITHE__GRAPH_PLANS; i++)
        if (g->plans[i]) n += lithe__bufpool_get_stats(g->plans[i]->pool).fresh;
    return n;
}

typedef struct counts {
    long calls;
    size_t bytes, largest, fresh;
} counts;

static counts predict_counted(lithe_model *m, const lithe_value *X, lithe_value **Y) {
    size_t f0 = pool_fresh(m);
    count_reset();
    OK(lithe_model_predict(m, X, Y));
    return (counts){counted.calls, counted.bytes, counted.largest, pool_fresh(m) - f0};
}

static counts step_counted(lithe_model *m, const lithe_value *X, const lithe_value *R) {
    size_t f0 = pool_fresh(m);
    count_reset();
    lithe_value *Y = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    OK(lithe_model_begin_update(m, X, &Y, &bp));
    OK(lithe_backprop_run(bp, R, &dX));
    lithe_backprop_free(bp);
    lithe_value_release(Y);
    lithe_value_release(dX);
    return (counts){counted.calls, counted.bytes, counted.largest, pool_fresh(m) - f0};
}

/* Shapes are inferred and buffers planned once per input shape: a repeated predict (and a
 * repeated training step) takes every value, temporary and gradient from the plan's pool — no
 * fresh block — and allocates only small descriptors (and the kernels' own workspace: GEMM packing
 * panels, the convolution's). Buffers a live backprop record or the caller holds are never handed out
 * again. Counted through the allocator hook and the pools' statistics. */
static void test_plan(void **state) {
    (void)state;
    OK(lithe_set_allocator(&(lithe_allocator){count_malloc, count_realloc, count_free, NULL}));
    static const char *const planned[] = {"mlp13", "lenet", "encoder", "masked"};
    for (size_t k = 0; k < sizeof planned / sizeof *planned; k++) {
        const char *name = planned[k];
        lithe_model *m = load(name, NULL, NULL);
        const golden *gy = get("%s.y", name);
        lithe_value *X = value_of(get("%s.x", name)), *X4 = tiled(get("%s.x", name), 4), *R = value_of(get("%s.r", name));
        lithe_value *Y1 = NULL, *Y2 = NULL, *Y3 = NULL, *Y4 = NULL;
        counts first = predict_counted(m, X, &Y1);
        predict_counted(m, X, &Y2); /* Y1 is still held: its buffer is not the pool's to give */
        lithe_value_release(Y2);
        counts again = predict_counted(m, X, &Y2);
        expect_same(Y1, Y2);
        lithe_value_release(Y2);
        counts big_first = predict_counted(m, X4, &Y4); /* a new shape: a new plan */
        lithe_value_release(Y4);
        counts big_again = predict_counted(m, X4, &Y4);
        counts back = predict_counted(m, X, &Y3); /* back to the first shape: its plan is still cached */
        expect_same(Y1, Y3);
        const float *y4 = lithe_tensor_data(lithe_value_get_tensor(Y4));
        for (int64_t i = 0; i < gy->n; i++) assert_true(fabs(y4[i] - gy->v[i]) <= 1e-4 + 1e-4 * fabs(gy->v[i]));
        counts step1 = step_counted(m, X, R), step2 = step_counted(m, X, R);
        printf("test_onnx: %-8s predict: first %ld allocations (%zu bytes, %zu pool blocks), again %ld (%zu bytes, "
               "largest %zu, %zu blocks); batch x4 first %ld (%zu bytes), again %ld (%zu bytes); first shape again %ld "
               "(%zu blocks)\n", name, first.calls, first.bytes, first.fresh, again.calls, again.bytes, again.largest,
               again.fresh, big_first.calls, big_first.bytes, big_again.calls, big_again.bytes, back.calls, back.fresh);
        printf("test_onnx: %-8s training step (forward + backward): first %ld allocations (%zu bytes, %zu blocks), again "
               "%ld (%zu bytes, largest %zu, %zu blocks)\n", name, step1.calls, step1.bytes, step1.fresh, step2.calls,
               step2.bytes, step2.largest, step2.fresh);
        assert_true(first.fresh > 0);
        assert_int_equal(again.fresh, 0);
        assert_int_equal(big_again.fresh, 0);
        assert_int_equal(back.fresh, 0);
        assert_int_equal(step2.fresh, 0);
        /* the MLP: GEMMs only, so a repeated run makes as many allocations whatever the batch: the
         * executor's buffers come from its plan, and each GEMM takes one packing workspace (kept
         * between calls under lithe's own allocator; this test installs a counting one, under which
         * the GEMM allocates it per call, sized by the call's rows: the only bytes that grow, well
         * under the 4x of the batch). The others also allocate kernel workspace per image or batch
         * entry (the convolution's, batched MatMul's), which the CPU backend's block cache serves
         * under lithe's own allocator. */
        if (k == 0) {
            assert_int_equal(again.calls, big_again.calls);
            assert_true(big_again.bytes < 2 * again.bytes);
        }
        /* training: a live backprop record keeps its buffers while other runs go on */
        lithe_backprop *bp = NULL, *bp2 = NULL;
        lithe_value *T1 = NULL, *T2 = NULL, *dX = NULL, *dX2 = NULL, *Z = NULL;
        OK(lithe_model_begin_update(m, X, &T1, &bp));
        OK(lithe_model_predict(m, X4, &Z)); /* other runs while bp lives... */
        lithe_value_release(Z);
        OK(lithe_model_begin_update(m, X, &T2, &bp2));
        OK(lithe_backprop_run(bp2, R, &dX2));
        lithe_backprop_free(bp2);
        OK(lithe_model_predict(m, X, &Z));
        lithe_value_release(Z);
        OK(lithe_backprop_run(bp, R, &dX)); /* ...then its backward: still torch's gradient */
        expect_close("dX after other runs", lithe_value_get_tensor(dX), get("%s.dx", name), 1e-4, 1e-4);
        expect_same(dX, dX2);
        expect_same(T1, Y1);
        lithe_backprop_free(bp);
        lithe_value_release(dX);
        lithe_value_release(dX2);
        lithe_value_release(T1);
        lithe_value_release(T2);
        lithe_value_release(X);
        lithe_value_release(X4);
        lithe_value_release(R);
        lithe_value_release(Y1);
        lithe_value_release(Y3);
        lithe_value_release(Y4);
        lithe_model_free(m);
    }
    OK(lithe_set_allocator(NULL));
}

/* More input shapes than the cache keeps: the least recently used plan goes, and its buffers
 * with it once no run uses them; results stay right. */
static void test_plan_eviction(void **state) {
    (void)state;
    lithe_model *m = load("lenet", NULL, NULL);
    lithe_value *X = value_of(get("lenet.x", 0)), *Y = NULL, *Yk = NULL;
    OK(lithe_model_predict(m, X, &Y));
    lithe_backprop *bp = NULL;
    lithe_value *T = NULL, *dX = NULL, *R = value_of(get("lenet.r", 0));
    OK(lithe_model_begin_update(m, X, &T, &bp)); /* alive while its plan is evicted */
    for (int times = 2; times <= 2 + LITHE__GRAPH_PLANS; times++) {
        lithe_value *Xk = tiled(get("lenet.x", 0), times);
        OK(lithe_model_predict(m, Xk, &Yk));
        const float *a = lithe_tensor_data(lithe_value_get_tensor(Y)), *b = lithe_tensor_data(lithe_value_get_tensor(Yk));
        for (int64_t i = 0; i < lithe_tensor_numel(lithe_value_get_tensor(Y)); i++) assert_true(a[i] == b[i]);
        lithe_value_release(Yk);
        lithe_value_release(Xk);
    }
    OK(lithe_backprop_run(bp, R, &dX));
    expect_close("dX after its plan was evicted", lithe_value_get_tensor(dX), get("lenet.dx", 0), 1e-4, 1e-4);
    lithe_backprop_free(bp);
    lithe_model_free(m); /* the output outlives the model and its pools */
    const float *t = lithe_tensor_data(lithe_value_get_tensor(T)), *y = lithe_tensor_data(lithe_value_get_tensor(Y));
    for (int64_t i = 0; i < lithe_tensor_numel(lithe_value_get_tensor(Y)); i++) assert_true(t[i] == y[i]);
    lithe_value_release(T);
    lithe_value_release(dX);
    lithe_value_release(R);
    lithe_value_release(X);
    lithe_value_release(Y);
}

/* A graph on the Vulkan backend (lavapipe in CI) plans its device buffers the same way: repeated
 * training steps take no fresh block and agree with the CPU. Skipped without a device. */
static void test_plan_vulkan(void **state) {
    (void)state;
    lithe_backend *vk = NULL;
    if (lithe_backend_get("vulkan", &vk) != LITHE_OK) {
        print_message("test_plan_vulkan: no Vulkan device here (%s)\n", lithe_last_error());
        return;
    }
    /* and the activations composed from primitives (HardSigmoid, HardSwish, Mish, Softplus, Elu,
     * Selu, Celu, Softsign, PRelu, ThresholdedRelu, Sign): the same compositions on Vulkan's kernels */
    static const char *const planned[] = {"lenet", "encoder", "acts13", "acts14", "mish18", "pieces", "pieces17", "thresh"};
    for (size_t k = 0; k < sizeof planned / sizeof *planned; k++) {
        const char *name = planned[k];
        lithe_model *m = load(name, NULL, NULL);
        OK(lithe_model_set_backend(m, vk));
        lithe_tensor *xh = tensor_of(get("%s.x", name)), *rh = tensor_of(get("%s.r", name)), *xd = NULL, *rd = NULL;
        OK(lithe_tensor_to_backend(xh, vk, &xd));
        OK(lithe_tensor_to_backend(rh, vk, &rd));
        lithe_value *X = NULL, *R = NULL;
        OK(lithe_value_tensor(xd, &X));
        OK(lithe_value_tensor(rd, &R));
        for (int run = 0; run < 3; run++) {
            size_t f0 = pool_fresh(m);
            lithe_value *Y = NULL, *dX = NULL;
            lithe_backprop *bp = NULL;
            OK(lithe_model_begin_update(m, X, &Y, &bp));
            OK(lithe_backprop_run(bp, R, &dX));
            lithe_tensor *yh = NULL, *dxh = NULL;
            OK(lithe_tensor_to_backend(lithe_value_get_tensor(Y), NULL, &yh));
            OK(lithe_tensor_to_backend(lithe_value_get_tensor(dX), NULL, &dxh));
            expect_close("vulkan output", yh, get("%s.y", name), 1e-4, 1e-4);
            expect_close("vulkan dX", dxh, get("%s.dx", name), 1e-4, 1e-4);
            if (run > 0) assert_int_equal(pool_fresh(m) - f0, 0);
            lithe_tensor_release(yh);
            lithe_tensor_release(dxh);
            lithe_backprop_free(bp);
            lithe_value_release(Y);
            lithe_value_release(dX);
        }
        printf("test_onnx: %-8s on vulkan: three training steps agree with torch, the later two take no fresh block\n", name);
        lithe_value_release(X);
        lithe_value_release(R);
        lithe_tensor_release(xh);
        lithe_tensor_release(rh);
        lithe_tensor_release(xd);
        lithe_tensor_release(rd);
        lithe_model_free(m);
    }
}

/* External data (onnx.save_model(..., save_as_external_data=True), written by the golden script
 * into onnx_external/ beside the goldens): one data file and one file per tensor load and predict
 * as the inline model; the data is inlined, so the node's bytes and a .lithe file made from it
 * need no folder. Hostile entries are refused with a message naming the tensor and the numbers. */
static void test_external_data(void **state) {
    (void)state;
    char dir[600], path[700];
    snprintf(dir, sizeof dir, "%s", golden_path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    lithe_value *X = value_of(get("lenet.x", 0));
    static const char *const good[] = {"lenet", "lenet_split"};
    for (size_t k = 0; k < 2; k++) {
        snprintf(path, sizeof path, "%s/onnx_external/%s.onnx", dir, good[k]);
        lithe_model *m = NULL, *back = NULL;
        OK(lithe_model_load(path, &m));
        lithe_value *Y = NULL, *Y2 = NULL;
        OK(lithe_model_predict(m, X, &Y));
        expect_close("lenet from external data", lithe_value_get_tensor(Y), get("lenet.y", 0), 1e-6, 1e-6);
        uint8_t *file = NULL;
        size_t flen = 0;
        OK(lithe_model_save_bytes(m, NULL, &file, &flen));
        OK(lithe_model_load_bytes(file, flen, &back));
        OK(lithe_model_predict(back, X, &Y2));
        expect_same(Y, Y2);
        lithe_buffer_free(file);
        lithe_value_release(Y);
        lithe_value_release(Y2);
        lithe_model_free(back);
        lithe_model_free(m);
    }
    /* the bytes alone: there is no folder to read from */
    snprintf(path, sizeof path, "%s/onnx_external/lenet.onnx", dir);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    uint8_t buf[65536];
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    lithe_model *m = NULL;
    assert_int_equal(lithe_onnx_load_bytes(buf, n, &m), LITHE_ERR_UNSUPPORTED);
    assert_null(m);
    assert_non_null(strstr(lithe_last_error(), "external file 'lenet.data'"));
    static const struct {
        const char *name, *says;
        lithe_status st;
    } bad[] = {{"absolute", "is an absolute path", LITHE_ERR_FORMAT},
               {"escape", "leaves the model's folder", LITHE_ERR_FORMAT},
               {"offset", "lies outside", LITHE_ERR_FORMAT},
               {"length", "lies outside", LITHE_ERR_FORMAT},
               {"size", "need 1600", LITHE_ERR_FORMAT},
               {"missing", "cannot open", LITHE_ERR_IO}};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        snprintf(path, sizeof path, "%s/onnx_external/lenet_%s.onnx", dir, bad[k].name);
        assert_int_equal(lithe_model_load(path, &m), bad[k].st);
        assert_null(m);
        printf("test_onnx: external data, %-8s refused: %s\n", bad[k].name, lithe_last_error());
        assert_non_null(strstr(lithe_last_error(), bad[k].says));
        assert_non_null(strstr(lithe_last_error(), "fc1.weight"));
    }
    lithe_value_release(X);
}

/* How many live nodes of g run op (a fused op's name, "fused:LayerNorm", or an ONNX op type). */
static size_t count_op(const lithe__graph *g, const char *op) {
    size_t n = 0;
    for (size_t i = 0; i < g->onnx.n_nodes; i++)
        if (!g->node_dead[i] && !strcmp(g->node_op[i]->op_type, op)) n++;
    return n;
}

static size_t live_nodes(const lithe__graph *g) {
    size_t n = 0;
    for (size_t i = 0; i < g->onnx.n_nodes; i++) n += !g->node_dead[i];
    return n;
}

/* Load-time fusion (core/graph/fuse.c): the patterns torch.onnx decomposes run as one node each —
 * the encoder's LayerNorms and Linear (+ ReLU) layers, the mixer's LayerNorm and GELU, the MLP's
 * Gemm + Relu, the feed-forward block's Linear + GELU, Conv + Relu / Clip (lenet, resblock, convact:
 * ReLU6, a depthwise conv, a Clip without max) — and the outputs and gradients match the node-by-node run (LITHE_GRAPH_FUSE=0) as well as
 * torch's (test_parity runs every model with fusion on). The near misses fuse nothing. */
static void test_fusion(void **state) {
    (void)state;
    static const struct {
        const char *name;
        size_t layernorm, linear, gelu, conv, any, conv_add, matmul_t;
    } want[] = {/* the encoder's attention: per layer Q·Kᵀ with Kᵀ's Transpose, P·V with V's and the
                 * heads' merge (issue 29: fused:MatMulT) */
                {"encoder", 4, 8, 0, 0, 16, 0, 4}, {"mixer13", 1, 3, 1, 0, 5, 0, 0}, {"mixer17", 0, 3, 1, 0, 4, 0, 0},
                {"mlp13", 0, 3, 0, 0, 3, 0, 0},    {"ffn", 0, 2, 0, 0, 2, 0, 0},     {"nearmiss", 0, 0, 0, 0, 0, 0, 0},
                {"lenet", 0, 2, 0, 1, 3, 0, 0},    {"resblock", 0, 1, 0, 1, 3, 1, 0}, {"convact", 0, 0, 0, 3, 3, 0, 0},
                {"convadd", 0, 0, 0, 1, 6, 5, 0},
                /* issue 23: mobilenet_v3's Conv + HardSwish (opset 13: Mul(z, HardSigmoid(z))), its gate's
                 * Conv + HardSigmoid, a Conv + Sigmoid; two near misses */
                {"convhswish13", 0, 0, 0, 4, 4, 0, 0}, {"convhswish14", 0, 0, 0, 4, 4, 0, 0},
                /* issue 29: attention's Q·Kᵀ takes Q's heads Transpose too, once the scaling Div after
                 * it is moved before it (fuse.c's try_scalar_first) */
                {"heads", 0, 3, 0, 0, 5, 0, 2}};
    for (size_t k = 0; k < sizeof want / sizeof *want; k++) {
        const char *name = want[k].name;
        lithe_value *X = value_of(get("%s.x", name)), *R = value_of(get("%s.r", name));
        lithe_value *Y[2] = {NULL, NULL}, *dX[2] = {NULL, NULL};
        lithe_model *m[2] = {NULL, NULL};
        for (int unfused = 0; unfused < 2; unfused++) {
            if (unfused) setenv("LITHE_GRAPH_FUSE", "0", 1);
            m[unfused] = load(name, NULL, NULL);
            unsetenv("LITHE_GRAPH_FUSE");
            const lithe__graph *g = m[unfused]->shims[0]->state;
            size_t ln = count_op(g, "fused:LayerNorm"), lin = count_op(g, "fused:Linear"), ge = count_op(g, "fused:Gelu");
            size_t cv = count_op(g, "fused:Conv"), ca = count_op(g, "fused:ConvAdd"), mt = count_op(g, "fused:MatMulT");
            size_t lin_gelu = 0; /* Linears that took a GELU */
            for (size_t i = 0; i < g->onnx.n_nodes; i++)
                lin_gelu += !g->node_dead[i] && g->node_fuse[i].kind == LITHE__FUSE_LINEAR && g->node_fuse[i].has_act &&
                            g->node_fuse[i].act.kind == LITHE__ACT_GELU;
            printf("test_onnx: %-8s %s: %zu fused nodes (%zu LayerNorm, %zu Linear of which %zu with GELU, %zu GELU, "
                   "%zu Conv + act, %zu Conv + Add, %zu MatMul + Transposes), %zu of %zu nodes left\n", name,
                   unfused ? "LITHE_GRAPH_FUSE=0" : "fused", g->n_fused, ln, lin, lin_gelu, ge, cv, ca, mt, live_nodes(g),
                   g->onnx.n_nodes);
            assert_int_equal(mt, unfused ? 0 : want[k].matmul_t);
            assert_int_equal(cv, unfused ? 0 : want[k].conv);
            assert_int_equal(ca, unfused ? 0 : want[k].conv_add);
            assert_int_equal(ge, unfused ? 0 : want[k].gelu);
            if (!strcmp(name, "ffn")) assert_int_equal(lin_gelu, unfused ? 0 : 1);
            /* heads: of its 9 Transposes, the 3 of the weights go into the Linears, Q's, K's, V's and the
             * heads' merge into the MatMuls; the two around the scalar Mul stay */
            if (!strcmp(name, "heads")) assert_int_equal(count_op(g, "Transpose"), unfused ? 9 : 2);
            assert_int_equal(g->n_fused, unfused ? 0 : want[k].any);
            assert_int_equal(ln, unfused ? 0 : want[k].layernorm);
            assert_int_equal(lin, unfused ? 0 : want[k].linear);
            lithe_backprop *bp = NULL;
            OK(lithe_model_begin_update(m[unfused], X, &Y[unfused], &bp));
            /* what the fused Linears keep for the backward (white-box: the backprop is the graph's
             * gexec): the pre-activation only where the activation's backward reads it (GELU);
             * a Relu's backward reads its output alone, so none is made */
            const lithe__gexec *gx = (const lithe__gexec *)bp;
            for (size_t i = 0; i < g->onnx.n_nodes; i++) {
                const lithe__gfuse *fu = &g->node_fuse[i];
                if (g->node_dead[i] || fu->kind != LITHE__FUSE_LINEAR) continue;
                bool keeps = gx->saved[2 * i] != NULL, needs_z = fu->has_act && fu->act.kind == LITHE__ACT_GELU;
                if (keeps != needs_z)
                    printf("test_onnx: %s node %zu (Linear, %s) %s a pre-activation\n", name, i,
                           fu->has_act ? (fu->act.kind == LITHE__ACT_GELU ? "GELU" : "Relu") : "no activation",
                           keeps ? "keeps" : "does not keep");
                assert_true(keeps == needs_z);
            }
            OK(lithe_backprop_run(bp, R, &dX[unfused]));
            lithe_backprop_free(bp);
            char what[160];
            snprintf(what, sizeof what, "%s output (%s)", name, unfused ? "unfused" : "fused");
            expect_close(what, lithe_value_get_tensor(Y[unfused]), get("%s.y", name), 1e-4, 1e-4);
            snprintf(what, sizeof what, "%s dX (%s)", name, unfused ? "unfused" : "fused");
            expect_close(what, lithe_value_get_tensor(dX[unfused]), get("%s.dx", name), 1e-4, 1e-4);
        }
        /* fused against unfused: the same values up to rounding (LayerNorm's statistics in double) */
        for (int v = 0; v < 2; v++) {
            const lithe_tensor *a = lithe_value_get_tensor(v ? dX[0] : Y[0]), *b = lithe_value_get_tensor(v ? dX[1] : Y[1]);
            const float *pa = lithe_tensor_data(a), *pb = lithe_tensor_data(b);
            double worst = 0;
            for (int64_t i = 0; i < lithe_tensor_numel(a); i++) {
                double d = fabs((double)pa[i] - pb[i]) / (1e-3 + fabs((double)pb[i]));
                worst = d > worst ? d : worst;
            }
            printf("test_onnx: %-8s fused vs unfused %s: max relative difference %.2e\n", name, v ? "dX" : "output", worst);
            /* as close as each is to torch; convhswish13's unfused pair rounds x clip(x / 6 + 1/2, 0, 1)
             * (HardSigmoid's 1/6 as a float, then Mul), the fused Conv HardSwish's x clip(x + 3, 0, 6) / 6,
             * torch's formula: ulps apart, which its x4 weights grow (both within 1e-5 of torch) */
            assert_true(worst <= (strcmp(name, "convhswish13") ? 1e-4 : 5e-4));
            if (want[k].any == 0) assert_true(worst == 0); /* nothing fused: the very same run */
        }
        for (int u = 0; u < 2; u++) {
            lithe_value_release(Y[u]);
            lithe_value_release(dX[u]);
            lithe_model_free(m[u]);
        }
        lithe_value_release(X);
        lithe_value_release(R);
    }
}

/* Conv + residual Add (fuse.c's fused:ConvAdd): at inference the CPU adds the residual in the
 * GEMM's store (conv2d_add), which must give the node-by-node run's bits (LITHE_GRAPH_FUSE=0) — in
 * both orientations of the convolution's GEMM (LITHE_CONV_ROWS), at the exported batch and 3 times
 * it, with the Conv weights prepared and not. convadd: residual first and second, no bias, a
 * depthwise Conv, a broadcast residual (Conv then Add), near misses; resblock: its Conv + BN + Add.
 * On Vulkan (lavapipe, where there is one) the fused nodes run Conv then Add: predict and a
 * backward against torch. */
static void test_conv_add_bits(void **state) {
    (void)state;
    static const char *const names[] = {"convadd", "resblock"}, *const rows[] = {NULL, "filters", "pixels"};
    char *was = getenv("LITHE_CONV_ROWS") ? strdup(getenv("LITHE_CONV_ROWS")) : NULL;
    for (size_t k = 0; k < 2; k++)
        for (size_t r = 0; r < 3; r++) {
            if (rows[r]) setenv("LITHE_CONV_ROWS", rows[r], 1);
            else unsetenv("LITHE_CONV_ROWS");
            lithe_model *m[2];
            for (int unfused = 0; unfused < 2; unfused++) {
                if (unfused) setenv("LITHE_GRAPH_FUSE", "0", 1);
                m[unfused] = load(names[k], NULL, NULL);
                unsetenv("LITHE_GRAPH_FUSE");
                const lithe__graph *g = m[unfused]->shims[0]->state;
                assert_int_equal(count_op(g, "fused:ConvAdd"), unfused ? 0 : k == 0 ? 5 : 1);
            }
            for (int prep = 0; prep < 2; prep++)
                for (int times = 1; times <= 3; times += 2) {
                    if (prep) OK(lithe_model_prepare_inference(m[0]));
                    if (prep) OK(lithe_model_prepare_inference(m[1]));
                    lithe_value *X = tiled(get("%s.x", names[k]), times), *Y[2] = {NULL, NULL};
                    for (int u = 0; u < 2; u++) OK(lithe_model_predict(m[u], X, &Y[u]));
                    expect_same(Y[0], Y[1]);
                    if (times == 1 && !prep)
                        expect_close(names[k], lithe_value_get_tensor(Y[0]), get("%s.y", names[k]), 1e-4, 1e-4);
                    lithe_value_release(X);
                    lithe_value_release(Y[0]);
                    lithe_value_release(Y[1]);
                }
            printf("test_onnx: %-8s Conv + Add fused, LITHE_CONV_ROWS=%s: predictions bit-identical to the unfused run\n",
                   names[k], rows[r] ? rows[r] : "(unset)");
            lithe_model_free(m[0]);
            lithe_model_free(m[1]);
        }
    if (was) setenv("LITHE_CONV_ROWS", was, 1);
    else unsetenv("LITHE_CONV_ROWS");
    free(was);
    /* Vulkan has no conv2d_add: the fused node runs its Conv, then the Add (predict and a step) */
    lithe_backend *vk = NULL;
    if (lithe_backend_get("vulkan", &vk) != LITHE_OK) {
        print_message("test_conv_add_bits: no Vulkan device here (%s)\n", lithe_last_error());
        return;
    }
    for (size_t k = 0; k < 2; k++) {
        lithe_model *m = load(names[k], NULL, NULL);
        OK(lithe_model_set_backend(m, vk));
        lithe_tensor *xh = tensor_of(get("%s.x", names[k])), *rh = tensor_of(get("%s.r", names[k])), *xd = NULL,
                     *rd = NULL, *yh = NULL, *dxh = NULL;
        OK(lithe_tensor_to_backend(xh, vk, &xd));
        OK(lithe_tensor_to_backend(rh, vk, &rd));
        lithe_value *X = NULL, *R = NULL, *Y = NULL, *dX = NULL;
        OK(lithe_value_tensor(xd, &X));
        OK(lithe_value_tensor(rd, &R));
        OK(lithe_model_predict(m, X, &Y));
        OK(lithe_tensor_to_backend(lithe_value_get_tensor(Y), NULL, &yh));
        expect_close("vulkan predict", yh, get("%s.y", names[k]), 1e-4, 1e-4);
        lithe_tensor_release(yh);
        lithe_value_release(Y);
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        OK(lithe_backprop_run(bp, R, &dX));
        OK(lithe_tensor_to_backend(lithe_value_get_tensor(dX), NULL, &dxh));
        expect_close("vulkan dX", dxh, get("%s.dx", names[k]), 1e-4, 1e-4);
        printf("test_onnx: %-8s on vulkan: Conv + Add fused, predict and dX agree with torch\n", names[k]);
        lithe_tensor_release(dxh);
        lithe_backprop_free(bp);
        lithe_value_release(Y);
        lithe_value_release(dX);
        lithe_value_release(X);
        lithe_value_release(R);
        lithe_tensor_release(xh);
        lithe_tensor_release(rh);
        lithe_tensor_release(xd);
        lithe_tensor_release(rd);
        lithe_model_free(m);
    }
}

/* Allocation failures while a graph is built, fused, run and backpropagated: every failure is
 * LITHE_ERR_OOM and leaves nothing allocated (the ffn block: Linear + GELU fusion; the mixer at
 * opset 13: LayerNorm, GELU and Linear fusions; the bytes and goldens are copied before the sweep). */
static uint8_t *oom_bytes[2];
static size_t oom_len[2];
static lithe_value *oom_x[2], *oom_r[2];
static lithe_status oom_scenario(int which) {
    lithe_model *m = NULL;
    lithe_value *Y = NULL, *dX = NULL;
    lithe_backprop *bp = NULL;
    lithe_status s = lithe_onnx_load_bytes(oom_bytes[which], oom_len[which], &m);
    if (s == LITHE_OK) s = lithe_model_begin_update(m, oom_x[which], &Y, &bp);
    if (s == LITHE_OK) s = lithe_backprop_run(bp, oom_r[which], &dX);
    lithe_value_release(dX);
    lithe_backprop_free(bp);
    lithe_value_release(Y);
    lithe_model_free(m);
    return s;
}
static void test_fusion_allocation_failures(void **state) {
    (void)state;
    const char *names[2] = {"ffn", "mixer13"};
    for (int k = 0; k < 2; k++) {
        const golden *g = get("%s.onnx", names[k]);
        oom_bytes[k] = bytes_of(g);
        oom_len[k] = (size_t)g->n;
        oom_x[k] = value_of(get("%s.x", names[k]));
        oom_r[k] = value_of(get("%s.r", names[k]));
    }
    failing_alloc_sweep(2, oom_scenario);
    for (int k = 0; k < 2; k++) {
        free(oom_bytes[k]);
        lithe_value_release(oom_x[k]);
        lithe_value_release(oom_r[k]);
    }
}

/* Allocation failures while Conv weights are prepared and read (resblock, pixel rows forced so
 * that every Conv reads its packed W): each is LITHE_ERR_OOM and leaves nothing allocated. */
static lithe_status prep_oom_scenario(int which) {
    (void)which;
    lithe_model *m = NULL;
    lithe_value *Y = NULL;
    lithe_status s = lithe_onnx_load_bytes(oom_bytes[0], oom_len[0], &m);
    if (s == LITHE_OK) s = lithe_model_prepare_inference(m);
    if (s == LITHE_OK) s = lithe_model_predict(m, oom_x[0], &Y);
    lithe_value_release(Y);
    lithe_model_free(m);
    return s;
}
static void test_prepared_allocation_failures(void **state) {
    (void)state;
    char *was = getenv("LITHE_CONV_ROWS") ? strdup(getenv("LITHE_CONV_ROWS")) : NULL; /* setenv may invalidate getenv's pointer */
    setenv("LITHE_CONV_ROWS", "pixels", 1);
    const golden *g = get("resblock.onnx");
    oom_bytes[0] = bytes_of(g);
    oom_len[0] = (size_t)g->n;
    oom_x[0] = value_of(get("resblock.x"));
    failing_alloc_sweep(1, prep_oom_scenario);
    free(oom_bytes[0]);
    lithe_value_release(oom_x[0]);
    if (was) setenv("LITHE_CONV_ROWS", was, 1);
    else unsetenv("LITHE_CONV_ROWS");
    free(was);
}

/* Weights prepared for inference (lithe_model_prepare_inference): the Gemm / MatMul initializers
 * packed once, every model's predictions the unprepared bits (batch as exported and 5 times it);
 * a training step drops the copies and the next predict uses the stepped weights. */
static void test_prepared(void **state) {
    (void)state;
    for (size_t k = 0; k < N_MODELS; k++) {
        const char *name = models[k];
        lithe_model *m = load(name, NULL, NULL);
        for (int times = 1; times <= 5; times += 4) {
            lithe_value *X = tiled(get("%s.x", name), times), *Y0 = NULL, *Y1 = NULL;
            OK(lithe_model_predict(m, X, &Y0));
            OK(lithe_model_prepare_inference(m));
            size_t bytes = lithe_model_prepared_bytes(m);
            if (!strncmp(name, "mlp", 3) || !strncmp(name, "mixer", 5) || !strcmp(name, "encoder")) assert_true(bytes > 0);
            /* Conv weights at group 1 too (their GEMM's Wᵀ: conv/gemm.c's pixel rows read it) */
            if (!strcmp(name, "lenet") || !strcmp(name, "resblock") || !strcmp(name, "convact")) assert_true(bytes > 0);
            OK(lithe_model_predict(m, X, &Y1));
            expect_same(Y0, Y1);
            if (times == 1) printf("test_onnx: %-8s prepared %zu bytes, predictions bit-identical\n", name, bytes);
            lithe_value_release(X);
            lithe_value_release(Y0);
            lithe_value_release(Y1);
        }
        if (!strcmp(name, "resblock")) { /* the Conv weights' copies are what predict reads (pixel rows, forced
                                        * for every Conv so that each reads its copy): a raw write
                                        * to them leaves the prediction as it was; releasing them,
                                        * the prediction sees the write */
            char *was = getenv("LITHE_CONV_ROWS") ? strdup(getenv("LITHE_CONV_ROWS")) : NULL; /* setenv may invalidate getenv's pointer */
            setenv("LITHE_CONV_ROWS", "pixels", 1);
            lithe_value *X = value_of(get("%s.x", name)), *P0 = NULL, *P1 = NULL, *P2 = NULL;
            lithe_model_release_prepared(m);
            OK(lithe_model_predict(m, X, &P0));
            OK(lithe_model_prepare_inference(m));
            OK(lithe_model_predict(m, X, &P1));
            expect_same(P0, P1);
            lithe_value_release(P1);
            int convs = 0;
            for (size_t p = 0; p < lithe_model_n_params(m); p++) {
                lithe_tensor *W = NULL;
                OK(lithe_model_get_param(m, lithe_model_param_name(m, p), &W));
                float *w = lithe_tensor_data(W);
                convs += lithe_tensor_ndim(W) == 4;
                for (int64_t i = 0; lithe_tensor_ndim(W) == 4 && i < lithe_tensor_numel(W); i++) w[i] = -w[i];
            }
            assert_true(convs > 0);
            OK(lithe_model_predict(m, X, &P1));
            expect_same(P0, P1);
            lithe_model_release_prepared(m);
            OK(lithe_model_predict(m, X, &P2));
            lithe_tensor *a = lithe_value_get_tensor(P0), *b = lithe_value_get_tensor(P2);
            assert_true(memcmp(lithe_tensor_data(a), lithe_tensor_data(b), sizeof(float) * (size_t)lithe_tensor_numel(a)));
            if (was) setenv("LITHE_CONV_ROWS", was, 1);
            else unsetenv("LITHE_CONV_ROWS");
            free(was);
            lithe_value_release(X);
            lithe_value_release(P0);
            lithe_value_release(P1);
            lithe_value_release(P2);
        }
        if (!strcmp(name, "mlp13")) { /* a step: the copies go, the forward sees the new weights */
            lithe_value *X = value_of(get("%s.x", name)), *R = value_of(get("%s.r", name)), *Y = NULL, *P0 = NULL,
                        *P1 = NULL, *P2 = NULL;
            lithe_backprop *bp = NULL;
            lithe_optimizer *opt = NULL;
            OK(lithe_model_predict(m, X, &P0));
            /* the prepared copies are what predict reads: a raw-pointer write (which lithe cannot
             * see) to every 2-D weight leaves the prediction as it was (the documented snapshot) */
            for (int pass = 0; pass < 2; pass++) {
                for (size_t p = 0; p < lithe_model_n_params(m); p++) {
                    lithe_tensor *W = NULL;
                    OK(lithe_model_get_param(m, lithe_model_param_name(m, p), &W));
                    float *w = lithe_tensor_data(W);
                    for (int64_t i = 0; lithe_tensor_ndim(W) == 2 && i < lithe_tensor_numel(W); i++) w[i] = -w[i];
                }
                if (pass == 0) {
                    lithe_value *Ps = NULL;
                    OK(lithe_model_predict(m, X, &Ps));
                    expect_same(P0, Ps);
                    lithe_value_release(Ps);
                }
            }
            OK(lithe_optimizer_new(&(lithe_optimizer_opts){.learn_rate = 0.1}, &opt));
            OK(lithe_model_begin_update(m, X, &Y, &bp));
            OK(lithe_backprop_run(bp, R, NULL));
            OK(lithe_model_finish_update(m, opt));
            assert_int_equal(lithe_model_prepared_bytes(m), 0);
            OK(lithe_model_predict(m, X, &P1));
            lithe_model_release_prepared(m);
            OK(lithe_model_predict(m, X, &P2));
            expect_same(P1, P2);
            lithe_tensor *a = lithe_value_get_tensor(P0), *b = lithe_value_get_tensor(P1);
            assert_true(memcmp(lithe_tensor_data(a), lithe_tensor_data(b), sizeof(float) * (size_t)lithe_tensor_numel(a)));
            lithe_value_release(X);
            lithe_value_release(R);
            lithe_value_release(Y);
            lithe_value_release(P0);
            lithe_value_release(P1);
            lithe_value_release(P2);
            lithe_backprop_free(bp);
            lithe_optimizer_free(opt);
        }
        lithe_model_free(m);
    }
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parity), cmocka_unit_test(test_finite_differences), cmocka_unit_test(test_sgd_steps),
        cmocka_unit_test(test_files),  cmocka_unit_test(test_bad_inputs),         cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_plan),       cmocka_unit_test(test_plan_eviction),
        cmocka_unit_test(test_plan_vulkan),        cmocka_unit_test(test_external_data),
        cmocka_unit_test(test_fusion),             cmocka_unit_test(test_fusion_allocation_failures),
        cmocka_unit_test(test_conv_add_bits),
        cmocka_unit_test(test_prepared),
        cmocka_unit_test(test_bad_window_attrs),
        cmocka_unit_test(test_bad_act_attrs),
        cmocka_unit_test(test_prepared_allocation_failures),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
