/* The ONNX operators of issue 23 items 1-2 (core/graph/ops/reduce2.c, index.c, elemwise2.c): each
 * one's graph (tests/golden/gen_onnxops_goldens.py) against PyTorch 1.13 in float64 — the output,
 * NaN for NaN, and the gradient of sum(y * r) with respect to x — then central differences of that
 * loss against lithe's own gradients (input and trainable initializers); and hostile attributes
 * refused at load with the node named. */
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
#include "golden/graph_check.h"

static const char *const cases[] = {
    "redmax13", "redmax18", "redmax_nan", "redmin13", "redmin_all", "redprod", "redprod_perm", "redl1", "redl2",
    "redlse", "redsumsq", "redsum13", "rednoop18", "redint", "argmax", "argmax_last", "argmin_last", "argmax_nan", "argmin_nan_last", "cumsum", "cumsum_rev_excl",
    "tile", "range", "gather_float", "gather_float_axis1", "gather_float_token", "gather_elements", "gather_nd", "gather_nd_b1", "unary2", "round_half", "variadic", "max_nan",
    "mod_fmod", "mod_floor", "logic", "compare_eq", "isnaninf", "hardmax13", "hardmax11", "scatter_elements", "scatter_add", "scatter_nd",
    "trilu_upper", "trilu_lower", "onehot", "topk", "topk_small_idx", "einsum_bmm", "einsum_attn", "einsum_nt", "einsum_outer", "einsum_dot", "einsum_ellipsis", "einsum_ellipsis_implicit",
    "einsum_perm", "nonzero", "exported14", "exported17",
    /* Transposes through the CPU copy's tiles (issue 29) */
    "transpose_tiled", "transpose_attn_k"};
#define N_CASES (sizeof cases / sizeof cases[0])

static lithe_model *load(const char *name) {
    const golden *g = get("%s.onnx", name);
    uint8_t *b = bytes_of(g);
    lithe_model *m = NULL;
    lithe_status st = lithe_onnx_load_bytes(b, (size_t)g->n, &m);
    free(b);
    if (st != LITHE_OK) print_error("%s: %s\n", name, lithe_last_error());
    OK(st);
    return m;
}

/* t equals g: same numel, NaN where g is NaN, else within atol + rtol |g|. */
static void expect_same(const char *what, const lithe_tensor *t, const golden *g, double atol, double rtol) {
    assert_int_equal(lithe_tensor_numel(t), g->n);
    int bad = 0;
    for (int64_t i = 0; i < g->n; i++) {
        double v = lithe_tensor_dtype(t) == LITHE_I64 ? (double)((const int64_t *)lithe_tensor_data(t))[i]
                                                      : (double)((const float *)lithe_tensor_data(t))[i];
        double w = g->v[i];
        bool ok = isnan(w) ? isnan(v) : isinf(w) ? v == w : fabs(v - w) <= atol + rtol * fabs(w);
        if (!ok && bad++ < 5) print_error("%s[%lld]: lithe %.9g, torch %.9g\n", what, (long long)i, v, w);
    }
    assert_int_equal(bad, 0);
}

static void test_goldens(void **state) {
    (void)state;
    for (size_t k = 0; k < N_CASES; k++) {
        const char *name = cases[k];
        lithe_model *m = load(name);
        lithe_value *X = value_of(get("%s.x", name)), *Y = NULL, *P = NULL;
        char what[128];
        OK(lithe_model_predict(m, X, &P));
        snprintf(what, sizeof what, "%s predict", name);
        expect_same(what, lithe_value_get_tensor(P), get("%s.y", name), 1e-5, 1e-5);
        lithe_value_release(P);
        if (find("%s.dx", name)) {
            lithe_value *R = value_of(get("%s.r", name)), *dX = NULL;
            lithe_backprop *bp = NULL;
            OK(lithe_model_begin_update(m, X, &Y, &bp));
            snprintf(what, sizeof what, "%s output", name);
            expect_same(what, lithe_value_get_tensor(Y), get("%s.y", name), 1e-5, 1e-5);
            OK(lithe_backprop_run(bp, R, &dX));
            snprintf(what, sizeof what, "%s dX", name);
            expect_same(what, lithe_value_get_tensor(dX), get("%s.dx", name), 1e-5, 1e-4);
            for (size_t p = 0; p < lithe_model_n_params(m); p++) { /* the exported models' torch parameters */
                const char *pn = lithe_model_param_name(m, p);
                const golden *g = find("%s.grad.%s", name, pn);
                if (!g) continue;
                lithe_tensor *G = NULL;
                OK(lithe_model_get_grad(m, pn, &G));
                snprintf(what, sizeof what, "%s grad %s", name, pn);
                expect_same(what, G, g, 1e-4, 1e-4);
            }
            lithe_value_release(R);
            lithe_value_release(dX);
            lithe_value_release(Y);
            lithe_backprop_free(bp);
        }
        printf("test_onnx_ops: %-16s matches torch float64%s\n", name, find("%s.dx", name) ? " (output and dX)" : "");
        lithe_value_release(X);
        lithe_model_free(m);
    }
}

