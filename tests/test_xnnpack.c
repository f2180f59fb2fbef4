/* LITHE_XNNPACK's prepared ops (backends/cpu/xnnpack.c), built against lithe_xnn (the library as
 * LITHE_XNNPACK=ON builds it). The oracle is lithe's own path (which the other tests check against
 * PyTorch and float64); XNNPACK sums in another order, so results agree within float tolerance:
 *   - convolutions, under every ISA table this machine runs (lithe__simd_force): every kind the rule
 *     hands to XNNPACK under that table (depthwise 3x3 s1 / s2 and 5x5 s1 / s2 through NCHW where the
 *     table lacks lithe's 8- / 16-lane depthwise kernels; one-group convolutions through NHWC by the
 *     table, xnn_dense: none on AVX-512, kernels larger than 1x1 on few channels (C·KH·KW < 100) on
 *     AVX2, all on SSE2 / scalar) with and without bias, at batch 1 and 3, must run through XNNPACK
 *     (done) and match lithe's conv2d; the kinds it declines (no operator made: depthwise on AVX2 /
 *     AVX-512, the one-group ones xnn_dense declines, grouped non-depthwise, dilated depthwise) run
 *     lithe's kernels, and an operator made under one table is declined at run under a table whose
 *     rule keeps lithe's kernels;
 *   - fully connected: N = 10 at M = 32 / 64 with no clamp and relu through XNNPACK; M = 1 and
 *     N = 64 declined; a dense model (Relu(16) -> Linear(10)) predicted prepared and unprepared;
 *     HardTanh, ReluK and ClippedLinear (clamps) through XNNPACK, HardSigmoid not;
 *   - freshness: a write to the bias (or W) drops the operator (lithe's path again);
 *   - imported graphs (gen_onnx_goldens.py's mobile, lenet, mlp13, torch.onnx.export): prepared
 *     predictions at batch 1x and 8x the golden's match the unprepared ones within float tolerance
 *     and PyTorch's within test_onnx's 1e-4, under every ISA table, with the number of ops XNNPACK
 *     ran checked (mobile:
 *     every side of the rule, per table: depthwise, one-group convolutions (1x1, first layers
 *     of small C·KH·KW and larger ones), Gemm at batch 2 / 16);
 *   - a Conv with window attributes the graph refuses (stride 0, negative pads, 2 pads) gets no
 *     operator when prepared; predict then fails naming the node, as unprepared;
 *   - threads: with 2, lithe's kernels run (none through XNNPACK), bit-identical to unprepared;
 *   - allocation failure: every allocation lithe makes while preparing an operator (its bookkeeping,
 *     the transposed weights) failed in turn: LITHE_ERR_OOM, no form, no leak (XNNPACK's own
 *     allocations use the C library, backends/cpu/xnnpack.c). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"
#include "io/onnx.h"
#include "../backends/cpu/simd/simd.h" /* the ISA tables: lithe__simd_available, lithe__simd_force */
#include "failing_alloc.h"
#include "golden/golden.h"
#include "golden/graph_check.h"

extern size_t lithe__xnn_runs; /* backends/cpu/xnnpack.c */

static lithe_tensor *rnd(int nd, const int64_t *shape, uint64_t seed) {
    lithe_tensor *t = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, nd, shape, &t));
    lithe_rng rng = {seed, 0};
    float *d = lithe_tensor_data(t);
    size_t n = (size_t)lithe_tensor_numel(t);
    lithe_rng_uniform(&rng, d, n);
    for (size_t i = 0; i < n; i++) d[i] = 2.0f * d[i] - 1.0f;
    return t;
}

/* |a - b| <= 1e-5 * (scale of the sums) elementwise; returns the max difference */
static double close_to(const lithe_tensor *a, const lithe_tensor *b, double scale) {
    const float *x = lithe_tensor_data((lithe_tensor *)a), *y = lithe_tensor_data((lithe_tensor *)b);
    double worst = 0;
    for (int64_t i = 0; i < a->numel; i++) {
        double d = x[i] > y[i] ? x[i] - y[i] : y[i] - x[i];
        if (d > worst) worst = d;
        if (!(d <= 1e-5 * scale)) {
            print_error("element %lld of %lld: %.9g vs %.9g (tolerance %.3g)\n", (long long)i, (long long)a->numel, x[i], y[i], 1e-5 * scale);
            fail();
        }
    }
    return worst;
}

