/* Issue 23 items 3-5 against PyTorch 1.13 (tests/golden/gen_onnx_spatial_goldens.py): models that
 * torch.onnx.export writes with the convolution family in 1-D and 3-D (Conv, ConvTranspose,
 * MaxPool, AveragePool, the global pools; a Conv1d text classifier), the normalizations and the
 * resampling operators — outputs, gradients w.r.t. the input and every parameter (torch autograd,
 * and finite differences), ten SGD steps; and hostile attributes refused at load. */
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
#include "golden/golden.h"
#include "golden/graph_check.h"

static const char *const models[] = {"textcnn", "conv1d", "conv3d", "resampling", "resampling11", "norms", "lrn", "groupnorm18", "lpmvn", "blocks",
                                     /* Resize / Upsample against the ONNX reference (float64): every mode */
                                     "rs_near_rpfloor_up", "rs_near_rpfloor_down", "rs_near_rpfloor_ac",
                                     "rs_near_rpceil_up", "rs_near_rpceil_down", "rs_near_rpceil_ac",
                                     "rs_near_floor_up", "rs_near_floor_down", "rs_near_floor_ac", "rs_near_ceil_up",
                                     "rs_near_ceil_down", "rs_near_ceil_ac", "rs_lin_half_pixel_up",
                                     "rs_lin_half_pixel_down", "rs_lin_pytorch_half_pixel_up",
                                     "rs_lin_pytorch_half_pixel_down", "rs_lin_align_corners_up",
                                     "rs_lin_align_corners_down", "rs_lin_asymmetric_up", "rs_lin_asymmetric_down",
                                     "rs_lin_tfcrop", "rs_cub_half_pixel_up", "rs_cub_align_corners_up",
                                     "rs_cub_asymmetric_up", "rs_cub_excl", "rs_cub_down", "rs_lin_3d", "rs_lin_1d",
                                     "rs10_near", "rs10_lin", "up9_near"};
#define N_MODELS (sizeof models / sizeof models[0])

static lithe_model *load(const char *name) {
    const golden *g = get("%s.onnx", name);
    uint8_t *b = bytes_of(g);
    lithe_model *m = NULL;
    OK(lithe_onnx_load_bytes(b, (size_t)g->n, &m));
    free(b);
    return m;
}

static double max_abs_diff(const lithe_tensor *t, const golden *g) {
    const float *p = lithe_tensor_data(t);
    double worst = lithe_tensor_numel(t) == g->n ? 0 : INFINITY;
    for (int64_t i = 0; i < g->n && i < lithe_tensor_numel(t); i++) {
        double d = fabs((double)p[i] - g->v[i]);
        if (d > worst || d != d) worst = d != d ? INFINITY : d;
    }
    return worst;
}

/* The output tolerance: 1e-4, or NAME.tol where torch's float32 run is further than that from its float64 one. */
static double tol_of(const char *name) {
    const golden *t = find("%s.tol", name);
    return t ? t->v[0] : 1e-4;
}

static void test_parity(void **state) {
    (void)state;
    for (size_t k = 0; k < N_MODELS; k++) {
        const char *name = models[k];
        lithe_model *m = load(name);
        double tol = tol_of(name);
        lithe_value *X = value_of(get("%s.x", name)), *Y = NULL, *dX = NULL, *R = value_of(get("%s.r", name)), *P = NULL;
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m, X, &Y, &bp));
        char what[160];
        snprintf(what, sizeof what, "%s output", name);
        expect_close(what, lithe_value_get_tensor(Y), get("%s.y", name), tol, tol);
        double worst_y = max_abs_diff(lithe_value_get_tensor(Y), get("%s.y", name));
        OK(lithe_model_predict(m, X, &P)); /* inference: no argmax kept, prepared weights */
        snprintf(what, sizeof what, "%s predict output", name);
        expect_close(what, lithe_value_get_tensor(P), get("%s.y", name), tol, tol);
        OK(lithe_backprop_run(bp, R, &dX));
        snprintf(what, sizeof what, "%s dX", name);
        expect_close(what, lithe_value_get_tensor(dX), get("%s.dx", name), tol, tol);
        double worst_g = max_abs_diff(lithe_value_get_tensor(dX), get("%s.dx", name));
        size_t n_torch = 0;
        for (size_t p = 0; p < lithe_model_n_params(m); p++) {
            const char *pn = lithe_model_param_name(m, p);
            const golden *g = find("%s.grad.%s", name, pn);
            if (!g) continue;
            n_torch++;
            lithe_tensor *G = NULL;
            OK(lithe_model_get_grad(m, pn, &G));
            snprintf(what, sizeof what, "%s grad %s", name, pn);
            expect_close(what, G, g, tol, tol);
            double d = max_abs_diff(G, g);
            if (d > worst_g) worst_g = d;
        }
        assert_int_equal(n_torch, (size_t)get("%s.n_params", name)->v[0]);
        printf("test_onnx_spatial: %-10s output max |lithe - torch| %.2e, gradients (input and %zu params) %.2e\n", name,
               worst_y, n_torch, worst_g);
        lithe_value_release(X), lithe_value_release(Y), lithe_value_release(P);
        lithe_value_release(dX), lithe_value_release(R);
        lithe_backprop_free(bp);
        lithe_model_free(m);
    }
}