static void test_finite_differences(void **state) {
    (void)state;
    for (size_t k = 0; k < N_CASES; k++) {
        const char *name = cases[k];
        const golden *fd = find("%s.fd", name);
        if (!fd || fd->v[0] == 0) continue;
        lithe_model *m = load(name);
        const fd_opts o = {.test = "test_onnx_ops", .h = 1e-3, .atol = 5e-3, .rtol = 2e-2, .x_stride = 1, .w_parts = 4,
                           .digits = 5};
        int checked = 0, bad = 0;
        fd_check(m, name, &o, &checked, &bad);
        printf("test_onnx_ops: %-16s %d finite-difference checks, %d off\n", name, checked, bad);
        assert_true(checked > 0);
        /* a Floor / Round step inside +-h may move one; the exported models' Floor and Mod jump (an
         * estimate of jump / 2h) at a few of their 86 */
        assert_true(bad <= (strncmp(name, "exported", 8) ? checked / 50 : checked / 20));
        lithe_model_free(m);
    }
}

/* Every case on Vulkan (lavapipe in CI) where a device exists: the same compositions on its kernels,
 * forward (and backward where the case has a gradient) against the same torch goldens. */
static void test_vulkan(void **state) {
    (void)state;
    lithe_backend *vk = NULL;
    if (lithe_backend_get("vulkan", &vk) != LITHE_OK) {
        print_message("test_onnx_ops: no Vulkan device here (%s)\n", lithe_last_error());
        return;
    }
    for (size_t k = 0; k < N_CASES; k++) {
        const char *name = cases[k];
        lithe_model *m = load(name);
        OK(lithe_model_set_backend(m, vk));
        lithe_tensor *xh = tensor_of(get("%s.x", name)), *xd = NULL, *yh = NULL;
        OK(lithe_tensor_to_backend(xh, vk, &xd));
        lithe_value *X = NULL, *Y = NULL;
        OK(lithe_value_tensor(xd, &X));
        char what[128];
        OK(lithe_model_predict(m, X, &Y));
        OK(lithe_tensor_to_backend(lithe_value_get_tensor(Y), NULL, &yh));
        snprintf(what, sizeof what, "%s on vulkan", name);
        expect_same(what, yh, get("%s.y", name), 1e-4, 1e-4);
        lithe_tensor_release(yh);
        lithe_value_release(Y);
        if (find("%s.dx", name)) {
            lithe_tensor *rh = tensor_of(get("%s.r", name)), *rd = NULL, *dxh = NULL;
            lithe_value *R = NULL, *dX = NULL;
            lithe_backprop *bp = NULL;
            OK(lithe_tensor_to_backend(rh, vk, &rd));
            OK(lithe_value_tensor(rd, &R));
            OK(lithe_model_begin_update(m, X, &Y, &bp));
            OK(lithe_backprop_run(bp, R, &dX));
            OK(lithe_tensor_to_backend(lithe_value_get_tensor(dX), NULL, &dxh));
            snprintf(what, sizeof what, "%s dX on vulkan", name);
            expect_same(what, dxh, get("%s.dx", name), 1e-4, 1e-4);
            lithe_tensor_release(dxh);
            lithe_tensor_release(rh);
            lithe_tensor_release(rd);
            lithe_value_release(R);
            lithe_value_release(dX);
            lithe_value_release(Y);
            lithe_backprop_free(bp);
        }
        lithe_tensor_release(xh);
        lithe_tensor_release(xd);
        lithe_value_release(X);
        lithe_model_free(m);
    }
    printf("test_onnx_ops: %zu cases on vulkan agree with torch\n", N_CASES);
}

/* Random byte changes to every case's graph (attributes, axes, indices, the equation): each load,
 * predict and backward is a result or an error, never a crash (the asan build checks the "never"). */