typedef struct conv_case {
    const char *what;
    int64_t C, H, M, k, s, p, group, dil;
    bool xnn; /* a kind the rule may hand to XNNPACK, by the table: depthwise 3x3 / 5x5 (only on a
               * table without lithe's 8- / 16-lane depthwise kernels, xnn_depthwise) or one group
               * (xnn_dense) */
} conv_case;

/* The depthwise cases cover each of lithe's depthwise paths on AVX-512 and AVX2 (the in-place 3x3,
 * AVX2's planes under 8 wide, stride 2 reading the bottom padding, 5x5): on those tables all stay
 * lithe's; on the others (SSE2, scalar) all go to XNNPACK. */
static const conv_case conv_cases[] = {
    {"depthwise 3x3 s1", 32, 13, 32, 3, 1, 1, 32, 1, true},
    {"depthwise 3x3 s2", 24, 14, 24, 3, 2, 1, 24, 1, true},
    {"depthwise 3x3 s1 on 6x6", 24, 6, 24, 3, 1, 1, 24, 1, true},
    {"depthwise 3x3 s2 on 15x15", 16, 15, 16, 3, 2, 1, 16, 1, true},
    {"depthwise 5x5 s1", 16, 12, 16, 5, 1, 2, 16, 1, true},
    {"depthwise 5x5 s2", 16, 11, 16, 5, 2, 2, 16, 1, true},
    {"dense 5x5 p2 (CNN, K 400)", 16, 14, 32, 5, 1, 2, 1, 1, true},
    {"dense 11x11, 1 channel (K 121)", 1, 20, 4, 11, 2, 5, 1, 1, true},
    {"dense 5x5, 1 channel (K 25)", 1, 20, 16, 5, 1, 2, 1, 1, true},
    {"dense 3x3 s2, 12 channels (K 108)", 12, 23, 8, 3, 2, 1, 1, 1, true},
    {"dense 3x3 s2, 3 channels (K 27)", 3, 23, 8, 3, 2, 1, 1, 1, true},
    {"dense 3x3 s1, 11 channels (K 99)", 11, 9, 8, 3, 1, 1, 1, 1, true},
    {"pointwise on 7x7", 40, 7, 24, 1, 1, 0, 1, 1, true},
    {"pointwise on 14x14", 40, 14, 24, 1, 1, 0, 1, 1, true},
    {"pointwise, 3 channels", 3, 9, 16, 1, 1, 0, 1, 1, true},
    {"grouped 3x3 (declined)", 16, 9, 16, 3, 1, 1, 4, 1, false},
    {"dilated depthwise (declined)", 8, 12, 8, 3, 1, 2, 8, 2, false},
};

/* The ISA tables this machine runs (scalar first); the tests force each in turn. */
static const lithe__simd_kernels *tables[8];
static int ntables;

/* Whether the rule hands depthwise convolutions to XNNPACK under table t: only where t lacks lithe's
 * 8- and 16-lane depthwise kernels (measured faster than XNNPACK's NCHW operator on every depthwise
 * shape on AVX-512 and AVX2: docs/performance.md). Those two must have them. */
static bool xnn_depthwise(const lithe__simd_kernels *t) {
    if (!strcmp(t->isa, "avx512") || !strcmp(t->isa, "avx2")) assert_non_null(t->dwconv3x3);
    return t->dwconv3x3 == NULL;
}

/* Whether the rule hands a one-group convolution (a k x k kernel on C channels) to XNNPACK's NHWC
 * operator under table t, by the table's name (measured inside the models, docs/performance.md):
 * never on AVX-512; on AVX2 only a kernel larger than 1x1 with C·k·k < 100 (a first layer); on the
 * narrower tables (SSE2, scalar, NEON) always. */
static bool xnn_dense(const lithe__simd_kernels *t, int64_t C, int64_t k) {
    if (!strcmp(t->isa, "avx512")) return false;
    if (!strcmp(t->isa, "avx2")) return k > 1 && C * k * k < 100;
    assert_true(!strcmp(t->isa, "sse2") || !strcmp(t->isa, "scalar") || !strcmp(t->isa, "neon"));
    return true;
}