static void test_finite_differences(void **state) {
    (void)state;
    for (size_t k = 0; k < N_MODELS; k++) {
        const char *name = models[k];
        lithe_model *m = load(name);
        const fd_opts o = {.test = "test_onnx_spatial", .h = 3e-3, .atol = 1e-2, .rtol = 5e-2, .x_stride = 3, .w_parts = 6, .digits = 5};
        int checked = 0, bad = 0;
        fd_check(m, name, &o, &checked, &bad);
        printf("test_onnx_spatial: %-10s %d finite-difference checks, %d off\n", name, checked, bad);
        assert_true(checked > 0);
        assert_true(bad <= checked / 20);
        lithe_model_free(m);
    }
}

static void test_sgd_steps(void **state) {
    (void)state;
    for (size_t k = 0; k < N_MODELS; k++) {
        const char *name = models[k];
        if (!find("%s.losses", name)) continue;
        lithe_model *m = load(name);
        double tol = tol_of(name);
        lithe_value *X = value_of(get("%s.x", name)), *R = value_of(get("%s.r", name));
        lithe_optimizer_opts o = lithe_sgd_defaults(get("%s.lr", name)->v[0]);
        o.grad_clip = 0.0;
        o.L2 = 0.0;
        lithe_optimizer *opt = NULL;
        OK(lithe_optimizer_new(&o, &opt));
        const golden *losses = get("%s.losses", name);
        for (int step = 0; step < 10; step++) {
            lithe_value *Y = NULL;
            lithe_backprop *bp = NULL;
            OK(lithe_model_begin_update(m, X, &Y, &bp));
            const float *y = lithe_tensor_data(lithe_value_get_tensor(Y)), *r = lithe_tensor_data(lithe_value_get_tensor(R));
            double loss = 0;
            for (int64_t i = 0; i < lithe_tensor_numel(lithe_value_get_tensor(R)); i++) loss += (double)y[i] * r[i];
            double d = fabs(loss - losses->v[step]);
            if (d > tol + tol * fabs(losses->v[step]))
                printf("test_onnx_spatial: %s step %d: loss %.7f, torch %.7f\n", name, step, loss, losses->v[step]);
            assert_true(d <= tol + tol * fabs(losses->v[step]));
            OK(lithe_backprop_run(bp, R, NULL));
            OK(lithe_model_finish_update(m, opt));
            lithe_backprop_free(bp);
            lithe_value_release(Y);
        }
        double worst = 0;
        for (size_t p = 0; p < lithe_model_n_params(m); p++) {
            const char *pn = lithe_model_param_name(m, p);
            const golden *g = find("%s.sgd.%s", name, pn);
            if (!g) continue;
            lithe_tensor *W = NULL;
            OK(lithe_model_get_param(m, pn, &W));
            char what[160];
            snprintf(what, sizeof what, "%s after 10 SGD steps: %s", name, pn);
            expect_close(what, W, g, tol, tol);
            double d = max_abs_diff(W, g);
            if (d > worst) worst = d;
        }
        printf("test_onnx_spatial: %-10s 10 SGD steps: params within %.2e of torch\n", name, worst);
        lithe_optimizer_free(opt);
        lithe_value_release(X), lithe_value_release(R);
        lithe_model_free(m);
    }
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parity),
        cmocka_unit_test(test_finite_differences),
        cmocka_unit_test(test_sgd_steps),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
