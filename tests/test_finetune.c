/* Fine-tuning imported models as torch does, one of each family of issue 23 (random weights; every
 * Conv + BatchNorm fused in torch before export so torch trains the very weights the graph holds):
 * torchvision's mobilenet_v3_small (mobile CNN, 10-class head, opset 14: HardSwish, HardSigmoid
 * gates, GlobalAveragePool, Gemm), lraspp_mobilenet_v3_large (segmentation, 3 classes, its 'out':
 * bilinear Resize, opset 17) and torchaudio's ConvTasNet (audio: Conv1d, PReLU, GroupNorm, dilated
 * depthwise Conv1d, ConvTranspose1d, opset 17), each exported by torch.onnx.export: five SGD steps
 * of loss = sum(y * r) in lithe against five in PyTorch 1.13 (tests/golden/gen_finetune_goldens.py,
 * which writes <case>_ft.onnx beside the golden file): the loss before each step, and every
 * parameter after the five, within 1e-4 of max |p| (or of how far torch's own float32 steps land
 * from float64 ones, ft.<case>.drift64, if that is more). */
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

#define STEPS 5

static void sgd_case(const char *name, const char *label) {
    char path[600];
    snprintf(path, sizeof path, "%s", golden_path);
    char *slash = strrchr(path, '/');
    snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0), "%s_ft.onnx", name);
    lithe_model *m = NULL;
    OK(lithe_model_load(path, &m));
    char key[80];
    snprintf(key, sizeof key, "ft.%s", name);
    graph_sgd_steps(m, key, STEPS, 1e-4, "test_finetune", label, true);
    /* every parameter of torch's model is a param of the graph, under its name */
    size_t seen = 0;
    double worst = 0, tol = fmax(1e-4, 4 * get("ft.%s.drift64", name)->v[0]);
    for (size_t p = 0; p < lithe_model_n_params(m); p++) {
        const char *pn = lithe_model_param_name(m, p);
        const golden *g = find("ft.%s.sgd.%s", name, pn);
        if (!g) continue;
        seen++;
        lithe_tensor *W = NULL;
        OK(lithe_model_get_param(m, pn, &W));
        assert_int_equal(lithe_tensor_numel(W), g->n);
        const float *w = lithe_tensor_data(W);
        double scale = 0, d = 0;
        for (int64_t i = 0; i < g->n; i++) scale = fmax(scale, fabs(g->v[i]));
        for (int64_t i = 0; i < g->n; i++) {
            double e = fabs((double)w[i] - g->v[i]);
            d = e != e ? INFINITY : fmax(d, e);
        }
        d /= fmax(scale, 1e-30);
        if (d > tol) printf("test_finetune: %s: %s after %d steps: %.3g of max |p| from torch\n", label, pn, STEPS, d);
        assert_true(d <= tol);
        worst = fmax(worst, d);
    }
    assert_int_equal(seen, (size_t)get("ft.%s.n_params", name)->v[0]);
    printf("test_finetune: %s, %d SGD steps: %zu params within %.2e of max |p| of torch's "
           "(allowed %.1e)\n", label, STEPS, seen, worst, tol);
    lithe_model_free(m);
}

static void test_sgd_mobilenet_v3_small(void **state) {
    (void)state;
    sgd_case("mnv3", "mobilenet_v3_small");
}

static void test_sgd_lraspp_mobilenet_v3_large(void **state) {
    (void)state;
    sgd_case("lraspp", "lraspp_mobilenet_v3_large");
}

static void test_sgd_convtasnet(void **state) {
    (void)state;
    sgd_case("convtasnet", "ConvTasNet");
}

int main(int argc, char **argv) {
    golden_path = argc > 1 ? argv[1] : getenv("LITHE_THINC_GOLDENS");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_sgd_mobilenet_v3_small),
                                       cmocka_unit_test(test_sgd_lraspp_mobilenet_v3_large),
                                       cmocka_unit_test(test_sgd_convtasnet)};
    return cmocka_run_group_tests(tests, load_goldens, free_goldens);
}