/* The rule's answer for conv_cases[i] under table t */
static bool conv_expect(size_t i, const lithe__simd_kernels *t) {
    const conv_case *c = &conv_cases[i];
    if (!c->xnn) return false;
    if (c->group == 1) return xnn_dense(t, c->C, c->k);
    return xnn_depthwise(t);
}

enum { OOM_NHWC = 6 }; /* conv_cases' "dense 5x5 p2 (CNN, K 400)" */

static void conv_geom(const conv_case *c, int64_t N, lithe__prep_op *op) {
    memset(op, 0, sizeof *op);
    op->kind = LITHE__PREP_CONV2D;
    op->out_min = -INFINITY;
    op->out_max = INFINITY;
    lithe__conv2d *g = &op->conv;
    g->N = N, g->C = c->C, g->H = g->W = c->H, g->M = c->M, g->KH = g->KW = c->k, g->group = c->group;
    g->stride[0] = g->stride[1] = c->s;
    g->dil[0] = g->dil[1] = c->dil;
    for (int i = 0; i < 4; i++) g->pad[i] = c->p;
    g->OH = g->OW = (c->H + 2 * c->p - c->dil * (c->k - 1) - 1) / c->s + 1;
}

/* conv_cases[i] under ISA table t at batch N, with or without bias */
static void conv_case_run(lithe_backend *be, int t, size_t i, int with_bias, int64_t N) {
    lithe__simd_force(tables[t]);
    const conv_case *c = &conv_cases[i];
    lithe__prep_op op;
    conv_geom(c, N, &op);
    const lithe__conv2d *g = &op.conv;
    lithe_tensor *X = rnd(4, (int64_t[]){N, c->C, c->H, c->H}, 1 + i);
    lithe_tensor *W = rnd(4, (int64_t[]){c->M, c->C / c->group, c->k, c->k}, 100 + i);
    lithe_tensor *b = with_bias ? rnd(1, (int64_t[]){c->M}, 200 + i) : NULL;
    lithe_tensor *Y = NULL, *R = NULL;
    OK(lithe_tensor_new(NULL, LITHE_F32, 4, (int64_t[]){N, c->M, g->OH, g->OW}, &Y));
    OK(lithe_tensor_new(NULL, LITHE_F32, 4, (int64_t[]){N, c->M, g->OH, g->OW}, &R));
    OK(lithe__op_conv2d(be, g, X, W, b, NULL, R));
    OK(lithe__prepare_op(be, &op, W, b));
    bool expect = conv_expect(i, tables[t]);
    /* one the rule keeps gets no operator at all (the rule reads no image size or batch) */
    assert_int_equal(W->storage->prepared != NULL, expect);
    bool done = false;
    OK(lithe__run_prepared_op(be, false, &op, W, b, X, Y, &done));
    if (done != expect) {
        print_error("%s, N %lld, bias %d, %s table: XNNPACK %s\n", c->what, (long long)N, with_bias,
                    tables[t]->isa, done ? "ran" : "did not run");
        fail();
    }
    if (done) {
        double worst = close_to(Y, R, (double)(c->C / c->group * c->k * c->k + 1));
        print_message("%-30s %-6s N %lld bias %d: max |XNNPACK - lithe| %.2g\n", c->what, tables[t]->isa,
                      (long long)N, with_bias, worst);
        bool again = false; /* a training forward never reads it */
        OK(lithe__run_prepared_op(be, true, &op, W, b, X, Y, &again));
        assert_false(again);
        for (int u = 0; u < ntables; u++)
            if (!conv_expect(i, tables[u])) { /* run under a table the rule keeps: lithe's */
                lithe__simd_force(tables[u]);
                OK(lithe__run_prepared_op(be, false, &op, W, b, X, Y, &again));
                assert_false(again);
                lithe__simd_force(tables[t]);
            }
        if (b) { /* a write to the bias drops the operator */
            float z[1024] = {0};
            OK(lithe_tensor_write(b, z, (size_t)c->M * sizeof(float)));
            OK(lithe__run_prepared_op(be, false, &op, W, b, X, Y, &again));
            assert_false(again);
        }
    }
    lithe_tensor_release(X);
    lithe_tensor_release(W);
    lithe_tensor_release(b);
    lithe_tensor_release(Y);
    lithe_tensor_release(R);
}

