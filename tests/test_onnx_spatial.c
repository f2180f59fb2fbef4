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
                                     "rs10_near", "rs10_lin", "up9_near",
                                     /* gradients with several contributions (issue 29: assign then add) */
                                     "twouse"};
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

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parity),
        cmocka_unit_test(test_finite_differences),
        cmocka_unit_test(test_sgd_steps),
    };
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