static void test_hostile_bytes(void **state) {
    (void)state;
    uint64_t st = 2323;
    int loaded = 0, ran = 0;
    for (size_t k = 0; k < N_CASES; k++) {
        const golden *g = get("%s.onnx", cases[k]);
        uint8_t *bytes = bytes_of(g), *copy = malloc((size_t)g->n);
        assert_non_null(copy);
        lithe_value *X = value_of(get("%s.x", cases[k]));
        for (int trial = 0; trial < 100; trial++) {
            memcpy(copy, bytes, (size_t)g->n);
            for (int j = 0; j < 2; j++) {
                st = st * 6364136223846793005ull + 1442695040888963407ull;
                copy[(st >> 33) % (uint64_t)g->n] = (uint8_t)(st >> 20);
            }
            lithe_model *m = NULL;
            if (lithe_onnx_load_bytes(copy, (size_t)g->n, &m) != LITHE_OK) {
                assert_null(m);
                continue;
            }
            loaded++;
            lithe_value *Y = NULL, *dX = NULL;
            lithe_backprop *bp = NULL;
            if (lithe_model_begin_update(m, X, &Y, &bp) == LITHE_OK) {
                ran++;
                lithe_tensor *yt = lithe_value_get_tensor(Y), *r = NULL;
                lithe_value *R = NULL;
                if (yt && lithe_tensor_dtype(yt) == LITHE_F32 && lithe_tensor_new(NULL, LITHE_F32, lithe_tensor_ndim(yt), lithe_tensor_shape(yt), &r) == LITHE_OK) {
                    OK(lithe_value_tensor(r, &R));
                    if (lithe_backprop_run(bp, R, &dX) == LITHE_OK) lithe_value_release(dX);
                    lithe_value_release(R);
                    lithe_tensor_release(r);
                }
                lithe_value_release(Y);
                lithe_backprop_free(bp);
            }
            lithe_model_free(m);
        }
        lithe_value_release(X);
        free(copy);
        free(bytes);
    }
    printf("test_onnx_ops: %zu x 100 changed graphs: %d loaded, %d ran; none crashed\n", N_CASES, loaded, ran);
}

/* Hostile attributes: refused when loaded, naming the node and what is wrong. */
static void test_bad_attrs(void **state) {
    (void)state;
    static const struct { const char *name, *node, *says; lithe_status st; } bad[] = {
        {"redaxis", "'rm'", "axis 3 is outside [-3, 3)", LITHE_ERR_VALUE},
        {"redtwice", "'rl2'", "axis -2 is given twice", LITHE_ERR_VALUE},
        {"keepdims", "'rp'", "keepdims is 2; it must be 0 or 1", LITHE_ERR_VALUE},
        {"axesdtype", "'rmin'", "its axes 'axes' has ONNX element type 1", LITHE_ERR_DTYPE},
        {"argaxis", "'am'", "axis -4 is outside", LITHE_ERR_VALUE},
        {"lastidx", "'an'", "select_last_index is 3", LITHE_ERR_VALUE},
        {"cumaxis", "'cs'", "axis 5 is outside", LITHE_ERR_VALUE},
        {"cumflag", "'cs2'", "exclusive is -1", LITHE_ERR_VALUE},
        {"gatheridx", "'ge'", "index 5 is outside an axis of 5", LITHE_ERR_VALUE},
        {"gatherdtype", "'ge2'", "its indices 'i' has ONNX element type 1", LITHE_ERR_DTYPE},
        {"nddims", "'gnd'", "batch_dims 3", LITHE_ERR_VALUE},
        {"tilereps", "'tl'", "one value per input axis", LITHE_ERR_SHAPE},
        {"tileneg", "'tl2'", "a repeat is negative", LITHE_ERR_VALUE},
        {"fmod", "'md'", "fmod is 2", LITHE_ERR_VALUE},
        {"isinf", "'ii'", "detect_positive is 7", LITHE_ERR_VALUE},
        {"hardmax", "'hm'", "axis 3 is outside", LITHE_ERR_VALUE},
        {"einsum_ellipsis", "'es'", "equation '...i...j,jk->ik': a malformed or repeated ellipsis", LITHE_ERR_UNSUPPORTED},
        {"einsum_diag", "'es2'", "equation 'iij->ij': letter 'i' twice in one term", LITHE_ERR_UNSUPPORTED},
        {"einsum_sum", "'es3'", "equation 'abc,abd->ad': letter 'c' is summed within one operand", LITHE_ERR_UNSUPPORTED},
        {"topk_k", "'tk'", "k 9 is outside 0 .. 5", LITHE_ERR_VALUE},
        {"topk_dtype", "'tk2'", "its K 'k' has ONNX element type 1", LITHE_ERR_DTYPE},
        {"scatter_mul", "'sc'", "reduction 'mul'", LITHE_ERR_UNSUPPORTED},
        {"onehot_depth", "'oh'", "depth must be one value >= 1", LITHE_ERR_VALUE},
        {"nonzero_input", "'nz'", "NonZero of a float graph input", LITHE_ERR_UNSUPPORTED},
        {"trilu_rank", "'tr'", "rank >= 2", LITHE_ERR_SHAPE}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        const golden *g = get("bad_%s.onnx", bad[k].name);
        uint8_t *b = bytes_of(g);
        lithe_model *m = NULL;
        lithe_status st = lithe_onnx_load_bytes(b, (size_t)g->n, &m);
        free(b);
        printf("test_onnx_ops: bad_%-12s refused at load: %s\n", bad[k].name, lithe_last_error());
        assert_null(m);
        assert_int_equal(st, bad[k].st);
        assert_non_null(strstr(lithe_last_error(), bad[k].node));
        assert_non_null(strstr(lithe_last_error(), bad[k].says));
    }
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_goldens),
        cmocka_unit_test(test_finite_differences),
        cmocka_unit_test(test_bad_attrs),
        cmocka_unit_test(test_vulkan),
        cmocka_unit_test(test_hostile_bytes),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