static void test_conv(void **state) {
    (void)state;
    for (int t = 0; t < ntables; t++)
        for (size_t i = 0; i < sizeof conv_cases / sizeof conv_cases[0]; i++)
            for (int with_bias = 1; with_bias >= 0; with_bias--)
                for (int64_t N = 1; N <= 3; N += 2) conv_case_run(lithe__backend_cpu(), t, i, with_bias, N);
    lithe__simd_force(NULL);
}

static void test_fc(void **state) {
    (void)state;
    lithe_backend *be = lithe__backend_cpu();
    static const int64_t shapes[][4] = {/* M, N, K, xnn */ {64, 10, 512, 1}, {32, 10, 128, 1}, {17, 16, 33, 1},
                                        {1, 10, 512, 0},  {64, 64, 100, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        for (int relu = 0; relu < 2; relu++) {
            int64_t M = shapes[i][0], N = shapes[i][1], K = shapes[i][2];
            lithe_tensor *X = rnd(2, (int64_t[]){M, K}, 1), *W = rnd(2, (int64_t[]){N, K}, 2),
                         *b = rnd(1, (int64_t[]){N}, 3), *Y = NULL, *R = NULL;
            OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){M, N}, &Y));
            OK(lithe_tensor_new(NULL, LITHE_F32, 2, (int64_t[]){M, N}, &R));
            lithe__act a = {.kind = LITHE__ACT_RELU};
            OK(lithe__op_gemm_bias_act(be, false, true, X, W, b, relu ? &a : NULL, NULL, R));
            lithe__prep_op op;
            assert_true(lithe__affine_prep_op(relu ? &a : NULL, &op));
            OK(lithe__prepare_op(be, &op, W, b));
            bool done = false;
            OK(lithe__run_prepared_op(be, false, &op, W, b, X, Y, &done));
            assert_int_equal(done, shapes[i][3]);
            if (done) close_to(Y, R, (double)K + 1);
            lithe_tensor_release(X);
            lithe_tensor_release(W);
            lithe_tensor_release(b);
            lithe_tensor_release(Y);
            lithe_tensor_release(R);
        }
}

/* chain(Relu(16), Linear(10)) over 300 inputs: the Relu layer's N = 16 and the Linear's N = 10 go to
 * XNNPACK at batch 40, the prediction matches the unprepared one within tolerance; batch 1 is
 * lithe's path (bit-identical to unprepared). */
