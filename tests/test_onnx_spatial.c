/* Issue 23 items 3-5 against PyTorch 1.13 (tests/golden/gen_onnx_spatial_goldens.py): models that
 * torch.onnx.export writes with the convolution family in 1-D and 3-D (Conv, ConvTranspose,
 * MaxPool, AveragePool, the global pools; a Conv1d text classifier), the normalizations and the
 * resampling operators — outputs, gradients w.r.t. the input and every parameter (torch autograd,
 * and finite differences), ten SGD steps; and hostile attributes refused at load. */
#define _POSIX_C_SOURCE 200809L /* setenv */
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
#include "graph/graph.h" /* white-box: fuse.c's relu_pool marks */

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
                                     "rs10_near", "rs10_lin", "up9_near",
                                     /* gradients with several contributions (issue 29: assign then add) */
                                     "twouse",
                                     /* Conv + Relu read by a max pool alone (issue 29: the pool's indices carry the Relu's backward) */
                                     "relupool"};
#define N_MODELS (sizeof models / sizeof models[0])

/* The output tolerance: 1e-4, or NAME.tol where torch's float32 run is further than that from its float64 one. */
static double tol_of(const char *name) {
    const golden *t = find("%s.tol", name);
    return t ? t->v[0] : 1e-4;
}

static void test_parity(void **state) {
    (void)state;
    for (size_t k = 0; k < N_MODELS; k++) {
        double tol = tol_of(models[k]);
        const parity_opts o = {.test = "test_onnx_spatial", .width = 10, .atol = tol, .rtol = tol, .grads = true};
        graph_parity(models[k], &o);
    }
}

static void test_finite_differences(void **state) {
    (void)state;
    const fd_opts o = {.test = "test_onnx_spatial", .h = 3e-3, .atol = 1e-2, .rtol = 5e-2, .x_stride = 3, .w_parts = 6, .digits = 5};
    for (size_t k = 0; k < N_MODELS; k++) graph_fd_model(models[k], &o, 10, 20);
}

static void test_sgd_steps(void **state) {
    (void)state;
    for (size_t k = 0; k < N_MODELS; k++) {
        const char *name = models[k];
        if (!find("%s.losses", name)) continue;
        double tol = tol_of(name);
        const sgd_opts o = {.test = "test_onnx_spatial", .width = 10, .steps = 10, .loss_tol = tol, .atol = tol, .rtol = tol};
        graph_sgd_check(name, &o);
    }
}

/* Same NaN-ness, and the same bits where not NaN. */
static size_t same_bits(const char *what, const lithe_tensor *a, const lithe_tensor *b) {
    assert_int_equal(lithe_tensor_numel(a), lithe_tensor_numel(b));
    const float *pa = lithe_tensor_data(a), *pb = lithe_tensor_data(b);
    size_t nan = 0, off = 0;
    for (int64_t i = 0; i < lithe_tensor_numel(a); i++) {
        nan += isnan(pa[i]) != 0;
        if (isnan(pa[i]) ? !isnan(pb[i]) : memcmp(&pa[i], &pb[i], sizeof(float)) != 0) {
            if (off++ < 3) printf("test_onnx_spatial: relupool %s[%lld]: %a fused, %a node by node\n", what, (long long)i, pa[i], pb[i]);
        }
    }
    printf("test_onnx_spatial: relupool %-12s %lld entries, %zu NaN, %zu differ from the node-by-node run\n", what,
           (long long)lithe_tensor_numel(a), nan, off);
    assert_int_equal(off, 0);
    return nan;
}

/* relupool with NaN (issue 29): on the CPU each max pool reading a fused Conv + Relu alone carries
 * the Relu's backward in its indices (-1 where its output is <= 0) and the fused Conv skips it; the
 * output, dX and every parameter's gradient must have the bits of the node-by-node run
 * (LITHE_GRAPH_FUSE=0: Conv, Relu, MaxPool, each with its own backward), NaN where it has NaN: x NaN
 * at one pixel of image 1 (NaN conv outputs, a NaN pool maximum or one the pool passes over), r NaN
 * at a pool output of image 2 that is 0 (the Relu's backward drops it) and at one that is positive. */
static void test_relu_pool(void **state) {
    (void)state;
    const golden *yg = get("%s.y", "relupool");
    const int64_t per = yg->n / 3; /* outputs per image */
    int64_t zero = -1, pos = -1;
    for (int64_t i = 2 * per; i < 3 * per; i++) {
        if (yg->v[i] == 0.0 && zero < 0) zero = i;
        if (yg->v[i] > 0.0 && pos < 0) pos = i;
    }
    assert_true(zero >= 0 && pos >= 0);
    lithe_model *m[2] = {NULL, NULL};
    lithe_value *Y[2] = {NULL, NULL}, *dX[2] = {NULL, NULL};
    for (int unfused = 0; unfused < 2; unfused++) {
        lithe_value *X = value_of(get("%s.x", "relupool")), *R = value_of(get("%s.r", "relupool"));
        float *x = lithe_tensor_data(lithe_value_get_tensor(X)), *r = lithe_tensor_data(lithe_value_get_tensor(R));
        x[1 * 2 * 8 * 18 + 3 * 18 + 5] = NAN; /* image 1, channel 0, (3, 5) */
        r[zero] = r[pos] = NAN;
        if (unfused) setenv("LITHE_GRAPH_FUSE", "0", 1);
        m[unfused] = graph_load_golden("relupool");
        unsetenv("LITHE_GRAPH_FUSE");
        const lithe__graph *g = m[unfused]->shims[0]->state;
        size_t marks = 0;
        for (size_t i = 0; i < g->onnx.n_nodes; i++) marks += g->node_win[i].relu_pool;
        assert_int_equal(marks, unfused ? 0 : 6); /* three Conv + Relu, three MaxPools */
        lithe_backprop *bp = NULL;
        OK(lithe_model_begin_update(m[unfused], X, &Y[unfused], &bp));
        OK(lithe_backprop_run(bp, R, &dX[unfused]));
        lithe_backprop_free(bp);
        lithe_value_release(X);
        lithe_value_release(R);
    }
    assert_true(same_bits("output", lithe_value_get_tensor(Y[0]), lithe_value_get_tensor(Y[1])) > 0);
    assert_true(same_bits("dX", lithe_value_get_tensor(dX[0]), lithe_value_get_tensor(dX[1])) > 0);
    for (size_t p = 0; p < lithe_model_n_params(m[0]); p++) {
        const char *pn = lithe_model_param_name(m[0], p);
        lithe_tensor *G[2] = {NULL, NULL};
        OK(lithe_model_get_grad(m[0], pn, &G[0]));
        OK(lithe_model_get_grad(m[1], pn, &G[1]));
        same_bits(pn, G[0], G[1]);
    }
    for (int u = 0; u < 2; u++) {
        lithe_value_release(Y[u]);
        lithe_value_release(dX[u]);
        lithe_model_free(m[u]);
    }
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parity),
        cmocka_unit_test(test_finite_differences),
        cmocka_unit_test(test_sgd_steps),
        cmocka_unit_test(test_relu_pool),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