static void test_dense_model(void **state) {
    (void)state;
    lithe_model *l[2], *m = NULL;
    OK(lithe_relu(&(lithe_dense_opts){.nO = 16, .nI = 300}, &l[0]));
    OK(lithe_linear(&(lithe_dense_opts){.nO = 10, .nI = 16}, &l[1]));
    OK(lithe_chain(2, l, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    for (int64_t B = 40; B >= 1; B -= 39) {
        lithe_tensor *X = rnd(2, (int64_t[]){B, 300}, 7), *Y0 = NULL, *Y1 = NULL;
        lithe_model_release_prepared(m);
        OK(lithe_model_predict_tensor(m, X, &Y0));
        OK(lithe_model_prepare_inference(m));
        assert_true(lithe_model_prepared_bytes(m) > 0);
        size_t before = lithe__xnn_runs;
        OK(lithe_model_predict_tensor(m, X, &Y1));
        assert_int_equal(lithe__xnn_runs - before, B == 40 ? 2 : 0); /* both layers at 40 rows, none at 1 */
        if (B == 1) assert_memory_equal(lithe_tensor_data(Y0), lithe_tensor_data(Y1), 10 * sizeof(float));
        else close_to(Y1, Y0, 301.0);
        if (B == 40) { /* a raw write, then prepare again: the operators are re-made from the new W
                        * (the call is a fresh snapshot), so predict matches the unprepared one */
            OK(lithe_model_prepare_inference(m));
            for (size_t p = 0; p < lithe_model_n_params(m); p++) {
                lithe_tensor *P = NULL;
                OK(lithe_model_get_param(m, lithe_model_param_name(m, p), &P));
                float *w = lithe_tensor_data(P);
                for (int64_t i = 0; lithe_tensor_ndim(P) == 2 && i < lithe_tensor_numel(P); i++) w[i] = -w[i];
            }
            lithe_tensor *Y2 = NULL, *Y3 = NULL;
            OK(lithe_model_predict_tensor(m, X, &Y2)); /* the snapshot: the old weights */
            close_to(Y2, Y0, 301.0);
            OK(lithe_model_prepare_inference(m));
            OK(lithe_model_predict_tensor(m, X, &Y3));
            lithe_model_release_prepared(m);
            lithe_tensor_release(Y2);
            OK(lithe_model_predict_tensor(m, X, &Y2)); /* unprepared, the new weights */
            close_to(Y3, Y2, 301.0);
            lithe_tensor_release(Y2);
            lithe_tensor_release(Y3);
            for (size_t p = 0; p < lithe_model_n_params(m); p++) { /* the weights back */
                lithe_tensor *P = NULL;
                OK(lithe_model_get_param(m, lithe_model_param_name(m, p), &P));
                float *w = lithe_tensor_data(P);
                for (int64_t i = 0; lithe_tensor_ndim(P) == 2 && i < lithe_tensor_numel(P); i++) w[i] = -w[i];
            }
        }
        lithe_tensor_release(X);
        lithe_tensor_release(Y0);
        lithe_tensor_release(Y1);
    }
    lithe_model_free(m);
}

/* The clipped_linear family: a slope of 1 and offset of 0 is a clamp (lithe__act_clamp), so
 * HardTanh ([-1, 1]), ReluK ([0, 6]) and ClippedLinear ([0, 1]) go to XNNPACK at 40 rows with the
 * clip as the operator's output clamp; HardSigmoid (slope 0.2, offset 0.5) has no operator form
 * and stays lithe's (bit-identical to unprepared). The inputs are scaled so that every clamp bites. */
static void test_clipped_dense(void **state) {
    (void)state;
    static const struct { const char *layer; size_t runs; } cases[] = {
        {"HardTanh.v1", 1}, {"ReluK.v1", 1}, {"ClippedLinear.v1", 1}, {"HardSigmoid.v1", 0}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        lithe_model *m = NULL;
        OK(lithe_dense(cases[k].layer, &(lithe_dense_opts){.nO = 12, .nI = 64}, &m));
        OK(lithe_model_initialize(m, NULL, NULL));
        lithe_tensor *X = rnd(2, (int64_t[]){40, 64}, 11), *Y0 = NULL, *Y1 = NULL;
        float *x = lithe_tensor_data(X);
        for (int64_t i = 0; i < lithe_tensor_numel(X); i++) x[i] *= 8.0f;
        OK(lithe_model_predict_tensor(m, X, &Y0));
        OK(lithe_model_prepare_inference(m));
        size_t before = lithe__xnn_runs;
        OK(lithe_model_predict_tensor(m, X, &Y1));
        assert_int_equal(lithe__xnn_runs - before, cases[k].runs);
        const float *y = lithe_tensor_data(Y0);
        float lo = INFINITY, hi = -INFINITY;
        for (int64_t i = 0; i < lithe_tensor_numel(Y0); i++) {
            lo = y[i] < lo ? y[i] : lo;
            hi = y[i] > hi ? y[i] : hi;
        }
        printf("test_xnnpack: %-16s %zu op through XNNPACK, outputs in [%g, %g]\n", cases[k].layer,
               lithe__xnn_runs - before, lo, hi);
        assert_true(lo == (k == 0 ? -1.0f : 0.0f) && hi == (k == 1 ? 6.0f : 1.0f)); /* both ends clamped */
        if (cases[k].runs) close_to(Y1, Y0, 8.0 * 65.0);
        else assert_memory_equal(lithe_tensor_data(Y0), lithe_tensor_data(Y1), 40 * 12 * sizeof(float));
        lithe_tensor_release(X);
        lithe_tensor_release(Y0);
        lithe_tensor_release(Y1);
        lithe_model_free(m);
    }
}

/* A clip with equal bounds (ClippedLinear accepts min == max) has no XNNPACK form (XNNPACK refuses
 * min >= max): prepare succeeds without an operator and predict keeps the unprepared bits. */
static void test_clip_equal_bounds(void **state) {
    (void)state;
    lithe_model *m = NULL;
    OK(lithe_clipped_linear(&(lithe_dense_opts){.nO = 10, .nI = 8}, 1.0f, 0.0f, 0.5f, 0.5f, &m));
    OK(lithe_model_initialize(m, NULL, NULL));
    lithe_tensor *X = rnd(2, (int64_t[]){40, 8}, 5), *Y0 = NULL, *Y1 = NULL;
    OK(lithe_model_predict_tensor(m, X, &Y0));
    OK(lithe_model_prepare_inference(m));
    size_t before = lithe__xnn_runs;
    OK(lithe_model_predict_tensor(m, X, &Y1));
    assert_int_equal(lithe__xnn_runs - before, 0);
    assert_memory_equal(lithe_tensor_data(Y0), lithe_tensor_data(Y1), 40 * 10 * sizeof(float));
    lithe_tensor_release(X);
    lithe_tensor_release(Y0);
    lithe_tensor_release(Y1);
    lithe_model_free(m);
}

/* Allocation failures while preparing an XNNPACK operator (lithe's bookkeeping, the transposed
 * weights) */
static lithe_tensor *oomW, *oomb;
static lithe__prep_op oom_op;
static lithe_status oom_scenario(int which) {
    lithe_backend *be = lithe__backend_cpu();
    lithe__simd_force(which < 2 ? tables[0] : NULL); /* the convolutions: the scalar table, where they are XNNPACK's */
    const conv_case *c = &conv_cases[which == 0 ? OOM_NHWC : 0]; /* the CNN's 5x5 / depthwise 3x3 s1 */
    if (which < 2) conv_geom(c, 1, &oom_op);
    else lithe__affine_prep_op(NULL, &oom_op);
    lithe_tensor *W = which == 2 ? oomW : NULL, *b = NULL;
    if (which < 2) {
        if (lithe_tensor_new(NULL, LITHE_F32, 4, (int64_t[]){c->M, c->C / c->group, c->k, c->k}, &W) != LITHE_OK)
            return LITHE_ERR_OOM;
        if (lithe_tensor_new(NULL, LITHE_F32, 1, (int64_t[]){c->M}, &b) != LITHE_OK) {
            lithe_tensor_release(W);
            return LITHE_ERR_OOM;
        }
    } else {
        b = oomb;
    }
    lithe_status s = lithe__prepare_op(be, &oom_op, W, b);
    lithe__simd_force(NULL);
    if (s != LITHE_OK) assert_null(W->storage->prepared);
    else assert_non_null(W->storage->prepared);
    if (W->storage->prepared) lithe__storage_drop_prepared(W->storage);
    if (which < 2) {
        lithe_tensor_release(W);
        lithe_tensor_release(b);
    }
    return s;
}
static void test_oom(void **state) {
    (void)state;
    assert_string_equal(conv_cases[OOM_NHWC].what, "dense 5x5 p2 (CNN, K 400)");
    assert_string_equal(tables[0]->isa, "scalar");
    oomW = rnd(2, (int64_t[]){10, 64}, 5);
    oomb = rnd(1, (int64_t[]){10}, 6);
    failing_alloc_sweep(3, oom_scenario);
    lithe_tensor_release(oomW);
    lithe_tensor_release(oomb);
}


static void test_graphs(void **state) {
    (void)state;
    /* ops through XNNPACK at 1x / 8x the golden batch (mobile: 2 / 16 images; lenet 3 / 24; mlp13 7 / 56),
     * under each ISA table:
     * FC: mobile's fc (N 10) at 8x (M 16; not M 2); lenet's fc1 (N 10) and fc2 (N 3) at 8x; mlp13's
     *   6 -> 16 -> 12 -> 5 Gemms at 8x (M 56), nothing at 7 rows
     * depthwise: mobile's dw1 (3x3) and dw2 (5x5 s2) where the table lacks lithe's 8- / 16-lane
     *   depthwise kernels (xnn_depthwise: SSE2, scalar)
     * one group, by the table (xnn_dense, whatever the batch): mobile's stem (3x3 on 3, K 27), pw1
     *   and pw2 (1x1 on 16 / 24), conv (3x3 on 24, K 216); lenet's conv1 (3x3 on 1, K 9; conv2 is
     *   grouped); convadd's c1 .. c9 (1x1 on 4 / 16, 3x3 on 4, K 36), where a Conv + Add node whose
     *   Conv has an operator runs it, then the Add (core/graph/ops/fused.c), and one without keeps the
     *   residual in the store (its depthwise c2, c6 too) */
    static const struct { const char *name; size_t fc[2], depthwise, nconv; int64_t conv[8][2]; } cases[] = {
        {"mobile", {0, 1}, 2, 4, {{3, 3}, {16, 1}, {24, 1}, {24, 3}}},
        {"lenet", {0, 2}, 0, 1, {{1, 3}}},
        {"mlp13", {0, 3}, 0, 0, {{0, 0}}},
        {"convadd", {0, 0}, 2, 7, {{4, 1}, {16, 1}, {4, 3}, {4, 1}, {4, 1}, {4, 1}, {4, 1}}}};
    for (int isa = 0; isa < ntables; isa++) {
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
            for (int t = 0; t < 2; t++) {
                lithe__simd_force(tables[isa]);
                size_t want = cases[k].fc[t] + (xnn_depthwise(tables[isa]) ? cases[k].depthwise : 0);
                for (size_t c = 0; c < cases[k].nconv; c++)
                    want += xnn_dense(tables[isa], cases[k].conv[c][0], cases[k].conv[c][1]);
                const char *name = cases[k].name;
                int times = t ? 8 : 1;
                const golden *g = get("%s.onnx", name);
                uint8_t *b = bytes_of(g);
                lithe_model *m = NULL;
                OK(lithe_onnx_load_bytes(b, (size_t)g->n, &m));
                free(b);
                lithe_value *X = tiled(get("%s.x", name), times), *Y0 = NULL, *Y1 = NULL;
                OK(lithe_model_predict(m, X, &Y0));
                OK(lithe_model_prepare_inference(m));
                size_t before = lithe__xnn_runs;
                OK(lithe_model_predict(m, X, &Y1));
                size_t ran = lithe__xnn_runs - before;
                lithe_tensor *y0 = lithe_value_get_tensor(Y0), *y1 = lithe_value_get_tensor(Y1);
                double worst = close_to(y1, y0, 100.0);
                const golden *ref = get("%s.y", name);
                const float *p = lithe_tensor_data(y1);
                double worst_torch = 0;
                for (int64_t i = 0; i < lithe_tensor_numel(y1); i++) {
                    double r = ref->v[i % ref->n], d = fabs(p[i] - r);
                    if (d > worst_torch) worst_torch = d;
                    if (!(d <= 1e-4 + 1e-4 * fabs(r))) {
                        print_error("%s x%d element %lld: %.9g vs PyTorch %.9g\n", name, times, (long long)i, p[i], r);
                        fail();
                    }
                }
                printf("test_xnnpack: %-6s x%d, %-6s table: %zu ops through XNNPACK, max |prepared - unprepared| "
                       "%.2g, max |prepared - PyTorch| %.2g\n",
                       name, times, tables[isa]->isa, ran, worst, worst_torch);
                assert_int_equal(ran, want);
                lithe_value_release(X);
                lithe_value_release(Y0);
                lithe_value_release(Y1);
                lithe_model_free(m);
            }
    }
    lithe__simd_force(NULL);
}

/* A Conv whose window attributes the graph refuses when it runs (a stride of 0, negative pads, 2
 * pads) gets no XNNPACK operator when prepared: the operator's key reads the attributes through
 * the same checks (window_params in core/graph/ops/window.c), so prepare succeeds (it used to hand them
 * to XNNPACK, which refuses a stride of 0: prepare failed) and predict fails naming the node, as
 * unprepared, after the operators before it ran (those the table's rule takes: dw1, dw2 where the
 * table lacks lithe's 8- / 16-lane depthwise kernels; stem, pw1, pw2 by xnn_dense), under every
 * table. The attributes are edited in the parsed graph (mobile's "conv", 3x3 on 24 channels: an
 * XNNPACK NHWC operator when valid under SSE2 / scalar). */
static void test_bad_conv_attrs(void **state) {
    (void)state;
    static const int64_t stride0[2] = {0, 1}, neg_pads[4] = {1, -1, 1, 1};
    static const struct { const char *attr; const int64_t *v; size_t n; lithe_status st; const char *says; } cases[] = {
        {"strides", stride0, 2, LITHE_ERR_VALUE, "strides and dilations must be 1 .. 2^20"},
        {"pads", neg_pads, 4, LITHE_ERR_VALUE, "pads must be 0 .. 2^20"},
        {"pads", neg_pads, 2, LITHE_ERR_UNSUPPORTED, "2 pads"}};
    for (int isa = 0; isa < ntables; isa++) {
        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            lithe__simd_force(tables[isa]);
            const lithe__simd_kernels *tb = tables[isa];
            const golden *gm = get("mobile.onnx");
            uint8_t *b = bytes_of(gm);
            lithe_model *m = NULL;
            OK(lithe_onnx_load_bytes(b, (size_t)gm->n, &m));
            free(b);
            lithe__onnx_attr *a = graph_weight_attr(m, "Conv", "conv.weight", cases[k].attr, cases[k].n);
            memcpy(a->ints, cases[k].v, cases[k].n * sizeof *a->ints);
            a->n_ints = cases[k].n;
            OK(lithe_model_prepare_inference(m));
            lithe_value *X = tiled(get("mobile.x"), 1), *Y = NULL;
            size_t before = lithe__xnn_runs;
            assert_int_equal(lithe_model_predict(m, X, &Y), cases[k].st);
            printf("test_xnnpack: conv with bad %s, %-6s table: %zu ops through XNNPACK before it, refused: %s\n",
                   cases[k].attr, tb->isa, lithe__xnn_runs - before, lithe_last_error());
            size_t want = (xnn_depthwise(tb) ? 2 : 0) + xnn_dense(tb, 3, 3) + xnn_dense(tb, 16, 1) + xnn_dense(tb, 24, 1);
            assert_int_equal(lithe__xnn_runs - before, want); /* dw1, dw2; stem, pw1, pw2 */
            assert_non_null(strstr(lithe_last_error(), cases[k].says));
            assert_non_null(strstr(lithe_last_error(), "Conv"));
            assert_null(Y);
            lithe_value_release(X);
            lithe_model_free(m);
        }
    }
    lithe__simd_force(NULL);
}

/* With 2 threads the CPU backend runs lithe's threaded kernels, never XNNPACK's: the prepared
 * prediction is bit-identical to the unprepared one. */
static void test_threads(void **state) {
    (void)state;
    lithe__simd_force(tables[0]); /* scalar: every Conv of mobile is the rule's at 1 thread */
    OK(lithe_backend_set_threads(lithe__backend_cpu(), 2));
    const golden *g = get("mobile.onnx");
    uint8_t *b = bytes_of(g);
    lithe_model *m = NULL;
    OK(lithe_onnx_load_bytes(b, (size_t)g->n, &m));
    free(b);
    lithe_value *X = tiled(get("mobile.x"), 8), *Y0 = NULL, *Y1 = NULL;
    OK(lithe_model_predict(m, X, &Y0));
    OK(lithe_model_prepare_inference(m));
    size_t before = lithe__xnn_runs;
    OK(lithe_model_predict(m, X, &Y1));
    assert_int_equal(lithe__xnn_runs, before);
    lithe_tensor *y0 = lithe_value_get_tensor(Y0), *y1 = lithe_value_get_tensor(Y1);
    assert_memory_equal(lithe_tensor_data(y0), lithe_tensor_data(y1), sizeof(float) * (size_t)lithe_tensor_numel(y0));
    lithe_value_release(X);
    lithe_value_release(Y0);
    lithe_value_release(Y1);
    lithe_model_free(m);
    OK(lithe_backend_set_threads(lithe__backend_cpu(), 1));
    lithe__simd_force(NULL);
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    /* XNNPACK runs only on a 1-thread CPU backend (backends/cpu/xnnpack.c) */
    if (lithe_backend_set_threads(lithe__backend_cpu(), 1) != LITHE_OK) return 1;
    ntables = lithe__simd_available(tables, 8);
    printf("test_xnnpack: ISA tables:");
    for (int t = 0; t < ntables; t++) printf(" %s", tables[t]->isa);
    printf(" (default %s)\n", lithe__simd()->isa);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_fc),
        cmocka_unit_test(test_dense_model),
        cmocka_unit_test(test_clipped_dense),
        cmocka_unit_test(test_clip_equal_bounds),
        cmocka_unit_test(test_oom),
        cmocka_unit_test(test_graphs),
        cmocka_unit_test(test_bad_conv_attrs),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
